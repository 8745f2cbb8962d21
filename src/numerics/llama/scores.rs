//! The tied head on the last hidden states: each token's loss in nats (`−log softmax(logits_t)
//! [id_{t+1}]`, an f64 log-sum-exp of the f32 logits; the first token has none, no BOS) and each
//! position's most likely next tokens, for the whole text or for the rows a part of a split
//! forward holds.

use std::ops::Range;

use super::LlamaModel;
use super::forward::{LmScores, Prediction, rms_norm};
use crate::numerics::attention::long::gemm::exp_in_place;

/// Rows of the head's logits computed at once (128 × 49,152 floats: 25 MB): each pass widens
/// the whole 28-million-weight table from its blocks, so fewer passes save that work (at 32
/// rows the widening took as long as a fifth of the head's multiply-adds).
const HEAD_ROWS: usize = 128;

impl LlamaModel {
    /// The losses of `ids[1..]` from the last hidden states `x` (`n × width`), and with `top`
    /// > 0 each position's `top` most likely next tokens.
    pub fn scores(&self, x: &[f32], ids: &[u32], top: usize) -> LmScores {
        self.scores_of_rows(x, 0..ids.len(), ids, top)
    }

    /// [`LlamaModel::scores`] of rows `rows` alone, from their last hidden states `x`
    /// (`rows.len() × width`): the losses of the tokens after them and their predictions. The
    /// head goes over the text's blocks of [`HEAD_ROWS`] whatever rows are asked (a row alone
    /// in its block takes the one-row product, any other the panels), so that each row's
    /// numbers are the whole text's bit for bit.
    pub(super) fn scores_of_rows(
        &self,
        x: &[f32],
        rows: Range<usize>,
        ids: &[u32],
        top: usize,
    ) -> LmScores {
        let (w, vocab) = (self.config.width, self.config.vocab);
        let n = ids.len();
        let mut normed = Vec::new();
        rms_norm(x, &self.output_norm, self.config.rms_eps, &mut normed);
        let head = self.embeddings();
        let mut logits = vec![0.0f32; HEAD_ROWS.min(rows.len()) * vocab];
        let mut panel = Vec::new();
        let mut shifted = vec![0.0f32; vocab];
        let mut losses = Vec::with_capacity(rows.len());
        let mut predictions = Vec::with_capacity(if top > 0 { rows.len() } else { 0 });
        for block_start in (0..n).step_by(HEAD_ROWS) {
            let block = block_start..(block_start + HEAD_ROWS).min(n);
            let (start, end) = (block.start.max(rows.start), block.end.min(rows.end));
            if start >= end {
                continue;
            }
            let count = end - start;
            let local = &normed[(start - rows.start) * w..(end - rows.start) * w];
            let out = &mut logits[..count * vocab];
            if block.len() == 1 {
                head.apply_one(local, out);
            } else {
                head.apply_panels(local, count, out, &mut panel);
            }
            for (r, row) in out.chunks_exact(vocab).enumerate() {
                let t = start + r;
                let log_normaliser = log_sum_exp(row, &mut shifted);
                if let Some(&next) = ids.get(t + 1) {
                    losses.push(log_normaliser - f64::from(row[next as usize]));
                }
                if top > 0 {
                    predictions.push(Prediction {
                        top: top_k(row, top)
                            .into_iter()
                            .map(|(id, v)| (id, f64::from(v) - log_normaliser))
                            .collect(),
                        log_normaliser,
                    });
                }
            }
        }
        LmScores {
            losses,
            predictions,
        }
    }
}

/// `log Σ exp(row)`: the largest value `M` first, then `M + ln Σ exp(v − M)` with the
/// differences exponentiated in f32 by the vectorised [`exp_in_place`] (relative error ≤ 4·10⁻⁷
/// per term) into `shifted` (the row's length) and summed in f64. The maximum and the sum run
/// in independent lanes so that both loops vectorise: 6.3 million libm `exp` calls in f64 were
/// an eighth of a 128-token forward's time in V8.
fn log_sum_exp(row: &[f32], shifted: &mut [f32]) -> f64 {
    const LANES: usize = 8;
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let chunks = row.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (m, &v) in lanes.iter_mut().zip(chunk) {
            *m = if v > *m { v } else { *m };
        }
    }
    let max = lanes
        .iter()
        .chain(tail)
        .fold(f32::NEG_INFINITY, |m, &v| if v > m { v } else { m });
    for (s, &v) in shifted.iter_mut().zip(row) {
        *s = v - max;
    }
    exp_in_place(shifted);
    let mut sums = [0.0f64; 4];
    let chunks = shifted.chunks_exact(4);
    let tail: f64 = chunks.remainder().iter().map(|&v| f64::from(v)).sum();
    for chunk in chunks {
        for (s, &v) in sums.iter_mut().zip(chunk) {
            *s += f64::from(v);
        }
    }
    f64::from(max) + ((sums[0] + sums[1]) + (sums[2] + sums[3]) + tail).ln()
}

/// The `k` largest entries of `row` with their indices, largest first (ties: lower index).
fn top_k(row: &[f32], k: usize) -> Vec<(u32, f32)> {
    let mut best: Vec<(u32, f32)> = Vec::with_capacity(k + 1);
    for (i, &v) in row.iter().enumerate() {
        if best.len() == k && best.last().is_some_and(|&(_, low)| v <= low) {
            continue;
        }
        let at = best.partition_point(|&(_, b)| b >= v);
        best.insert(at, (i as u32, v));
        best.truncate(k);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_keeps_the_largest_in_order() {
        let row = [0.5, 3.0, -1.0, 3.0, 2.0, f32::NEG_INFINITY];
        assert_eq!(top_k(&row, 3), vec![(1, 3.0), (3, 3.0), (4, 2.0)]);
        assert_eq!(top_k(&row, 0), vec![]);
        assert_eq!(top_k(&row[..2], 5), vec![(1, 3.0), (0, 0.5)]);
    }

    /// The vectorised log-sum-exp equals the f64 one over a vocabulary-sized row of logits
    /// spread over 60 nats (the f32 exponential's 4·10⁻⁷ per term bounds the difference), on
    /// lengths with and without a tail, with the largest value in the tail.
    #[test]
    fn log_sum_exp_equals_the_f64_sum() {
        for n in [1usize, 7, 49_152, 49_155] {
            let mut row: Vec<f32> = (0..n)
                .map(|i| ((i * 7919 % 1000) as f32 / 1000.0) * 60.0 - 45.0)
                .collect();
            row[n - 1] = 16.5;
            let mut shifted = vec![0.0f32; n];
            let got = log_sum_exp(&row, &mut shifted);
            let max = f64::from(row.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v)));
            let expected = max
                + row
                    .iter()
                    .map(|&v| (f64::from(v) - max).exp())
                    .sum::<f64>()
                    .ln();
            assert!(
                (got - expected).abs() < 1e-6,
                "n = {n}: {got} against {expected}"
            );
        }
    }
}
