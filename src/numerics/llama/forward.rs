//! The decoder's forward over a text, in f32 from the quantised blocks: token embeddings, then
//! per layer `x += Wo · attention(rope(Wq h), rope(Wk h), Wv h)` with `h = rmsnorm(x)`, and
//! `x += Wdown (silu(Wgate h) ∘ Wup h)` with `h = rmsnorm(x)`; the tied head on the final norm.
//!
//! - RMSNorm: `x / √(mean x² + ε) · w`, the mean accumulated in f64 (as ggml does);
//! - rotary embeddings as GGUF stores a Llama: adjacent pairs `(x₂ᵢ, x₂ᵢ₊₁)` rotated by
//!   `pos · base^{−2i/d}` (the converter permuted Wq and Wk for this), angles in f64;
//! - grouped-query attention: query head `h` reads key/value head `h / (heads / kv_heads)`,
//!   causal softmax of `q·k / √d` by the tiled exact kernel (`attention::long::flash`);
//! - the losses and next tokens from the tied head: `scores`.
//!
//! A [`Replacement`] sees every head's rotated queries and keys (before the `1/√d` scaling) and
//! its values, and may answer instead of softmax: the swap of the lab's estimators.

use std::ops::Range;

use super::LmError;
use super::quant::QuantMatrix;
use super::weights::{LlamaModel, Part};
use crate::numerics::attention::long::Sequence;
use crate::numerics::attention::long::flash::flash_attention;
use crate::numerics::attention::long::gemm::exp_approx;
use crate::numerics::bert::{HeadInputs, Replacement};

/// One position's prediction of the next token.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// The most likely next tokens with their log-probabilities, most likely first.
    pub top: Vec<(u32, f64)>,
    /// The log-sum-exp of the logits (the log of softmax's normaliser).
    pub log_normaliser: f64,
}

/// What a forward over a text gives.
#[derive(Clone, Debug, PartialEq)]
pub struct LmScores {
    /// `losses[t]`: the loss of token `t + 1` in nats (`n − 1` values).
    pub losses: Vec<f64>,
    /// Per position, its prediction of the next token (when asked for).
    pub predictions: Vec<Prediction>,
}

impl LmScores {
    /// `exp` of the mean loss; `None` without a loss (a text of one token).
    pub fn perplexity(&self) -> Option<f64> {
        (!self.losses.is_empty())
            .then(|| (self.losses.iter().sum::<f64>() / self.losses.len() as f64).exp())
    }
}

/// An exact forward with what a later swap of one layer needs (see [`LlamaModel::exact_run`]).
pub struct ExactRun {
    pub ids: Vec<u32>,
    pub scores: LmScores,
    /// `states[l]`: the `n × width` hidden states entering layer `l` (at 1,024 tokens, 71 MB).
    pub states: Vec<Vec<f32>>,
    pub rope: Rope,
}

/// Buffers a layer reuses.
#[derive(Default)]
pub struct Scratch {
    normed: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    pub(super) attention: Vec<f32>,
    head_q: Vec<f32>,
    head_k: Vec<f32>,
    head_v: Vec<f32>,
    gate: Vec<f32>,
    up: Vec<f32>,
    out: Vec<f32>,
    panel: Vec<f32>,
}

impl Scratch {
    /// The queries, keys and values the last [`LlamaModel::project`] wrote, taken out.
    pub(super) fn take_q(&mut self) -> Vec<f32> {
        std::mem::take(&mut self.q)
    }

    pub(super) fn take_k(&mut self) -> Vec<f32> {
        std::mem::take(&mut self.k)
    }

    pub(super) fn take_v(&mut self) -> Vec<f32> {
        std::mem::take(&mut self.v)
    }
}

/// Rotation angles of `n` positions: `(cos, sin)`, each `n × d/2`.
pub struct Rope {
    cos: Vec<f32>,
    sin: Vec<f32>,
    half: usize,
}

impl Rope {
    pub fn new(n: usize, head_dim: usize, base: f64) -> Self {
        let half = head_dim / 2;
        let mut cos = Vec::with_capacity(n * half);
        let mut sin = Vec::with_capacity(n * half);
        for pos in 0..n {
            for i in 0..half {
                let angle = pos as f64 * base.powf(-2.0 * i as f64 / head_dim as f64);
                cos.push(angle.cos() as f32);
                sin.push(angle.sin() as f32);
            }
        }
        Self { cos, sin, half }
    }

    /// The angles of the one position `position` (a decoding step applies them to its row):
    /// the same values as row `position` of [`Rope::new`].
    pub fn at(position: usize, head_dim: usize, base: f64) -> Self {
        let half = head_dim / 2;
        let (mut cos, mut sin) = (Vec::with_capacity(half), Vec::with_capacity(half));
        for i in 0..half {
            let angle = position as f64 * base.powf(-2.0 * i as f64 / head_dim as f64);
            cos.push(angle.cos() as f32);
            sin.push(angle.sin() as f32);
        }
        Self { cos, sin, half }
    }

    /// Rotates every head of `x` (`n × heads·d`) in place.
    #[cfg(test)]
    fn apply(&self, x: &mut [f32], n: usize) {
        self.apply_rows(x, 0..n);
    }

    /// Rotates every head of `x` (rows `rows` of a text, `rows.len() × heads·d`) in place,
    /// each row at its position in the text.
    fn apply_rows(&self, x: &mut [f32], rows: Range<usize>) {
        let width = x.len() / rows.len().max(1);
        for (pos, row) in rows.zip(x.chunks_exact_mut(width)) {
            let (cos, sin) = (
                &self.cos[pos * self.half..(pos + 1) * self.half],
                &self.sin[pos * self.half..(pos + 1) * self.half],
            );
            for head in row.chunks_exact_mut(2 * self.half) {
                for ((pair, &c), &s) in head.chunks_exact_mut(2).zip(cos).zip(sin) {
                    let (a, b) = (pair[0], pair[1]);
                    pair[0] = a * c - b * s;
                    pair[1] = a * s + b * c;
                }
            }
        }
    }
}

impl LlamaModel {
    /// Checks a text's ids: at least one, at most the model's context, each in the vocabulary.
    pub fn check_ids(&self, ids: &[u32]) -> Result<(), LmError> {
        if ids.is_empty() {
            return Err(LmError::NoTokens);
        }
        if ids.len() > self.config.context {
            return Err(LmError::TooManyTokens {
                tokens: ids.len(),
                limit: self.config.context,
            });
        }
        if let Some(&id) = ids.iter().find(|&&id| id as usize >= self.config.vocab) {
            return Err(LmError::UnknownToken(id));
        }
        Ok(())
    }

    /// The tokens' embeddings, `n × width`.
    pub fn embed(&self, ids: &[u32]) -> Result<Vec<f32>, LmError> {
        self.check_ids(ids)?;
        let w = self.config.width;
        let table = self.embeddings();
        let mut x = vec![0.0f32; ids.len() * w];
        for (row, &id) in x.chunks_exact_mut(w).zip(ids) {
            table.row(id as usize, row);
        }
        Ok(x)
    }

    /// Layer `layer` on the hidden states `x` (`n × width`) in place.
    pub fn layer(
        &self,
        layer: usize,
        x: &mut [f32],
        n: usize,
        rope: &Rope,
        replace: &mut Option<Replacement>,
        s: &mut Scratch,
    ) -> Result<(), LmError> {
        self.project(layer, x, 0..n, rope, s);
        let (q, k, v) = (
            std::mem::take(&mut s.q),
            std::mem::take(&mut s.k),
            std::mem::take(&mut s.v),
        );
        let finished = self.attend_and_feed(layer, x, (0..n, n), (&q, &k, &v), replace, s);
        (s.q, s.k, s.v) = (q, k, v);
        finished
    }

    /// Rows `rows` of layer `layer`'s queries, keys and values (rotated at their positions)
    /// from those rows' hidden states `x` (`rows.len() × width`), into `s.q`, `s.k`, `s.v`:
    /// the first half of a layer, the one a part of a text split by rows shares with the
    /// others ([`super::part`]).
    pub(super) fn project(
        &self,
        layer: usize,
        x: &[f32],
        rows: Range<usize>,
        rope: &Rope,
        s: &mut Scratch,
    ) {
        let c = &self.config;
        let n = rows.len();
        rms_norm(x, &self.layers[layer].attn_norm, c.rms_eps, &mut s.normed);
        for (part, out) in [
            (Part::Q, &mut s.q),
            (Part::K, &mut s.k),
            (Part::V, &mut s.v),
        ] {
            let m = self.matrix(layer, part);
            out.resize(n * m.rows, 0.0);
            m.apply(&s.normed, n, out, &mut s.panel);
        }
        rope.apply_rows(&mut s.q, rows.clone());
        rope.apply_rows(&mut s.k, rows);
    }

    /// The rest of layer `layer` for rows `rows` of an `n`-token text whose hidden states
    /// `x` (`rows.len() × width`) it updates: every head's causal attention over the whole
    /// text's queries, keys and values (`n` rows each, from [`LlamaModel::project`]) of
    /// which the rows' outputs are kept, then the output projection and the feed-forward
    /// block, row by row. Each row's result is the same sequence of operations whatever
    /// other rows the call has (the products' property), so a text split by rows gives the
    /// whole forward's numbers bit for bit.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn attend_and_feed(
        &self,
        layer: usize,
        x: &mut [f32],
        (rows, n): (Range<usize>, usize),
        (q, k, v): (&[f32], &[f32], &[f32]),
        replace: &mut Option<Replacement>,
        s: &mut Scratch,
    ) -> Result<(), LmError> {
        let (w, d) = (self.config.width, self.config.head_dim);
        let mut attention = std::mem::take(&mut s.attention);
        attention.resize(rows.len() * w, 0.0);
        let heads = 0..self.config.heads;
        let attended = self.attend(layer, n, (q, k, v), heads, replace, s, &mut |head, out| {
            let kept = &out[rows.start * d..rows.end * d];
            for (row, o) in attention.chunks_exact_mut(w).zip(kept.chunks_exact(d)) {
                row[head * d..(head + 1) * d].copy_from_slice(o);
            }
        });
        s.attention = attention;
        attended?;
        self.feed(layer, x, rows.len(), s);
        Ok(())
    }

    /// Heads `heads` of layer `layer`'s causal attention over an `n`-token text's queries,
    /// keys and values: each head's output (`n × d`, softmax unless `replace` answers) handed
    /// to `keep` with the head's index.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn attend(
        &self,
        layer: usize,
        n: usize,
        (q, k, v): (&[f32], &[f32], &[f32]),
        heads: Range<usize>,
        replace: &mut Option<Replacement>,
        s: &mut Scratch,
        keep: &mut dyn FnMut(usize, &[f32]),
    ) -> Result<(), LmError> {
        let c = &self.config;
        let (w, d, kv) = (c.width, c.head_dim, c.kv_heads * c.head_dim);
        let group = c.heads / c.kv_heads;
        for kv_head in 0..c.kv_heads {
            let group_heads = kv_head * group..(kv_head + 1) * group;
            if group_heads.end <= heads.start || group_heads.start >= heads.end {
                continue;
            }
            gather(k, kv, kv_head * d, d, &mut s.head_k);
            gather(v, kv, kv_head * d, d, &mut s.head_v);
            for head in group_heads.filter(|h| heads.contains(h)) {
                gather(q, w, head * d, d, &mut s.head_q);
                let inputs = HeadInputs {
                    layer,
                    head,
                    len: n,
                    dim: d,
                    q: &s.head_q,
                    k: &s.head_k,
                    v: &s.head_v,
                };
                let replaced = replace.as_mut().and_then(|r| r(&inputs));
                let out = match replaced {
                    Some(Ok(out)) if out.len() == n * d => out,
                    Some(Ok(out)) => {
                        return Err(LmError::Replacement(format!(
                            "layer {layer} head {head}: {} values for {n} × {d}",
                            out.len()
                        )));
                    }
                    Some(Err(reason)) => return Err(LmError::Replacement(reason)),
                    None => {
                        // 1/√d is a power of two for d = 64: the scaling rounds nothing.
                        let scale = 1.0 / (d as f32).sqrt();
                        for q in s.head_q.iter_mut() {
                            *q *= scale;
                        }
                        let seq = Sequence::new(n, d, d, &s.head_q, &s.head_k, &s.head_v)
                            .ok_or_else(|| LmError::Replacement("head shapes".into()))?;
                        flash_attention(&seq, true)
                    }
                };
                keep(head, &out);
            }
        }
        Ok(())
    }

    /// The layer's second half on `own` rows whose attention (every head's, `own × width`)
    /// is in `s.attention`: the output projection and the feed-forward block, added to the
    /// rows' hidden states `x`.
    pub(super) fn feed(&self, layer: usize, x: &mut [f32], own: usize, s: &mut Scratch) {
        let c = &self.config;
        let weights = &self.layers[layer];
        let apply = |m: QuantMatrix, input: &[f32], out: &mut Vec<f32>, panel: &mut Vec<f32>| {
            out.resize(own * m.rows, 0.0);
            m.apply(input, own, out, panel);
        };
        apply(
            self.matrix(layer, Part::O),
            &s.attention,
            &mut s.out,
            &mut s.panel,
        );
        add(x, &s.out);
        rms_norm(x, &weights.ffn_norm, c.rms_eps, &mut s.normed);
        apply(
            self.matrix(layer, Part::Gate),
            &s.normed,
            &mut s.gate,
            &mut s.panel,
        );
        apply(
            self.matrix(layer, Part::Up),
            &s.normed,
            &mut s.up,
            &mut s.panel,
        );
        // SiLU with the branch-free exponential, so that the loop vectorises (libm's `expf` is
        // a call per value).
        for (g, u) in s.gate.iter_mut().zip(&s.up) {
            *g = *g / (1.0 + exp_approx(-*g)) * u;
        }
        apply(
            self.matrix(layer, Part::Down),
            &s.gate,
            &mut s.out,
            &mut s.panel,
        );
        add(x, &s.out);
    }

    /// The whole forward: embeddings, every layer (softmax unless `replace` answers), scores.
    pub fn forward(
        &self,
        ids: &[u32],
        top: usize,
        replace: Option<Replacement>,
    ) -> Result<LmScores, LmError> {
        let x = self.final_states(ids, replace)?;
        Ok(self.scores(&x, ids, top))
    }

    /// The hidden states leaving the last layer (`n × width`): the embeddings through every
    /// layer, softmax unless `replace` answers.
    pub(super) fn final_states(
        &self,
        ids: &[u32],
        mut replace: Option<Replacement>,
    ) -> Result<Vec<f32>, LmError> {
        let mut x = self.embed(ids)?;
        let n = ids.len();
        let rope = self.rope(n);
        let mut scratch = Scratch::default();
        for layer in 0..self.config.layers {
            self.layer(layer, &mut x, n, &rope, &mut replace, &mut scratch)?;
        }
        Ok(x)
    }

    /// The exact forward of `ids` keeping the hidden states entering each layer: a swap of one
    /// layer alone then starts from them ([`LlamaModel::swap_one`]) instead of recomputing the
    /// layers before it. Its scores are the forward's, bit for bit.
    pub fn exact_run(&self, ids: &[u32], top: usize) -> Result<ExactRun, LmError> {
        let mut x = self.embed(ids)?;
        let n = ids.len();
        let rope = self.rope(n);
        let mut scratch = Scratch::default();
        let mut states = Vec::with_capacity(self.config.layers);
        for layer in 0..self.config.layers {
            states.push(x.clone());
            self.layer(layer, &mut x, n, &rope, &mut None, &mut scratch)?;
        }
        Ok(ExactRun {
            scores: self.scores(&x, ids, top),
            ids: ids.to_vec(),
            states,
            rope,
        })
    }

    /// `run`'s text with layer `layer` alone answered by `replace` (the others softmax): the
    /// exact states entering it reused, so it costs the layers from `layer` on and the head.
    pub fn swap_one(
        &self,
        run: &ExactRun,
        layer: usize,
        replace: Replacement,
    ) -> Result<LmScores, LmError> {
        let entering = run.states.get(layer).ok_or_else(|| {
            LmError::Replacement(format!(
                "layer {layer} is not one of the model's {}",
                self.config.layers
            ))
        })?;
        self.finish(
            layer,
            (entering.clone(), &run.rope),
            &run.ids,
            0,
            Some(replace),
        )
    }

    /// Runs layers `from..` on `x`, the hidden states entering layer `from` (`n × width`), then
    /// scores: the end of a forward whose earlier layers are already known (the per-layer
    /// swap reuses the exact states before the swapped layer, and its angles, `rope`).
    pub fn finish(
        &self,
        from: usize,
        (mut x, rope): (Vec<f32>, &Rope),
        ids: &[u32],
        top: usize,
        mut replace: Option<Replacement>,
    ) -> Result<LmScores, LmError> {
        self.check_ids(ids)?;
        let n = ids.len();
        let rope_fits = rope.half * 2 == self.config.head_dim && rope.cos.len() == n * rope.half;
        if x.len() != n * self.config.width || from > self.config.layers || !rope_fits {
            return Err(LmError::Replacement(format!(
                "hidden states of {} values and angles of {} positions for {n} tokens entering \
                 layer {from}",
                x.len(),
                rope.cos.len() / rope.half.max(1)
            )));
        }
        let mut scratch = Scratch::default();
        for layer in from..self.config.layers {
            self.layer(layer, &mut x, n, rope, &mut replace, &mut scratch)?;
        }
        Ok(self.scores(&x, ids, top))
    }

    /// The rotation angles of `n` positions.
    pub fn rope(&self, n: usize) -> Rope {
        Rope::new(n, self.config.head_dim, self.config.rope_base)
    }
}

/// `out = x / √(mean x² + ε) · w` row by row.
pub(super) fn rms_norm(x: &[f32], w: &[f32], eps: f64, out: &mut Vec<f32>) {
    out.resize(x.len(), 0.0);
    for (row, o) in x.chunks_exact(w.len()).zip(out.chunks_exact_mut(w.len())) {
        let mean = row
            .iter()
            .map(|&v| f64::from(v) * f64::from(v))
            .sum::<f64>()
            / w.len() as f64;
        let scale = (1.0 / (mean + eps).sqrt()) as f32;
        for ((o, &v), &g) in o.iter_mut().zip(row).zip(w) {
            *o = v * scale * g;
        }
    }
}

pub(super) fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// Columns `start .. start + d` of every row of `m` (rows `stride` long) into `out`.
fn gather(m: &[f32], stride: usize, start: usize, d: usize, out: &mut Vec<f32>) {
    out.clear();
    for row in m.chunks_exact(stride) {
        out.extend_from_slice(&row[start..start + d]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rotating by the table equals rotating each pair by its angle, and position 0 is the
    /// identity.
    #[test]
    fn rope_rotates_adjacent_pairs() {
        let rope = Rope::new(3, 4, 100.0);
        let mut x: Vec<f32> = (0..3 * 8).map(|i| i as f32 * 0.25 - 2.0).collect();
        let before = x.clone();
        rope.apply(&mut x, 3);
        assert_eq!(&x[..8], &before[..8]);
        for pos in 0..3 {
            for head in 0..2 {
                for i in 0..2 {
                    let angle = pos as f64 * 100f64.powf(-2.0 * i as f64 / 4.0);
                    let at = pos * 8 + head * 4 + 2 * i;
                    let (a, b) = (f64::from(before[at]), f64::from(before[at + 1]));
                    let expected = (
                        a * angle.cos() - b * angle.sin(),
                        a * angle.sin() + b * angle.cos(),
                    );
                    assert!((f64::from(x[at]) - expected.0).abs() < 1e-5);
                    assert!((f64::from(x[at + 1]) - expected.1).abs() < 1e-5);
                }
            }
        }
    }
}
