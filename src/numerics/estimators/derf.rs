//! Dense-exponential random features (DERF; Likhosherstov et al., NeurIPS 2023; REFERENCE.md,
//! "Dense-exponential random features"): the general member and its exact second moment, the
//! form behind PRF, GERF/OPRF and the seed paper's `(Ax, A⁻¹y)`.
//!
//! With `ω ~ N(0, I_d)`, a symmetric `A_ω` with `8A_ω ≺ I`, matrices `B₁`, `B₂`,
//! `M = (I − 4A_ω)⁻¹`, `D = det(I − 4A_ω)^{1/4}` and `C_k = −½ B_kᵀ M B_k`:
//! `f₁(ω, x) = D exp(ωᵀA_ω ω + ωᵀB₁x + xᵀC₁x)`, `f₂(ω, y) = D exp(ωᵀA_ω ω + ωᵀB₂y + yᵀC₂y)`.
//! If `B₁ᵀ M B₂ = I`, `E[f₁ f₂] = exp(xᵀy)`, and with `u = B₁x + B₂y` the second moment per
//! feature is `D⁴ det(I − 8A_ω)^{−1/2} exp(2uᵀ(I − 8A_ω)⁻¹u + 2xᵀC₁x + 2yᵀC₂y)`, so
//! `m·MSE = that − SM²` (both by completing the square in the Gaussian integral).
//!
//! **SADERF** (`A_ω = αI`, `B₁ = √(1 − 4α) Ψ`, `B₂ = √(1 − 4α) Ψ⁻¹`, Ψ diagonal) is GERF on
//! `(Ψx, Ψ⁻¹y)`: with OPRF's α and the variance-adjusted diagonal it is the registry's
//! `oprf-var`, moment for moment (a test shows the identity). This module is the building block
//! of the dense members (`dense.rs`: derf-dense, hderf-dense, derf-fit, hderf-fit).

use nalgebra::{DMatrix, DVector};

use crate::numerics::logspace::signed_log_sum;
use crate::numerics::portable::Libm;

/// Why a DERF member could not be built.
#[derive(Clone, Debug, PartialEq)]
pub enum DerfError {
    /// A matrix is not `d × d`.
    Shape {
        expected: usize,
        got: (usize, usize),
    },
    /// `A_ω` is not symmetric.
    NotSymmetric,
    /// `I − 8A_ω` is not positive definite: the second moment is infinite.
    TooLarge,
    /// `B₁ᵀ M B₂` differs from the identity by this much (the estimator would be biased).
    Biased(f64),
    /// `B₁ᵀ M` cannot be inverted to give `B₂`.
    Singular,
}

impl std::fmt::Display for DerfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DerfError::Shape { expected, got } => {
                write!(
                    f,
                    "expected a {expected} × {expected} matrix, got {} × {}",
                    got.0, got.1
                )
            }
            DerfError::NotSymmetric => write!(f, "A_ω must be symmetric"),
            DerfError::TooLarge => write!(f, "I − 8A_ω must be positive definite"),
            DerfError::Biased(gap) => {
                write!(f, "B₁ᵀ M B₂ must be the identity (it differs by {gap:e})")
            }
            DerfError::Singular => write!(f, "B₁ᵀ M is singular: no B₂ makes it unbiased"),
        }
    }
}

impl std::error::Error for DerfError {}

/// One DERF member: `A_ω`, `B₁`, `B₂` and what the features and moments need of them.
#[derive(Clone, Debug, PartialEq)]
pub struct Derf {
    a_omega: DMatrix<f64>,
    b1: DMatrix<f64>,
    b2: DMatrix<f64>,
    /// `C₁ = −½ B₁ᵀ M B₁`, `C₂ = −½ B₂ᵀ M B₂`.
    c1: DMatrix<f64>,
    c2: DMatrix<f64>,
    /// `(I − 8A_ω)⁻¹`.
    inverse_8: DMatrix<f64>,
    /// `ln D = ¼ ln det(I − 4A_ω)` and `ln det(I − 8A_ω)`.
    ln_d: f64,
    ln_det_8: f64,
}

/// `ln det` of a symmetric positive definite matrix and its inverse, or `None` if it is not.
fn spd_log_det_and_inverse(matrix: DMatrix<f64>) -> Option<(f64, DMatrix<f64>)> {
    let cholesky = matrix.cholesky()?;
    let ln_det = 2.0
        * cholesky
            .l()
            .diagonal()
            .iter()
            .map(|v| v.libm_ln())
            .sum::<f64>();
    Some((ln_det, cholesky.inverse()))
}

impl Derf {
    /// The member with these matrices; `B₁ᵀ M B₂` must be the identity (to 1e-9).
    pub fn new(
        a_omega: DMatrix<f64>,
        b1: DMatrix<f64>,
        b2: DMatrix<f64>,
    ) -> Result<Self, DerfError> {
        let d = a_omega.nrows();
        for matrix in [&a_omega, &b1, &b2] {
            if matrix.shape() != (d, d) {
                return Err(DerfError::Shape {
                    expected: d,
                    got: matrix.shape(),
                });
            }
        }
        if (&a_omega - a_omega.transpose()).amax() > 1e-12 {
            return Err(DerfError::NotSymmetric);
        }
        let identity = DMatrix::<f64>::identity(d, d);
        let (ln_det_8, inverse_8) =
            spd_log_det_and_inverse(&identity - &a_omega * 8.0).ok_or(DerfError::TooLarge)?;
        let (ln_det_4, m) =
            spd_log_det_and_inverse(&identity - &a_omega * 4.0).ok_or(DerfError::TooLarge)?;
        let gap = (b1.transpose() * &m * &b2 - &identity).amax();
        if gap.is_nan() || gap > 1e-9 {
            return Err(DerfError::Biased(gap));
        }
        let c1 = b1.transpose() * &m * &b1 * -0.5;
        let c2 = b2.transpose() * &m * &b2 * -0.5;
        Ok(Self {
            a_omega,
            b1,
            b2,
            c1,
            c2,
            inverse_8,
            ln_d: 0.25 * ln_det_4,
            ln_det_8,
        })
    }

    /// The member with `A_ω` and `B₁`, and the `B₂ = (B₁ᵀ M)⁻¹` that makes it unbiased.
    pub fn with_unbiased_b2(a_omega: DMatrix<f64>, b1: DMatrix<f64>) -> Result<Self, DerfError> {
        let d = a_omega.nrows();
        let identity = DMatrix::<f64>::identity(d, d);
        let (_, m) =
            spd_log_det_and_inverse(&identity - &a_omega * 4.0).ok_or(DerfError::TooLarge)?;
        let b2 = (b1.transpose() * m)
            .try_inverse()
            .ok_or(DerfError::Singular)?;
        Self::new(a_omega, b1, b2)
    }

    /// SADERF: `A_ω = αI`, `B₁ = √(1 − 4α) Ψ`, `B₂ = √(1 − 4α) Ψ⁻¹` with `Ψ = diag(psi)`
    /// (GERF on `(Ψx, Ψ⁻¹y)`; α = 0 and Ψ = I is PRF).
    pub fn saderf(alpha: f64, psi: &[f64]) -> Result<Self, DerfError> {
        let d = psi.len();
        let scale = (1.0 - 4.0 * alpha).sqrt();
        let a_omega = DMatrix::<f64>::identity(d, d) * alpha;
        let b1 = DMatrix::from_diagonal(&DVector::from_iterator(d, psi.iter().map(|p| scale * p)));
        let b2 = DMatrix::from_diagonal(&DVector::from_iterator(d, psi.iter().map(|p| scale / p)));
        Self::new(a_omega, b1, b2)
    }

    /// The dimension d.
    pub fn d(&self) -> usize {
        self.a_omega.nrows()
    }

    /// `ln f₁(ω, x)` (`query`) or `ln f₂(ω, y)`.
    pub fn log_feature(&self, omega: &[f64], u: &[f64], query: bool) -> f64 {
        let omega = DVector::from_column_slice(omega);
        let u = DVector::from_column_slice(u);
        let (b, c) = if query {
            (&self.b1, &self.c1)
        } else {
            (&self.b2, &self.c2)
        };
        self.ln_d + omega.dot(&(&self.a_omega * &omega)) + omega.dot(&(b * &u)) + u.dot(&(c * &u))
    }

    /// `ln E[(f₁ f₂)²]` for the pair `(x, y)`.
    pub fn log_second_moment(&self, x: &[f64], y: &[f64]) -> f64 {
        let x = DVector::from_column_slice(x);
        let y = DVector::from_column_slice(y);
        let u = &self.b1 * &x + &self.b2 * &y;
        4.0 * self.ln_d - 0.5 * self.ln_det_8
            + 2.0 * u.dot(&(&self.inverse_8 * &u))
            + 2.0 * x.dot(&(&self.c1 * &x))
            + 2.0 * y.dot(&(&self.c2 * &y))
    }

    /// `ln MSE` of the mean of m features: `(E[(f₁f₂)²] − SM²)/m` (`−∞` for an exact member).
    pub fn log_mse(&self, x: &[f64], y: &[f64], m: usize) -> f64 {
        let xy: f64 = x.iter().zip(y).map(|(a, b)| a * b).sum();
        let per_feature = signed_log_sum([(false, self.log_second_moment(x, y)), (true, 2.0 * xy)]);
        if per_feature.negative {
            f64::NEG_INFINITY
        } else {
            per_feature.ln_abs - (m.max(1) as f64).libm_ln()
        }
    }
}

#[cfg(test)]
mod tests;
