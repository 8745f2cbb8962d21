//! Trigonometric random Fourier features (Rahimi and Recht; seed 002's RFA):
//! `φ(u) = m^{-1/2} e^{|u|²/2} [sin(ω_k·u), cos(ω_k·u)]_k`, so that
//! `ŜM(x, y) = (1/m) e^{(|x|²+|y|²)/2} Σ_k cos(ω_k·(x − y))`: one projection of `z = x − y`.
//! Unbiased (`E cos(ω·w) = e^{−|w|²/2}`), and **signed**: the estimate goes negative when the
//! cosines' mean does, which at the seed paper's norms is common.
//! MSE (REFERENCE.md, checked by Monte Carlo): `(1/2m) e^{|x−y|²} SM² (1 − e^{−|x−y|²})²`.

use super::{
    BatchedForm, Collapsed, Describe, Estimator, EstimatorError, EstimatorParams, Family, FastSum,
    Fit, FitInput, Projections, Side, dot,
};
use crate::numerics::portable::Libm;
use crate::numerics::theory::log_trigonometric_mse;

/// Random Fourier features.
#[derive(Clone, Copy, Debug)]
pub struct RandomFourier;

/// The registry's entry.
pub const RFF: RandomFourier = RandomFourier;

impl Describe for RandomFourier {
    fn id(&self) -> &'static str {
        "rff"
    }

    fn label(&self) -> &'static str {
        "RFF (trigonometric)"
    }

    fn family(&self) -> Family {
        Family::Trigonometric
    }

    fn colour(&self) -> [u8; 3] {
        [136, 34, 85]
    }

    #[cfg(estimator_prose)]
    fn docs(&self) -> super::Docs {
        super::Docs {
            formula: r"\widehat{\mathrm{SM}} = \frac{1}{m} e^{(|x|^2+|y|^2)/2} \sum_k \cos(\omega_k \cdot (x - y))",
            notice: "unbiased but signed: its error grows with |x − y|², and many estimates fall below zero",
            source: "Rahimi and Recht (2007); Random Feature Attention (seed 002)",
        }
    }

    fn features_per_projection(&self) -> usize {
        2
    }
}

impl Estimator for RandomFourier {
    fn fit(&self, input: FitInput<'_>, _params: &EstimatorParams) -> Result<Fit, EstimatorError> {
        Ok(Fit::identity(input.data.d))
    }

    fn fast_sum(&self, _fit: &Fit) -> FastSum {
        FastSum::Cos
    }

    fn collapse(&self, _fit: &Fit, x: &[f64], y: &[f64], z: &mut [f64]) -> Collapsed {
        for ((zi, xi), yi) in z.iter_mut().zip(x).zip(y) {
            *zi = xi - yi;
        }
        Collapsed {
            log_prefactor: 0.5 * (dot(x, x) + dot(y, y)),
            phase: 0.0,
        }
    }

    fn log_mse(&self, _fit: &Fit, x: &[f64], y: &[f64], m: usize) -> Option<f64> {
        Some(log_trigonometric_mse(x, y, m))
    }

    fn features(&self, _fit: &Fit, u: &[f64], _side: Side, omega: &Projections) -> Vec<f64> {
        let m = omega.m();
        let mut t = vec![0.0; m];
        omega.project(u, &mut t);
        let scale = (0.5 * dot(u, u) - 0.5 * (m as f64).libm_ln()).libm_exp();
        let mut out: Vec<f64> = t.iter().map(|t| scale * t.libm_sin()).collect();
        out.extend(t.iter().map(|t| scale * t.libm_cos()));
        out
    }

    fn batched_form(&self, _fit: &Fit, _omega: &Projections) -> Option<BatchedForm> {
        Some(BatchedForm::Trigonometric)
    }
}
