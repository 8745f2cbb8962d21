//! The guided tour (`?tour=N`): the seed paper's story in steps, then beyond it. Each step is a
//! state of the lab (a URL query, so a link), the one control to move, a question the reader
//! answers before the page says what it measured, and two to four sentences of what to notice
//! with a formula. The prose has no number in it: every number the step states is computed
//! from the results on screen by the step's [`TourStep::verdict`], which also says which of the
//! question's options the measurement supports. `src/lab/tour/tests.rs` runs every step's
//! state natively and checks its verdict against numbers computed independently.

use std::fmt;

use super::attention::report::{KernelVsAttention, MainReport};
use super::config::{ExperimentConfig, ParamError, View};
use super::experiment::{ExperimentResult, MseCurve};
use super::model_protocol::SwapReport;

mod attention_steps;
mod kernel_steps;
mod model_step;
mod numbers;
#[cfg(test)]
mod tests;

/// What the page has computed for the state on screen, as a step reads it.
#[derive(Clone, Copy, Debug)]
pub enum Evidence<'a> {
    /// The kernel view's experiment, and its MSE-against-m curves once they are in.
    Kernel {
        result: &'a ExperimentResult,
        curves: Option<&'a [MseCurve]>,
    },
    /// The attention view's main part (one draw of every method).
    Attention(&'a MainReport),
    /// The attention view's comparison of kernel error and row error over many heads.
    KernelVsAttention(&'a KernelVsAttention),
    /// The model swap's reports on the text, once every job of its plan is answered.
    Swap(&'a [SwapReport]),
}

/// Which results a step reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvidenceKind {
    /// The experiment's summaries and scatter.
    Kernel,
    /// The experiment and the MSE-against-m curves.
    KernelCurves,
    /// The attention view's main part.
    Attention,
    /// The attention view's kernel-against-rows part.
    KernelVsAttention,
    /// The model swap on the text view's text.
    Swap,
}

/// What a step's results say: which option of its question they support, and the sentence
/// with the measured numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Index into [`TourStep::options`].
    pub answer: usize,
    /// One or two sentences, every number in them computed from the evidence.
    pub measured: String,
}

/// Why a step cannot say what its results show.
#[derive(Clone, Debug, PartialEq)]
pub enum TourError {
    /// The results on screen are not the kind this step reads (another view, or not in yet).
    WrongEvidence,
    /// The reader removed something the step's question is about.
    Missing(String),
    /// The results are there but hold no usable number (every estimate overflowed, say).
    NotEnoughData(String),
}

impl fmt::Display for TourError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TourError::WrongEvidence => {
                write!(f, "this step reads other results than those on screen")
            }
            TourError::Missing(what) => write!(
                f,
                "this step's question is about {what}, which the current settings leave out: go back to the step's own state"
            ),
            TourError::NotEnoughData(what) => write!(f, "the results hold no usable {what}"),
        }
    }
}

/// One step of the tour.
#[derive(Clone, Copy, Debug)]
pub struct TourStep {
    /// Stable id (`data-tour-step`).
    pub id: &'static str,
    pub title: &'static str,
    /// The lab's state: a URL query (parameters it does not name keep their defaults).
    pub query: &'static str,
    /// The URL key of the one control to move (its control is `#control-KEY`).
    pub control: &'static str,
    /// What to do with that control, in a sentence.
    pub try_this: &'static str,
    /// The question the reader answers before the page says what it measured.
    pub question: &'static str,
    /// The answers offered.
    pub options: &'static [&'static str],
    /// Two to four sentences of what to notice (no numbers: those are in the verdict).
    pub notice: &'static str,
    /// The step's formula, LaTeX (rendered at build time, `crate::lab::formulas`).
    pub formula: &'static str,
    /// Which results the verdict reads.
    pub evidence: EvidenceKind,
    /// What the results say.
    pub verdict: fn(&Evidence<'_>) -> Result<Verdict, TourError>,
}

impl TourStep {
    /// The configuration of the step's state.
    pub fn config(&self) -> Result<ExperimentConfig, Vec<ParamError>> {
        config_of(self.query)
    }

    /// The view the step's state shows.
    pub fn view(&self) -> View {
        self.config().map_or(View::Kernel, |c| c.view)
    }
}

/// Every step, in order.
pub const STEPS: [TourStep; 10] = [
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

/// The configuration of a step's query.
fn config_of(query: &str) -> Result<ExperimentConfig, Vec<ParamError>> {
    let (config, notices) = ExperimentConfig::from_query(query);
    if notices.is_empty() {
        Ok(config)
    } else {
        Err(notices)
    }
}

/// The step a `?tour=N` link with no other parameter opens on, as a configuration
/// ([`TourStep::config`] of `STEPS[step]`).
pub fn step_config(step: usize) -> Option<ExperimentConfig> {
    STEP_QUERIES
        .get(step)
        .and_then(|query| config_of(query).ok())
}
