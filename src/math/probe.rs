//! The single-pair probe: many independent estimates of `SM(x, y)` for one pair, to compare
//! their spread with Lemma 3.1.
//!
//! **One Gaussian per feature.** For one pair only `t_k = ω_k·z` enters the estimate
//! ([`super::estimators`], "one projection per pair"), and for `ω_k ~ N(0, I_d)` the `t_k`
//! are i.i.d. `N(0, |z|²)`. Drawing `t_k = |z|·g_k` with `g_k ~ N(0, 1)` therefore gives exactly
//! the estimator's distribution with fresh ω for every estimate, at m Gaussian draws instead of
//! m·d. (The experiment keeps the full ω because there ω is shared by many pairs.)

use std::fmt;

use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use super::estimators::{
    FeatureForm, log_softmax_kernel, log_sum_cosh, log_sum_exp, log_theoretical_mse, transform,
};
use super::rng::{StreamPurpose, stream_rng};
use super::stats::mean_and_standard_error;

/// Largest number of estimates one probe may draw.
pub const MAX_TRIALS: usize = 1_000_000;

/// Why a probe could not run.
#[derive(Clone, Debug, PartialEq)]
pub enum ProbeError {
    /// x, y and a must have the same, non-zero length.
    DimensionMismatch { x: usize, y: usize, a: usize },
    /// A component is NaN or infinite, or an entry of a is zero.
    NotFinite(&'static str),
    /// m must be at least 1.
    NoFeatures,
    /// The number of estimates must be between 2 and [`MAX_TRIALS`].
    Trials(usize),
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::DimensionMismatch { x, y, a } => write!(
                f,
                "x, y and the diagonal of A need the same non-zero length (got {x}, {y} and {a})"
            ),
            ProbeError::NotFinite(what) => write!(f, "{what} must be finite (and a non-zero)"),
            ProbeError::NoFeatures => write!(f, "m must be at least 1"),
            ProbeError::Trials(t) => {
                write!(
                    f,
                    "the number of estimates must be from 2 to {MAX_TRIALS} (got {t})"
                )
            }
        }
    }
}

impl std::error::Error for ProbeError {}

/// `trials` independent estimates of one pair and their summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    pub true_value: f64,
    /// The estimates (each with its own fresh ω).
    pub estimates: Vec<f64>,
    pub mean_estimate: f64,
    /// Standard error of `mean_estimate`: sample sd / sqrt(trials).
    pub standard_error: f64,
    /// Mean of `(estimate − SM)²`.
    pub empirical_mse: f64,
    /// Standard error of `empirical_mse`: sd of the squared errors / sqrt(trials).
    pub mse_standard_error: f64,
    /// Lemma 3.1.
    pub theoretical_mse: f64,
}

/// Draws `trials` independent estimates of `SM(x, y)` with diagonal `a`, feature form `form`
/// and `m` projections; estimate `t` uses the stream `(seed, Probe, t)`, so results are
/// reproducible and independent of `trials`' order.
pub fn probe_pair(
    x: &[f64],
    y: &[f64],
    a: &[f64],
    form: FeatureForm,
    m: usize,
    trials: usize,
    seed: u64,
) -> Result<ProbeResult, ProbeError> {
    if x.is_empty() || x.len() != y.len() || x.len() != a.len() {
        return Err(ProbeError::DimensionMismatch {
            x: x.len(),
            y: y.len(),
            a: a.len(),
        });
    }
    let finite = |v: &[f64]| v.iter().all(|c| c.is_finite());
    if !finite(x) || !finite(y) {
        return Err(ProbeError::NotFinite("every component of x and y"));
    }
    if !finite(a) || a.contains(&0.0) {
        return Err(ProbeError::NotFinite("every entry of a"));
    }
    if m == 0 {
        return Err(ProbeError::NoFeatures);
    }
    if !(2..=MAX_TRIALS).contains(&trials) {
        return Err(ProbeError::Trials(trials));
    }
    let mut z = vec![0.0; x.len()];
    let squared_norms = transform(x, y, a, &mut z);
    let z_norm = z.iter().map(|v| v * v).sum::<f64>().sqrt();
    let log_prefactor = -0.5 * squared_norms - (m as f64).ln();
    let log_true = log_softmax_kernel(x, y);
    let true_value = log_true.exp();
    let mut projected = vec![0.0; m];
    let estimates: Vec<f64> = (0..trials)
        .map(|trial| {
            let mut rng = stream_rng(seed, StreamPurpose::Probe, trial as u64, 0);
            for t in &mut projected {
                let g: f64 = StandardNormal.sample(&mut rng);
                *t = z_norm * g;
            }
            let log_sum = match form {
                FeatureForm::Positive => log_sum_exp(&projected),
                FeatureForm::Hyperbolic => log_sum_cosh(&projected),
            };
            (log_prefactor + log_sum).exp()
        })
        .collect();
    let (mean_estimate, standard_error) = mean_and_standard_error(&estimates);
    let squared_errors: Vec<f64> = estimates
        .iter()
        .map(|e| (e - true_value) * (e - true_value))
        .collect();
    let (empirical_mse, mse_standard_error) = mean_and_standard_error(&squared_errors);
    Ok(ProbeResult {
        true_value,
        estimates,
        mean_estimate,
        standard_error,
        empirical_mse,
        mse_standard_error,
        theoretical_mse: log_theoretical_mse(x, y, a, form, m).exp(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::estimators::{PairEstimator, Projections};

    #[test]
    fn probe_agrees_with_lemma_3_1_and_is_unbiased() {
        let x = [0.4, -0.6, 0.3, 0.2];
        let y = [0.5, 0.2, -0.3, 0.6];
        let a = [1.4, 0.8, 1.0, 0.6];
        for form in [FeatureForm::Positive, FeatureForm::Hyperbolic] {
            let r = probe_pair(&x, &y, &a, form, 8, 40_000, 5).unwrap();
            assert!(
                (r.mean_estimate - r.true_value).abs() < 4.0 * r.standard_error,
                "{form:?}"
            );
            assert!(
                (r.empirical_mse - r.theoretical_mse).abs() < 4.0 * r.mse_standard_error,
                "{form:?}: {} vs {} ± {}",
                r.empirical_mse,
                r.theoretical_mse,
                r.mse_standard_error
            );
        }
    }

    #[test]
    fn one_gaussian_per_feature_matches_full_projections_in_distribution() {
        // The same estimator computed with full d-dimensional ω: the means and MSEs of the
        // two samplers agree within their combined standard errors.
        let x = [0.3, 0.5, -0.2];
        let y = [-0.1, 0.4, 0.6];
        let a = [1.0, 1.0, 1.0];
        let (m, trials) = (4, 30_000);
        let fast = probe_pair(&x, &y, &a, FeatureForm::Hyperbolic, m, trials, 1).unwrap();
        let mut omega = Projections::zeroed(m, 3).unwrap();
        let mut estimator = PairEstimator::new(FeatureForm::Hyperbolic, 3, m);
        let full: Vec<f64> = (0..trials)
            .map(|t| {
                omega.resample(&mut stream_rng(2, StreamPurpose::Trial, t as u64, 0));
                estimator.log_estimate(&x, &y, &a, &omega).unwrap().exp()
            })
            .collect();
        let n = trials as f64;
        let (mean, standard_error) = mean_and_standard_error(&full);
        let sd = standard_error * n.sqrt();
        let combined = (fast.standard_error.powi(2) + standard_error.powi(2)).sqrt();
        assert!((fast.mean_estimate - mean).abs() < 4.0 * combined);
        let fast_sd = fast.standard_error * n.sqrt();
        // Standard deviations agree within 5 % (their own relative standard error is ~1 %).
        assert!((fast_sd / sd - 1.0).abs() < 0.05, "{fast_sd} vs {sd}");
    }

    #[test]
    fn bad_inputs_are_errors_not_panics() {
        let f = FeatureForm::Positive;
        assert!(probe_pair(&[], &[], &[], f, 4, 10, 0).is_err());
        assert!(probe_pair(&[1.0], &[1.0, 2.0], &[1.0], f, 4, 10, 0).is_err());
        assert!(probe_pair(&[f64::NAN], &[1.0], &[1.0], f, 4, 10, 0).is_err());
        assert!(probe_pair(&[1.0], &[1.0], &[0.0], f, 4, 10, 0).is_err());
        assert!(probe_pair(&[1.0], &[1.0], &[1.0], f, 0, 10, 0).is_err());
        assert!(probe_pair(&[1.0], &[1.0], &[1.0], f, 4, 1, 0).is_err());
    }
}
