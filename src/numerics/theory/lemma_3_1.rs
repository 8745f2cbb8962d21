//! Lemma 3.1 of the seed paper for one pair and a real diagonal A, in the log domain: the two
//! feature forms, `x·y = log SM(x, y)`, `z = Ax + A^-T y` and the MSE
//! `(1/m) e^{s} SM² (1 − e^{−s})` (positive) or `(1/2m) e^{s} SM² (1 − e^{−s})²` (hyperbolic)
//! with `s = |z|²`. Shared by the rest of [`super`] (the bounds built on it) and by the
//! estimators (their `log_mse`), so that neither imports the other for it.

use crate::numerics::logspace::log_one_minus_exp_neg;
use crate::numerics::portable::Libm;
use serde::{Deserialize, Serialize};

/// Which feature map turns the projections into an estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FeatureForm {
    /// `exp(ω·u)` features: PRF `+`, CEXP. Sum term `exp(ω_k·z)`.
    Positive,
    /// `[exp(ω·u), exp(-ω·u)]/sqrt(2)` features: PRF `hyp+`, HCEXP. Sum term `cosh(ω_k·z)`.
    Hyperbolic,
}

/// `z = Ax + A^-T y` for a real diagonal A, and `|Ax|² + |A^-T y|²`.
pub fn transform(x: &[f64], y: &[f64], a: &[f64], z: &mut [f64]) -> f64 {
    let mut squared_norms = 0.0;
    for (((zi, xi), yi), ai) in z.iter_mut().zip(x).zip(y).zip(a) {
        let ax = ai * xi;
        let by = yi / ai;
        *zi = ax + by;
        squared_norms += ax * ax + by * by;
    }
    squared_norms
}

/// `u · v`.
pub fn dot(u: &[f64], v: &[f64]) -> f64 {
    u.iter().zip(v).map(|(p, q)| p * q).sum()
}

/// `log SM(x, y) = x·y`.
pub fn log_softmax_kernel(x: &[f64], y: &[f64]) -> f64 {
    dot(x, y)
}

/// `log` of Lemma 3.1's MSE for one pair from `s = |Ax + A^-T y|²` and `log SM(x, y)`:
/// positive form `(1/m) e^{s} SM² (1 − e^{−s})`, hyperbolic form
/// `(1/2m) e^{s} SM² (1 − e^{−s})²` (REFERENCE.md, MSE column; PRF is `A = I`).
/// `-inf` when `z = 0` (the estimator is then exact).
pub fn log_theoretical_mse_of(s: f64, log_sm: f64, form: FeatureForm, m: usize) -> f64 {
    let log_one_minus = log_one_minus_exp_neg(s);
    let log_sm_squared = 2.0 * log_sm;
    match form {
        FeatureForm::Positive => -(m as f64).libm_ln() + s + log_sm_squared + log_one_minus,
        FeatureForm::Hyperbolic => {
            -((2 * m) as f64).libm_ln() + s + log_sm_squared + 2.0 * log_one_minus
        }
    }
}

/// Lemma 3.1 for a real diagonal `a` (see [`log_theoretical_mse_of`]).
pub fn log_theoretical_mse(x: &[f64], y: &[f64], a: &[f64], form: FeatureForm, m: usize) -> f64 {
    let mut z = vec![0.0; x.len()];
    transform(x, y, a, &mut z);
    log_theoretical_mse_of(dot(&z, &z), log_softmax_kernel(x, y), form, m)
}
