//! DERF: the general second moment against Monte Carlo (within the standard error), the
//! member unbiased, SADERF equal to the registry's GERF/OPRF moment for moment, bad matrices
//! refused.

use super::*;
use crate::numerics::estimators::gerf::{OPRF_VARIANCE, optimal_alpha};
use crate::numerics::estimators::{Estimator, Fit};
use crate::numerics::portable::StandardNormal;
use crate::numerics::rng::{StreamPurpose, stream_rng};
use crate::numerics::stats::mean_and_standard_error;

const X: [f64; 3] = [0.3, -0.2, 0.25];
const Y: [f64; 3] = [0.1, 0.35, -0.15];

/// A dense member: a small symmetric `A_ω` and a full `B₁`, `B₂` made unbiased.
fn dense() -> Derf {
    let a_omega = DMatrix::from_row_slice(
        3,
        3,
        &[
            0.015, 0.005, -0.01, 0.005, -0.025, 0.0075, -0.01, 0.0075, 0.01,
        ],
    );
    let b1 = DMatrix::from_row_slice(3, 3, &[0.9, 0.2, -0.1, 0.1, 1.1, 0.3, -0.2, 0.05, 0.8]);
    Derf::with_unbiased_b2(a_omega, b1).unwrap()
}

#[test]
fn the_dense_member_is_unbiased_and_its_second_moment_is_the_formulas() {
    let derf = dense();
    let mut rng = stream_rng(21, StreamPurpose::Trial, 0, 0);
    let mut products = Vec::new();
    let mut squares = Vec::new();
    // Twice the pair of the other tests, so that every term of the exponent weighs.
    let (x, y) = (X.map(|v| 2.0 * v), Y.map(|v| 2.0 * v));
    for _ in 0..1_000_000 {
        let omega: Vec<f64> = (0..3).map(|_| StandardNormal.sample(&mut rng)).collect();
        let product =
            (derf.log_feature(&omega, &x, true) + derf.log_feature(&omega, &y, false)).exp();
        products.push(product);
        squares.push(product * product);
    }
    let exact = x.iter().zip(&y).map(|(a, b)| a * b).sum::<f64>().exp();
    let (mean, se) = mean_and_standard_error(&products);
    assert!(
        (mean - exact).abs() < 4.0 * se,
        "E[f₁f₂] {mean} ± {se} against {exact}"
    );
    let (second, se2) = mean_and_standard_error(&squares);
    let formula = derf.log_second_moment(&x, &y).exp();
    eprintln!(
        "E[f1f2] {mean} ± {se} (exact {exact}); E[(f1f2)²] {second} ± {se2}, formula {formula}"
    );
    assert!(
        (second - formula).abs() < 4.0 * se2,
        "E[(f₁f₂)²] {second} ± {se2} against the formula's {formula}"
    );
    // The MSE of m features is the per-feature variance over m.
    let variance = formula - exact * exact;
    assert!((derf.log_mse(&x, &y, 16).exp() - variance / 16.0).abs() < 1e-12 * variance);
}

#[test]
fn saderf_is_gerf_on_the_transformed_pair_moment_for_moment() {
    // The registry's `oprf-var` with a given α and diagonal A is SADERF with Ψ = A.
    let psi = [1.4, 0.6, 0.9];
    for alpha in [0.0, optimal_alpha(0.3), -0.2, 0.1] {
        let fit = Fit {
            alpha,
            ..Fit::diagonal(psi.to_vec(), 0)
        };
        let gerf = OPRF_VARIANCE.log_mse(&fit, &X, &Y, 8).unwrap();
        let saderf = Derf::saderf(alpha, &psi).unwrap().log_mse(&X, &Y, 8);
        assert!(
            (gerf - saderf).abs() < 1e-12 * gerf.abs().max(1.0),
            "α = {alpha}: GERF {gerf}, SADERF {saderf}"
        );
    }
}

#[test]
fn matrices_that_would_give_an_infinite_or_biased_estimator_are_refused() {
    let identity = DMatrix::<f64>::identity(2, 2);
    assert_eq!(
        Derf::new(&identity * 0.2, identity.clone(), identity.clone()),
        Err(DerfError::TooLarge)
    );
    let asymmetric = DMatrix::from_row_slice(2, 2, &[0.0, 0.01, 0.0, 0.0]);
    assert_eq!(
        Derf::new(asymmetric, identity.clone(), identity.clone()),
        Err(DerfError::NotSymmetric)
    );
    assert!(matches!(
        Derf::new(DMatrix::zeros(2, 2), identity.clone(), &identity * 2.0),
        Err(DerfError::Biased(_))
    ));
    assert!(matches!(
        Derf::new(DMatrix::zeros(2, 2), DMatrix::zeros(3, 3), identity.clone()),
        Err(DerfError::Shape { .. })
    ));
    assert_eq!(
        Derf::with_unbiased_b2(DMatrix::zeros(2, 2), DMatrix::zeros(2, 2)),
        Err(DerfError::Singular)
    );
    // α = 0, Ψ = I is PRF: its MSE is (e^{|x+y|² − |x|² − |y|²}... )/m, here checked at m = 1
    // against Lemma 3.1's positive form: E[f²] = exp(2|x + y|² − |x|² − |y|²).
    let prf = Derf::saderf(0.0, &[1.0; 3]).unwrap();
    let z2: f64 = X.iter().zip(&Y).map(|(a, b)| (a + b) * (a + b)).sum();
    let s: f64 = X.iter().chain(&Y).map(|v| v * v).sum();
    assert!((prf.log_second_moment(&X, &Y) - (2.0 * z2 - s)).abs() < 1e-12);
}
