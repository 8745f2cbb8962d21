//! The attention view's part of the configuration: which data (synthetic, or a real head of
//! all-MiniLM-L6-v2), the sequence and feature sizes, the methods compared and how often they
//! are redrawn. [`super::ExperimentConfig`] holds it in `attention` and parses its URL keys.

use serde::{Deserialize, Serialize};

use crate::numerics::attention::method::{DEFAULT_METHODS, MethodId};

/// Which view of the lab is shown (URL `view`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum View {
    /// Single kernel values: the seed paper's figures.
    Kernel,
    /// Whole attention rows and outputs.
    Attention,
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
}

impl HeadSource {
    /// Whether the data is a real head (the stored passages or the user's text).
    pub fn is_real(self) -> bool {
        matches!(self, HeadSource::Minilm | HeadSource::Text)
    }
}

/// The longest text a link carries, in characters (a longer text is cut there in the link, and
/// the text view says so); the page itself takes up to `MAX_TEXT_BYTES` (100 KB).
pub const MAX_LINK_TEXT_CHARS: usize = 2_000;

/// The longest text the model is run on, in bytes: far beyond 512 tokens (a token is at least
/// one byte), small enough that a pasted book is refused at once instead of tokenized for seconds.
pub const MAX_TEXT_BYTES: usize = 100_000;

/// The text the text view starts with.
pub const DEFAULT_TEXT: &str = "A student types a sentence, and the lab runs a real transformer \
on it to show what each approximation of softmax attention does to every head.";

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
        }
    }

    /// The passage of the real heads' data that holds the chosen head: the stored passage, or
    /// the text's heads' only one; `None` for synthetic data.
    pub fn real_passage(&self) -> Option<usize> {
        match self.source {
            HeadSource::Synthetic => None,
            HeadSource::Minilm => Some(self.passage),
            HeadSource::Text => Some(0),
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
                super::quote(name),
                crate::numerics::attention::method::all_method_ids()
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
        let (l, df, dvf) = (len as f64, d as f64, dv as f64);
        let exact = l * l * (df + dvf);
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
