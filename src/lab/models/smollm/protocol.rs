//! What the page and the language model's worker say to each other (postcard, as the other
//! workers' messages), and what one text through the model gives: shared by the page, which
//! never links the model, and the worker and the command line (`report`, feature `text-model`).

use serde::{Deserialize, Serialize};

use crate::lab::config::ExperimentConfig;
use crate::lab::models::protocol::Spread;
use crate::numerics::attention::methods::MethodId;

/// Where the page serves the GGUF file (scripts/build-worker.sh copies it there).
pub const LM_URL: &str = "model/smollm2-135m-instruct-q4_1.gguf";
/// Its size, for the download's progress when the server does not say.
pub const LM_FILE_BYTES: u64 = 98_362_432;

/// Tokens of the reader's text the model reads at most (its context is 8,192; the page's
/// budget is a second's forward on a laptop).
pub const LM_MAX_TOKENS: usize = 1024;
/// Next tokens kept per position.
pub const TOP_TOKENS: usize = 5;

/// One candidate next token.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NextToken {
    pub id: u32,
    /// Its text as the reader sees it.
    pub piece: String,
    /// Its log-probability in nats.
    pub logprob: f64,
}

/// The text under a swap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LmSwapReport {
    pub method: String,
    pub label: String,
    pub layers: Vec<usize>,
    /// Draws asked for (1 for a deterministic method) and draws that failed (a row whose
    /// estimated normaliser is not positive cannot go on).
    pub draws: usize,
    pub failed_draws: usize,
    pub failure: Option<String>,
    /// Each token's loss, the mean over the draws that ran.
    pub losses: Vec<f64>,
    /// The perplexity of each draw, summarised.
    pub perplexity: Option<Spread>,
    /// The first draw's next tokens per position.
    pub top: Vec<Vec<NextToken>>,
    pub forward_ms: f64,
}

/// What `kernel-lab lm` prints and the view shows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LmReport {
    pub text: String,
    pub ids: Vec<u32>,
    /// Each token's text as the reader sees it.
    pub pieces: Vec<String>,
    /// `losses[t]`: the loss of token `t + 1` in nats (the first token has none).
    pub losses: Vec<f64>,
    pub perplexity: f64,
    /// Per position, the most likely next tokens under exact attention.
    pub top: Vec<Vec<NextToken>>,
    pub multiply_adds: f64,
    pub forward_ms: f64,
    pub swap: Option<LmSwapReport>,
}

/// One bar of the per-layer chart: the perplexity with one layer alone swapped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LmLayerBar {
    pub layer: usize,
    /// Whether every draw is in (a bar is sent after each draw, its spread refined as they
    /// come).
    pub complete: bool,
    /// Over the draws that ran.
    pub perplexity: Option<Spread>,
    pub failed_draws: usize,
    pub failure: Option<String>,
}

/// Perplexity when each layer alone runs the method (the others softmax).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LmLayerReport {
    pub method: String,
    pub label: String,
    pub draws: usize,
    pub exact_perplexity: f64,
    pub bars: Vec<LmLayerBar>,
}

/// What the page asks: the text, and the method and layers of the swap from the configuration
/// (`lmmethod`, `lmlayers`, and the attention view's m, degree, seed, draws).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LmJob {
    pub text: String,
    pub config: ExperimentConfig,
}

impl LmJob {
    /// The job of a configuration.
    pub fn of(config: &ExperimentConfig) -> Self {
        Self {
            text: config.attention.text.clone(),
            config: config.clone(),
        }
    }

    /// The method swapped in, if any.
    pub fn method(&self) -> Option<MethodId> {
        self.config.attention.lm_method
    }
}

/// A message to the language model's worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum LmToWorker {
    /// Score a text; the answer carries the same id. Stops any per-layer chart.
    Score { id: u64, job: LmJob },
    /// The per-layer chart of the job's method over every layer, bar by bar
    /// ([`LmFromWorker::LayerBar`], then [`LmFromWorker::LayersEnded`]); replaces any chart
    /// under way.
    PerLayer { id: u64, job: LmJob, share: Share },
    /// Stop the chart under way (the page has moved on to another text or setting).
    StopChart,
    /// Post the model's file to the page (not postcard: a JS object `{ lmFile: Uint8Array }`,
    /// its buffer transferred), which hands it to the chart's second worker.
    SendFile,
}

/// The property of the message that carries the file from one worker to another through the
/// page (see [`LmToWorker::SendFile`]).
pub const LM_FILE_MESSAGE: &str = "lmFile";
/// What a worker's address says when its file comes from the page, not from the server.
pub const LM_FILE_FROM_PAGE: &str = "file=page";
/// What a worker's address says when it serves the attention view's parts on the language
/// model's heads (`…_loader.js?lm&heads`): the pool protocol, not [`LmToWorker`].
pub const LM_HEADS_WORKER: &str = "heads";

/// Which of a chart's layers a worker computes when several share it: of the layers taken
/// deepest first, those at positions `index`, `index + count`, … (so each worker's share costs
/// about the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Share {
    pub index: usize,
    pub count: usize,
}

impl Share {
    /// The whole chart, on one worker.
    pub const ALL: Share = Share { index: 0, count: 1 };

    /// Whether the layer at `position` (deepest first) is this share's.
    pub fn takes(self, position: usize) -> bool {
        position % self.count.max(1) == self.index % self.count.max(1)
    }
}

/// A message from the language model's worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum LmFromWorker {
    /// Bytes of the file received so far.
    Progress { loaded: u64, total: Option<u64> },
    /// The model is ready: the file's size and the time to check and read it after its last
    /// byte.
    Loaded { bytes: u64, load_ms: f64 },
    /// The file is absent or damaged, or the worker could not read it.
    Failed(String),
    /// The answer to [`LmToWorker::Score`] `id`: the report, or why there is none.
    Scored {
        id: u64,
        report: Result<Box<LmReport>, String>,
    },
    /// A bar of chart `id`, `ms` after the worker took the request.
    LayerBar { id: u64, bar: LmLayerBar, ms: f64 },
    /// Chart `id` is complete (`error: None`) or stopped by an error, `ms` after the request.
    LayersEnded {
        id: u64,
        ms: f64,
        error: Option<String>,
    },
}
