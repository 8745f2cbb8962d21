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
    /// `ln` of the objective at its start (the variance-adjusted A; the DERF closed form).
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
    /// A dense transform `(Px, P^{−T}y)` (the DERF members, [`super::dense`]); `a` is then all
    /// ones. Always serialised (`None` too): the worker messages are postcard, which is not
    /// self-describing and cannot skip a field; `default` reads a message without it. Boxed:
    /// the fit travels in every scatter task's output, most of them without one.
    #[serde(default)]
    pub dense: Option<Box<DenseTransform>>,
}

/// A dense invertible `d × d` matrix P and `P^{−T}`, both row-major, applied as
/// `(x, y) ↦ (Px, P^{−T}y)` (so `Px · P^{−T}y = x·y`): what the page's data panel draws as a
/// heat map, and what the dense estimators' `collapse` multiplies by (O(d²) per pair).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DenseTransform {
    pub d: usize,
    /// `p[i * d + j] = P_ij`.
    pub p: Vec<f64>,
    /// `p_inv_t[i * d + j] = (P^{−T})_ij`.
    pub p_inv_t: Vec<f64>,
    /// What was added to the diagonal of the queries' and the keys' second-moment matrices
    /// (`mean_i x_i x_iᵀ`, `mean_i y_i y_iᵀ`) to make them invertible (0 when they were).
    pub ridge_queries: f64,
    pub ridge_keys: f64,
}

/// The share of `Σ|P_ij|` off the diagonal of the row-major `d × d` matrix `p` (0 for a
/// diagonal P, the seed paper's A).
pub fn off_diagonal_share(d: usize, p: &[f64]) -> f64 {
    let total: f64 = p.iter().map(|v| v.abs()).sum();
    let diagonal: f64 = (0..d)
        .filter_map(|i| p.get(i * d + i))
        .map(|v| v.abs())
        .sum();
    if total > 0.0 {
        (total - diagonal) / total
    } else {
        0.0
    }
}

impl DenseTransform {
    /// The share of `Σ|P_ij|` off the diagonal ([`off_diagonal_share`]).
    pub fn off_diagonal_share(&self) -> f64 {
        off_diagonal_share(self.d, &self.p)
    }

    /// `Mu` for the row-major `d × d` matrix `m`, written to `out`.
    fn multiply(d: usize, m: &[f64], u: &[f64], out: &mut [f64]) {
        for (o, row) in out.iter_mut().zip(m.chunks_exact(d)) {
            *o = row.iter().zip(u).map(|(a, b)| a * b).sum();
        }
    }

    /// `Px` (`Side::Query`) or `P^{−T}y`.
    pub fn apply(&self, u: &[f64], query: bool) -> Vec<f64> {
        let mut out = vec![0.0; self.d];
        let m = if query { &self.p } else { &self.p_inv_t };
        Self::multiply(self.d, m, u, &mut out);
        out
    }

    /// `z = Px + P^{−T}y` into `z`; returns `|Px|² + |P^{−T}y|²`.
    pub fn transform(&self, x: &[f64], y: &[f64], z: &mut [f64]) -> f64 {
        let (px, qy) = (self.apply(x, true), self.apply(y, false));
        let mut norms = 0.0;
        for ((zi, a), b) in z.iter_mut().zip(&px).zip(&qy) {
            *zi = a + b;
            norms += a * a + b * b;
        }
        norms
    }

    /// `(x, y)` with `Px = u` and `P^{−T}y = v`: `x = P⁻¹u = (P^{−T})ᵀu`, `y = Pᵀv`.
    pub fn pre_image(&self, u: &[f64], v: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let d = self.d;
        let mut x = vec![0.0; d];
        let mut y = vec![0.0; d];
        for i in 0..d {
            for j in 0..d {
                x[j] += self.p_inv_t[i * d + j] * u[i];
                y[j] += self.p[i * d + j] * v[i];
            }
        }
        (x, y)
    }
}

impl Fit {
    /// `A = I` of dimension d, nothing else fitted.
    pub fn identity(d: usize) -> Self {
        Self::diagonal(vec![1.0; d], 0)
    }

    /// `(|x'|², |y'|²)` of the transformed pair: `(Px, P^{−T}y)` with a dense P, else
    /// `(Ax, A⁻¹y)` with the diagonal `a` (a complex A's magnitudes).
    pub fn transformed_squared_norms(&self, x: &[f64], y: &[f64]) -> (f64, f64) {
        let squared = |v: &[f64]| v.iter().map(|u| u * u).sum::<f64>();
        match &self.dense {
            Some(dense) => (
                squared(&dense.apply(x, true)),
                squared(&dense.apply(y, false)),
            ),
            None => x
                .iter()
                .zip(y)
                .zip(&self.a)
                .fold((0.0, 0.0), |(p, q), ((x, y), a)| {
                    (p + (a * x) * (a * x), q + (y / a) * (y / a))
                }),
        }
    }

    /// A real diagonal A.
    pub fn diagonal(a: Vec<f64>, clamped: usize) -> Self {
        Self {
            a,
            clamped,
            theta: 0.0,
            alpha: 0.0,
            optimiser: None,
            dense: None,
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
