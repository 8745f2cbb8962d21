//! Arithmetic in the log domain: sums of exponentials that never overflow, and signed values
//! stored as `sign · exp(ln|v|)`, so that an estimate beyond f64's range (`exp(x·y)` with
//! `x·y > 709`) or below zero (trigonometric features, a complex A) is still one number.

use crate::numerics::portable::Libm;
use serde::{Deserialize, Serialize};

/// A real number `v` stored as `ln|v|` and the sign of `v`. Zero is `ln_abs = −∞`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignedLog {
    /// `ln |v|`.
    pub ln_abs: f64,
    /// Whether `v < 0`.
    pub negative: bool,
}

impl SignedLog {
    /// Zero.
    pub const ZERO: SignedLog = SignedLog {
        ln_abs: f64::NEG_INFINITY,
        negative: false,
    };

    /// The positive number `exp(ln_value)`.
    pub fn positive(ln_value: f64) -> Self {
        Self {
            ln_abs: ln_value,
            negative: false,
        }
    }

    /// `value`, as its log magnitude and sign.
    pub fn from_value(value: f64) -> Self {
        Self {
            ln_abs: value.abs().libm_ln(),
            negative: value < 0.0,
        }
    }

    /// The value as an f64 (±∞ beyond its range).
    pub fn value(self) -> f64 {
        let magnitude = self.ln_abs.libm_exp();
        if self.negative { -magnitude } else { magnitude }
    }

    /// `self · exp(ln_factor)`.
    pub fn scaled(self, ln_factor: f64) -> Self {
        Self {
            ln_abs: self.ln_abs + ln_factor,
            negative: self.negative,
        }
    }

    /// `ln |v/SM − 1|` for `ln SM = log_true`: the log of the relative error of an estimate,
    /// exact where both values overflow f64. A negative estimate is off by `1 + |v|/SM`.
    pub fn log_relative_error(self, log_true: f64) -> f64 {
        let delta = self.ln_abs - log_true;
        if self.negative {
            // ln(1 + e^δ), the softplus.
            if delta > 0.0 {
                delta + (-delta).libm_exp().libm_ln_1p()
            } else {
                delta.libm_exp().libm_ln_1p()
            }
        } else if self.ln_abs == f64::NEG_INFINITY {
            0.0
        } else {
            super::stats::log_relative_error(delta)
        }
    }
}

/// `ln(e^a + e^b)`.
pub fn log_add(a: f64, b: f64) -> f64 {
    let max = a.max(b);
    if max == f64::NEG_INFINITY || max.is_nan() {
        return max;
    }
    max + ((a - max).libm_exp() + (b - max).libm_exp()).libm_ln()
}

/// `ln Σ exp(l)` over an iterator, pairwise through [`log_add`].
pub fn log_sum(logs: impl IntoIterator<Item = f64>) -> f64 {
    logs.into_iter().fold(f64::NEG_INFINITY, log_add)
}

/// `ln Σ_k exp(t_k)`, shifted by the maximum so that no term overflows.
pub fn log_sum_exp(t: &[f64]) -> f64 {
    let max = t.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return max;
    }
    max + t
        .iter()
        .map(|v| (v - max).libm_exp())
        .sum::<f64>()
        .libm_ln()
}

/// `ln Σ_k cosh(t_k) = M + ln Σ_k (exp(t_k − M) + exp(−t_k − M))/2` with `M = max |t_k|`.
pub fn log_sum_cosh(t: &[f64]) -> f64 {
    let max = t.iter().map(|v| v.abs()).fold(0.0, f64::max);
    if !max.is_finite() {
        return max;
    }
    let sum: f64 = if max < 350.0 {
        // One exp per term: e^{−t−M} = e^{−2M} / e^{t−M}, and e^{t−M} ≥ e^{−2M} > 0 because
        // t ≥ −M, so the division cannot overflow while e^{−2M} stays a normal number.
        let shift = (-2.0 * max).libm_exp();
        t.iter()
            .map(|v| {
                let up = (v - max).libm_exp();
                up + shift / up
            })
            .sum()
    } else {
        t.iter()
            .map(|v| (v - max).libm_exp() + (-v - max).libm_exp())
            .sum()
    };
    max + (0.5 * sum).libm_ln()
}

/// `Σ_k sign_k · exp(l_k)` for terms given as `(negative, ln|term|)`, shifted by the largest
/// magnitude. Cancellation is exact up to f64 rounding of the shifted terms.
pub fn signed_log_sum(terms: impl IntoIterator<Item = (bool, f64)> + Clone) -> SignedLog {
    let max = terms
        .clone()
        .into_iter()
        .map(|(_, l)| l)
        .fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return SignedLog {
            ln_abs: max,
            negative: false,
        };
    }
    let sum: f64 = terms
        .into_iter()
        .map(|(negative, l)| {
            let v = (l - max).libm_exp();
            if negative { -v } else { v }
        })
        .sum();
    SignedLog::from_value(sum).scaled(max)
}

/// `ln median(e^{l_i})` from the logs `l_i`: the middle log, or for an even count the log of
/// the mean of the two middle values. NaN for no values.
pub fn log_of_median(logs: &[f64]) -> f64 {
    let mut sorted = logs.to_vec();
    crate::numerics::stats::sort_in_total_order(&mut sorted);
    let n = sorted.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => log_add(sorted[n / 2 - 1], sorted[n / 2]) - std::f64::consts::LN_2,
    }
}

/// `ln(1 − e^{−s})` for `s ≥ 0`, accurate for small s (`−∞` at 0).
pub fn log_one_minus_exp_neg(s: f64) -> f64 {
    (-(-s).libm_exp_m1()).libm_ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_values_round_trip_and_relative_errors_are_exact() {
        for v in [-3.5, -1e-300, 0.0, 2.0, 7e200] {
            let s = SignedLog::from_value(v);
            assert!((s.value() - v).abs() <= 1e-13 * v.abs(), "{v}");
            assert_eq!(s.negative, v < 0.0);
        }
        // Estimate −1 of SM = 1: relative error 2.
        let e = SignedLog::from_value(-1.0);
        assert!((e.log_relative_error(0.0) - 2f64.libm_ln()).abs() < 1e-15);
        // Estimate 3 of SM = 1: relative error 2.
        let e = SignedLog::from_value(3.0);
        assert!((e.log_relative_error(0.0) - 2f64.libm_ln()).abs() < 1e-15);
        // Zero estimate: relative error 1.
        assert_eq!(SignedLog::ZERO.log_relative_error(5.0), 0.0);
        // Beyond f64: −e^2000 of SM = e^1000 is off by 1 + e^1000.
        let huge = SignedLog {
            ln_abs: 2000.0,
            negative: true,
        };
        assert!((huge.log_relative_error(1000.0) - 1000.0).abs() < 1e-12);
    }

    #[test]
    fn signed_sum_cancels_and_handles_huge_terms() {
        let s = signed_log_sum([(false, 3f64.libm_ln()), (true, 1f64.libm_ln())]);
        assert!((s.value() - 2.0).abs() < 1e-15);
        let s = signed_log_sum([(true, 1000.0), (false, 999.0)]);
        assert!(s.negative);
        let expected = 1000.0 + (1.0 - (-1f64).libm_exp()).libm_ln();
        assert!((s.ln_abs - expected).abs() < 1e-12);
        assert_eq!(signed_log_sum(std::iter::empty()).ln_abs, f64::NEG_INFINITY);
    }

    #[test]
    fn log_sum_cosh_matches_the_direct_sum_on_both_branches() {
        let small = [0.3, -1.2, 2.5, 0.0];
        let direct: f64 = small
            .iter()
            .map(|v: &f64| v.libm_cosh())
            .sum::<f64>()
            .libm_ln();
        assert!((log_sum_cosh(&small) - direct).abs() < 1e-12);
        // Beyond 350 the two-exp branch: cosh(400) + cosh(-399) = e^400 (1 + e^-1) / 2 (+ tiny).
        let large = [400.0, -399.0];
        let expected = 400.0 + (0.5 * (1.0 + (-1.0f64).libm_exp())).libm_ln();
        assert!((log_sum_cosh(&large) - expected).abs() < 1e-12);
    }
}
