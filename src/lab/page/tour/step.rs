//! What a tour step is: its state, question, prose and verdict, and the evidence a verdict
//! reads.

use std::fmt;

use crate::lab::attention::report::{KernelVsAttention, MainReport};
use crate::lab::config::{ExperimentConfig, ParamError, View};
use crate::lab::kernel::experiment::{ExperimentResult, MseCurve};
use crate::lab::models::protocol::SwapReport;
use crate::lab::models::smollm::TransferVerdict;

/// The language model view's numbers on its text, as the tour reads them.
#[derive(Clone, Debug, PartialEq)]
pub struct LanguageModelEvidence {
    /// Tokens of the text, and its perplexity under exact attention.
    pub tokens: usize,
    pub exact: f64,
    /// The swap on screen: its method's label, its layers, its perplexity (the mean over its
    /// draws).
    pub swap: Option<(String, Vec<usize>, f64)>,
    /// The attention transfer's verdict on the same text, and its Adam steps per layer.
    pub transfer: Option<(usize, TransferVerdict)>,
}

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
    /// The language model view's swap and transfer, once both are in.
    LanguageModel(&'a LanguageModelEvidence),
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
    /// The language model view's swap and transfer.
    LanguageModel,
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
    /// The step's formula, LaTeX (rendered at build time, `crate::lab::page::formulas`).
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

/// The configuration of a step's query.
pub(super) fn config_of(query: &str) -> Result<ExperimentConfig, Vec<ParamError>> {
    let (config, notices) = ExperimentConfig::from_query(query);
    if notices.is_empty() {
        Ok(config)
    } else {
        Err(notices)
    }
}
