//! Exact softmax attention for long sequences, as FlashAttention tiles it (Dao et al. 2022):
//! blocks of queries against blocks of keys, the scores of one tile at a time, and the softmax
//! kept online (a running maximum and sum per query, the partial output rescaled when the
//! maximum grows). Never forms the L × L matrix: memory beyond the inputs and the output is
//! one transposed copy of K and one tile. f32 throughout, the products by [`super::gemm`].

use super::Sequence;
use super::gemm::{MatRef, exp_approx, exp_in_place, gemm};

/// Queries per tile (a multiple of the product's four-row block).
pub const QUERY_BLOCK: usize = 32;
/// Keys per tile (a multiple of the product's eight-column block).
pub const KEY_BLOCK: usize = 64;

/// Multiply-adds of exact attention: `L²(d + dv)` (scores and weighted values), or for the
/// causal form the `L(L + 1)/2` pairs `j ≤ i`.
pub fn exact_multiply_adds(len: usize, d: usize, dv: usize, causal: bool) -> f64 {
    let pairs = if causal {
        len as f64 * (len as f64 + 1.0) / 2.0
    } else {
        len as f64 * len as f64
    };
    pairs * (d + dv) as f64
}

/// Working memory of [`flash_attention`] beyond its inputs and output, in bytes: Kᵀ (in whole
/// tiles), one tile of scores, and the running maxima and sums.
pub fn flash_memory_bytes(len: usize, d: usize) -> f64 {
    4.0 * (len.div_ceil(KEY_BLOCK) * KEY_BLOCK * d + QUERY_BLOCK * KEY_BLOCK + 2 * QUERY_BLOCK)
        as f64
}

/// `o_i = Σ_j softmax_j(q_i·k_j) v_j` (L × dv), over every key or, `causal`, over `j ≤ i`.
pub fn flash_attention(seq: &Sequence<'_>, causal: bool) -> Vec<f32> {
    let (len, d, dv) = (seq.len, seq.d, seq.dv);
    let mut out = vec![0.0f32; len * dv];
    if len == 0 {
        return out;
    }
    // Kᵀ in tiles of KEY_BLOCK keys, each d × KEY_BLOCK and contiguous: a tile's scores read
    // 16 KB in order instead of d rows L floats apart.
    let tiles = len.div_ceil(KEY_BLOCK);
    let mut kt = vec![0.0f32; tiles * d * KEY_BLOCK];
    for (j, key) in seq.k.chunks_exact(d).enumerate() {
        let tile = &mut kt[(j / KEY_BLOCK) * d * KEY_BLOCK..];
        for (c, &x) in key.iter().enumerate() {
            tile[c * KEY_BLOCK + j % KEY_BLOCK] = x;
        }
    }
    let mut scores = vec![0.0f32; QUERY_BLOCK * KEY_BLOCK];
    let mut row_max = [f32::NEG_INFINITY; QUERY_BLOCK];
    let mut row_sum = [0.0f32; QUERY_BLOCK];
    for i0 in (0..len).step_by(QUERY_BLOCK) {
        let rows = QUERY_BLOCK.min(len - i0);
        row_max.fill(f32::NEG_INFINITY);
        row_sum.fill(0.0);
        let key_end = if causal { i0 + rows } else { len };
        let out_block = &mut out[i0 * dv..(i0 + rows) * dv];
        for j0 in (0..key_end).step_by(KEY_BLOCK) {
            let keys = KEY_BLOCK.min(key_end - j0);
            gemm(
                rows,
                keys,
                d,
                MatRef {
                    values: &seq.q[i0 * d..],
                    stride: d,
                },
                MatRef {
                    values: &kt[(j0 / KEY_BLOCK) * d * KEY_BLOCK..],
                    stride: KEY_BLOCK,
                },
                &mut scores,
                KEY_BLOCK,
                false,
            );
            let crosses_diagonal = causal && j0 + keys > i0 + 1;
            for r in 0..rows {
                let tile_row = &mut scores[r * KEY_BLOCK..r * KEY_BLOCK + keys];
                // Keys after the query (causal) take no weight: only the tiles on the diagonal
                // have any.
                let visible = if crosses_diagonal {
                    (i0 + r + 1).saturating_sub(j0).min(keys)
                } else {
                    keys
                };
                let maximum = lane_max(&tile_row[..visible]);
                let new_max = if maximum > row_max[r] {
                    maximum
                } else {
                    row_max[r]
                };
                let rescale = exp_approx(row_max[r] - new_max);
                tile_row.iter_mut().for_each(|s| *s -= new_max);
                exp_in_place(tile_row);
                tile_row[visible..].fill(0.0);
                row_sum[r] = row_sum[r] * rescale + lane_sum(tile_row);
                out_block[r * dv..(r + 1) * dv]
                    .iter_mut()
                    .for_each(|o| *o *= rescale);
                row_max[r] = new_max;
            }
            gemm(
                rows,
                dv,
                keys,
                MatRef {
                    values: &scores,
                    stride: KEY_BLOCK,
                },
                MatRef {
                    values: &seq.v[j0 * dv..],
                    stride: dv,
                },
                out_block,
                dv,
                true,
            );
        }
        for (r, o) in out_block.chunks_exact_mut(dv).enumerate() {
            let inverse = 1.0 / row_sum[r];
            o.iter_mut().for_each(|x| *x *= inverse);
        }
    }
    out
}

/// The largest value (−∞ for none), eight lanes at a time: an ordered fold does not vectorise.
pub(crate) fn lane_max(values: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; 8];
    let chunks = values.chunks_exact(8);
    let tail = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |m, &v| if v > m { v } else { m });
    for chunk in chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            *lane = if v > *lane { v } else { *lane };
        }
    }
    lanes.iter().fold(tail, |m, &v| if v > m { v } else { m })
}

/// `Σ a_i b_i` over the shorter of the two, eight lanes at a time (an ordered sum does not
/// vectorise): a linear kernel's denominators and norms, a thousand features a row.
pub(crate) fn lane_dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (a[..n].chunks_exact(8), b[..n].chunks_exact(8));
    let tail: f32 = a
        .remainder()
        .iter()
        .zip(b.remainder())
        .map(|(x, y)| x * y)
        .sum();
    let mut lanes = [0.0f32; 8];
    for (x, y) in a.zip(b) {
        for ((lane, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *lane += x * y;
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// The sum, eight lanes at a time (an ordered sum does not vectorise).
pub(crate) fn lane_sum(values: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let chunks = values.chunks_exact(8);
    let tail: f32 = chunks.remainder().iter().sum();
    for chunk in chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            *lane += v;
        }
    }
    lanes.iter().sum::<f32>() + tail
}
