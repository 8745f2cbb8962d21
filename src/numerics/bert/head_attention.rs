//! One head's exact softmax attention for some of a text's queries against all of its keys:
//! `o_i = Σ_j softmax_j(q_i·k_j) v_j`. The head's keys and values are packed once per head as
//! the dense layers' weights are (`packed_linear`: Kᵀ in panels of eight keys, V in panels of
//! eight dimensions), so that both products, the scores `Q Kᵀ` and the weighted sum `P V`, run
//! on the dense layers' register-blocked kernel. At the model's lengths (≤ 512 keys) a block of
//! queries' scores fits in cache, so each row's softmax is exact in two passes (its maximum,
//! then the exponentials and their sum) instead of FlashAttention's online rescaling.
//!
//! A query's output depends on that query and the keys alone (fixed key order, fixed lanes),
//! never on which other queries share its block: a text split by rows gives the same numbers.

use crate::numerics::attention::long::flash::{lane_max, lane_sum};
use crate::numerics::attention::long::gemm::exp_approx;
use crate::numerics::packed_linear::{PANEL, PanelMatrix, panel_product};

/// Queries per block: a block's scores (`QUERY_BLOCK × L`, 64 KB at L = 512) stay in cache.
const QUERY_BLOCK: usize = 32;

/// Rows of a matrix inside a larger one: row `i` is `values[i · stride ..][.. width]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rows<'a> {
    pub values: &'a [f32],
    pub stride: usize,
}

/// Packed keys and values of one head and the scores of one block, reused from head to head
/// (no allocation per head once grown).
#[derive(Debug, Default)]
pub(crate) struct HeadAttention {
    keys: Vec<f32>,
    values: Vec<f32>,
    scores: Vec<f32>,
    len: usize,
    dim: usize,
}

impl HeadAttention {
    /// Packs the head's `len` keys and values (each `dim` wide, rows of `keys` and `values`).
    pub(crate) fn pack(&mut self, keys: Rows, values: Rows, len: usize, dim: usize) {
        self.len = len;
        self.dim = dim;
        // Kᵀ: panel p holds keys p·8 .. p·8 + 8, `[c][l] = k[p·8 + l][c]`, zero past `len`.
        self.keys.clear();
        self.keys.resize(len.div_ceil(PANEL) * dim * PANEL, 0.0);
        for j in 0..len {
            let key = &keys.values[j * keys.stride..][..dim];
            let panel = &mut self.keys[(j / PANEL) * dim * PANEL..][..dim * PANEL];
            for (c, &x) in key.iter().enumerate() {
                panel[c * PANEL + j % PANEL] = x;
            }
        }
        // V: panel p holds dimensions p·8 .. p·8 + 8, `[j][l] = v[j][p·8 + l]`, zero past `dim`.
        self.values.clear();
        self.values.resize(dim.div_ceil(PANEL) * len * PANEL, 0.0);
        for j in 0..len {
            let value = &values.values[j * values.stride..][..dim];
            for (c, &x) in value.iter().enumerate() {
                self.values[((c / PANEL) * len + j) * PANEL + c % PANEL] = x;
            }
        }
    }

    /// `out` (`rows × dim`) = softmax attention of `queries` (`rows × dim`, scaled so that
    /// `q·k` is the logit) against the packed keys and values.
    pub(crate) fn attend(&mut self, queries: &[f32], rows: usize, out: &mut [f32]) {
        let (len, dim) = (self.len, self.dim);
        assert_eq!(queries.len(), rows * dim, "queries' shape");
        assert_eq!(out.len(), rows * dim, "output's shape");
        if len == 0 || dim == 0 {
            out.fill(0.0);
            return;
        }
        let keys = PanelMatrix {
            inputs: dim,
            outputs: len,
            panels: &self.keys,
        };
        let values = PanelMatrix {
            inputs: len,
            outputs: dim,
            panels: &self.values,
        };
        self.scores.resize(QUERY_BLOCK * len, 0.0);
        let mut first = 0;
        while first < rows {
            let block = QUERY_BLOCK.min(rows - first);
            let scores = &mut self.scores[..block * len];
            panel_product(
                keys,
                None,
                &queries[first * dim..(first + block) * dim],
                block,
                scores,
            );
            let mut inverse_sums = [0.0f32; QUERY_BLOCK];
            for (row, inverse) in scores.chunks_exact_mut(len).zip(&mut inverse_sums) {
                let maximum = lane_max(row);
                row.iter_mut().for_each(|s| *s = exp_approx(*s - maximum));
                *inverse = 1.0 / lane_sum(row);
            }
            let out_block = &mut out[first * dim..(first + block) * dim];
            panel_product(values, None, scores, block, out_block);
            for (o, &inverse) in out_block.chunks_exact_mut(dim).zip(&inverse_sums) {
                o.iter_mut().for_each(|x| *x *= inverse);
            }
            first += block;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a plain f64 softmax attention on shapes with partial panels (keys and dims not
    /// multiples of 8) and more queries than one block; then every query alone gives the same
    /// bits as in the block.
    #[test]
    fn packed_attention_matches_the_f64_softmax_and_is_row_independent() {
        for (len, dim, rows) in [
            (1usize, 1usize, 1usize),
            (5, 3, 2),
            (70, 32, 45),
            (9, 12, 33),
        ] {
            let keys: Vec<f32> = (0..len * dim)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 40.0)
                .collect();
            let values: Vec<f32> = (0..len * dim)
                .map(|i| ((i * 53 % 97) as f32 - 48.0) / 31.0)
                .collect();
            let queries: Vec<f32> = (0..rows * dim)
                .map(|i| ((i * 29 % 89) as f32 - 44.0) / 30.0)
                .collect();
            let mut head = HeadAttention::default();
            let rows_of = |values| Rows {
                values,
                stride: dim,
            };
            head.pack(rows_of(&keys), rows_of(&values), len, dim);
            let mut out = vec![f32::NAN; rows * dim];
            head.attend(&queries, rows, &mut out);
            for i in 0..rows {
                let q = &queries[i * dim..(i + 1) * dim];
                let logits: Vec<f64> = (0..len)
                    .map(|j| {
                        (0..dim)
                            .map(|c| f64::from(q[c]) * f64::from(keys[j * dim + c]))
                            .sum()
                    })
                    .collect();
                let top = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let weights: Vec<f64> = logits.iter().map(|l| (l - top).exp()).collect();
                let total: f64 = weights.iter().sum();
                for c in 0..dim {
                    let exact: f64 = (0..len)
                        .map(|j| weights[j] * f64::from(values[j * dim + c]))
                        .sum::<f64>()
                        / total;
                    // f32 logits of |q·k| ≤ dim·1.6², exp to 4e-7, sums of len terms ≤ 1.6.
                    let got = f64::from(out[i * dim + c]);
                    assert!(
                        (got - exact).abs() < 2e-6 * (1.0 + dim as f64 + len as f64).sqrt() * 4.0,
                        "L {len} d {dim} row {i} col {c}: {got} vs {exact}"
                    );
                }
                let mut alone = vec![0.0f32; dim];
                head.attend(q, 1, &mut alone);
                assert_eq!(alone, out[i * dim..(i + 1) * dim], "row {i} alone");
            }
        }
    }
}
