//! Running one task: datasets and ω regenerated from their seeded streams and cached, each
//! estimator's fit cached, the pairs estimated through the f32 kernel.

use crate::numerics::portable::Libm;
use std::collections::HashMap;
use std::sync::Arc;

use super::plan::{DatasetKey, generate_dataset};
use super::task::{ErrorSums, Piece, Task, TaskOutput};
use crate::lab::config::{CURVE_MS, CURVE_PAIRS, CURVE_REPEATS, ExperimentConfig, OmegaMode};
use crate::lab::kernel::results::{CurvePoint, ExperimentError};
use crate::numerics::dataset::{Dataset, SampleMoments};
use crate::numerics::estimators::{EstimatorError, EstimatorId, Fit, FitInput, Projections};
use crate::numerics::kernel::{KernelScratch, TransposedOmega};
use crate::numerics::logspace::log_sum;
use crate::numerics::probe::PairVectors;
use crate::numerics::projections::couplings::Coupling;
use crate::numerics::rng::{StreamPurpose, stream_rng};
use crate::numerics::stats::mean_and_standard_error;
use crate::numerics::theory::Theorem33Inputs;

mod pairs;
#[cfg(test)]
mod tests;

use pairs::{Fitted, OmegaSource, RangeEstimates, estimate_pairs, estimate_pairs_at};

/// The `index` of the curve's ω streams (`Trial` purpose, `sub_index` = the repeat).
const CURVE_STREAM: u64 = u64::MAX;

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
    coupling: Coupling,
}

/// Cached datasets are dropped beyond this many (about 5 MB at the paper's sizes).
const MAX_CACHED_DATASETS: usize = 64;
/// Cached ω are dropped beyond this many floats (32 MB).
const MAX_CACHED_OMEGA_FLOATS: usize = 8 << 20;

/// Runs tasks, keeping the datasets and ω it generated for the next ones.
#[derive(Debug, Default)]
pub struct Workspace {
    datasets: HashMap<DatasetKey, Arc<PreparedDataset>>,
    /// Fits by dataset, estimator and the parameters its fit reads (an optimised A is worth
    /// keeping).
    fits: HashMap<(DatasetKey, EstimatorId, String), Arc<Fit>>,
    /// The last configuration that passed [`ExperimentConfig::validate`].
    validated: Option<ExperimentConfig>,
    omegas: HashMap<OmegaKey, Arc<TransposedOmega>>,
    omega_floats: usize,
    scratch: KernelScratch,
}

impl Workspace {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the kernel may fuse multiply-adds where the module has relaxed SIMD (the
    /// page's interactive work: faster), or must give every build's bits (the export, the
    /// command line). Off in a new workspace.
    pub fn set_fused(&mut self, fused: bool) {
        self.scratch.fused = fused;
    }

    /// Dataset `index` of `config`, generated once.
    fn dataset(
        &mut self,
        config: &ExperimentConfig,
        index: usize,
    ) -> Result<Arc<PreparedDataset>, ExperimentError> {
        let key = DatasetKey::new(config, index);
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

    /// Pair `index` of `config`'s scatter dataset (dataset 0), for the probe.
    pub fn scatter_pair(
        &mut self,
        config: &ExperimentConfig,
        index: usize,
    ) -> Result<PairVectors, String> {
        if index >= config.n {
            return Err(format!(
                "pair {index} does not exist: the scatter dataset has n = {} pairs",
                config.n
            ));
        }
        let prepared = self.dataset(config, 0).map_err(|e| e.to_string())?;
        Ok(PairVectors {
            x: prepared.data.query(index).to_vec(),
            y: prepared.data.key(index).to_vec(),
        })
    }

    /// The fit of `estimator` to dataset `index`, computed once.
    fn fit(
        &mut self,
        config: &ExperimentConfig,
        index: usize,
        estimator: EstimatorId,
    ) -> Result<(Arc<PreparedDataset>, Arc<Fit>), ExperimentError> {
        let prepared = self.dataset(config, index)?;
        let key = (
            DatasetKey::new(config, index),
            estimator,
            estimator.info().parameter_key(&config.estimator_params()),
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
            coupling,
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
        let projections = Projections::sample_coupled(coupling, m, d, &mut rng)?;
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
        // A message's configuration is checked once; the same one again is trusted.
        if self.validated.as_ref() != Some(config) {
            config.validate_kernel().map_err(ExperimentError::Config)?;
            self.validated = Some(config.clone());
        }
        match task.piece {
            Piece::ScatterSetup => {
                let (prepared, fit) = self.fit(config, 0, task.estimator)?;
                let theorem_3_3 = if task.estimator.info().bounds().hyperbolic_real_a {
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
                    z_squared: r.z_squared,
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
            Piece::Curve => self
                .curve_points(config, task.estimator, &CURVE_MS)
                .map(TaskOutput::Curve),
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
        let (seed, m, d, coupling) = (config.seed, config.m, config.d, config.coupling);
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
                    coupling,
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
                    coupling,
                },
                &mut self.scratch,
            ),
        }
    }

    /// The MSE-against-m curve of one heuristic at every m of `ms`: the first
    /// [`CURVE_PAIRS`] pairs of the scatter dataset with A from the whole dataset, each of the
    /// [`CURVE_REPEATS`] repeats one stream of ω whose leading rows serve every m (the curve's
    /// points share their draws, like the estimators do). Each pair is projected once on the
    /// largest m and summed over every prefix ([`estimate_pairs_at`]): the points are bit for
    /// bit those computed one m at a time, for the largest m's multiply-adds alone.
    pub fn curve_points(
        &mut self,
        config: &ExperimentConfig,
        estimator: EstimatorId,
        ms: &[usize],
    ) -> Result<Vec<CurvePoint>, ExperimentError> {
        let (seed, d) = (config.seed, config.d);
        let Some(&largest) = ms.iter().max() else {
            return Ok(Vec::new());
        };
        if ms.contains(&0) {
            return Err(ExperimentError::InvalidTask(
                "a curve's m must be at least 1".into(),
            ));
        }
        let (prepared, fit) = self.fit(config, 0, estimator)?;
        let estimator = Fitted {
            estimator: estimator.get(),
            fit: &fit,
        };
        let pairs = CURVE_PAIRS.clamp(1, prepared.data.n);
        let log_pairs = (pairs as f64).libm_ln();
        let mut log_mses = vec![Vec::with_capacity(CURVE_REPEATS); ms.len()];
        let mut log_theory = vec![Vec::new(); ms.len()];
        for repeat in 0..CURVE_REPEATS {
            let omega = self.shared_omega(OmegaKey {
                seed,
                purpose: StreamPurpose::Trial,
                index: CURVE_STREAM,
                sub_index: repeat as u64,
                m: largest,
                d,
                coupling: config.coupling,
            })?;
            let ranges = estimate_pairs_at(
                &prepared.data,
                0..pairs,
                estimator,
                OmegaSource::Shared(&omega),
                ms,
                &mut self.scratch,
            )?;
            for ((r, mses), theory) in ranges.into_iter().zip(&mut log_mses).zip(&mut log_theory) {
                mses.push(log_mean_squared_error(&r) - log_pairs);
                *theory = r.log_theoretical_mse;
            }
        }
        Ok(ms
            .iter()
            .zip(&log_mses)
            .zip(&log_theory)
            .map(|((&m, log_mses), log_theory)| curve_point(m, log_mses, log_theory, log_pairs))
            .collect())
    }
}

/// `ln Σ_i (ŜM_i − SM_i)²` over a range's pairs. Not inlined, like [`curve_point`]: each
/// inlined copy of libm's logarithm and `expm1` is about a kilobyte of the kernel worker.
#[inline(never)]
fn log_mean_squared_error(r: &RangeEstimates) -> f64 {
    log_sum(
        r.log_true
            .iter()
            .zip(&r.estimates)
            .map(|(t, e)| 2.0 * t + 2.0 * e.log_relative_error(*t)),
    )
}

/// The curve's point at `m` from its repeats' log MSEs (mean and standard error, scaled by
/// the largest so nothing overflows) and Lemma 3.1's terms, each sum over `e^log_pairs` pairs.
#[inline(never)]
fn curve_point(m: usize, log_mses: &[f64], log_theory: &[f64], log_pairs: f64) -> CurvePoint {
    let scale = log_mses.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let scaled: Vec<f64> = log_mses.iter().map(|l| (l - scale).libm_exp()).collect();
    let (mean, standard_error) = mean_and_standard_error(&scaled);
    CurvePoint {
        m,
        log_measured_mse: scale + mean.libm_ln(),
        log_standard_error: scale + standard_error.libm_ln(),
        log_theoretical_mse: log_sum(log_theory.iter().copied()) - log_pairs,
    }
}
