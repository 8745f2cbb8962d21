//! The Web Worker pool that computes the page's results off the main thread.
//!
//! - One worker per core (`navigator.hardwareConcurrency`, capped at [`MAX_WORKERS`]), each
//!   running `kernel-worker` ([`crate::worker`]). A worker regenerates datasets and ω from the
//!   seed, so a message is only a configuration and a [`Task`].
//! - At most [`IN_FLIGHT_PER_WORKER`] tasks per worker: a newer configuration clears the
//!   queue, so dragging a slider leaves no backlog, only the few small tasks already sent.
//! - Finished outputs go into a [`TaskStore`] under their keys, whatever configuration asked for
//!   them, so going back to an earlier value, or changing only m or one heuristic, reuses them.
//! - Each part of the page (scatter, boxplots, curves) is announced as soon as its last task
//!   is in: results stream back, the scatter first.
//! - If no worker can start (an old browser, a test page without the worker files), tasks run
//!   on the main thread one per `setTimeout`, so the page still never blocks for long.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::Duration;

use leptos::prelude::{LocalStorage, StoredValue, WithValue, set_timeout};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{ErrorEvent, MessageEvent, Worker};

use crate::math::config::ExperimentConfig;
use crate::math::experiment::{EstimatorSummary, MseCurve, ScatterSeries};
use crate::math::probe::{ProbeResult, probe_pair};
use crate::math::tasks::{
    Part, ProbeRequest, Task, TaskRequest, TaskResponse, TaskStore, WorkerRequest, WorkerResponse,
    Workspace, decode, encode, handle_request, task_key, task_work,
};

/// Told the outcome of a probe.
pub type ProbeDone = Box<dyn FnOnce(Result<ProbeResult, String>)>;

/// The loader Trunk writes for the `kernel-worker` binary (`data-loader-shim`).
const WORKER_SCRIPT: &str = "./kernel-worker_loader.js";
/// Workers beyond this many rarely help (the tasks are memory-light but the page is not alone).
pub const MAX_WORKERS: usize = 8;
/// Tasks per worker at once: one computing, the others waiting, so that a worker does not idle
/// while the page draws a chart (tens of milliseconds). At a few milliseconds per task, a
/// superseded job still finishes within a few tens of milliseconds.
const IN_FLIGHT_PER_WORKER: usize = 8;

/// What the pool tells the page.
#[derive(Clone, Debug)]
pub enum PoolEvent {
    /// Share of the current job's work done, in `[0, 1]`.
    Progress {
        generation: u64,
        fraction: f64,
    },
    Scatter {
        generation: u64,
        scatter: Arc<Vec<ScatterSeries>>,
    },
    Summaries {
        generation: u64,
        summaries: Arc<Vec<EstimatorSummary>>,
    },
    Curves {
        generation: u64,
        curves: Arc<Vec<MseCurve>>,
    },
    /// Every part of the job is in.
    Finished {
        generation: u64,
        elapsed_ms: f64,
    },
    Failed {
        generation: u64,
        message: String,
    },
}

struct Slot {
    worker: Worker,
    ready: bool,
    alive: bool,
    in_flight: usize,
    // Kept alive as long as the worker.
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(ErrorEvent)>,
}

struct Sent {
    key: String,
    slot: Option<usize>,
    task: Task,
    config: Rc<ExperimentConfig>,
}

struct Job {
    generation: u64,
    config: Rc<ExperimentConfig>,
    /// Keys still awaited, with their part and work.
    pending: HashMap<String, (Part, f64)>,
    total_work: f64,
    done_work: f64,
    started_ms: f64,
}

/// The pool; shared as `Rc<RefCell<Pool>>` with the workers' message handlers.
pub struct Pool {
    slots: Vec<Slot>,
    queue: VecDeque<(Task, String)>,
    sent: HashMap<u64, Sent>,
    next_id: u64,
    job: Option<Job>,
    store: TaskStore,
    /// Runs tasks on the main thread when no worker is available.
    local: Option<Workspace>,
    local_scheduled: bool,
    /// Multiply-adds per millisecond measured on the last finished job.
    throughput: Option<f64>,
    /// Probes in flight: the worker that has each, and whom to tell.
    probes: HashMap<u64, (usize, ProbeDone)>,
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
                slots: Vec::new(),
                queue: VecDeque::new(),
                sent: HashMap::new(),
                next_id: 1,
                job: None,
                store: TaskStore::new(),
                local: None,
                local_scheduled: false,
                throughput: None,
                probes: HashMap::new(),
                listener: Rc::new(listener),
                this: this.clone(),
            })
        });
        pool.borrow_mut().spawn_workers();
        pool
    }

    fn spawn_workers(&mut self) {
        self.slots.clear();
        for index in 0..worker_count() {
            match self.spawn(index) {
                Ok(slot) => self.slots.push(slot),
                Err(error) => {
                    web_sys::console::warn_2(
                        &"softmax-kernel-lab: no Web Worker, computing on the page".into(),
                        &error,
                    );
                    break;
                }
            }
        }
        if self.slots.is_empty() {
            self.local = Some(Workspace::new());
        }
    }

    fn spawn(&self, index: usize) -> Result<Slot, JsValue> {
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
        Ok(Slot {
            worker,
            ready: false,
            alive: true,
            in_flight: 0,
            _on_message: on_message,
            _on_error: on_error,
        })
    }

    /// Live workers (0 when the page computes on the main thread).
    pub fn workers(&self) -> usize {
        self.slots.iter().filter(|s| s.alive).count()
    }

    /// Multiply-adds per millisecond on the last finished job, if any.
    pub fn throughput(&self) -> Option<f64> {
        self.throughput
    }

    /// Starts computing `config` as request `generation`, superseding the job in flight.
    pub fn submit(pool: &Rc<RefCell<Pool>>, generation: u64, config: &ExperimentConfig) {
        let events = {
            let mut p = pool.borrow_mut();
            p.start_job(generation, config)
        };
        Pool::emit(pool, events);
        Pool::pump(pool);
    }

    /// Stops the current job: the queue is dropped and the workers are replaced, so even a
    /// task that would run for seconds stops now.
    pub fn cancel(pool: &Rc<RefCell<Pool>>) {
        let probes: Vec<ProbeDone> = {
            let mut p = pool.borrow_mut();
            p.queue.clear();
            p.job = None;
            p.sent.clear();
            for slot in &p.slots {
                slot.worker.terminate();
            }
            p.spawn_workers();
            p.probes.drain().map(|(_, (_, done))| done).collect()
        };
        for done in probes {
            done(Err("cancelled".into()));
        }
    }

    /// Runs the single-pair probe in the least busy worker (or, without workers, on the page
    /// after the current task) and tells `done` the outcome.
    pub fn probe(pool: &Rc<RefCell<Pool>>, request: ProbeRequest, done: ProbeDone) {
        let mut p = pool.borrow_mut();
        let id = p.fresh_id();
        let slot = (0..p.slots.len())
            .filter(|&i| p.slots[i].alive && p.slots[i].ready)
            .min_by_key(|&i| p.slots[i].in_flight);
        if let Some(index) = slot {
            let message = encode(&WorkerRequest::Probe {
                id,
                probe: request.clone(),
            })
            .map(|bytes| js_sys::Uint8Array::from(bytes.as_slice()));
            if let Ok(array) = message
                && p.slots[index].worker.post_message(&array).is_ok()
            {
                p.probes.insert(id, (index, done));
                return;
            }
        }
        // No worker ready (or none at all): compute it on the page, in a task of its own.
        drop(p);
        set_timeout(
            move || {
                let r = request;
                done(probe_pair(&r).map_err(|e| e.to_string()))
            },
            Duration::ZERO,
        );
    }

    fn start_job(&mut self, generation: u64, config: &ExperimentConfig) -> Vec<PoolEvent> {
        self.store.trim(config);
        self.queue.clear();
        let config = Rc::new(config.clone());
        let in_flight: std::collections::HashSet<&str> =
            self.sent.values().map(|s| s.key.as_str()).collect();
        let mut pending = HashMap::new();
        let mut total_work = 0.0;
        for task in self.store.missing(&config) {
            let key = task_key(&config, &task);
            let work = task_work(&config, &task);
            total_work += work;
            pending.insert(key.clone(), (task.piece.part(), work));
            // A task already sent for an earlier configuration is awaited, not sent twice.
            if !in_flight.contains(key.as_str()) {
                self.queue.push_back((task, key));
            }
        }
        self.job = Some(Job {
            generation,
            config,
            pending,
            total_work,
            done_work: 0.0,
            started_ms: now_ms(),
        });
        let mut events = Vec::new();
        for part in [Part::Scatter, Part::Boxplots, Part::Curves] {
            self.announce_if_complete(part, &mut events);
        }
        self.finish_if_complete(&mut events);
        events
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

    /// Sends queued tasks to idle workers, preferring a worker that already holds the task's
    /// dataset (boxplot dataset i goes to worker i mod the pool size when it can).
    fn pump(pool: &Rc<RefCell<Pool>>) {
        let mut p = pool.borrow_mut();
        if p.local.is_some() {
            if !p.queue.is_empty() && !p.local_scheduled {
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
        let Some(job) = p.job.as_ref() else {
            return;
        };
        let config = job.config.clone();
        let live = p.slots.len().max(1);
        for index in 0..p.slots.len() {
            while p.slots[index].alive
                && p.slots[index].ready
                && p.slots[index].in_flight < IN_FLIGHT_PER_WORKER
            {
                // The first task this worker may take: one for any worker or for this one;
                // another worker's task only when nothing else is left.
                let position = p
                    .queue
                    .iter()
                    .position(|(t, _)| t.piece.affinity(live).is_none_or(|s| s == index))
                    .unwrap_or(0);
                let Some((task, key)) = p.queue.remove(position) else {
                    break;
                };
                let (id, request) = p.register(task, key, config.clone(), Some(index));
                let sent = encode(&request).map(|bytes| js_sys::Uint8Array::from(bytes.as_slice()));
                match sent
                    .map_err(JsValue::from)
                    .and_then(|array| p.slots[index].worker.post_message(&array).map(|_| ()))
                {
                    Ok(()) => p.slots[index].in_flight += 1,
                    Err(error) => {
                        web_sys::console::error_2(&"cannot send a task".into(), &error);
                        if let Some(unsent) = p.sent.remove(&id) {
                            p.queue.push_front((unsent.task, unsent.key));
                        }
                        p.slots[index].alive = false;
                        break;
                    }
                }
            }
        }
        if p.workers() == 0 && !p.slots.is_empty() {
            // Every worker died: finish on the main thread.
            p.slots.clear();
            p.local = Some(Workspace::new());
            drop(p);
            Pool::pump(pool);
        }
    }

    /// Runs one queued task on the main thread, then yields to the browser.
    fn run_local(pool: &Rc<RefCell<Pool>>) {
        let answer = {
            let mut p = pool.borrow_mut();
            p.local_scheduled = false;
            let Some((task, key)) = p.queue.pop_front() else {
                return;
            };
            let Some(config) = p.job.as_ref().map(|j| j.config.clone()) else {
                return;
            };
            let (_, request) = p.register(task, key, config, None);
            match (encode(&request), p.local.as_mut()) {
                (Ok(bytes), Some(workspace)) => handle_request(workspace, &bytes),
                _ => return,
            }
        };
        Pool::on_answer(pool, None, &answer);
    }

    fn on_message(pool: &Rc<RefCell<Pool>>, slot: usize, data: JsValue) {
        if data.as_string().as_deref() == Some(crate::worker::READY) {
            if let Some(s) = pool.borrow_mut().slots.get_mut(slot) {
                s.ready = true;
            }
            Pool::pump(pool);
            return;
        }
        let bytes = js_sys::Uint8Array::new(&data).to_vec();
        Pool::on_answer(pool, Some(slot), &bytes);
    }

    fn on_answer(pool: &Rc<RefCell<Pool>>, slot: Option<usize>, bytes: &[u8]) {
        let events = {
            let mut p = pool.borrow_mut();
            if let Some(s) = slot.and_then(|i| p.slots.get_mut(i)) {
                s.in_flight = s.in_flight.saturating_sub(1);
            }
            match decode::<WorkerResponse>(bytes) {
                Ok(WorkerResponse::Task(response)) => p.record(response),
                Ok(WorkerResponse::Probe { id, output }) => {
                    let done = p.probes.remove(&id).map(|(_, done)| done);
                    drop(p);
                    if let Some(done) = done {
                        done(output);
                    }
                    return;
                }
                Err(message) => p.fail(message),
            }
        };
        Pool::emit(pool, events);
        Pool::pump(pool);
    }

    fn on_worker_error(pool: &Rc<RefCell<Pool>>, slot: usize) {
        let lost: Vec<u64> = pool
            .borrow()
            .probes
            .iter()
            .filter(|(_, (s, _))| *s == slot)
            .map(|(id, _)| *id)
            .collect();
        for id in lost {
            let done = pool.borrow_mut().probes.remove(&id).map(|(_, done)| done);
            if let Some(done) = done {
                done(Err(format!("worker {slot} failed during the probe")));
            }
        }
        {
            let mut p = pool.borrow_mut();
            if let Some(s) = p.slots.get_mut(slot) {
                s.alive = false;
                s.in_flight = 0;
            }
            // Give the dead worker's tasks to the others.
            let orphans: Vec<u64> = p
                .sent
                .iter()
                .filter(|(_, s)| s.slot == Some(slot))
                .map(|(id, _)| *id)
                .collect();
            for id in orphans {
                if let Some(sent) = p.sent.remove(&id) {
                    let current = p
                        .job
                        .as_ref()
                        .is_some_and(|j| Rc::ptr_eq(&j.config, &sent.config));
                    if current {
                        p.queue.push_front((sent.task, sent.key));
                    }
                }
            }
        }
        Pool::pump(pool);
    }

    /// A message id not used before.
    fn fresh_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Records `task` as sent to worker `slot` (`None`: run on the page) under a fresh id, and
    /// returns the id and the message that asks for it.
    fn register(
        &mut self,
        task: Task,
        key: String,
        config: Rc<ExperimentConfig>,
        slot: Option<usize>,
    ) -> (u64, WorkerRequest) {
        let id = self.fresh_id();
        let request = WorkerRequest::Task(TaskRequest {
            id,
            config: (*config).clone(),
            task,
        });
        self.sent.insert(
            id,
            Sent {
                key,
                slot,
                task,
                config,
            },
        );
        (id, request)
    }

    fn fail(&mut self, message: String) -> Vec<PoolEvent> {
        match self.job.take() {
            Some(job) => {
                self.queue.clear();
                vec![PoolEvent::Failed {
                    generation: job.generation,
                    message,
                }]
            }
            None => Vec::new(),
        }
    }

    fn record(&mut self, response: TaskResponse) -> Vec<PoolEvent> {
        let Some(sent) = self.sent.remove(&response.id) else {
            return Vec::new();
        };
        let output = match response.output {
            Ok(output) => output,
            Err(message) => {
                let current = self
                    .job
                    .as_ref()
                    .is_some_and(|j| j.pending.contains_key(&sent.key));
                return if current {
                    self.fail(message)
                } else {
                    Vec::new()
                };
            }
        };
        self.store.insert_keyed(sent.key.clone(), output);
        let mut events = Vec::new();
        let Some(job) = self.job.as_mut() else {
            return events;
        };
        let Some((part, work)) = job.pending.remove(&sent.key) else {
            return events;
        };
        job.done_work += work;
        events.push(PoolEvent::Progress {
            generation: job.generation,
            fraction: if job.total_work > 0.0 {
                job.done_work / job.total_work
            } else {
                1.0
            },
        });
        self.announce_if_complete(part, &mut events);
        self.finish_if_complete(&mut events);
        events
    }

    /// Announces `part` of the current job if none of its tasks is pending.
    fn announce_if_complete(&self, part: Part, events: &mut Vec<PoolEvent>) {
        let Some(job) = self.job.as_ref() else {
            return;
        };
        if job.pending.values().any(|(p, _)| *p == part) {
            return;
        }
        let (generation, config) = (job.generation, &job.config);
        let event = match part {
            Part::Scatter => self
                .store
                .scatter(config)
                .map(|scatter| PoolEvent::Scatter {
                    generation,
                    scatter: Arc::new(scatter),
                }),
            Part::Boxplots => self
                .store
                .summaries(config)
                .map(|summaries| PoolEvent::Summaries {
                    generation,
                    summaries: Arc::new(summaries),
                }),
            Part::Curves => self.store.curves(config).map(|curves| PoolEvent::Curves {
                generation,
                curves: Arc::new(curves),
            }),
        };
        events.push(event.unwrap_or_else(|| PoolEvent::Failed {
            generation,
            message: "a finished part could not be assembled".into(),
        }));
    }

    fn finish_if_complete(&mut self, events: &mut Vec<PoolEvent>) {
        let finished = self.job.as_ref().filter(|j| j.pending.is_empty()).map(|j| {
            let elapsed_ms = now_ms() - j.started_ms;
            (j.generation, elapsed_ms, j.total_work)
        });
        if let Some((generation, elapsed_ms, work)) = finished {
            if work > 1e8 && elapsed_ms > 0.0 {
                self.throughput = Some(work / elapsed_ms);
            }
            self.job = None;
            events.push(PoolEvent::Finished {
                generation,
                elapsed_ms,
            });
        }
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

impl Drop for Pool {
    fn drop(&mut self) {
        for slot in &self.slots {
            slot.worker.terminate();
        }
    }
}
