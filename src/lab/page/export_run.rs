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
}

impl ExportRun {
    /// The tasks of the export of `config`: every task of the page's computation but the
    /// MSE-against-m curve, which the files do not hold. Refuses an invalid configuration.
    pub fn new(config: &ExperimentConfig) -> Result<Self, String> {
        config.validate_kernel().map_err(|e| e.to_string())?;
        let tasks: Vec<Task> = plan(config)
            .into_iter()
            .filter(|t| !matches!(t.piece, Piece::Curve { .. }))
            .collect();
        Ok(Self {
            config: config.clone(),
            answered: vec![false; tasks.len()],
            tasks,
            store: TaskStore::new(),
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
    use crate::lab::test_support::config_with;

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
}
