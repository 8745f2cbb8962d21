//! The numerical fit of `derf-fit` and `hderf-fit`: P and α minimising the dataset's mean
//! relative MSE under the exact second moment, by argmin's L-BFGS (More–Thuente line search)
//! with [`crate::numerics::optimise_a`]'s tolerances, caps and rounds, from the closed form.
//!
//! **Objective.** For a pair with `s = |z|² = |Px + P^{−T}y|²`, `1 − 8α = e^γ` and
//! `κ = 1/(1 − 8α) = e^{−γ}`, the second moment over `SM²` (dense.rs) is `e^{L}` with
//! `L = c(γ) + κs` (positive) or `L = c(γ) + κs + ln((1 + e^{−(1+κ)s})/2)` (hyperbolic),
//! `c(γ) = d ln((1 + e^γ)/2) − (d/2)γ`, since `2(1 − 4α)/(1 − 8α) − 1 = κ` and
//! `S + 2x·y = s`. `L ≥ 0` (Jensen), and the relative MSE of m features is
//! `(e^L − 1)/m`. The fit minimises `ln F`, `F = mean_i expm1(L_i)` over the first
//! [`MAX_PAIRS`] pairs (log-sum-exp shifted when some `L_i` is large, so nothing overflows).
//!
//! **Parameters.** Only `G = PᵀP` matters (dense.rs), so P is parametrised by the upper
//! triangular `U` with `G = UᵀU` (G's Cholesky factor, unique with a positive diagonal: every
//! SPD G once, `d(d+1)/2` numbers), its diagonal as `ln U_jj`, and α by `γ = ln(1 − 8α)`
//! (every α < 1/8). The fitted member reports the symmetric `P = G^{1/2}`, which gives the
//! same estimator (`U = QP` with Q orthogonal).
//!
//! **Gradient** (analytic; a test checks it against central differences). With
//! `v = U^{−T}y`, `w = U⁻¹v = G⁻¹y`: `s = xᵀGx + yᵀG⁻¹y + 2x·y`,
//! `ds = tr((xxᵀ − wwᵀ) dG)`, `dG = dUᵀU + UᵀdU`, so `∂s/∂U = 2(Ux xᵀ − v wᵀ)` (upper part),
//! `∂L/∂s = κ` or `(κ − e)/(1 + e)` with `e = e^{−(1+κ)s}`, `∂L/∂γ = c'(γ) − κs` or
//! `c'(γ) − κs/(1 + e)`, `c' = d e^γ/(1 + e^γ) − d/2`; `∇ ln F = Σ_i e^{L_i} ∇L_i / Σ_i expm1(L_i)`.
//!
//! **Safety.** Every evaluation records the best point; the result is never worse than the
//! closed form on the fitted pairs (the report's start and end objectives say by how much).
//! Non-finite values stop the run gracefully; at most [`MAX_ITERATIONS`] iterations and
//! [`MAX_EVALUATIONS`] evaluations of `O(MAX_PAIRS · d²)` each.

use std::cell::{Cell, RefCell};
use std::f64::consts::LN_2;

use argmin::core::{
    CostFunction, Error as ArgminError, Executor, Gradient, State, TerminationReason,
    TerminationStatus,
};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::quasinewton::LBFGS;
use nalgebra::DMatrix;

use super::closed_form::symmetric_root;
use crate::numerics::dataset::Dataset;
use crate::numerics::estimators::{
    EstimatorError, FeatureForm, Fit, OptimiserReport, log_softmax_kernel,
};
use crate::numerics::logspace::signed_log_sum;
use crate::numerics::optimise_a::{
    COST_TOLERANCE, GRADIENT_TOLERANCE, MAX_EVALUATIONS, MAX_ITERATIONS, ROUND_ITERATIONS,
};
use crate::numerics::portable::Libm;

/// Most pairs the objective uses (the first ones): one evaluation costs `O(MAX_PAIRS · d²)`,
/// a quarter of `optimise_a`'s pairs for d² instead of d work per pair.
pub const MAX_PAIRS: usize = 512;
/// Curvature pairs L-BFGS remembers (as `optimise_a`).
const HISTORY: usize = 10;

/// The lowest objective evaluated so far and its parameters.
pub(super) struct Best {
    pub(super) log_objective: f64,
    pub(super) theta: Vec<f64>,
}

/// The last evaluation `(θ, ln F, ∇ ln F)`: argmin asks for a cost and a gradient at the same
/// point, one pass over the data.
type Cached = (Vec<f64>, f64, Vec<f64>);

/// `ln F(θ)` over the first `n` pairs, θ = `[γ, U's upper triangle row by row]`.
pub(super) struct Objective<'a> {
    d: usize,
    n: usize,
    x: &'a [f64],
    y: &'a [f64],
    form: FeatureForm,
    pub(super) best: RefCell<Best>,
    cache: RefCell<Option<Cached>>,
    evaluations: Cell<usize>,
}

impl<'a> Objective<'a> {
    pub(super) fn new(data: &'a Dataset, form: FeatureForm) -> Self {
        let (d, n) = (data.d, data.n.min(MAX_PAIRS));
        Self {
            d,
            n,
            x: &data.x[..n * d],
            y: &data.y[..n * d],
            form,
            best: RefCell::new(Best {
                log_objective: f64::INFINITY,
                theta: Vec::new(),
            }),
            cache: RefCell::new(None),
            evaluations: Cell::new(0),
        }
    }

    /// Parameters: 1 + d(d+1)/2.
    pub(super) fn len(&self) -> usize {
        1 + self.d * (self.d + 1) / 2
    }

    /// `(γ, U)` from θ, U row-major `d × d` (zero below the diagonal).
    pub(super) fn unpack(&self, theta: &[f64]) -> (f64, Vec<f64>) {
        let d = self.d;
        let mut u = vec![0.0; d * d];
        let mut k = 1;
        for i in 0..d {
            for j in i..d {
                u[i * d + j] = if i == j {
                    theta[k].libm_exp()
                } else {
                    theta[k]
                };
                k += 1;
            }
        }
        (theta[0], u)
    }

    /// θ from `γ` and an upper triangular U with a positive diagonal.
    pub(super) fn pack(&self, gamma: f64, u: &[f64]) -> Vec<f64> {
        let d = self.d;
        let mut theta = vec![gamma];
        for i in 0..d {
            for j in i..d {
                let v = u[i * d + j];
                theta.push(if i == j { v.libm_ln() } else { v });
            }
        }
        theta
    }

    /// `ln F(θ)` and its gradient; `None` where something is not finite (or misshapen). Records
    /// the point when it beats the best so far.
    pub(super) fn evaluate(&self, theta: &[f64]) -> Option<(f64, Vec<f64>)> {
        let d = self.d;
        if theta.len() != self.len() || theta.iter().any(|v| !v.is_finite()) {
            return None;
        }
        self.evaluations
            .set(self.evaluations.get().saturating_add(1));
        let (gamma, u) = self.unpack(theta);
        let (kappa, e_gamma) = ((-gamma).libm_exp(), gamma.libm_exp());
        let c = d as f64 * (0.5 * (1.0 + e_gamma)).libm_ln() - 0.5 * d as f64 * gamma;
        let c_prime = d as f64 * e_gamma / (1.0 + e_gamma) - 0.5 * d as f64;
        // Per pair: L_i, ∂L_i/∂s_i, ∂L_i/∂γ, and Ux, v = U^{−T}y, w = U⁻¹v.
        let mut logs = Vec::with_capacity(self.n);
        let mut slopes = Vec::with_capacity(self.n);
        let mut vectors = Vec::with_capacity(3 * self.n * d);
        for (x, y) in self.x.chunks_exact(d).zip(self.y.chunks_exact(d)) {
            let start = vectors.len();
            vectors.resize(start + 3 * d, 0.0);
            let (ux, rest) = vectors[start..].split_at_mut(d);
            let (v, w) = rest.split_at_mut(d);
            for i in 0..d {
                ux[i] = (i..d).map(|j| u[i * d + j] * x[j]).sum();
                v[i] = (y[i] - (0..i).map(|j| u[j * d + i] * v[j]).sum::<f64>()) / u[i * d + i];
            }
            for i in (0..d).rev() {
                w[i] = (v[i] - (i + 1..d).map(|j| u[i * d + j] * w[j]).sum::<f64>()) / u[i * d + i];
            }
            let s: f64 = ux
                .iter()
                .zip(v.iter())
                .map(|(a, b)| (a + b) * (a + b))
                .sum();
            let (l, ds, dgamma) = match self.form {
                FeatureForm::Positive => (c + kappa * s, kappa, c_prime - kappa * s),
                FeatureForm::Hyperbolic => {
                    let e = (-(1.0 + kappa) * s).libm_exp();
                    (
                        c + kappa * s + e.libm_ln_1p() - LN_2,
                        (kappa - e) / (1.0 + e),
                        c_prime - kappa * s / (1.0 + e),
                    )
                }
            };
            if !(s.is_finite() && l.is_finite()) {
                return None;
            }
            logs.push(l.max(0.0));
            slopes.push((ds, dgamma));
        }
        let max = logs.iter().copied().fold(0.0, f64::max);
        // Σ expm1(L_i), shifted by e^{−max} when some L_i is large.
        let shift = if max < 700.0 { 0.0 } else { max };
        let denominator: f64 = logs
            .iter()
            .map(|&l| {
                if shift == 0.0 {
                    l.libm_exp_m1()
                } else {
                    (l - shift).libm_exp() - (-shift).libm_exp()
                }
            })
            .sum();
        let mut gradient = vec![0.0; self.len()];
        if denominator <= 0.0 {
            // Every L_i = 0: an exact fit, nothing is lower.
            return Some((f64::NEG_INFINITY, gradient));
        }
        let value = shift + denominator.libm_ln() - (self.n as f64).libm_ln();
        for (p, (x, &(ds, dgamma))) in self.x.chunks_exact(d).zip(&slopes).enumerate() {
            let weight = (logs[p] - shift).libm_exp() / denominator;
            gradient[0] += weight * dgamma;
            let vectors = &vectors[3 * d * p..3 * d * (p + 1)];
            let (ux, v, w) = (&vectors[..d], &vectors[d..2 * d], &vectors[2 * d..]);
            let mut k = 1;
            for i in 0..d {
                for j in i..d {
                    let mut g = weight * ds * 2.0 * (ux[i] * x[j] - v[i] * w[j]);
                    if i == j {
                        g *= u[i * d + i];
                    }
                    gradient[k] += g;
                    k += 1;
                }
            }
        }
        if value.is_nan() || gradient.iter().any(|g| !g.is_finite()) {
            return None;
        }
        let mut best = self.best.borrow_mut();
        if value < best.log_objective {
            best.log_objective = value;
            best.theta = theta.to_vec();
        }
        Some((value, gradient))
    }

    /// What argmin calls: [`Objective::evaluate`] cached for a cost and a gradient at the
    /// same point, within the evaluation budget, an error where it is not finite.
    fn cached(&self, theta: &[f64]) -> Result<(f64, Vec<f64>), ArgminError> {
        if let Some((at, value, gradient)) = self.cache.borrow().as_ref()
            && at == theta
        {
            return Ok((*value, gradient.clone()));
        }
        if self.evaluations.get() >= MAX_EVALUATIONS {
            return Err(ArgminError::msg("evaluation budget used up"));
        }
        let (value, gradient) = self
            .evaluate(theta)
            .ok_or_else(|| ArgminError::msg("the objective is not finite here"))?;
        if !value.is_finite() {
            return Err(ArgminError::msg("exact fit: the objective is −inf here"));
        }
        *self.cache.borrow_mut() = Some((theta.to_vec(), value, gradient.clone()));
        Ok((value, gradient))
    }
}

impl CostFunction for &Objective<'_> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, theta: &Self::Param) -> Result<Self::Output, ArgminError> {
        self.cached(theta).map(|(value, _)| value)
    }
}

impl Gradient for &Objective<'_> {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;

    fn gradient(&self, theta: &Self::Param) -> Result<Self::Gradient, ArgminError> {
        self.cached(theta).map(|(_, gradient)| gradient)
    }
}

/// L-BFGS in rounds of [`ROUND_ITERATIONS`] from `theta`, each from the best point so far,
/// until one converges or [`MAX_ITERATIONS`] in all; returns the iterations taken.
fn minimise(objective: &Objective<'_>, theta: Vec<f64>) -> usize {
    let mut total: u64 = 0;
    let mut from = theta;
    while total < MAX_ITERATIONS {
        let cap = ROUND_ITERATIONS.min(MAX_ITERATIONS - total);
        let round = (|| {
            let solver = LBFGS::new(MoreThuenteLineSearch::new(), HISTORY)
                .with_tolerance_grad(GRADIENT_TOLERANCE)?
                .with_tolerance_cost(COST_TOLERANCE)?;
            let result = Executor::new(objective, solver)
                .configure(|state| state.param(from.clone()).max_iters(cap))
                .timer(false)
                .ctrlc(false)
                .run()?;
            let state = result.state();
            Ok::<_, ArgminError>((state.get_iter(), state.get_termination_status().clone()))
        })();
        let Ok((iterations, status)) = round else {
            break;
        };
        total += iterations;
        if status != TerminationStatus::Terminated(TerminationReason::MaxItersReached) {
            break;
        }
        from = objective.best.borrow().theta.clone();
        if from.len() != objective.len() {
            break;
        }
    }
    usize::try_from(total).unwrap_or(usize::MAX)
}

/// `ln` of the mean over the first [`MAX_PAIRS`] pairs of the relative MSE of one projection,
/// `(E[h²] − SM²)/SM²`, for a member's fit: the fit's objective, through `log_mse`'s formula.
pub fn log_mean_relative_mse(data: &Dataset, form: FeatureForm, fit: &Fit) -> f64 {
    let member = super::DenseDerf { fitted: true, form };
    let n = data.n.min(MAX_PAIRS);
    let logs: Vec<(bool, f64)> = (0..n)
        .map(|i| {
            let (x, y) = (data.query(i), data.key(i));
            let log_mse = crate::numerics::estimators::Estimator::log_mse(&member, fit, x, y, 1)
                .unwrap_or(f64::NAN);
            (false, log_mse - 2.0 * log_softmax_kernel(x, y))
        })
        .collect();
    signed_log_sum(logs).ln_abs - (n.max(1) as f64).libm_ln()
}

/// The fitted member: from the closed form `start` (its P and α), the best `(U, γ)` found,
/// reported as the symmetric `P = (UᵀU)^{1/2}` with `α = (1 − e^γ)/8`.
pub fn fit(data: &Dataset, form: FeatureForm, start: Fit) -> Result<Fit, EstimatorError> {
    let Some(dense) = start.dense.as_ref() else {
        return Err(EstimatorError::Fit("the closed form has no dense P".into()));
    };
    let d = data.d;
    let objective = Objective::new(data, form);
    let p = DMatrix::from_row_slice(d, d, &dense.p);
    let Some(cholesky) = (p.transpose() * &p).cholesky() else {
        return Err(EstimatorError::Fit(
            "the closed form's PᵀP is not positive definite".into(),
        ));
    };
    let upper = cholesky.l().transpose();
    let u: Vec<f64> = (0..d)
        .flat_map(|i| (0..d).map(move |j| (i, j)))
        .map(|(i, j)| upper[(i, j)])
        .collect();
    let theta0 = objective.pack((1.0 - 8.0 * start.alpha).libm_ln(), &u);
    let Some((log_objective_start, _)) = objective.evaluate(&theta0) else {
        return Err(EstimatorError::Fit(
            "the relative MSE overflows at the closed form: the data are too large to fit P".into(),
        ));
    };
    let report = |iterations, end| OptimiserReport {
        iterations,
        log_objective_start,
        log_objective_end: end,
    };
    let unchanged = |iterations| {
        Ok(Fit {
            optimiser: Some(report(iterations, log_objective_start)),
            ..start.clone()
        })
    };
    if log_objective_start == f64::NEG_INFINITY {
        return unchanged(0);
    }
    let iterations = minimise(&objective, theta0);
    let parameters = objective.len();
    let best = objective.best.replace(Best {
        log_objective: f64::INFINITY,
        theta: Vec::new(),
    });
    if best.log_objective >= log_objective_start || best.theta.len() != parameters {
        return unchanged(iterations);
    }
    let (gamma, u) = objective.unpack(&best.theta);
    let u = DMatrix::from_row_slice(d, d, &u);
    let (transform, clamped) = symmetric_root(
        &(u.transpose() * &u),
        (dense.ridge_queries, dense.ridge_keys),
    );
    let fitted = Fit {
        alpha: (1.0 - gamma.libm_exp()) / 8.0,
        clamped,
        dense: Some(Box::new(transform)),
        ..start.clone()
    };
    // The reported P (clamped, symmetric) evaluated afresh: never worse than the start.
    let end = log_mean_relative_mse(data, form, &fitted);
    if end.is_nan() || end >= log_objective_start {
        return unchanged(iterations);
    }
    Ok(Fit {
        optimiser: Some(report(iterations, end)),
        ..fitted
    })
}
