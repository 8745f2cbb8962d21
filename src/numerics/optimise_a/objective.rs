//! The objective of [`super::optimised_a`]: `L(b) = ln mean_i (cosh s_i − 1)` in `b = ln a`,
//! its gradient, its Hessian's diagonal (the preconditioner) and its penalised extension
//! outside the box `[ln A_MIN, ln A_MAX]`.
//!
//! For HCEXP with `m` features the relative MSE of a pair `(x_i, y_i)` is `(cosh s_i − 1)/m`
//! with `s_i = |A x_i + A⁻¹ y_i|² = Σ_j a_j² x_ij² + y_ij²/a_j² + 2 x_ij y_ij`. In `b = ln a`
//! every `s_i` is convex (a sum of `c₁e^{2b_j} + c₂e^{−2b_j}` terms plus a constant), and
//! `g = cosh − 1` is increasing and convex on `[0, ∞)`, so `F(b) = mean_i g(s_i)` is convex:
//! it has one minimum. `F` overflows f64 as soon as some `s_i > 710` (large norms), so the
//! optimiser minimises `L(b) = ln F(b)` instead, which has the same minimiser:
//! `ln g(s) = s + 2 ln(1 − e^{−s}) − ln 2` (with `expm1`, exact for tiny `s`, `−inf` at 0),
//! combined by log-sum-exp, and
//! `∂L/∂b_j = Σ_i [g'(s_i) / Σ_k g(s_k)] ∂s_i/∂b_j` with `g' = sinh`,
//! `ln sinh s = s + ln(1 − e^{−2s}) − ln 2` and `∂s_i/∂b_j = 2a_j²x_ij² − 2y_ij²/a_j²`
//! `= 2 (a_j x_ij + y_ij/a_j)(a_j x_ij − y_ij/a_j)`. The gradient of `L` is `∇F/F`: relative
//! to the objective.

use std::cell::{Cell, RefCell};
use std::f64::consts::LN_2;

use argmin::core::Error as ArgminError;

use super::MAX_EVALUATIONS;
use crate::numerics::heuristics::{A_MAX, A_MIN};
use crate::numerics::portable::Libm;

/// Weight of the quadratic pull back into the box (in units of `L` per `b²`).
const PENALTY: f64 = 1.0;

/// `ln(cosh s − 1) = s + 2 ln(1 − e^{−s}) − ln 2` for `s ≥ 0`: exact for tiny `s`
/// (`≈ 2 ln s − ln 2`), `−inf` at 0, finite where `cosh s` overflows.
pub(super) fn log_cosh_minus_one(s: f64) -> f64 {
    s + 2.0 * (-(-s).libm_exp_m1()).libm_ln() - LN_2
}

/// `ln sinh s = s + ln(1 − e^{−2s}) − ln 2` for `s ≥ 0` (`−inf` at 0).
pub(super) fn log_sinh(s: f64) -> f64 {
    s + (-(-2.0 * s).libm_exp_m1()).libm_ln() - LN_2
}

/// The lowest objective evaluated so far and its (in-box) point `b`.
pub(super) struct Best {
    pub(super) log_objective: f64,
    pub(super) b: Vec<f64>,
}

/// The last penalised evaluation, so that a cost and a gradient at the same point (as argmin
/// asks for them) cost one pass over the data.
struct Cached {
    b: Vec<f64>,
    value: f64,
    gradient: Vec<f64>,
}

/// `L(b)` over the first `n` pairs of row-major `x`, `y`, and its penalised box extension.
pub(super) struct Objective<'a> {
    pub(super) d: usize,
    n: usize,
    x: &'a [f64],
    y: &'a [f64],
    lo: f64,
    hi: f64,
    pub(super) best: RefCell<Best>,
    cache: RefCell<Option<Cached>>,
    pub(super) evaluations: Cell<usize>,
}

impl<'a> Objective<'a> {
    pub(super) fn new(d: usize, n: usize, x: &'a [f64], y: &'a [f64]) -> Self {
        Self {
            d,
            n,
            x,
            y,
            lo: A_MIN.libm_ln(),
            hi: A_MAX.libm_ln(),
            best: RefCell::new(Best {
                log_objective: f64::INFINITY,
                b: Vec::new(),
            }),
            cache: RefCell::new(None),
            evaluations: Cell::new(0),
        }
    }

    /// `L(b)` and `∇L(b)` at an in-box `b`; `None` when some `s_i` or the gradient is not
    /// finite. `L = −inf` (every `s_i = 0`: an exact fit) comes with a zero gradient. Records
    /// the point when it beats the best so far.
    pub(super) fn log_objective(&self, b: &[f64]) -> Option<(f64, Vec<f64>)> {
        let d = self.d;
        self.evaluations
            .set(self.evaluations.get().saturating_add(1));
        let a: Vec<f64> = b.iter().map(|v| v.libm_exp()).collect();
        let inv: Vec<f64> = b.iter().map(|v| (-v).libm_exp()).collect();
        let mut s = Vec::with_capacity(self.n);
        for (xi, yi) in self.x.chunks_exact(d).zip(self.y.chunks_exact(d)) {
            let si: f64 = xi
                .iter()
                .zip(yi)
                .zip(a.iter().zip(&inv))
                .map(|((xv, yv), (av, iv))| {
                    let u = av * xv + yv * iv;
                    u * u
                })
                .sum();
            if !si.is_finite() {
                return None;
            }
            s.push(si);
        }
        let logs: Vec<f64> = s.iter().map(|&si| log_cosh_minus_one(si)).collect();
        let max = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut gradient = vec![0.0; d];
        let value = if max == f64::NEG_INFINITY {
            f64::NEG_INFINITY
        } else {
            let log_sum = max
                + logs
                    .iter()
                    .map(|l| (l - max).libm_exp())
                    .sum::<f64>()
                    .libm_ln();
            for ((xi, yi), &si) in self.x.chunks_exact(d).zip(self.y.chunks_exact(d)).zip(&s) {
                let weight = (log_sinh(si) - log_sum).libm_exp();
                if weight == 0.0 {
                    continue;
                }
                for ((gj, (xv, yv)), (av, iv)) in gradient
                    .iter_mut()
                    .zip(xi.iter().zip(yi))
                    .zip(a.iter().zip(&inv))
                {
                    let ax = av * xv;
                    let ya = yv * iv;
                    *gj += weight * 2.0 * (ax + ya) * (ax - ya);
                }
            }
            log_sum - (self.n as f64).libm_ln()
        };
        if value.is_nan() || value == f64::INFINITY || gradient.iter().any(|g| !g.is_finite()) {
            return None;
        }
        let mut best = self.best.borrow_mut();
        if value < best.log_objective {
            best.log_objective = value;
            best.b = b.to_vec();
        }
        Some((value, gradient))
    }

    /// The diagonal of the Hessian of `L` at an in-box `b`:
    /// `Σ_i [cosh(s_i)(∂_j s_i)² + sinh(s_i) ∂²_j s_i] / Σ_k g(s_k) − (∂_j L)²` with
    /// `∂_j s = 2uv`, `∂²_j s = 2(u² + v²)`, `u = a_j x_j + y_j/a_j`, `v = a_j x_j − y_j/a_j`.
    /// Zeros where it cannot be computed (the caller floors it).
    pub(super) fn hessian_diagonal(&self, b: &[f64]) -> Vec<f64> {
        let d = self.d;
        let mut diag = vec![0.0; d];
        let Some((_, gradient)) = self.log_objective(b) else {
            return diag;
        };
        let a: Vec<f64> = b.iter().map(|v| v.libm_exp()).collect();
        let inv: Vec<f64> = b.iter().map(|v| (-v).libm_exp()).collect();
        let pairs = self.x.chunks_exact(d).zip(self.y.chunks_exact(d));
        let s: Vec<f64> = pairs
            .clone()
            .map(|(xi, yi)| {
                xi.iter()
                    .zip(yi)
                    .zip(a.iter().zip(&inv))
                    .map(|((xv, yv), (av, iv))| (av * xv + yv * iv).powi(2))
                    .sum()
            })
            .collect();
        let logs: Vec<f64> = s.iter().map(|&si| log_cosh_minus_one(si)).collect();
        let max = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !max.is_finite() {
            return diag;
        }
        let log_sum = max
            + logs
                .iter()
                .map(|l| (l - max).libm_exp())
                .sum::<f64>()
                .libm_ln();
        for ((xi, yi), &si) in pairs.zip(&s) {
            let w2 = (si + (-2.0 * si).libm_exp().libm_ln_1p() - LN_2 - log_sum).libm_exp();
            let w1 = (log_sinh(si) - log_sum).libm_exp();
            for ((hj, (xv, yv)), (av, iv)) in diag
                .iter_mut()
                .zip(xi.iter().zip(yi))
                .zip(a.iter().zip(&inv))
            {
                let u = av * xv + yv * iv;
                let v = av * xv - yv * iv;
                *hj += w2 * 4.0 * u * u * v * v + w1 * 2.0 * (u * u + v * v);
            }
        }
        for (hj, gj) in diag.iter_mut().zip(&gradient) {
            *hj -= gj * gj;
            if !hj.is_finite() {
                *hj = 0.0;
            }
        }
        diag
    }

    /// The penalised objective argmin minimises: `L(clamp b) + ½κ|b − clamp b|²`, with the
    /// gradient `∂L` inside the box and `κ(b_j − clamp b_j)` outside. Errors (which stop the
    /// run gracefully) for a non-finite `b` or a non-finite `L`.
    pub(super) fn penalised(&self, b: &[f64]) -> Result<(f64, Vec<f64>), ArgminError> {
        if let Some(c) = self.cache.borrow().as_ref()
            && c.b == b
        {
            return Ok((c.value, c.gradient.clone()));
        }
        if self.evaluations.get() >= MAX_EVALUATIONS {
            return Err(ArgminError::msg("evaluation budget used up"));
        }
        if b.len() != self.d || b.iter().any(|v| !v.is_finite()) {
            return Err(ArgminError::msg("non-finite or misshapen parameter"));
        }
        let p: Vec<f64> = b.iter().map(|v| v.clamp(self.lo, self.hi)).collect();
        let (log_objective, grad) = self
            .log_objective(&p)
            .ok_or_else(|| ArgminError::msg("the objective is not finite here"))?;
        if !log_objective.is_finite() {
            return Err(ArgminError::msg("exact fit: the objective is −inf here"));
        }
        let mut value = log_objective;
        let mut gradient = grad;
        for ((gj, bj), pj) in gradient.iter_mut().zip(b).zip(&p) {
            if bj != pj {
                value += 0.5 * PENALTY * (bj - pj) * (bj - pj);
                *gj = PENALTY * (bj - pj);
            }
        }
        *self.cache.borrow_mut() = Some(Cached {
            b: b.to_vec(),
            value,
            gradient: gradient.clone(),
        });
        Ok((value, gradient))
    }
}
