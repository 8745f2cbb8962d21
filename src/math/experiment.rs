//! The seed paper's experiment (section 4) as a pure function from an [`ExperimentConfig`] to
//! plain data: no signals, no DOM, so the page, a Web Worker and the command line share it.
//!
//! Dataset 0 is the scatter dataset (Figure 1, `n` pairs); datasets `1..=datasets` are the
//! boxplot datasets (Figures 2 and 3, `pairs` pairs each). Each dataset and each set of ω comes
//! from its own seeded stream ([`super::rng`]), so any piece can be recomputed alone. Within a
//! dataset every estimator sees the same ω (common random numbers), so differences between
//! estimators come from A and not from the draw.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::config::{ExperimentConfig, OmegaMode, ParamError};
use super::dataset::{self, Dataset, DatasetError, DatasetParams};
use super::estimators::{
    EstimatorError, FeatureForm, PairEstimator, Projections, log_softmax_kernel,
};
use super::heuristics::{AHeuristic, DiagonalA, diagonal_a};
use super::rng::{StreamPurpose, stream_rng};
use super::stats::median;

/// An estimator as the page names it: an A heuristic and a feature form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EstimatorId {
    pub heuristic: AHeuristic,
    pub form: FeatureForm,
}

impl EstimatorId {
    /// The stable id used in the DOM (`data-estimator`) and in exported data: `prf` for
    /// `A = I` in either form, `cexp-mean`/`cexp-var` (positive), `hcexp-mean`/`hcexp-var`
    /// (hyperbolic).
    pub fn id(self) -> &'static str {
        match (self.heuristic, self.form) {
            (AHeuristic::Identity, _) => "prf",
            (AHeuristic::MeanOnly, FeatureForm::Positive) => "cexp-mean",
            (AHeuristic::MeanOnly, FeatureForm::Hyperbolic) => "hcexp-mean",
            (AHeuristic::VarianceAdjusted, FeatureForm::Positive) => "cexp-var",
            (AHeuristic::VarianceAdjusted, FeatureForm::Hyperbolic) => "hcexp-var",
        }
    }

    /// A short human-readable name.
    pub fn label(self) -> &'static str {
        match (self.heuristic, self.form) {
            (AHeuristic::Identity, FeatureForm::Positive) => "PRF (A = I)",
            (AHeuristic::Identity, FeatureForm::Hyperbolic) => "PRF hyperbolic (A = I)",
            (AHeuristic::MeanOnly, FeatureForm::Positive) => "CEXP, mean-only A",
            (AHeuristic::MeanOnly, FeatureForm::Hyperbolic) => "HCEXP, mean-only A",
            (AHeuristic::VarianceAdjusted, FeatureForm::Positive) => "CEXP, variance-adjusted A",
            (AHeuristic::VarianceAdjusted, FeatureForm::Hyperbolic) => "HCEXP, variance-adjusted A",
        }
    }
}

/// Why an experiment could not run.
#[derive(Clone, Debug, PartialEq)]
pub enum ExperimentError {
    Config(ParamError),
    Dataset(DatasetError),
    Estimator(EstimatorError),
}

impl fmt::Display for ExperimentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExperimentError::Config(e) => write!(f, "invalid configuration: {e}"),
            ExperimentError::Dataset(e) => write!(f, "{e}"),
            ExperimentError::Estimator(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ExperimentError {}

impl From<DatasetError> for ExperimentError {
    fn from(e: DatasetError) -> Self {
        ExperimentError::Dataset(e)
    }
}

impl From<EstimatorError> for ExperimentError {
    fn from(e: EstimatorError) -> Self {
        ExperimentError::Estimator(e)
    }
}

/// Per-dataset error metrics (Figures 2 and 3).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatasetMetrics {
    /// `mean_i (ŜM_i − SM_i)²`.
    pub mse: f64,
    /// `max_i |ŜM_i − SM_i| / SM_i`.
    pub max_rel_err: f64,
}

/// One estimator's estimates on one dataset, in the log domain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairEstimates {
    pub estimator: EstimatorId,
    /// `log SM(x_i, y_i) = x_i·y_i`.
    pub log_true: Vec<f64>,
    /// `log ŜM(x_i, y_i)`.
    pub log_estimates: Vec<f64>,
    /// Diagonal entries of A that had to be clamped (see [`super::heuristics::A_MAX`]).
    pub clamped: usize,
}

impl PairEstimates {
    /// MSE and max relative error. The relative error `|ŜM/SM − 1|` is computed from the
    /// difference of logs, so it is exact even where SM itself would overflow.
    pub fn metrics(&self) -> DatasetMetrics {
        let mut sum_squared = 0.0;
        let mut max_rel_err: f64 = 0.0;
        for (log_true, log_est) in self.log_true.iter().zip(&self.log_estimates) {
            let rel = ((log_est - log_true).exp() - 1.0).abs();
            // (ŜM − SM)² = SM² · (ŜM/SM − 1)², formed as one exp to delay overflow.
            sum_squared += (2.0 * log_true + 2.0 * rel.ln()).exp();
            max_rel_err = max_rel_err.max(rel);
        }
        DatasetMetrics {
            mse: sum_squared / self.log_true.len().max(1) as f64,
            max_rel_err,
        }
    }
}

/// Figure 1's data for one estimator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScatterSeries {
    pub estimates: PairEstimates,
    pub metrics: DatasetMetrics,
}

/// Figures 2 and 3's data for one estimator, plus the table's medians.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EstimatorSummary {
    pub estimator: EstimatorId,
    /// One entry per boxplot dataset.
    pub per_dataset: Vec<DatasetMetrics>,
    pub median_mse: f64,
    pub median_max_rel_err: f64,
    /// Clamped diagonal entries of A, summed over the boxplot datasets.
    pub clamped: usize,
}

/// Everything the page shows for one configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentResult {
    pub config: ExperimentConfig,
    /// One series per selected estimator, on the scatter dataset.
    pub scatter: Vec<ScatterSeries>,
    /// One summary per selected estimator, over the boxplot datasets.
    pub summaries: Vec<EstimatorSummary>,
}

/// The generator parameters of dataset `index` (0: scatter dataset, else a boxplot dataset).
fn dataset_params(config: &ExperimentConfig, index: usize) -> Result<DatasetParams, DatasetError> {
    let n = if index == 0 { config.n } else { config.pairs };
    DatasetParams::new(
        config.d,
        n,
        config.mean_scale,
        config.x_shape,
        config.y_shape,
        config.x_norm,
        config.y_norm,
    )
}

/// Dataset `index` of the experiment, regenerated from the seed.
pub fn generate_dataset(config: &ExperimentConfig, index: usize) -> Result<Dataset, DatasetError> {
    let params = dataset_params(config, index)?;
    let mut rng = stream_rng(config.seed, StreamPurpose::Dataset, index as u64, 0);
    dataset::generate(&params, &mut rng)
}

/// Every requested estimator on dataset `index`. The A of each heuristic comes from the
/// dataset's own sample statistics, as in the paper.
pub fn estimate_dataset(
    config: &ExperimentConfig,
    index: usize,
    data: &Dataset,
    heuristics: &[AHeuristic],
) -> Result<Vec<PairEstimates>, ExperimentError> {
    let (d, m, form) = (data.d, config.m, config.form());
    let moments = data.moments();
    let diagonals: Vec<DiagonalA> = heuristics
        .iter()
        .map(|h| diagonal_a(*h, &moments))
        .collect();
    let mut estimators: Vec<PairEstimator> = heuristics
        .iter()
        .map(|_| PairEstimator::new(form, d, m))
        .collect();
    let mut results: Vec<PairEstimates> = heuristics
        .iter()
        .zip(&diagonals)
        .map(|(h, diag)| PairEstimates {
            estimator: EstimatorId {
                heuristic: *h,
                form,
            },
            log_true: Vec::with_capacity(data.n),
            log_estimates: Vec::with_capacity(data.n),
            clamped: diag.clamped,
        })
        .collect();
    let mut omega = Projections::zeroed(m, d)?;
    if config.omega == OmegaMode::Shared {
        omega.resample(&mut stream_rng(
            config.seed,
            StreamPurpose::SharedOmega,
            index as u64,
            0,
        ));
    }
    for i in 0..data.n {
        if config.omega == OmegaMode::Fresh {
            let mut rng = stream_rng(
                config.seed,
                StreamPurpose::PairOmega,
                index as u64,
                i as u64,
            );
            omega.resample(&mut rng);
        }
        let (x, y) = (data.query(i), data.key(i));
        let log_true = log_softmax_kernel(x, y);
        for ((estimator, diag), result) in estimators.iter_mut().zip(&diagonals).zip(&mut results) {
            result.log_true.push(log_true);
            result
                .log_estimates
                .push(estimator.log_estimate(x, y, &diag.a, &omega)?);
        }
    }
    Ok(results)
}

/// Runs the whole experiment: the scatter dataset and every boxplot dataset.
pub fn run_experiment(config: &ExperimentConfig) -> Result<ExperimentResult, ExperimentError> {
    config.validate().map_err(ExperimentError::Config)?;
    let heuristics = &config.estimators;
    let scatter_data = generate_dataset(config, 0)?;
    let scatter = estimate_dataset(config, 0, &scatter_data, heuristics)?
        .into_iter()
        .map(|estimates| ScatterSeries {
            metrics: estimates.metrics(),
            estimates,
        })
        .collect();
    let mut summaries: Vec<EstimatorSummary> = heuristics
        .iter()
        .map(|h| EstimatorSummary {
            estimator: EstimatorId {
                heuristic: *h,
                form: config.form(),
            },
            per_dataset: Vec::with_capacity(config.datasets),
            median_mse: f64::NAN,
            median_max_rel_err: f64::NAN,
            clamped: 0,
        })
        .collect();
    for index in 1..=config.datasets {
        let data = generate_dataset(config, index)?;
        for (estimates, summary) in estimate_dataset(config, index, &data, heuristics)?
            .into_iter()
            .zip(&mut summaries)
        {
            summary.per_dataset.push(estimates.metrics());
            summary.clamped += estimates.clamped;
        }
    }
    for summary in &mut summaries {
        let mse: Vec<f64> = summary.per_dataset.iter().map(|m| m.mse).collect();
        let rel: Vec<f64> = summary.per_dataset.iter().map(|m| m.max_rel_err).collect();
        summary.median_mse = median(&mse).unwrap_or(f64::NAN);
        summary.median_max_rel_err = median(&rel).unwrap_or(f64::NAN);
    }
    Ok(ExperimentResult {
        config: config.clone(),
        scatter,
        summaries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::config::Param;

    fn small_config() -> ExperimentConfig {
        let mut config = ExperimentConfig::default();
        for (param, value) in [
            ("m", "64"),
            ("n", "200"),
            ("datasets", "5"),
            ("pairs", "100"),
        ] {
            config.set(Param::from_key(param).unwrap(), value).unwrap();
        }
        config
    }

    #[test]
    fn same_configuration_same_numbers() {
        let config = small_config();
        assert_eq!(run_experiment(&config), run_experiment(&config));
    }

    #[test]
    fn a_different_seed_gives_different_numbers() {
        let config = small_config();
        let mut other = config.clone();
        other.seed = 1;
        let a = run_experiment(&config).unwrap();
        let b = run_experiment(&other).unwrap();
        assert_ne!(a.summaries[0].median_mse, b.summaries[0].median_mse);
    }

    #[test]
    fn result_has_one_entry_per_estimator_and_dataset() {
        let mut config = small_config();
        config.set(Param::Estimators, "prf,var").unwrap();
        let result = run_experiment(&config).unwrap();
        assert_eq!(result.scatter.len(), 2);
        assert_eq!(result.scatter[0].estimates.log_true.len(), 200);
        assert_eq!(result.summaries[1].per_dataset.len(), 5);
        assert_eq!(result.summaries[1].estimator.id(), "hcexp-var");
    }

    #[test]
    fn metrics_match_a_direct_computation() {
        let estimates = PairEstimates {
            estimator: EstimatorId {
                heuristic: AHeuristic::Identity,
                form: FeatureForm::Positive,
            },
            log_true: vec![0.0, 1.0_f64.ln() + 1.0],
            log_estimates: vec![2.0_f64.ln(), 1.0],
            clamped: 0,
        };
        // pair 0: SM 1, estimate 2: sq err 1, rel 1; pair 1: exact.
        let metrics = estimates.metrics();
        assert!((metrics.mse - 0.5).abs() < 1e-12);
        assert!((metrics.max_rel_err - 1.0).abs() < 1e-12);
    }

    #[test]
    fn fresh_omega_is_reproducible_and_differs_from_shared() {
        let mut config = small_config();
        config.set(Param::Omega, "fresh").unwrap();
        let a = run_experiment(&config).unwrap();
        assert_eq!(Ok(a.clone()), run_experiment(&config));
        let shared = run_experiment(&small_config()).unwrap();
        assert_eq!(
            a.scatter[0].estimates.log_true, shared.scatter[0].estimates.log_true,
            "the data does not depend on how ω is drawn"
        );
        assert_ne!(
            a.scatter[0].estimates.log_estimates,
            shared.scatter[0].estimates.log_estimates
        );
    }

    fn medians_for(pairs: &str, mean_scale: &str) -> Vec<f64> {
        let mut config = ExperimentConfig::default();
        config.set(Param::N, "2").unwrap();
        config.set(Param::Pairs, pairs).unwrap();
        config.set(Param::MeanScale, mean_scale).unwrap();
        let result = run_experiment(&config).unwrap();
        result.summaries.iter().map(|s| s.median_mse).collect()
    }

    #[test]
    fn prf_is_far_worse_than_both_hcexp_heuristics_with_the_scale_reading() {
        // With b = 50 (the paper's "Laplace(0, 50)" read as a scale), PRF is still poor and HCEXP
        // much better. Measured with seed 0: PRF's median MSE about 0.7, HCEXP's about 1e-3;
        // require a factor of 20.
        let medians = medians_for("100", "50");
        assert!(medians[0] > 20.0 * medians[1], "{medians:?}");
        assert!(medians[0] > 20.0 * medians[2], "{medians:?}");
    }

    #[test]
    fn heuristics_coincide_when_variances_are_negligible_against_means() {
        // With b = 50 and Gamma(0.02)/Gamma(0.01) variances, σ²_i ≪ μ²_i in
        // almost every component, and the seed paper notes both heuristics agree at σ² = 0:
        // their medians differ by well under 5 %.
        let medians = medians_for("100", "50");
        assert!((medians[1] / medians[2] - 1.0).abs() < 0.05, "{medians:?}");
    }

    #[test]
    fn paper_ordering_holds_at_the_default_settings() {
        // The paper's Figures 2 and 3: PRF > HCEXP mean-only > HCEXP variance-adjusted in
        // median MSE. At the default b = 0.02 the query variances are comparable to the squared
        // means, mean-only A magnifies them (seed paper, end of section 3) and Lemma 3.4's A
        // is better. Measured with seed 0 on the full default page: 1.29, 0.21, 1.3e-3; here
        // (100 pairs per dataset) require factors of 2 and 10.
        let medians = medians_for("100", "0.02");
        assert!(medians[0] > 2.0 * medians[1], "{medians:?}");
        assert!(medians[1] > 10.0 * medians[2], "{medians:?}");
    }
}
