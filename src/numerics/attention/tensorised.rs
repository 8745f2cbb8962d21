//! The tensorised-attention claim, computed on a small example (seed 002, "Tensor Decomposition
//! Techniques for Attention", the Tensorized Transformer of Ma et al. 2019, Theorem 3.1 and
//! eqs. 13, 16, 17; and the seed's slide "The Flaw").
//!
//! **(a) Theorem 3.1's step (eq. 13).** With `Q = Uα`, `K = Uβ` for a basis `U = (e_1 … e_n)`,
//! the proof writes `softmax(Q Kᵀ) = U softmax(A) Uᵀ`, `A = αβᵀ`. That identity is false: the
//! softmax is an elementwise exponential followed by a row normalisation, and neither commutes
//! with a change of basis (`U softmax(A) Uᵀ` even has negative entries). It holds trivially for
//! `U = I`.
//!
//! **(b) "Attention = Θ ∘ (Q Kᵀ V)" (eqs. 16–17, Θ an elementwise normalisation factor).** For
//! one (Q, K, V) such a Θ always exists where `Q Kᵀ V` has no zero entry, as the elementwise
//! ratio `Θ = X / (Q Kᵀ V)` with `X = softmax(Q Kᵀ) V`; but it depends on V. Applying it to
//! another V′ does not give `softmax(QKᵀ) V′`, and where an entry of `Q Kᵀ V` is near 0 the
//! factor blows up.
//!
//! Scores are taken as given (`softmax(QKᵀ)`): the inputs count as already scaled, as everywhere
//! in this crate (the paper's `1/√d` is absorbed into α, β).

use super::dots::transpose;
use crate::numerics::input::{InputError, check_finite};

/// The example's matrices (row-major) and what was measured on them.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorisedExample {
    /// Sequence length L (the basis has L vectors: U is `L × L`).
    pub len: usize,
    /// Coefficient dimension d (α, β are `L × d`).
    pub d: usize,
    /// Value dimension d_v.
    pub dv: usize,
    /// The basis `U = (e_1 … e_L)`, `L × L`.
    pub u: Vec<f64>,
    /// Coefficients of Q and K in the basis, `L × d`.
    pub alpha: Vec<f64>,
    pub beta: Vec<f64>,
    /// `Q = Uα`, `K = Uβ`, `L × d`.
    pub q: Vec<f64>,
    pub k: Vec<f64>,
    /// The values V and the other values V′, `L × d_v`.
    pub v: Vec<f64>,
    pub v_other: Vec<f64>,
    /// `softmax(Q Kᵀ) = softmax(U A Uᵀ)`, `L × L` (rows normalised).
    pub softmax_similarity: Vec<f64>,
    /// The proof's claimed equal, `U softmax(A) Uᵀ`, `L × L`.
    pub claimed_similarity: Vec<f64>,
    /// `max |softmax(UAUᵀ) − U softmax(A) Uᵀ|` over entries.
    pub max_abs_difference_similarity: f64,
    /// How many entries of `U softmax(A) Uᵀ` are negative (a softmax has none).
    pub negative_claimed_entries: usize,
    /// `X = softmax(QKᵀ) V`, the true attention, `L × d_v`.
    pub attention: Vec<f64>,
    /// `Q Kᵀ V`, `L × d_v`.
    pub qktv: Vec<f64>,
    /// `Θ = X / (Q Kᵀ V)` elementwise; `+∞` where `Q Kᵀ V` is exactly 0 (no factor exists).
    pub theta: Vec<f64>,
    /// `max |Θ|`: large when a denominator is near 0.
    pub max_abs_theta: f64,
    /// `min |Q Kᵀ V|` and where it is (row, column).
    pub min_abs_denominator: f64,
    pub min_abs_denominator_at: (usize, usize),
    /// `softmax(QKᵀ) V′`, the true attention with the other values.
    pub attention_other: Vec<f64>,
    /// `Θ ∘ (Q Kᵀ V′)`, the claim's prediction with Θ fitted on V.
    pub claimed_other: Vec<f64>,
    /// `max |softmax(QKᵀ)V′ − Θ ∘ (QKᵀV′)|`.
    pub error_with_other_values: f64,
}

impl TensorisedExample {
    /// Whether the claim survives this example: false when either measured difference (the
    /// eq. 13 identity, or Θ reused on V′) exceeds 1e-6.
    pub fn claim_holds(&self) -> bool {
        self.max_abs_difference_similarity <= 1e-6 && self.error_with_other_values <= 1e-6
    }
}

/// The fixed example (L = 4, d = 2, d_v = 2), every number computed by
/// [`tensorised_example_with`]:
///
/// - U: the symmetric orthogonal Hadamard basis `H/2`,
///   rows `(1,1,1,1), (1,−1,1,−1), (1,1,−1,−1), (1,−1,−1,1)` divided by 2;
/// - α rows `(1, 0.5), (−0.5, 1), (0.8, −0.3), (0.2, 0.9)`;
///   β rows `(0.7, −0.4), (0.3, 0.8), (−0.6, 0.5), (1, 0.1)`;
/// - V rows `(1, 0), (0, 1), (1, 1), (−1, 1.85)`; V′ rows `(0.5, −1), (2, 0), (−1, 1), (0, 3)`.
///   V's last entry is chosen so that `(Q Kᵀ V)` at (3, 1) is `0.0045`, nearly 0: there Θ is
///   about a hundred times larger than elsewhere.
pub fn tensorised_example() -> TensorisedExample {
    let u: Vec<f64> = [
        1.0, 1.0, 1.0, 1.0, 1.0, -1.0, 1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0, -1.0, -1.0, 1.0,
    ]
    .iter()
    .map(|x| 0.5 * x)
    .collect();
    let alpha = [1.0, 0.5, -0.5, 1.0, 0.8, -0.3, 0.2, 0.9];
    let beta = [0.7, -0.4, 0.3, 0.8, -0.6, 0.5, 1.0, 0.1];
    let v = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, -1.0, 1.85];
    let v_other = [0.5, -1.0, 2.0, 0.0, -1.0, 1.0, 0.0, 3.0];
    compute(4, 2, 2, &u, &alpha, &beta, &v, &v_other)
}

/// The same measurements for any basis `u` (`len × len`), coefficients `alpha`, `beta`
/// (`len × d`), values `v`, `v_other` (`len × dv`). U need not be orthogonal (the theorem only
/// asks for a basis); with `U = I` part (a) gives exactly 0.
// Eight plain matrices and their dimensions read more clearly here than a one-use struct.
#[allow(clippy::too_many_arguments)]
pub fn tensorised_example_with(
    len: usize,
    d: usize,
    dv: usize,
    u: &[f64],
    alpha: &[f64],
    beta: &[f64],
    v: &[f64],
    v_other: &[f64],
) -> Result<TensorisedExample, InputError> {
    if len == 0 || d == 0 || dv == 0 {
        return Err(InputError::InvalidShape {
            what: "tensorised example",
            reason: format!("len, d and dv must be at least 1, got {len}, {d}, {dv}"),
        });
    }
    let size = |a: usize, b: usize| {
        a.checked_mul(b).ok_or_else(|| InputError::InvalidShape {
            what: "tensorised example",
            reason: "a matrix size overflows".into(),
        })
    };
    let (uu, ld, lv) = (size(len, len)?, size(len, d)?, size(len, dv)?);
    for (what, m, expected) in [
        ("u", u, uu),
        ("alpha", alpha, ld),
        ("beta", beta, ld),
        ("v", v, lv),
        ("v_other", v_other, lv),
    ] {
        check_finite(what, m, expected)?;
    }
    Ok(compute(len, d, dv, u, alpha, beta, v, v_other))
}

/// `A B` for row-major `A` (`n × m`) and `B` (`m × p`).
fn matmul(a: &[f64], b: &[f64], n: usize, m: usize, p: usize) -> Vec<f64> {
    let mut out = vec![0.0; n * p];
    for (row, arow) in out.chunks_exact_mut(p).zip(a.chunks_exact(m)) {
        for (aik, brow) in arow.iter().zip(b.chunks_exact(p)) {
            for (o, bkj) in row.iter_mut().zip(brow) {
                *o += aik * bkj;
            }
        }
    }
    out
}

/// Row softmax of a square `n × n` matrix, each row shifted by its maximum. Non-finite scores
/// (inputs too large for f64) give NaN rows, which the measurements below report as NaN.
fn softmax(a: &[f64], n: usize) -> Vec<f64> {
    let mut out = a.to_vec();
    for row in out.chunks_exact_mut(n) {
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut total = 0.0;
        for x in row.iter_mut() {
            *x = (*x - max).exp();
            total += *x;
        }
        row.iter_mut().for_each(|x| *x /= total);
    }
    out
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

#[allow(clippy::too_many_arguments)]
fn compute(
    len: usize,
    d: usize,
    dv: usize,
    u: &[f64],
    alpha: &[f64],
    beta: &[f64],
    v: &[f64],
    v_other: &[f64],
) -> TensorisedExample {
    let q = matmul(u, alpha, len, len, d);
    let k = matmul(u, beta, len, len, d);
    let kt = transpose(&k, len, d);
    let scores = matmul(&q, &kt, len, d, len);
    let softmax_similarity = softmax(&scores, len);
    let a = matmul(alpha, &transpose(beta, len, d), len, d, len);
    let ut = transpose(u, len, len);
    let claimed_similarity = matmul(
        &matmul(u, &softmax(&a, len), len, len, len),
        &ut,
        len,
        len,
        len,
    );
    let max_abs_difference_similarity = max_abs_diff(&softmax_similarity, &claimed_similarity);
    let negative_claimed_entries = claimed_similarity.iter().filter(|x| **x < 0.0).count();

    let attention = matmul(&softmax_similarity, v, len, len, dv);
    let qktv = matmul(&scores, v, len, len, dv);
    let theta: Vec<f64> = attention
        .iter()
        .zip(&qktv)
        .map(|(x, y)| if *y == 0.0 { f64::INFINITY } else { x / y })
        .collect();
    let max_abs_theta = theta.iter().fold(0.0f64, |m, t| m.max(t.abs()));
    let (mut min_abs_denominator, mut min_abs_denominator_at) = (f64::INFINITY, (0, 0));
    for (index, y) in qktv.iter().enumerate() {
        if y.abs() < min_abs_denominator {
            min_abs_denominator = y.abs();
            min_abs_denominator_at = (index / dv, index % dv);
        }
    }
    let attention_other = matmul(&softmax_similarity, v_other, len, len, dv);
    let qktv_other = matmul(&scores, v_other, len, len, dv);
    let claimed_other: Vec<f64> = theta.iter().zip(&qktv_other).map(|(t, y)| t * y).collect();
    let error_with_other_values = max_abs_diff(&attention_other, &claimed_other);
    TensorisedExample {
        len,
        d,
        dv,
        u: u.to_vec(),
        alpha: alpha.to_vec(),
        beta: beta.to_vec(),
        q,
        k,
        v: v.to_vec(),
        v_other: v_other.to_vec(),
        softmax_similarity,
        claimed_similarity,
        max_abs_difference_similarity,
        negative_claimed_entries,
        attention,
        qktv,
        theta,
        max_abs_theta,
        min_abs_denominator,
        min_abs_denominator_at,
        attention_other,
        claimed_other,
        error_with_other_values,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_refutes_both_steps() {
        let e = tensorised_example();
        // U is orthogonal: UUᵀ = I.
        let uut = matmul(&e.u, &transpose(&e.u, 4, 4), 4, 4, 4);
        for i in 0..4 {
            for j in 0..4 {
                let id = if i == j { 1.0 } else { 0.0 };
                assert!((uut[i * 4 + j] - id).abs() < 1e-15);
            }
        }
        assert!(e.max_abs_difference_similarity > 0.1, "{e:?}");
        assert!(e.negative_claimed_entries > 0);
        assert!(e.error_with_other_values > 0.1, "{e:?}");
        assert!(!e.claim_holds());
        // Θ blows up where Q Kᵀ V is near 0 …
        assert_eq!(e.min_abs_denominator_at, (3, 1));
        assert!(
            e.min_abs_denominator < 0.01 && e.max_abs_theta > 100.0,
            "{e:?}"
        );
        // … and even away from that entry, Θ fitted on V is wrong for V′.
        let away = e
            .attention_other
            .iter()
            .zip(&e.claimed_other)
            .take(7)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max);
        assert!(away > 0.5, "{away}");
        // Pinned (no randomness: a change means the example or the arithmetic changed).
        assert!((e.max_abs_difference_similarity - 0.462_648_623_704_442_7).abs() < 1e-12);
        assert!((e.error_with_other_values - 22.373_515_070_547_61).abs() < 1e-9);
        assert_eq!(e.negative_claimed_entries, 7);
    }

    #[test]
    fn the_identity_basis_and_the_same_values_give_zero() {
        // (a) With U = I the eq. 13 identity holds exactly, so the test above can fail.
        let e = tensorised_example();
        let mut identity = vec![0.0; 16];
        (0..4).for_each(|i| identity[i * 5] = 1.0);
        let same =
            tensorised_example_with(4, 2, 2, &identity, &e.alpha, &e.beta, &e.v, &e.v).unwrap();
        assert_eq!(same.max_abs_difference_similarity, 0.0);
        assert_eq!(same.negative_claimed_entries, 0);
        // (b) Θ reproduces attention for the V it was fitted on (to rounding).
        assert!(same.error_with_other_values < 1e-12, "{same:?}");
        assert!(same.claim_holds());
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert!(tensorised_example_with(0, 2, 2, &[], &[], &[], &[], &[]).is_err());
        let e = tensorised_example();
        assert!(matches!(
            tensorised_example_with(4, 2, 2, &e.u[..15], &e.alpha, &e.beta, &e.v, &e.v),
            Err(InputError::LengthMismatch { what: "u", .. })
        ));
        let mut bad = e.v.clone();
        bad[3] = f64::NAN;
        assert!(matches!(
            tensorised_example_with(4, 2, 2, &e.u, &e.alpha, &e.beta, &bad, &e.v),
            Err(InputError::NonFinite {
                what: "v",
                index: 3
            })
        ));
        assert!(tensorised_example_with(usize::MAX, 2, 2, &[], &[], &[], &[], &[]).is_err());
    }
}
