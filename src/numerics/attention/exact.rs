//! Exact softmax attention and the matrix measurements of the attention view: row entropy,
//! spectral gap (seed 001's concentration tools) and singular values (seed 004's rank
//! argument).

use nalgebra::DMatrix;

use super::data::AttentionData;
use crate::numerics::estimators::dot;

/// Row i of `P`: `P_ij = exp(q_i·k_j − max_l q_i·k_l) / Σ_l exp(q_i·k_l − max)`, stable for
/// any norms; under the causal mask the sums run over l ≤ i and `P_ij = 0` for j > i.
pub fn softmax_row(data: &AttentionData, i: usize, row: &mut [f64]) {
    let q = data.query(i);
    let len = data.len.min(row.len());
    let seen = data.keys_seen_by(i).min(len);
    let (visible, masked) = row[..len].split_at_mut(seen);
    for (j, r) in visible.iter_mut().enumerate() {
        *r = dot(q, data.key(j));
    }
    softmax_in_place(visible);
    masked.fill(0.0);
}

/// The given rows of `P`, each of length L.
pub fn softmax_rows(data: &AttentionData, rows: &[usize]) -> Vec<Vec<f64>> {
    rows.iter()
        .map(|&i| {
            let mut row = vec![0.0; data.len];
            softmax_row(data, i, &mut row);
            row
        })
        .collect()
}

/// The total variation `½ Σ_j |p̂_j − p_j|` between an approximate row and the exact one.
pub fn total_variation(approx: &[f64], exact: &[f64]) -> f64 {
    0.5 * approx
        .iter()
        .zip(exact)
        .map(|(a, e)| (a - e).abs())
        .sum::<f64>()
}

/// Turns finite scores `s_j` into `exp(s_j − max s) / Σ_l exp(s_l − max s)`: shifted by the
/// maximum, so nothing overflows, and the total is at least 1 (the maximum's `exp(0)`), so the
/// division is safe. Every exact softmax of the lab goes through here.
pub fn softmax_in_place(row: &mut [f64]) {
    let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut total = 0.0;
    for s in row.iter_mut() {
        *s = (*s - max).exp();
        total += *s;
    }
    row.iter_mut().for_each(|s| *s /= total);
}

/// The exact outputs `o_i = Σ_j P_ij v_j` (L × dv), one row of P at a time (never L × L).
pub fn softmax_output(data: &AttentionData) -> Vec<f64> {
    let mut row = vec![0.0; data.len];
    let mut out = vec![0.0; data.len * data.dv];
    for i in 0..data.len {
        softmax_row(data, i, &mut row);
        let o = &mut out[i * data.dv..(i + 1) * data.dv];
        for (j, p) in row.iter().enumerate() {
            for (o, v) in o.iter_mut().zip(data.value(j)) {
                *o += p * v;
            }
        }
    }
    out
}

/// The whole matrix P (L × L): only for the block-sized charts (the view shows a block of 16 tokens).
pub fn softmax_matrix(data: &AttentionData) -> Vec<f64> {
    let mut p = vec![0.0; data.len * data.len];
    for (i, row) in p.chunks_exact_mut(data.len).enumerate() {
        softmax_row(data, i, row);
    }
    p
}

/// The mean Shannon entropy (nats) of the rows of a row-stochastic n × n matrix; `None` when a
/// row has a negative entry (signed estimates have no entropy).
pub fn mean_row_entropy(matrix: &[f64], n: usize) -> Option<f64> {
    if n == 0 || matrix.len() != n * n {
        return None;
    }
    let mut total = 0.0;
    for row in matrix.chunks_exact(n) {
        if row.iter().any(|p| *p < 0.0 || !p.is_finite()) {
            return None;
        }
        total -= row
            .iter()
            .filter(|p| **p > 0.0)
            .map(|p| p * p.ln())
            .sum::<f64>();
    }
    Some(total / n as f64)
}

/// The spectral gap `γ = 1 − |λ₂|` of a matrix whose rows sum to 1 (so `λ₁ = 1`), with `λ₂`
/// the eigenvalue of second largest modulus (seed 001). For a signed estimate `|λ₂|` may
/// exceed 1 and γ is negative. `None` for a non-finite matrix or n < 2.
pub fn spectral_gap(matrix: &[f64], n: usize) -> Option<f64> {
    if n < 2 || matrix.len() != n * n || matrix.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let m = DMatrix::from_row_slice(n, n, matrix);
    let mut moduli: Vec<f64> = m.complex_eigenvalues().iter().map(|c| c.norm()).collect();
    moduli.sort_unstable_by(|a, b| b.total_cmp(a));
    // The eigenvalue 1 (rows sum to 1) is removed wherever it sorts; the largest other
    // modulus is λ₂.
    let one = moduli
        .iter()
        .enumerate()
        .min_by(|a, b| (a.1 - 1.0).abs().total_cmp(&(b.1 - 1.0).abs()))
        .map(|(i, _)| i)?;
    moduli.remove(one);
    moduli.first().map(|l2| 1.0 - l2)
}

/// The singular values of an n × n matrix, largest first (empty for a non-finite matrix).
pub fn singular_values(matrix: &[f64], n: usize) -> Vec<f64> {
    if n == 0 || matrix.len() != n * n || matrix.iter().any(|x| !x.is_finite()) {
        return Vec::new();
    }
    let m = DMatrix::from_row_slice(n, n, matrix);
    let mut values: Vec<f64> = m.singular_values().iter().copied().collect();
    values.sort_unstable_by(|a, b| b.total_cmp(a));
    values
}

/// Numerical rank: singular values above `1e-10 · σ₁`.
pub fn numerical_rank(singular: &[f64]) -> usize {
    let top = singular.first().copied().unwrap_or(0.0);
    singular.iter().filter(|s| **s > 1e-10 * top).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> AttentionData {
        AttentionData::new(
            3,
            2,
            1,
            vec![1.0, 0.0, 0.0, 1.0, 0.5, 0.5],
            vec![1.0, 0.0, 0.0, 1.0, -1.0, 0.0],
            vec![1.0, 2.0, 3.0],
        )
        .unwrap()
    }

    /// Under the causal mask row i is the softmax over keys 0..=i (zero after), and the
    /// output its mean of values 0..=i: written out by hand for three tokens.
    #[test]
    fn causal_rows_are_the_softmax_over_the_earlier_keys() {
        let data = small().with_causal_mask(true);
        let p = softmax_matrix(&data);
        assert_eq!(&p[0..3], &[1.0, 0.0, 0.0]);
        // Row 1: q = (0, 1), scores 0 and 1 over keys 0 and 1.
        let z = 1.0 + 1f64.exp();
        assert!((p[3] - 1.0 / z).abs() < 1e-15 && (p[4] - 1f64.exp() / z).abs() < 1e-15);
        assert_eq!(p[5], 0.0);
        // Row 2 sees every key: the bidirectional row.
        let full = softmax_matrix(&small());
        assert_eq!(&p[6..9], &full[6..9]);
        let o = softmax_output(&data);
        assert!((o[0] - 1.0).abs() < 1e-15);
        assert!((o[1] - (1.0 + 2.0 * 1f64.exp()) / z).abs() < 1e-14);
    }

    #[test]
    fn rows_are_the_softmax_of_the_scores_and_outputs_their_means() {
        let data = small();
        let p = softmax_matrix(&data);
        // Row 0: scores 1, 0, −1.
        let z = 1f64.exp() + 1.0 + (-1f64).exp();
        assert!((p[0] - 1f64.exp() / z).abs() < 1e-15);
        assert!((p[2] - (-1f64).exp() / z).abs() < 1e-15);
        let o = softmax_output(&data);
        let expected = (1f64.exp() + 2.0 + 3.0 * (-1f64).exp()) / z;
        assert!((o[0] - expected).abs() < 1e-14);
        // Temperature 1e-6 multiplies every score by 1e6: each row's weight is all on its
        // largest score, whose key's value is the output (the others' weights are e^{-5e5} or
        // less, 0 in f64). Row 0: scores 1, 0, −1 → key 0 (v = 1). Row 1: 0, 1, 0 → key 1
        // (v = 2). Row 2: 0.5, 0.5, −0.5, a tie computed by the same products, so the two keys
        // share the weight equally: (1 + 2)/2. No overflow, and only rounding (none here) apart.
        let huge = data.at_temperature(1e-6);
        let o = softmax_output(&huge);
        assert_eq!(o, vec![1.0, 2.0, 1.5], "v of each row's argmax key");
    }

    #[test]
    fn entropy_gap_and_rank_of_known_matrices() {
        // Uniform rows: entropy ln n, λ₂ = 0 (rank 1), gap 1.
        let n = 4;
        let uniform = vec![0.25; n * n];
        assert!((mean_row_entropy(&uniform, n).unwrap() - 4f64.ln()).abs() < 1e-12);
        assert!((spectral_gap(&uniform, n).unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(numerical_rank(&singular_values(&uniform, n)), 1);
        // The identity: entropy 0, every eigenvalue 1, gap 0, full rank.
        let mut identity = vec![0.0; n * n];
        (0..n).for_each(|i| identity[i * n + i] = 1.0);
        assert!(mean_row_entropy(&identity, n).unwrap().abs() < 1e-12);
        assert!(spectral_gap(&identity, n).unwrap().abs() < 1e-9);
        assert_eq!(numerical_rank(&singular_values(&identity, n)), n);
        // A 2-state chain [[1−a, a], [b, 1−b]] has λ₂ = 1 − a − b.
        let (a, b) = (0.2, 0.3);
        let chain = vec![1.0 - a, a, b, 1.0 - b];
        assert!((spectral_gap(&chain, 2).unwrap() - (a + b)).abs() < 1e-12);
        // A negative entry: no entropy.
        assert_eq!(mean_row_entropy(&[1.5, -0.5, 0.5, 0.5], 2), None);
    }

    #[test]
    fn entropy_grows_with_temperature() {
        let data = small();
        let cold = softmax_matrix(&data.at_temperature(0.5));
        let hot = softmax_matrix(&data.at_temperature(4.0));
        assert!(mean_row_entropy(&hot, 3).unwrap() > mean_row_entropy(&cold, 3).unwrap());
    }
}
