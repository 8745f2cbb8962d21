//! The attention view's part of the configuration: which data (synthetic, or a real head of
//! all-MiniLM-L6-v2), the sequence and feature sizes, the methods compared and how often they
//! are redrawn. [`crate::lab::config::ExperimentConfig`] holds it in `attention` and parses its URL keys.

use serde::{Deserialize, Serialize};

use crate::numerics::attention::methods::{DEFAULT_METHODS, MethodId};

/// Which view of the lab is shown (URL `view`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum View {
    /// Single kernel values: the seed paper's figures.
    Kernel,
    /// Whole attention rows and outputs.
    Attention,
    /// The causal language model on the reader's text: each token's loss, exact and swapped.
    Lm,
}

/// Where the attention view's queries, keys and values come from (URL `src`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HeadSource {
    /// The kernel view's distributions (d, Laplace means, Gamma variances, norms, seed), L
    /// tokens, Gaussian values.
    Synthetic,
    /// One head of all-MiniLM-L6-v2 on one of the stored passages (`passage`, `layer`,
    /// `head`), with the model's scaling q/d^{1/4}, k/d^{1/4}.
    Minilm,
    /// One head of all-MiniLM-L6-v2 run on the user's text (`text`, `layer`, `head`), computed
    /// by the model worker; the same scaling.
    Text,
    /// One of the 270 query heads of the causal language model (SmolLM2-135M: 30 layers × 9
    /// heads, three sharing each key and value head) on the user's text, after the rotary
    /// position embedding, scaled by `64^{-1/4}` each, under the causal mask; computed by the
    /// language model's workers.
    Lm,
}

impl HeadSource {
    /// Whether the data is a real head (the stored passages or the user's text).
    pub fn is_real(self) -> bool {
        matches!(self, HeadSource::Minilm | HeadSource::Text | HeadSource::Lm)
    }

    /// Whether its attention is causal (a decoder's: each query sees the earlier keys only).
    pub fn is_causal(self) -> bool {
        self == HeadSource::Lm
    }

    /// Its layers and heads per layer (synthetic data has neither: the widest allowed).
    pub fn shape(self) -> (usize, usize) {
        match self {
            HeadSource::Minilm | HeadSource::Text => (HEAD_LAYERS, HEADS_PER_LAYER),
            HeadSource::Lm => (LM_LAYERS, LM_HEADS),
            HeadSource::Synthetic => (MAX_HEAD_LAYERS, MAX_HEADS_PER_LAYER),
        }
    }

    /// Which model, in words.
    pub fn model_name(self) -> &'static str {
        match self {
            HeadSource::Lm => "SmolLM2-135M",
            _ => "all-MiniLM-L6-v2",
        }
    }
}

/// The causal language model's query heads per layer (three share each key and value head).
pub const LM_HEADS: usize = 9;

/// The causal language model's head dimension.
pub const LM_HEAD_DIM: usize = 64;

/// The most layers and heads per layer of any source (the URL's ranges of `layer`, `head`).
pub const MAX_HEAD_LAYERS: usize = if LM_LAYERS > HEAD_LAYERS {
    LM_LAYERS
} else {
    HEAD_LAYERS
};
pub const MAX_HEADS_PER_LAYER: usize = if LM_HEADS > HEADS_PER_LAYER {
    LM_HEADS
} else {
    HEADS_PER_LAYER
};

/// The longest text a link carries, in characters (a longer text is cut there in the link, and
/// the text view says so); the page itself takes up to `MAX_TEXT_BYTES` (100 KB).
pub const MAX_LINK_TEXT_CHARS: usize = 2_000;

/// The longest text the model is run on, in bytes: far beyond 512 tokens (a token is at least
/// one byte), small enough that a pasted book is refused at once instead of tokenized for seconds.
pub const MAX_TEXT_BYTES: usize = 100_000;

/// The text the text view starts with.
pub const DEFAULT_TEXT: &str = "A student types a sentence, and the lab runs a real transformer \
on it to show what each approximation of softmax attention does to every head.";

/// The stored passages' texts (`assets/minilm-heads.bin`; tests/heads.rs checks them against
/// the asset's header): the text view offers them, so that the model swap runs on them too.
pub const STORED_PASSAGES: [&str; HEAD_PASSAGES] = [
    "Attention lets every word look at every other word: each query is compared with all keys, \
     and a softmax turns scores into weights for the values.",
    "Random features replace the exponential kernel by an average of simple products, so the \
     cost of attention grows only linearly with the length of the input text.",
];

/// The model's positions: a longer text is cut to its first 512 tokens.
pub const MODEL_MAX_TOKENS: usize = 512;

/// A rough count of the tokens of `text` (words and punctuation marks, `[CLS]` and `[SEP]`),
/// capped at [`MODEL_MAX_TOKENS`]: only for the work estimate before the real tokens are known.
pub fn estimated_tokens(text: &str) -> usize {
    let words = text.split_whitespace().count();
    let marks = text.chars().filter(|c| c.is_ascii_punctuation()).count();
    (2 + words + marks).min(MODEL_MAX_TOKENS)
}

/// Passages, layers and heads of the stored real heads (`assets/minilm-heads.bin`; the loader
/// checks the asset against these).
pub const HEAD_PASSAGES: usize = 2;
pub const HEAD_LAYERS: usize = 6;
pub const HEADS_PER_LAYER: usize = 12;
/// Tokens per stored passage and the head dimension.
pub const HEAD_TOKENS: usize = 32;
pub const HEAD_DIM: usize = 32;

/// The attention view's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttentionSettings {
    pub source: HeadSource,
    /// Passage, layer and head of a real head.
    pub passage: usize,
    pub layer: usize,
    pub head: usize,
    /// The user's text (`src=text`).
    pub text: String,
    /// Tokens L of synthetic data (a real passage has [`HEAD_TOKENS`]).
    pub len: usize,
    /// Dimension of synthetic values (a real head's values have [`HEAD_DIM`]).
    pub value_dim: usize,
    /// Random projections m of every random feature map (as the kernel view's m).
    pub features: usize,
    /// The methods compared, in [`MethodId::all`] order, no repeats, at least one.
    pub methods: Vec<MethodId>,
    /// Degree n of the Taylor and `(1 + x/n)^n` maps.
    pub degree: usize,
    /// Independent draws for bias and variance.
    pub draws: usize,
    /// Samples ω per query of randomized attention.
    pub ra_samples: usize,
    /// Nyström's landmarks c.
    pub landmarks: usize,
    /// The sliding window's width w (keys given their exact weight).
    pub window: usize,
    /// The sparse + low-rank method's exact keys k per query.
    pub top_k: usize,
    /// The method shown in the heatmaps.
    pub focus: MethodId,
    /// The model's layers whose every head runs the method in the model swap (`src=text`).
    pub swap_layers: Vec<usize>,
    /// Draws of a random method swapped into the model.
    pub swap_draws: usize,
    /// Training steps of the Hedgehog maps (0: no Hedgehog).
    pub hedgehog_steps: usize,
    /// The retrieval set: the query on the first line, the candidates on the others.
    pub retrieval: String,
    /// Whether the model swap takes the answers that do not depend on the text (the Hedgehog
    /// maps, the retrieval set's reports) from an earlier visit or from the lab's build when
    /// their check holds, instead of computing them again (`lab::models::shipped`).
    pub reuse_answers: bool,
    /// The length study's longest L (0: the study is off; else 128 to 16,384).
    pub length_max: usize,
    /// Whether the page's length study times one unit at a time (each kernel alone on the
    /// device) instead of one on every worker at once (`lab::page::lengths_run`; the command
    /// line always times one at a time).
    pub lengths_alone: bool,
    /// The language model view's method in place of softmax (`None`: exact only).
    pub lm_method: Option<MethodId>,
    /// The language model's layers that run it, sorted, no repeats, each below [`LM_LAYERS`].
    pub lm_layers: Vec<usize>,
    /// Whether the language model view charts the method in each layer alone (30 forwards
    /// from the middle of the model on, per draw: seconds of both cores for every text).
    pub lm_chart: bool,
    /// Tokens the language model view adds to the text, exactly and with `lm_layers` linear
    /// (0: no continuation; at most [`LM_MAX_GENERATED`]).
    pub lm_generate: usize,
    /// The continuation's sampling temperature (0: the likeliest token each time).
    pub lm_temperature: f64,
    /// The language model's layers whose Hedgehog maps are trained on the lab's transfer text
    /// and swapped in (`lab::models::smollm::transfer`; empty: no transfer).
    pub lm_train: Vec<usize>,
    /// Adam steps of each transferred layer's training (1 to [`LM_MAX_TRAIN_STEPS`]).
    pub lm_train_steps: usize,
}

/// The most Adam steps of a transferred layer's training (`lmsteps`).
pub const LM_MAX_TRAIN_STEPS: usize = 400;

/// The most tokens a continuation adds to the reader's text (`lmgen`).
pub const LM_MAX_GENERATED: usize = 128;

/// The language model's layers (SmolLM2-135M).
pub const LM_LAYERS: usize = 30;

/// The layers a swap names: `all`, one layer, a list, a range, or a mix (`0,4-6,29`).
/// The layers of `text` among `count`, sorted and without repeats, or a sentence saying what
/// is wrong.
pub fn parse_layers(text: &str, count: usize) -> Result<Vec<usize>, String> {
    let text = text.trim();
    if text == "all" {
        return Ok((0..count).collect());
    }
    let bad = |piece: &str| {
        format!(
            "expected all, a layer from 0 to {}, a list (1,4) or a range (3-7); got {piece:?}",
            count.saturating_sub(1)
        )
    };
    let layer = |piece: &str| match piece.trim().parse::<usize>() {
        Ok(l) if l < count => Ok(l),
        _ => Err(bad(piece)),
    };
    let mut layers = Vec::new();
    for piece in text.split(',') {
        match piece.split_once('-') {
            Some((from, to)) => {
                let (from, to) = (layer(from)?, layer(to)?);
                if from > to {
                    return Err(bad(piece));
                }
                layers.extend(from..=to);
            }
            None => layers.push(layer(piece)?),
        }
    }
    layers.sort_unstable();
    layers.dedup();
    Ok(layers)
}

/// `all` for every layer, else the layers as ranges: `0-4,9,20-29`.
pub fn lm_layers_text(layers: &[usize]) -> String {
    if layers.len() == LM_LAYERS && layers.iter().enumerate().all(|(i, &l)| i == l) {
        return "all".to_string();
    }
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < layers.len() {
        let mut j = i;
        while j + 1 < layers.len() && layers[j + 1] == layers[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", layers[i], layers[j])
        } else {
            layers[i].to_string()
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The budgets m of the model swap's cosine-against-m chart.
pub const SWAP_BUDGETS: [usize; 4] = [16, 64, 256, 1024];

/// The most draws of a random method swapped into the model.
pub const MAX_SWAP_DRAWS: usize = 16;

/// The Hedgehog maps' half feature count n (φ has 2n = 64 features): n = dh, where the map
/// starts at the identity (as LoLCATs initialises it).
pub const HEDGEHOG_HALF_FEATURES: usize = HEAD_DIM;

/// The Hedgehog maps' Adam learning rate.
pub const HEDGEHOG_LEARNING_RATE: f64 = 0.01;

/// The retrieval preset: a query, then candidates (paraphrases of it first, then sentences on
/// nearby topics, then distractors). Written for this project.
pub const RETRIEVAL_QUERY: &str = "How does a transformer decide which words to attend to?";
pub const RETRIEVAL_CANDIDATES: [&str; 10] = [
    "A transformer compares each query with every key to weight the words it attends to.",
    "Attention scores come from dot products of queries and keys, normalised by a softmax.",
    "Which words a transformer focuses on is decided by its attention weights.",
    "Random features approximate the softmax kernel so attention costs linear time.",
    "Linear attention replaces the exponential kernel with a product of feature maps.",
    "Sentence embeddings are the mean of the last hidden states, normalised to length one.",
    "The recipe needs two eggs, a cup of flour and a pinch of salt.",
    "The train to the coast leaves at seven in the morning.",
    "Our cat sleeps on the windowsill when the sun is out.",
    "Stock markets fell sharply after the announcement on interest rates.",
];

/// Candidates of a retrieval set, at least and at most.
pub const RETRIEVAL_CANDIDATES_RANGE: (usize, usize) = (2, 20);

/// The longest line of a retrieval set, in bytes.
pub const MAX_RETRIEVAL_LINE_BYTES: usize = 500;

/// The retrieval preset as the `retrieval` parameter writes it: one sentence per line.
pub fn default_retrieval() -> String {
    std::iter::once(RETRIEVAL_QUERY)
        .chain(RETRIEVAL_CANDIDATES)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A retrieval set's query and candidates: its non-blank lines, trimmed, the first the query.
pub fn parse_retrieval(text: &str) -> Result<(String, Vec<String>), String> {
    let lines: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    let (least, most) = RETRIEVAL_CANDIDATES_RANGE;
    if let Some(long) = lines.iter().find(|l| l.len() > MAX_RETRIEVAL_LINE_BYTES) {
        return Err(format!(
            "each line holds at most {MAX_RETRIEVAL_LINE_BYTES} bytes (one has {})",
            long.len()
        ));
    }
    match lines.split_first() {
        Some((query, candidates)) if (least..=most).contains(&candidates.len()) => {
            Ok((query.clone(), candidates.to_vec()))
        }
        _ => Err(format!(
            "one query line, then {least} to {most} candidate lines (got {} non-blank lines)",
            lines.len()
        )),
    }
}

/// Parses the swapped layers: `all`, `none` (no model swap), or distinct layers 0 to 5,
/// comma-separated.
pub fn parse_swap_layers(text: &str) -> Result<Vec<usize>, String> {
    match text.trim() {
        "all" => return Ok((0..HEAD_LAYERS).collect()),
        "none" | "" => return Ok(Vec::new()),
        _ => {}
    }
    let mut layers = text
        .split(',')
        .map(|v| match v.trim().parse::<usize>() {
            Ok(l) if l < HEAD_LAYERS => Ok(l),
            _ => Err(format!(
                "all, none, or layers from 0 to {} (got {v:?})",
                HEAD_LAYERS - 1
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    layers.sort_unstable();
    layers.dedup();
    Ok(layers)
}

/// The swapped layers as the link writes them.
pub fn swap_layers_text(layers: &[usize]) -> String {
    if layers.len() == HEAD_LAYERS {
        "all".to_string()
    } else if layers.is_empty() {
        "none".to_string()
    } else {
        layers
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl Default for AttentionSettings {
    fn default() -> Self {
        let methods = in_method_order(
            &DEFAULT_METHODS
                .iter()
                .filter_map(|id| MethodId::from_id(id))
                .collect::<Vec<_>>(),
        );
        Self {
            source: HeadSource::Synthetic,
            passage: 0,
            text: DEFAULT_TEXT.to_string(),
            layer: 0,
            head: 0,
            len: 256,
            value_dim: 16,
            features: 256,
            methods,
            degree: 2,
            draws: 8,
            ra_samples: 4,
            landmarks: 16,
            window: 16,
            top_k: 8,
            focus: MethodId::from_id("prf-pos").unwrap_or_else(MethodId::first),
            swap_layers: (0..HEAD_LAYERS).collect(),
            swap_draws: 3,
            hedgehog_steps: 100,
            retrieval: default_retrieval(),
            reuse_answers: true,
            length_max: 0,
            lengths_alone: false,
            lm_method: MethodId::from_id("prf-pos"),
            lm_layers: (0..LM_LAYERS).collect(),
            lm_chart: true,
            lm_generate: 0,
            lm_temperature: 0.0,
            lm_train: Vec::new(),
            lm_train_steps: 40,
        }
    }
}

impl AttentionSettings {
    /// Tokens, query/key dimension and value dimension of the data, given the kernel view's
    /// dimension `d` (used by synthetic data).
    pub fn shape(&self, d: usize) -> (usize, usize, usize) {
        match self.source {
            HeadSource::Synthetic => (self.len, d, self.value_dim),
            HeadSource::Minilm => (HEAD_TOKENS, HEAD_DIM, HEAD_DIM),
            HeadSource::Text => (estimated_tokens(&self.text), HEAD_DIM, HEAD_DIM),
            HeadSource::Lm => (estimated_tokens(&self.text), LM_HEAD_DIM, LM_HEAD_DIM),
        }
    }

    /// The chosen methods the view computes: every one, or on a causal source those with a
    /// causal form ([`MethodId::has_causal_form`]).
    pub fn computed_methods(&self) -> Vec<MethodId> {
        let causal = self.source.is_causal();
        self.methods
            .iter()
            .copied()
            .filter(|m| !causal || m.has_causal_form())
            .collect()
    }

    /// The chosen methods a causal source leaves out (none otherwise).
    pub fn masked_out_methods(&self) -> Vec<MethodId> {
        let causal = self.source.is_causal();
        self.methods
            .iter()
            .copied()
            .filter(|m| causal && !m.has_causal_form())
            .collect()
    }

    /// The passage of the real heads' data that holds the chosen head: the stored passage, or
    /// the text's heads' only one; `None` for synthetic data.
    pub fn real_passage(&self) -> Option<usize> {
        match self.source {
            HeadSource::Synthetic => None,
            HeadSource::Minilm => Some(self.passage),
            HeadSource::Text | HeadSource::Lm => Some(0),
        }
    }
}

/// The distinct methods of `chosen`, in [`MethodId::all`]'s order (what a sort and a dedup
/// would give, without linking one more sort into the page).
fn in_method_order(chosen: &[MethodId]) -> Vec<MethodId> {
    MethodId::all().filter(|id| chosen.contains(id)).collect()
}

/// Parses a method list (`prf-pos,taylor,ra`).
pub fn parse_methods(text: &str) -> Result<Vec<MethodId>, String> {
    let mut chosen = Vec::new();
    for name in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let method = MethodId::from_id(name).ok_or_else(|| {
            format!(
                "unknown method {} (expected {})",
                super::values::quote(name),
                crate::numerics::attention::methods::all_method_ids()
            )
        })?;
        chosen.push(method);
    }
    let chosen = in_method_order(&chosen);
    if chosen.is_empty() {
        return Err("choose at least one method".to_string());
    }
    Ok(chosen)
}

/// Upper limit of one attention recompute's multiply-adds ([`AttentionSettings::work`]): a few
/// seconds of the worker pool. Beyond it a value is refused (a slider stops at it).
pub const MAX_ATTENTION_WORK: f64 = 2.0e10;

/// Above this many multiply-adds the attention view asks before it starts (a few seconds of
/// the pool); [`MAX_ATTENTION_WORK`] refuses outright.
pub const ATTENTION_ASK_WORK: f64 = 6.0e9;

/// Deterministic feature maps are materialised only up to this many features per token;
/// beyond it their kernel is evaluated as the polynomial in q·k, in O(L²) (and the page says so).
pub const DETERMINISTIC_FEATURE_BUDGET: usize = 8192;

/// Rows of P̂ formed for the total-variation distances (spread over the sequence); the output
/// error covers every row.
pub const TV_ROWS: usize = 64;

/// Temperatures of the entropy and spectral-gap chart.
pub const TEMPERATURES: [f64; 7] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0];

/// Feature budgets D of the error-against-budget chart.
pub const BUDGETS: [usize; 8] = [16, 32, 64, 128, 256, 512, 1024, 2048];

/// The first tokens that the matrix charts (heatmaps, singular values, entropy, spectral gap)
/// treat as a sequence of their own, so that an L × L matrix is never formed for large L.
pub const BLOCK: usize = 96;

impl AttentionSettings {
    /// Features per token of a method (`None` when it overflows).
    pub fn feature_size(&self, method: MethodId, d: usize) -> Option<usize> {
        method.get().feature_size(&self.method_settings(), d)
    }

    /// Multiply-adds of one method on one draw of an L-token problem.
    pub fn method_work(&self, method: MethodId, len: usize, d: usize, dv: usize) -> f64 {
        method
            .get()
            .work(&self.method_settings(), (len, d, dv), TV_ROWS)
    }

    /// Multiply-adds of one method's outputs alone on an L-token problem (no row of P̂ formed):
    /// what it costs inside the model.
    pub fn output_work(&self, method: MethodId, len: usize, d: usize, dv: usize) -> f64 {
        method.get().work(&self.method_settings(), (len, d, dv), 0)
    }

    /// What the methods read of these settings, for the work estimate (the estimator
    /// parameters and the coupling of ω do not change a method's cost).
    fn method_settings(&self) -> crate::numerics::attention::method::MethodSettings {
        crate::numerics::attention::method::MethodSettings {
            features: self.features,
            coupling: Default::default(),
            degree: self.degree,
            ra_samples: self.ra_samples,
            landmarks: self.landmarks,
            window: self.window,
            top_k: self.top_k,
            estimator_params: Default::default(),
            deterministic_feature_budget: DETERMINISTIC_FEATURE_BUDGET,
        }
    }

    /// Multiply-adds of a full attention recompute: the exact attention and every method's
    /// draw, R draws of the random ones, the temperature and budget sweeps (on the first
    /// [`BLOCK`] tokens and the first 256 tokens).
    pub fn work(&self, d: usize) -> f64 {
        let (len, d, dv) = self.shape(d);
        let (df, dvf) = (d as f64, dv as f64);
        let exact = softmax_work(len, d, dv);
        let block = len.min(BLOCK);
        let budget_len = len.min(256);
        let mut total = exact;
        for &method in &self.methods {
            let one = self.method_work(method, len, d, dv);
            total += one;
            if method.is_random() {
                total += self.draws as f64 * one;
            }
            total += TEMPERATURES.len() as f64 * self.method_work(method, block, d, dv);
            if method.get().sweeps_budget() {
                // Two draws at each budget D, each about L·D·(2d + 2dv).
                let per_feature = budget_len as f64 * (2.0 * df + 2.0 * dvf);
                total += 2.0 * per_feature * BUDGETS.iter().sum::<usize>() as f64;
            }
        }
        total
    }
}

/// Multiply-adds of softmax attention on an L-token problem: `L²(d + dv)` (the scores, then
/// the weighted values).
pub fn softmax_work(len: usize, d: usize, dv: usize) -> f64 {
    (len * len) as f64 * (d + dv) as f64
}
