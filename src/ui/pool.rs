//! The Web Worker pool that computes the page's results off the main thread: the transport
//! for [`Scheduler`], which decides everything (queue, supersede, in-flight limits, affinity,
//! reuse, progress, worker loss) and is tested natively (`src/lab/pool/scheduler.rs`). This module
//! only starts and stops workers, posts the messages the scheduler dispatches and hands it the
//! answers. **The page itself computes nothing**: it does not link the math that the workers
//! run (the page's module is a third of its former size), so without a worker there is only
//! a clear error.
//!
//! - One worker per core (`navigator.hardwareConcurrency`, capped at
//!   [`MAX_WORKERS`](workers::MAX_WORKERS)), each running `kernel-worker` ([`crate::worker`]). A
//!   worker regenerates datasets and ω from the seed, so a message is only a configuration and
//!   a task.
//! - Two workers ([`WorkerKind`]): the page's pool runs `kernel-worker` (the kernel view's
//!   tasks, the probe, the data panel), built without the optimised A's optimiser; once a
//!   configuration includes an estimator that needs it ([`Describe::needs_optimiser`]) the pool
//!   replaces its workers with `full-worker`s, which compute everything, and keeps them; the
//!   attention view's parts ask the same pool ([`AttentionRunner`]), which a first view of the
//!   attention view starts with `full-worker`s. So a first view of the kernel view downloads
//!   neither the attention math nor the optimiser. The model workers are a pool of this type
//!   too ([`WorkerKind::Model`], [`ModelPool`]), started when the text view first opens.
//! - Two builds of each worker are shipped (`scripts/build-worker.sh`): with relaxed SIMD (fused
//!   multiply-add, about 2.5 times faster) and with plain `simd128`. The pool asks the browser
//!   once ([`relaxed_simd`]: `WebAssembly.validate` on a 36-byte module using a relaxed-SIMD
//!   instruction) and starts the build it can run; only that one is downloaded.
//!   The relaxed build fuses multiply-adds only for the job's tasks (a relaxed fused
//!   multiply-add may round once or twice); the CSV/JSON export's tasks ask for unfused
//!   arithmetic, so the same workers print what `kernel-lab experiment` prints (`ui::export`).
//! - Replaced workers are detached before they are terminated (their `onmessage` and
//!   `onerror` cleared) and their handlers kept until the next replacement, so a message
//!   already queued by a terminated worker (its "ready", say) never calls a dropped closure.
//! - A request outside the job (the probe and its pair, the data panel, an attention part, an
//!   export task) goes through one typed function ([`Pool::ask`]) under the scheduler's rule
//!   that a channel's newest ticket wins; sent before any worker is ready, it waits for the
//!   first one.
//! - If no worker can start, or every worker died, the job and the waiting requests fail with
//!   [`NO_WORKER`]. Only the browser tests (`tests/browser.rs`), which have no worker files,
//!   install a runner on the page ([`compute_on_page_without_workers`]); the page never does,
//!   so its module does not contain the computation.
//!
//! The files: this one (the pool, the job's messages and answers, the page runner), `workers`
//! (which build, how many, starting and retiring them), `side` (the requests outside the job)
//! and `runners` (the handles the components get).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};
use std::time::Duration;

use leptos::prelude::set_timeout;
use wasm_bindgen::prelude::*;

use crate::lab::config::ExperimentConfig;
pub use crate::lab::pool::SchedulerEvent as PoolEvent;
use crate::lab::pool::{Dispatch, Scheduler};
use crate::lab::pool::{
    ResponseHead, WorkerRequest, decode, encode_request, request_kind, response_value,
};
#[cfg(doc)]
use crate::numerics::estimators::Describe;

mod runners;
mod side;
mod workers;

pub use crate::lab::pool::{Channel, Ticket};
pub use runners::{
    AttentionRunner, DataViewRunner, ExportRunner, ModelPool, ProbeRunner, StudyChannel,
};
use side::SideEntry;
use workers::post_transferred;
use workers::{RetiredHandlers, WorkerHandle};
pub use workers::{WorkerKind, relaxed_simd};

/// A job's task message as `encode` writes it, written by kind (`encode_request`), so that the
/// page links no encoder of the requests it never sends from its first view.
fn task_bytes(request: &WorkerRequest) -> Result<Vec<u8>, String> {
    match request {
        WorkerRequest::Task(task) => encode_request(request_kind::TASK, task),
        _ => Err("the scheduler dispatched something else than a task".into()),
    }
}

/// What the page says when no worker can compute.
pub const NO_WORKER: &str = "no Web Worker could start: the lab computes only in Web Workers (with WebAssembly SIMD); see the browser console";

/// Runs one encoded [`WorkerRequest`] and returns the encoded [`WorkerResponse`], on the page.
pub type PageRunner = Rc<dyn Fn(&[u8]) -> Vec<u8>>;

thread_local! {
    static PAGE_RUNNER: RefCell<Option<PageRunner>> = const { RefCell::new(None) };
}

/// For the browser tests only (they have no worker files): pools created after this call run
/// their tasks and requests with `runner` on the page, one per `setTimeout`, when no worker
/// can start. The page never calls it, so the computation stays out of its module.
pub fn compute_on_page_without_workers(runner: PageRunner) {
    PAGE_RUNNER.with(|r| *r.borrow_mut() = Some(runner));
}

/// The pool; shared as `Rc<RefCell<Pool>>` with the workers' message handlers.
pub struct Pool {
    workers: Vec<WorkerHandle>,
    /// The handlers of the workers replaced last time (see [`WorkerHandle::retire`]).
    retired: Vec<RetiredHandlers>,
    scheduler: Scheduler,
    /// Which worker it runs (a kernel pool may become [`WorkerKind::Full`], never back).
    kind: WorkerKind,
    /// Whether the browser runs the relaxed-SIMD build (else the `simd128` one).
    relaxed: bool,
    /// Runs tasks on the main thread when no worker is available (browser tests only).
    page_runner: Option<PageRunner>,
    local_scheduled: bool,
    /// Side requests queued or in flight, under the scheduler's handles.
    side: HashMap<u64, SideEntry>,
    /// Model workers: which have said they listen (connected pairwise as they do), and which
    /// are still fetching or checking the model (none is given work before all are done, so
    /// that a request for every worker finds them all).
    listening: Vec<bool>,
    loading: Vec<bool>,
    listener: Rc<dyn Fn(PoolEvent)>,
    this: Weak<RefCell<Pool>>,
}

pub(super) fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0)
}

impl Pool {
    /// Starts workers of `kind` (the page's pool: the kind its first view needs, which a
    /// later request may widen; the model's pool). `listener` receives every [`PoolEvent`]
    /// (outside any borrow of the pool, so it may call back into it).
    pub fn of(kind: WorkerKind, listener: impl Fn(PoolEvent) + 'static) -> Rc<RefCell<Pool>> {
        let pool = Rc::new_cyclic(|this| {
            RefCell::new(Pool {
                workers: Vec::new(),
                retired: Vec::new(),
                scheduler: Scheduler::new(0),
                kind,
                relaxed: relaxed_simd(),
                page_runner: PAGE_RUNNER.with(|r| r.borrow().clone()),
                local_scheduled: false,
                side: HashMap::new(),
                listening: Vec::new(),
                loading: Vec::new(),
                listener: Rc::new(listener),
                this: this.clone(),
            })
        });
        {
            let mut p = pool.borrow_mut();
            let started = p.spawn_workers();
            p.scheduler = Scheduler::new(started);
            // A model worker takes one request at a time: a text typed never waits behind a
            // queue of swap jobs inside a worker.
            if kind.holds_a_model() {
                p.scheduler.set_side_limit(Some(1));
            }
        }
        pool
    }

    /// Live workers (0: none could start, or all died).
    pub fn workers(&self) -> usize {
        self.scheduler.workers()
    }

    /// Multiply-adds per millisecond on the last finished job, if any.
    pub fn throughput(&self) -> Option<f64> {
        self.scheduler.throughput()
    }

    /// Starts computing `config` as request `generation`, superseding the job in flight.
    pub fn submit(pool: &Rc<RefCell<Pool>>, generation: u64, config: &ExperimentConfig) {
        Pool::ensure_covers(pool, WorkerKind::for_config(config));
        let events = pool
            .borrow_mut()
            .scheduler
            .submit(generation, config, now_ms());
        Pool::emit(pool, events);
        Pool::pump(pool);
    }

    /// Drops the queue of the job in flight without stopping the workers (the few small tasks
    /// already sent finish and are stored): what a configuration that waits for confirmation
    /// needs, cheaply, however often it happens while a slider is dragged.
    pub fn pause(pool: &Rc<RefCell<Pool>>) {
        pool.borrow_mut().scheduler.pause();
    }

    /// Stops the current job: the queue is dropped and the workers are replaced, so even a
    /// task that would run for seconds stops now.
    pub fn cancel(pool: &Rc<RefCell<Pool>>) {
        Pool::restart(pool, "cancelled");
    }

    /// Replaces the workers and drops the queue; the side requests in flight fail with
    /// `reason`.
    fn restart(pool: &Rc<RefCell<Pool>>, reason: &str) {
        let lost = {
            let mut p = pool.borrow_mut();
            let started = p.spawn_workers();
            p.scheduler.cancel(started)
        };
        Pool::fail_side_requests(pool, &lost, reason);
    }

    /// Makes the pool run `full-worker`s if `needed` is [`WorkerKind::Full`] and it does not
    /// yet: the first time a configuration needs the optimiser, its workers are replaced once
    /// (the download happens then, not on the first view).
    fn ensure_covers(pool: &Rc<RefCell<Pool>>, needed: WorkerKind) {
        let kind = pool.borrow().kind;
        if kind.covers(needed) {
            return;
        }
        pool.borrow_mut().kind = needed;
        Pool::restart(
            pool,
            "interrupted: the workers were replaced by ones that compute the optimised A",
        );
    }

    fn emit(pool: &Rc<RefCell<Pool>>, events: Vec<PoolEvent>) {
        if events.is_empty() {
            return;
        }
        let listener = pool.borrow().listener.clone();
        for event in events {
            listener(event);
        }
    }

    /// Posts what the scheduler dispatches. Without any worker the job fails with
    /// [`NO_WORKER`] (in the browser tests: the next task is scheduled on the page).
    fn pump(pool: &Rc<RefCell<Pool>>) {
        let mut p = pool.borrow_mut();
        if p.scheduler.workers() == 0 {
            if p.page_runner.is_none() {
                let events = p.scheduler.fail(NO_WORKER.into());
                drop(p);
                Pool::emit(pool, events);
                return;
            }
            if p.scheduler.has_queued() && !p.local_scheduled {
                p.local_scheduled = true;
                let this = p.this.clone();
                set_timeout(
                    move || {
                        if let Some(pool) = this.upgrade() {
                            Pool::run_local(&pool);
                        }
                    },
                    Duration::ZERO,
                );
            }
            return;
        }
        let dispatched = p.scheduler.dispatch();
        let mut failed = false;
        for Dispatch { slot, id, request } in dispatched {
            let handle = slot.and_then(|i| p.workers.get(i));
            let sent = task_bytes(&request)
                .map_err(JsValue::from)
                .and_then(|bytes| match handle {
                    Some(h) => post_transferred(&h.worker, &bytes),
                    None => Err("no such worker".into()),
                });
            if let Err(error) = sent {
                web_sys::console::error_2(&"cannot send a task".into(), &error);
                p.scheduler.send_failed(id);
                failed = true;
            }
        }
        if failed {
            // A worker was lost on the way: hand its tasks on.
            drop(p);
            Pool::pump(pool);
        }
    }

    /// Runs one task with the page runner (browser tests only), then yields to the browser.
    fn run_local(pool: &Rc<RefCell<Pool>>) {
        let answer = {
            let mut p = pool.borrow_mut();
            p.local_scheduled = false;
            let Some(Dispatch { request, .. }) = p.scheduler.dispatch().into_iter().next() else {
                return;
            };
            match (task_bytes(&request), p.page_runner.clone()) {
                (Ok(bytes), Some(runner)) => {
                    drop(p);
                    runner(&bytes)
                }
                _ => return,
            }
        };
        Pool::on_answer(pool, None, &answer);
    }

    fn on_message(pool: &Rc<RefCell<Pool>>, slot: usize, data: JsValue) {
        if data.as_string().as_deref() == Some(crate::worker::READY) {
            if pool.borrow().kind.holds_a_model() {
                // It listens; it is given work once every model worker has loaded the model.
                Pool::connect_peers(pool, slot);
                return;
            }
            pool.borrow_mut().scheduler.worker_ready(slot);
            Pool::pump_side(pool);
            Pool::pump(pool);
            return;
        }
        let bytes = js_sys::Uint8Array::new(&data).to_vec();
        Pool::on_answer(pool, Some(slot), &bytes);
    }

    /// Reads a response's kind and id only ([`ResponseHead`]): a job's task goes to the
    /// scheduler, a model worker's setup to [`Pool::on_setup`], every other answer's bytes to
    /// the side request that asked, whose own [`crate::lab::pool::Ask::answer`] decodes them.
    fn on_answer(pool: &Rc<RefCell<Pool>>, slot: Option<usize>, bytes: &[u8]) {
        let head = match decode::<ResponseHead>(bytes) {
            Ok(head) => head,
            Err(message) => {
                let events = pool.borrow_mut().scheduler.fail(message);
                Pool::emit(pool, events);
                Pool::pump(pool);
                return;
            }
        };
        match head {
            ResponseHead::Update { id } => {
                if let Ok(update) = response_value(bytes) {
                    Pool::side_update(pool, id, update);
                }
            }
            ResponseHead::Setup(setup) => {
                if let Some(slot) = slot {
                    Pool::on_setup(pool, slot, setup);
                }
            }
            // An export task is a side request: its id is not one of the job's.
            ResponseHead::Task(task)
                if pool.borrow().scheduler.side_request_of(task.id).is_none() =>
            {
                let events = pool.borrow_mut().scheduler.answer(slot, *task, now_ms());
                Pool::emit(pool, events);
            }
            ResponseHead::Task(task) => Pool::side_answered(pool, task.id, bytes.to_vec()),
            ResponseHead::Probe { id }
            | ResponseHead::Attention { id }
            | ResponseHead::ScatterPair { id }
            | ResponseHead::DataView { id }
            | ResponseHead::Model { id } => Pool::side_answered(pool, id, bytes.to_vec()),
        }
        Pool::pump(pool);
    }

    fn on_worker_error(pool: &Rc<RefCell<Pool>>, slot: usize) {
        let lost = pool.borrow_mut().scheduler.worker_lost(slot);
        Pool::fail_side_requests(
            pool,
            &lost,
            &format!("worker {slot} failed during the computation"),
        );
        Pool::pump(pool);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        for handle in std::mem::take(&mut self.workers) {
            // Detached first; the handlers die with the pool, after the workers stopped.
            self.retired.push(handle.retire());
        }
    }
}
