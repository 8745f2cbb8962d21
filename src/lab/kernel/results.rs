//! What the page shows, as plain data: per-dataset metrics, the scatter series, the boxplot
//! summaries and the MSE-against-m curves, with the errors an experiment can meet.

use crate::numerics::portable::Libm;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::lab::config::ExperimentConfig;
use crate::lab::config::ParamError;
use crate::numerics::dataset::DatasetError;
use crate::numerics::estimators::{EstimatorError, EstimatorId, Fit, ParameterSweep};
use crate::numerics::logspace::{SignedLog, log_of_median};
use crate::numerics::stats::log_mean_exp;
use crate::numerics::theory::{Theorem33Inputs, TheoryError};

/// Why an experiment could not run.
#[derive(Clone, Debug, PartialEq)]
pub enum ExperimentError {
    Config(ParamError),
    Dataset(DatasetError),
    Estimator(EstimatorError),
    Theory(TheoryError),
    /// A task that does not belong to its configuration (a malformed worker message).
    InvalidTask(String),
}

impl fmt::Display for ExperimentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExperimentError::Config(e) => write!(f, "invalid configuration: {e}"),
            ExperimentError::Dataset(e) => write!(f, "{e}"),
            ExperimentError::Estimator(e) => write!(f, "{e}"),
            ExperimentError::Theory(e) => write!(f, "{e}"),
            ExperimentError::InvalidTask(e) => write!(f, "invalid task: {e}"),
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
    /// Lemma 3.1's expectation of `mse`: `mean_i MSE(x_i, y_i)`.
    pub theoretical_mse: f64,
    /// `ln mse`, finite even where `mse` overflows to infinity (large norms).
    pub log_mse: f64,
    /// `ln max_rel_err`.
    pub log_max_rel_err: f64,
    /// `ln theoretical_mse`.
    pub log_theoretical_mse: f64,
}

impl DatasetMetrics {
    /// The metrics from their logs.
    pub fn from_logs(log_mse: f64, log_max_rel_err: f64, log_theoretical_mse: f64) -> Self {
        Self {
            mse: log_mse.libm_exp(),
            max_rel_err: log_max_rel_err.libm_exp(),
            theoretical_mse: log_theoretical_mse.libm_exp(),
            log_mse,
            log_max_rel_err,
            log_theoretical_mse,
        }
    }
}

/// One estimator's estimates on one dataset, in the log domain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairEstimates {
    pub estimator: EstimatorId,
    /// `log SM(x_i, y_i) = x_i·y_i`.
    pub log_true: Vec<f64>,
    /// `ŜM(x_i, y_i)` as signed logs (trigonometric features and a complex A go negative).
    pub estimates: Vec<SignedLog>,
    /// What the estimator fitted to this dataset (A, θ, α, the optimiser's report).
    pub fit: Fit,
    /// `log` of the estimator's MSE formula for each pair (NaN where it has none).
    pub log_theoretical_mse: Vec<f64>,
    /// `|z|²` of each pair's projected vector (`z = Ax + A⁻ᵀy` for a real A; the first of a
    /// complex A's two): what the MSE grows with.
    pub z_squared: Vec<f64>,
    /// `max_i max(|Ax_i|, |A^-T y_i|)`: the data's r in Lemma 3.2.
    pub data_radius: f64,
    /// The sample quantities of Theorem 3.3 for this dataset and A, where it holds.
    pub theorem_3_3: Option<Theorem33Inputs>,
    /// The MSE formula against the estimator's parameter (θ), where it has one.
    pub sweep: Option<ParameterSweep>,
}

impl PairEstimates {
    /// The largest relative RMSE `sqrt(MSE_i)/SM_i` that Lemma 3.1 predicts over the pairs, as
    /// a log.
    pub fn max_log_relative_rmse(&self) -> f64 {
        self.log_theoretical_mse
            .iter()
            .zip(&self.log_true)
            .map(|(log_mse, log_true)| 0.5 * log_mse - log_true)
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// Diagonal entries of A that had to be clamped (see [`crate::numerics::heuristics::A_MAX`]).
    pub fn clamped(&self) -> usize {
        self.fit.clamped
    }

    /// MSE and max relative error. The relative error `|ŜM/SM − 1|` is computed from the
    /// logs, so it is exact even where SM itself would overflow.
    pub fn metrics(&self) -> DatasetMetrics {
        let log_rel: Vec<f64> = self
            .log_true
            .iter()
            .zip(&self.estimates)
            .map(|(log_true, estimate)| estimate.log_relative_error(*log_true))
            .collect();
        // (ŜM − SM)² = SM² · (ŜM/SM − 1)²: its log is 2 log SM + 2 log rel.
        let log_squared: Vec<f64> = self
            .log_true
            .iter()
            .zip(&log_rel)
            .map(|(log_true, log_rel)| 2.0 * log_true + 2.0 * log_rel)
            .collect();
        DatasetMetrics::from_logs(
            log_mean_exp(&log_squared),
            log_rel.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            log_mean_exp(&self.log_theoretical_mse),
        )
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
    /// Median over the datasets of Lemma 3.1's expected MSE.
    pub median_theoretical_mse: f64,
    /// `ln median_mse`, `ln median_max_rel_err`, `ln median_theoretical_mse`: finite where the
    /// plain values overflow.
    pub log_median_mse: f64,
    pub log_median_max_rel_err: f64,
    pub log_median_theoretical_mse: f64,
    /// Clamped diagonal entries of A, summed over the boxplot datasets.
    pub clamped: usize,
}

impl EstimatorSummary {
    /// The summary of one estimator's per-dataset metrics. Medians are found among the logs
    /// (the log is increasing) and stay finite where the values themselves overflow; for an
    /// even number of datasets the median is the mean of the two middle *values*,
    /// `ln((e^a + e^b)/2)`, not the exponential of the mean of their logs.
    pub fn new(estimator: EstimatorId, per_dataset: Vec<DatasetMetrics>, clamped: usize) -> Self {
        let log_median = |metric: fn(&DatasetMetrics) -> f64| {
            let logs: Vec<f64> = per_dataset.iter().map(metric).collect();
            log_of_median(&logs)
        };
        let log_median_mse = log_median(|m| m.log_mse);
        let log_median_max_rel_err = log_median(|m| m.log_max_rel_err);
        let log_median_theoretical_mse = log_median(|m| m.log_theoretical_mse);
        Self {
            estimator,
            median_mse: log_median_mse.libm_exp(),
            median_max_rel_err: log_median_max_rel_err.libm_exp(),
            median_theoretical_mse: log_median_theoretical_mse.libm_exp(),
            log_median_mse,
            log_median_max_rel_err,
            log_median_theoretical_mse,
            per_dataset,
            clamped,
        }
    }
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

/// One point of the MSE-against-m curve, in logs so that large norms stay finite.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub m: usize,
    /// `ln` of the mean over the repeats of the MSE over the curve's pairs.
    pub log_measured_mse: f64,
    /// `ln` of the standard error of that mean (sd over the repeats / sqrt(repeats)).
    pub log_standard_error: f64,
    /// `ln` of Lemma 3.1 averaged over the same pairs.
    pub log_theoretical_mse: f64,
}

/// MSE against m for one estimator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MseCurve {
    pub estimator: EstimatorId,
    pub points: Vec<CurvePoint>,
}
