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
use crate::numerics::input::{InputError, check_finite};

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
    /// The inputs: a zero dimension or no samples, a matrix of the wrong length (`len × d` or
    /// `len × dv`), a NaN or infinite entry.
    Input(InputError),
    /// An intermediate (a score `q·k`, a squared norm, a log-weight or an output entry) is not
    /// finite: the inputs are too large for f64.
    Overflow { what: &'static str },
}

impl fmt::Display for RandomizedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RandomizedError::Input(e) => write!(f, "{e}"),
            RandomizedError::Overflow { what } => write!(
                f,
                "{what} is not finite: the inputs are too large for double precision"
            ),
        }
    }
}

impl std::error::Error for RandomizedError {}

impl From<InputError> for RandomizedError {
    fn from(e: InputError) -> Self {
        RandomizedError::Input(e)
    }
}

/// What [`AttentionShape::validate`]'s shape errors are about (their message opens with it).
const ATTENTION_SHAPE: &str = "attention shape";

impl AttentionShape {
    /// Checks `len, d, dv ≥ 1` (d may not be 0: there is nothing to compare) and that `q`, `k`
    /// have `len·d` and `v` has `len·dv` finite entries (`v` may be `None` when not needed).
    pub fn validate(&self, q: &[f64], k: &[f64], v: Option<&[f64]>) -> Result<(), InputError> {
        if self.len == 0 || self.d == 0 || self.dv == 0 {
            return Err(InputError::InvalidShape {
                what: ATTENTION_SHAPE,
                reason: format!(
                    "len, d and dv must be at least 1, got {}, {}, {}",
                    self.len, self.d, self.dv
                ),
            });
        }
        let overflow = |reason: &str| InputError::InvalidShape {
            what: ATTENTION_SHAPE,
            reason: reason.into(),
        };
        let qk = self
            .len
            .checked_mul(self.d)
            .ok_or_else(|| overflow("len × d overflows"))?;
        let vv = self
            .len
            .checked_mul(self.dv)
            .ok_or_else(|| overflow("len × dv overflows"))?;
        check_finite("q", q, qk)?;
        check_finite("k", k, qk)?;
        if let Some(v) = v {
            check_finite("v", v, vv)?;
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
    let k_columns = super::dots::transpose(k, len, d);
    for (row, qi) in p.chunks_exact_mut(len).zip(q.chunks_exact(d)) {
        super::dots::dots_with_columns(qi, &k_columns, row);
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
    check_samples(samples)?;
    let AttentionShape { len, d, dv } = shape;
    let p = softmax_rows(q, k, len, d)?;
    let half_sq = half_squared_norms(k, d)?;
    let k_columns = super::dots::transpose(k, len, d);
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
            draw_omega(qi, k, prow, rng, &mut omega);
            super::dots::dots_with_columns(&omega, &k_columns, &mut log_w);
            for (lw, hs) in log_w.iter_mut().zip(&half_sq) {
                *lw -= hs;
            }
            let max = log_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if !log_w.iter().all(|l| l.is_finite()) {
                return Err(RandomizedError::Overflow {
                    what: "a log-weight ω·k − |k|²/2",
                });
            }
            for lw in log_w.iter_mut() {
                *lw = exp_of_non_positive(*lw - max);
            }
            let total: f64 = log_w.iter().sum();
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

/// Refuses zero samples per query.
fn check_samples(samples: usize) -> Result<(), RandomizedError> {
    if samples == 0 {
        return Err(InputError::InvalidShape {
            what: ATTENTION_SHAPE,
            reason: "at least one sample per query is needed".into(),
        }
        .into());
    }
    Ok(())
}

/// `|k_j|²/2` of every key (rows of `k`, d each), or why one is not finite.
fn half_squared_norms(k: &[f64], d: usize) -> Result<Vec<f64>, RandomizedError> {
    let half_sq: Vec<f64> = k.chunks_exact(d).map(|kj| 0.5 * dot(kj, kj)).collect();
    if half_sq.iter().any(|s| !s.is_finite()) {
        return Err(RandomizedError::Overflow {
            what: "a key's squared norm",
        });
    }
    Ok(half_sq)
}

/// One sample of query `qi`'s proposal into `omega` (d values): a uniform picks the component
/// j from softmax's row `prow` (inverse CDF), then `ω = q_i + k_j + ε` with d standard normals.
/// The draw order the value-stability test pins; both draws (f64 and f32 products) take it.
fn draw_omega<R: Rng + ?Sized>(
    qi: &[f64],
    k: &[f64],
    prow: &[f64],
    rng: &mut R,
    omega: &mut [f64],
) {
    let d = qi.len();
    let j = pick(prow, rng.random::<f64>());
    let kj = &k[j * d..(j + 1) * d];
    for ((w, a), b) in omega.iter_mut().zip(qi).zip(kj) {
        let e: f64 = StandardNormal.sample(rng);
        *w = a + b + e;
    }
}

/// `eˣ` for `x ≤ 0` (a log-weight minus the largest), to a few ulp: Cody–Waite reduction
/// `x = n ln 2 + r`, `|r| ≤ ln 2 / 2`, a degree-12 Taylor polynomial for `eʳ` (truncation below
/// 2·10⁻¹⁶), and `2ⁿ` built in the exponent bits. Branch-free, so a loop of it vectorises
/// (`f64x2`), where libm's `exp` is a call per weight: a third of this module's time. Below
/// −708 it gives `e^{−708}` (about 3·10⁻³⁰⁸, still a normal number), not a smaller one: against
/// the largest weight, 1, such a weight is nothing either way.
#[inline(always)]
fn exp_of_non_positive(x: f64) -> f64 {
    const LN2_HIGH: f64 = 6.931_471_803_691_238e-1;
    const LN2_LOW: f64 = 1.908_214_929_270_587_7e-10;
    // Adding and subtracting 1.5 · 2⁵² rounds to the nearest integer without a call.
    const ROUNDER: f64 = 6_755_399_441_055_744.0;
    let x = if x < -708.0 { -708.0 } else { x };
    let x = if x > 0.0 { 0.0 } else { x };
    let y = x * std::f64::consts::LOG2_E + ROUNDER;
    let n = y - ROUNDER;
    let r = (x - n * LN2_HIGH) - n * LN2_LOW;
    let mut p = 1.0 / 479_001_600.0;
    for k in (1..12).rev() {
        p = p * r + 1.0 / FACTORIALS[k];
    }
    let p = p * r + 1.0;
    let bits = y
        .to_bits()
        .wrapping_sub(ROUNDER.to_bits())
        .wrapping_add(1023)
        << 52;
    p * f64::from_bits(bits)
}

/// `k!` for k = 0..12.
const FACTORIALS: [f64; 12] = [
    1.0,
    1.0,
    2.0,
    6.0,
    24.0,
    120.0,
    720.0,
    5_040.0,
    40_320.0,
    362_880.0,
    3_628_800.0,
    39_916_800.0,
];

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

mod batched;
pub use batched::randomized_attention_f32;

#[cfg(test)]
mod tests;
