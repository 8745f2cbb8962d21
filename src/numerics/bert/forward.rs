//! The encoder's forward pass in f32: embeddings (word + position + token type 0, layer norm),
//! then per layer multi-head softmax attention, output projection, residual and layer norm,
//! the exact (erf) GELU feed-forward, residual and layer norm; the sentence embedding is the
//! mean of the last hidden states over every token (`[CLS]` and `[SEP]` included) divided by
//! its Euclidean norm, as sentence-transformers' mean pooling + `Normalize` give it.
//!
//! Hugging Face's `BertModel` (transformers, `modeling_bert.py`) and sentence-transformers'
//! `Pooling(mode_mean_tokens)` define it; tests/model.rs checks this one against an independent
//! NumPy forward in f64 (scripts/minilm-reference.py) and against the stored heads' Q, K, V.

use half::f16;

use super::ModelError;
use super::weights::{BertWeights, LayerNorm};
use crate::numerics::attention::long::{Sequence, flash_attention};

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

/// `x ← LayerNorm(x)` row by row (population variance, `eps` inside the root).
fn layer_norm(x: &mut [f32], norm: &LayerNorm, eps: f32) {
    let h = norm.weight.len();
    for row in x.chunks_exact_mut(h) {
        let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / h as f64;
        let var = row
            .iter()
            .map(|&v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            / h as f64;
        let inv = 1.0 / (var + f64::from(eps)).sqrt();
        for ((v, w), b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
            *v = ((f64::from(*v) - mean) * inv) as f32 * w + b;
        }
    }
}

/// The exact GELU, `x Φ(x) = x (1 + erf(x/√2)) / 2`.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + libm::erff(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// Softmax attention of every head: `out_i = Σ_j softmax_j(q_i·k_j/√dh) v_j`, heads side by
/// side in `out` (`L × hidden`). `qkv` is `L × 3·hidden` (queries, keys, values). A head that
/// `replace` answers for takes its output instead.
fn attention(
    qkv: &[f32],
    (layer, len, heads, dh): (usize, usize, usize, usize),
    out: &mut [f32],
    replace: &mut Option<Replacement>,
) -> Result<(), ModelError> {
    let h = heads * dh;
    let scale = 1.0 / (dh as f32).sqrt();
    let mut queries = vec![0.0f32; len * dh];
    let mut keys = vec![0.0f32; len * dh];
    let mut values = vec![0.0f32; len * dh];
    for head in 0..heads {
        // This head's queries, keys and values, contiguous.
        for j in 0..len {
            let row = &qkv[j * 3 * h..(j + 1) * 3 * h];
            queries[j * dh..(j + 1) * dh].copy_from_slice(&row[head * dh..(head + 1) * dh]);
            keys[j * dh..(j + 1) * dh].copy_from_slice(&row[h + head * dh..h + (head + 1) * dh]);
            values[j * dh..(j + 1) * dh]
                .copy_from_slice(&row[2 * h + head * dh..2 * h + (head + 1) * dh]);
        }
        if let Some(replace) = replace.as_mut() {
            let inputs = HeadInputs {
                layer,
                head,
                len,
                dim: dh,
                q: &queries,
                k: &keys,
                v: &values,
            };
            match replace(&inputs) {
                None => {}
                Some(Err(reason)) => return Err(ModelError::Replacement(reason)),
                Some(Ok(output)) if output.len() == len * dh => {
                    for (i, row) in output.chunks_exact(dh).enumerate() {
                        out[i * h + head * dh..i * h + (head + 1) * dh].copy_from_slice(row);
                    }
                    continue;
                }
                Some(Ok(output)) => {
                    return Err(ModelError::Replacement(format!(
                        "layer {layer} head {head}: {} values, expected {}",
                        output.len(),
                        len * dh
                    )));
                }
            }
        }
        // Exact softmax, tiled (numerics::attention::long::flash): the queries carry the
        // 1/√dh, so that q·k is the logit.
        queries.iter_mut().for_each(|x| *x *= scale);
        let sequence = Sequence {
            len,
            d: dh,
            dv: dh,
            q: &queries,
            k: &keys,
            v: &values,
        };
        let output = flash_attention(&sequence, false);
        for (i, row) in output.chunks_exact(dh).enumerate() {
            out[i * h + head * dh..i * h + (head + 1) * dh].copy_from_slice(row);
        }
    }
    Ok(())
}

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
    /// the model.
    pub fn forward_with(
        &self,
        ids: &[u32],
        keep: Keep,
        mut replace: Option<Replacement>,
    ) -> Result<Forward, ModelError> {
        let keep_qkv = keep.qkv;
        let c = &self.config;
        let (len, h, dh, heads) = (
            ids.len(),
            c.hidden_size,
            c.head_dim(),
            c.num_attention_heads,
        );
        if len == 0 {
            return Err(ModelError::NoTokens);
        }
        if len > c.max_position_embeddings {
            return Err(ModelError::TooManyTokens {
                tokens: len,
                limit: c.max_position_embeddings,
            });
        }
        if let Some(&id) = ids.iter().find(|&&id| id as usize >= c.vocab_size) {
            return Err(ModelError::Tokenizer(format!(
                "token id {id} is outside the vocabulary of {}",
                c.vocab_size
            )));
        }
        let eps = c.layer_norm_eps as f32;
        let mut x = vec![0.0f32; len * h];
        for (i, (&id, row)) in ids.iter().zip(x.chunks_exact_mut(h)).enumerate() {
            let word = &self.word_embeddings[id as usize * h..(id as usize + 1) * h];
            let position = &self.position_embeddings[i * h..(i + 1) * h];
            for (((v, w), p), t) in row
                .iter_mut()
                .zip(word)
                .zip(position)
                .zip(&self.token_type_embedding)
            {
                *v = f16::to_f32(*w) + p + t;
            }
        }
        layer_norm(&mut x, &self.embedding_norm, eps);

        let mut qkv = vec![0.0f32; len * 3 * h];
        let mut context = vec![0.0f32; len * h];
        let mut projected = vec![0.0f32; len * h];
        let mut inner = vec![0.0f32; len * c.intermediate_size];
        let mut kept = keep_qkv.then(|| Vec::with_capacity(self.layers.len() * 3 * len * h));
        let mut states = keep.layers.then(|| Vec::with_capacity(self.layers.len()));
        for (index, layer) in self.layers.iter().enumerate() {
            layer.qkv.apply(&x, len, &mut qkv);
            if let Some(kept) = kept.as_mut() {
                for head in 0..heads {
                    for part in 0..3 {
                        for i in 0..len {
                            let start = i * 3 * h + part * h + head * dh;
                            kept.extend_from_slice(&qkv[start..start + dh]);
                        }
                    }
                }
            }
            attention(&qkv, (index, len, heads, dh), &mut context, &mut replace)?;
            layer.attention_output.apply(&context, len, &mut projected);
            x.iter_mut().zip(&projected).for_each(|(a, b)| *a += b);
            layer_norm(&mut x, &layer.attention_norm, eps);
            layer.intermediate.apply(&x, len, &mut inner);
            inner.iter_mut().for_each(|v| *v = gelu(*v));
            layer.output.apply(&inner, len, &mut projected);
            x.iter_mut().zip(&projected).for_each(|(a, b)| *a += b);
            layer_norm(&mut x, &layer.output_norm, eps);
            if let Some(states) = states.as_mut() {
                states.push(LayerStates {
                    attention: context.clone(),
                    hidden: x.clone(),
                });
            }
        }

        let mut mean = vec![0.0f64; h];
        for row in x.chunks_exact(h) {
            mean.iter_mut()
                .zip(row)
                .for_each(|(m, &v)| *m += f64::from(v));
        }
        let norm = mean.iter().map(|m| m * m).sum::<f64>().sqrt().max(1e-300);
        let embedding = mean.iter().map(|m| (m / norm) as f32).collect();
        Ok(Forward {
            len,
            hidden: x,
            embedding,
            qkv: kept,
            layers: states,
        })
    }
}
