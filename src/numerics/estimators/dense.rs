//! Dense DERF members with a scalar `A_ω = αI` (Dense-Exponential Random Features,
//! Likhosherstov et al., NeurIPS 2023; REFERENCE.md, "Dense-exponential random features"):
//! `B₁ = √(1 − 4α) P`, `B₂ = √(1 − 4α) P^{−T}` for a dense invertible `d × d` matrix P, so
//! `B₁ᵀ M B₂ = I` (unbiased) and the member is GERF ([`super::gerf`]) on the pair
//! `(Px, P^{−T}y)`, whose dot product is `x·y`. P diagonal is the seed paper's
//! `(Ax, A⁻¹y)` (SADERF; `oprf-var` is P = the variance-adjusted A).
//!
//! For one pair, with `z = Px + P^{−T}y` and `S = |Px|² + |P^{−T}y|²`:
//! `ŜM = (1/m) Σ_k (1 − 4α)^{d/2} e^{−S/2} e^{2α|ω_k|²} g(√(1 − 4α) ω_k·z)`, `g = exp`
//! (positive, [`FastSum::ScaledExp`]) or `g = cosh` (hyperbolic: the mean of the features at
//! `ω_k` and `−ω_k`, `2m` features, [`FastSum::ScaledCosh`]). The collapse costs one O(d²)
//! product per side; the projections then cost what PRF's cost.
//!
//! **Why `A_ω` is scalar.** ω ~ N(0, I) is rotation invariant, so a general symmetric
//! `A_ω = QΛQᵀ` reduces to the diagonal Λ with `B₁, B₂` rotated by Qᵀ. A non-scalar Λ would
//! weigh each feature by `ωᵀΛω`, which the kernel's sums cannot take (they weigh by `|ω|²`
//! only) without a new per-feature weight; `αI` keeps every member on the existing fast path.
//! For the same reason only `G = PᵀP` matters: `P ↦ QP` leaves the estimate's distribution
//! unchanged, so the fitted members report the symmetric `P = G^{1/2}`.
//!
//! **Second moment per projection**, with `D = (1 − 4α)^{d/2} e^{−S/2}` and
//! `E = 2(1 − 4α)|z|²/(1 − 8α)` (REFERENCE.md's DERF moment at `A_ω = αI`):
//! positive `D²(1 − 8α)^{−d/2} e^{E}`; hyperbolic `½(E[g(ω)²] + E[g(ω)g(−ω)])` where the cross
//! term is the same Gaussian integral with the `ω·z` term cancelled (u → 0):
//! `D²(1 − 8α)^{−d/2}`, so `D²(1 − 8α)^{−d/2}(e^{E} + 1)/2`. `m·MSE` is it minus `SM²`.
//!
//! **The members.** `derf-dense` / `hderf-dense`: the closed form of [`closed_form`]
//! (`P = G^{1/2}`, `G = Mx⁻¹ # My` the matrix geometric mean of the data's second moments:
//! the minimiser of the mean of `S`, as Lemma 3.4's A is over diagonal matrices) with
//! OPRF's `α*` (positive) or [`hyperbolic_alpha`] at `ρ = mean |z|²/d`.
//! `derf-fit` / `hderf-fit`: P and α fitted by L-BFGS to the dataset's mean relative MSE
//! under the exact second moment ([`fitted`]), from the closed form.
//!
//! **All four need the full worker** (`needs_optimiser() == true`): the closed form needs a
//! symmetric eigendecomposition (nalgebra) and the fit argmin; the first view's kernel-worker,
//! built without the feature `optimised-a`, links neither and answers [`NOT_IN_THIS_BUILD`].

#[cfg(feature = "optimised-a")]
pub mod closed_form;
#[cfg(feature = "optimised-a")]
pub mod fitted;
#[cfg(test)]
mod tests;

use super::{
    BatchedForm, Collapsed, Describe, Estimator, EstimatorError, EstimatorParams, Family, FastSum,
    FeatureForm, Fit, FitInput, Projections, Side, exponential_features, transform,
    transformed_side,
};
use crate::numerics::portable::Libm;

/// What the fit answers in a build without the feature `optimised-a` (`kernel-worker`).
pub const NOT_IN_THIS_BUILD: &str = "the dense DERF members are not in this build (feature `optimised-a`: nalgebra's eigendecomposition and argmin): they run in full-worker";

/// Largest dimension the dense members fit (an O(d³) eigendecomposition, and `d(d+1)/2`
/// parameters for the fitted ones).
pub const MAX_DENSE_D: usize = 128;

/// A dense DERF member: the closed-form or the fitted P, positive or hyperbolic features.
#[derive(Clone, Copy, Debug)]
pub struct DenseDerf {
    /// P and α fitted numerically (else the closed form).
    pub fitted: bool,
    pub form: FeatureForm,
}

/// The closed form, positive features.
pub const DERF_DENSE: DenseDerf = DenseDerf {
    fitted: false,
    form: FeatureForm::Positive,
};
/// The closed form, hyperbolic features.
pub const HDERF_DENSE: DenseDerf = DenseDerf {
    fitted: false,
    form: FeatureForm::Hyperbolic,
};
/// The numerical fit, positive features.
pub const DERF_FIT: DenseDerf = DenseDerf {
    fitted: true,
    form: FeatureForm::Positive,
};
/// The numerical fit, hyperbolic features.
pub const HDERF_FIT: DenseDerf = DenseDerf {
    fitted: true,
    form: FeatureForm::Hyperbolic,
};

/// `ln R` with `R = E[h²]/SM²` of one projection's term h (positive or hyperbolic GERF) for a
/// pair with `|z|² = z2`, at α. With `κ = 1/(1 − 8α)` and
/// `c = d ln(1 − 4α) − (d/2) ln(1 − 8α) = (d/2) ln(1 + 16α²/(1 − 8α))` (≥ 0, the second form
/// exact near α = 0): positive `ln R = c + κ|z|²`; hyperbolic
/// `R = ½e^c(e^{κ|z|²} + e^{−|z|²}) = e^{c + (κ−1)|z|²/2} cosh((κ+1)|z|²/2)`, both without the
/// cancellations that would spoil `R − 1` for a nearly exact pair (κ − 1 = 8α/(1 − 8α)).
pub fn log_relative_second_moment(form: FeatureForm, d: usize, alpha: f64, z2: f64) -> f64 {
    let a8 = 1.0 - 8.0 * alpha;
    let c = 0.5 * d as f64 * (16.0 * alpha * alpha / a8).libm_ln_1p();
    match form {
        FeatureForm::Positive => c + z2 / a8,
        FeatureForm::Hyperbolic => {
            let t = 0.5 * (1.0 + 1.0 / a8) * z2;
            // ln cosh t = ln(1 + 2 sinh²(t/2)) (small t) or t + ln(1 + e^{−2t}) − ln 2.
            let log_cosh = if t < 1.0 {
                (2.0 * (0.5 * t).libm_sinh().powi(2)).libm_ln_1p()
            } else {
                t + (-2.0 * t).libm_exp().libm_ln_1p() - std::f64::consts::LN_2
            };
            c + 4.0 * alpha / a8 * z2 + log_cosh
        }
    }
}

/// `ln E[h²]` of one projection's term for a pair with `|z|² = z2` and `|x'|² + |y'|² = s`
/// (so `2x·y = z2 − s`): [`log_relative_second_moment`] plus `ln SM²`.
pub fn log_second_moment(form: FeatureForm, d: usize, alpha: f64, z2: f64, s: f64) -> f64 {
    log_relative_second_moment(form, d, alpha, z2) + z2 - s
}

/// `ln(e^v − 1)` for `v ≥ 0` (`−inf` at 0 and below), exact for tiny v, finite for huge v.
fn log_exp_m1(v: f64) -> f64 {
    if v > 1.0 {
        v + (-(-v).libm_exp()).libm_ln_1p()
    } else if v > 0.0 {
        v.libm_exp_m1().libm_ln()
    } else {
        f64::NEG_INFINITY
    }
}

/// The α that minimises the hyperbolic member's second moment per projection at `|z|² = ρd`:
/// `h(α) = ln(1 − 4α) − ½ ln(1 − 8α) + (1/d) ln(1 + e^{2qρd})`, `q = (1 − 4α)/(1 − 8α)`
/// (the `S` term does not depend on α). `h'(α) = L'(α) + 2q'ρ σ(2qρd)` with σ the logistic
/// function, in (½, 1), and `L + 2qρ'` is OPRF's objective at `ρ'`: `h'` is negative at OPRF's
/// `α*(ρ)` and positive at `α*(ρ/2)`, so the root lies between them; found by bisection.
pub fn hyperbolic_alpha(rho: f64, d: usize) -> f64 {
    let optimal = super::gerf::optimal_alpha;
    let (mut lo, mut hi) = (optimal(rho), optimal(0.5 * rho));
    let d = d.max(1) as f64;
    let derivative = |alpha: f64| {
        let (a4, a8) = (1.0 - 4.0 * alpha, 1.0 - 8.0 * alpha);
        let q = a4 / a8;
        let q_prime = 4.0 / (a8 * a8);
        let logistic = 1.0 / (1.0 + (-2.0 * q * rho * d).libm_exp());
        -4.0 / a4 + 4.0 / a8 + 2.0 * q_prime * rho * logistic
    };
    if !(lo.is_finite() && hi.is_finite()) || lo >= hi {
        return hi;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if derivative(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The α of a member's form at `ρ = mean |z|²/d`: OPRF's `α*` or [`hyperbolic_alpha`].
pub fn alpha_for(form: FeatureForm, rho: f64, d: usize) -> f64 {
    match form {
        FeatureForm::Positive => super::gerf::optimal_alpha(rho),
        FeatureForm::Hyperbolic => hyperbolic_alpha(rho, d),
    }
}

impl DenseDerf {
    /// `z = Px + P^{−T}y` (or the diagonal transform of a fit without a dense P) and S.
    fn transform(fit: &Fit, x: &[f64], y: &[f64], z: &mut [f64]) -> f64 {
        match &fit.dense {
            Some(dense) => dense.transform(x, y, z),
            None => transform(x, y, &fit.a, z),
        }
    }
}

impl Describe for DenseDerf {
    fn id(&self) -> &'static str {
        match (self.fitted, self.form) {
            (false, FeatureForm::Positive) => "derf-dense",
            (false, FeatureForm::Hyperbolic) => "hderf-dense",
            (true, FeatureForm::Positive) => "derf-fit",
            (true, FeatureForm::Hyperbolic) => "hderf-fit",
        }
    }

    fn label(&self) -> &'static str {
        match (self.fitted, self.form) {
            (false, FeatureForm::Positive) => "DERF, dense P (closed form)",
            (false, FeatureForm::Hyperbolic) => "DERF hyperbolic, dense P (closed form)",
            (true, FeatureForm::Positive) => "DERF, dense P and α fitted",
            (true, FeatureForm::Hyperbolic) => "DERF hyperbolic, dense P and α fitted",
        }
    }

    fn family(&self) -> Family {
        Family::Derf
    }

    fn colour(&self) -> [u8; 3] {
        // Okabe–Ito bluish green and reddish purple, Tol's vibrant cyan and magenta.
        match (self.fitted, self.form) {
            (false, FeatureForm::Positive) => [0, 158, 115],
            (false, FeatureForm::Hyperbolic) => [51, 187, 238],
            (true, FeatureForm::Positive) => [204, 121, 167],
            (true, FeatureForm::Hyperbolic) => [238, 51, 119],
        }
    }

    #[cfg(estimator_prose)]
    fn docs(&self) -> super::Docs {
        let formula = match (self.fitted, self.form) {
            (false, FeatureForm::Positive) => {
                r"\widehat{\mathrm{SM}} = \frac{1}{m} \sum_k {(1 - 4\alpha)}^{d/2} e^{2\alpha|\omega_k|^2 - (|Px|^2+|P^{-\top}y|^2)/2} \exp\left(\sqrt{1 - 4\alpha}\, \omega_k \cdot z\right),\quad z = Px + P^{-\top}y,\quad P = {\left(M_x^{-1} \# M_y\right)}^{1/2},\quad M_x = \operatorname{mean}_i x_i x_i^\top"
            }
            (false, FeatureForm::Hyperbolic) => {
                r"\widehat{\mathrm{SM}} = \frac{1}{m} \sum_k {(1 - 4\alpha)}^{d/2} e^{2\alpha|\omega_k|^2 - (|Px|^2+|P^{-\top}y|^2)/2} \cosh\left(\sqrt{1 - 4\alpha}\, \omega_k \cdot z\right),\quad z = Px + P^{-\top}y,\quad P = {\left(M_x^{-1} \# M_y\right)}^{1/2}"
            }
            (true, FeatureForm::Positive) => {
                r"\widehat{\mathrm{SM}} = \frac{1}{m} \sum_k {(1 - 4\alpha)}^{d/2} e^{2\alpha|\omega_k|^2 - (|Px|^2+|P^{-\top}y|^2)/2} \exp\left(\sqrt{1 - 4\alpha}\, \omega_k \cdot z\right),\quad (P, \alpha) = \operatorname{argmin} \operatorname{mean}_i \frac{\mathrm{MSE}_i}{\mathrm{SM}_i^2}"
            }
            (true, FeatureForm::Hyperbolic) => {
                r"\widehat{\mathrm{SM}} = \frac{1}{m} \sum_k {(1 - 4\alpha)}^{d/2} e^{2\alpha|\omega_k|^2 - (|Px|^2+|P^{-\top}y|^2)/2} \cosh\left(\sqrt{1 - 4\alpha}\, \omega_k \cdot z\right),\quad (P, \alpha) = \operatorname{argmin} \operatorname{mean}_i \frac{\mathrm{MSE}_i}{\mathrm{SM}_i^2}"
            }
        };
        super::Docs {
            formula,
            notice: if self.fitted {
                "P (all of G = PᵀP) and α fitted by L-BFGS to the dataset's exact mean relative MSE, from the closed form: never worse than it on the fitted pairs"
            } else {
                "a dense P sees correlations between coordinates that a diagonal A cannot: it minimises the mean |Px|² + |P⁻ᵀy|², Lemma 3.4's objective over all matrices"
            },
            source: "Dense-Exponential Random Features (Likhosherstov et al., NeurIPS 2023)",
        }
    }

    fn twin(&self) -> Option<&'static str> {
        Some(
            DenseDerf {
                form: match self.form {
                    FeatureForm::Positive => FeatureForm::Hyperbolic,
                    FeatureForm::Hyperbolic => FeatureForm::Positive,
                },
                ..*self
            }
            .id(),
        )
    }

    fn is_hyperbolic(&self) -> bool {
        self.form == FeatureForm::Hyperbolic
    }

    fn draws_full_omega(&self) -> bool {
        true
    }

    /// The closed form needs nalgebra's eigendecomposition, the fit argmin: both only in
    /// builds with `optimised-a` (see the module documentation).
    fn needs_optimiser(&self) -> bool {
        true
    }
}

impl Estimator for DenseDerf {
    #[cfg(not(feature = "optimised-a"))]
    fn fit(&self, _input: FitInput<'_>, _params: &EstimatorParams) -> Result<Fit, EstimatorError> {
        Err(EstimatorError::Fit(NOT_IN_THIS_BUILD.into()))
    }

    #[cfg(feature = "optimised-a")]
    fn fit(&self, input: FitInput<'_>, _params: &EstimatorParams) -> Result<Fit, EstimatorError> {
        let start = closed_form::closed_form(input.data, self.form)?;
        if !self.fitted {
            return Ok(start);
        }
        fitted::fit(input.data, self.form, start)
    }

    fn fast_sum(&self, fit: &Fit) -> FastSum {
        let (scale, norm_weight) = ((1.0 - 4.0 * fit.alpha).sqrt(), 2.0 * fit.alpha);
        match self.form {
            FeatureForm::Positive => FastSum::ScaledExp { scale, norm_weight },
            FeatureForm::Hyperbolic => FastSum::ScaledCosh { scale, norm_weight },
        }
    }

    fn collapse(&self, fit: &Fit, x: &[f64], y: &[f64], z: &mut [f64]) -> Collapsed {
        let squared_norms = Self::transform(fit, x, y, z);
        Collapsed {
            log_prefactor: super::gerf::log_prefactor(x.len(), fit.alpha, squared_norms),
            phase: 0.0,
        }
    }

    /// `MSE = SM² (R − 1)/m` (see [`log_relative_second_moment`]), in logs.
    fn log_mse(&self, fit: &Fit, x: &[f64], y: &[f64], m: usize) -> Option<f64> {
        let mut z = vec![0.0; x.len()];
        Self::transform(fit, x, y, &mut z);
        let log_r = log_relative_second_moment(self.form, x.len(), fit.alpha, super::dot(&z, &z));
        Some(2.0 * super::dot(x, y) + log_exp_m1(log_r) - (m.max(1) as f64).libm_ln())
    }

    fn features(&self, fit: &Fit, u: &[f64], side: Side, omega: &Projections) -> Vec<f64> {
        let w = match &fit.dense {
            Some(dense) => dense.apply(u, side == Side::Query),
            None => transformed_side(&fit.a, u, side),
        };
        let alpha = fit.alpha;
        let ln_power = 0.25 * u.len() as f64 * (1.0 - 4.0 * alpha).libm_ln();
        let norms = omega.squared_norms();
        exponential_features(
            &w,
            omega,
            self.form == FeatureForm::Hyperbolic,
            &|k| ln_power + alpha * norms[k],
            (1.0 - 4.0 * alpha).sqrt(),
        )
    }

    /// The diagonal fits only: a dense P is not a per-coordinate scale.
    fn batched_form(&self, fit: &Fit, omega: &Projections) -> Option<BatchedForm> {
        fit.dense.is_none().then(|| {
            super::gerf::gerf_batched_form(
                &fit.a,
                fit.alpha,
                self.form == FeatureForm::Hyperbolic,
                omega,
            )
        })
    }
}
