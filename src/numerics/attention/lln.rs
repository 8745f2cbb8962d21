//! Linear log-normal attention with moment matching (seed 001, "Linear Log-Normal (LLN)
//! Attention" and "LLN Attention moment matching"; REFERENCE.md, "The attention level").
//!
//! `P^LLN_ij = φ(q_i)·ψ(k_j) / Σ_l φ(q_i)·ψ(k_l)` with `φ(q) = exp(αq)`, `ψ(k) = exp(βk)`
//! elementwise (feature size d), and
//!
//! `α = σ̃/(√2 σ_q)`, `β = σ̃/(√2 σ_k)`, `σ̃² = (σ_q²σ_k² − b)/a`.
//!
//! **What the matching targets.** Seed 001 models `P^SM` as log-normal with
//! `σ_sm² = σ_q²σ_k²` (the variance of `a_ij = q_i·k_j/√d` for entries of variance σ_q², σ_k²)
//! and asks `σ_lln = σ_sm`, where `σ_lln²` is the variance of `log P^LLN`. The constants a, b
//! come from a linear fit `Var(log P^LLN) ≈ a σ̃² + b` on Gaussian samples ([`fit_moment_matching`]),
//! so `σ̃² = (σ_sm² − b)/a` makes `Var(log P^LLN) ≈ σ_sm²`. The target is therefore the seed's
//! model variance `σ_q²σ_k²`, which on Gaussian inputs is the variance of `log P^SM` up to the
//! spread of the rows' normalisers (relative size `σ_sm²/(2d)`, small).
//!
//! **Scaling.** This crate's callers pass q, k already scaled by `d^{-1/4}` each. With `s_q`,
//! `s_k` the standard deviations of the entries *as passed*, the seed's (unscaled) `σ_q²σ_k²`
//! is `d s_q² s_k²`, and the coefficient applied to the passed q is `σ̃/(√2 s_q)` (so that
//! `α q_t` has variance `σ̃²/2`, as in the fit). [`LlnFit`] reports `sigma_q = s_q`,
//! `sigma_k = s_k` (the entries as passed), `target_variance = d s_q² s_k²`, and `alpha`, `beta`
//! to apply to the passed q, k: `α = σ̃/(√2 sigma_q)` holds literally with these numbers.

use std::fmt;

use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

use crate::numerics::input::{InputError, check_finite};

/// The number of tokens of the fit's Gaussian samples (REFERENCE.md's reading of seed 001).
pub const FIT_TOKENS: usize = 256;

/// The number of independent Gaussian draws whose variances the fit averages at each grid point.
/// One draw of 256 tokens leaves a and b about ±5 % apart from seed to seed at d = 64; eight
/// bring that to about ±2 %.
pub const FIT_DRAWS: usize = 8;

/// The fit's grid: `σ̃² = 1, 2, …, 16`.
pub const FIT_GRID: std::ops::RangeInclusive<u32> = 1..=16;

/// The value σ̃ is clamped to when `σ_q²σ_k² − b ≤ 0` or the result is not finite.
pub const SIGMA_TILDE_FLOOR: f64 = 1e-3;

/// Why an LLN fit or feature map could not be computed.
#[derive(Clone, Debug, PartialEq)]
pub enum LlnError {
    /// A dimension or a constant is outside what the formulas can use.
    InvalidParameter { name: &'static str, reason: String },
    /// A matrix has the wrong number of entries, or an input is NaN or infinite.
    Input(InputError),
    /// The entries of q or k do not vary (σ = 0), so α or β would be infinite.
    Degenerate { name: &'static str },
    /// An intermediate overflowed f64 (a feature `exp(c·u)`, a coefficient).
    Overflow { what: &'static str },
}

impl fmt::Display for LlnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LlnError::InvalidParameter { name, reason } => write!(f, "LLN `{name}`: {reason}"),
            LlnError::Input(e) => write!(f, "{e}"),
            LlnError::Degenerate { name } => write!(
                f,
                "the entries of {name} have zero (or vanishing) spread, so its LLN coefficient is infinite"
            ),
            LlnError::Overflow { what } => write!(f, "{what} overflows double precision"),
        }
    }
}

impl std::error::Error for LlnError {}

impl From<InputError> for LlnError {
    fn from(e: InputError) -> Self {
        LlnError::Input(e)
    }
}

/// The moment-matching constants of `Var(log P^LLN) ≈ a σ̃² + b`, fitted at dimension `d`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LlnConstants {
    pub a: f64,
    pub b: f64,
    pub d: usize,
}

impl LlnConstants {
    /// Validates `a > 0` and finite, `b` finite, `d ≥ 1`.
    pub fn new(a: f64, b: f64, d: usize) -> Result<Self, LlnError> {
        if !(a.is_finite() && a > 0.0) {
            return Err(LlnError::InvalidParameter {
                name: "a",
                reason: format!("must be positive and finite, got {a}"),
            });
        }
        if !b.is_finite() {
            return Err(LlnError::InvalidParameter {
                name: "b",
                reason: format!("must be finite, got {b}"),
            });
        }
        if d == 0 {
            return Err(LlnError::InvalidParameter {
                name: "d",
                reason: "must be at least 1".into(),
            });
        }
        Ok(Self { a, b, d })
    }

    /// The authors' published constants (seed 001's paper, d = 64): a = 0.1486, b = −0.3549.
    pub fn published() -> Self {
        Self {
            a: 0.1486,
            b: -0.3549,
            d: 64,
        }
    }
}

/// The moment-matched LLN parameters for one (q, k); see the module documentation for the
/// scaling convention.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LlnFit {
    /// Standard deviation of all entries of q (as passed, i.e. after the caller's scaling).
    pub sigma_q: f64,
    /// Standard deviation of all entries of k (as passed).
    pub sigma_k: f64,
    /// The matching target `σ_sm² = d · sigma_q² · sigma_k²`: the seed's `σ_q²σ_k²` in unscaled
    /// units, the variance of `q·k` for the passed inputs.
    pub target_variance: f64,
    /// `σ̃ = √((target − b)/a)`, or [`SIGMA_TILDE_FLOOR`] when clamped.
    pub sigma_tilde: f64,
    /// `σ̃/(√2 sigma_q)`: `φ(q) = exp(alpha · q)`.
    pub alpha: f64,
    /// `σ̃/(√2 sigma_k)`: `ψ(k) = exp(beta · k)`.
    pub beta: f64,
    /// True when `target − b ≤ 0` or σ̃ was not finite, so σ̃ was set to the floor.
    pub clamped: bool,
}

fn matrix_size(len: usize, d: usize) -> Result<usize, LlnError> {
    if len == 0 || d == 0 {
        return Err(LlnError::InvalidParameter {
            name: "len, d",
            reason: format!("must be at least 1, got {len} and {d}"),
        });
    }
    len.checked_mul(d)
        .ok_or_else(|| LlnError::InvalidParameter {
            name: "len × d",
            reason: "overflows".into(),
        })
}

/// Mean and sample standard deviation (divisor n − 1, as `Dataset::moments`) of all entries.
fn spread(m: &[f64]) -> f64 {
    let n = m.len() as f64;
    let mean = m.iter().sum::<f64>() / n;
    let var = m.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0).max(1.0);
    var.sqrt()
}

/// The moment-matched LLN parameters (seed 001, "LLN Attention moment matching"):
/// `sigma_q`, `sigma_k` the standard deviations of all entries of q, resp. k (the seed's model:
/// i.i.d. zero-mean entries of variance σ_q², σ_k²), `σ̃² = (d σ_q²σ_k² − b)/a`,
/// `α = σ̃/(√2 σ_q)`, `β = σ̃/(√2 σ_k)`. When `d σ_q²σ_k² − b ≤ 0` or σ̃ is not finite, σ̃ is
/// clamped to [`SIGMA_TILDE_FLOOR`] and `clamped` is set (the features are then nearly
/// constant: almost uniform attention).
///
/// `constants.d` should equal `d` (the fit depends on d, REFERENCE.md); a mismatch is an error.
/// Errors: `len·d < 2` entries, mismatched lengths, non-finite entries, zero spread, or an
/// infinite α or β.
pub fn lln_fit(
    q: &[f64],
    k: &[f64],
    len: usize,
    d: usize,
    constants: &LlnConstants,
) -> Result<LlnFit, LlnError> {
    let size = matrix_size(len, d)?;
    if size < 2 {
        return Err(LlnError::InvalidParameter {
            name: "len × d",
            reason: "a standard deviation needs at least 2 entries".into(),
        });
    }
    check_finite("q", q, size)?;
    check_finite("k", k, size)?;
    let constants = LlnConstants::new(constants.a, constants.b, constants.d)?;
    if constants.d != d {
        return Err(LlnError::InvalidParameter {
            name: "constants.d",
            reason: format!("the constants were fitted at d = {}, not {d}", constants.d),
        });
    }
    let sigma_q = spread(q);
    let sigma_k = spread(k);
    for (name, s) in [("q", sigma_q), ("k", sigma_k)] {
        if !(s.is_finite() && s > 0.0) {
            return Err(LlnError::Degenerate { name });
        }
    }
    let target_variance = d as f64 * sigma_q * sigma_q * sigma_k * sigma_k;
    let raw = ((target_variance - constants.b) / constants.a).sqrt();
    let clamped = !(raw.is_finite() && raw > 0.0);
    let sigma_tilde = if clamped { SIGMA_TILDE_FLOOR } else { raw };
    let alpha = sigma_tilde / (std::f64::consts::SQRT_2 * sigma_q);
    let beta = sigma_tilde / (std::f64::consts::SQRT_2 * sigma_k);
    if !(alpha.is_finite() && beta.is_finite()) {
        return Err(LlnError::Degenerate {
            name: if alpha.is_finite() { "k" } else { "q" },
        });
    }
    Ok(LlnFit {
        sigma_q,
        sigma_k,
        target_variance,
        sigma_tilde,
        alpha,
        beta,
        clamped,
    })
}

/// The LLN feature map `exp(coefficient · u)` elementwise (seed 001: `φ(q) = e^{αq}`,
/// `ψ(k) = e^{βk}`), feature size d.
///
/// Returns a `Result` (not a bare vector) so that a NaN or infinite input or coefficient, or an
/// entry that overflows (`coefficient · u > 709.78`), is an error instead of a NaN or ∞ feature.
/// Entries may underflow to 0 (harmless for a feature). For large spreads, use
/// [`lln_log_attention`], which works in log space.
pub fn lln_features(u: &[f64], coefficient: f64) -> Result<Vec<f64>, LlnError> {
    if !coefficient.is_finite() {
        return Err(InputError::NonFinite {
            what: "coefficient",
            index: 0,
        }
        .into());
    }
    if let Some(index) = u.iter().position(|x| !x.is_finite()) {
        return Err(InputError::NonFinite { what: "u", index }.into());
    }
    let out: Vec<f64> = u.iter().map(|x| (coefficient * x).exp()).collect();
    if out.iter().any(|x| !x.is_finite()) {
        return Err(LlnError::Overflow {
            what: "a feature exp(coefficient · u)",
        });
    }
    Ok(out)
}

/// `log P^LLN` (`len × len`, row-major), `log P_ij = c_ij − log Σ_l exp(c_il)` with
/// `c_ij = log Σ_t exp(α q_it + β k_jt)` = `log φ(q_i)·ψ(k_j)` (seed 001's LLN matrix), computed
/// in log space: `c_ij = M_i + N_j + log Σ_t e^{αq_it − M_i} e^{βk_jt − N_j}` with the row
/// maxima M_i, N_j, falling back to an exact log-sum-exp over t for a pair whose shifted
/// products all underflow. Never overflows for finite inputs. O(L² d).
pub fn lln_log_attention(
    q: &[f64],
    k: &[f64],
    len: usize,
    d: usize,
    alpha: f64,
    beta: f64,
) -> Result<Vec<f64>, LlnError> {
    let size = matrix_size(len, d)?;
    check_finite("q", q, size)?;
    check_finite("k", k, size)?;
    for (what, c) in [("alpha", alpha), ("beta", beta)] {
        if !c.is_finite() {
            return Err(InputError::NonFinite { what, index: 0 }.into());
        }
    }
    let shifted = |m: &[f64], c: f64| -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut logs = Vec::with_capacity(size);
        let mut maxima = Vec::with_capacity(len);
        let mut exps = Vec::with_capacity(size);
        for row in m.chunks_exact(d) {
            let start = logs.len();
            logs.extend(row.iter().map(|x| c * x));
            let max = logs[start..]
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max);
            maxima.push(max);
            exps.extend(logs[start..].iter().map(|l| (l - max).exp()));
        }
        (logs, maxima, exps)
    };
    let (lq, mq, eq) = shifted(q, alpha);
    let (lk, mk, ek) = shifted(k, beta);
    if lq.iter().chain(&lk).any(|x| !x.is_finite()) {
        return Err(LlnError::Overflow {
            what: "a log-feature α·q or β·k",
        });
    }
    // The sums of a query against every key side by side (`dots`: bit for bit the pairwise
    // loop, but vectorised; the LLN fit's 5·10⁸ products took most of a second in WebAssembly
    // one pair at a time).
    let ek_columns = super::dots::transpose(&ek, len, d);
    let mut sums = vec![0.0; len];
    let mut out = vec![0.0; len * len];
    for (i, row) in out.chunks_exact_mut(len).enumerate() {
        super::dots::dots_with_columns(&eq[i * d..(i + 1) * d], &ek_columns, &mut sums);
        for (j, (c, &s)) in row.iter_mut().zip(&sums).enumerate() {
            *c = if s > 0.0 && s.is_finite() {
                mq[i] + mk[j] + s.ln()
            } else {
                let terms: Vec<f64> = lq[i * d..(i + 1) * d]
                    .iter()
                    .zip(&lk[j * d..(j + 1) * d])
                    .map(|(a, b)| a + b)
                    .collect();
                crate::numerics::logspace::log_sum_exp(&terms)
            };
        }
        let norm = crate::numerics::logspace::log_sum_exp(row);
        row.iter_mut().for_each(|c| *c -= norm);
    }
    if out.iter().any(|x| !x.is_finite()) {
        return Err(LlnError::Overflow {
            what: "a log-attention entry",
        });
    }
    Ok(out)
}

/// The variance (divisor n) of all entries of a matrix.
fn variance(m: &[f64]) -> f64 {
    let n = m.len() as f64;
    let mean = m.iter().sum::<f64>() / n;
    m.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n
}

/// Fits `Var(log P^LLN) ≈ a σ̃² + b` at dimension d (seed 001, "we perform linear interpolation
/// on random Gaussian samples"; REFERENCE.md's reading that reproduces the published a = 0.1486,
/// b = −0.3549 at d = 64):
///
/// - [`FIT_DRAWS`] = 8 draws of [`FIT_TOKENS`] = 256 queries and 256 keys in R^d, entries i.i.d.
///   N(0, 1) (per draw: queries row by row, then keys), each reused at every grid point (common
///   random numbers: the fitted line is not jittered by fresh samples per point);
/// - for `σ̃² = 1, …, 16` ([`FIT_GRID`]): `α = β = σ̃/√2`, the variance over all (i, j) of
///   `log P^LLN_ij` (rows normalised, [`lln_log_attention`]), averaged over the draws;
/// - ordinary least squares of those 16 variances against σ̃².
///
/// The curve is convex in σ̃², so the line (and a, b) depend on the grid and on d: fit for the d
/// in use. Cost: 8 × 16 × 256² × d multiply-adds (about 0.3 s at d = 64 natively).
pub fn fit_moment_matching<R: Rng + ?Sized>(
    d: usize,
    rng: &mut R,
) -> Result<LlnConstants, LlnError> {
    let size = matrix_size(FIT_TOKENS, d)?;
    if size > 1 << 24 {
        return Err(LlnError::InvalidParameter {
            name: "d",
            reason: format!("{d} is too large for the fit's 256 × d samples"),
        });
    }
    let mut draw = || -> Vec<f64> {
        (0..size)
            .map(|_| {
                let z: f64 = StandardNormal.sample(rng);
                z
            })
            .collect()
    };
    let xs: Vec<f64> = FIT_GRID.map(f64::from).collect();
    let mut ys = vec![0.0; xs.len()];
    for _ in 0..FIT_DRAWS {
        let q = draw();
        let k = draw();
        for (y, s2) in ys.iter_mut().zip(&xs) {
            let coefficient = (s2 / 2.0).sqrt();
            let logp = lln_log_attention(&q, &k, FIT_TOKENS, d, coefficient, coefficient)?;
            *y += variance(&logp) / FIT_DRAWS as f64;
        }
    }
    let n = xs.len() as f64;
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().sum::<f64>() / n;
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    let a = sxy / sxx;
    LlnConstants::new(a, my - a * mx, d)
}

/// LLN's feature maps: `φ(q) = exp(α q)`, `ψ(k) = exp(β k)` elementwise (seed 001).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogNormalFeatures {
    pub alpha: f64,
    pub beta: f64,
}

impl super::linear::FeatureMap for LogNormalFeatures {
    fn features(&self, u: &[f64], side: crate::numerics::estimators::Side) -> Vec<f64> {
        let c = if side == crate::numerics::estimators::Side::Query {
            self.alpha
        } else {
            self.beta
        };
        u.iter().map(|x| (c * x).exp()).collect()
    }

    fn is_positive(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests;
