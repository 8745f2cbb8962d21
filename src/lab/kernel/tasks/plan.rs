//! Which tasks a configuration needs, how much work each is, and the key naming exactly the
//! inputs a task's output depends on.

use super::task::{Piece, Task};
use crate::lab::config::{
    CURVE_LARGEST_M, CURVE_PAIRS, CURVE_REPEATS, ExperimentConfig, OmegaMode,
};
use crate::numerics::dataset::{self, Dataset, DatasetError, DatasetParams};
use crate::numerics::estimators::EstimatorId;
use crate::numerics::kernel::ROWS;
use crate::numerics::projections::couplings::Coupling;
use crate::numerics::rng::{StreamPurpose, stream_rng};

/// Multiply-adds a task aims at: small enough that a superseded task finishes quickly (a few
/// milliseconds), large enough that messages cost little next to it.
pub const TASK_WORK: f64 = 16e6;

/// Pairs per chunk so that one task is about [`TASK_WORK`] multiply-adds, a multiple of the
/// kernel's block.
pub(super) fn chunk_pairs(config: &ExperimentConfig) -> usize {
    let per_pair = (config.m * config.d).max(1) as f64;
    let pairs = (TASK_WORK / per_pair).ceil() as usize;
    pairs.div_ceil(ROWS).max(1) * ROWS
}

pub(super) fn chunks(n: usize, size: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n.div_ceil(size)).map(move |c| (c * size, ((c + 1) * size).min(n)))
}

/// Every task of the page's computation for `config`: the scatter (Figure 1) first, then the
/// MSE-against-m curve, then the boxplot datasets. The curve goes to the last worker
/// ([`Piece::affinity`]) with its own ω (four streams of 8,192 rows): placed before the
/// boxplots, it is done before any worker runs out of its own datasets, so the tasks a free
/// worker takes over at the end are boxplot datasets (a few hundred kilobytes of data and ω
/// to redraw), never the curve (6 ms of normal draws a worker; it was last, and taken over).
pub fn plan(config: &ExperimentConfig) -> Vec<Task> {
    let size = chunk_pairs(config);
    let mut pieces = vec![Piece::ScatterSetup];
    pieces.extend(chunks(config.n, size).map(|(start, end)| Piece::ScatterPairs { start, end }));
    // A preview leaves the curve out (the page keeps the last one drawn).
    if config.preview_of.is_none() {
        pieces.push(Piece::Curve);
    }
    for index in 1..=config.datasets {
        pieces.extend(
            chunks(config.pairs, size).map(|(start, end)| Piece::BoxplotPairs {
                index,
                start,
                end,
            }),
        );
    }
    let mut tasks = Vec::with_capacity(pieces.len() * config.estimators.len());
    for piece in pieces {
        for &estimator in &config.estimators {
            tasks.push(Task { estimator, piece });
        }
    }
    tasks
}

/// Multiply-adds of a task (for progress bars and the budget).
pub fn task_work(config: &ExperimentConfig, task: &Task) -> f64 {
    let per_pair = (config.m * config.d) as f64 * task.estimator.info().cost_factor();
    match task.piece {
        Piece::ScatterSetup => (config.n * config.d) as f64,
        Piece::ScatterPairs { start, end } | Piece::BoxplotPairs { start, end, .. } => {
            (end - start) as f64 * per_pair
        }
        Piece::Curve => {
            (CURVE_PAIRS.min(config.n) * CURVE_REPEATS * CURVE_LARGEST_M * config.d) as f64
                * task.estimator.info().cost_factor()
        }
    }
}

/// Every input dataset `index` depends on: its number, size and generator parameters (the
/// reals as their bits, so that the key is exact and hashable). The workers' dataset cache and
/// every [`TaskKey`] use it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DatasetKey {
    index: usize,
    d: usize,
    n: usize,
    seed: u64,
    generator: [u64; 6],
}

impl DatasetKey {
    /// The key of dataset `index` (0: the scatter dataset) of `config`.
    pub fn new(config: &ExperimentConfig, index: usize) -> Self {
        let c = config;
        Self {
            index,
            d: c.d,
            n: if index == 0 { c.n } else { c.pairs },
            seed: c.seed,
            generator: {
                let (x_scale, y_scale) = c.mean_scales();
                [x_scale, y_scale, c.x_shape, c.y_shape, c.x_norm, c.y_norm].map(f64::to_bits)
            },
        }
    }
}

/// How the ω of a task are drawn, as far as its output depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Sampling {
    /// No ω (the setup: A and Theorem 3.3's inputs).
    None,
    /// The configuration's m and ω mode.
    Pairs {
        m: usize,
        omega: OmegaMode,
        coupling: Coupling,
    },
    /// The curve draws its own ω for its own m.
    Curve { coupling: Coupling },
}

/// Every input a task's output depends on, and nothing else: equal keys mean equal outputs,
/// so a stored output is reused under any configuration that gives the same key (changing m
/// leaves the setup and the curves alone; changing θ recomputes only the estimators that read
/// it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TaskKey {
    piece: Piece,
    dataset: DatasetKey,
    estimator: EstimatorId,
    /// The page parameters the estimator's fit reads ([`crate::numerics::estimators::Estimator::parameter_key`]).
    parameters: String,
    sampling: Sampling,
}

/// The [`TaskKey`] of `task` under `config`.
pub fn task_key(config: &ExperimentConfig, task: &Task) -> TaskKey {
    let c = config;
    let sampling = match task.piece {
        Piece::ScatterSetup => Sampling::None,
        Piece::ScatterPairs { .. } | Piece::BoxplotPairs { .. } => Sampling::Pairs {
            m: c.m,
            omega: c.omega,
            coupling: c.coupling,
        },
        Piece::Curve => Sampling::Curve {
            coupling: c.coupling,
        },
    };
    TaskKey {
        piece: task.piece,
        dataset: DatasetKey::new(config, task.piece.dataset()),
        estimator: task.estimator,
        parameters: task
            .estimator
            .info()
            .parameter_key(&config.estimator_params()),
        sampling,
    }
}

/// The generator parameters of dataset `index` (0: scatter dataset, else a boxplot dataset).
fn dataset_params(config: &ExperimentConfig, index: usize) -> Result<DatasetParams, DatasetError> {
    let n = if index == 0 { config.n } else { config.pairs };
    config.dataset_params(config.d, n)
}

/// Dataset `index` of the experiment, regenerated from the seed.
pub fn generate_dataset(config: &ExperimentConfig, index: usize) -> Result<Dataset, DatasetError> {
    let params = dataset_params(config, index)?;
    let mut rng = stream_rng(config.seed, StreamPurpose::Dataset, index as u64, 0);
    dataset::generate(&params, &mut rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::test_support::{config_with, id};

    use crate::numerics::kernel::ROWS;

    #[test]
    fn plan_covers_every_pair_once_in_chunks_of_bounded_work() {
        let config = config_with(&[("n", "1000"), ("pairs", "250")]);
        let tasks = plan(&config);
        let scatter: usize = tasks
            .iter()
            .filter(|t| t.estimator == id("prf-hyp"))
            .map(|t| match t.piece {
                Piece::ScatterPairs { start, end } => end - start,
                _ => 0,
            })
            .sum();
        assert_eq!(scatter, 1000);
        for task in &tasks {
            if task.piece != Piece::Curve {
                assert!(
                    task_work(&config, task) <= TASK_WORK + (ROWS * config.m * config.d) as f64
                );
            }
        }
    }
}
