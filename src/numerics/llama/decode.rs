//! Decoding: the model continues a text one token at a time, each step running only the new
//! token through the layers. A softmax layer keeps every earlier position's rotated keys and
//! values (the key/value cache, `2 · position · kv_heads · d` floats, growing by a row per
//! token, and a step's attention reads all of it); a linear layer keeps, per head, the state of
//! a recurrent network ([`RecurrentHead`]: `S = Σ ψ(k) vᵀ`, `z = Σ ψ(k)`, D × d + D floats
//! whatever the position), so its step costs the same at position 10 and at 8,000.
//!
//! The prompt is read in one batched forward ([`Decoder::start`]), which fills the caches and
//! fits each linear head's map from the prompt's own queries and keys (`make_map`); the maps
//! stay fixed while decoding, so a step's output is what the whole causal linear attention with
//! those maps gives at that position ([`LlamaModel::next_logits`] recomputes it to check).
//! Queries and keys reach a linear head scaled by `d^{-1/4}` each (so `q'·k' = q·k/√d`), as the
//! lab's swap scales them.

use super::LmError;
use super::forward::{Rope, Scratch, rms_norm};
use super::weights::LlamaModel;
use crate::numerics::attention::long::gemm::exp_in_place;
use crate::numerics::attention::long::{FeatureMap32, RecurrentHead};
use crate::numerics::bert::HeadInputs;
use crate::numerics::simd::F4;

/// What a linear head's map is made from: the head's inputs on the prompt (queries and keys
/// rotated, unscaled), or why it has none.
pub type MapMaker<'a> = &'a mut dyn FnMut(&HeadInputs) -> Result<FeatureMap32, String>;

/// One layer's memory between tokens.
#[derive(Clone, Debug)]
enum LayerMemory {
    /// Per key/value head, the rotated keys and the values of every position (position × d).
    Softmax {
        keys: Vec<Vec<f32>>,
        values: Vec<Vec<f32>>,
    },
    /// Per query head, its recurrent state (`None` until the prompt made it).
    Linear { heads: Vec<Option<RecurrentHead>> },
}

impl LayerMemory {
    fn bytes(&self) -> usize {
        match self {
            LayerMemory::Softmax { keys, values } => {
                4 * keys.iter().chain(values).map(Vec::len).sum::<usize>()
            }
            LayerMemory::Linear { heads } => heads.iter().flatten().map(|h| h.state_bytes()).sum(),
        }
    }
}

/// A text being continued: every layer's memory after the tokens so far, and the logits of the
/// next token.
#[derive(Clone, Debug)]
pub struct Decoder {
    layers: Vec<LayerMemory>,
    position: usize,
    logits: Vec<f32>,
}

/// `d^{-1/4}` applied in f64 and rounded to f32, as the lab's swap scales a head's inputs.
fn quarter_scaled(x: &[f32], d: usize) -> Vec<f32> {
    let scale = (d as f64).powf(-0.25);
    x.iter().map(|&v| (f64::from(v) * scale) as f32).collect()
}

/// The refusal of a linear head whose denominator is not usable (as the swap's forward says).
fn unusable(layer: usize, head: usize) -> String {
    format!(
        "layer {layer} head {head}: a row has no usable normaliser (the estimated sum of its \
         weights is ≤ 0 or not finite), so decoding cannot go on"
    )
}

/// Softmax attention of one query (rotated, unscaled) over `keys` and `values` (position × d):
/// `Σ_j p_j v_j` with `p = softmax(q·k_j / √d)`, the dot products and the weighted sum in four
/// lanes (at 8,192 positions the scalar loops were 120 ms of a step).
fn attend_one(q: &[f32], keys: &[f32], values: &[f32], d: usize, out: &mut [f32]) {
    let scale = 1.0 / (d as f32).sqrt();
    let lanes = d - d % 4;
    let dot = |k: &[f32]| -> f32 {
        let mut acc = F4::splat(0.0);
        for i in (0..lanes).step_by(4) {
            acc = acc.mul_add(F4::load(&q[i..]), F4::load(&k[i..]));
        }
        let mut four = [0.0f32; 4];
        acc.store(&mut four);
        let tail: f32 = q[lanes..].iter().zip(&k[lanes..]).map(|(a, b)| a * b).sum();
        (four[0] + four[1]) + (four[2] + four[3]) + tail
    };
    let scores: Vec<f32> = keys.chunks_exact(d).map(|k| dot(k) * scale).collect();
    let max = scores.iter().fold(f32::NEG_INFINITY, |m, &s| m.max(s));
    let mut weights = scores;
    for w in weights.iter_mut() {
        *w -= max;
    }
    exp_in_place(&mut weights);
    let total: f32 = weights.iter().sum();
    out.fill(0.0);
    for (&p, v) in weights.iter().zip(values.chunks_exact(d)) {
        let p4 = F4::splat(p);
        for i in (0..lanes).step_by(4) {
            F4::load(&out[i..])
                .mul_add(p4, F4::load(&v[i..]))
                .store(&mut out[i..]);
        }
        for (o, x) in out[lanes..].iter_mut().zip(&v[lanes..]) {
            *o += p * x;
        }
    }
    out.iter_mut().for_each(|o| *o /= total);
}

impl Decoder {
    /// Reads `ids` (the prompt, at least one token) with `linear` layers run as recurrent
    /// networks (each head's map from `make_map` on the prompt) and the others softmax; the
    /// decoder then holds every layer's memory and the logits of the token after the prompt.
    pub fn start(
        model: &LlamaModel,
        ids: &[u32],
        linear: &[usize],
        make_map: MapMaker,
    ) -> Result<Self, LmError> {
        let c = &model.config;
        if let Some(&layer) = linear.iter().find(|&&l| l >= c.layers) {
            return Err(LmError::Replacement(format!(
                "layer {layer} is not one of the model's {}",
                c.layers
            )));
        }
        let mut x = model.embed(ids)?;
        let n = ids.len();
        let mut layers: Vec<LayerMemory> = (0..c.layers)
            .map(|l| {
                if linear.contains(&l) {
                    LayerMemory::Linear {
                        heads: vec![None; c.heads],
                    }
                } else {
                    LayerMemory::Softmax {
                        keys: vec![Vec::new(); c.kv_heads],
                        values: vec![Vec::new(); c.kv_heads],
                    }
                }
            })
            .collect();
        let group = c.heads / c.kv_heads;
        let rope = model.rope(n);
        let mut scratch = Scratch::default();
        for layer in 0..c.layers {
            let memory = &mut layers[layer];
            let mut remember = |h: &HeadInputs| -> Option<Result<Vec<f32>, String>> {
                match memory {
                    LayerMemory::Softmax { keys, values } => {
                        if h.head.is_multiple_of(group) {
                            keys[h.head / group].extend_from_slice(h.k);
                            values[h.head / group].extend_from_slice(h.v);
                        }
                        None
                    }
                    LayerMemory::Linear { heads } => Some(prefill_head(h, heads, &mut *make_map)),
                }
            };
            let mut replace: Option<crate::numerics::bert::Replacement> = Some(&mut remember);
            model.layer(layer, &mut x, n, &rope, &mut replace, &mut scratch)?;
        }
        let logits = model.logits_of(&x[(n - 1) * c.width..]);
        Ok(Self {
            layers,
            position: n,
            logits,
        })
    }

    /// The logits of the next token (the vocabulary's length).
    pub fn logits(&self) -> &[f32] {
        &self.logits
    }

    /// Tokens read so far (the prompt's and the steps').
    pub fn position(&self) -> usize {
        self.position
    }

    /// Bytes each layer keeps between tokens: a softmax layer's cache grows by
    /// `2 · kv_heads · d · 4` a token, a linear layer's state does not grow.
    pub fn memory_bytes(&self) -> Vec<usize> {
        self.layers.iter().map(LayerMemory::bytes).collect()
    }

    /// Multiply-adds of one more step's attention in each layer: a softmax layer's query
    /// heads each read every cached key and value (`2 · (position + 1) · d`), a linear layer's
    /// heads each make one recurrent step, whatever the position.
    pub fn step_attention_multiply_adds(&self, model: &LlamaModel) -> Vec<f64> {
        let c = &model.config;
        self.layers
            .iter()
            .map(|memory| match memory {
                LayerMemory::Softmax { .. } => {
                    (c.heads * 2 * (self.position + 1) * c.head_dim) as f64
                }
                LayerMemory::Linear { heads } => heads
                    .iter()
                    .flatten()
                    .map(RecurrentHead::step_multiply_adds)
                    .sum(),
            })
            .collect()
    }

    /// Reads `token` at the next position: the new logits.
    pub fn step(&mut self, model: &LlamaModel, token: u32) -> Result<&[f32], LmError> {
        let c = &model.config;
        if self.position >= c.context {
            return Err(LmError::TooManyTokens {
                tokens: self.position + 1,
                limit: c.context,
            });
        }
        let (d, group) = (c.head_dim, c.heads / c.kv_heads);
        let mut x = model.embed(&[token])?;
        let rope = Rope::at(self.position, d, c.rope_base);
        let mut scratch = Scratch::default();
        for (layer, memory) in self.layers.iter_mut().enumerate() {
            let mut attend = |h: &HeadInputs| -> Option<Result<Vec<f32>, String>> {
                let mut out = vec![0.0f32; d];
                match memory {
                    LayerMemory::Softmax { keys, values } => {
                        let kv = h.head / group;
                        if h.head.is_multiple_of(group) {
                            keys[kv].extend_from_slice(h.k);
                            values[kv].extend_from_slice(h.v);
                        }
                        attend_one(h.q, &keys[kv], &values[kv], d, &mut out);
                    }
                    LayerMemory::Linear { heads } => {
                        let Some(head) = heads.get_mut(h.head).and_then(Option::as_mut) else {
                            return Some(Err(format!(
                                "layer {} head {}: no state (the prompt did not make one)",
                                h.layer, h.head
                            )));
                        };
                        let (q, k) = (quarter_scaled(h.q, d), quarter_scaled(h.k, d));
                        if !head.step(&q, &k, h.v, &mut out) {
                            return Some(Err(unusable(h.layer, h.head)));
                        }
                    }
                }
                Some(Ok(out))
            };
            let mut replace: Option<crate::numerics::bert::Replacement> = Some(&mut attend);
            model.layer(layer, &mut x, 1, &rope, &mut replace, &mut scratch)?;
        }
        self.position += 1;
        self.logits = model.logits_of(&x);
        Ok(&self.logits)
    }
}

/// A linear head on the prompt: its map made, the prompt's causal linear attention by prefix
/// sums, the state kept in `heads`.
fn prefill_head(
    h: &HeadInputs,
    heads: &mut [Option<RecurrentHead>],
    make_map: MapMaker,
) -> Result<Vec<f32>, String> {
    let map = make_map(h)?;
    if map.dim() != h.dim {
        return Err(format!(
            "layer {} head {}: a map of dimension {} for heads of {}",
            h.layer,
            h.head,
            map.dim(),
            h.dim
        ));
    }
    let slot = heads
        .get_mut(h.head)
        .ok_or_else(|| format!("layer {}: no head {}", h.layer, h.head))?;
    let (q, k) = (quarter_scaled(h.q, h.dim), quarter_scaled(h.k, h.dim));
    let seq = crate::numerics::attention::long::Sequence::new(h.len, h.dim, h.dim, &q, &k, h.v)
        .ok_or_else(|| format!("layer {} head {}: shapes", h.layer, h.head))?;
    let mut head = RecurrentHead::new(map, h.dim);
    let (out, bad) = head.prefill(&seq);
    *slot = Some(head);
    if bad > 0 {
        return Err(unusable(h.layer, h.head));
    }
    Ok(out)
}

impl LlamaModel {
    /// The logits of the token after the row of final hidden states `x` (`width` floats).
    pub fn logits_of(&self, x: &[f32]) -> Vec<f32> {
        let mut normed = Vec::new();
        rms_norm(x, &self.output_norm, self.config.rms_eps, &mut normed);
        let mut logits = vec![0.0f32; self.config.vocab];
        self.embeddings()
            .apply(&normed, 1, &mut logits, &mut Vec::new());
        logits
    }

    /// The logits of the token after `ids`, by the whole forward (softmax unless `replace`
    /// answers): what a decoder's step must equal.
    pub fn next_logits(
        &self,
        ids: &[u32],
        replace: Option<crate::numerics::bert::Replacement>,
    ) -> Result<Vec<f32>, LmError> {
        let x = self.final_states(ids, replace)?;
        Ok(self.logits_of(&x[(ids.len() - 1) * self.config.width..]))
    }
}
