//! The seed paper's theory (section 3), in the log domain so that large norms give large
//! finite numbers instead of overflow: Lemma 3.1's MSE ([`lemma_3_1`], with the feature forms
//! and `z = Ax + A^-T y` it is stated in), the trigonometric features' MSE, Lemma 3.2's
//! bound with its sign typo corrected, and Theorem 3.3's high-probability bound.
//! Formulas: `../shared/REFERENCE.md`, "Estimators" and "Bounds".

use crate::numerics::portable::Libm;
use std::fmt;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ChiSquared, ContinuousCDF};

use super::dataset::SampleMoments;
use super::logspace::log_one_minus_exp_neg;

pub mod lemma_3_1;

use lemma_3_1::{FeatureForm, dot};

/// Why a bound could not be computed.
#[derive(Clone, Debug, PartialEq)]
pub enum TheoryError {
    /// The probability p must lie strictly between 0 and 1.
    InvalidProbability(f64),
    /// Theorem 3.3 needs at least one sample and one dimension.
    EmptySample,
    /// Vectors of different lengths.
    DimensionMismatch,
}

impl fmt::Display for TheoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TheoryError::InvalidProbability(p) => {
                write!(
                    f,
                    "the probability p must be strictly between 0 and 1 (got {p})"
                )
            }
            TheoryError::EmptySample => write!(f, "Theorem 3.3 needs s ≥ 1 samples and d ≥ 1"),
            TheoryError::DimensionMismatch => write!(f, "vectors of different dimensions"),
        }
    }
}

impl std::error::Error for TheoryError {}

/// `log` of the trigonometric (random Fourier) features' MSE for one pair
/// (REFERENCE.md, MSE column): `(1/2m) e^{|x+y|²} SM^-2 (1 − e^{−|x−y|²})²`.
pub fn log_trigonometric_mse(x: &[f64], y: &[f64], m: usize) -> f64 {
    let sum_sq: f64 = x.iter().zip(y).map(|(p, q)| (p + q) * (p + q)).sum();
    let diff_sq: f64 = x.iter().zip(y).map(|(p, q)| (p - q) * (p - q)).sum();
    -((2 * m) as f64).libm_ln() + sum_sq - 2.0 * dot(x, y) + 2.0 * log_one_minus_exp_neg(diff_sq)
}

/// `log` of the relative RMSE `sqrt(MSE)/SM` that Lemma 3.1 gives for `s = |z|²`:
/// positive form `m^-1/2 e^{s/2} (1 − e^{−s})^{1/2}`, hyperbolic form
/// `(2m)^-1/2 e^{s/2} (1 − e^{−s})`. Both increase with `s`.
pub fn log_relative_rmse(s: f64, form: FeatureForm, m: usize) -> f64 {
    match form {
        FeatureForm::Positive => {
            -0.5 * (m as f64).libm_ln() + 0.5 * s + 0.5 * log_one_minus_exp_neg(s)
        }
        FeatureForm::Hyperbolic => {
            -0.5 * ((2 * m) as f64).libm_ln() + 0.5 * s + log_one_minus_exp_neg(s)
        }
    }
}

/// `ln W(r)` with the corrected `W(r) = exp(2r²) (1 − exp(−4r²))` (the seed prints
/// `1 − exp(4r²)`, which would make the bound negative).
pub fn log_w(r: f64) -> f64 {
    2.0 * r * r + log_one_minus_exp_neg(4.0 * r * r)
}

/// `log` of Lemma 3.2's corrected bound `W(r)/sqrt(2m)` on HCEXP's relative RMSE over a region
/// where `|Ax| ≤ r` and `|A^-T y| ≤ r`. It is Lemma 3.1's hyperbolic relative RMSE at the
/// largest possible `s = |z|² = (2r)²`.
pub fn log_lemma_3_2_bound(r: f64, m: usize) -> f64 {
    log_w(r) - 0.5 * ((2 * m) as f64).libm_ln()
}

/// `max(|Ax|, |A^-T y|)` for one pair: the smallest `r` for which Lemma 3.2 covers it.
pub fn pair_radius(x: &[f64], y: &[f64], a: &[f64]) -> f64 {
    let ax: f64 = x.iter().zip(a).map(|(v, ai)| (ai * v) * (ai * v)).sum();
    let ay: f64 = y.iter().zip(a).map(|(v, ai)| (v / ai) * (v / ai)).sum();
    ax.max(ay).sqrt()
}

/// The sample quantities Theorem 3.3 needs for a diagonal A (REFERENCE.md, "Theorem 3.3").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Theorem33Inputs {
    /// Dimension d (degrees of freedom of the χ² quantile).
    pub d: usize,
    /// Number s of query samples (and of key samples).
    pub samples: usize,
    /// `λ_Ax = max_i a_i² σ²_x,i`.
    pub lambda_ax: f64,
    /// `λ_A^-T y = max_i σ²_y,i / a_i²`.
    pub lambda_ay: f64,
    /// `|A μ_x|`.
    pub norm_mean_ax: f64,
    /// `|A^-T μ_y|`.
    pub norm_mean_ay: f64,
}

impl Theorem33Inputs {
    /// The inputs from sample statistics and the diagonal of A, with `samples` samples.
    pub fn new(moments: &SampleMoments, a: &[f64], samples: usize) -> Result<Self, TheoryError> {
        let d = a.len();
        let lengths = [
            moments.mean_x.len(),
            moments.var_x.len(),
            moments.mean_y.len(),
            moments.var_y.len(),
        ];
        if lengths.iter().any(|len| *len != d) {
            return Err(TheoryError::DimensionMismatch);
        }
        if d == 0 || samples == 0 {
            return Err(TheoryError::EmptySample);
        }
        let max = |it: &mut dyn Iterator<Item = f64>| it.fold(0.0, f64::max);
        let lambda_ax = max(&mut moments.var_x.iter().zip(a).map(|(v, ai)| ai * ai * v));
        let lambda_ay = max(&mut moments.var_y.iter().zip(a).map(|(v, ai)| v / (ai * ai)));
        let norm = |it: &mut dyn Iterator<Item = f64>| it.map(|v| v * v).sum::<f64>().sqrt();
        Ok(Self {
            d,
            samples,
            lambda_ax,
            lambda_ay,
            norm_mean_ax: norm(&mut moments.mean_x.iter().zip(a).map(|(m, ai)| ai * m)),
            norm_mean_ay: norm(&mut moments.mean_y.iter().zip(a).map(|(m, ai)| m / ai)),
        })
    }

    /// Theorem 3.3's radius for probability `p`: with `q = p^(1/(2s))`,
    /// `r = max(sqrt(λ_Ax χ²_d(q)) + |Aμ_x|, sqrt(λ_A^-T y χ²_d(q)) + |A^-T μ_y|)`.
    /// The χ² quantile comes from statrs.
    pub fn radius(&self, p: f64) -> Result<f64, TheoryError> {
        if !(p > 0.0 && p < 1.0) {
            return Err(TheoryError::InvalidProbability(p));
        }
        let q = p.libm_powf(1.0 / (2.0 * self.samples as f64));
        let chi2 = ChiSquared::new(self.d as f64)
            .map_err(|_| TheoryError::EmptySample)?
            .inverse_cdf(q);
        let radius_x = (self.lambda_ax * chi2).sqrt() + self.norm_mean_ax;
        let radius_y = (self.lambda_ay * chi2).sqrt() + self.norm_mean_ay;
        Ok(radius_x.max(radius_y))
    }

    /// `log` of Theorem 3.3's bound `W(r)/sqrt(2m)` at probability `p`: with probability at
    /// least p every pair's relative RMSE is at most this (an approximation when the
    /// statistics are sample estimates).
    pub fn log_bound(&self, p: f64, m: usize) -> Result<f64, TheoryError> {
        Ok(log_lemma_3_2_bound(self.radius(p)?, m))
    }
}

#[cfg(test)]
mod tests {
    use super::lemma_3_1::log_theoretical_mse;
    use super::*;

    #[test]
    fn corrected_w_is_positive_and_matches_its_definition() {
        for r in [0.1f64, 0.5, 1.0, 2.0] {
            let w: f64 = (2.0 * r * r).libm_exp() * (1.0 - (-4.0 * r * r).libm_exp());
            assert!(w > 0.0);
            assert!((log_w(r) - w.libm_ln()).abs() < 1e-12);
        }
    }

    #[test]
    fn lemma_3_2_bound_is_lemma_3_1_at_the_largest_z() {
        // z = Ax + A^-T y with |Ax| = |A^-T y| = r and the two parallel: s = 4r².
        let x = [0.6, 0.0];
        let y = [0.0, 0.6];
        let a = [1.0, 1.0];
        // Here s = |x + y|² = 0.72, r = 0.6: the bound (s = 1.44) must exceed Lemma 3.1.
        let m = 16;
        let log_rel =
            0.5 * log_theoretical_mse(&x, &y, &a, FeatureForm::Hyperbolic, m) - dot(&x, &y);
        assert!(log_rel < log_lemma_3_2_bound(pair_radius(&x, &y, &a), m));
        // For parallel equal vectors the bound is attained.
        let x = [0.3, 0.4];
        let s = 4.0 * 0.25;
        let exact = log_relative_rmse(s, FeatureForm::Hyperbolic, m);
        assert!((exact - log_lemma_3_2_bound(pair_radius(&x, &x, &a), m)).abs() < 1e-12);
    }

    #[test]
    fn relative_rmse_agrees_with_lemma_3_1() {
        let x = [0.3, -0.7, 0.2];
        let y = [0.5, 0.1, -0.4];
        let a = [1.0; 3];
        let s: f64 = x.iter().zip(&y).map(|(p, q)| (p + q) * (p + q)).sum();
        for form in [FeatureForm::Positive, FeatureForm::Hyperbolic] {
            let from_mse = 0.5 * log_theoretical_mse(&x, &y, &a, form, 32) - dot(&x, &y);
            assert!((from_mse - log_relative_rmse(s, form, 32)).abs() < 1e-12);
        }
    }

    #[test]
    fn trigonometric_mse_matches_the_formula() {
        let x = [0.2, 0.1];
        let y = [-0.3, 0.4];
        let m = 10;
        let plus: f64 = 0.01 + 0.25;
        let minus: f64 = 0.25 + 0.09;
        let sm = (-0.06f64 + 0.04).libm_exp();
        let direct = plus.libm_exp() / sm / sm * (1.0 - (-minus).libm_exp()).powi(2) / 20.0;
        assert!((log_trigonometric_mse(&x, &y, m) - direct.libm_ln()).abs() < 1e-12);
    }

    #[test]
    fn theorem_3_3_radius_grows_with_p_and_uses_the_chi_squared_quantile() {
        let moments = SampleMoments {
            mean_x: vec![1.0, 0.0],
            var_x: vec![0.25, 1.0],
            mean_y: vec![0.0, 2.0],
            var_y: vec![4.0, 0.0],
        };
        let a = [2.0, 1.0];
        let inputs = Theorem33Inputs::new(&moments, &a, 1).unwrap();
        assert_eq!(inputs.lambda_ax, 1.0);
        assert_eq!(inputs.lambda_ay, 1.0);
        assert_eq!(inputs.norm_mean_ax, 2.0);
        assert_eq!(inputs.norm_mean_ay, 2.0);
        // s = 1, p = 0.9025: q = 0.95, χ²_2(0.95) = 5.991464547107979.
        let r = inputs.radius(0.9025).unwrap();
        assert!(
            (r - (5.991464547107979f64.sqrt() + 2.0)).abs() < 1e-9,
            "{r}"
        );
        assert!(inputs.radius(0.99).unwrap() > r);
        assert!(inputs.radius(1.0).is_err());
        assert!(inputs.radius(f64::NAN).is_err());
        let short = SampleMoments {
            var_x: vec![0.25],
            ..moments
        };
        assert_eq!(
            Theorem33Inputs::new(&short, &a, 1),
            Err(TheoryError::DimensionMismatch)
        );
    }
}
