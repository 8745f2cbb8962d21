//! The numbers the tour's sentences state, as a reader reads them, and the lookups the steps
//! share.

use super::step::TourError;
use crate::lab::kernel::experiment::ExperimentResult;
use crate::lab::kernel::results::{EstimatorSummary, ScatterSeries};
use crate::numerics::estimators::EstimatorId;
use crate::numerics::stats::{format_from_log, superscript};

/// `exp(ln_value)` to three significant digits: plain from 0.001 to 10,000, else as
/// `1.23 × 10^k` (also beyond f64's range, where the value exists only as its log).
pub fn from_log(ln_value: f64) -> String {
    let log10 = ln_value / std::f64::consts::LN_10;
    if (-3.0..4.0).contains(&log10) {
        plain(ln_value.exp())
    } else {
        let text = format_from_log(ln_value, 2);
        match text.split_once('e') {
            Some((mantissa, exponent)) => match exponent.parse::<i64>() {
                Ok(exponent) => format!("{mantissa} × 10{}", superscript(exponent)),
                Err(_) => text,
            },
            None => text,
        }
    }
}

/// A value of ordinary size to three significant digits, without a trailing point.
pub fn plain(value: f64) -> String {
    if !value.is_finite() {
        return "n/a".to_string();
    }
    if value == 0.0 {
        return "0".to_string();
    }
    let digits = (2 - value.abs().log10().floor() as i32).max(0) as usize;
    // A typographic minus, as the charts' axes write it.
    format!("{value:.digits$}").replace('-', "\u{2212}")
}

/// A fraction as a whole percentage (`0.237` → `24 %`).
pub fn percent(fraction: f64) -> String {
    format!("{:.0} %", 100.0 * fraction)
}

/// The estimator with the registry id `id`, which the step's question is about (a test
/// checks every id the steps name).
pub fn estimator(id: &str) -> Result<EstimatorId, TourError> {
    EstimatorId::from_id(id).ok_or_else(|| TourError::Missing(format!("the estimator `{id}`")))
}

/// The experiment's summary of `estimator`, or the reason the step cannot read it.
pub fn summary_of(
    result: &ExperimentResult,
    estimator: EstimatorId,
) -> Result<&EstimatorSummary, TourError> {
    result
        .summaries
        .iter()
        .find(|s| s.estimator == estimator)
        .ok_or_else(|| TourError::Missing(estimator.label().to_string()))
}

/// The scatter dataset's series of `estimator`.
pub fn series_of(
    result: &ExperimentResult,
    estimator: EstimatorId,
) -> Result<&ScatterSeries, TourError> {
    result
        .scatter
        .iter()
        .find(|s| s.estimates.estimator == estimator)
        .ok_or_else(|| TourError::Missing(estimator.label().to_string()))
}

/// Per pair of the scatter dataset: `ln |ŜM/SM − 1|`, the log of the relative error (finite
/// also where ŜM or SM overflow f64).
pub fn log_relative_errors(series: &ScatterSeries) -> Vec<f64> {
    let estimates = &series.estimates;
    estimates
        .log_true
        .iter()
        .zip(&estimates.estimates)
        .map(|(&log_true, estimate)| estimate.log_relative_error(log_true))
        .collect()
}
