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
pub use super::forward_io::{Forward, HeadInputs, Keep, LayerStates, Replacement};
use super::part::join_parts;
use super::weights::BertWeights;

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
        replace: Option<Replacement>,
    ) -> Result<Forward, ModelError> {
        self.forward_from_first(ids, keep, replace, None)
            .map(|(forward, _)| forward)
    }

    /// [`Self::forward_with`] that takes layer 0's projections `first` (`L × 3·hidden`, as a
    /// forward of the same `ids` returned them) instead of computing them, and returns them
    /// with the forward: layer 0 reads only the embeddings, so its projections are the same for
    /// every forward of a text, whatever attention later layers run (the model swap runs some
    /// forty forwards of one text). Projections of another shape are an error.
    pub fn forward_from_first(
        &self,
        ids: &[u32],
        keep: Keep,
        mut replace: Option<Replacement>,
        first: Option<&[f32]>,
    ) -> Result<(Forward, Vec<f32>), ModelError> {
        let mut part = self.forward_part(ids, 0..ids.len(), keep)?;
        let mut first_projections = Vec::new();
        while let Some(layer) = part.next_layer() {
            let own = match first {
                Some(qkv) if layer == 0 => part.project_from(qkv)?,
                _ => part.project()?,
            };
            if layer == 0 {
                first_projections = part.projections().to_vec();
            }
            part.finish_layer_with(std::slice::from_ref(&own), &mut replace)?;
        }
        Ok((join_parts(vec![part.finish()?])?, first_projections))
    }
}
