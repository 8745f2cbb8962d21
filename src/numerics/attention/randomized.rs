//! Randomized attention (RA), an unbiased estimator of softmax attention (seed 003,
//! "Randomized Attention: An Unbiased Estimator for Softmax Attention"; REFERENCE.md, "The
//! attention level").
//!
//! Softmax attention: `P_ij = exp(q_i·k_j) / Σ_l exp(q_i·k_l)`, `o_i = Σ_j P_ij v_j` (q, k already
//! scaled by the caller, e.g. by `d^{-1/4}` each). For each query i, RA draws ω from the mixture
//! `p_i(ω) = Σ_j P_ij N(ω; q_i + k_j, I)` (pick `j ~ P_i·`, then `ω = q_i + k_j + ε`,
//! `ε ~ N(0, I)`) and returns
//!
//! `ô_i = Σ_j w_j v_j / Σ_l w_l`, `w_j = ξ(k_j, ω) = exp(ω·k_j − |k_j|²/2)`,
//!
//! the seed's `ξ(q_i,ω)ᵀ Σ_j ξ(k_j,ω) v_j / ξ(q_i,ω)ᵀ Σ_l ξ(k_l,ω)` with the positive features
//! `ξ(u, ω) = exp(ω·u − |u|²/2)`, where the query's factor `ξ(q_i, ω) > 0` cancels.
//!
//! **Why it is unbiased.** Completing the square,
//! `N(ω; q_i + k_j, I) = N(ω; 0, I) exp(ω·(q_i + k_j) − |q_i + k_j|²/2)
//!  = N(ω; 0, I) ξ(q_i, ω) ξ(k_j, ω) e^{−q_i·k_j}`, so
//! `P_ij N(ω; q_i + k_j, I) = N(ω; 0, I) ξ(q_i, ω) ξ(k_j, ω) / Z_i` with
//! `Z_i = Σ_l exp(q_i·k_l)`: the factor `e^{q_i·k_j}` of `P_ij` cancels the `e^{−q_i·k_j}`.
//! Hence the joint density of (j, ω) is `∝ ξ(k_j, ω)` in j for fixed ω, and the posterior of
//! the component given ω is `Pr(j | ω) = w_j / Σ_l w_l`. So `ô_i = E[v_j | ω]` and, by the tower
//! rule, `E ô_i = E[v_j] = Σ_j P_ij v_j = o_i` exactly, for any q, k, v.
//! The mean of S independent draws per query is unbiased too, with variance `Var/S`.
//!
//! **Cost: quadratic**, `O(S · L² · (d + d_v))` plus `O(L² d)` for P: sampling needs P's rows
//! (REFERENCE.md: on the same budget as m = S random features, but O(L²)).
//!
//! All weights are computed in log space with the maximum subtracted, so no `exp` overflows.

use std::fmt;

use super::exact::softmax_in_place;

use rand::{Rng, RngExt};
use rand_distr::{Distribution, StandardNormal};

/// The shape of one attention head's inputs, shared by the attention modules: `len` tokens,
/// queries and keys in `R^d`, values in `R^{dv}`. `Q`, `K` are row-major `len × d`, `V` is
/// `len × dv`, and an output `Ô` is `len × dv`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttentionShape {
    pub len: usize,
    pub d: usize,
    pub dv: usize,
}

/// Why randomized attention (or the exact softmax) could not be computed.
#[derive(Clone, Debug, PartialEq)]
pub enum RandomizedError {
    /// A dimension is zero or the number of samples is zero.
    InvalidShape { reason: String },
    /// A matrix has the wrong number of entries (`len × d` or `len × dv`).
    LengthMismatch {
        name: &'static str,
        expected: usize,
        got: usize,
    },
    /// A matrix has a NaN or infinite entry.
    NonFinite { name: &'static str, index: usize },
    /// An intermediate (a score `q·k`, a squared norm, a log-weight or an output entry) is not
    /// finite: the inputs are too large for f64.
    Overflow { what: &'static str },
}

impl fmt::Display for RandomizedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RandomizedError::InvalidShape { reason } => write!(f, "attention shape: {reason}"),
            RandomizedError::LengthMismatch {
                name,
                expected,
                got,
            } => write!(f, "{name} should have {expected} entries, got {got}"),
            RandomizedError::NonFinite { name, index } => {
                write!(f, "{name}[{index}] is not a finite number")
            }
            RandomizedError::Overflow { what } => write!(
                f,
                "{what} is not finite: the inputs are too large for double precision"
            ),
        }
    }
}

impl std::error::Error for RandomizedError {}

impl AttentionShape {
    /// Checks `len, d, dv ≥ 1` (d may not be 0: there is nothing to compare) and that `q`, `k`
    /// have `len·d` and `v` has `len·dv` finite entries (`v` may be `None` when not needed).
    pub fn validate(&self, q: &[f64], k: &[f64], v: Option<&[f64]>) -> Result<(), RandomizedError> {
        if self.len == 0 || self.d == 0 || self.dv == 0 {
            return Err(RandomizedError::InvalidShape {
                reason: format!(
                    "len, d and dv must be at least 1, got {}, {}, {}",
                    self.len, self.d, self.dv
                ),
            });
        }
        let qk = self
            .len
            .checked_mul(self.d)
            .ok_or_else(|| RandomizedError::InvalidShape {
                reason: "len × d overflows".into(),
            })?;
        let vv = self
            .len
            .checked_mul(self.dv)
            .ok_or_else(|| RandomizedError::InvalidShape {
                reason: "len × dv overflows".into(),
            })?;
        let mut checks = vec![("q", q, qk), ("k", k, qk)];
        if let Some(v) = v {
            checks.push(("v", v, vv));
        }
        for (name, m, expected) in checks {
            if m.len() != expected {
                return Err(RandomizedError::LengthMismatch {
                    name,
                    expected,
                    got: m.len(),
                });
            }
            if let Some(index) = m.iter().position(|x| !x.is_finite()) {
                return Err(RandomizedError::NonFinite { name, index });
            }
        }
        Ok(())
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The exact softmax attention matrix `P_ij = exp(q_i·k_j) / Σ_l exp(q_i·k_l)` (`len × len`,
/// row-major), each row shifted by its maximum score so nothing overflows (REFERENCE.md,
/// "The attention level"). `q`, `k` are `len × d` and already scaled.
///
/// Returns a `Result` rather than a bare matrix so that mismatched lengths, NaN and scores that
/// overflow are errors, never a panic or a NaN row.
pub fn softmax_rows(
    q: &[f64],
    k: &[f64],
    len: usize,
    d: usize,
) -> Result<Vec<f64>, RandomizedError> {
    let shape = AttentionShape { len, d, dv: 1 };
    shape.validate(q, k, None)?;
    let mut p = vec![0.0; len * len];
    for (row, qi) in p.chunks_exact_mut(len).zip(q.chunks_exact(d)) {
        for (s, kj) in row.iter_mut().zip(k.chunks_exact(d)) {
            *s = dot(qi, kj);
        }
        if row.iter().any(|s| !s.is_finite()) {
            return Err(RandomizedError::Overflow {
                what: "a score q·k",
            });
        }
        softmax_in_place(row);
    }
    Ok(p)
}

/// Exact softmax attention `O = P V` (`len × dv`), from [`softmax_rows`]: the target of every
/// estimator of this module. O(L² (d + d_v)).
pub fn softmax_attention(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    shape: AttentionShape,
) -> Result<Vec<f64>, RandomizedError> {
    shape.validate(q, k, Some(v))?;
    let p = softmax_rows(q, k, shape.len, shape.d)?;
    let mut out = vec![0.0; shape.len * shape.dv];
    for (o, prow) in out
        .chunks_exact_mut(shape.dv)
        .zip(p.chunks_exact(shape.len))
    {
        for (pij, vj) in prow.iter().zip(v.chunks_exact(shape.dv)) {
            for (oc, vc) in o.iter_mut().zip(vj) {
                *oc += pij * vc;
            }
        }
    }
    if out.iter().any(|x| !x.is_finite()) {
        return Err(RandomizedError::Overflow {
            what: "an output entry",
        });
    }
    Ok(out)
}

/// Randomized attention (seed 003, eq. "RA"): `Ô` (`len × dv`), each row the mean of `samples`
/// independent ratios `Σ_j w_j v_j / Σ_l w_l`, `w_j = exp(ω·k_j − |k_j|²/2)`, with ω drawn from
/// `p_i(ω) = Σ_j P_ij N(ω; q_i + k_j, I)`. Unbiased for `o_i = Σ_j P_ij v_j` (proof in the module
/// documentation); quadratic cost `O(samples · L² · (d + d_v))`.
///
/// Draw order (pinned by a value-stability test): for each query i in order, for each sample:
/// one uniform for the component j (inverse CDF of `P_i·`), then d standard normals for ε.
///
/// Errors: a zero dimension or `samples == 0`, mismatched lengths, non-finite entries, or
/// intermediates that overflow f64 (`Overflow`).
pub fn randomized_attention<R: Rng + ?Sized>(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    shape: AttentionShape,
    samples: usize,
    rng: &mut R,
) -> Result<Vec<f64>, RandomizedError> {
    randomized_core(q, k, v, shape, samples, &[], rng).map(|(out, _)| out)
}

/// [`randomized_attention`] on the view's data, also returning the requested rows of its
/// implied attention matrix: row i is the mean over the samples of the posterior weights
/// `w_j / Σ_l w_l` (so `ô_i = Σ_j P̂_ij v_j`). The same draws as [`randomized_attention`].
pub fn randomized_attention_rows<R: Rng + ?Sized>(
    data: &super::AttentionData,
    samples: usize,
    rows: &[usize],
    rng: &mut R,
) -> Result<(Vec<f64>, Vec<Vec<f64>>), RandomizedError> {
    let shape = AttentionShape {
        len: data.len,
        d: data.d,
        dv: data.dv,
    };
    randomized_core(&data.q, &data.k, &data.v, shape, samples, rows, rng)
}

fn randomized_core<R: Rng + ?Sized>(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    shape: AttentionShape,
    samples: usize,
    rows: &[usize],
    rng: &mut R,
) -> Result<(Vec<f64>, Vec<Vec<f64>>), RandomizedError> {
    shape.validate(q, k, Some(v))?;
    if samples == 0 {
        return Err(RandomizedError::InvalidShape {
            reason: "at least one sample per query is needed".into(),
        });
    }
    let AttentionShape { len, d, dv } = shape;
    let p = softmax_rows(q, k, len, d)?;
    let half_sq: Vec<f64> = k.chunks_exact(d).map(|kj| 0.5 * dot(kj, kj)).collect();
    if half_sq.iter().any(|s| !s.is_finite()) {
        return Err(RandomizedError::Overflow {
            what: "a key's squared norm",
        });
    }
    let mut out = vec![0.0; len * dv];
    let mut kept: Vec<Vec<f64>> = rows.iter().map(|_| vec![0.0; len]).collect();
    let mut omega = vec![0.0; d];
    let mut log_w = vec![0.0; len];
    let scale = 1.0 / samples as f64;
    for (i, ((o, qi), prow)) in out
        .chunks_exact_mut(dv)
        .zip(q.chunks_exact(d))
        .zip(p.chunks_exact(len))
        .enumerate()
    {
        for _ in 0..samples {
            let j = pick(prow, rng.random::<f64>());
            let kj = &k[j * d..(j + 1) * d];
            for ((w, a), b) in omega.iter_mut().zip(qi).zip(kj) {
                let e: f64 = StandardNormal.sample(rng);
                *w = a + b + e;
            }
            for ((lw, kl), hs) in log_w.iter_mut().zip(k.chunks_exact(d)).zip(&half_sq) {
                *lw = dot(&omega, kl) - hs;
            }
            let max = log_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if !log_w.iter().all(|l| l.is_finite()) {
                return Err(RandomizedError::Overflow {
                    what: "a log-weight ω·k − |k|²/2",
                });
            }
            let mut total = 0.0;
            for lw in log_w.iter_mut() {
                *lw = (*lw - max).exp();
                total += *lw;
            }
            // total ≥ 1 (the maximum's weight is exp(0)).
            let factor = scale / total;
            for (w, vl) in log_w.iter().zip(v.chunks_exact(dv)) {
                for (oc, vc) in o.iter_mut().zip(vl) {
                    *oc += factor * w * vc;
                }
            }
            for (row, _) in kept.iter_mut().zip(rows).filter(|(_, r)| **r == i) {
                for (kw, w) in row.iter_mut().zip(&log_w) {
                    *kw += factor * w;
                }
            }
        }
    }
    if out.iter().any(|x| !x.is_finite()) {
        return Err(RandomizedError::Overflow {
            what: "an output entry",
        });
    }
    Ok((out, kept))
}

/// The index j with `Σ_{l<j} p_l ≤ u < Σ_{l≤j} p_l` (inverse CDF); the last index with positive
/// probability when rounding leaves u above the total.
fn pick(p: &[f64], u: f64) -> usize {
    let mut cumulative = 0.0;
    let mut last = 0;
    for (j, &pj) in p.iter().enumerate() {
        if pj > 0.0 {
            last = j;
            cumulative += pj;
            if u < cumulative {
                return j;
            }
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numerics::rng::{StreamPurpose, StreamRng, stream_rng};
    use crate::numerics::stats::mean_and_standard_error;

    /// `len` rows of dimension d with norms spread over `[lo, hi]` (fixed directions from the
    /// stream, then rescaled).
    fn rows(len: usize, d: usize, lo: f64, hi: f64, rng: &mut StreamRng) -> Vec<f64> {
        let mut out = Vec::with_capacity(len * d);
        for i in 0..len {
            let g: Vec<f64> = (0..d)
                .map(|_| {
                    let z: f64 = StandardNormal.sample(rng);
                    z
                })
                .collect();
            let norm = dot(&g, &g).sqrt();
            let target = lo + (hi - lo) * i as f64 / (len.max(2) - 1) as f64;
            out.extend(g.iter().map(|x| x * target / norm));
        }
        out
    }

    struct Case {
        q: Vec<f64>,
        k: Vec<f64>,
        v: Vec<f64>,
        shape: AttentionShape,
    }

    fn case(lo: f64, hi: f64) -> Case {
        let shape = AttentionShape {
            len: 6,
            d: 3,
            dv: 2,
        };
        let mut rng = stream_rng(3, StreamPurpose::Trial, 0, 0);
        let q = rows(6, 3, lo, hi, &mut rng);
        let k = rows(6, 3, lo, hi, &mut rng);
        let v = rows(6, 2, 1.0, 1.0, &mut rng);
        Case { q, k, v, shape }
    }

    /// Per coordinate: (mean over repetitions − exact) / standard error.
    fn z_scores(draws: &[Vec<f64>], exact: &[f64]) -> Vec<f64> {
        (0..exact.len())
            .map(|c| {
                let column: Vec<f64> = draws.iter().map(|o| o[c]).collect();
                let (mean, se) = mean_and_standard_error(&column);
                assert!(se > 0.0, "a coordinate that does not vary tests nothing");
                (mean - exact[c]) / se
            })
            .collect()
    }

    #[test]
    fn randomized_attention_is_unbiased() {
        // Norms 1 to 2; R = 2000 repetitions of one sample per query. Each coordinate's mean is
        // within 4 standard errors of o (12 coordinates: a false alarm has probability ≈ 8e-4).
        let c = case(1.0, 2.0);
        let exact = softmax_attention(&c.q, &c.k, &c.v, c.shape).unwrap();
        let mut rng = stream_rng(3, StreamPurpose::Trial, 1, 0);
        let draws: Vec<Vec<f64>> = (0..2000)
            .map(|_| randomized_attention(&c.q, &c.k, &c.v, c.shape, 1, &mut rng).unwrap())
            .collect();
        let z = z_scores(&draws, &exact);
        assert!(z.iter().all(|z| z.abs() < 4.0), "{z:?}");
    }

    #[test]
    fn a_self_normalised_positive_feature_ratio_is_biased() {
        // The contrast (seed 003, "The Biasedness of RFA"): Performer/RFA with m = 4 positive
        // features φ(u) = m^{-1/2} exp(ω_r·u − |u|²/2), ω_r ~ N(0, I) shared by all queries,
        // ô_i = Σ_j φ(q_i)·φ(k_j) v_j / Σ_l φ(q_i)·φ(k_l). Each kernel estimate is unbiased, the
        // ratio is not: at norms 2 to 3 its mean over R = 2000 draws is off o by more than 6
        // standard errors in some coordinate, while RA on the same data stays within 4.
        let c = case(2.0, 3.0);
        let AttentionShape { len, d, dv } = c.shape;
        let exact = softmax_attention(&c.q, &c.k, &c.v, c.shape).unwrap();
        let m = 4;
        let mut rng = stream_rng(3, StreamPurpose::Trial, 2, 0);
        let performer = |rng: &mut StreamRng| -> Vec<f64> {
            let omegas: Vec<f64> = (0..m * d)
                .map(|_| {
                    let z: f64 = StandardNormal.sample(rng);
                    z
                })
                .collect();
            let phi = |u: &[f64]| -> Vec<f64> {
                let h = 0.5 * dot(u, u);
                omegas
                    .chunks_exact(d)
                    .map(|w| (dot(w, u) - h).exp() / (m as f64).sqrt())
                    .collect()
            };
            let fk: Vec<Vec<f64>> = c.k.chunks_exact(d).map(phi).collect();
            let mut out = vec![0.0; len * dv];
            for (o, qi) in out.chunks_exact_mut(dv).zip(c.q.chunks_exact(d)) {
                let fq = phi(qi);
                let s: Vec<f64> = fk.iter().map(|f| dot(&fq, f)).collect();
                let total: f64 = s.iter().sum();
                for (sj, vj) in s.iter().zip(c.v.chunks_exact(dv)) {
                    for (oc, vc) in o.iter_mut().zip(vj) {
                        *oc += sj / total * vc;
                    }
                }
            }
            out
        };
        let draws: Vec<Vec<f64>> = (0..2000).map(|_| performer(&mut rng)).collect();
        let z = z_scores(&draws, &exact);
        let worst = z.iter().fold(0.0f64, |a, z| a.max(z.abs()));
        assert!(worst > 6.0, "{z:?}");

        let ra: Vec<Vec<f64>> = (0..2000)
            .map(|_| randomized_attention(&c.q, &c.k, &c.v, c.shape, 1, &mut rng).unwrap())
            .collect();
        let z_ra = z_scores(&ra, &exact);
        assert!(z_ra.iter().all(|z| z.abs() < 4.0), "{z_ra:?}");
    }

    /// Per coordinate: the unbiased sample variance over the repetitions and its standard
    /// error, `√((m₄ − s⁴)/R)` with `m₄` the fourth central moment (the large-R variance of s²,
    /// which holds whatever the distribution's shape).
    fn variances_and_standard_errors(draws: &[Vec<f64>]) -> Vec<(f64, f64)> {
        let r = draws.len() as f64;
        (0..draws[0].len())
            .map(|c| {
                let mean = draws.iter().map(|o| o[c]).sum::<f64>() / r;
                let m2 = draws.iter().map(|o| (o[c] - mean).powi(2)).sum::<f64>() / r;
                let m4 = draws.iter().map(|o| (o[c] - mean).powi(4)).sum::<f64>() / r;
                let s2 = m2 * r / (r - 1.0);
                (s2, ((m4 - m2 * m2) / r).sqrt())
            })
            .collect()
    }

    #[test]
    fn more_samples_average_the_same_estimator() {
        // S samples per query is the mean of S independent single-sample estimates, so
        // Var(S = 50) = Var(S = 1)/50 exactly. Over R = 8000 repetitions at each S, each
        // coordinate's variance ratio is 50 within 4 standard errors (the ratio's relative
        // standard error is the root sum of squares of the two variances' relative ones), and
        // the S = 50 mean is within 4 standard errors of o (12 coordinates: a false alarm has
        // probability ≈ 1e-3 per assertion).
        let c = case(1.0, 2.0);
        let exact = softmax_attention(&c.q, &c.k, &c.v, c.shape).unwrap();
        let mut rng = stream_rng(3, StreamPurpose::Trial, 3, 0);
        let repeat = |s: usize, rng: &mut StreamRng| -> Vec<Vec<f64>> {
            (0..8000)
                .map(|_| randomized_attention(&c.q, &c.k, &c.v, c.shape, s, rng).unwrap())
                .collect()
        };
        let one = repeat(1, &mut rng);
        let fifty = repeat(50, &mut rng);
        let (v1, v50) = (
            variances_and_standard_errors(&one),
            variances_and_standard_errors(&fifty),
        );
        for (c, ((s1, e1), (s50, e50))) in v1.iter().zip(&v50).enumerate() {
            let ratio = s1 / s50;
            let se = ratio * ((e1 / s1).powi(2) + (e50 / s50).powi(2)).sqrt();
            assert!(
                (ratio - 50.0).abs() < 4.0 * se,
                "coordinate {c}: Var(S = 1)/Var(S = 50) = {ratio} ± {se}, expected 50"
            );
        }
        let z = z_scores(&fifty, &exact);
        assert!(z.iter().all(|z| z.abs() < 4.0), "S = 50 mean: {z:?}");
    }

    #[test]
    fn softmax_rows_are_stable_and_sum_to_one() {
        let q = [1000.0, 0.0, -1000.0, 0.0];
        let k = [1.0, 0.0, 2.0, 0.0];
        let p = softmax_rows(&q, &k, 2, 2).unwrap();
        assert!(p.iter().all(|x| x.is_finite()));
        assert!((p[0] + p[1] - 1.0).abs() < 1e-15 && (p[2] + p[3] - 1.0).abs() < 1e-15);
        assert!(p[1] > 0.999 && p[2] > 0.999);
    }

    #[test]
    fn bad_inputs_are_errors_not_panics() {
        let shape = AttentionShape {
            len: 2,
            d: 2,
            dv: 1,
        };
        let q = [0.1, 0.2, 0.3, 0.4];
        let v = [1.0, 2.0];
        let mut rng = stream_rng(3, StreamPurpose::Trial, 4, 0);
        let mut run = |q: &[f64], k: &[f64], v: &[f64], shape, s| {
            randomized_attention(q, k, v, shape, s, &mut rng)
        };
        assert!(matches!(
            run(&q, &q[..3], &v, shape, 1),
            Err(RandomizedError::LengthMismatch { name: "k", .. })
        ));
        assert!(matches!(
            run(&q, &[0.1, f64::NAN, 0.0, 0.0], &v, shape, 1),
            Err(RandomizedError::NonFinite {
                name: "k",
                index: 1
            })
        ));
        assert!(matches!(
            run(&q, &q, &v, shape, 0),
            Err(RandomizedError::InvalidShape { .. })
        ));
        assert!(matches!(
            run(
                &[],
                &[],
                &[],
                AttentionShape {
                    len: 0,
                    d: 2,
                    dv: 1
                },
                1
            ),
            Err(RandomizedError::InvalidShape { .. })
        ));
        let huge = [1e200, 1e200, 1e200, 1e200];
        assert!(matches!(
            run(&huge, &huge, &v, shape, 1),
            Err(RandomizedError::Overflow { .. })
        ));
        assert!(softmax_rows(&q, &q, usize::MAX, 2).is_err());
        // Large but representable inputs: each output is a convex combination of the values,
        // so it lies in [min v, max v] (up to the rounding of the weighted sum, a few ulp).
        let big = [30.0, 0.0, 0.0, 30.0];
        let out = run(&big, &big, &v, shape, 3).unwrap();
        let ulps = 4.0 * f64::EPSILON * 2.0;
        assert!(
            out.iter().all(|o| (1.0 - ulps..=2.0 + ulps).contains(o)),
            "{out:?} should lie in [1, 2]"
        );
    }

    #[test]
    fn values_at_the_edge_of_f64_give_the_implied_matrix_times_v() {
        // v = (f64::MAX, −f64::MAX): ô_i = Σ_j P̂_ij v_j with P̂ the rows that
        // `randomized_attention_rows` returns from the same stream (the same draws). Each row
        // of P̂ is a probability vector; the sum's rounding is at most a few ulp of Σ_j P̂_ij |v_j|.
        let shape = AttentionShape {
            len: 2,
            d: 2,
            dv: 1,
        };
        let q = [0.1, 0.2, 0.3, 0.4];
        let v = [f64::MAX, -f64::MAX];
        let stream = || stream_rng(3, StreamPurpose::Trial, 5, 0);
        let edge = randomized_attention(&q, &q, &v, shape, 1, &mut stream()).unwrap();
        let data =
            super::super::AttentionData::new(2, 2, 1, q.to_vec(), q.to_vec(), v.to_vec()).unwrap();
        let (same, p_hat) = randomized_attention_rows(&data, 1, &[0, 1], &mut stream()).unwrap();
        assert_eq!(same, edge, "the same stream gives the same output");
        for (i, row) in p_hat.iter().enumerate() {
            assert!(row.iter().all(|p| (0.0..=1.0).contains(p)), "{row:?}");
            assert!((row.iter().sum::<f64>() - 1.0).abs() <= 4.0 * f64::EPSILON);
            let expected: f64 = row.iter().zip(&v).map(|(p, v)| p * v).sum();
            // Σ_j P̂_ij |v_j| = f64::MAX · Σ_j P̂_ij, written so that it cannot overflow.
            let scale = row.iter().sum::<f64>() * f64::EPSILON * f64::MAX;
            assert!(
                (edge[i] - expected).abs() <= 4.0 * scale,
                "row {i}: {} vs Σ_j P̂_ij v_j = {expected} (P̂ = {row:?})",
                edge[i]
            );
        }
    }

    #[test]
    fn value_stability() {
        // Pins what stream (3, Trial, 9, 0) produces: a change here changes every shared figure.
        let c = case(1.0, 2.0);
        let mut rng = stream_rng(3, StreamPurpose::Trial, 9, 0);
        let est = randomized_attention(&c.q, &c.k, &c.v, c.shape, 2, &mut rng).unwrap();
        let pinned: [f64; 12] = [
            0.46900617403439393,
            0.49357338260716316,
            0.25500820060859525,
            0.2783258529618314,
            0.2534566554949614,
            0.4850246555703832,
            -0.6860140770620523,
            0.30475383164659714,
            0.4584677763468308,
            0.5409240289658998,
            -0.820790413630793,
            -0.12476962888890883,
        ];
        for (e, p) in est.iter().zip(pinned) {
            assert!((e - p).abs() <= 1e-12 * p.abs().max(1.0), "{est:?}");
        }
    }
}
