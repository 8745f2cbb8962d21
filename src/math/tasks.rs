//! The experiment cut into small independent tasks, so that Web Workers can share it, results
//! can stream back (the scatter first), a newer configuration can supersede work in flight, and
//! unchanged pieces can be reused.
//!
//! A [`Task`] is one heuristic on one piece of the experiment. Given only the configuration, a
//! [`Workspace`] recomputes it: datasets and ω come from their own seeded streams
//! ([`super::rng`]), so the messages to a worker stay small and every worker gets the same
//! numbers. The workspace caches datasets and ω, so changing only m, the estimators or the
//! heuristic does not regenerate the data. [`TaskStore`] keeps finished outputs under a key
//! naming exactly the inputs they depend on ([`task_key`]): a new configuration runs only the
//! tasks whose inputs changed (changing one heuristic recomputes only that estimator, changing
//! m leaves the MSE-against-m curves alone), and assembles the page's results.
//!
//! The page, the worker and the command line all go through [`plan`], [`Workspace::run`] and
//! [`TaskStore`]; [`super::experiment::run_experiment`] is the same loop on one thread.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::config::{ExperimentConfig, OmegaMode};
use super::dataset::{Dataset, SampleMoments};
use super::estimators::{
    Estimator, EstimatorError, EstimatorId, Fit, FitInput, ParameterSweep, Projections,
    log_softmax_kernel, reference_estimate,
};
use super::experiment::{
    CURVE_MS, CURVE_PAIRS, CURVE_REPEATS, CurvePoint, DatasetMetrics, EstimatorSummary,
    ExperimentError, ExperimentResult, MseCurve, PairEstimates, ScatterSeries, generate_dataset,
};
use super::kernel::{KernelScratch, ROWS, TransposedOmega, block_sums};
use super::logspace::{SignedLog, log_sum};
pub use super::probe::ProbeRequest;
use super::probe::{ProbeResult, probe_pair};
use super::rng::{StreamPurpose, stream_rng};
use super::stats::mean_and_standard_error;
use super::theory::Theorem33Inputs;

/// The `index` of the curve's ω streams (`Trial` purpose, `sub_index` = the repeat).
const CURVE_STREAM: u64 = u64::MAX;

/// Multiply-adds a task aims at: small enough that a superseded task finishes quickly (a few
/// milliseconds), large enough that messages cost little next to it.
pub const TASK_WORK: f64 = 16e6;

/// The three parts of the page, delivered in this order as their tasks finish.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// Figure 1 and the bounds drawn from it.
    Scatter,
    /// Figures 2 and 3 and the table.
    Boxplots,
    /// The MSE-against-m chart.
    Curves,
}

impl Piece {
    /// The part of the page this piece belongs to.
    pub fn part(self) -> Part {
        match self {
            Piece::ScatterSetup | Piece::ScatterPairs { .. } => Part::Scatter,
            Piece::BoxplotPairs { .. } => Part::Boxplots,
            Piece::Curve { .. } => Part::Curves,
        }
    }

    /// The dataset the piece reads: 0 (the scatter dataset) or a boxplot dataset's index.
    fn dataset(self) -> usize {
        match self {
            Piece::BoxplotPairs { index, .. } => index,
            _ => 0,
        }
    }

    /// Which worker (of `workers`) should run this piece because it probably holds the
    /// inputs already: boxplot dataset i goes to worker i mod the pool, the whole curve to
    /// the last worker (its ω are drawn once, for every m and heuristic). `None`: any worker
    /// (the scatter, so that every worker helps with what is shown first).
    pub fn affinity(self, workers: usize) -> Option<usize> {
        let workers = workers.max(1);
        match self {
            Piece::ScatterSetup | Piece::ScatterPairs { .. } => None,
            Piece::BoxplotPairs { index, .. } => Some(index % workers),
            Piece::Curve { .. } => Some(workers - 1),
        }
    }
}

/// Which part of the experiment a task computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Piece {
    /// The scatter dataset's A, its clamping and Theorem 3.3's sample quantities.
    ScatterSetup,
    /// Estimates for pairs `start..end` of the scatter dataset (Figure 1).
    ScatterPairs { start: usize, end: usize },
    /// Error sums for pairs `start..end` of boxplot dataset `index` (Figures 2 and 3).
    BoxplotPairs {
        index: usize,
        start: usize,
        end: usize,
    },
    /// One point of the MSE-against-m curve.
    Curve { m: usize },
}

/// One estimator on one piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Task {
    pub estimator: EstimatorId,
    pub piece: Piece,
}

/// What a task computes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskOutput {
    ScatterSetup {
        fit: Fit,
        /// Theorem 3.3's sample quantities, for the estimators it holds for.
        theorem_3_3: Option<Theorem33Inputs>,
        /// The MSE formula against the estimator's parameter (θ), where it has one.
        sweep: Option<ParameterSweep>,
    },
    ScatterPairs {
        log_true: Vec<f64>,
        estimates: Vec<SignedLog>,
        log_theoretical_mse: Vec<f64>,
        data_radius: f64,
    },
    /// Log-sum-exp partial sums, combined over a dataset's chunks by [`ErrorSums::merge`].
    BoxplotPairs(ErrorSums),
    Curve(CurvePoint),
}

/// Sums over some pairs of a dataset, in logs, from which its metrics follow.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorSums {
    /// `ln Σ_i (ŜM_i − SM_i)²`.
    pub log_sum_squared: f64,
    /// `ln max_i |ŜM_i − SM_i| / SM_i`.
    pub log_max_rel_err: f64,
    /// `ln Σ_i MSE_i` (Lemma 3.1).
    pub log_sum_theoretical: f64,
    pub pairs: usize,
    /// Clamped entries of the dataset's A (the same in every chunk).
    pub clamped: usize,
}

use super::logspace::log_add;

impl ErrorSums {
    /// The sums of two disjoint sets of pairs of one dataset.
    pub fn merge(self, other: ErrorSums) -> ErrorSums {
        ErrorSums {
            log_sum_squared: log_add(self.log_sum_squared, other.log_sum_squared),
            log_max_rel_err: self.log_max_rel_err.max(other.log_max_rel_err),
            log_sum_theoretical: log_add(self.log_sum_theoretical, other.log_sum_theoretical),
            pairs: self.pairs + other.pairs,
            clamped: self.clamped.max(other.clamped),
        }
    }

    /// The dataset's metrics (means from sums).
    pub fn metrics(&self) -> DatasetMetrics {
        let log_n = (self.pairs.max(1) as f64).ln();
        DatasetMetrics::from_logs(
            self.log_sum_squared - log_n,
            self.log_max_rel_err,
            self.log_sum_theoretical - log_n,
        )
    }
}

/// Pairs per chunk so that one task is about [`TASK_WORK`] multiply-adds, a multiple of the
/// kernel's block.
fn chunk_pairs(config: &ExperimentConfig) -> usize {
    let per_pair = (config.m * config.d).max(1) as f64;
    let pairs = (TASK_WORK / per_pair).ceil() as usize;
    pairs.div_ceil(ROWS).max(1) * ROWS
}

fn chunks(n: usize, size: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n.div_ceil(size)).map(move |c| (c * size, ((c + 1) * size).min(n)))
}

/// Every task of the page's computation for `config`, in the order results are most useful:
/// the scatter (Figure 1) first, then the boxplot datasets, then the MSE-against-m curve.
pub fn plan(config: &ExperimentConfig) -> Vec<Task> {
    let size = chunk_pairs(config);
    let mut pieces = vec![Piece::ScatterSetup];
    pieces.extend(chunks(config.n, size).map(|(start, end)| Piece::ScatterPairs { start, end }));
    for index in 1..=config.datasets {
        pieces.extend(
            chunks(config.pairs, size).map(|(start, end)| Piece::BoxplotPairs {
                index,
                start,
                end,
            }),
        );
    }
    // Largest m first: its ω are drawn once and the smaller m take their prefixes.
    pieces.extend(CURVE_MS.iter().rev().map(|&m| Piece::Curve { m }));
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
    let per_pair = (config.m * config.d) as f64 * task.estimator.get().cost_factor();
    match task.piece {
        Piece::ScatterSetup => (config.n * config.d) as f64,
        Piece::ScatterPairs { start, end } | Piece::BoxplotPairs { start, end, .. } => {
            (end - start) as f64 * per_pair
        }
        Piece::Curve { m } => {
            (CURVE_PAIRS.min(config.n) * CURVE_REPEATS * m * config.d) as f64
                * task.estimator.get().cost_factor()
        }
    }
}

/// A string naming every input `task`'s output depends on, and nothing else: equal keys mean
/// equal outputs, so a stored output can be reused under a new configuration.
pub fn task_key(config: &ExperimentConfig, task: &Task) -> String {
    let c = config;
    let data = dataset_key(config, task.piece.dataset());
    let estimator = fit_key(config, task.estimator);
    let omega = format!("m={} omega={:?} orf={}", c.m, c.omega, c.orthogonal);
    match task.piece {
        // The fit and Theorem 3.3's inputs do not depend on m or ω.
        Piece::ScatterSetup => format!("setup {data} {estimator}"),
        Piece::ScatterPairs { start, end } => {
            format!("scatter {start}..{end} {data} {estimator} {omega}")
        }
        Piece::BoxplotPairs { start, end, .. } => {
            format!("boxplot {start}..{end} {data} {estimator} {omega}")
        }
        // The curve sets its own m and draws its own ω.
        Piece::Curve { m } => format!("curve m={m} {data} {estimator} orf={}", c.orthogonal),
    }
}

/// The estimator and the page parameters its fit reads.
fn fit_key(config: &ExperimentConfig, estimator: EstimatorId) -> String {
    format!(
        "est={} {}",
        estimator.id(),
        estimator.get().parameter_key(&config.estimator_params())
    )
}

/// A string naming every input dataset `index` depends on (its number, size and generator
/// parameters): the key of the workers' dataset cache and part of every [`task_key`].
fn dataset_key(config: &ExperimentConfig, index: usize) -> String {
    let c = config;
    let n = if index == 0 { c.n } else { c.pairs };
    format!(
        "dataset {index} d={} n={n} seed={} b={} kx={} ky={} tx={} ty={}",
        c.d, c.seed, c.mean_scale, c.x_shape, c.y_shape, c.x_norm, c.y_norm
    )
}

/// A dataset with its sample moments.
#[derive(Debug)]
struct PreparedDataset {
    data: Dataset,
    moments: SampleMoments,
}

impl PreparedDataset {
    fn new(data: Dataset) -> Self {
        let moments = data.moments();
        Self { data, moments }
    }
}

/// Which stream a set of shared ω comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct OmegaKey {
    seed: u64,
    purpose: StreamPurpose,
    index: u64,
    sub_index: u64,
    m: usize,
    d: usize,
    orthogonal: bool,
}

/// Cached datasets are dropped beyond this many (about 5 MB at the paper's sizes).
const MAX_CACHED_DATASETS: usize = 64;
/// Cached ω are dropped beyond this many floats (32 MB).
const MAX_CACHED_OMEGA_FLOATS: usize = 8 << 20;

/// Runs tasks, keeping the datasets and ω it generated for the next ones.
#[derive(Debug, Default)]
pub struct Workspace {
    datasets: HashMap<String, Arc<PreparedDataset>>,
    /// Fits by dataset key and [`fit_key`] (an optimised A is worth keeping).
    fits: HashMap<String, Arc<Fit>>,
    omegas: HashMap<OmegaKey, Arc<TransposedOmega>>,
    omega_floats: usize,
    scratch: KernelScratch,
}

/// Where the ω of each pair come from.
enum OmegaSource<'a> {
    /// One set for every pair (linear attention's way, the default).
    Shared(&'a TransposedOmega),
    /// Drawn afresh for pair i from stream `(seed, PairOmega, index, i)`.
    Fresh {
        seed: u64,
        index: usize,
        m: usize,
        orthogonal: bool,
    },
}

/// Estimates for a range of pairs, in logs.
struct RangeEstimates {
    log_true: Vec<f64>,
    estimates: Vec<SignedLog>,
    log_theoretical_mse: Vec<f64>,
    data_radius: f64,
}

impl Workspace {
    pub fn new() -> Self {
        Self::default()
    }

    /// Dataset `index` of `config`, generated once.
    fn dataset(
        &mut self,
        config: &ExperimentConfig,
        index: usize,
    ) -> Result<Arc<PreparedDataset>, ExperimentError> {
        let key = dataset_key(config, index);
        if let Some(prepared) = self.datasets.get(&key) {
            return Ok(prepared.clone());
        }
        if self.datasets.len() >= MAX_CACHED_DATASETS {
            self.datasets.clear();
            self.fits.clear();
        }
        let prepared = Arc::new(PreparedDataset::new(generate_dataset(config, index)?));
        self.datasets.insert(key, prepared.clone());
        Ok(prepared)
    }

    /// The fit of `estimator` to dataset `index`, computed once.
    fn fit(
        &mut self,
        config: &ExperimentConfig,
        index: usize,
        estimator: EstimatorId,
    ) -> Result<(Arc<PreparedDataset>, Arc<Fit>), ExperimentError> {
        let prepared = self.dataset(config, index)?;
        let key = format!(
            "{} {}",
            dataset_key(config, index),
            fit_key(config, estimator)
        );
        if let Some(fit) = self.fits.get(&key) {
            return Ok((prepared, fit.clone()));
        }
        let fit = Arc::new(estimator.get().fit(
            FitInput {
                data: &prepared.data,
                moments: &prepared.moments,
            },
            &config.estimator_params(),
        )?);
        if self.fits.len() >= 4 * MAX_CACHED_DATASETS {
            self.fits.clear();
        }
        self.fits.insert(key, fit.clone());
        Ok((prepared, fit))
    }

    /// The first `m` projections of stream `(seed, purpose, index, sub_index)`, drawn once: a
    /// stream's first rows do not depend on how many follow, so a cached draw of more rows of
    /// the same stream serves as well (its leading panels), and a worker that takes a curve
    /// point for a small m draws only those rows.
    fn shared_omega(&mut self, key: OmegaKey) -> Result<Arc<TransposedOmega>, EstimatorError> {
        let OmegaKey {
            seed,
            purpose,
            index,
            sub_index,
            m,
            d,
            orthogonal,
        } = key;
        if let Some(omega) = self.omegas.get(&key) {
            return Ok(omega.clone());
        }
        let longer = self
            .omegas
            .iter()
            .find(|(k, _)| OmegaKey { m, ..**k } == key && k.m > m)
            .map(|(_, omega)| omega.prefix(m));
        if let Some(prefix) = longer {
            return Ok(Arc::new(prefix));
        }
        if self.omega_floats + m * d > MAX_CACHED_OMEGA_FLOATS {
            self.omegas.clear();
            self.omega_floats = 0;
        }
        let mut rng = stream_rng(seed, purpose, index, sub_index);
        let projections = if orthogonal {
            Projections::sample_orthogonal(m, d, &mut rng)?
        } else {
            Projections::sample(m, d, &mut rng)?
        };
        let omega = Arc::new(TransposedOmega::new(&projections));
        self.omega_floats += m * d;
        self.omegas.insert(key, omega.clone());
        Ok(omega)
    }

    /// Computes one task.
    pub fn run(
        &mut self,
        config: &ExperimentConfig,
        task: &Task,
    ) -> Result<TaskOutput, ExperimentError> {
        config.validate().map_err(ExperimentError::Config)?;
        match task.piece {
            Piece::ScatterSetup => {
                let (prepared, fit) = self.fit(config, 0, task.estimator)?;
                let theorem_3_3 = if task.estimator.get().bounds().hyperbolic_real_a {
                    Some(
                        Theorem33Inputs::new(&prepared.moments, &fit.a, prepared.data.n)
                            .map_err(ExperimentError::Theory)?,
                    )
                } else {
                    None
                };
                Ok(TaskOutput::ScatterSetup {
                    sweep: task.estimator.get().parameter_sweep(&fit, &prepared.data),
                    fit: (*fit).clone(),
                    theorem_3_3,
                })
            }
            Piece::ScatterPairs { start, end } => {
                let r = self.estimate_range(config, 0, start, end, task.estimator)?;
                Ok(TaskOutput::ScatterPairs {
                    log_true: r.log_true,
                    estimates: r.estimates,
                    log_theoretical_mse: r.log_theoretical_mse,
                    data_radius: r.data_radius,
                })
            }
            Piece::BoxplotPairs { index, start, end } => {
                if index == 0 || index > config.datasets {
                    return Err(ExperimentError::InvalidTask(format!(
                        "boxplot dataset {index} is not in 1..={}",
                        config.datasets
                    )));
                }
                let r = self.estimate_range(config, index, start, end, task.estimator)?;
                let clamped = self.fit(config, index, task.estimator)?.1.clamped;
                let log_rel: Vec<f64> = r
                    .log_true
                    .iter()
                    .zip(&r.estimates)
                    .map(|(t, e)| e.log_relative_error(*t))
                    .collect();
                Ok(TaskOutput::BoxplotPairs(ErrorSums {
                    log_sum_squared: log_sum(
                        r.log_true
                            .iter()
                            .zip(&log_rel)
                            .map(|(t, l)| 2.0 * t + 2.0 * l),
                    ),
                    log_max_rel_err: log_rel.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    log_sum_theoretical: log_sum(r.log_theoretical_mse.iter().copied()),
                    pairs: end - start,
                    clamped,
                }))
            }
            Piece::Curve { m } => self.curve_point(config, task.estimator, m),
        }
    }

    /// Estimates of one heuristic on pairs `start..end` of dataset `index`, with the
    /// configuration's ω (shared by the dataset, or fresh per pair).
    fn estimate_range(
        &mut self,
        config: &ExperimentConfig,
        index: usize,
        start: usize,
        end: usize,
        estimator: EstimatorId,
    ) -> Result<RangeEstimates, ExperimentError> {
        let (seed, m, d, orthogonal) = (config.seed, config.m, config.d, config.orthogonal);
        let (prepared, fit) = self.fit(config, index, estimator)?;
        if start >= end || end > prepared.data.n {
            return Err(ExperimentError::InvalidTask(format!(
                "pairs {start}..{end} are not in a dataset of {} pairs",
                prepared.data.n
            )));
        }
        let estimator = Fitted {
            estimator: estimator.get(),
            fit: &fit,
        };
        match config.omega {
            OmegaMode::Shared => {
                let omega = self.shared_omega(OmegaKey {
                    seed,
                    purpose: StreamPurpose::SharedOmega,
                    index: index as u64,
                    sub_index: 0,
                    m,
                    d,
                    orthogonal,
                })?;
                estimate_pairs(
                    &prepared.data,
                    start..end,
                    estimator,
                    OmegaSource::Shared(&omega),
                    &mut self.scratch,
                )
            }
            OmegaMode::Fresh => estimate_pairs(
                &prepared.data,
                start..end,
                estimator,
                OmegaSource::Fresh {
                    seed,
                    index,
                    m,
                    orthogonal,
                },
                &mut self.scratch,
            ),
        }
    }

    /// Curve point for one heuristic and one m: the first pairs of the scatter dataset with A
    /// from the whole dataset, `CURVE_REPEATS` independent ω each shared by the pairs.
    fn curve_point(
        &mut self,
        config: &ExperimentConfig,
        estimator: EstimatorId,
        m: usize,
    ) -> Result<TaskOutput, ExperimentError> {
        let (seed, d) = (config.seed, config.d);
        let (prepared, fit) = self.fit(config, 0, estimator)?;
        let estimator = Fitted {
            estimator: estimator.get(),
            fit: &fit,
        };
        let pairs = CURVE_PAIRS.clamp(1, prepared.data.n);
        let mut log_mses = Vec::with_capacity(CURVE_REPEATS);
        let mut log_theory = Vec::new();
        for repeat in 0..CURVE_REPEATS {
            // Every m of a repeat takes the leading rows of one stream (the curve's points
            // share their draws, like the estimators do).
            let omega = self.shared_omega(OmegaKey {
                seed,
                purpose: StreamPurpose::Trial,
                index: CURVE_STREAM,
                sub_index: repeat as u64,
                m,
                d,
                orthogonal: config.orthogonal,
            })?;
            let r = estimate_pairs(
                &prepared.data,
                0..pairs,
                estimator,
                OmegaSource::Shared(&omega),
                &mut self.scratch,
            )?;
            let log_squared = r
                .log_true
                .iter()
                .zip(&r.estimates)
                .map(|(t, e)| 2.0 * t + 2.0 * e.log_relative_error(*t));
            log_mses.push(log_sum(log_squared) - (pairs as f64).ln());
            log_theory = r.log_theoretical_mse;
        }
        // Mean and standard error of the repeats' MSEs, scaled by the largest so nothing
        // overflows.
        let scale = log_mses.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let scaled: Vec<f64> = log_mses.iter().map(|l| (l - scale).exp()).collect();
        let (mean, standard_error) = mean_and_standard_error(&scaled);
        Ok(TaskOutput::Curve(CurvePoint {
            m,
            log_measured_mse: scale + mean.ln(),
            log_standard_error: scale + standard_error.ln(),
            log_theoretical_mse: log_sum(log_theory) - (pairs as f64).ln(),
        }))
    }
}

/// An estimator with its fit to the dataset at hand.
#[derive(Clone, Copy)]
struct Fitted<'a> {
    estimator: &'a dyn Estimator,
    fit: &'a Fit,
}

/// The estimator on `pairs` of `data`: each pair collapsed to its prefactor and one or two
/// vectors z ([`Estimator::collapse`]), the sums `Σ_k g(ω_k·z)` from the f32 kernel in
/// blocks of pairs that share ω (one pair at a time when ω is fresh per pair), the true value
/// and the MSE formula in f64.
fn estimate_pairs(
    data: &Dataset,
    pairs: std::ops::Range<usize>,
    fitted: Fitted<'_>,
    omega: OmegaSource<'_>,
    scratch: &mut KernelScratch,
) -> Result<RangeEstimates, ExperimentError> {
    let Fitted { estimator, fit } = fitted;
    let d = data.d;
    let count = pairs.len();
    let mut out = RangeEstimates {
        log_true: Vec::with_capacity(count),
        estimates: Vec::with_capacity(count),
        log_theoretical_mse: Vec::with_capacity(count),
        data_radius: 0.0,
    };
    let per_pair = estimator.projections_per_pair().clamp(1, ROWS);
    let sum = estimator.fast_sum(fit);
    let (block_pairs, m, orthogonal) = match omega {
        OmegaSource::Shared(shared) => (ROWS / per_pair, shared.m(), false),
        OmegaSource::Fresh { m, orthogonal, .. } => (1, m, orthogonal),
    };
    let mut fresh = match omega {
        OmegaSource::Fresh { .. } => Some(Projections::zeroed(m, d)?),
        OmegaSource::Shared(_) => None,
    };
    let log_m = (m as f64).ln();
    let mut z64 = vec![0.0f64; per_pair * d];
    let mut z = vec![0.0f32; ROWS * d];
    let mut prefactor = [0.0f64; ROWS];
    let mut phases = [0.0f64; ROWS];
    let mut sums = [SignedLog::ZERO; ROWS];
    let mut block_start = pairs.start;
    while block_start < pairs.end {
        let rows = block_pairs.min(pairs.end - block_start);
        for r in 0..rows {
            let i = block_start + r;
            let (x, y) = (data.query(i), data.key(i));
            let collapsed = estimator.collapse(fit, x, y, &mut z64);
            for (target, source) in z[r * per_pair * d..(r + 1) * per_pair * d]
                .iter_mut()
                .zip(&z64)
            {
                *target = *source as f32;
            }
            let log_true = log_softmax_kernel(x, y);
            prefactor[r] = collapsed.log_prefactor - log_m;
            phases[r] = collapsed.phase;
            out.log_true.push(log_true);
            out.log_theoretical_mse
                .push(estimator.log_mse(fit, x, y, m).unwrap_or(f64::NAN));
            let (mut ax2, mut by2) = (0.0f64, 0.0f64);
            for ((xj, yj), aj) in x.iter().zip(y).zip(&fit.a) {
                ax2 += (aj * xj) * (aj * xj);
                by2 += (yj / aj) * (yj / aj);
            }
            out.data_radius = out.data_radius.max(ax2.max(by2).sqrt());
        }
        let drawn;
        let projections = match (&omega, fresh.as_mut()) {
            (OmegaSource::Shared(shared), _) => *shared,
            (OmegaSource::Fresh { seed, index, .. }, Some(buffer)) => {
                let mut rng = stream_rng(
                    *seed,
                    StreamPurpose::PairOmega,
                    *index as u64,
                    block_start as u64,
                );
                if orthogonal {
                    buffer.resample_orthogonal(&mut rng);
                } else {
                    buffer.resample(&mut rng);
                }
                drawn = TransposedOmega::new(buffer);
                &drawn
            }
            (OmegaSource::Fresh { .. }, None) => {
                return Err(ExperimentError::InvalidTask("no ω buffer".into()));
            }
        };
        block_sums(
            projections,
            &z,
            rows,
            per_pair,
            sum,
            &phases,
            scratch,
            &mut sums,
        );
        out.estimates.extend(
            prefactor
                .iter()
                .zip(&sums)
                .take(rows)
                .map(|(p, s)| s.scaled(*p)),
        );
        block_start += rows;
    }
    Ok(out)
}

/// One pair's estimate from the f32 kernel (through [`Workspace::run`]) beside the f64
/// reference ([`reference_estimate`]) on the same data and ω, with the formula's relative
/// RMSE `√MSE/SM`: the Monte Carlo error the difference is judged against.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelCheck {
    pub estimator: EstimatorId,
    pub pair: usize,
    pub f32: SignedLog,
    pub f64: SignedLog,
    /// `ln SM(x, y)`.
    pub log_true: f64,
    pub relative_rmse: f64,
}

impl KernelCheck {
    /// `|ŜM_f32 − ŜM_f64| / SM`, from the logs (exact where the values overflow).
    pub fn difference(&self) -> f64 {
        let scale = self.f64.ln_abs.max(self.f32.ln_abs);
        let value = |s: SignedLog| s.scaled(-scale).value();
        ((value(self.f32) - value(self.f64)).abs().ln() + scale - self.log_true).exp()
    }

    /// Whether f32 costs less than 1 % of the Monte Carlo error, and, for the positive
    /// estimators, less than 1e-4 relative to SM. (A signed estimator's prefactor, such as
    /// RFF's `e^{(|x|²+|y|²)/2}`, can exceed SM by orders of magnitude, and so does its Monte
    /// Carlo error: there only the relative criterion means anything.)
    pub fn is_far_below_the_monte_carlo_error(&self) -> bool {
        let difference = self.difference();
        let signed = self.estimator.get().fast_sum(&Fit::identity(1)).is_signed();
        difference <= 0.01 * self.relative_rmse && (signed || difference < 1e-4)
    }
}

/// [`KernelCheck`]s for the first `pairs` pairs of the scatter dataset, every estimator of
/// `config`, with the configuration's shared ω. The kernel's tests share it: natively, and in
/// WebAssembly built like the worker (`tests/browser.rs`).
pub fn check_kernel_against_f64(
    config: &ExperimentConfig,
    pairs: usize,
) -> Result<Vec<KernelCheck>, ExperimentError> {
    let data = generate_dataset(config, 0)?;
    let pairs = pairs.clamp(1, data.n);
    let mut rng = stream_rng(config.seed, StreamPurpose::SharedOmega, 0, 0);
    let omega = if config.orthogonal {
        Projections::sample_orthogonal(config.m, config.d, &mut rng)?
    } else {
        Projections::sample(config.m, config.d, &mut rng)?
    };
    let moments = data.moments();
    let mut workspace = Workspace::new();
    let mut checks = Vec::with_capacity(pairs * config.estimators.len());
    for &estimator in &config.estimators {
        let task = Task {
            estimator,
            piece: Piece::ScatterPairs {
                start: 0,
                end: pairs,
            },
        };
        let TaskOutput::ScatterPairs {
            log_true,
            estimates,
            log_theoretical_mse,
            ..
        } = workspace.run(config, &task)?
        else {
            return Err(ExperimentError::InvalidTask(
                "a scatter task answered".into(),
            ));
        };
        let fit = estimator.get().fit(
            FitInput {
                data: &data,
                moments: &moments,
            },
            &config.estimator_params(),
        )?;
        for pair in 0..pairs {
            checks.push(KernelCheck {
                estimator,
                pair,
                f32: estimates[pair],
                f64: reference_estimate(
                    estimator.get(),
                    &fit,
                    data.query(pair),
                    data.key(pair),
                    &omega,
                )?,
                log_true: log_true[pair],
                relative_rmse: (0.5 * log_theoretical_mse[pair] - log_true[pair]).exp(),
            });
        }
    }
    Ok(checks)
}

/// Finished task outputs under their [`task_key`]s, and the page's results assembled from them.
#[derive(Debug, Default)]
pub struct TaskStore {
    outputs: HashMap<String, TaskOutput>,
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
    pub fn insert_keyed(&mut self, key: String, output: TaskOutput) {
        self.outputs.insert(key, output);
    }

    /// Drops every output `config` does not use, once the store holds more than a few
    /// configurations' worth (dragging a slider would otherwise grow it without bound).
    pub fn trim(&mut self, config: &ExperimentConfig) {
        let tasks = plan(config);
        if self.outputs.len() > 4 * tasks.len() + 256 {
            let keep: std::collections::HashSet<String> =
                tasks.iter().map(|t| task_key(config, t)).collect();
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
                    data_radius: 0.0,
                    theorem_3_3: theorem_3_3.clone(),
                    sweep: sweep.clone(),
                };
                for (start, end) in chunks(config.n, size) {
                    let Some(TaskOutput::ScatterPairs {
                        log_true,
                        estimates,
                        log_theoretical_mse,
                        data_radius,
                    }) = self.get(config, estimator, Piece::ScatterPairs { start, end })
                    else {
                        return None;
                    };
                    pair_estimates.log_true.extend_from_slice(log_true);
                    pair_estimates.estimates.extend_from_slice(estimates);
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
            .map(|&estimator| {
                let points = CURVE_MS
                    .iter()
                    .map(|&m| match self.get(config, estimator, Piece::Curve { m }) {
                        Some(TaskOutput::Curve(point)) => Some(*point),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()?;
                Some(MseCurve { estimator, points })
            })
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

/// A message to a worker: run `task` for `config`. `id` comes back with the answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskRequest {
    pub id: u64,
    pub config: ExperimentConfig,
    pub task: Task,
}

/// A worker's answer to the [`TaskRequest`] with the same `id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskResponse {
    pub id: u64,
    pub output: Result<TaskOutput, String>,
}

/// Encodes a message for `postMessage` (postcard: compact, and every f64 bit for bit).
pub fn encode<T: Serialize>(message: &T) -> Result<Vec<u8>, String> {
    postcard::to_allocvec(message).map_err(|e| format!("cannot encode a worker message: {e}"))
}

/// Decodes a message from [`encode`].
pub fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, String> {
    postcard::from_bytes(bytes).map_err(|e| format!("malformed worker message: {e}"))
}

/// Every message the page sends a worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WorkerRequest {
    Task(TaskRequest),
    Probe { id: u64, probe: ProbeRequest },
}

/// Every answer a worker sends back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WorkerResponse {
    Task(TaskResponse),
    Probe {
        id: u64,
        output: Result<ProbeResult, String>,
    },
}

/// What a worker does with one message: decode the request, run it (in `workspace` for a
/// task), encode the answer. A malformed message is answered with an error for task id 0,
/// never a panic.
pub fn handle_request(workspace: &mut Workspace, message: &[u8]) -> Vec<u8> {
    let response = match decode::<WorkerRequest>(message) {
        Ok(WorkerRequest::Task(request)) => WorkerResponse::Task(TaskResponse {
            id: request.id,
            output: workspace
                .run(&request.config, &request.task)
                .map_err(|e| e.to_string()),
        }),
        Ok(WorkerRequest::Probe { id, probe: p }) => WorkerResponse::Probe {
            id,
            output: probe_pair(&p).map_err(|e| e.to_string()),
        },
        Err(error) => WorkerResponse::Task(TaskResponse {
            id: 0,
            output: Err(error),
        }),
    };
    // An encoding failure is reported as a (tiny, always encodable) error response.
    encode(&response).unwrap_or_else(|error| {
        encode(&WorkerResponse::Task(TaskResponse {
            id: 0,
            output: Err(error),
        }))
        .unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::config::Param;

    fn id(name: &str) -> EstimatorId {
        EstimatorId::from_id(name).unwrap()
    }

    fn config_with(pairs: &[(&str, &str)]) -> ExperimentConfig {
        let mut config = ExperimentConfig::default();
        for (key, value) in pairs {
            config
                .set(Param::from_key(key).unwrap(), value)
                .unwrap_or_else(|e| panic!("{key}={value}: {e}"));
        }
        config
    }

    #[test]
    fn f32_kernel_matches_the_f64_path_far_below_the_monte_carlo_error() {
        // Same data, same ω: the only difference is f32 arithmetic. Lemma 3.1 gives each
        // pair's relative RMSE √MSE/SM; the f32 error must be below 1 % of it (and it is
        // measured near 1e-6 in log, while the relative RMSE is 1e-2 or more at m ≤ 1024).
        let every = crate::math::estimators::REGISTRY
            .iter()
            .map(|e| e.id())
            .collect::<Vec<_>>()
            .join(",");
        for orf in ["0", "1"] {
            let config = config_with(&[("n", "64"), ("m", "256"), ("est", &every), ("orf", orf)]);
            let checks = check_kernel_against_f64(&config, 64).unwrap();
            assert_eq!(checks.len(), config.estimators.len() * 64);
            for check in checks {
                assert!(
                    check.is_far_below_the_monte_carlo_error(),
                    "orf={orf}: {check:?}"
                );
            }
        }
    }

    #[test]
    fn omega_from_a_longer_cached_draw_equals_a_fresh_draw() {
        // A worker that computed m = 8192 (or an earlier, larger m) reuses its leading rows;
        // the outputs must be bit for bit those of a worker that drew only what it needed.
        let config = config_with(&[("n", "40"), ("pairs", "20"), ("datasets", "1")]);
        let curve_16 = Task {
            estimator: id("hcexp-var"),
            piece: Piece::Curve { m: 16 },
        };
        let mut warm = Workspace::new();
        let mut longer = Task {
            piece: Piece::Curve { m: 8192 },
            ..curve_16
        };
        warm.run(&config, &longer).unwrap();
        assert_eq!(
            warm.run(&config, &curve_16).unwrap(),
            Workspace::new().run(&config, &curve_16).unwrap()
        );
        let boxplot = Task {
            estimator: id("hcexp-mean"),
            piece: Piece::BoxplotPairs {
                index: 1,
                start: 0,
                end: 20,
            },
        };
        let m_512 = ExperimentConfig {
            m: 512,
            ..config.clone()
        };
        longer.piece = boxplot.piece;
        warm.run(
            &ExperimentConfig {
                m: 1000,
                ..config.clone()
            },
            &longer,
        )
        .unwrap();
        assert_eq!(
            warm.run(&m_512, &boxplot).unwrap(),
            Workspace::new().run(&m_512, &boxplot).unwrap()
        );
    }

    #[test]
    fn chunked_error_sums_equal_the_whole_dataset_metrics() {
        let config = config_with(&[("pairs", "50"), ("datasets", "1"), ("m", "64")]);
        let mut workspace = Workspace::new();
        let run = |workspace: &mut Workspace, start, end| match workspace.run(
            &config,
            &Task {
                estimator: id("hcexp-var"),
                piece: Piece::BoxplotPairs {
                    index: 1,
                    start,
                    end,
                },
            },
        ) {
            Ok(TaskOutput::BoxplotPairs(sums)) => sums,
            other => panic!("{other:?}"),
        };
        let whole = run(&mut workspace, 0, 50).metrics();
        let parts = run(&mut workspace, 0, 17)
            .merge(run(&mut workspace, 17, 40))
            .merge(run(&mut workspace, 40, 50))
            .metrics();
        for (a, b) in [
            (whole.log_mse, parts.log_mse),
            (whole.log_max_rel_err, parts.log_max_rel_err),
            (whole.log_theoretical_mse, parts.log_theoretical_mse),
        ] {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
    }

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
                .all(|t| !matches!(t.piece, Piece::ScatterSetup | Piece::Curve { .. }))
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
            Some(crate::math::experiment::run_experiment(&base).unwrap())
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

    #[test]
    fn messages_round_trip_through_handle_request_with_infinities_intact() {
        let config = config_with(&[("n", "8"), ("m", "16")]);
        let task = Task {
            estimator: id("hcexp-mean"),
            piece: Piece::ScatterPairs { start: 0, end: 8 },
        };
        let request = TaskRequest {
            id: 42,
            config: config.clone(),
            task,
        };
        let mut workspace = Workspace::new();
        let ask = |workspace: &mut Workspace, request: &WorkerRequest| -> WorkerResponse {
            decode(&handle_request(workspace, &encode(request).unwrap())).unwrap()
        };
        let answer = ask(&mut workspace, &WorkerRequest::Task(request.clone()));
        assert_eq!(
            answer,
            WorkerResponse::Task(TaskResponse {
                id: 42,
                output: Ok(Workspace::new().run(&config, &task).unwrap())
            })
        );
        // −∞ (an exact estimate's log error) survives the encoding; JSON would turn it into null.
        let sums = TaskOutput::BoxplotPairs(ErrorSums {
            log_sum_squared: f64::NEG_INFINITY,
            log_max_rel_err: f64::NEG_INFINITY,
            log_sum_theoretical: 1.5,
            pairs: 3,
            clamped: 0,
        });
        assert_eq!(decode::<TaskOutput>(&encode(&sums).unwrap()), Ok(sums));
        // A probe gives what probe_pair gives.
        let probe = ProbeRequest {
            estimator: id("hcplx"),
            fit: Fit {
                theta: 0.6,
                ..Fit::diagonal(vec![1.5, 0.5], 0)
            },
            x: vec![0.5, -0.2],
            y: vec![0.1, 0.3],
            m: 8,
            trials: 50,
            seed: 3,
            orthogonal: true,
        };
        let expected = probe_pair(&probe).unwrap();
        assert_eq!(
            ask(&mut workspace, &WorkerRequest::Probe { id: 7, probe }),
            WorkerResponse::Probe {
                id: 7,
                output: Ok(expected)
            }
        );
        // Garbage is an error answer, not a panic.
        let garbage: WorkerResponse =
            decode(&handle_request(&mut workspace, &[0xff, 0x00, 0x13])).unwrap();
        assert!(matches!(
            garbage,
            WorkerResponse::Task(TaskResponse { output: Err(_), .. })
        ));
        // An invalid configuration inside a well-formed message is refused by validation.
        let mut bad = request.clone();
        bad.config.m = 0;
        let refused = ask(&mut workspace, &WorkerRequest::Task(bad));
        assert!(matches!(
            refused,
            WorkerResponse::Task(TaskResponse { output: Err(_), .. })
        ));
    }

    #[test]
    fn malformed_tasks_are_errors() {
        let config = config_with(&[("n", "20"), ("datasets", "2"), ("pairs", "20")]);
        let mut workspace = Workspace::new();
        for piece in [
            Piece::ScatterPairs { start: 10, end: 30 },
            Piece::ScatterPairs { start: 5, end: 5 },
            Piece::BoxplotPairs {
                index: 3,
                start: 0,
                end: 4,
            },
            Piece::BoxplotPairs {
                index: 0,
                start: 0,
                end: 4,
            },
        ] {
            let task = Task {
                estimator: id("prf-hyp"),
                piece,
            };
            assert!(workspace.run(&config, &task).is_err(), "{piece:?}");
        }
    }

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
            if !matches!(task.piece, Piece::Curve { .. }) {
                assert!(
                    task_work(&config, task) <= TASK_WORK + (ROWS * config.m * config.d) as f64
                );
            }
        }
    }
}
