//! The Web Worker pool that computes the page's results off the main thread: the transport
//! for [`Scheduler`], which decides everything (queue, supersede, in-flight limits, affinity,
//! reuse, progress, worker loss) and is tested natively (`src/math/scheduler.rs`). This file
//! only starts and stops workers, posts the messages the scheduler dispatches and hands it the
//! answers. **The page itself computes nothing**: it does not link the math that the workers
//! run (the page's module is a third of its former size), so without a worker there is only
//! a clear error.
//!
//! - One worker per core (`navigator.hardwareConcurrency`, capped at [`MAX_WORKERS`]), each
//!   running `kernel-worker` ([`crate::worker`]). A worker regenerates datasets and ω from the
//!   seed, so a message is only a configuration and a task.
//! - Two workers ([`WorkerKind`]): the page's pool runs `kernel-worker` (the kernel view's
//!   tasks, the probe, the data panel), built without the optimised A's optimiser; once a
//!   configuration includes an estimator that needs it ([`Describe::needs_optimiser`]) the pool
//!   replaces its workers with `full-worker`s, which compute everything, and keeps them. The
//!   attention view gets a pool of `full-worker`s of its own ([`AttentionRunner`]), started by
//!   its first request. So a first view of the kernel view downloads neither the attention
//!   math nor the optimiser.
//! - Two builds of each worker are shipped (`scripts/build-worker.sh`): with relaxed SIMD (fused
//!   multiply-add, about 2.5 times faster) and with plain `simd128`. The pool asks the browser
//!   once ([`relaxed_simd`]: `WebAssembly.validate` on a 36-byte module using a relaxed-SIMD
//!   instruction) and starts the build it can run; only that one is downloaded.
//!   The relaxed build is not bit-for-bit the native one (a relaxed fused multiply-add may
//!   round once or twice): the CSV/JSON export then computes in simd128 workers of its own
//!   (`ui::export`), so that it prints what `kernel-lab experiment` prints.
//! - Replaced workers are detached before they are terminated (their `onmessage` and
//!   `onerror` cleared) and their handlers kept until the next replacement, so a message
//!   already queued by a terminated worker (its "ready", say) never calls a dropped closure.
//! - A request outside the job (the probe and its pair, the data panel, an attention part) sent before any
//!   worker is ready waits for the first one.
//! - If no worker can start, or every worker died, the job and the waiting requests fail with
//!   [`NO_WORKER`]. Only the browser tests (`tests/browser.rs`), which have no worker files,
//!   install a runner on the page ([`compute_on_page_without_workers`]); the page never does,
//!   so its module does not contain the computation.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};
use std::time::Duration;

use leptos::prelude::{LocalStorage, StoredValue, UpdateValue, WithValue, set_timeout};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{ErrorEvent, MessageEvent, Worker};

use crate::lab::attention::{AttentionOutput, AttentionRequest};
use crate::lab::config::ExperimentConfig;
use crate::lab::data_view::DataView;
pub use crate::lab::scheduler::SchedulerEvent as PoolEvent;
use crate::lab::scheduler::{Dispatch, Scheduler};
use crate::lab::tasks::{ProbeRequest, WorkerRequest, WorkerResponse, decode, encode};
#[cfg(doc)]
use crate::numerics::estimators::Describe;
use crate::numerics::estimators::EstimatorId;
use crate::numerics::probe::{PairVectors, ProbeResult};

/// Told the outcome of a probe.
pub type ProbeDone = Box<dyn FnOnce(Result<ProbeResult, String>)>;
/// Told the outcome of one part of the attention view.
pub type AttentionDone = Box<dyn FnOnce(Result<AttentionOutput, String>)>;
/// Told the outcome of the data panel's view.
pub type DataViewDone = Box<dyn FnOnce(Result<DataView, String>)>;
/// Told the probe's pair of the scatter dataset.
pub type PairDone = Box<dyn FnOnce(Result<PairVectors, String>)>;

/// A request outside the scheduler's job (a probe, its pair, the data panel, an attention part) and whom to tell.
enum SideJob {
    Probe(ProbeDone),
    Attention(AttentionDone),
    DataView(DataViewDone),
    Pair(PairDone),
}

impl SideJob {
    /// Tells the waiting side its answer (one of another kind is dropped, as never asked).
    fn answer(self, response: WorkerResponse) {
        match (self, response) {
            (SideJob::Probe(done), WorkerResponse::Probe { output, .. }) => done(output),
            (SideJob::Attention(done), WorkerResponse::Attention { output, .. }) => done(output),
            (SideJob::Pair(done), WorkerResponse::ScatterPair { output, .. }) => done(output),
            (SideJob::DataView(done), WorkerResponse::DataView { output, .. }) => {
                done(output.map(|view| *view));
            }
            _ => {}
        }
    }

    /// Tells the waiting side that the request failed.
    fn fail(self, message: String) {
        match self {
            SideJob::Probe(done) => done(Err(message)),
            SideJob::Attention(done) => done(Err(message)),
            SideJob::DataView(done) => done(Err(message)),
            SideJob::Pair(done) => done(Err(message)),
        }
    }
}

/// Which worker a pool runs (`scripts/build-worker.sh` builds each twice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerKind {
    /// `kernel-worker`: the kernel view's tasks, the probe, the data panel, with every
    /// estimator that needs no optimiser (what the first view needs).
    Kernel,
    /// `full-worker`: every request, the attention view's parts and the optimised A included
    /// (started only when one of those is first asked for).
    Full,
}

impl WorkerKind {
    /// The kernel pool's worker for a configuration with these estimators: `full-worker` when
    /// one of them needs the optimiser.
    pub fn for_estimators(estimators: &[EstimatorId]) -> WorkerKind {
        if estimators.iter().any(|e| e.info().needs_optimiser()) {
            WorkerKind::Full
        } else {
            WorkerKind::Kernel
        }
    }

    /// The loader script of the relaxed-SIMD build, or of the `simd128`-only build for
    /// browsers without relaxed SIMD (the export's bit-exact path uses that one too).
    pub fn script(self, relaxed: bool) -> &'static str {
        match (self, relaxed) {
            (WorkerKind::Kernel, true) => "./kernel-worker_loader.js",
            (WorkerKind::Kernel, false) => "./kernel-worker-simd128_loader.js",
            (WorkerKind::Full, true) => "./full-worker_loader.js",
            (WorkerKind::Full, false) => "./full-worker-simd128_loader.js",
        }
    }

    /// Whether a pool of this kind can run what needs `needed`.
    fn covers(self, needed: WorkerKind) -> bool {
        self == WorkerKind::Full || needed == WorkerKind::Kernel
    }
}

/// What the page says when no worker can compute.
pub const NO_WORKER: &str = "no Web Worker could start: the lab computes only in Web Workers (with WebAssembly SIMD); see the browser console";

/// A module whose one function uses `i8x16.relaxed_swizzle`: valid only where relaxed SIMD is.
const RELAXED_SIMD_PROBE: [u8; 36] = [
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
    0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type: () -> v128
    0x03, 0x02, 0x01, 0x00, // one function of that type
    0x0a, 0x0f, 0x01, 0x0d, 0x00, // code: one body of 13 bytes, no locals
    0x41, 0x01, 0xfd, 0x0f, // i32.const 1, i8x16.splat
    0x41, 0x02, 0xfd, 0x0f, // i32.const 2, i8x16.splat
    0xfd, 0x80, 0x02, // i8x16.relaxed_swizzle
    0x0b, // end
];

/// Whether this browser runs relaxed-SIMD WebAssembly.
pub fn relaxed_simd() -> bool {
    let bytes = js_sys::Uint8Array::from(&RELAXED_SIMD_PROBE[..]);
    js_sys::WebAssembly::validate(&bytes).unwrap_or(false)
}

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

/// A side request that waits for a worker to be ready.
type Waiting = (Box<dyn FnOnce(u64) -> WorkerRequest>, SideJob);
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
    /// Which worker it runs (a kernel pool may become [`WorkerKind::Full`], never back).
    kind: WorkerKind,
    /// Whether the browser runs the relaxed-SIMD build (else the `simd128` one).
    relaxed: bool,
    /// Runs tasks on the main thread when no worker is available (browser tests only).
    page_runner: Option<PageRunner>,
    local_scheduled: bool,
    /// Whom to tell each probe's or attention part's outcome.
    side_jobs: HashMap<u64, SideJob>,
    /// Side requests made before any worker was ready.
    waiting: Vec<Waiting>,
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
pub(super) fn worker_count() -> usize {
    web_sys::window()
        .map(|w| w.navigator().hardware_concurrency())
        .filter(|n| n.is_finite() && *n >= 1.0)
        .map_or(2, |n| n as usize)
        .clamp(1, MAX_WORKERS)
}

impl Pool {
    /// Starts the kernel view's workers, of the kind the first configuration's `estimators`
    /// need. `listener` receives every [`PoolEvent`] (outside any borrow of the pool, so it
    /// may call back into it).
    pub fn new(
        estimators: &[EstimatorId],
        listener: impl Fn(PoolEvent) + 'static,
    ) -> Rc<RefCell<Pool>> {
        Pool::of(WorkerKind::for_estimators(estimators), listener)
    }

    /// Starts workers of `kind`; see [`Pool::new`].
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
                side_jobs: HashMap::new(),
                waiting: Vec::new(),
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

    /// Starts fresh workers; returns how many started (0: none can compute).
    fn spawn_workers(&mut self) -> usize {
        let old: Vec<WorkerHandle> = std::mem::take(&mut self.workers);
        self.retired = old.into_iter().map(WorkerHandle::retire).collect();
        for index in 0..worker_count() {
            match self.spawn(index) {
                Ok(handle) => self.workers.push(handle),
                Err(error) => {
                    web_sys::console::warn_2(
                        &"softmax-kernel-lab: cannot start a Web Worker".into(),
                        &error,
                    );
                    break;
                }
            }
        }
        self.workers.len()
    }

    fn spawn(&self, index: usize) -> Result<WorkerHandle, JsValue> {
        let worker = Worker::new(self.kind.script(self.relaxed))?;
        let this = self.this.clone();
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            if let Some(pool) = this.upgrade() {
                Pool::on_message(&pool, index, event.data());
            }
        });
        let this = self.this.clone();
        let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(move |event: ErrorEvent| {
            // A worker script that cannot load fires a plain `Event`, without `message`:
            // read it without assuming an `ErrorEvent` (a throw here would lose the error).
            let message = js_sys::Reflect::get(&event, &"message".into())
                .ok()
                .and_then(|m| m.as_string())
                .unwrap_or_else(|| "its script did not load".into());
            web_sys::console::error_1(
                &format!("softmax-kernel-lab: worker {index} failed: {message}").into(),
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
        Pool::ensure_covers(pool, WorkerKind::for_estimators(&config.estimators));
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
        let lost: Vec<SideJob> = {
            let mut p = pool.borrow_mut();
            let started = p.spawn_workers();
            let lost = p.scheduler.cancel(started);
            lost.iter()
                .filter_map(|id| p.side_jobs.remove(id))
                .collect()
        };
        for job in lost {
            job.fail(reason.into());
        }
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

    /// Runs the single-pair probe in the least busy worker and tells `done` the outcome.
    pub fn probe(pool: &Rc<RefCell<Pool>>, request: ProbeRequest, done: ProbeDone) {
        if request.fit_to_pair.is_some() {
            // The worker fits the typed pair.
            Pool::ensure_covers(pool, WorkerKind::for_estimators(&[request.estimator]));
        }
        Pool::side(
            pool,
            Box::new(move |id| WorkerRequest::Probe { id, probe: request }),
            SideJob::Probe(done),
        );
    }

    /// Computes one part of the attention view in the least busy worker and tells `done` the
    /// outcome.
    pub fn attention(pool: &Rc<RefCell<Pool>>, request: AttentionRequest, done: AttentionDone) {
        Pool::side(
            pool,
            Box::new(move |id| WorkerRequest::Attention { id, request }),
            SideJob::Attention(done),
        );
    }

    /// Asks the least busy worker for pair `index` of `config`'s scatter dataset.
    pub fn scatter_pair(
        pool: &Rc<RefCell<Pool>>,
        config: ExperimentConfig,
        index: usize,
        done: PairDone,
    ) {
        Pool::side(
            pool,
            Box::new(move |id| WorkerRequest::ScatterPair { id, config, index }),
            SideJob::Pair(done),
        );
    }

    /// Computes the data panel of `config` in the least busy worker and tells `done` the
    /// outcome.
    pub fn data_view(pool: &Rc<RefCell<Pool>>, config: ExperimentConfig, done: DataViewDone) {
        Pool::ensure_covers(pool, WorkerKind::for_estimators(&config.estimators));
        Pool::side(
            pool,
            Box::new(move |id| WorkerRequest::DataView { id, config }),
            SideJob::DataView(done),
        );
    }

    /// Sends a request outside the job to the least busy ready worker; while workers are
    /// still starting, it waits for the first; without any worker it fails (or, in the
    /// browser tests, runs on the page in a task of its own).
    fn side(
        pool: &Rc<RefCell<Pool>>,
        message: Box<dyn FnOnce(u64) -> WorkerRequest>,
        job: SideJob,
    ) {
        let mut p = pool.borrow_mut();
        let (id, slot) = p.scheduler.start_side_request();
        if let Some(index) = slot {
            let bytes = encode(&message(id)).map(|b| js_sys::Uint8Array::from(b.as_slice()));
            if let (Ok(array), Some(handle)) = (bytes, p.workers.get(index))
                && handle.worker.post_message(&array).is_ok()
            {
                p.side_jobs.insert(id, job);
                return;
            }
            p.scheduler.send_failed(id);
            drop(p);
            job.fail("the request could not be sent to a worker".into());
            return;
        }
        p.scheduler.side_request_answered(id);
        if p.scheduler.workers() > 0 {
            p.waiting.push((message, job));
            return;
        }
        let Some(runner) = p.page_runner.clone() else {
            drop(p);
            job.fail(NO_WORKER.into());
            return;
        };
        let (id, _) = p.scheduler.start_side_request();
        p.side_jobs.insert(id, job);
        let bytes = encode(&message(id));
        let this = p.this.clone();
        drop(p);
        set_timeout(
            move || {
                let answer = bytes.map(|b| runner(&b)).unwrap_or_default();
                if let Some(pool) = this.upgrade() {
                    Pool::on_answer(&pool, None, &answer);
                }
            },
            Duration::ZERO,
        );
    }

    /// Sends the side requests that waited for a worker (or fails them if none is left).
    fn flush_waiting(pool: &Rc<RefCell<Pool>>) {
        let waiting = std::mem::take(&mut pool.borrow_mut().waiting);
        for (message, job) in waiting {
            Pool::side(pool, message, job);
        }
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
            match (encode(&request), p.page_runner.clone()) {
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
            pool.borrow_mut().scheduler.worker_ready(slot);
            Pool::flush_waiting(pool);
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
                Ok(
                    side @ (WorkerResponse::Probe { id, .. }
                    | WorkerResponse::Attention { id, .. }
                    | WorkerResponse::ScatterPair { id, .. }
                    | WorkerResponse::DataView { id, .. }),
                ) => {
                    p.scheduler.side_request_answered(id);
                    let job = p.side_jobs.remove(&id);
                    drop(p);
                    if let Some(job) = job {
                        job.answer(side);
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
        if pool.borrow().scheduler.workers() == 0 {
            // None is left to wait for.
            Pool::flush_waiting(pool);
        }
        Pool::pump(pool);
    }
}

/// The narrow handle the probe panel gets through context: it can run a probe in the pool
/// (and ask for the probed pair of the scatter dataset), nothing else.
#[derive(Clone, Copy)]
pub struct ProbeRunner(pub StoredValue<Rc<RefCell<Pool>>, LocalStorage>);

impl ProbeRunner {
    /// Runs `request` in a worker; `done` is told the outcome.
    pub fn run(&self, request: ProbeRequest, done: ProbeDone) {
        self.0.with_value(|pool| Pool::probe(pool, request, done));
    }

    /// Asks a worker for pair `index` of `config`'s scatter dataset.
    pub fn scatter_pair(&self, config: ExperimentConfig, index: usize, done: PairDone) {
        self.0
            .with_value(|pool| Pool::scatter_pair(pool, config, index, done));
    }
}

/// The narrow handle the attention view gets through context: it can compute attention parts
/// in a pool of `full-worker`s ([`WorkerKind::Full`]), started on its first request, nothing
/// else.
#[derive(Clone, Copy)]
pub struct AttentionRunner(pub StoredValue<Option<Rc<RefCell<Pool>>>, LocalStorage>);

impl AttentionRunner {
    /// A runner whose pool starts with its first request.
    pub fn lazy() -> Self {
        AttentionRunner(StoredValue::new_local(None))
    }

    /// Computes `request` in a worker; `done` is told the outcome.
    pub fn run(&self, request: AttentionRequest, done: AttentionDone) {
        let pool = self.0.try_update_value(|pool| {
            pool.get_or_insert_with(|| Pool::of(WorkerKind::Full, |_| {}))
                .clone()
        });
        match pool {
            Some(pool) => Pool::attention(&pool, request, done),
            None => done(Err(NO_WORKER.into())),
        }
    }
}

/// The narrow handle the data panel gets through context: it can compute the panel's view in
/// the pool, nothing else.
#[derive(Clone, Copy)]
pub struct DataViewRunner(pub StoredValue<Rc<RefCell<Pool>>, LocalStorage>);

impl DataViewRunner {
    /// Computes the data panel of `config` in a worker; `done` is told the outcome.
    pub fn run(&self, config: ExperimentConfig, done: DataViewDone) {
        self.0
            .with_value(|pool| Pool::data_view(pool, config, done));
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
