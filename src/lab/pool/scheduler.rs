//! The scheduler of the page's computation, in plain Rust: which task goes to which worker,
//! when, and what the page learns from the answers. The Web Worker pool (`src/ui/pool.rs`)
//! only moves the messages this decides and the answers it is handed, so every rule here runs
//! in `cargo test`:
//!
//! - **Supersede, not queue**: a new job clears the queue; tasks already sent for an earlier
//!   job still land in the store (a later job may reuse them) and, if the new job needs the
//!   same key, are awaited instead of sent twice.
//! - **In-flight limit**: at most [`IN_FLIGHT_PER_WORKER`] tasks per worker, so a superseded
//!   job leaves no backlog.
//! - **Affinity**: a task goes to the worker that probably holds its dataset
//!   ([`Piece::affinity`]), another worker's task only when nothing else is left.
//! - **Reuse**: the [`TaskStore`] keeps every finished output under its key; a job plans only
//!   the missing tasks, so going back to an earlier configuration costs nothing.
//! - **Progress**: the share of the job's work done, monotone, announced per answer; each part
//!   (scatter, boxplots, curves) is announced once all of its tasks are in.
//! - **Worker loss**: a dead worker's tasks go back to the front of the queue; when every
//!   worker is dead (or none started) the scheduler hands out one task at a time with
//!   `slot: None`, for its caller to run itself: the native tests and the browser tests do;
//!   the page does not (it links no computation) and fails the job instead (`ui::pool`).
//! - **Side requests** (a probe, its pair, the data panel, an attention part, the export's
//!   tasks) go to the least busy ready worker, outside the job's queue, under one rule for
//!   every kind: per [`Channel`], the newest [`Ticket`] wins (older answers are not delivered,
//!   and a newer request waits until the older ones in flight are answered), in
//!   `side.rs` and `side_requests.rs`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use super::protocol::{TaskRequest, TaskResponse, WorkerRequest};
use crate::lab::config::ExperimentConfig;
use crate::lab::kernel::results::{EstimatorSummary, MseCurve, ScatterSeries};
use crate::lab::kernel::tasks::{Part, Task, TaskKey, TaskStore, task_key, task_work};
use crate::lab::models::protocol::ModelSetup;

use super::side::{Channels, Queued, SideRequest};

#[cfg(test)]
mod tests;

/// Tasks per worker at once: one computing, the others waiting, so that a worker does not idle
/// while the page draws a chart (tens of milliseconds). At a few milliseconds per task, a
/// superseded job still finishes within a few tens of milliseconds.
pub const IN_FLIGHT_PER_WORKER: usize = 8;

/// Jobs of more multiply-adds than this update the measured throughput.
const THROUGHPUT_MIN_WORK: f64 = 1e8;

/// What the scheduler tells the page.
#[derive(Clone, Debug, PartialEq)]
pub enum SchedulerEvent {
    /// Share of the current job's work done, in `[0, 1]`, never decreasing within a job.
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
    /// A model worker's news while it starts (its download, the model loaded, or why not).
    WorkerSetup {
        slot: usize,
        setup: ModelSetup,
    },
}

/// A message to deliver: to worker `slot`, or for the caller to run itself (`slot: None`).
#[derive(Clone, Debug, PartialEq)]
pub struct Dispatch {
    pub slot: Option<usize>,
    pub id: u64,
    pub request: WorkerRequest,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct SlotState {
    pub(super) ready: bool,
    pub(super) alive: bool,
    pub(super) in_flight: usize,
    /// Of `in_flight`, the side requests (capped by [`Scheduler::set_side_limit`]).
    pub(super) side_in_flight: usize,
}

#[derive(Clone, Debug)]
pub(super) struct Sent {
    key: TaskKey,
    slot: Option<usize>,
    task: Task,
}

#[derive(Clone, Debug)]
pub(super) struct Job {
    generation: u64,
    config: Arc<ExperimentConfig>,
    /// Keys still awaited, with their part and work.
    pending: HashMap<TaskKey, (Part, f64)>,
    total_work: f64,
    done_work: f64,
    started_ms: f64,
}

/// The scheduler's whole state.
#[derive(Debug)]
pub struct Scheduler {
    pub(super) slots: Vec<SlotState>,
    /// No worker (none could start, or all died): tasks go to the caller (`slot: None`).
    pub(super) local: bool,
    pub(super) queue: VecDeque<(Task, TaskKey)>,
    pub(super) sent: HashMap<u64, Sent>,
    pub(super) next_id: u64,
    pub(super) job: Option<Job>,
    pub(super) store: TaskStore,
    pub(super) throughput: Option<f64>,
    /// Side requests in flight (a probe, its pair, the data panel, an attention part: what is
    /// outside the job) and the worker each went to (`side.rs`).
    pub(super) side_requests: HashMap<u64, SideRequest>,
    /// Each channel's newest ticket.
    pub(super) channels: Channels,
    /// Side requests not sent yet, in the order they came.
    pub(super) side_queue: Vec<Queued>,
    /// At most this many side requests per worker at once (`None`: no limit).
    pub(super) side_limit: Option<usize>,
}

impl Scheduler {
    /// A scheduler for `workers` workers (0: the caller runs everything). Workers start not
    /// ready: [`Scheduler::worker_ready`] says when each can take tasks.
    pub fn new(workers: usize) -> Self {
        Self {
            slots: vec![
                SlotState {
                    alive: true,
                    ..SlotState::default()
                };
                workers
            ],
            local: workers == 0,
            queue: VecDeque::new(),
            sent: HashMap::new(),
            next_id: 1,
            job: None,
            store: TaskStore::new(),
            throughput: None,
            side_requests: HashMap::new(),
            channels: Channels::default(),
            side_queue: Vec::new(),
            side_limit: None,
        }
    }

    /// Live workers (0 when none started or all died).
    pub fn workers(&self) -> usize {
        if self.local {
            0
        } else {
            self.slots.iter().filter(|s| s.alive).count()
        }
    }

    /// Whether tasks go to the caller (no worker).
    pub fn is_local(&self) -> bool {
        self.local
    }

    /// Multiply-adds per millisecond on the last finished job of some size, if any.
    pub fn throughput(&self) -> Option<f64> {
        self.throughput
    }

    /// Whether tasks wait in the queue.
    pub fn has_queued(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Starts job `generation` for `config`, superseding the one in flight: the tasks whose
    /// outputs are not stored are queued, except those already sent (awaited, not resent).
    /// Parts already complete are announced at once.
    pub fn submit(
        &mut self,
        generation: u64,
        config: &ExperimentConfig,
        now_ms: f64,
    ) -> Vec<SchedulerEvent> {
        self.store.trim(config);
        self.queue.clear();
        let config = Arc::new(config.clone());
        let in_flight: HashSet<&TaskKey> = self.sent.values().map(|s| &s.key).collect();
        let mut pending = HashMap::new();
        let mut total_work = 0.0;
        let mut queue = VecDeque::new();
        for task in self.store.missing(&config) {
            let key = task_key(&config, &task);
            let work = task_work(&config, &task);
            total_work += work;
            if !in_flight.contains(&key) {
                queue.push_back((task, key.clone()));
            }
            pending.insert(key, (task.piece.part(), work));
        }
        self.queue = queue;
        self.job = Some(Job {
            generation,
            config,
            pending,
            total_work,
            done_work: 0.0,
            started_ms: now_ms,
        });
        let mut events = Vec::new();
        for part in [Part::Scatter, Part::Boxplots, Part::Curves] {
            self.announce_if_complete(part, &mut events);
        }
        self.finish_if_complete(now_ms, &mut events);
        events
    }

    /// Drops the current job and its queue but keeps the workers and their messages in
    /// flight (whose outputs still land in the store): for a configuration that waits for
    /// the user's confirmation.
    pub fn pause(&mut self) {
        self.queue.clear();
        self.job = None;
    }

    /// Stops the current job and forgets every message in flight: the pool replaces its
    /// workers (`workers` new ones, not ready yet). Returns the side requests that will never be
    /// answered.
    pub fn cancel(&mut self, workers: usize) -> Vec<u64> {
        let lost = self.forget_side_requests();
        *self = Self {
            store: std::mem::take(&mut self.store),
            throughput: self.throughput,
            next_id: self.next_id,
            // The requests not sent yet go to the new workers, under the same tickets.
            side_queue: std::mem::take(&mut self.side_queue),
            channels: std::mem::take(&mut self.channels),
            side_limit: self.side_limit,
            ..Self::new(workers)
        };
        lost
    }

    /// Worker `slot` has started and can take tasks.
    pub fn worker_ready(&mut self, slot: usize) {
        if let Some(s) = self.slots.get_mut(slot) {
            s.ready = true;
        }
    }

    /// The messages to send now: queued tasks for every ready worker up to its in-flight
    /// limit, preferring the tasks meant for it; or, without workers, the next task alone.
    pub fn dispatch(&mut self) -> Vec<Dispatch> {
        let Some(config) = self.job.as_ref().map(|j| j.config.clone()) else {
            return Vec::new();
        };
        if !self.local && !self.slots.is_empty() && self.slots.iter().all(|s| !s.alive) {
            // Every worker died: the caller finishes (or fails) the job.
            self.local = true;
        }
        if self.local {
            return self
                .queue
                .pop_front()
                .map(|(task, key)| self.register(task, key, config, None))
                .into_iter()
                .collect();
        }
        let live = self.slots.len().max(1);
        let mut out = Vec::new();
        for index in 0..self.slots.len() {
            while self.slots[index].alive
                && self.slots[index].ready
                && self.slots[index].in_flight < IN_FLIGHT_PER_WORKER
            {
                let position = self
                    .queue
                    .iter()
                    .position(|(t, _)| t.piece.affinity(live).is_none_or(|s| s == index))
                    .unwrap_or(0);
                let Some((task, key)) = self.queue.remove(position) else {
                    break;
                };
                self.slots[index].in_flight += 1;
                out.push(self.register(task, key, config.clone(), Some(index)));
            }
        }
        out
    }

    /// A dispatched message could not be posted: its task goes back to the front of the
    /// queue and its worker is taken as dead.
    pub fn send_failed(&mut self, id: u64) {
        if let Some(sent) = self.sent.remove(&id) {
            if let Some(slot) = sent.slot.and_then(|i| self.slots.get_mut(i)) {
                slot.alive = false;
                slot.in_flight = 0;
            }
            self.queue.push_front((sent.task, sent.key));
        }
        self.side_request_failed(id);
    }

    /// Records the answer to task message `response.id` from worker `slot` (or the page).
    pub fn answer(
        &mut self,
        slot: Option<usize>,
        response: TaskResponse,
        now_ms: f64,
    ) -> Vec<SchedulerEvent> {
        if let Some(s) = slot.and_then(|i| self.slots.get_mut(i)) {
            s.in_flight = s.in_flight.saturating_sub(1);
        }
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
        events.push(SchedulerEvent::Progress {
            generation: job.generation,
            fraction: if job.total_work > 0.0 {
                (job.done_work / job.total_work).min(1.0)
            } else {
                1.0
            },
        });
        self.announce_if_complete(part, &mut events);
        self.finish_if_complete(now_ms, &mut events);
        events
    }

    /// An answer that could not be read: the current job fails with `message`.
    pub fn fail(&mut self, message: String) -> Vec<SchedulerEvent> {
        match self.job.take() {
            Some(job) => {
                self.queue.clear();
                vec![SchedulerEvent::Failed {
                    generation: job.generation,
                    message,
                }]
            }
            None => Vec::new(),
        }
    }

    /// Worker `slot` died: its tasks of the current job go back to the front of the queue.
    /// Its side requests go back to the side queue or are lost (`side_requests_of_lost_worker`):
    /// returns the lost ones, which will never be answered.
    pub fn worker_lost(&mut self, slot: usize) -> Vec<u64> {
        if let Some(s) = self.slots.get_mut(slot) {
            s.alive = false;
            s.in_flight = 0;
            s.side_in_flight = 0;
        }
        let mut orphans: Vec<u64> = self
            .sent
            .iter()
            .filter(|(_, s)| s.slot == Some(slot))
            .map(|(id, _)| *id)
            .collect();
        // Newest first (each goes to the queue's front), so the queue keeps the plan's order.
        orphans.sort_unstable();
        for id in orphans.into_iter().rev() {
            if let Some(sent) = self.sent.remove(&id) {
                let current = self
                    .job
                    .as_ref()
                    .is_some_and(|j| j.pending.contains_key(&sent.key));
                if current {
                    self.queue.push_front((sent.task, sent.key));
                }
            }
        }
        self.side_requests_of_lost_worker(slot)
    }

    pub(super) fn fresh_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn register(
        &mut self,
        task: Task,
        key: TaskKey,
        config: Arc<ExperimentConfig>,
        slot: Option<usize>,
    ) -> Dispatch {
        let id = self.fresh_id();
        let request = WorkerRequest::Task(TaskRequest {
            id,
            config: (*config).clone(),
            task,
            fused: true,
        });
        self.sent.insert(id, Sent { key, slot, task });
        Dispatch { slot, id, request }
    }

    fn announce_if_complete(&self, part: Part, events: &mut Vec<SchedulerEvent>) {
        let Some(job) = self.job.as_ref() else {
            return;
        };
        if job.pending.values().any(|(p, _)| *p == part) {
            return;
        }
        let (generation, config) = (job.generation, &job.config);
        if part == Part::Curves && config.preview_of.is_some() {
            // A preview has no curve to announce.
            return;
        }
        let event = match part {
            Part::Scatter => self
                .store
                .scatter(config)
                .map(|scatter| SchedulerEvent::Scatter {
                    generation,
                    scatter: Arc::new(scatter),
                }),
            Part::Boxplots => {
                self.store
                    .summaries(config)
                    .map(|summaries| SchedulerEvent::Summaries {
                        generation,
                        summaries: Arc::new(summaries),
                    })
            }
            Part::Curves => self
                .store
                .curves(config)
                .map(|curves| SchedulerEvent::Curves {
                    generation,
                    curves: Arc::new(curves),
                }),
        };
        events.push(event.unwrap_or_else(|| SchedulerEvent::Failed {
            generation,
            message: "a finished part could not be assembled".into(),
        }));
    }

    fn finish_if_complete(&mut self, now_ms: f64, events: &mut Vec<SchedulerEvent>) {
        let finished = self
            .job
            .as_ref()
            .filter(|j| j.pending.is_empty())
            .map(|j| (j.generation, now_ms - j.started_ms, j.total_work));
        if let Some((generation, elapsed_ms, work)) = finished {
            if work > THROUGHPUT_MIN_WORK && elapsed_ms > 0.0 {
                self.throughput = Some(work / elapsed_ms);
            }
            self.job = None;
            events.push(SchedulerEvent::Finished {
                generation,
                elapsed_ms,
            });
        }
    }
}
