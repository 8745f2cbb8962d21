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
    EstimatorError, FeatureForm, PairEstimator, Projections, log_softmax_kernel,
    log_theoretical_mse_of,
};
use super::experiment::{
    CURVE_MS, CURVE_PAIRS, CURVE_REPEATS, CurvePoint, DatasetMetrics, EstimatorId,
    EstimatorSummary, ExperimentError, ExperimentResult, MseCurve, PairEstimates, ScatterSeries,
    generate_dataset,
};
use super::heuristics::{AHeuristic, DiagonalA, diagonal_a};
use super::kernel::{KernelScratch, ROWS, TransposedOmega, log_sums};
use super::probe::{ProbeResult, probe_pair};
use super::rng::{StreamPurpose, stream_rng};
use super::stats::{log_relative_error, mean_and_standard_error};
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

/// One heuristic on one piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Task {
    pub heuristic: AHeuristic,
    pub piece: Piece,
}

/// What a task computes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskOutput {
    ScatterSetup {
        a: Vec<f64>,
        clamped: usize,
        theorem_3_3: Theorem33Inputs,
    },
    ScatterPairs {
        log_true: Vec<f64>,
        log_estimates: Vec<f64>,
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

fn log_add(a: f64, b: f64) -> f64 {
    let max = a.max(b);
    if max == f64::NEG_INFINITY || max.is_nan() {
        return max;
    }
    max + ((a - max).exp() + (b - max).exp()).ln()
}

fn log_sum(logs: impl IntoIterator<Item = f64>) -> f64 {
    logs.into_iter().fold(f64::NEG_INFINITY, log_add)
}

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
        for &heuristic in &config.estimators {
            tasks.push(Task { heuristic, piece });
        }
    }
    tasks
}

/// Multiply-adds of a task (for progress bars and the budget).
pub fn task_work(config: &ExperimentConfig, task: &Task) -> f64 {
    let per_pair = (config.m * config.d) as f64;
    match task.piece {
        Piece::ScatterSetup => (config.n * config.d) as f64,
        Piece::ScatterPairs { start, end } | Piece::BoxplotPairs { start, end, .. } => {
            (end - start) as f64 * per_pair
        }
        Piece::Curve { m } => (CURVE_PAIRS.min(config.n) * CURVE_REPEATS * m * config.d) as f64,
    }
}

/// A string naming every input `task`'s output depends on, and nothing else: equal keys mean
/// equal outputs, so a stored output can be reused under a new configuration.
pub fn task_key(config: &ExperimentConfig, task: &Task) -> String {
    let c = config;
    let data = dataset_key(config, task.piece.dataset());
    let estimator = format!("a={} hyp={}", task.heuristic.url_name(), c.hyperbolic);
    let omega = format!("m={} omega={:?}", c.m, c.omega);
    match task.piece {
        // A and Theorem 3.3's inputs do not depend on m, ω or the feature form.
        Piece::ScatterSetup => format!("setup {data} a={}", task.heuristic.url_name()),
        Piece::ScatterPairs { start, end } => {
            format!("scatter {start}..{end} {data} {estimator} {omega}")
        }
        Piece::BoxplotPairs { start, end, .. } => {
            format!("boxplot {start}..{end} {data} {estimator} {omega}")
        }
        // The curve sets its own m and draws its own ω.
        Piece::Curve { m } => format!("curve m={m} {data} {estimator}"),
    }
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

/// A dataset with its sample moments and the diagonal A of every heuristic.
#[derive(Debug)]
struct PreparedDataset {
    data: Dataset,
    moments: SampleMoments,
    /// Indexed like [`AHeuristic::ALL`].
    diagonals: Vec<DiagonalA>,
}

impl PreparedDataset {
    fn new(data: Dataset) -> Self {
        let moments = data.moments();
        let diagonals = AHeuristic::ALL
            .iter()
            .map(|h| diagonal_a(*h, &moments))
            .collect();
        Self {
            data,
            moments,
            diagonals,
        }
    }

    fn diagonal(&self, heuristic: AHeuristic) -> &DiagonalA {
        let index = AHeuristic::ALL
            .iter()
            .position(|h| *h == heuristic)
            .unwrap_or(0);
        &self.diagonals[index]
    }
}

/// Which stream a set of shared ω comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct OmegaKey {
    seed: u64,
    purpose: u64,
    index: u64,
    sub_index: u64,
    m: usize,
    d: usize,
}

/// Cached datasets are dropped beyond this many (about 5 MB at the paper's sizes).
const MAX_CACHED_DATASETS: usize = 64;
/// Cached ω are dropped beyond this many floats (32 MB).
const MAX_CACHED_OMEGA_FLOATS: usize = 8 << 20;

/// Runs tasks, keeping the datasets and ω it generated for the next ones.
#[derive(Debug, Default)]
pub struct Workspace {
    datasets: HashMap<String, Arc<PreparedDataset>>,
    omegas: HashMap<OmegaKey, Arc<TransposedOmega>>,
    omega_floats: usize,
    scratch: KernelScratch,
}

/// Where the ω of each pair come from.
enum OmegaSource<'a> {
    /// One set for every pair (linear attention's way, the default).
    Shared(&'a TransposedOmega),
    /// Drawn afresh for pair i from stream `(seed, PairOmega, index, i)`.
    Fresh { seed: u64, index: usize, m: usize },
}

/// Estimates for a range of pairs, in logs.
struct RangeEstimates {
    log_true: Vec<f64>,
    log_estimates: Vec<f64>,
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
        }
        let prepared = Arc::new(PreparedDataset::new(generate_dataset(config, index)?));
        self.datasets.insert(key, prepared.clone());
        Ok(prepared)
    }

    /// The first `m` projections of stream `(seed, purpose, index, sub_index)`, drawn once: a
    /// stream's first rows do not depend on how many follow, so a cached draw of more rows of
    /// the same stream serves as well (its leading panels), and a worker that takes a curve
    /// point for a small m draws only those rows.
    fn shared_omega(
        &mut self,
        seed: u64,
        purpose: StreamPurpose,
        index: u64,
        sub_index: u64,
        m: usize,
        d: usize,
    ) -> Result<Arc<TransposedOmega>, EstimatorError> {
        let key = OmegaKey {
            seed,
            purpose: purpose as u64,
            index,
            sub_index,
            m,
            d,
        };
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
        let omega = Arc::new(TransposedOmega::new(&Projections::sample(m, d, &mut rng)?));
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
                let prepared = self.dataset(config, 0)?;
                let diag = prepared.diagonal(task.heuristic);
                let theorem_3_3 = Theorem33Inputs::new(&prepared.moments, &diag.a, prepared.data.n)
                    .map_err(ExperimentError::Theory)?;
                Ok(TaskOutput::ScatterSetup {
                    a: diag.a.clone(),
                    clamped: diag.clamped,
                    theorem_3_3,
                })
            }
            Piece::ScatterPairs { start, end } => {
                let r = self.estimate_range(config, 0, start, end, task.heuristic)?;
                Ok(TaskOutput::ScatterPairs {
                    log_true: r.log_true,
                    log_estimates: r.log_estimates,
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
                let r = self.estimate_range(config, index, start, end, task.heuristic)?;
                let clamped = self
                    .dataset(config, index)?
                    .diagonal(task.heuristic)
                    .clamped;
                let log_rel: Vec<f64> = r
                    .log_true
                    .iter()
                    .zip(&r.log_estimates)
                    .map(|(t, e)| log_relative_error(e - t))
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
            Piece::Curve { m } => self.curve_point(config, task.heuristic, m),
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
        heuristic: AHeuristic,
    ) -> Result<RangeEstimates, ExperimentError> {
        let (seed, m, d) = (config.seed, config.m, config.d);
        let prepared = self.dataset(config, index)?;
        if start >= end || end > prepared.data.n {
            return Err(ExperimentError::InvalidTask(format!(
                "pairs {start}..{end} are not in a dataset of {} pairs",
                prepared.data.n
            )));
        }
        let a = &prepared.diagonal(heuristic).a;
        let form = config.form();
        match config.omega {
            OmegaMode::Shared => {
                let omega =
                    self.shared_omega(seed, StreamPurpose::SharedOmega, index as u64, 0, m, d)?;
                estimate_pairs(
                    &prepared.data,
                    start..end,
                    a,
                    form,
                    OmegaSource::Shared(&omega),
                    &mut self.scratch,
                )
            }
            OmegaMode::Fresh => estimate_pairs(
                &prepared.data,
                start..end,
                a,
                form,
                OmegaSource::Fresh { seed, index, m },
                &mut self.scratch,
            ),
        }
    }

    /// Curve point for one heuristic and one m: the first pairs of the scatter dataset with A
    /// from the whole dataset, `CURVE_REPEATS` independent ω each shared by the pairs.
    fn curve_point(
        &mut self,
        config: &ExperimentConfig,
        heuristic: AHeuristic,
        m: usize,
    ) -> Result<TaskOutput, ExperimentError> {
        let (seed, d, form) = (config.seed, config.d, config.form());
        let prepared = self.dataset(config, 0)?;
        let a = &prepared.diagonal(heuristic).a;
        let pairs = CURVE_PAIRS.clamp(1, prepared.data.n);
        let mut log_mses = Vec::with_capacity(CURVE_REPEATS);
        let mut log_theory = Vec::new();
        for repeat in 0..CURVE_REPEATS {
            // Every m of a repeat takes the leading rows of one stream (the curve's points
            // share their draws, like the estimators do).
            let omega = self.shared_omega(
                seed,
                StreamPurpose::Trial,
                CURVE_STREAM,
                repeat as u64,
                m,
                d,
            )?;
            let r = estimate_pairs(
                &prepared.data,
                0..pairs,
                a,
                form,
                OmegaSource::Shared(&omega),
                &mut self.scratch,
            )?;
            let log_squared = r
                .log_true
                .iter()
                .zip(&r.log_estimates)
                .map(|(t, e)| 2.0 * t + 2.0 * log_relative_error(e - t));
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

/// The estimator with diagonal `a` on `pairs` of `data`: `log ŜM = −(|Ax|² + |A^-T y|²)/2 −
/// ln m + log Σ_k f(ω_k·z)`, the sum from the f32 kernel in blocks of [`ROWS`] pairs that
/// share ω (one pair at a time when ω is fresh per pair).
fn estimate_pairs(
    data: &Dataset,
    pairs: std::ops::Range<usize>,
    a: &[f64],
    form: FeatureForm,
    omega: OmegaSource<'_>,
    scratch: &mut KernelScratch,
) -> Result<RangeEstimates, ExperimentError> {
    let d = data.d;
    let count = pairs.len();
    let mut out = RangeEstimates {
        log_true: Vec::with_capacity(count),
        log_estimates: Vec::with_capacity(count),
        log_theoretical_mse: Vec::with_capacity(count),
        data_radius: 0.0,
    };
    let (block_rows, m) = match omega {
        OmegaSource::Shared(shared) => (ROWS, shared.m()),
        OmegaSource::Fresh { m, .. } => (1, m),
    };
    let mut fresh = match omega {
        OmegaSource::Fresh { .. } => Some(Projections::zeroed(m, d)?),
        OmegaSource::Shared(_) => None,
    };
    let log_m = (m as f64).ln();
    let mut z = vec![0.0f32; ROWS * d];
    let mut prefactor = [0.0f64; ROWS];
    let mut sums = [0.0f64; ROWS];
    let mut block_start = pairs.start;
    while block_start < pairs.end {
        let rows = block_rows.min(pairs.end - block_start);
        for (r, z_row) in z.chunks_exact_mut(d).take(rows).enumerate() {
            let i = block_start + r;
            let (x, y) = (data.query(i), data.key(i));
            let (mut ax2, mut by2, mut z2) = (0.0, 0.0, 0.0);
            for (((zj, xj), yj), aj) in z_row.iter_mut().zip(x).zip(y).zip(a) {
                let ax = aj * xj;
                let by = yj / aj;
                let zi = ax + by;
                *zj = zi as f32;
                ax2 += ax * ax;
                by2 += by * by;
                z2 += zi * zi;
            }
            let log_true = log_softmax_kernel(x, y);
            prefactor[r] = -0.5 * (ax2 + by2) - log_m;
            out.log_true.push(log_true);
            out.log_theoretical_mse
                .push(log_theoretical_mse_of(z2, log_true, form, m));
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
                buffer.resample(&mut rng);
                drawn = TransposedOmega::new(buffer);
                &drawn
            }
            (OmegaSource::Fresh { .. }, None) => {
                return Err(ExperimentError::InvalidTask("no ω buffer".into()));
            }
        };
        log_sums(projections, &z, rows, form, scratch, &mut sums);
        out.log_estimates
            .extend(prefactor.iter().zip(&sums).take(rows).map(|(p, s)| p + s));
        block_start += rows;
    }
    Ok(out)
}

/// One pair's log estimate from the f32 kernel (through [`Workspace::run`]) beside the f64
/// reference ([`PairEstimator`]) on the same data and ω, with Lemma 3.1's relative RMSE
/// `√MSE/SM`: the Monte Carlo error the difference is judged against.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelCheck {
    pub heuristic: AHeuristic,
    pub pair: usize,
    pub log_f32: f64,
    pub log_f64: f64,
    pub relative_rmse: f64,
}

impl KernelCheck {
    /// `|log ŜM_f32 − log ŜM_f64|`.
    pub fn difference(&self) -> f64 {
        (self.log_f32 - self.log_f64).abs()
    }

    /// Whether f32 costs less than 1 % of the Monte Carlo error, and less than 1e-4 in log.
    pub fn is_far_below_the_monte_carlo_error(&self) -> bool {
        let difference = self.difference();
        difference < 0.01 * self.relative_rmse && difference < 1e-4
    }
}

/// [`KernelCheck`]s for the first `pairs` pairs of the scatter dataset, every heuristic, with
/// the configuration's shared ω. The kernel's tests share it: natively, and in WebAssembly
/// built like the worker (`tests/browser.rs`).
pub fn check_kernel_against_f64(
    config: &ExperimentConfig,
    pairs: usize,
) -> Result<Vec<KernelCheck>, ExperimentError> {
    let data = generate_dataset(config, 0)?;
    let pairs = pairs.clamp(1, data.n);
    let mut rng = stream_rng(config.seed, StreamPurpose::SharedOmega, 0, 0);
    let omega = Projections::sample(config.m, config.d, &mut rng)?;
    let moments = data.moments();
    let mut workspace = Workspace::new();
    let mut checks = Vec::with_capacity(pairs * AHeuristic::ALL.len());
    for heuristic in AHeuristic::ALL {
        let task = Task {
            heuristic,
            piece: Piece::ScatterPairs {
                start: 0,
                end: pairs,
            },
        };
        let TaskOutput::ScatterPairs {
            log_true,
            log_estimates,
            log_theoretical_mse,
            ..
        } = workspace.run(config, &task)?
        else {
            return Err(ExperimentError::InvalidTask(
                "a scatter task answered".into(),
            ));
        };
        let a = diagonal_a(heuristic, &moments).a;
        let mut reference = PairEstimator::new(config.form(), config.d, config.m);
        for pair in 0..pairs {
            checks.push(KernelCheck {
                heuristic,
                pair,
                log_f32: log_estimates[pair],
                log_f64: reference.log_estimate(data.query(pair), data.key(pair), &a, &omega)?,
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
        heuristic: AHeuristic,
        piece: Piece,
    ) -> Option<&TaskOutput> {
        self.outputs
            .get(&task_key(config, &Task { heuristic, piece }))
    }

    /// Figure 1's series, once every scatter task of `config` is stored.
    pub fn scatter(&self, config: &ExperimentConfig) -> Option<Vec<ScatterSeries>> {
        let size = chunk_pairs(config);
        let form = config.form();
        config
            .estimators
            .iter()
            .map(|&heuristic| {
                let Some(TaskOutput::ScatterSetup {
                    a,
                    clamped,
                    theorem_3_3,
                }) = self.get(config, heuristic, Piece::ScatterSetup)
                else {
                    return None;
                };
                let mut estimates = PairEstimates {
                    estimator: EstimatorId { heuristic, form },
                    log_true: Vec::with_capacity(config.n),
                    log_estimates: Vec::with_capacity(config.n),
                    clamped: *clamped,
                    a: a.clone(),
                    log_theoretical_mse: Vec::with_capacity(config.n),
                    data_radius: 0.0,
                    theorem_3_3: theorem_3_3.clone(),
                };
                for (start, end) in chunks(config.n, size) {
                    let Some(TaskOutput::ScatterPairs {
                        log_true,
                        log_estimates,
                        log_theoretical_mse,
                        data_radius,
                    }) = self.get(config, heuristic, Piece::ScatterPairs { start, end })
                    else {
                        return None;
                    };
                    estimates.log_true.extend_from_slice(log_true);
                    estimates.log_estimates.extend_from_slice(log_estimates);
                    estimates
                        .log_theoretical_mse
                        .extend_from_slice(log_theoretical_mse);
                    estimates.data_radius = estimates.data_radius.max(*data_radius);
                }
                Some(ScatterSeries {
                    metrics: estimates.metrics(),
                    estimates,
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
            .map(|&heuristic| {
                let mut per_dataset = Vec::with_capacity(config.datasets);
                let mut clamped = 0;
                for index in 1..=config.datasets {
                    let mut sums: Option<ErrorSums> = None;
                    for (start, end) in chunks(config.pairs, size) {
                        let Some(TaskOutput::BoxplotPairs(part)) =
                            self.get(config, heuristic, Piece::BoxplotPairs { index, start, end })
                        else {
                            return None;
                        };
                        sums = Some(sums.map_or(*part, |s| s.merge(*part)));
                    }
                    let sums = sums?;
                    clamped += sums.clamped;
                    per_dataset.push(sums.metrics());
                }
                Some(EstimatorSummary::new(
                    EstimatorId {
                        heuristic,
                        form: config.form(),
                    },
                    per_dataset,
                    clamped,
                ))
            })
            .collect()
    }

    /// The MSE-against-m curves, once every curve task of `config` is stored.
    pub fn curves(&self, config: &ExperimentConfig) -> Option<Vec<MseCurve>> {
        config
            .estimators
            .iter()
            .map(|&heuristic| {
                let points = CURVE_MS
                    .iter()
                    .map(|&m| match self.get(config, heuristic, Piece::Curve { m }) {
                        Some(TaskOutput::Curve(point)) => Some(*point),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()?;
                Some(MseCurve {
                    estimator: EstimatorId {
                        heuristic,
                        form: config.form(),
                    },
                    points,
                })
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

/// The single-pair probe's inputs ([`probe_pair`]): `trials` independent estimates of one pair.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeRequest {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub a: Vec<f64>,
    pub form: FeatureForm,
    pub m: usize,
    pub trials: usize,
    pub seed: u64,
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
            output: probe_pair(&p.x, &p.y, &p.a, p.form, p.m, p.trials, p.seed)
                .map_err(|e| e.to_string()),
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
        for hyp in ["1", "0"] {
            let config = config_with(&[("n", "64"), ("m", "256"), ("hyp", hyp)]);
            let checks = check_kernel_against_f64(&config, 64).unwrap();
            assert_eq!(checks.len(), 3 * 64);
            for check in checks {
                assert!(
                    check.is_far_below_the_monte_carlo_error(),
                    "hyp={hyp}: {check:?}"
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
            heuristic: AHeuristic::VarianceAdjusted,
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
            heuristic: AHeuristic::MeanOnly,
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
                heuristic: AHeuristic::VarianceAdjusted,
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
        assert!(
            missing
                .iter()
                .all(|t| t.heuristic == AHeuristic::VarianceAdjusted)
        );
    }

    #[test]
    fn messages_round_trip_through_handle_request_with_infinities_intact() {
        let config = config_with(&[("n", "8"), ("m", "16")]);
        let task = Task {
            heuristic: AHeuristic::MeanOnly,
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
            x: vec![0.5, -0.2],
            y: vec![0.1, 0.3],
            a: vec![1.0, 1.0],
            form: FeatureForm::Hyperbolic,
            m: 8,
            trials: 50,
            seed: 3,
        };
        let expected = probe_pair(&probe.x, &probe.y, &probe.a, probe.form, 8, 50, 3).unwrap();
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
                heuristic: AHeuristic::Identity,
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
            .filter(|t| t.heuristic == AHeuristic::Identity)
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
