//! Finished task outputs under their keys, and the page's results assembled from them.

use std::collections::{HashMap, HashSet};

use super::plan::{TaskKey, chunk_pairs, chunks, plan, task_key};
use super::task::{ErrorSums, Piece, Task, TaskOutput};
use crate::lab::config::{CURVE_MS, ExperimentConfig};
use crate::lab::kernel::results::{
    EstimatorSummary, ExperimentResult, MseCurve, PairEstimates, ScatterSeries,
};
use crate::numerics::estimators::EstimatorId;

/// Finished task outputs under their [`task_key`]s, and the page's results assembled from them.
#[derive(Debug, Default)]
pub struct TaskStore {
    outputs: HashMap<TaskKey, TaskOutput>,
}

impl TaskStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// The tasks of `config` with no stored output, in [`plan`] order.
    pub fn missing(&self, config: &ExperimentConfig) -> Vec<Task> {
        plan(config)
            .into_iter()
            .filter(|t| !self.outputs.contains_key(&task_key(config, t)))
            .collect()
    }

    /// Stores a finished task.
    pub fn insert(&mut self, config: &ExperimentConfig, task: &Task, output: TaskOutput) {
        self.insert_keyed(task_key(config, task), output);
    }

    /// Stores a finished task under its [`task_key`] (computed when it was sent).
    pub fn insert_keyed(&mut self, key: TaskKey, output: TaskOutput) {
        self.outputs.insert(key, output);
    }

    /// Drops every output `config` does not use, once the store holds more than a few
    /// configurations' worth (dragging a slider would otherwise grow it without bound).
    pub fn trim(&mut self, config: &ExperimentConfig) {
        let tasks = plan(config);
        if self.outputs.len() > 4 * tasks.len() + 256 {
            let keep: HashSet<TaskKey> = tasks.iter().map(|t| task_key(config, t)).collect();
            self.outputs.retain(|k, _| keep.contains(k));
        }
    }

    fn get(
        &self,
        config: &ExperimentConfig,
        estimator: EstimatorId,
        piece: Piece,
    ) -> Option<&TaskOutput> {
        self.outputs
            .get(&task_key(config, &Task { estimator, piece }))
    }

    /// Figure 1's series, once every scatter task of `config` is stored.
    pub fn scatter(&self, config: &ExperimentConfig) -> Option<Vec<ScatterSeries>> {
        let size = chunk_pairs(config);
        config
            .estimators
            .iter()
            .map(|&estimator| {
                let Some(TaskOutput::ScatterSetup {
                    fit,
                    theorem_3_3,
                    sweep,
                }) = self.get(config, estimator, Piece::ScatterSetup)
                else {
                    return None;
                };
                let mut pair_estimates = PairEstimates {
                    estimator,
                    log_true: Vec::with_capacity(config.n),
                    estimates: Vec::with_capacity(config.n),
                    fit: fit.clone(),
                    log_theoretical_mse: Vec::with_capacity(config.n),
                    z_squared: Vec::with_capacity(config.n),
                    data_radius: 0.0,
                    theorem_3_3: theorem_3_3.clone(),
                    sweep: sweep.clone(),
                };
                for (start, end) in chunks(config.n, size) {
                    let Some(TaskOutput::ScatterPairs {
                        log_true,
                        estimates,
                        log_theoretical_mse,
                        z_squared,
                        data_radius,
                    }) = self.get(config, estimator, Piece::ScatterPairs { start, end })
                    else {
                        return None;
                    };
                    pair_estimates.log_true.extend_from_slice(log_true);
                    pair_estimates.estimates.extend_from_slice(estimates);
                    pair_estimates.z_squared.extend_from_slice(z_squared);
                    pair_estimates
                        .log_theoretical_mse
                        .extend_from_slice(log_theoretical_mse);
                    pair_estimates.data_radius = pair_estimates.data_radius.max(*data_radius);
                }
                Some(ScatterSeries {
                    metrics: pair_estimates.metrics(),
                    estimates: pair_estimates,
                })
            })
            .collect()
    }

    /// Figures 2 and 3's summaries, once every boxplot task of `config` is stored.
    pub fn summaries(&self, config: &ExperimentConfig) -> Option<Vec<EstimatorSummary>> {
        let size = chunk_pairs(config);
        config
            .estimators
            .iter()
            .map(|&estimator| {
                let mut per_dataset = Vec::with_capacity(config.datasets);
                let mut clamped = 0;
                for index in 1..=config.datasets {
                    let mut sums: Option<ErrorSums> = None;
                    for (start, end) in chunks(config.pairs, size) {
                        let Some(TaskOutput::BoxplotPairs(part)) =
                            self.get(config, estimator, Piece::BoxplotPairs { index, start, end })
                        else {
                            return None;
                        };
                        sums = Some(sums.map_or(*part, |s| s.merge(*part)));
                    }
                    let sums = sums?;
                    clamped += sums.clamped;
                    per_dataset.push(sums.metrics());
                }
                Some(EstimatorSummary::new(estimator, per_dataset, clamped))
            })
            .collect()
    }

    /// The MSE-against-m curves, once every curve task of `config` is stored.
    pub fn curves(&self, config: &ExperimentConfig) -> Option<Vec<MseCurve>> {
        config
            .estimators
            .iter()
            .map(
                |&estimator| match self.get(config, estimator, Piece::Curve) {
                    Some(TaskOutput::Curve(points)) if points.len() == CURVE_MS.len() => {
                        Some(MseCurve {
                            estimator,
                            points: points.clone(),
                        })
                    }
                    _ => None,
                },
            )
            .collect()
    }

    /// The whole experiment result, once the scatter and boxplot tasks are stored.
    pub fn result(&self, config: &ExperimentConfig) -> Option<ExperimentResult> {
        Some(ExperimentResult {
            config: config.clone(),
            scatter: self.scatter(config)?,
            summaries: self.summaries(config)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::config::Param;
    use crate::lab::test_support::{config_with, id};

    use crate::lab::kernel::tasks::{Piece, Workspace};

    #[test]
    fn store_reuses_what_a_change_does_not_touch() {
        let base = config_with(&[("n", "40"), ("datasets", "3"), ("pairs", "30"), ("m", "32")]);
        let mut store = TaskStore::new();
        let mut workspace = Workspace::new();
        for task in plan(&base) {
            let output = workspace.run(&base, &task).unwrap();
            store.insert(&base, &task, output);
        }
        assert!(store.missing(&base).is_empty());
        assert!(store.result(&base).is_some() && store.curves(&base).is_some());

        // m: everything but the setup and the curves (they do not depend on m).
        let m = config_with(&[("n", "40"), ("datasets", "3"), ("pairs", "30"), ("m", "48")]);
        let missing = store.missing(&m);
        assert!(!missing.is_empty());
        assert!(
            missing
                .iter()
                .all(|t| !matches!(t.piece, Piece::ScatterSetup | Piece::Curve))
        );
        // Dropping an estimator: nothing to do. (The default has all three.)
        let mut fewer = base.clone();
        fewer.set(Param::Estimators, "prf,var").unwrap();
        assert!(store.missing(&fewer).is_empty());
        assert_eq!(store.result(&fewer).unwrap().scatter.len(), 2);
        // The seed changes every input.
        let mut seed = base.clone();
        seed.set(Param::Seed, "9").unwrap();
        assert_eq!(store.missing(&seed).len(), plan(&seed).len());
        // The store's result is run_experiment's.
        assert_eq!(
            store.result(&base),
            Some(crate::lab::kernel::experiment::run_experiment(&base).unwrap())
        );
    }

    #[test]
    fn changing_one_heuristic_recomputes_only_that_estimator() {
        let mut before = config_with(&[("n", "20"), ("datasets", "2"), ("pairs", "20")]);
        before.set(Param::Estimators, "prf,mean").unwrap();
        let mut store = TaskStore::new();
        let mut workspace = Workspace::new();
        for task in plan(&before) {
            let output = workspace.run(&before, &task).unwrap();
            store.insert(&before, &task, output);
        }
        let mut after = before.clone();
        after.set(Param::Estimators, "prf,var").unwrap();
        let missing = store.missing(&after);
        assert!(!missing.is_empty());
        assert!(missing.iter().all(|t| t.estimator == id("hcexp-var")));
    }
}
