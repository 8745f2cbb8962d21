//! PRF, CEXP and HCEXP: exponential features of a pair transformed by a real diagonal
//! `A = diag(a)` (seed paper, section 3; REFERENCE.md, "Estimators of SM(x, y)").
//!
//! `ŜM(x, y) = (1/m) · exp(−(|Ax|² + |A^-T y|²)/2) · Σ_k f(ω_k·z)`, `z = Ax + A^-T y`,
//! `f = exp` (positive form, CEXP; PRF `+` when `A = I`) or `f = cosh` (hyperbolic form,
//! HCEXP; PRF `hyp+` when `A = I`). Unbiased because `(Ax)·(A^-T y) = x·y`.
//! MSE (Lemma 3.1): positive `(1/m) e^{|z|²} SM² (1 − e^{−|z|²})`, hyperbolic
//! `(1/2m) e^{|z|²} SM² (1 − e^{−|z|²})²`. A comes from a heuristic ([`AHeuristic`]).

use super::{
    BatchedForm, Bounds, Collapsed, Describe, Estimator, EstimatorError, EstimatorParams, Family,
    FastSum, FeatureForm, Fit, FitInput, Projections, Side, exponential_features,
    exponential_offsets, log_softmax_kernel, log_theoretical_mse_of, transform, transformed_side,
};
use crate::numerics::heuristics::{AHeuristic, diagonal_a};

/// A real diagonal A chosen by a heuristic, with positive or hyperbolic features.
#[derive(Clone, Copy, Debug)]
pub struct RealDiagonal {
    pub id: &'static str,
    pub label: &'static str,
    pub heuristic: AHeuristic,
    pub form: FeatureForm,
    pub colour: [u8; 3],
    pub twin: &'static str,
    pub notice: &'static str,
}

/// Performer's positive random features, `A = I` (Performer, Lemma 1).
pub const PRF_POSITIVE: RealDiagonal = RealDiagonal {
    id: "prf-pos",
    label: "PRF (A = I)",
    heuristic: AHeuristic::Identity,
    form: FeatureForm::Positive,
    colour: [204, 102, 119],
    twin: "prf-hyp",
    notice: "the baseline: with |x + y|² near 25 its MSE is e²⁵/m times SM², and the scatter fans out",
};

/// Performer's hyperbolic positive features, `A = I`: the seed paper's PRF.
pub const PRF_HYPERBOLIC: RealDiagonal = RealDiagonal {
    id: "prf-hyp",
    label: "PRF hyperbolic (A = I)",
    heuristic: AHeuristic::Identity,
    form: FeatureForm::Hyperbolic,
    colour: [213, 94, 0],
    twin: "prf-pos",
    notice: "the seed paper's PRF: the antithetic pair (ω, −ω) helps a little, |z|² = |x + y|² still rules",
};

/// CEXP with the mean-only A.
pub const CEXP_MEAN: RealDiagonal = RealDiagonal {
    id: "cexp-mean",
    label: "CEXP, mean-only A",
    heuristic: AHeuristic::MeanOnly,
    form: FeatureForm::Positive,
    colour: [204, 187, 68],
    twin: "hcexp-mean",
    notice: "matching the means shrinks |z| where means dominate, and explodes where a query mean is near 0",
};

/// CEXP with the variance-adjusted A of Lemma 3.4.
pub const CEXP_VARIANCE: RealDiagonal = RealDiagonal {
    id: "cexp-var",
    label: "CEXP, variance-adjusted A",
    heuristic: AHeuristic::VarianceAdjusted,
    form: FeatureForm::Positive,
    colour: [86, 180, 233],
    twin: "hcexp-var",
    notice: "Lemma 3.4's A balances E|Ax|² against E|A⁻ᵀy|²: the scatter tightens onto the diagonal",
};

/// HCEXP with the mean-only A (seed paper, Figure 1 middle).
pub const HCEXP_MEAN: RealDiagonal = RealDiagonal {
    id: "hcexp-mean",
    label: "HCEXP, mean-only A",
    heuristic: AHeuristic::MeanOnly,
    form: FeatureForm::Hyperbolic,
    colour: [230, 159, 0],
    twin: "cexp-mean",
    notice: "the paper's middle panel: some semblance of a linear relationship, spoilt by magnified variances",
};

/// HCEXP with the variance-adjusted A (seed paper, Figure 1 right).
pub const HCEXP_VARIANCE: RealDiagonal = RealDiagonal {
    id: "hcexp-var",
    label: "HCEXP, variance-adjusted A",
    heuristic: AHeuristic::VarianceAdjusted,
    form: FeatureForm::Hyperbolic,
    colour: [0, 114, 178],
    twin: "cexp-var",
    notice: "the paper's winner: a strong linear relationship for SM below about 2",
};

impl Describe for RealDiagonal {
    fn id(&self) -> &'static str {
        self.id
    }

    fn label(&self) -> &'static str {
        self.label
    }

    fn family(&self) -> Family {
        if self.heuristic == AHeuristic::Identity {
            Family::Prf
        } else {
            Family::Cexp
        }
    }

    fn colour(&self) -> [u8; 3] {
        self.colour
    }

    #[cfg(estimator_prose)]
    fn docs(&self) -> super::Docs {
        let formula = match (self.form, self.heuristic) {
            (FeatureForm::Positive, AHeuristic::Identity) => {
                r"\widehat{\mathrm{SM}} = \frac{1}{m} e^{-(|x|^2+|y|^2)/2} \sum_k \exp(\omega_k \cdot (x + y))"
            }
            (FeatureForm::Hyperbolic, AHeuristic::Identity) => {
                r"\widehat{\mathrm{SM}} = \frac{1}{m} e^{-(|x|^2+|y|^2)/2} \sum_k \cosh(\omega_k \cdot (x + y))"
            }
            (FeatureForm::Positive, AHeuristic::MeanOnly) => {
                r"\widehat{\mathrm{SM}} = \frac{1}{m} e^{-(|Ax|^2+|A^{-\top}y|^2)/2} \sum_k \exp(\omega_k \cdot z),\quad z = Ax + A^{-\top}y,\quad a_i = \sqrt{|\mu_{y,i}| / |\mu_{x,i}|}"
            }
            (FeatureForm::Hyperbolic, AHeuristic::MeanOnly) => {
                r"\widehat{\mathrm{SM}} = \frac{1}{m} e^{-(|Ax|^2+|A^{-\top}y|^2)/2} \sum_k \cosh(\omega_k \cdot z),\quad z = Ax + A^{-\top}y,\quad a_i = \sqrt{|\mu_{y,i}| / |\mu_{x,i}|}"
            }
            (FeatureForm::Positive, AHeuristic::VarianceAdjusted) => {
                r"\widehat{\mathrm{SM}} = \frac{1}{m} e^{-(|Ax|^2+|A^{-\top}y|^2)/2} \sum_k \exp(\omega_k \cdot z),\quad z = Ax + A^{-\top}y,\quad a_i = \left(\frac{\sigma_{y,i}^2 + \mu_{y,i}^2}{\sigma_{x,i}^2 + \mu_{x,i}^2}\right)^{1/4}"
            }
            (FeatureForm::Hyperbolic, AHeuristic::VarianceAdjusted) => {
                r"\widehat{\mathrm{SM}} = \frac{1}{m} e^{-(|Ax|^2+|A^{-\top}y|^2)/2} \sum_k \cosh(\omega_k \cdot z),\quad z = Ax + A^{-\top}y,\quad a_i = \left(\frac{\sigma_{y,i}^2 + \mu_{y,i}^2}{\sigma_{x,i}^2 + \mu_{x,i}^2}\right)^{1/4}"
            }
        };
        let source = match self.heuristic {
            AHeuristic::Identity => "Performer (Choromanski et al. 2021), Lemma 1",
            AHeuristic::MeanOnly => {
                "seed paper section 3; mean-only A from the appendix of Hybrid Random Features"
            }
            AHeuristic::VarianceAdjusted => "seed paper, Lemma 3.4",
        };
        super::Docs {
            formula,
            notice: self.notice,
            source,
        }
    }

    fn twin(&self) -> Option<&'static str> {
        Some(self.twin)
    }

    fn is_hyperbolic(&self) -> bool {
        self.form == FeatureForm::Hyperbolic
    }

    fn bounds(&self) -> Bounds {
        Bounds {
            hyperbolic_real_a: self.form == FeatureForm::Hyperbolic,
        }
    }
}

impl Estimator for RealDiagonal {
    fn fit(&self, input: FitInput<'_>, _params: &EstimatorParams) -> Result<Fit, EstimatorError> {
        let diagonal = diagonal_a(self.heuristic, input.moments);
        Ok(Fit::diagonal(diagonal.a, diagonal.clamped))
    }

    fn fast_sum(&self, _fit: &Fit) -> FastSum {
        match self.form {
            FeatureForm::Positive => FastSum::Exp,
            FeatureForm::Hyperbolic => FastSum::Cosh,
        }
    }

    fn collapse(&self, fit: &Fit, x: &[f64], y: &[f64], z: &mut [f64]) -> Collapsed {
        Collapsed {
            log_prefactor: -0.5 * transform(x, y, &fit.a, z),
            phase: 0.0,
        }
    }

    fn log_mse(&self, fit: &Fit, x: &[f64], y: &[f64], m: usize) -> Option<f64> {
        let mut z = vec![0.0; x.len()];
        transform(x, y, &fit.a, &mut z);
        self.log_mse_collapsed(fit, (x, y), (&z, log_softmax_kernel(x, y)), m)
    }

    fn log_mse_collapsed(
        &self,
        _fit: &Fit,
        (x, _): (&[f64], &[f64]),
        (z, log_true): (&[f64], f64),
        m: usize,
    ) -> Option<f64> {
        let z = &z[..x.len()];
        Some(log_theoretical_mse_of(
            super::dot(z, z),
            log_true,
            self.form,
            m,
        ))
    }

    fn features(&self, fit: &Fit, u: &[f64], side: Side, omega: &Projections) -> Vec<f64> {
        real_diagonal_features(&fit.a, u, side, self.form, omega)
    }

    fn batched_form(&self, fit: &Fit, omega: &Projections) -> Option<BatchedForm> {
        Some(real_diagonal_batched_form(&fit.a, self.form, omega))
    }
}

/// [`real_diagonal_features`] as a [`BatchedForm`].
pub fn real_diagonal_batched_form(
    a: &[f64],
    form: FeatureForm,
    omega: &Projections,
) -> BatchedForm {
    let hyperbolic = form == FeatureForm::Hyperbolic;
    BatchedForm::Exponential {
        a: a.to_vec(),
        hyperbolic,
        offsets: exponential_offsets(omega.m(), hyperbolic, &|_| 0.0),
        projection_scale: 1.0,
    }
}

/// `φ(x) = Ψ_A(x)`, `ψ(y) = Ψ_{A^-T}(y)` with `Ψ_M(u) = m^{-1/2} e^{−|Mu|²/2} [exp(ω_k·Mu)]_k`
/// (hyperbolic: `(2m)^{-1/2}` and both signs). Shared with the optimised A.
pub fn real_diagonal_features(
    a: &[f64],
    u: &[f64],
    side: Side,
    form: FeatureForm,
    omega: &Projections,
) -> Vec<f64> {
    let w = transformed_side(a, u, side);
    exponential_features(&w, omega, form == FeatureForm::Hyperbolic, &|_| 0.0, 1.0)
}
