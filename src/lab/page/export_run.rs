//! The page's "Download CSV" and "Download JSON": the experiment computed once more, task by
//! task, by the page's worker pool with unfused arithmetic ([`ExportTaskAsk`]), so that the
//! file is byte for byte what `kernel-lab experiment` prints even where the workers fuse
//! multiply-adds for the interactive view (a relaxed fused multiply-add may or may not round
//! twice, depending on the processor; the plain `simd128` path and the native build round the
//! same way, see `numerics::kernel` and `numerics::portable`).
//!
//! [`ExportRun`] is the bookkeeping, without any web dependency: the requests, the answers
//! stored by key, the result assembled in the plan's order whatever the order of the
//! answers. The page sends the requests through its pool (`ui::export`); the browser tests
//! answer them with [`crate::lab::pool::handle_request`] on the page.

use crate::lab::config::ExperimentConfig;
use crate::lab::kernel::results::ExperimentResult;
use crate::lab::kernel::tasks::{Piece, Task, TaskOutput, TaskStore};
use crate::lab::kernel::tasks::{plan, task_key};
use crate::lab::pool::ask::{Ask, ExportTaskAsk};
use crate::lab::pool::protocol::{decode, encode};

/// One export's tasks and the answers in so far.
#[derive(Debug)]
pub struct ExportRun {
    config: ExperimentConfig,
    tasks: Vec<Task>,
    store: TaskStore,
    answered: Vec<bool>,
    /// Whether the export's outcome (its result or its first error) has been told: every
    /// answer after it is ignored, so a late success cannot write progress over a failure.
    over: bool,
}

/// What one answer makes of an export ([`ExportRun::take_answer`]).
#[derive(Clone, Debug, PartialEq)]
pub enum ExportStep {
    /// Stored; `done` of `total` tasks answered, the export goes on.
    Progress { done: usize, total: usize },
    /// The export's outcome, told once: the result (boxed: the other steps are a few words),
    /// or the first error.
    Finished(Result<Box<ExperimentResult>, String>),
    /// The outcome was told already: nothing to show.
    Over,
}

impl ExportRun {
    /// The tasks of the export of `config`: every task of the page's computation but the
    /// MSE-against-m curve, which the files do not hold. Refuses an invalid configuration.
    pub fn new(config: &ExperimentConfig) -> Result<Self, String> {
        config.validate_kernel().map_err(|e| e.to_string())?;
        let tasks: Vec<Task> = plan(config)
            .into_iter()
            .filter(|t| !matches!(t.piece, Piece::Curve))
            .collect();
        Ok(Self {
            config: config.clone(),
            answered: vec![false; tasks.len()],
            tasks,
            store: TaskStore::new(),
            over: false,
        })
    }

    /// The number of tasks.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether there is no task (never, for a valid configuration).
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// How many tasks are answered.
    pub fn done(&self) -> usize {
        self.answered.iter().filter(|a| **a).count()
    }

    /// Task `index`.
    pub fn task(&self, index: usize) -> Option<Task> {
        self.tasks.get(index).copied()
    }

    /// Task `index` as a request to the pool.
    pub fn ask(&self, index: usize) -> Option<ExportTaskAsk> {
        Some(ExportTaskAsk {
            config: self.config.clone(),
            task: self.task(index)?,
        })
    }

    /// The encoded request of task `index` (its id is the index), for a worker.
    pub fn request(&self, index: usize) -> Result<Vec<u8>, String> {
        let ask = self.ask(index).ok_or("no such export task")?;
        encode(&ask.message(index as u64, &crate::lab::pool::PartOf::whole(0)))
    }

    /// Which of `workers` workers a test that plays the pool gives task `index`: a boxplot
    /// dataset's tasks to one worker (it generates the dataset once), the scatter's to all.
    pub fn worker_for(&self, index: usize, workers: usize) -> usize {
        let workers = workers.max(1);
        self.tasks
            .get(index)
            .and_then(|t| t.piece.affinity(workers))
            .unwrap_or(index % workers)
    }

    /// Stores a worker's encoded answer to [`ExportRun::request`]. An error answer (or a
    /// malformed one) fails the export.
    pub fn answer(&mut self, bytes: &[u8]) -> Result<(), String> {
        let id = match decode::<crate::lab::pool::ResponseHead>(bytes)? {
            crate::lab::pool::ResponseHead::Task(response) => response.id,
            _ => return Err("an export worker answered something else than a task".into()),
        };
        let index = usize::try_from(id).map_err(|_| "an export worker answered an unknown task")?;
        self.store_output(index, ExportTaskAsk::answer(bytes))
    }

    /// Stores the outcome of task `index`. An error fails the export.
    pub fn store_output(
        &mut self,
        index: usize,
        output: Result<TaskOutput, String>,
    ) -> Result<(), String> {
        let task = self
            .tasks
            .get(index)
            .ok_or("an export worker answered an unknown task")?;
        self.store
            .insert_keyed(task_key(&self.config, task), output?);
        self.answered[index] = true;
        Ok(())
    }

    /// Takes the answer to task `index` and says what the page shows: progress, the outcome
    /// (once), or nothing once the outcome was told. A failed task ends the export: with the
    /// first error told, later answers (other workers finishing their tasks) change nothing on
    /// screen.
    pub fn take_answer(&mut self, index: usize, output: Result<TaskOutput, String>) -> ExportStep {
        if self.over {
            return ExportStep::Over;
        }
        let outcome = match self.store_output(index, output) {
            Err(message) => Err(message),
            Ok(()) => match self.result() {
                Some(result) => Ok(Box::new(result)),
                None => {
                    return ExportStep::Progress {
                        done: self.done(),
                        total: self.len(),
                    };
                }
            },
        };
        self.over = true;
        ExportStep::Finished(outcome)
    }

    /// The experiment's result, once every task is answered.
    pub fn result(&self) -> Option<ExperimentResult> {
        if self.answered.iter().all(|a| *a) {
            self.store.result(&self.config)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::kernel::experiment::run_experiment;
    use crate::lab::kernel::tasks::Workspace;
    use crate::lab::pool::handle_request;
    use crate::lab::pool::{Channel, Reach, Scheduler, SideSend};
    use crate::lab::test_support::config_with;
    use std::collections::{HashMap, VecDeque};

    #[test]
    fn answers_in_any_order_give_run_experiment_s_result() {
        let config = config_with(&[("n", "30"), ("datasets", "3"), ("pairs", "20"), ("m", "16")]);
        let mut run = ExportRun::new(&config).unwrap();
        assert!(!run.is_empty() && run.done() == 0 && run.result().is_none());
        // Two "workers", each with its own workspace, answering from the back.
        let mut workspaces = [Workspace::new(), Workspace::new()];
        for index in (0..run.len()).rev() {
            let worker = run.worker_for(index, 2);
            let answer = handle_request(&mut workspaces[worker], &run.request(index).unwrap());
            run.answer(&answer).unwrap();
        }
        assert_eq!(run.done(), run.len());
        assert_eq!(run.result(), Some(run_experiment(&config).unwrap()));
        // Hostile answers are errors, not panics.
        assert!(run.answer(&[0xff, 0x01]).is_err());
        assert!(run.request(run.len()).is_err());
        let mut bad = config.clone();
        bad.m = 0;
        assert!(ExportRun::new(&bad).is_err());
    }

    /// A task that failed ends the export once: its error is the outcome, and the other
    /// workers' answers that follow show nothing (before, each wrote "k of N tasks" over the
    /// failure, and the bar said the export was computing, for ever).
    #[test]
    fn the_outcome_is_told_once_and_nothing_follows_it() {
        let config = config_with(&[("n", "30"), ("datasets", "3"), ("pairs", "20"), ("m", "16")]);
        let mut run = ExportRun::new(&config).unwrap();
        let mut workspace = Workspace::new();
        let output = |index: usize, workspace: &mut Workspace| {
            let answer = handle_request(workspace, &run_request(&config, index));
            ExportTaskAsk::answer(&answer)
        };
        assert_eq!(
            run.take_answer(0, output(0, &mut workspace)),
            ExportStep::Progress {
                done: 1,
                total: run.len()
            }
        );
        let failed = run.take_answer(1, Err("worker 0 failed during the computation".into()));
        assert_eq!(
            failed,
            ExportStep::Finished(Err("worker 0 failed during the computation".into()))
        );
        for index in 2..run.len() {
            assert_eq!(
                run.take_answer(index, output(index, &mut workspace)),
                ExportStep::Over
            );
        }
        assert_eq!(
            run.take_answer(1, output(1, &mut workspace)),
            ExportStep::Over
        );
        // An answer to a task that does not exist is an error, told once too.
        let mut run = ExportRun::new(&config).unwrap();
        assert!(matches!(
            run.take_answer(run.len(), output(0, &mut workspace)),
            ExportStep::Finished(Err(_))
        ));
    }

    /// The request of task `index` of `config`'s export, as the pool sends it.
    fn run_request(config: &ExperimentConfig, index: usize) -> Vec<u8> {
        ExportRun::new(config).unwrap().request(index).unwrap()
    }

    /// The interleaving CI lost in Firefox ESR, replayed through the scheduler as the page's
    /// pool plays it: two workers, the data panel's request beside the export's tasks, worker 0
    /// lost after the first answers with tasks in flight, worker 1 answering on. The export
    /// ends on the command line's result, told once after progress that only grows.
    #[test]
    fn an_export_survives_a_worker_lost_midway() {
        let config = config_with(&[("n", "30"), ("datasets", "3"), ("pairs", "20"), ("m", "16")]);
        let mut run = ExportRun::new(&config).unwrap();
        let mut scheduler = Scheduler::new(2);
        scheduler.worker_ready(0);
        scheduler.worker_ready(1);
        let panel = scheduler.ticket(Channel::DataView);
        scheduler.queue_side(panel, Reach::One);
        let ticket = scheduler.ticket(Channel::Export);
        let index_of: HashMap<u64, usize> = (0..run.len())
            .map(|index| (scheduler.queue_side(ticket, Reach::One), index))
            .collect();
        let mut workspaces = [Workspace::new(), Workspace::new()];
        let mut in_flight: VecDeque<SideSend> = scheduler.dispatch_side().send.into();
        assert!(in_flight.iter().any(|s| s.slot == Some(0)));
        let (mut steps, mut answers) = (Vec::new(), 0);
        while let Some(send) = in_flight.pop_front() {
            if answers == 3 {
                // Worker 0 dies: what it holds is sent again, to worker 1.
                assert!(scheduler.worker_lost(0).is_empty());
                in_flight.retain(|s| s.slot != Some(0));
                in_flight.extend(scheduler.dispatch_side().send);
                assert!(in_flight.iter().all(|s| s.slot == Some(1)));
            }
            if send.slot == Some(0) && answers >= 3 {
                continue;
            }
            answers += 1;
            let slot = send.slot.unwrap();
            let answer = scheduler.side_request_answered(send.id).unwrap();
            assert!(answer.current);
            if let Some(&index) = index_of.get(&send.request) {
                let ask = run.ask(index).unwrap();
                let bytes = encode(&ask.message(send.id, &send.part)).unwrap();
                let response = handle_request(&mut workspaces[slot], &bytes);
                steps.push(run.take_answer(index, ExportTaskAsk::answer(&response)));
            }
            in_flight.extend(scheduler.dispatch_side().send);
        }
        let (last, progress) = steps.split_last().unwrap();
        assert_eq!(
            last,
            &ExportStep::Finished(Ok(Box::new(run_experiment(&config).unwrap())))
        );
        let done: Vec<usize> = progress
            .iter()
            .map(|step| match step {
                ExportStep::Progress { done, .. } => *done,
                other => panic!("{other:?} before the last answer"),
            })
            .collect();
        assert_eq!(done, (1..run.len()).collect::<Vec<_>>());
    }
}
