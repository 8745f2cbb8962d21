//! One vector's dot products with every row of a matrix, taken side by side: the matrix is
//! laid out by columns once, and the L sums advance together, term by term. Each sum is still
//! `Σ_t a_t b_jt` added in t order from −0 (what `Iterator::sum` does), so every result is bit
//! for bit the one-pair-at-a-time `a.iter().zip(b).map(|(x, y)| x * y).sum()`; but the lanes
//! vectorise, and no sum waits on one addition's latency per term (a 64-term f64 dot product
//! alone is latency-bound: about four cycles a term).

/// `to = fromᵀ`: `from` is `rows × cols` and `to` `cols × rows`, both row-major (so the rows of
/// `from` become `to`'s columns: entry `(r, c)` at `c · rows + r`). Writes into a buffer the
/// caller keeps (the Hedgehog training transposes in every step).
pub fn transpose_into(from: &[f64], to: &mut [f64], rows: usize, cols: usize) {
    if cols == 0 {
        return;
    }
    for (r, row) in from.chunks_exact(cols).take(rows).enumerate() {
        for (c, x) in row.iter().enumerate() {
            to[c * rows + r] = *x;
        }
    }
}

/// `fromᵀ` in a new buffer ([`transpose_into`]): for [`dots_with_columns`], the keys
/// (`len × d`) as `d × len`.
pub fn transpose(from: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut to = vec![0.0; rows * cols];
    transpose_into(from, &mut to, rows, cols);
    to
}

/// `out[j] = Σ_t a[t] · columns[t · L + j]` for every `j < L = out.len()`, with `columns` from
/// [`transpose`] (`a.len() × L`): bit for bit `a · row_j`.
pub fn dots_with_columns(a: &[f64], columns: &[f64], out: &mut [f64]) {
    out.fill(-0.0);
    if out.is_empty() {
        return;
    }
    for (&x, column) in a.iter().zip(columns.chunks_exact(out.len())) {
        for (s, &y) in out.iter_mut().zip(column) {
            *s += x * y;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sum equals the pairwise `Iterator::sum` bit for bit, on values that round
    /// differently in every order (and with signed zeros).
    #[test]
    fn side_by_side_sums_are_the_pairwise_sums_bit_for_bit() {
        for (len, d) in [(1, 1), (3, 5), (37, 64), (128, 64), (5, 0)] {
            let value = |i: usize| {
                let x = ((i * 2654435761) % 1000) as f64 / 97.0 - 5.0;
                if i.is_multiple_of(11) {
                    -0.0
                } else {
                    x * (1.0 + 1e-9 * i as f64)
                }
            };
            let m: Vec<f64> = (0..len * d).map(value).collect();
            let a: Vec<f64> = (0..d).map(|i| value(i * 7 + 3)).collect();
            let cols = transpose(&m, len, d);
            let mut fast = vec![1.0; len];
            dots_with_columns(&a, &cols, &mut fast);
            for (j, got) in fast.iter().enumerate() {
                let row = &m[j * d..(j + 1) * d];
                let want: f64 = a.iter().zip(row).map(|(x, y)| x * y).sum();
                assert_eq!(got.to_bits(), want.to_bits(), "L {len} d {d} j {j}");
            }
        }
    }
}
