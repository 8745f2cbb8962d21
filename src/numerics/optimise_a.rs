//! "A by optimisation": the diagonal `A = diag(a)` that minimises HCEXP's mean relative MSE over
//! a dataset, the open question of the seed paper (it stops at the heuristics of Lemma 3.4).
//!
//! The objective `L(b) = ln mean_i (cosh s_i − 1)`, `s_i = |A x_i + A⁻¹ y_i|²`, is convex in
//! `b = ln a`, so it has one minimum (`optimise_a/objective.rs` derives it, its gradient and its
//! Hessian's diagonal in the log domain, finite where `cosh` overflows). [`optimised_a`] finds
//! it with argmin's L-BFGS and a More–Thuente line search, diagonally preconditioned and
//! restarted in rounds (`optimise_a/lbfgs.rs`); no clock is read on any path (`.timer(false)`,
//! no timeout). Why argmin, why the preconditioner and the rounds, and the measurements behind
//! the tolerances and caps: `docs/optimised-a-tuning.md`.
//!
//! # Bounds, safety, cost
//!
//! - `b` is kept in `[ln A_MIN, ln A_MAX]` inside the objective: a trial point `b` is
//!   evaluated at its clamp `p = clamp(b)` plus a quadratic penalty `½|b − p|²`, whose gradient
//!   (`b_j − p_j` outside the box) pulls the iterate back. Every local minimum of this function
//!   lies in the box, where it equals `L`, so its one minimum is the box-constrained minimiser
//!   of `L`; only in-box points are ever evaluated, so `a_j²` stays in `[1e-6, 1e6]`, and each
//!   round restarts from an in-box point.
//! - Every evaluation records its clamped point and `L`; the result is the best point evaluated
//!   (the start included), so the result is never worse than the start. If the optimiser fails
//!   outright, that is the start itself with `log_objective_end = log_objective_start`.
//! - At most [`MAX_ITERATIONS`] L-BFGS iterations in all rounds, at most [`MAX_EVALUATIONS`]
//!   evaluations (a guard against a line search that would not end; runs use well under a
//!   tenth), and at most [`MAX_PAIRS`] pairs (the first ones, a deterministic subset): one
//!   evaluation costs `O(MAX_PAIRS · d)` whatever `n` is. `log_objective_start` and
//!   `log_objective_end` are over those pairs too.
//! - Non-finite values (NaN from a degenerate L-BFGS update, overflow of `s` for absurd data,
//!   `L = −inf` at an exact fit) make the cost function return an error, which argmin turns
//!   into a graceful stop; nothing here unwraps anything that depends on the data.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::dataset::Dataset;
use super::heuristics::{A_MAX, A_MIN};
use crate::numerics::portable::Libm;

mod lbfgs;
mod objective;
#[cfg(test)]
mod tests;

use lbfgs::minimise;
use objective::Objective;

/// Most pairs the objective uses: the first `MAX_PAIRS` of the dataset.
pub const MAX_PAIRS: usize = 2000;
/// Most L-BFGS iterations.
pub const MAX_ITERATIONS: u64 = 100;
/// A round stops when the preconditioned gradient `|c ⊙ ∇L|₂` falls below this (`∇L = ∇F/F`).
pub const GRADIENT_TOLERANCE: f64 = 1e-9;
/// A round also stops when `L` changes by less than this from one iteration to the next
/// (it has stalled at rounding level).
pub const COST_TOLERANCE: f64 = 1e-15;
/// Most iterations of one L-BFGS round (one preconditioner).
pub const ROUND_ITERATIONS: u64 = 25;
/// Most evaluations of the objective in all (line searches included): a guard against a line
/// search that would not end, far above what a run needs (a few per iteration).
pub const MAX_EVALUATIONS: usize = 10 * MAX_ITERATIONS as usize;

/// The result of the optimisation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OptimisedA {
    /// The optimised diagonal, each entry clamped into [crate::numerics::heuristics::A_MIN, A_MAX].
    pub a: Vec<f64>,
    /// Entries that hit the clamp.
    pub clamped: usize,
    /// Iterations the optimiser took.
    pub iterations: usize,
    /// ln of the mean relative MSE·m (ln mean_i (cosh s_i − 1)) at the start and at the end.
    pub log_objective_start: f64,
    pub log_objective_end: f64,
}

/// Why A could not be optimised.
#[derive(Clone, Debug, PartialEq)]
pub enum OptimiseError {
    /// The dataset has no pairs or no dimensions.
    EmptyData,
    /// `x` or `y` does not hold `n · d` numbers.
    DataShape {
        side: &'static str,
        expected: usize,
        got: usize,
    },
    /// A query or key component is NaN or infinite.
    NonFiniteData { side: &'static str, index: usize },
    /// The start has a different length than the dimension.
    StartLength { expected: usize, got: usize },
    /// A start entry is not a positive finite number.
    InvalidStart { index: usize, value: f64 },
    /// Some `s_i` overflows f64 at the start A: the data are too large to optimise.
    ObjectiveOverflow,
}

impl fmt::Display for OptimiseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptimiseError::EmptyData => write!(f, "the dataset has no pairs or no dimensions"),
            OptimiseError::DataShape {
                side,
                expected,
                got,
            } => write!(
                f,
                "the {side} matrix holds {got} numbers, expected n·d = {expected}"
            ),
            OptimiseError::NonFiniteData { side, index } => {
                write!(f, "{side} component {index} is not a finite number")
            }
            OptimiseError::StartLength { expected, got } => write!(
                f,
                "the starting diagonal has {got} entries, expected the dimension {expected}"
            ),
            OptimiseError::InvalidStart { index, value } => write!(
                f,
                "starting diagonal entry {index} must be a positive finite number, got {value}"
            ),
            OptimiseError::ObjectiveOverflow => write!(
                f,
                "|Ax + A⁻¹y|² overflows at the start: the data are too large to optimise A"
            ),
        }
    }
}

impl std::error::Error for OptimiseError {}

/// Checks the dataset and the start; the start's entries clamped into `[A_MIN, A_MAX]`.
fn validate(data: &Dataset, start: &[f64]) -> Result<Vec<f64>, OptimiseError> {
    let (d, n) = (data.d, data.n);
    if d == 0 || n == 0 {
        return Err(OptimiseError::EmptyData);
    }
    let expected = n.checked_mul(d).ok_or(OptimiseError::DataShape {
        side: "query",
        expected: usize::MAX,
        got: data.x.len(),
    })?;
    for (side, values) in [("query", &data.x), ("key", &data.y)] {
        if values.len() != expected {
            return Err(OptimiseError::DataShape {
                side,
                expected,
                got: values.len(),
            });
        }
        if let Some(index) = values.iter().position(|v| !v.is_finite()) {
            return Err(OptimiseError::NonFiniteData { side, index });
        }
    }
    if start.len() != d {
        return Err(OptimiseError::StartLength {
            expected: d,
            got: start.len(),
        });
    }
    if let Some((index, &value)) = start
        .iter()
        .enumerate()
        .find(|(_, v)| !(v.is_finite() && **v > 0.0))
    {
        return Err(OptimiseError::InvalidStart { index, value });
    }
    Ok(start.iter().map(|v| v.clamp(A_MIN, A_MAX)).collect())
}

/// `a_j = e^{b_j}` clamped into `[A_MIN, A_MAX]` (exactly `A_MIN`/`A_MAX` on the bounds), with
/// the number of entries on a bound.
fn diagonal_from_logs(b: &[f64]) -> (Vec<f64>, usize) {
    let (lo, hi) = (A_MIN.libm_ln(), A_MAX.libm_ln());
    let a: Vec<f64> = b
        .iter()
        .map(|&v| {
            if v <= lo {
                A_MIN
            } else if v >= hi {
                A_MAX
            } else {
                v.libm_exp().clamp(A_MIN, A_MAX)
            }
        })
        .collect();
    let clamped = a.iter().filter(|&&v| v == A_MIN || v == A_MAX).count();
    (a, clamped)
}

/// Minimises HCEXP's mean relative MSE over the first [`MAX_PAIRS`] pairs of `data` in the
/// diagonal `a`, from `start` (the variance-adjusted A of Lemma 3.4 is a good one). See the
/// module documentation for the method and its guarantees.
pub fn optimised_a(data: &Dataset, start: &[f64]) -> Result<OptimisedA, OptimiseError> {
    let start = validate(data, start)?;
    let d = data.d;
    let n = data.n.min(MAX_PAIRS);
    let objective = Objective::new(d, n, &data.x[..n * d], &data.y[..n * d]);
    let b0: Vec<f64> = start.iter().map(|v| v.libm_ln()).collect();
    let start_clamped = start.iter().filter(|&&v| v == A_MIN || v == A_MAX).count();
    let Some((log_objective_start, _)) = objective.log_objective(&b0) else {
        return Err(OptimiseError::ObjectiveOverflow);
    };
    let unchanged = |iterations: usize| OptimisedA {
        a: start.clone(),
        clamped: start_clamped,
        iterations,
        log_objective_start,
        log_objective_end: log_objective_start,
    };
    if log_objective_start == f64::NEG_INFINITY {
        // Every s_i is 0 already: nothing can be lower.
        return Ok(unchanged(0));
    }

    let iterations = minimise(&objective, b0);
    let best = objective.best.into_inner();
    // `best` only ever holds finite or −inf values below the start's (never NaN).
    if best.log_objective >= log_objective_start || best.b.len() != d {
        return Ok(unchanged(iterations));
    }
    let (a, clamped) = diagonal_from_logs(&best.b);
    Ok(OptimisedA {
        a,
        clamped,
        iterations,
        log_objective_start,
        log_objective_end: best.log_objective,
    })
}
