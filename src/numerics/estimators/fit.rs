//! What an estimator fits to one dataset ([`Fit`]: a diagonal A, an angle θ, GERF's α, an
//! optimiser's report), from what ([`FitInput`], and the page's [`EstimatorParams`]), and its
//! MSE formula swept against a parameter ([`ParameterSweep`]).

use serde::{Deserialize, Serialize};

use crate::numerics::dataset::{Dataset, SampleMoments};
use crate::numerics::heuristics::AHeuristic;

/// The page's parameters that some estimators read when they fit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct EstimatorParams {
    /// The angle θ of the complex A `e^{iθ}·diag(a)`, from 0 (real A) to π/2.
    pub theta: f64,
    /// How the complex A's magnitudes `a` are chosen.
    pub complex_a: AHeuristic,
}

impl Default for EstimatorParams {
    fn default() -> Self {
        Self {
            theta: std::f64::consts::FRAC_PI_4,
            complex_a: AHeuristic::Identity,
        }
    }
}

/// What an optimiser of A reports (shown in the results table).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct OptimiserReport {
    pub iterations: usize,
    /// `ln` of the objective (mean relative MSE · m) at the variance-adjusted start.
    pub log_objective_start: f64,
    /// `ln` of the objective at the optimum.
    pub log_objective_end: f64,
}

/// The parameters an estimator fitted to one dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    /// The diagonal of A (its magnitudes for a complex A; ones where A = I).
    pub a: Vec<f64>,
    /// Entries of `a` that had to be clamped into `[A_MIN, A_MAX]`.
    pub clamped: usize,
    /// The angle of a complex A (0 for a real one).
    pub theta: f64,
    /// GERF's α (0 for the others).
    pub alpha: f64,
    /// Present when A came from an optimiser.
    pub optimiser: Option<OptimiserReport>,
}

impl Fit {
    /// `A = I` of dimension d, nothing else fitted.
    pub fn identity(d: usize) -> Self {
        Self::diagonal(vec![1.0; d], 0)
    }

    /// A real diagonal A.
    pub fn diagonal(a: Vec<f64>, clamped: usize) -> Self {
        Self {
            a,
            clamped,
            theta: 0.0,
            alpha: 0.0,
            optimiser: None,
        }
    }
}

/// An estimator's MSE formula against one of its parameters, averaged over a dataset's pairs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParameterSweep {
    /// The parameter's name and URL key, for the chart (`θ`, `theta`).
    pub parameter: String,
    pub key: String,
    /// The parameter's values, increasing.
    pub values: Vec<f64>,
    /// `ln` of the mean over the pairs of the MSE formula at each value, for `m = 1` (the MSE
    /// of m features is this divided by m).
    pub log_mean_mse_one_feature: Vec<f64>,
    /// `ln` of the median over the pairs, for `m = 1`: the typical pair, where the mean is
    /// ruled by a few pairs with huge MSE.
    pub log_median_mse_one_feature: Vec<f64>,
    /// The value in use.
    pub current: f64,
}

/// The data an estimator fits to: a dataset and its component-wise moments.
#[derive(Clone, Copy, Debug)]
pub struct FitInput<'a> {
    pub data: &'a Dataset,
    pub moments: &'a SampleMoments,
}
