//! Every step's state run natively, its verdict checked against numbers computed here
//! independently, and the answer the step's prose relies on.

use super::*;
use crate::lab::config::CURVE_MS;
use crate::lab::experiment::{mse_against_m, run_experiment};

/// The evidence of a kernel step's state, as the page computes it.
fn kernel_verdict(step: &TourStep) -> (ExperimentResult, Verdict) {
    let config = step.config().expect("the step's query parses");
    let result = run_experiment(&config).expect("the step's experiment runs");
    let curves = mse_against_m(&config, &CURVE_MS).expect("its curves run");
    let verdict = (step.verdict)(&Evidence::Kernel {
        result: &result,
        curves: Some(&curves),
    })
    .expect("the step reads its own state");
    (result, verdict)
}

#[test]
fn print_kernel_verdicts() {
    for step in STEPS.iter().filter(|s| s.view() == View::Kernel) {
        let (_, verdict) = kernel_verdict(step);
        println!(
            "{}: answer {} ({}) — {}",
            step.id, verdict.answer, step.options[verdict.answer], verdict.measured
        );
    }
}
