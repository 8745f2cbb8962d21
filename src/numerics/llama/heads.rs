//! The causal model's attention heads on a text, as the attention view reads them: every
//! layer's 9 query heads and its 3 key/value heads (grouped-query attention: query head h
//! reads key/value head h / 3), after the rotary position embedding, captured during one
//! exact forward ([`LlamaModel::heads`]). Keys and values are stored once per key/value head,
//! not once per query head: 30 × (9 + 3 + 3) × 64 values a token (58 MB in f32 at 512 tokens,
//! where a copy per query head would take 106 MB).

use crate::numerics::attention::heads::{HeadQkv, HeadSet, HeadShape, HeadsError, check_ranges};
use crate::numerics::bert::HeadInputs;

use super::{LlamaModel, LmError};

/// Every head of one text: raw (unscaled) post-RoPE queries and keys, and values.
#[derive(Clone, Debug, PartialEq)]
pub struct LmHeads {
    tokens: Vec<String>,
    layers: usize,
    heads: usize,
    kv_heads: usize,
    dim: usize,
    /// `[layer][head][token][dim]`.
    q: Vec<f32>,
    /// `[layer][kv head][token][dim]`, keys then values.
    k: Vec<f32>,
    v: Vec<f32>,
}

impl LlamaModel {
    /// The heads of `ids` (whose pieces are `tokens`): one exact forward, each head's inputs
    /// copied as the layer hands them to attention (softmax then runs as always).
    pub fn heads(&self, ids: &[u32], tokens: Vec<String>) -> Result<LmHeads, LmError> {
        let c = &self.config;
        let n = ids.len();
        if tokens.len() != n {
            return Err(LmError::Replacement(format!(
                "{} pieces for {n} tokens",
                tokens.len()
            )));
        }
        let group = c.heads / c.kv_heads.max(1);
        let block = n * c.head_dim;
        let mut q = vec![0.0f32; c.layers * c.heads * block];
        let mut k = vec![0.0f32; c.layers * c.kv_heads * block];
        let mut v = vec![0.0f32; c.layers * c.kv_heads * block];
        let mut capture = |inputs: &HeadInputs| -> Option<Result<Vec<f32>, String>> {
            let copy = |to: &mut [f32], index: usize, from: &[f32]| {
                if let Some(to) = to.get_mut(index * block..(index + 1) * block)
                    && from.len() == block
                {
                    to.copy_from_slice(from);
                }
            };
            copy(&mut q, inputs.layer * c.heads + inputs.head, inputs.q);
            if inputs.head.is_multiple_of(group) {
                let kv = inputs.layer * c.kv_heads + inputs.head / group;
                copy(&mut k, kv, inputs.k);
                copy(&mut v, kv, inputs.v);
            }
            None
        };
        self.forward(ids, 0, Some(&mut capture))?;
        Ok(LmHeads {
            tokens,
            layers: c.layers,
            heads: c.heads,
            kv_heads: c.kv_heads,
            dim: c.head_dim,
            q,
            k,
            v,
        })
    }
}

impl HeadSet for LmHeads {
    fn shape(&self) -> HeadShape {
        HeadShape {
            layers: self.layers,
            heads: self.heads,
            head_dim: self.dim,
            tokens: self.tokens.len(),
            passages: 1,
            causal: true,
        }
    }

    fn tokens(&self, passage: usize) -> Option<&[String]> {
        (passage == 0).then_some(self.tokens.as_slice())
    }

    fn head(&self, passage: usize, layer: usize, head: usize) -> Result<HeadQkv, HeadsError> {
        check_ranges([
            ("passage", passage, 1),
            ("layer", layer, self.layers),
            ("head", head, self.heads),
        ])?;
        let (n, block) = (self.tokens.len(), self.tokens.len() * self.dim);
        let group = self.heads / self.kv_heads.max(1);
        let kv = layer * self.kv_heads + head / group.max(1);
        let widen = |values: &[f32], index: usize| -> Vec<f64> {
            values[index * block..(index + 1) * block]
                .iter()
                .map(|&x| f64::from(x))
                .collect()
        };
        Ok(HeadQkv {
            len: n,
            dim: self.dim,
            q: widen(&self.q, layer * self.heads + head),
            k: widen(&self.k, kv),
            v: widen(&self.v, kv),
            causal: true,
        })
    }
}
