//! The guided tour (`?tour=N`): the seed paper's story in steps, then beyond it. Each step is a
//! state of the lab (a URL query, so a link), the one control to move, a question the reader
//! answers before the page says what it measured, and two to four sentences of what to notice
//! with a formula. The prose has no number in it: every number the step states is computed
//! from the results on screen by the step's [`TourStep::verdict`], which also says which of the
//! question's options the measurement supports. `src/lab/page/tour/tests.rs` runs every step's
//! state natively and checks its verdict against numbers computed independently.

mod attention_steps;
mod kernel_steps;
mod lm_step;
mod model_step;
mod numbers;
mod step;
mod steps;
#[cfg(test)]
mod tests;

pub use step::{Evidence, EvidenceKind, LanguageModelEvidence, TourError, TourStep, Verdict};
pub use steps::{STEP_COUNT, STEPS, step_config};
