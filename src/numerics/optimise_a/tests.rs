//! The optimiser's tests: the log helpers, a stationary point on the paper's dataset, two
//! starts that agree, the closed form in one dimension, large norms, the box, the pair cap, bad
//! inputs, an exact fit, pinned values, and an ignored timing run.

use super::lbfgs::minimise;
use super::objective::{Objective, log_cosh_minus_one, log_sinh};
use super::*;
use crate::numerics::dataset::{DatasetParams, generate};
use crate::numerics::heuristics::{AHeuristic, diagonal_a};
use crate::numerics::rng::{StreamPurpose, stream_rng};
use std::f64::consts::LN_2;

/// The seed paper's dataset (d = 50, mean scale 0.02, shapes 0.02/0.01) with `n` pairs and
/// the given target norms, from its own seeded stream.
fn dataset(seed: u64, n: usize, x_norm: f64, y_norm: f64) -> Dataset {
    let params =
        DatasetParams::new(50, n, 0.02, 0.02, 0.01, x_norm, y_norm).expect("valid parameters");
    let mut rng = stream_rng(seed, StreamPurpose::Trial, 7, 0);
    generate(&params, &mut rng).expect("a dataset")
}

fn variance_adjusted(data: &Dataset) -> Vec<f64> {
    diagonal_a(AHeuristic::VarianceAdjusted, &data.moments()).a
}

/// `L(ln a)` over the first `MAX_PAIRS` pairs, through the module's own evaluation.
fn log_objective(data: &Dataset, a: &[f64]) -> f64 {
    let n = data.n.min(MAX_PAIRS);
    let objective = Objective::new(data.d, n, &data.x[..n * data.d], &data.y[..n * data.d]);
    let b: Vec<f64> = a.iter().map(|v| v.libm_ln()).collect();
    objective.log_objective(&b).expect("finite").0
}

/// `L` at `b` with coordinate `j` moved by `step`, clamped into the box.
fn log_objective_moved(data: &Dataset, a: &[f64], j: usize, step: f64) -> f64 {
    let mut moved = a.to_vec();
    moved[j] = (a[j].libm_ln() + step).libm_exp().clamp(A_MIN, A_MAX);
    log_objective(data, &moved)
}

#[test]
fn log_helpers_match_the_direct_formulas_and_survive_overflow() {
    for s in [1e-3_f64, 0.1, 1.0, 5.0, 30.0, 300.0] {
        // cosh s − 1 = 2 sinh²(s/2), without the cancellation of cosh s − 1 at small s.
        let direct = (2.0 * (s / 2.0).libm_sinh().powi(2)).libm_ln();
        assert!((log_cosh_minus_one(s) - direct).abs() <= 1e-12 * direct.abs().max(1.0));
        let direct = s.libm_sinh().libm_ln();
        assert!((log_sinh(s) - direct).abs() <= 1e-12 * direct.abs().max(1.0));
    }
    // cosh s − 1 ≈ s²/2 for tiny s, where the naive formula gives ln 0.
    let s = 1e-12_f64;
    assert!((log_cosh_minus_one(s) - (2.0 * s.libm_ln() - LN_2)).abs() < 1e-12);
    assert_eq!(log_cosh_minus_one(0.0), f64::NEG_INFINITY);
    assert_eq!(log_sinh(0.0), f64::NEG_INFINITY);
    // cosh 5000 overflows; its log is 5000 − ln 2.
    assert!((log_cosh_minus_one(5000.0) - (5000.0 - LN_2)).abs() < 1e-9);
}

#[test]
fn paper_dataset_lowers_the_objective_to_a_stationary_point() {
    let data = dataset(1, 250, 5.0, 0.5);
    let start = variance_adjusted(&data);
    let result = optimised_a(&data, &start).expect("optimised");
    assert_eq!(result.a.len(), 50);
    assert!(result.iterations >= 1 && result.iterations <= MAX_ITERATIONS as usize);
    assert!(result.log_objective_end <= result.log_objective_start);
    // It does move: the variance-adjusted A is not already optimal (≈ 1.25 % lower MSE).
    assert!(result.log_objective_end < result.log_objective_start - 1e-3);
    let at_end = log_objective(&data, &result.a);
    assert!((at_end - result.log_objective_end).abs() < 1e-12);
    for j in 0..data.d {
        for step in [-1e-3, 1e-3] {
            let moved = log_objective_moved(&data, &result.a, j, step);
            assert!(
                moved >= at_end - 1e-10,
                "a step of {step} in ln a_{j} lowers L from {at_end} to {moved}"
            );
        }
    }
    // The start fails the same check (the test can fail).
    let at_start = log_objective(&data, &start);
    assert!((0..data.d).any(|j| {
        [-1e-3, 1e-3]
            .iter()
            .any(|&step| log_objective_moved(&data, &start, j, step) < at_start - 1e-10)
    }));
}

#[test]
fn the_evaluation_budget_is_far_from_binding() {
    for (x_norm, y_norm, ones) in [(5.0, 0.5, false), (5.0, 0.5, true), (50.0, 50.0, true)] {
        let data = dataset(1, 250, x_norm, y_norm);
        let start = if ones {
            vec![1.0; 50]
        } else {
            variance_adjusted(&data)
        };
        let objective = Objective::new(data.d, data.n, &data.x, &data.y);
        let b0: Vec<f64> = start.iter().map(|v| v.libm_ln()).collect();
        let iterations = minimise(&objective, b0);
        let evaluations = objective.evaluations.get();
        println!(
            "norms {x_norm}/{y_norm}, ones {ones}: {iterations} iterations, {evaluations} evaluations"
        );
        assert!(
            evaluations < MAX_EVALUATIONS / 4,
            "{evaluations} evaluations"
        );
    }
}

#[test]
fn two_starts_reach_the_same_minimum() {
    let data = dataset(1, 250, 5.0, 0.5);
    let from_heuristic = optimised_a(&data, &variance_adjusted(&data)).expect("optimised");
    let from_ones = optimised_a(&data, &[1.0; 50]).expect("optimised");
    assert!(from_ones.log_objective_start > from_heuristic.log_objective_start + 1.0);
    for (j, (p, q)) in from_heuristic.a.iter().zip(&from_ones.a).enumerate() {
        let on_bound = |v: f64| v == A_MIN || v == A_MAX;
        if !on_bound(*p) && !on_bound(*q) {
            assert!(
                (p.libm_ln() - q.libm_ln()).abs() < 1e-3,
                "entry {j}: {p} vs {q}"
            );
        }
    }
    assert!(
        (from_heuristic.log_objective_end - from_ones.log_objective_end).abs() < 1e-6,
        "{} vs {}",
        from_heuristic.log_objective_end,
        from_ones.log_objective_end
    );
}

#[test]
fn one_dimension_has_the_closed_form_minimiser() {
    // s = (a x + y/a)² is smallest at a² = |y/x| whatever the signs (0 when x y < 0).
    for (x, y, start) in [(2.0, 0.18, 1.0), (0.5, 3.0, 0.01), (2.0, -0.18, 1.0)] {
        let data = Dataset {
            d: 1,
            n: 4,
            x: vec![x; 4],
            y: vec![y; 4],
        };
        let result = optimised_a(&data, &[start]).expect("optimised");
        let expected = (y / x).abs().sqrt();
        assert!(
            (result.a[0] - expected).abs() < 1e-6,
            "(x, y) = ({x}, {y}): a = {} (expected {expected})",
            result.a[0]
        );
        assert!(result.log_objective_end < result.log_objective_start);
        assert_eq!(result.clamped, 0);
    }
}

#[test]
fn large_norms_stay_finite() {
    // Mean norms 50 and 50: s_i runs into the thousands, where cosh overflows f64.
    let data = dataset(1, 250, 50.0, 50.0);
    let result = optimised_a(&data, &variance_adjusted(&data)).expect("optimised");
    assert!(
        result.log_objective_start > 710.0,
        "cosh must overflow here"
    );
    assert!(result.log_objective_end.is_finite());
    assert!(result.log_objective_end <= result.log_objective_start);
    assert!(
        result
            .a
            .iter()
            .all(|a| a.is_finite() && (A_MIN..=A_MAX).contains(a))
    );
    // Scaled further (s in the hundreds of thousands): still finite, still no panic.
    let mut huge = data.clone();
    huge.x.iter_mut().for_each(|v| *v *= 1e3);
    // The start is A = I, so L there is the module's own L(0). A = I is not stationary (the
    // queries are 1e3 times the keys: shrinking a lowers every s_i), so the end is strictly
    // below the start; and A stays in the box.
    let result = optimised_a(&huge, &[1.0; 50]).expect("optimised");
    assert!(
        result.log_objective_start > 710.0
            && result.log_objective_start == log_objective(&huge, &[1.0; 50]),
        "{result:?}"
    );
    assert!(
        result.log_objective_end < result.log_objective_start,
        "{} > {}",
        result.log_objective_end,
        result.log_objective_start
    );
    assert!(
        result
            .a
            .iter()
            .all(|a| a.is_finite() && (A_MIN..=A_MAX).contains(a)),
        "{:?}",
        result.a
    );
}

#[test]
fn entries_whose_optimum_lies_outside_the_box_are_clamped() {
    // Component 1 of every query is 0: s falls as a_1 grows, so a_1 ends on A_MAX.
    let data = Dataset {
        d: 2,
        n: 3,
        x: vec![1.0, 0.0, -0.5, 0.0, 0.8, 0.0],
        y: vec![0.2, 0.3, -0.1, 0.1, 0.3, -0.2],
    };
    let result = optimised_a(&data, &[1.0, 1.0]).expect("optimised");
    assert_eq!(result.a[1], A_MAX);
    assert_eq!(result.clamped, 1);
    assert!(result.a[0] > A_MIN && result.a[0] < A_MAX);
    assert!(result.log_objective_end < result.log_objective_start);
}

#[test]
fn only_the_first_max_pairs_are_used() {
    let d = 3;
    let mut data = dataset(2, MAX_PAIRS + 10, 5.0, 0.5);
    data = Dataset {
        d,
        n: data.n,
        x: data
            .x
            .chunks_exact(50)
            .flat_map(|r| r[..d].to_vec())
            .collect(),
        y: data
            .y
            .chunks_exact(50)
            .flat_map(|r| r[..d].to_vec())
            .collect(),
    };
    let mut truncated = data.clone();
    truncated.n = MAX_PAIRS;
    truncated.x.truncate(MAX_PAIRS * d);
    truncated.y.truncate(MAX_PAIRS * d);
    // Wild pairs past the cap change nothing.
    data.x[MAX_PAIRS * d..].iter_mut().for_each(|v| *v = 1e3);
    let all = optimised_a(&data, &[1.0; 3]).expect("optimised");
    let first = optimised_a(&truncated, &[1.0; 3]).expect("optimised");
    assert_eq!(all, first);
}

#[test]
fn bad_inputs_are_errors() {
    let data = dataset(1, 10, 5.0, 0.5);
    let mut start = variance_adjusted(&data);
    assert!(optimised_a(&data, &start).is_ok());
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        start[3] = bad;
        let error = optimised_a(&data, &start).expect_err("invalid start");
        assert!(matches!(
            error,
            OptimiseError::InvalidStart { index: 3, .. }
        ));
        assert!(!error.to_string().is_empty());
    }
    assert!(matches!(
        optimised_a(&data, &[1.0; 49]),
        Err(OptimiseError::StartLength {
            expected: 50,
            got: 49
        })
    ));
    let empty = Dataset {
        d: 50,
        n: 0,
        x: vec![],
        y: vec![],
    };
    assert_eq!(
        optimised_a(&empty, &[1.0; 50]),
        Err(OptimiseError::EmptyData)
    );
    let mut short = data.clone();
    short.y.pop();
    assert!(matches!(
        optimised_a(&short, &[1.0; 50]),
        Err(OptimiseError::DataShape { side: "key", .. })
    ));
    let mut nan = data.clone();
    nan.x[7] = f64::NAN;
    assert_eq!(
        optimised_a(&nan, &[1.0; 50]),
        Err(OptimiseError::NonFiniteData {
            side: "query",
            index: 7
        })
    );
    let mut overflowing = data.clone();
    overflowing.x[0] = 1e200;
    assert_eq!(
        optimised_a(&overflowing, &[1.0; 50]),
        Err(OptimiseError::ObjectiveOverflow)
    );
}

#[test]
fn exact_fit_at_the_start_is_returned_unchanged() {
    // y = −x: s = |x − x|² = 0 at a = 1, the lowest possible objective.
    let data = Dataset {
        d: 2,
        n: 2,
        x: vec![1.0, 2.0, -0.5, 0.3],
        y: vec![-1.0, -2.0, 0.5, -0.3],
    };
    let result = optimised_a(&data, &[1.0, 1.0]).expect("optimised");
    assert_eq!(result.a, vec![1.0, 1.0]);
    assert_eq!(result.iterations, 0);
    assert_eq!(result.log_objective_start, f64::NEG_INFINITY);
    assert_eq!(result.log_objective_end, f64::NEG_INFINITY);
}

#[test]
fn pinned_values_for_the_seeded_dataset() {
    let data = dataset(1, 250, 5.0, 0.5);
    let result = optimised_a(&data, &variance_adjusted(&data)).expect("optimised");
    // Re-pin (and say why in the commit) when the optimiser changes on purpose.
    assert_eq!(result.iterations, 5);
    let pinned = [0.2934079531247871, 0.37663035597775485, 0.04985513525359523];
    for (got, pinned) in result.a.iter().zip(pinned) {
        assert!((got - pinned).abs() <= 1e-12 * pinned, "{got} vs {pinned}");
    }
}

/// Time of one optimisation of a 1000-pair, d = 50 paper dataset, and of the largest case
/// (2000 pairs, d = 512). Native only; run it with
/// `cargo test --release --lib optimise_a::tests::timing -- --ignored --nocapture`.
#[cfg(not(target_arch = "wasm32"))]
#[test]
#[ignore = "timing, not a check"]
fn timing() {
    for (d, n, repeats) in [(50, 1000, 20), (512, 2000, 3)] {
        let params = DatasetParams::new(d, n, 0.02, 0.02, 0.01, 5.0, 0.5).expect("valid");
        let data =
            generate(&params, &mut stream_rng(3, StreamPurpose::Trial, 7, 0)).expect("a dataset");
        let start = variance_adjusted(&data);
        let clock = std::time::Instant::now();
        let mut result = None;
        for _ in 0..repeats {
            result = Some(optimised_a(&data, &start).expect("optimised"));
        }
        let elapsed = clock.elapsed().as_secs_f64() / f64::from(repeats);
        let result = result.expect("ran");
        let from_ones = optimised_a(&data, &vec![1.0; d]).expect("optimised");
        println!(
            "n = {n}, d = {d}: {:.3} ms per optimisation, {} iterations, MSE ratio end/start \
             {:.6} (from a = 1: {} iterations, ratio {:.3e})",
            elapsed * 1e3,
            result.iterations,
            (result.log_objective_end - result.log_objective_start).libm_exp(),
            from_ones.iterations,
            (from_ones.log_objective_end - from_ones.log_objective_start).libm_exp()
        );
    }
}
