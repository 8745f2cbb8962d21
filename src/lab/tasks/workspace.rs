//! Running one task: datasets and ω regenerated from their seeded streams and cached, each
//! estimator's fit cached, the pairs estimated through the f32 kernel.

use crate::numerics::portable::Libm;
use std::collections::HashMap;
use std::sync::Arc;

use super::plan::{DatasetKey, generate_dataset};
use super::{ErrorSums, Piece, Task, TaskOutput};
use crate::lab::config::{CURVE_PAIRS, CURVE_REPEATS, ExperimentConfig, OmegaMode};
use crate::lab::results::{CurvePoint, ExperimentError};
use crate::numerics::dataset::{Dataset, SampleMoments};
use crate::numerics::estimators::{
    Estimator, EstimatorError, EstimatorId, Fit, FitInput, Projections, log_softmax_kernel,
    reference_estimate,
};
use crate::numerics::kernel::{KernelScratch, ROWS, TransposedOmega, block_sums};
use crate::numerics::logspace::{SignedLog, log_sum};
use crate::numerics::probe::PairVectors;
use crate::numerics::rng::{StreamPurpose, stream_rng};
use crate::numerics::stats::mean_and_standard_error;
use crate::numerics::theory::Theorem33Inputs;

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
    orthogonal: bool,
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
    z_squared: Vec<f64>,
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
        // A message's configuration is checked once; the same one again is trusted.
        if self.validated.as_ref() != Some(config) {
            config.validate().map_err(ExperimentError::Config)?;
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
            log_mses.push(log_sum(log_squared) - (pairs as f64).libm_ln());
            log_theory = r.log_theoretical_mse;
        }
        // Mean and standard error of the repeats' MSEs, scaled by the largest so nothing
        // overflows.
        let scale = log_mses.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let scaled: Vec<f64> = log_mses.iter().map(|l| (l - scale).libm_exp()).collect();
        let (mean, standard_error) = mean_and_standard_error(&scaled);
        Ok(TaskOutput::Curve(CurvePoint {
            m,
            log_measured_mse: scale + mean.libm_ln(),
            log_standard_error: scale + standard_error.libm_ln(),
            log_theoretical_mse: log_sum(log_theory) - (pairs as f64).libm_ln(),
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
        z_squared: Vec::with_capacity(count),
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
    let log_m = (m as f64).libm_ln();
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
            out.z_squared.push(z64[..d].iter().map(|v| v * v).sum());
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
        ((value(self.f32) - value(self.f64)).abs().libm_ln() + scale - self.log_true).libm_exp()
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
                relative_rmse: (0.5 * log_theoretical_mse[pair] - log_true[pair]).libm_exp(),
            });
        }
    }
    Ok(checks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::test_support::{config_with, id};

    use crate::lab::tasks::{Piece, Task, TaskOutput};

    #[test]
    fn f32_kernel_matches_the_f64_path_far_below_the_monte_carlo_error() {
        // Same data, same ω: the only difference is f32 arithmetic. Lemma 3.1 gives each
        // pair's relative RMSE √MSE/SM; the f32 error must be below 1 % of it (and it is
        // measured near 1e-6 in log, while the relative RMSE is 1e-2 or more at m ≤ 1024).
        let every = crate::numerics::estimators::REGISTRY
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
}
