//! One pair, one projection: the sum `Σ_k g(ω_k·z)` every estimator's estimate of a pair
//! collapses to ([`FastSum`], [`Collapsed`]), formed in the log domain ([`reduce`]), and the
//! whole estimate of one pair in f64 ([`reference_estimate`]) that the f32 kernel is checked
//! against.

use super::{Estimator, EstimatorError, Fit, Projections};
use crate::numerics::logspace::{SignedLog, log_sum_cosh, log_sum_exp};
use crate::numerics::portable::Libm;

/// How the terms `g(ω_k·z)` of one pair are summed (the kernel's and [`reduce`]'s paths).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FastSum {
    /// `Σ exp(t_k)`.
    Exp,
    /// `Σ cosh(t_k)`.
    Cosh,
    /// `Σ cos(t_k)`: signed.
    Cos,
    /// `Σ exp(scale·t_k + norm_weight·|ω_k|²)` (GERF, positive).
    ScaledExp { scale: f64, norm_weight: f64 },
    /// `Σ exp(norm_weight·|ω_k|²) cosh(scale·t_k)` (GERF's hyperbolic form: the mean of the
    /// features at `ω` and `−ω`, positive).
    ScaledCosh { scale: f64, norm_weight: f64 },
    /// Two projections `u_k`, `v_k` per pair (a complex A): `Σ exp(c·u_k)·cos(s·v_k − φ)`,
    /// or with `hyperbolic` its mean with `ω → −ω`; `φ` is the pair's [`Collapsed::phase`].
    Complex {
        cos_theta: f64,
        sin_theta: f64,
        hyperbolic: bool,
    },
}

impl FastSum {
    /// Whether the sum can be negative.
    pub fn is_signed(self) -> bool {
        matches!(self, FastSum::Cos | FastSum::Complex { .. })
    }
}

/// One pair reduced to what multiplies the sum: `ŜM = exp(log_prefactor) · (1/m) · Σ_k …`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Collapsed {
    pub log_prefactor: f64,
    /// The phase `φ` of a complex A's cosine (0 otherwise).
    pub phase: f64,
}

/// `Σ_k g(t_k)` of one pair in the log domain, from its projections: `t` (and `v`, the
/// second projection of a complex A), `norms` the `|ω_k|²` (read only by GERF's two sums), `phase` the
/// pair's [`Collapsed::phase`].
pub fn reduce(sum: FastSum, t: &[f64], v: &[f64], norms: &[f64], phase: f64) -> SignedLog {
    match sum {
        FastSum::Exp => SignedLog::positive(log_sum_exp(t)),
        FastSum::Cosh => SignedLog::positive(log_sum_cosh(t)),
        FastSum::Cos => SignedLog::from_value(t.iter().map(|t| t.libm_cos()).sum()),
        FastSum::ScaledExp { scale, norm_weight } => {
            let terms = t
                .iter()
                .zip(norms)
                .map(|(t, n)| scale * t + norm_weight * n);
            SignedLog::positive(log_sum_of_exps(terms))
        }
        FastSum::ScaledCosh { scale, norm_weight } => {
            // cosh(u) = (e^u + e^{−u})/2: the 2m exponents, then − ln 2.
            let terms = t.iter().zip(norms).flat_map(|(t, n)| {
                let (u, w) = (scale * t, norm_weight * n);
                [w + u, w - u]
            });
            SignedLog::positive(log_sum_of_exps(terms) - std::f64::consts::LN_2)
        }
        FastSum::Complex {
            cos_theta,
            sin_theta,
            hyperbolic,
        } => {
            let max = t
                .iter()
                .map(|u| {
                    let r = cos_theta * u;
                    if hyperbolic { r.abs() } else { r }
                })
                .fold(f64::NEG_INFINITY, f64::max);
            if !max.is_finite() {
                return SignedLog::positive(max);
            }
            let sum: f64 = t
                .iter()
                .zip(v)
                .map(|(u, v)| {
                    let (r, i) = (cos_theta * u, sin_theta * v);
                    let up = (r - max).libm_exp() * (i - phase).libm_cos();
                    if hyperbolic {
                        0.5 * (up + (-r - max).libm_exp() * (-i - phase).libm_cos())
                    } else {
                        up
                    }
                })
                .sum();
            SignedLog::from_value(sum).scaled(max)
        }
    }
}

/// `ln Σ e^{l}` over `terms`, shifted by the largest (`−inf` for none, the maximum itself when
/// it is not finite).
fn log_sum_of_exps(terms: impl Iterator<Item = f64> + Clone) -> f64 {
    let max = terms.clone().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return max;
    }
    max + terms.map(|l| (l - max).libm_exp()).sum::<f64>().libm_ln()
}

/// The estimate of one pair in f64 with the given projections: [`Estimator::collapse`], one
/// f64 projection of each z, [`reduce`]. The f32 kernel is checked against it.
pub fn reference_estimate(
    estimator: &dyn Estimator,
    fit: &Fit,
    x: &[f64],
    y: &[f64],
    omega: &Projections,
) -> Result<SignedLog, EstimatorError> {
    let d = omega.d();
    for len in [x.len(), y.len(), fit.a.len()] {
        if len != d {
            return Err(EstimatorError::DimensionMismatch {
                expected: d,
                got: len,
            });
        }
    }
    let count = estimator.projections_per_pair();
    let mut z = vec![0.0; count * d];
    let collapsed = estimator.collapse(fit, x, y, &mut z);
    let m = omega.m();
    let mut t = vec![0.0; m];
    let mut v = vec![0.0; if count > 1 { m } else { 0 }];
    omega.project(&z[..d], &mut t);
    if count > 1 {
        omega.project(&z[d..2 * d], &mut v);
    }
    let sum = estimator.fast_sum(fit);
    let norms = match sum {
        FastSum::ScaledExp { .. } | FastSum::ScaledCosh { .. } => omega.squared_norms(),
        _ => Vec::new(),
    };
    Ok(reduce(sum, &t, &v, &norms, collapsed.phase)
        .scaled(collapsed.log_prefactor - (m as f64).libm_ln()))
}
