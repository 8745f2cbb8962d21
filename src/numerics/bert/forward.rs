//! The encoder's forward pass in f32: embeddings (word + position + token type 0, layer norm),
//! then per layer multi-head softmax attention, output projection, residual and layer norm,
//! the exact (erf) GELU feed-forward, residual and layer norm; the sentence embedding is the
//! mean of the last hidden states over every token (`[CLS]` and `[SEP]` included) divided by
//! its Euclidean norm, as sentence-transformers' mean pooling + `Normalize` give it.
//!
//! Hugging Face's `BertModel` (transformers, `modeling_bert.py`) and sentence-transformers'
//! `Pooling(mode_mean_tokens)` define it; tests/model.rs checks this one against an independent
//! NumPy forward in f64 (scripts/minilm-reference.py) and against the stored heads' Q, K, V.

use super::ModelError;
use super::part::join_parts;
use super::weights::BertWeights;

/// What the forward returns.
#[derive(Clone, Debug, PartialEq)]
pub struct Forward {
    /// Tokens L.
    pub len: usize,
    /// The last layer's hidden states, `L × hidden`.
    pub hidden: Vec<f32>,
    /// Mean-pooled and L2-normalised sentence embedding (`hidden` values).
    pub embedding: Vec<f32>,
    /// When asked for: every head's raw projections `x Wᵀ + b` of its layer's input (before the
    /// model's `1/√dh` scaling), ordered `[layer][head][q, k, v][token][dim]`, the layout of the
    /// stored heads' asset.
    pub qkv: Option<Vec<f32>>,
    /// When asked for: per layer, the heads' attention outputs side by side (`L × hidden`, before
    /// the output projection) and the layer's output hidden states (`L × hidden`).
    pub layers: Option<Vec<LayerStates>>,
}

/// One layer's attention outputs and output hidden states.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerStates {
    pub attention: Vec<f32>,
    pub hidden: Vec<f32>,
}

/// What a forward keeps besides the last hidden states and the embedding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Keep {
    /// Every head's raw Q, K, V ([`Forward::qkv`]).
    pub qkv: bool,
    /// Every layer's attention outputs and hidden states ([`Forward::layers`]).
    pub layers: bool,
}

/// One head's inputs in one layer: its raw projections (before the `1/√dh` scaling), each
/// `len × dim`, row `i` token `i`.
#[derive(Clone, Copy, Debug)]
pub struct HeadInputs<'a> {
    pub layer: usize,
    pub head: usize,
    pub len: usize,
    pub dim: usize,
    pub q: &'a [f32],
    pub k: &'a [f32],
    pub v: &'a [f32],
}

/// What replaces a head's softmax attention: `None` keeps softmax, `Some(Ok(out))` gives the
/// head's output (`len × dim`), `Some(Err(reason))` stops the forward with that reason.
pub type Replacement<'a> = &'a mut dyn FnMut(&HeadInputs) -> Option<Result<Vec<f32>, String>>;

impl BertWeights {
    /// Multiply-adds of one forward on `len` tokens: the six products of each layer (queries,
    /// keys and values, the attention output, the two feed-forward ones) and, per head, the
    /// scores `q kᵀ` and the weighted sum of the values.
    pub fn forward_multiply_adds(&self, len: usize) -> u64 {
        let per_layer: u64 = self.layers.first().map_or(0, |layer| {
            layer.qkv.multiply_adds(len)
                + layer.attention_output.multiply_adds(len)
                + layer.intermediate.multiply_adds(len)
                + layer.output.multiply_adds(len)
                + 2 * (len * len * self.config.hidden_size) as u64
        });
        per_layer * self.layers.len() as u64
    }

    /// The forward on token ids (`[CLS]` … `[SEP]`, at most `max_position_embeddings`).
    /// `keep_qkv` keeps every head's raw projections ([`Forward::qkv`]).
    pub fn forward(&self, ids: &[u32], keep_qkv: bool) -> Result<Forward, ModelError> {
        self.forward_with(
            ids,
            Keep {
                qkv: keep_qkv,
                layers: false,
            },
            None,
        )
    }

    /// The forward with what `keep` asks kept, and the heads `replace` answers for computed by
    /// it instead of softmax (the rest of the model unchanged): approximate attention inside
    /// the model. One part over every row ([`super::part`]): the forward that two workers
    /// split by rows is this one.
    pub fn forward_with(
        &self,
        ids: &[u32],
        keep: Keep,
        mut replace: Option<Replacement>,
    ) -> Result<Forward, ModelError> {
        let mut part = self.forward_part(ids, 0..ids.len(), keep)?;
        while part.next_layer().is_some() {
            let own = part.project()?;
            part.finish_layer_with(std::slice::from_ref(&own), &mut replace)?;
        }
        join_parts(vec![part.finish()?])
    }
}
