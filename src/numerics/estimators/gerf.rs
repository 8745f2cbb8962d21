//! Generalized exponential random features (GERF) with OPRF's optimal α ("Chefs' Random
//! Tables", Likhosherstov et al., NeurIPS 2022; REFERENCE.md, "Generalized exponential
//! features").
//!
//! `f(ω, u) = (1 − 4α)^{d/4} exp(α|ω|² + B ω·u − |u|²/2)`, `B = √(1 − 4α)`, α < 1/8 (α = 0 is
//! PRF). For a pair, with `z = x' + y'` and `S = |x'|² + |y'|²`:
//! `ŜM = (1/m) Σ_k (1 − 4α)^{d/2} exp(2α|ω_k|² + B ω_k·z − S/2)`: one projection of z, each
//! term weighted by `|ω_k|²`. Per-feature second moment
//! `(1 − 4α)^d (1 − 8α)^{−d/2} exp(2(1 − 4α)|z|²/(1 − 8α) − S)`; `m·MSE` is it minus `SM²`.
//! **OPRF**: `α* = (1 − 2ρ − √((2ρ + 1)² + 8ρ))/16` minimises that moment at `|z|² = ρd`;
//! ρ is fitted as the dataset's mean of `|z|²/d`.
//! On `(x, y)` this is OPRF; on `(Ax, A⁻¹y)` with the variance-adjusted A it combines OPRF's
//! α with the seed paper's A, in the spirit of the asymmetric "Dense-Exponential Random
//! Features" (NeurIPS 2023): as a DERF member it is SADERF with Ψ = A ([`super::derf`] shows
//! the identity moment for moment). Whether that paper's closed-form Ψ equals Lemma 3.4's A
//! (REFERENCE.md reads it so, up to the variance's n − 1) is not verified here.

use super::{
    BatchedForm, Collapsed, Describe, Estimator, EstimatorError, EstimatorParams, Family, FastSum,
    Fit, FitInput, Projections, Side, exponential_features, exponential_offsets, transform,
    transformed_side,
};
use crate::numerics::heuristics::{AHeuristic, diagonal_a};
use crate::numerics::logspace::signed_log_sum;
use crate::numerics::portable::Libm;

/// GERF with OPRF's α on the pair transformed by a heuristic's diagonal A.
#[derive(Clone, Copy, Debug)]
pub struct Oprf {
    pub heuristic: AHeuristic,
}

/// OPRF on `(x, y)`.
pub const OPRF: Oprf = Oprf {
    heuristic: AHeuristic::Identity,
};
/// OPRF on `(Ax, A⁻¹y)` with the variance-adjusted A.
pub const OPRF_VARIANCE: Oprf = Oprf {
    heuristic: AHeuristic::VarianceAdjusted,
};

/// `ln` of GERF's prefactor of one pair, `(1 − 4α)^{d/2} e^{−S/2}` with `S = |x'|² + |y'|²`
/// (the transformed pair's squared norms): what every GERF-form collapse multiplies its sum by.
pub fn log_prefactor(d: usize, alpha: f64, squared_norms: f64) -> f64 {
    0.5 * d as f64 * (1.0 - 4.0 * alpha).libm_ln() - 0.5 * squared_norms
}

/// OPRF's `α*` for `ρ = |z|²/d` (always ≤ 0).
pub fn optimal_alpha(rho: f64) -> f64 {
    (1.0 - 2.0 * rho - ((2.0 * rho + 1.0).powi(2) + 8.0 * rho).sqrt()) / 16.0
}

impl Describe for Oprf {
    fn id(&self) -> &'static str {
        match self.heuristic {
            AHeuristic::Identity => "oprf",
            _ => "oprf-var",
        }
    }

    fn label(&self) -> &'static str {
        match self.heuristic {
            AHeuristic::Identity => "OPRF (GERF, α*)",
            _ => "OPRF on (Ax, A⁻¹y), variance-adjusted A",
        }
    }

    fn family(&self) -> Family {
        Family::Gerf
    }

    fn colour(&self) -> [u8; 3] {
        match self.heuristic {
            AHeuristic::Identity => [153, 153, 51],
            _ => [68, 170, 153],
        }
    }

    #[cfg(estimator_prose)]
    fn docs(&self) -> super::Docs {
        super::Docs {
            formula: r"\widehat{\mathrm{SM}} = \frac{1}{m} \sum_k {(1 - 4\alpha)}^{d/2} \exp\left(2\alpha|\omega_k|^2 + \sqrt{1 - 4\alpha}\, \omega_k \cdot z - (|x'|^2+|y'|^2)/2\right),\quad \alpha^* = \frac{1 - 2\rho - \sqrt{{(2\rho+1)}^2 + 8\rho}}{16},\quad \rho = \operatorname{mean} |z|^2/d",
            notice: "α* < 0 shrinks the heavy tail of exp(ω·z) by weighing each feature with exp(2α|ω|²): positive and much tighter than PRF",
            source: match self.heuristic {
                AHeuristic::Identity => "Chefs' Random Tables (Likhosherstov et al., NeurIPS 2022)",
                _ => {
                    "Dense-Exponential Random Features (Likhosherstov et al., NeurIPS 2023), simplified asymmetric"
                }
            },
        }
    }

    fn draws_full_omega(&self) -> bool {
        true
    }
}

impl Estimator for Oprf {
    fn fit(&self, input: FitInput<'_>, _params: &EstimatorParams) -> Result<Fit, EstimatorError> {
        let diagonal = diagonal_a(self.heuristic, input.moments);
        let data = input.data;
        let mut z = vec![0.0; data.d];
        let mut total = 0.0;
        for i in 0..data.n {
            transform(data.query(i), data.key(i), &diagonal.a, &mut z);
            total += super::dot(&z, &z);
        }
        let rho = total / (data.n.max(1) * data.d.max(1)) as f64;
        if !rho.is_finite() {
            return Err(EstimatorError::Fit(format!("ρ = {rho} is not finite")));
        }
        Ok(Fit {
            alpha: optimal_alpha(rho),
            ..Fit::diagonal(diagonal.a, diagonal.clamped)
        })
    }

    fn fast_sum(&self, fit: &Fit) -> FastSum {
        FastSum::ScaledExp {
            scale: (1.0 - 4.0 * fit.alpha).sqrt(),
            norm_weight: 2.0 * fit.alpha,
        }
    }

    fn collapse(&self, fit: &Fit, x: &[f64], y: &[f64], z: &mut [f64]) -> Collapsed {
        let squared_norms = transform(x, y, &fit.a, z);
        Collapsed {
            log_prefactor: log_prefactor(x.len(), fit.alpha, squared_norms),
            phase: 0.0,
        }
    }

    fn log_mse(&self, fit: &Fit, x: &[f64], y: &[f64], m: usize) -> Option<f64> {
        let mut z = vec![0.0; x.len()];
        let s = transform(x, y, &fit.a, &mut z);
        let z2 = super::dot(&z, &z);
        let (d, alpha) = (x.len() as f64, fit.alpha);
        let second = d * (1.0 - 4.0 * alpha).libm_ln() - 0.5 * d * (1.0 - 8.0 * alpha).libm_ln()
            + 2.0 * (1.0 - 4.0 * alpha) * z2 / (1.0 - 8.0 * alpha)
            - s;
        let xy = super::dot(x, y);
        let per_feature = signed_log_sum([(false, second), (true, 2.0 * xy)]);
        Some(if per_feature.negative {
            f64::NEG_INFINITY
        } else {
            per_feature.ln_abs - (m as f64).libm_ln()
        })
    }

    fn features(&self, fit: &Fit, u: &[f64], side: Side, omega: &Projections) -> Vec<f64> {
        let w = transformed_side(&fit.a, u, side);
        let alpha = fit.alpha;
        let ln_power = 0.25 * u.len() as f64 * (1.0 - 4.0 * alpha).libm_ln();
        let norms = omega.squared_norms();
        exponential_features(
            &w,
            omega,
            false,
            &|k| ln_power + alpha * norms[k],
            (1.0 - 4.0 * alpha).sqrt(),
        )
    }

    fn batched_form(&self, fit: &Fit, omega: &Projections) -> Option<BatchedForm> {
        Some(gerf_batched_form(&fit.a, fit.alpha, false, omega))
    }
}

/// The GERF map `(1 − 4α)^{d/4} exp(α|ω_k|² + √(1 − 4α) ω_k·w − |w|²/2)` (times the
/// `m^{-1/2}` scale) as a [`BatchedForm`]; shared with the DERF family's diagonal forms.
pub fn gerf_batched_form(
    a: &[f64],
    alpha: f64,
    hyperbolic: bool,
    omega: &Projections,
) -> BatchedForm {
    let ln_power = 0.25 * omega.d() as f64 * (1.0 - 4.0 * alpha).libm_ln();
    let norms = omega.squared_norms();
    BatchedForm::Exponential {
        a: a.to_vec(),
        hyperbolic,
        offsets: exponential_offsets(omega.m(), hyperbolic, &|k| ln_power + alpha * norms[k]),
        projection_scale: (1.0 - 4.0 * alpha).sqrt(),
    }
}
