//! The model worker's messages (postcard, as the other workers'), and what one text through the
//! model gives: shared by the page (which never links the model) and the worker
//! (`lab::models::text_model`, feature `text-model`).

use serde::{Deserialize, Serialize};

use crate::lab::config::ExperimentConfig;

/// Where the page serves the converted model (the build copies it there: scripts/build-worker.sh).
pub const MODEL_URL: &str = "model/minilm-l6-v2-f16.safetensors";

/// One text through the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TextRun {
    /// The text as given.
    pub text: String,
    pub ids: Vec<u32>,
    /// Word pieces, `[CLS]` first and `[SEP]` last.
    pub tokens: Vec<String>,
    /// Tokens of the whole text when it was cut to the model's 512.
    pub full_len: Option<usize>,
    /// Mean-pooled, L2-normalised sentence embedding.
    pub embedding: Vec<f32>,
    /// Multiply-adds of the forward.
    pub multiply_adds: u64,
}

/// What a model worker says while it starts: it fetches and checks the model itself, then
/// answers requests (`WorkerResponse::Setup`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ModelSetup {
    /// Bytes of the model file received so far, of `total` when the server says.
    Progress { loaded: u64, total: Option<u64> },
    /// The model is ready: its file's size, its parameters, the time to check and unpack it
    /// after its last byte arrived.
    Loaded {
        bytes: u64,
        parameters: usize,
        load_ms: f64,
    },
    /// The file is absent, its hash wrong, or the worker could not read it.
    Failed(String),
}

/// What the page asks the model workers (`WorkerRequest::Model`, with the worker's part).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ModelRequest {
    /// Run the loaded model on a text (split by rows over the workers of the request's parts;
    /// every part keeps the text's heads for the attention view).
    Run { text: String },
    /// Swap a method into the model on a text (`lab::models::swap::swap_report`).
    Swap(SwapJob),
    /// Rank candidates by cosine to a query, exactly and with a swap. With `reuse`, the
    /// report shipped with the lab for the same request is answered when this model's exact
    /// ranking of the set agrees with it (`lab::models::shipped`).
    Retrieve {
        job: SwapJob,
        query: String,
        candidates: Vec<String>,
        reuse: bool,
    },
    /// Train the Hedgehog maps of every head on one text, evaluate them on another
    /// (`lab::models::learned_map`); every worker keeps them for swaps of [`HEDGEHOG`]. With
    /// `reuse`, maps kept from an earlier visit or shipped with the lab for the same job are
    /// taken instead when their check holds.
    TrainHedgehog { job: HedgehogJob, reuse: bool },
}

impl ModelRequest {
    /// What the page shows while it waits for the answer (and the benchmark reads).
    pub fn kind(&self) -> &'static str {
        match self {
            ModelRequest::Run { .. } => "run",
            ModelRequest::Swap(_) => "swap",
            ModelRequest::Retrieve { .. } => "retrieve",
            ModelRequest::TrainHedgehog { .. } => "train",
        }
    }
}

/// The method id that names the Hedgehog maps the worker trained last.
pub const HEDGEHOG: &str = "hedgehog";

/// The text the Hedgehog maps are trained on: written for this project, on another subject than
/// the lab's default texts, so that the user's text is held out.
pub const HEDGEHOG_TRAINING_TEXT: &str = "The old harbour town wakes before sunrise. Fishing \
    boats return with the night's catch, gulls circle above the market, and the baker on the \
    corner opens his shutters to the smell of fresh bread. By noon the lanes fill with visitors \
    who climb to the lighthouse, where a retired sailor tells how the great storm of his youth \
    tore the pier apart and how the town rebuilt it in a single summer.";

/// The text the training curve's held-out loss is measured on (written for this project).
pub const HEDGEHOG_EVAL_TEXT: &str = "Every spring the river floods the low meadows, and the \
    farmers move their sheep to the hills until the water falls. Children count the days on the \
    school calendar, and the old mill, silent for a century, turns again for the festival.";

/// One swap: `method` (a registry id, or [`HEDGEHOG`]) in every head of `layers`, `draws`
/// draws, with `config`'s settings (m, seed, landmarks, window, …), on `text`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwapJob {
    pub text: String,
    pub config: ExperimentConfig,
    pub method: String,
    pub layers: Vec<usize>,
    pub draws: usize,
}

/// Training the Hedgehog maps: on `train_text`, evaluated on `eval_text`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HedgehogJob {
    pub train_text: String,
    pub eval_text: String,
    /// n: each map has 2n features (m = 2n).
    pub half_features: usize,
    pub steps: usize,
    pub learning_rate: f64,
    pub seed: u64,
}

/// Mean, standard deviation and extremes of a quantity over draws.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub mean: f64,
    pub sd: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (`None` when there are none).
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let sd = if values.len() > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Some(Spread {
            mean,
            sd,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

/// One layer's movement against the exact model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerMovement {
    pub layer: usize,
    /// Whether this layer's heads ran the method (else softmax, on drifted inputs).
    pub swapped: bool,
    /// `‖A − A*‖_F / ‖A*‖_F` of the heads' outputs side by side.
    pub attention_error: Spread,
    /// `‖H − H*‖_F / ‖H*‖_F` of the layer's output hidden states.
    pub hidden_drift: Spread,
}

/// What a swapped forward costs, beside the exact one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwapCost {
    /// Measured time of one swapped forward (mean over the draws), milliseconds.
    pub forward_ms: f64,
    /// Measured time of the exact forward, milliseconds.
    pub exact_forward_ms: f64,
    /// Multiply-adds of the method in every swapped head (one forward).
    pub attention_multiply_adds: f64,
    /// Multiply-adds of softmax attention in the same heads (`L²(d + dv)` each).
    pub softmax_multiply_adds: f64,
    /// Multiply-adds of the exact forward, all of it.
    pub model_multiply_adds: f64,
}

/// What a swap does to one text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwapReport {
    pub method: String,
    pub label: String,
    /// Random projections m (or the learned map's features), when the method has a budget.
    pub features: Option<usize>,
    pub layers: Vec<usize>,
    pub tokens: usize,
    pub draws: usize,
    /// Draws whose forward could not go on (a row with an unusable denominator), and why.
    pub failed_draws: usize,
    pub failure: Option<String>,
    pub per_layer: Vec<LayerMovement>,
    /// Cosine of the sentence embedding to the exact model's, over the draws that went through.
    pub cosine: Option<Spread>,
    pub cost: SwapCost,
}

/// One ranking of the candidates: their indices, most similar to the query first, with cosines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ranking {
    pub order: Vec<usize>,
    pub cosines: Vec<f64>,
}

/// The retrieval set ranked exactly and with a swap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetrievalReport {
    pub method: String,
    pub layers: Vec<usize>,
    pub query: String,
    pub candidates: Vec<String>,
    pub exact: Ranking,
    /// The first draw's ranking (when a draw went through).
    pub approximate: Option<Ranking>,
    pub draws: usize,
    pub failed_draws: usize,
    pub failure: Option<String>,
    /// Share of draws whose best candidate is the exact model's.
    pub top1_kept: Option<f64>,
    /// Kendall's τ of each draw's cosines against the exact ones.
    pub kendall_tau: Option<Spread>,
    /// Computed here, or shipped with the lab and checked here.
    pub origin: Origin,
}

/// Where an answer that does not depend on the reader's text comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Origin {
    /// Computed in this visit.
    #[default]
    Computed,
    /// Kept from an earlier visit (the browser's Cache Storage), checked against this build
    /// and model.
    Kept,
    /// Computed by the lab's build (`kernel-lab shipped`, the same code) and shipped beside
    /// the model, checked here against what this model computes.
    Shipped,
}

impl Origin {
    /// The page's name of it (`data-train-origin`, `data-origin`).
    pub fn key(self) -> &'static str {
        match self {
            Origin::Computed => "computed",
            Origin::Kept => "kept",
            Origin::Shipped => "shipped",
        }
    }
}

/// One point of the Hedgehog maps' training curve (means over the 72 heads).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HedgehogPoint {
    pub step: usize,
    /// Cross-entropy of the softmax rows under the maps' rows, on the training text.
    pub train_cross_entropy: f64,
    /// The same less the rows' entropy: KL(P ‖ P̂), 0 for a perfect map.
    pub train_kl: f64,
    /// KL(P ‖ P̂) on the evaluation text, at some steps.
    pub eval_kl: Option<f64>,
}

/// The trained maps' record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HedgehogTraining {
    pub job: HedgehogJob,
    pub train_tokens: usize,
    pub eval_tokens: usize,
    pub curve: Vec<HedgehogPoint>,
    pub train_ms: f64,
    /// Trained here, kept from an earlier visit or shipped with the lab (then `train_ms` is
    /// that training's).
    pub origin: Origin,
}

/// What the model worker answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ModelAnswer {
    /// One text through the model, and the forward's time (tokenizer included).
    Ran { run: TextRun, forward_ms: f64 },
    /// A swap's report, and the time it took in the worker.
    Swapped {
        job: SwapJob,
        report: Result<SwapReport, String>,
        ms: f64,
    },
    /// A retrieval's report.
    Retrieved {
        job: SwapJob,
        report: Result<RetrievalReport, String>,
        ms: f64,
    },
    /// A point of the Hedgehog maps' training, while it runs (an update: the request goes on).
    Training(HedgehogPoint),
    /// A part of a request split over workers did its share (its answer is part 0's).
    Helped,
    /// The Hedgehog maps are trained (the worker keeps them), or why not.
    Trained(Result<HedgehogTraining, String>),
    /// Anything that went wrong, as a sentence for the page.
    Failed(String),
}
