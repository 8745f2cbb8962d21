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

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use super::config::ExperimentConfig;
use super::results::{EstimatorSummary, MseCurve, ScatterSeries};
use super::tasks::{
    Part, Task, TaskKey, TaskRequest, TaskResponse, TaskStore, WorkerRequest, task_key, task_work,
};

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
}

/// A message to deliver: to worker `slot`, or for the caller to run itself (`slot: None`).
#[derive(Clone, Debug, PartialEq)]
pub struct Dispatch {
    pub slot: Option<usize>,
    pub id: u64,
    pub request: WorkerRequest,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct SlotState {
    ready: bool,
    alive: bool,
    in_flight: usize,
}

#[derive(Clone, Debug)]
struct Sent {
    key: TaskKey,
    slot: Option<usize>,
    task: Task,
}

#[derive(Clone, Debug)]
struct Job {
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
    slots: Vec<SlotState>,
    /// No worker (none could start, or all died): tasks go to the caller (`slot: None`).
    local: bool,
    queue: VecDeque<(Task, TaskKey)>,
    sent: HashMap<u64, Sent>,
    next_id: u64,
    job: Option<Job>,
    store: TaskStore,
    throughput: Option<f64>,
    /// Side requests in flight (a probe, its pair, the data panel, an attention part: what is
    /// outside the job) and the worker each went to.
    side_requests: HashMap<u64, Option<usize>>,
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
        let mut lost: Vec<u64> = std::mem::take(&mut self.side_requests)
            .into_keys()
            .collect();
        lost.sort_unstable();
        *self = Self {
            store: std::mem::take(&mut self.store),
            throughput: self.throughput,
            next_id: self.next_id,
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
        if let Some(Some(slot)) = self.side_requests.remove(&id)
            && let Some(s) = self.slots.get_mut(slot)
        {
            s.alive = false;
        }
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
    /// Returns the side requests it had, which will never be answered.
    pub fn worker_lost(&mut self, slot: usize) -> Vec<u64> {
        if let Some(s) = self.slots.get_mut(slot) {
            s.alive = false;
            s.in_flight = 0;
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
        let lost: Vec<u64> = self
            .side_requests
            .iter()
            .filter(|(_, s)| **s == Some(slot))
            .map(|(id, _)| *id)
            .collect();
        for id in &lost {
            self.side_requests.remove(id);
        }
        lost
    }

    /// A side request to send (anything outside the job): its message id and the least busy
    /// ready worker (`None`: no worker is ready, or none is alive).
    pub fn start_side_request(&mut self) -> (u64, Option<usize>) {
        let id = self.fresh_id();
        let slot = if self.local {
            None
        } else {
            (0..self.slots.len())
                .filter(|&i| self.slots[i].alive && self.slots[i].ready)
                .min_by_key(|&i| self.slots[i].in_flight)
        };
        self.side_requests.insert(id, slot);
        (id, slot)
    }

    /// Side request `id` was answered; whether it was still awaited.
    pub fn side_request_answered(&mut self, id: u64) -> bool {
        self.side_requests.remove(&id).is_some()
    }

    fn fresh_id(&mut self) -> u64 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::test_support::small;

    use crate::lab::tasks::{Workspace, decode, encode, handle_request};

    /// Runs every dispatched message in `workspace` (as the workers would) and feeds the
    /// answers back, until nothing is left; returns every event.
    fn drain(scheduler: &mut Scheduler, workspace: &mut Workspace) -> Vec<SchedulerEvent> {
        let mut events = Vec::new();
        loop {
            let messages = scheduler.dispatch();
            if messages.is_empty() {
                return events;
            }
            for message in messages {
                events.extend(answer(scheduler, workspace, &message));
            }
        }
    }

    fn answer(
        scheduler: &mut Scheduler,
        workspace: &mut Workspace,
        message: &Dispatch,
    ) -> Vec<SchedulerEvent> {
        let bytes = handle_request(workspace, &encode(&message.request).unwrap());
        match decode(&bytes).unwrap() {
            crate::lab::tasks::WorkerResponse::Task(response) => {
                scheduler.answer(message.slot, response, 10.0)
            }
            other => panic!("{other:?}"),
        }
    }

    fn finished(events: &[SchedulerEvent], generation: u64) -> bool {
        events.iter().any(
            |e| matches!(e, SchedulerEvent::Finished { generation: g, .. } if *g == generation),
        )
    }

    fn ready(workers: usize) -> Scheduler {
        let mut scheduler = Scheduler::new(workers);
        for slot in 0..workers {
            scheduler.worker_ready(slot);
        }
        scheduler
    }

    #[test]
    fn a_job_runs_to_the_end_with_every_part_announced_once_and_monotone_progress() {
        let mut scheduler = ready(2);
        let mut workspace = Workspace::new();
        let mut events = scheduler.submit(1, &small("32"), 0.0);
        events.extend(drain(&mut scheduler, &mut workspace));
        assert!(finished(&events, 1));
        let count = |f: fn(&SchedulerEvent) -> bool| events.iter().filter(|e| f(e)).count();
        assert_eq!(count(|e| matches!(e, SchedulerEvent::Scatter { .. })), 1);
        assert_eq!(count(|e| matches!(e, SchedulerEvent::Summaries { .. })), 1);
        assert_eq!(count(|e| matches!(e, SchedulerEvent::Curves { .. })), 1);
        let fractions: Vec<f64> = events
            .iter()
            .filter_map(|e| match e {
                SchedulerEvent::Progress { fraction, .. } => Some(*fraction),
                _ => None,
            })
            .collect();
        assert!(fractions.windows(2).all(|w| w[0] <= w[1]), "{fractions:?}");
        assert!((fractions.last().copied().unwrap_or(0.0) - 1.0).abs() < 1e-12);
        // The announced scatter is the one run_experiment computes.
        let expected = crate::lab::experiment::run_experiment(&small("32")).unwrap();
        let scatter = events.iter().find_map(|e| match e {
            SchedulerEvent::Scatter { scatter, .. } => Some(scatter.clone()),
            _ => None,
        });
        assert_eq!(scatter.as_deref(), Some(&expected.scatter));
    }

    #[test]
    fn in_flight_is_limited_per_worker_and_only_ready_workers_get_tasks() {
        let mut scheduler = Scheduler::new(2);
        scheduler.submit(1, &small("32"), 0.0);
        assert!(scheduler.dispatch().is_empty(), "no worker is ready yet");
        scheduler.worker_ready(1);
        let sent = scheduler.dispatch();
        assert_eq!(sent.len(), IN_FLIGHT_PER_WORKER);
        assert!(sent.iter().all(|d| d.slot == Some(1)));
        assert!(scheduler.dispatch().is_empty(), "worker 1 is full");
    }

    #[test]
    fn a_new_job_supersedes_the_queue_and_awaits_tasks_already_sent() {
        let mut scheduler = ready(1);
        let mut workspace = Workspace::new();
        scheduler.submit(1, &small("32"), 0.0);
        let in_flight = scheduler.dispatch();
        assert!(scheduler.has_queued());
        // The user moves on before any answer: the old queue is gone.
        let events = scheduler.submit(2, &small("48"), 1.0);
        assert!(events.is_empty());
        // Answers for the old job still land (the store keeps them) but announce nothing.
        for message in &in_flight {
            let events = answer(&mut scheduler, &mut workspace, message);
            assert!(
                events.iter().all(|e| match e {
                    SchedulerEvent::Progress { generation, .. } => *generation == 2,
                    _ => true,
                }),
                "{events:?}"
            );
        }
        let events = drain(&mut scheduler, &mut workspace);
        assert!(finished(&events, 2));
        assert!(!finished(&events, 1));
    }

    #[test]
    fn going_back_reuses_every_stored_output() {
        let mut scheduler = ready(2);
        let mut workspace = Workspace::new();
        scheduler.submit(1, &small("32"), 0.0);
        drain(&mut scheduler, &mut workspace);
        scheduler.submit(2, &small("48"), 0.0);
        drain(&mut scheduler, &mut workspace);
        // Back to m = 32: everything is stored, the job finishes without a message.
        let events = scheduler.submit(3, &small("32"), 5.0);
        assert!(finished(&events, 3), "{events:?}");
        assert!(scheduler.dispatch().is_empty());
    }

    #[test]
    fn a_lost_worker_hands_its_tasks_to_the_others_and_the_last_one_to_the_caller() {
        let mut scheduler = ready(2);
        let mut workspace = Workspace::new();
        scheduler.submit(1, &small("32"), 0.0);
        let first = scheduler.dispatch();
        assert!(first.iter().any(|d| d.slot == Some(0)));
        scheduler.worker_lost(0);
        // Worker 1 finishes everything, including worker 0's tasks.
        let mut events = Vec::new();
        for message in first.iter().filter(|d| d.slot == Some(1)) {
            events.extend(answer(&mut scheduler, &mut workspace, message));
        }
        events.extend(drain(&mut scheduler, &mut workspace));
        assert!(finished(&events, 1));
        // Both lost: the next job goes to the caller, one task at a time.
        scheduler.worker_lost(1);
        scheduler.submit(2, &small("64"), 0.0);
        let next = scheduler.dispatch();
        assert_eq!(next.len(), 1);
        assert_eq!(next[0].slot, None);
        assert_eq!(scheduler.workers(), 0);
        let mut events = answer(&mut scheduler, &mut workspace, &next[0]);
        events.extend(drain(&mut scheduler, &mut workspace));
        assert!(finished(&events, 2));
    }

    #[test]
    fn cancel_forgets_the_job_and_the_messages_but_keeps_the_store() {
        let mut scheduler = ready(2);
        let mut workspace = Workspace::new();
        scheduler.submit(1, &small("32"), 0.0);
        drain(&mut scheduler, &mut workspace);
        scheduler.submit(2, &small("48"), 0.0);
        let sent = scheduler.dispatch();
        let (probe, _) = scheduler.start_side_request();
        let lost = scheduler.cancel(2);
        assert_eq!(lost, vec![probe]);
        assert!(!scheduler.has_queued());
        assert!(scheduler.dispatch().is_empty(), "no job after cancel");
        // A late answer from a terminated worker changes nothing.
        assert!(answer(&mut scheduler, &mut workspace, &sent[0]).is_empty());
        // The first job's outputs are still stored.
        assert!(finished(&scheduler.submit(3, &small("32"), 0.0), 3));
    }

    #[test]
    fn pausing_keeps_the_workers_and_stores_what_was_in_flight() {
        let mut scheduler = ready(1);
        let mut workspace = Workspace::new();
        scheduler.submit(1, &small("32"), 0.0);
        let sent = scheduler.dispatch();
        scheduler.pause();
        assert!(scheduler.dispatch().is_empty());
        for message in &sent {
            assert!(answer(&mut scheduler, &mut workspace, message).is_empty());
        }
        assert_eq!(scheduler.workers(), 1);
        // What was in flight is stored: resuming the same configuration sends fewer tasks.
        scheduler.submit(2, &small("32"), 0.0);
        let mut total = 0;
        loop {
            let next = scheduler.dispatch();
            if next.is_empty() {
                break;
            }
            total += next.len();
            for message in &next {
                answer(&mut scheduler, &mut workspace, message);
            }
        }
        let full = crate::lab::tasks::plan(&small("32")).len();
        assert_eq!(total + sent.len(), full);
    }

    #[test]
    fn a_failed_task_fails_its_job_once() {
        let mut scheduler = ready(1);
        scheduler.submit(7, &small("32"), 0.0);
        let sent = scheduler.dispatch();
        let events = scheduler.answer(
            sent[0].slot,
            TaskResponse {
                id: sent[0].id,
                output: Err("boom".into()),
            },
            1.0,
        );
        assert_eq!(
            events,
            vec![SchedulerEvent::Failed {
                generation: 7,
                message: "boom".into()
            }]
        );
        assert!(!scheduler.has_queued());
    }
}
