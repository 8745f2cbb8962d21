//! The tour's steps in order, and each step's state alone (what the page's first module
//! links).

use super::step::{TourStep, config_of};
use super::{attention_steps, kernel_steps, lm_step, model_step};
use crate::lab::config::ExperimentConfig;

/// Every step, in order.
pub const STEPS: [TourStep; 11] = [
    kernel_steps::ONE_PAIR,
    kernel_steps::HEAVY_TAILS,
    kernel_steps::CHOOSING_A,
    kernel_steps::MEAN_ONLY_FAILS,
    kernel_steps::LEMMA_3_1,
    kernel_steps::COUPLINGS,
    kernel_steps::BEYOND_THE_PAPER,
    attention_steps::ROWS,
    attention_steps::REAL_HEADS,
    model_step::EMBEDDING,
    lm_step::WIN_IT_BACK,
];

/// How many steps the tour has.
pub const STEP_COUNT: usize = STEPS.len();

/// Every step's state (its URL query) alone: the page's first module opens a `?tour=N` link on
/// its step's state and moves between steps with these, and so links none of the steps'
/// prose and verdicts (those are in the tour's split part, `src/ui/tour/step.rs`).
const STEP_QUERIES: [&str; STEP_COUNT] = {
    let mut queries = [""; STEP_COUNT];
    let mut i = 0;
    while i < STEP_COUNT {
        queries[i] = STEPS[i].query;
        i += 1;
    }
    queries
};

/// The step a `?tour=N` link with no other parameter opens on, as a configuration
/// ([`TourStep::config`] of `STEPS[step]`).
pub fn step_config(step: usize) -> Option<ExperimentConfig> {
    STEP_QUERIES
        .get(step)
        .and_then(|query| config_of(query).ok())
}
