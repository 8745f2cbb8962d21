//! The Web Worker pool that computes the page's results off the main thread: the transport
//! for [`Scheduler`], which decides everything (queue, supersede, in-flight limits, affinity,
//! reuse, progress, worker loss) and is tested natively (`src/math/scheduler.rs`). This file
//! only starts and stops workers, posts the messages the scheduler dispatches, hands it the
//! answers, and runs tasks on the page when no worker can start.
//!
//! - One worker per core (`navigator.hardwareConcurrency`, capped at [`MAX_WORKERS`]), each
//!   running `kernel-worker` ([`crate::worker`]). A worker regenerates datasets and ω from the
//!   seed, so a message is only a configuration and a task.
//! - Replaced workers are detached before they are terminated (their `onmessage` and
//!   `onerror` cleared) and their handlers kept until the next replacement, so a message
//!   already queued by a terminated worker (its "ready", say) never calls a dropped closure.
//! - If no worker can start (an old browser, a test page without the worker files), tasks run
//!   on the main thread one per `setTimeout`, so the page still never blocks for long.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};
use std::time::Duration;

use leptos::prelude::{LocalStorage, StoredValue, WithValue, set_timeout};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{ErrorEvent, MessageEvent, Worker};

use crate::math::attention::{AttentionOutput, AttentionRequest, run_attention};
use crate::math::config::ExperimentConfig;
use crate::math::probe::{ProbeResult, probe_pair};
pub use crate::math::scheduler::SchedulerEvent as PoolEvent;
use crate::math::scheduler::{Dispatch, Scheduler};
use crate::math::tasks::{
    ProbeRequest, WorkerRequest, WorkerResponse, Workspace, decode, encode, handle_request,
};

/// Told the outcome of a probe.
pub type ProbeDone = Box<dyn FnOnce(Result<ProbeResult, String>)>;
/// Told the outcome of one part of the attention view.
pub type AttentionDone = Box<dyn FnOnce(Result<AttentionOutput, String>)>;

/// A request outside the scheduler's job (a probe, an attention part) and whom to tell.
enum SideJob {
    Probe(ProbeDone),
    Attention(AttentionDone),
}

impl SideJob {
    /// Tells the waiting side that the request failed.
    fn fail(self, message: String) {
        match self {
            SideJob::Probe(done) => done(Err(message)),
            SideJob::Attention(done) => done(Err(message)),
        }
    }
}

/// The loader Trunk writes for the `kernel-worker` binary (`data-loader-shim`).
const WORKER_SCRIPT: &str = "./kernel-worker_loader.js";
/// Workers beyond this many rarely help (the tasks are memory-light but the page is not alone).
pub const MAX_WORKERS: usize = 8;

/// One Web Worker and the handlers the page installed on it.
struct WorkerHandle {
    worker: Worker,
    on_message: Closure<dyn FnMut(MessageEvent)>,
    on_error: Closure<dyn FnMut(ErrorEvent)>,
}

impl WorkerHandle {
    /// Detaches the handlers and stops the worker; returns the handlers, which must outlive
    /// any event the browser had already queued for them.
    fn retire(self) -> RetiredHandlers {
        self.worker.set_onmessage(None);
        self.worker.set_onerror(None);
        self.worker.terminate();
        (self.on_message, self.on_error)
    }
}

type RetiredHandlers = (
    Closure<dyn FnMut(MessageEvent)>,
    Closure<dyn FnMut(ErrorEvent)>,
);

/// The pool; shared as `Rc<RefCell<Pool>>` with the workers' message handlers.
pub struct Pool {
    workers: Vec<WorkerHandle>,
    /// The handlers of the workers replaced last time (see [`WorkerHandle::retire`]).
    retired: Vec<RetiredHandlers>,
    scheduler: Scheduler,
    /// Runs tasks on the main thread when no worker is available.
    local: Option<Workspace>,
    local_scheduled: bool,
    /// Whom to tell each probe's or attention part's outcome.
    side_jobs: HashMap<u64, SideJob>,
    listener: Rc<dyn Fn(PoolEvent)>,
    this: Weak<RefCell<Pool>>,
}

fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0)
}

/// How many workers to start: one per logical core, at least one, at most [`MAX_WORKERS`].
fn worker_count() -> usize {
    web_sys::window()
        .map(|w| w.navigator().hardware_concurrency())
        .filter(|n| n.is_finite() && *n >= 1.0)
        .map_or(2, |n| n as usize)
        .clamp(1, MAX_WORKERS)
}

impl Pool {
    /// Starts the workers. `listener` receives every [`PoolEvent`] (outside any borrow of the
    /// pool, so it may call back into it).
    pub fn new(listener: impl Fn(PoolEvent) + 'static) -> Rc<RefCell<Pool>> {
        let pool = Rc::new_cyclic(|this| {
            RefCell::new(Pool {
                workers: Vec::new(),
                retired: Vec::new(),
                scheduler: Scheduler::new(0),
                local: None,
                local_scheduled: false,
                side_jobs: HashMap::new(),
                listener: Rc::new(listener),
                this: this.clone(),
            })
        });
        {
            let mut p = pool.borrow_mut();
            let started = p.spawn_workers();
            p.scheduler = Scheduler::new(started);
        }
        pool
    }

    /// Starts fresh workers; returns how many started (0: compute on the page).
    fn spawn_workers(&mut self) -> usize {
        let old: Vec<WorkerHandle> = std::mem::take(&mut self.workers);
        self.retired = old.into_iter().map(WorkerHandle::retire).collect();
        for index in 0..worker_count() {
            match self.spawn(index) {
                Ok(handle) => self.workers.push(handle),
                Err(error) => {
                    web_sys::console::warn_2(
                        &"softmax-kernel-lab: no Web Worker, computing on the page".into(),
                        &error,
                    );
                    break;
                }
            }
        }
        if self.workers.is_empty() {
            self.local.get_or_insert_with(Workspace::new);
        }
        self.workers.len()
    }

    fn spawn(&self, index: usize) -> Result<WorkerHandle, JsValue> {
        let worker = Worker::new(WORKER_SCRIPT)?;
        let this = self.this.clone();
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            if let Some(pool) = this.upgrade() {
                Pool::on_message(&pool, index, event.data());
            }
        });
        let this = self.this.clone();
        let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(move |event: ErrorEvent| {
            web_sys::console::error_1(
                &format!(
                    "softmax-kernel-lab: worker {index} failed: {}",
                    event.message()
                )
                .into(),
            );
            if let Some(pool) = this.upgrade() {
                Pool::on_worker_error(&pool, index);
            }
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        Ok(WorkerHandle {
            worker,
            on_message,
            on_error,
        })
    }

    /// Live workers (0 when the page computes on the main thread).
    pub fn workers(&self) -> usize {
        self.scheduler.workers()
    }

    /// Multiply-adds per millisecond on the last finished job, if any.
    pub fn throughput(&self) -> Option<f64> {
        self.scheduler.throughput()
    }

    /// Starts computing `config` as request `generation`, superseding the job in flight.
    pub fn submit(pool: &Rc<RefCell<Pool>>, generation: u64, config: &ExperimentConfig) {
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
        let lost: Vec<SideJob> = {
            let mut p = pool.borrow_mut();
            let started = p.spawn_workers();
            let lost = p.scheduler.cancel(started);
            lost.iter()
                .filter_map(|id| p.side_jobs.remove(id))
                .collect()
        };
        for job in lost {
            job.fail("cancelled".into());
        }
    }

    /// Runs the single-pair probe in the least busy worker (or, without workers, on the page
    /// after the current task) and tells `done` the outcome.
    pub fn probe(pool: &Rc<RefCell<Pool>>, request: ProbeRequest, done: ProbeDone) {
        let local = request.clone();
        Pool::side(
            pool,
            move |id| WorkerRequest::Probe { id, probe: request },
            SideJob::Probe(done),
            move |job| {
                if let SideJob::Probe(done) = job {
                    done(probe_pair(&local).map_err(|e| e.to_string()));
                }
            },
        );
    }

    /// Computes one part of the attention view in the least busy worker (or on the page) and
    /// tells `done` the outcome.
    pub fn attention(pool: &Rc<RefCell<Pool>>, request: AttentionRequest, done: AttentionDone) {
        let local = request.clone();
        Pool::side(
            pool,
            move |id| WorkerRequest::Attention { id, request },
            SideJob::Attention(done),
            move |job| {
                if let SideJob::Attention(done) = job {
                    done(run_attention(&local).map_err(|e| e.to_string()));
                }
            },
        );
    }

    /// Sends a request outside the job to the least busy worker; without a ready worker, runs
    /// `on_page` in a task of its own.
    fn side(
        pool: &Rc<RefCell<Pool>>,
        message: impl FnOnce(u64) -> WorkerRequest,
        job: SideJob,
        on_page: impl FnOnce(SideJob) + 'static,
    ) {
        let mut p = pool.borrow_mut();
        let (id, slot) = p.scheduler.start_probe();
        if let Some(index) = slot {
            let bytes = encode(&message(id)).map(|b| js_sys::Uint8Array::from(b.as_slice()));
            if let (Ok(array), Some(handle)) = (bytes, p.workers.get(index))
                && handle.worker.post_message(&array).is_ok()
            {
                p.side_jobs.insert(id, job);
                return;
            }
            p.scheduler.send_failed(id);
        }
        p.scheduler.probe_answered(id);
        drop(p);
        set_timeout(move || on_page(job), Duration::ZERO);
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

    /// Posts what the scheduler dispatches; on the page, schedules the next task.
    fn pump(pool: &Rc<RefCell<Pool>>) {
        let mut p = pool.borrow_mut();
        if p.scheduler.is_local() {
            p.local.get_or_insert_with(Workspace::new);
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
            let sent = encode(&request)
                .map_err(JsValue::from)
                .map(|bytes| js_sys::Uint8Array::from(bytes.as_slice()))
                .and_then(|array| match handle {
                    Some(h) => h.worker.post_message(&array),
                    None => Err("no such worker".into()),
                });
            if let Err(error) = sent {
                web_sys::console::error_2(&"cannot send a task".into(), &error);
                p.scheduler.send_failed(id);
                failed = true;
            }
        }
        if failed || p.scheduler.is_local() {
            // A worker was lost on the way (or all of them): hand its tasks on.
            drop(p);
            Pool::pump(pool);
        }
    }

    /// Runs one task on the main thread, then yields to the browser.
    fn run_local(pool: &Rc<RefCell<Pool>>) {
        let answer = {
            let mut p = pool.borrow_mut();
            p.local_scheduled = false;
            let Some(Dispatch { request, .. }) = p.scheduler.dispatch().into_iter().next() else {
                return;
            };
            match (encode(&request), p.local.as_mut()) {
                (Ok(bytes), Some(workspace)) => handle_request(workspace, &bytes),
                _ => return,
            }
        };
        Pool::on_answer(pool, None, &answer);
    }

    fn on_message(pool: &Rc<RefCell<Pool>>, slot: usize, data: JsValue) {
        if data.as_string().as_deref() == Some(crate::worker::READY) {
            pool.borrow_mut().scheduler.worker_ready(slot);
            Pool::pump(pool);
            return;
        }
        let bytes = js_sys::Uint8Array::new(&data).to_vec();
        Pool::on_answer(pool, Some(slot), &bytes);
    }

    fn on_answer(pool: &Rc<RefCell<Pool>>, slot: Option<usize>, bytes: &[u8]) {
        let events = {
            let mut p = pool.borrow_mut();
            match decode::<WorkerResponse>(bytes) {
                Ok(WorkerResponse::Task(response)) => p.scheduler.answer(slot, response, now_ms()),
                Ok(WorkerResponse::Probe { id, output }) => {
                    p.scheduler.probe_answered(id);
                    let job = p.side_jobs.remove(&id);
                    drop(p);
                    if let Some(SideJob::Probe(done)) = job {
                        done(output);
                    }
                    return;
                }
                Ok(WorkerResponse::Attention { id, output }) => {
                    p.scheduler.probe_answered(id);
                    let job = p.side_jobs.remove(&id);
                    drop(p);
                    if let Some(SideJob::Attention(done)) = job {
                        done(output);
                    }
                    return;
                }
                Err(message) => p.scheduler.fail(message),
            }
        };
        Pool::emit(pool, events);
        Pool::pump(pool);
    }

    fn on_worker_error(pool: &Rc<RefCell<Pool>>, slot: usize) {
        let lost: Vec<SideJob> = {
            let mut p = pool.borrow_mut();
            let ids = p.scheduler.worker_lost(slot);
            ids.iter().filter_map(|id| p.side_jobs.remove(id)).collect()
        };
        for job in lost {
            job.fail(format!("worker {slot} failed during the computation"));
        }
        Pool::pump(pool);
    }
}

/// The narrow handle the probe panel gets through context: it can run a probe in the pool,
/// nothing else.
#[derive(Clone, Copy)]
pub struct ProbeRunner(pub StoredValue<Rc<RefCell<Pool>>, LocalStorage>);

impl ProbeRunner {
    /// Runs `request` in a worker; `done` is told the outcome.
    pub fn run(&self, request: ProbeRequest, done: ProbeDone) {
        self.0.with_value(|pool| Pool::probe(pool, request, done));
    }
}

/// The narrow handle the attention view gets through context: it can compute attention parts
/// in the pool, nothing else.
#[derive(Clone, Copy)]
pub struct AttentionRunner(pub StoredValue<Rc<RefCell<Pool>>, LocalStorage>);

impl AttentionRunner {
    /// Computes `request` in a worker; `done` is told the outcome.
    pub fn run(&self, request: AttentionRequest, done: AttentionDone) {
        self.0
            .with_value(|pool| Pool::attention(pool, request, done));
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
