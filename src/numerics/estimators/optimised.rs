//! HCEXP with the diagonal A found by optimisation: the seed paper's open question
//! (REFERENCE.md, "A by optimisation"). The relative MSE of a pair is
//! `(cosh|z|² − 1)/m` with `|z|² = Σ_i a_i² x_i² + y_i²/a_i² + 2x_i y_i`; the mean over the
//! dataset's pairs is convex in `ln a`, so the minimiser is unique.
//! [`crate::numerics::optimise_a`] finds it from the variance-adjusted A of Lemma 3.4 (which
//! minimises the mean of `|z|²` instead, ignoring cosh's tail). Estimate and MSE are HCEXP's.

#[cfg(feature = "optimised-a")]
use super::OptimiserReport;
use super::cexp::HCEXP_VARIANCE;
use super::{
    BatchedForm, Bounds, Collapsed, Describe, Estimator, EstimatorError, EstimatorParams, Family,
    FastSum, Fit, FitInput, Projections, Side,
};
#[cfg(feature = "optimised-a")]
use crate::numerics::heuristics::{AHeuristic, diagonal_a};
#[cfg(feature = "optimised-a")]
use crate::numerics::optimise_a::optimised_a;

/// What its fit answers in a build without the feature `optimised-a` (`kernel-worker`): the
/// page sends such a configuration to `full-worker`, so a user should never read this.
pub const NOT_IN_THIS_BUILD: &str =
    "the optimised A is not in this build (feature `optimised-a`): it runs in full-worker";

/// HCEXP with the optimised diagonal A.
#[derive(Clone, Copy, Debug)]
pub struct OptimisedHcexp;

/// The registry's entry.
pub const HCEXP_OPTIMISED: OptimisedHcexp = OptimisedHcexp;

impl Describe for OptimisedHcexp {
    fn id(&self) -> &'static str {
        "hcexp-opt"
    }

    fn label(&self) -> &'static str {
        "HCEXP, optimised A"
    }

    fn family(&self) -> Family {
        Family::Cexp
    }

    fn colour(&self) -> [u8; 3] {
        [17, 119, 51]
    }

    #[cfg(estimator_prose)]
    fn docs(&self) -> super::Docs {
        super::Docs {
            formula: r"\widehat{\mathrm{SM}} = \frac{1}{m} e^{-(|Ax|^2+|A^{-\top}y|^2)/2} \sum_k \cosh(\omega_k \cdot z),\quad A = \operatorname{argmin}_{A \text{ diagonal}} \mathrm{mean}_i \left(\cosh |z_i|^2 - 1\right)",
            notice: "fitted to the dataset's own pairs: it lowers the mean relative MSE that Lemma 3.4 only bounds from above",
            source: "the seed paper's open question, solved by preconditioned L-BFGS (argmin) in ln a",
        }
    }

    fn is_hyperbolic(&self) -> bool {
        true
    }

    fn needs_optimiser(&self) -> bool {
        true
    }

    fn bounds(&self) -> Bounds {
        Bounds {
            hyperbolic_real_a: true,
        }
    }
}

impl Estimator for OptimisedHcexp {
    #[cfg(not(feature = "optimised-a"))]
    fn fit(&self, _input: FitInput<'_>, _params: &EstimatorParams) -> Result<Fit, EstimatorError> {
        Err(EstimatorError::Fit(NOT_IN_THIS_BUILD.into()))
    }

    #[cfg(feature = "optimised-a")]
    fn fit(&self, input: FitInput<'_>, _params: &EstimatorParams) -> Result<Fit, EstimatorError> {
        let start = diagonal_a(AHeuristic::VarianceAdjusted, input.moments);
        let result =
            optimised_a(input.data, &start.a).map_err(|e| EstimatorError::Fit(e.to_string()))?;
        Ok(Fit {
            optimiser: Some(OptimiserReport {
                iterations: result.iterations,
                log_objective_start: result.log_objective_start,
                log_objective_end: result.log_objective_end,
            }),
            ..Fit::diagonal(result.a, result.clamped)
        })
    }

    fn fast_sum(&self, _fit: &Fit) -> FastSum {
        FastSum::Cosh
    }

    // Estimate, MSE and features are HCEXP's with this A.

    fn collapse(&self, fit: &Fit, x: &[f64], y: &[f64], z: &mut [f64]) -> Collapsed {
        HCEXP_VARIANCE.collapse(fit, x, y, z)
    }

    fn log_mse(&self, fit: &Fit, x: &[f64], y: &[f64], m: usize) -> Option<f64> {
        HCEXP_VARIANCE.log_mse(fit, x, y, m)
    }

    fn features(&self, fit: &Fit, u: &[f64], side: Side, omega: &Projections) -> Vec<f64> {
        HCEXP_VARIANCE.features(fit, u, side, omega)
    }

    fn batched_form(&self, fit: &Fit, omega: &Projections) -> Option<BatchedForm> {
        HCEXP_VARIANCE.batched_form(fit, omega)
    }
}
