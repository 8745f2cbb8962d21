//! The L-BFGS driver of [`super::optimised_a`]: argmin's L-BFGS with a More–Thuente line
//! search on the [`Objective`], diagonally preconditioned (`b = b₀ + c ⊙ u`, argmin's variable
//! being `u`, `c_j = 1/sqrt(∂²L/∂b_j²)` at `b₀`), run in rounds of at most
//! [`ROUND_ITERATIONS`] with the preconditioner recomputed at the best point so far. Why this
//! method and how it was tuned: `docs/optimised-a-tuning.md`.

use argmin::core::{
    CostFunction, Error as ArgminError, Executor, Gradient, State, TerminationReason,
    TerminationStatus,
};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::quasinewton::LBFGS;

use super::objective::Objective;
use super::{COST_TOLERANCE, GRADIENT_TOLERANCE, MAX_ITERATIONS, ROUND_ITERATIONS};

/// Curvature pairs L-BFGS remembers.
const HISTORY: usize = 10;

/// What argmin owns: a borrow of the objective (so that the best point it recorded can be read
/// back after the run) and the diagonal preconditioning `b = b₀ + c ⊙ u`, argmin's variable
/// being `u`.
struct Problem<'o, 'a> {
    objective: &'o Objective<'a>,
    b0: Vec<f64>,
    scale: Vec<f64>,
}

impl Problem<'_, '_> {
    fn to_b(&self, u: &[f64]) -> Vec<f64> {
        self.b0
            .iter()
            .zip(&self.scale)
            .zip(u)
            .map(|((b, c), u)| b + c * u)
            .collect()
    }
}

impl CostFunction for Problem<'_, '_> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, u: &Self::Param) -> Result<Self::Output, ArgminError> {
        self.objective
            .penalised(&self.to_b(u))
            .map(|(value, _)| value)
    }
}

impl Gradient for Problem<'_, '_> {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;

    fn gradient(&self, u: &Self::Param) -> Result<Self::Gradient, ArgminError> {
        self.objective
            .penalised(&self.to_b(u))
            .map(|(_, gradient)| {
                gradient
                    .iter()
                    .zip(&self.scale)
                    .map(|(g, c)| g * c)
                    .collect()
            })
    }
}

/// Runs preconditioned L-BFGS in rounds from `b0` and returns the iterations taken in all;
/// the best point is recorded in `objective`. Each round starts from the best point so far
/// with the preconditioner recomputed there; a new round follows only when the last one used
/// up its [`ROUND_ITERATIONS`] without converging, until [`MAX_ITERATIONS`] in all.
pub(super) fn minimise(objective: &Objective<'_>, b0: Vec<f64>) -> usize {
    let mut total: u64 = 0;
    let mut from = b0;
    while total < MAX_ITERATIONS {
        let cap = ROUND_ITERATIONS.min(MAX_ITERATIONS - total);
        let Ok((iterations, status)) = run_round(objective, from, cap) else {
            break;
        };
        total += iterations;
        if status != TerminationStatus::Terminated(TerminationReason::MaxItersReached) {
            break;
        }
        from = objective.best.borrow().b.clone();
        if from.len() != objective.d {
            break;
        }
    }
    usize::try_from(total).unwrap_or(usize::MAX)
}

/// One round of L-BFGS in the preconditioned variable `u` (`b = b₀ + c ⊙ u`,
/// `c_j = 1/sqrt(∂²L/∂b_j²)` at `b₀`, floored), at most `cap` iterations.
fn run_round(
    objective: &Objective<'_>,
    b0: Vec<f64>,
    cap: u64,
) -> Result<(u64, TerminationStatus), ArgminError> {
    let linesearch = MoreThuenteLineSearch::new();
    let solver = LBFGS::new(linesearch, HISTORY)
        .with_tolerance_grad(GRADIENT_TOLERANCE)?
        .with_tolerance_cost(COST_TOLERANCE)?;
    let diag = objective.hessian_diagonal(&b0);
    let max = diag.iter().copied().fold(0.0, f64::max);
    let floor = if max > 0.0 { max * 1e-12 } else { 1.0 };
    let scale: Vec<f64> = diag.iter().map(|h| 1.0 / h.max(floor).sqrt()).collect();
    let d = b0.len();
    let problem = Problem {
        objective,
        b0,
        scale,
    };
    let result = Executor::new(problem, solver)
        .configure(|state| state.param(vec![0.0; d]).max_iters(cap))
        .timer(false)
        .ctrlc(false)
        .run()?;
    let state = result.state();
    Ok((state.get_iter(), state.get_termination_status().clone()))
}
