//! The fast path of the estimators: `log Σ_k f(ω_k·z)` for blocks of pairs in `f32`, written
//! so that LLVM turns it into `simd128` code (lane accumulators on fixed-size arrays, a
//! polynomial `exp` built from bit operations), register-blocked over [`ROWS`] pairs ×
//! [`COLUMNS`] projections.
//!
//! Why `f32` is enough: the projection `ω·z` carries a relative rounding error near
//! `d · 2^-24 ≈ 3e-6`, and the sum over `m` terms about as much again; both are orders of
//! magnitude below the Monte Carlo error of the estimate itself (a relative RMSE of `1/√m`
//! or more, REFERENCE.md Lemma 3.1). `lab::kernel::tasks::check_kernel_against_f64` checks it
//! against the f64 reference ([`super::estimators::reference_estimate`]) for every registered
//! estimator, with a tolerance derived from that error. The prefactor and the log of the true
//! value stay in f64. [`prefix_block_sums`] runs `exp` and `cosh` sums in simd128; the other sums
//! (`cos`, GERF's weighted `exp` and `cosh`, a complex A's two projections) take the f32
//! projections into [`super::estimators::reduce`] in f64.
//!
//! Memory: one `m`-long scratch row per pair of a block; never an `n × m` matrix.

use super::estimators::{FastSum, FeatureForm, reduce};
use super::logspace::SignedLog;
use crate::numerics::portable::Libm;
use cosh::{log_sum_cosh_f32, log_sum_cosh_prefixes};

/// Pairs projected together against the same block of ω (register blocking).
pub const ROWS: usize = 4;
// `project_block` splits its input in exactly four rows.
const _: () = assert!(ROWS == 4);
/// Projections per block: two `f32x4` vectors per pair.
pub const COLUMNS: usize = 8;

pub use packed::TransposedOmega;

/// Reusable scratch space: `ROWS` rows of `m` projections and the block's `z` vectors.
#[derive(Clone, Debug, Default)]
pub struct KernelScratch {
    projected: Vec<f32>,
    z: Vec<f32>,
    /// One pair's projections in f64, for the sums done outside the simd paths.
    t: Vec<f64>,
    v: Vec<f64>,
    /// Whether a module built with relaxed SIMD may use its fused multiply-add (faster, not
    /// bit for bit the other builds); `false` gives every build the same bits. Ignored where
    /// the module has no relaxed SIMD.
    pub fused: bool,
}

impl KernelScratch {
    /// Scratch space whose kernel fuses multiply-adds where the module allows (see `fused`).
    pub fn fused() -> Self {
        Self {
            fused: true,
            ..Self::default()
        }
    }
}

/// One block of pairs for [`prefix_block_sums`]: `pairs` pairs of `per_pair` vectors z each
/// (the rows of `z`, pair after pair), summed with `sum` over the projections on `omega`,
/// `phases[p]` the phase of pair `p` (the sums done in f64 read it).
#[derive(Clone, Copy)]
pub struct Block<'a> {
    pub omega: &'a TransposedOmega,
    pub z: &'a [f32],
    pub pairs: usize,
    pub per_pair: usize,
    pub sum: FastSum,
    pub phases: &'a [f64],
}

/// `Σ_k g(ω_k·z)` over the first `m` projections of `block.omega` for every `m` of `lengths`
/// (each at most its `m`), as signed logs, from one projection of the block: `emit(i, p,
/// value)` for length `lengths[i]` and pair `p`. `exp` and `cosh` run the simd128 log-sums;
/// the other sums ([`FastSum`]) take the f32 projections into [`reduce`] in f64, with the
/// pair's phase. A prefix of the projections is itself a draw at the smaller m
/// (the workspace's curves take prefixes of one stream), and each projection's f32 value is
/// the same whatever others are computed beside it, so every sum is bit for bit
/// the sum over `omega.prefix(m)` alone, for the multiply-adds of the largest m alone (the
/// MSE-against-m curve's ten m cost those of its largest twice instead of once). The cosh sums
/// also add each term once for every length (`cosh::log_sum_cosh_prefixes`); the others sum
/// each prefix anew.
pub fn prefix_block_sums(
    block: Block<'_>,
    lengths: &[usize],
    scratch: &mut KernelScratch,
    mut emit: impl FnMut(usize, usize, SignedLog),
) {
    let Block {
        omega,
        z,
        pairs,
        per_pair,
        sum,
        phases,
    } = block;
    let per_pair = per_pair.max(1);
    let form = match sum {
        FastSum::Exp => Some(FeatureForm::Positive),
        FastSum::Cosh => Some(FeatureForm::Hyperbolic),
        _ => None,
    };
    let rows = (pairs * per_pair).min(ROWS);
    let pairs = (rows / per_pair).min(phases.len());
    // The simd128 sums read one row per pair (row p), the f64 sums `per_pair` rows.
    let projected_rows = if form.is_some() { pairs } else { rows };
    if pairs == 0 || !project_padded(omega, z, projected_rows, scratch) {
        return;
    }
    let stride = omega.stride;
    let KernelScratch {
        projected,
        t,
        v,
        fused,
        ..
    } = scratch;
    if form == Some(FeatureForm::Hyperbolic) {
        // Each pair's prefixes at once: every term summed once for all of them.
        for p in 0..pairs {
            let row = &projected[p * stride..p * stride + omega.m];
            log_sum_cosh_prefixes(row, lengths, *fused, &mut |i, value| {
                emit(i, p, SignedLog::positive(value))
            });
        }
        return;
    }
    for (i, &m) in lengths.iter().enumerate() {
        let m = m.min(omega.m);
        let row = |r: usize| &projected[r * stride..r * stride + m];
        for (p, &phase) in phases.iter().enumerate().take(pairs) {
            let value = match form {
                // (the hyperbolic form returned above)
                Some(_) => SignedLog::positive(log_sum_exp_f32(row(p))),
                None => {
                    t.clear();
                    t.extend(row(p * per_pair).iter().map(|t| f64::from(*t)));
                    v.clear();
                    if per_pair > 1 {
                        v.extend(row(p * per_pair + 1).iter().map(|t| f64::from(*t)));
                    }
                    reduce(sum, t, v, &omega.squared_norms[..m], phase)
                }
            };
            emit(i, p, value);
        }
    }
}

/// `log Σ_k f(ω_k·z_r)` for up to [`ROWS`] vectors `z_r` (row-major in `z`, `rows × d`),
/// written to `out[..rows]`; `f = exp` (positive form) or `cosh` (hyperbolic form). The sum
/// is shifted by its largest term, so no argument of `exp` is positive and nothing
/// overflows. Returns without writing if the shapes disagree (callers build them together).
pub fn log_sums(
    omega: &TransposedOmega,
    z: &[f32],
    rows: usize,
    form: FeatureForm,
    scratch: &mut KernelScratch,
    out: &mut [f64],
) {
    let stride = omega.stride;
    let rows = rows.min(ROWS).min(out.len());
    if rows == 0 || !project_padded(omega, z, rows, scratch) {
        return;
    }
    for (r, value) in out.iter_mut().enumerate().take(rows) {
        let t = &scratch.projected[r * stride..r * stride + omega.m];
        *value = match form {
            FeatureForm::Positive => log_sum_exp_f32(t),
            FeatureForm::Hyperbolic => log_sum_cosh_f32(t, scratch.fused),
        };
    }
}

/// Projects the first `rows` vectors of `z` (d each) on every ω into `scratch.projected`
/// (row `r` at `r · stride`), the block padded to [`ROWS`] vectors (zero rows cost a little
/// work and are never read). False, and nothing projected, if `z` is too short.
fn project_padded(
    omega: &TransposedOmega,
    z: &[f32],
    rows: usize,
    scratch: &mut KernelScratch,
) -> bool {
    let d = omega.d;
    if z.len() < rows * d {
        return false;
    }
    scratch.z.clear();
    scratch.z.extend_from_slice(&z[..rows * d]);
    scratch.z.resize(ROWS * d, 0.0);
    scratch.projected.resize(ROWS * omega.stride, 0.0);
    #[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
    if scratch.fused {
        project_block_fused(omega, &scratch.z, &mut scratch.projected);
        return true;
    }
    project_block(omega, &scratch.z, &mut scratch.projected);
    true
}

/// The block's ROWS vectors `z_r` (d each) and, panel by panel, the panel of ω (d × COLUMNS)
/// with the COLUMNS output slots of each row: what both versions of [`project_block`] walk.
#[inline(always)]
#[allow(clippy::type_complexity)]
fn block_panels<'a>(
    omega: &'a TransposedOmega,
    z: &'a [f32],
    projected: &'a mut [f32],
) -> (
    [&'a [f32]; ROWS],
    impl Iterator<Item = (&'a [f32], [&'a mut [f32]; ROWS])>,
) {
    let (d, stride) = (omega.d, omega.stride);
    let (z0, rest) = z.split_at(d);
    let (z1, rest) = rest.split_at(d);
    let (z2, z3) = rest.split_at(d);
    let (p0, rest) = projected.split_at_mut(stride);
    let (p1, rest) = rest.split_at_mut(stride);
    let (p2, p3) = rest.split_at_mut(stride);
    let outputs = p0
        .chunks_exact_mut(COLUMNS)
        .zip(p1.chunks_exact_mut(COLUMNS))
        .zip(p2.chunks_exact_mut(COLUMNS))
        .zip(p3.chunks_exact_mut(COLUMNS))
        .map(|(((o0, o1), o2), o3)| [o0, o1, o2, o3]);
    let panels = omega.data.chunks_exact(d * COLUMNS).zip(outputs);
    ([z0, z1, z2, &z3[..d]], panels)
}

/// [`project_block`] with WebAssembly's relaxed fused multiply-add (`f32x4.relaxed_madd`, one
/// instruction instead of a multiply and an add where the processor has FMA): with the rest of
/// the worker built for relaxed SIMD, about 2.5 times the kernel's speed in Chromium. Only the
/// workers' relaxed builds have it (`scripts/build-worker.sh`), and use it when the scratch
/// says `fused` (the page's interactive work); a browser without relaxed SIMD gets the
/// `-simd128` build. The portable version below is the reference, and what the relaxed build
/// runs for the export (bit for bit the command line's); `tests/browser_worker.rs`, run in
/// the page's build and the workers', checks this one against the f64 path.
#[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
#[inline(always)]
fn project_block_fused(omega: &TransposedOmega, z: &[f32], projected: &mut [f32]) {
    use core::arch::wasm32::{f32x4_relaxed_madd, f32x4_splat, v128, v128_load, v128_store};
    let ([z0, z1, z2, z3], panels) = block_panels(omega, z, projected);
    for (panel, [o0, o1, o2, o3]) in panels {
        let zero = f32x4_splat(0.0);
        let mut acc = [[zero; 2]; ROWS];
        for ((((w, a), b), c), e) in panel.chunks_exact(COLUMNS).zip(z0).zip(z1).zip(z2).zip(z3) {
            // SAFETY: `w` holds exactly COLUMNS = 8 floats (chunks_exact), so both unaligned
            // 16-byte loads stay inside it.
            let (w0, w1) = unsafe {
                let at = w.as_ptr() as *const v128;
                (v128_load(at), v128_load(at.add(1)))
            };
            for (acc_r, zr) in acc.iter_mut().zip([a, b, c, e]) {
                let s = f32x4_splat(*zr);
                acc_r[0] = f32x4_relaxed_madd(s, w0, acc_r[0]);
                acc_r[1] = f32x4_relaxed_madd(s, w1, acc_r[1]);
            }
        }
        for (out, acc_r) in [o0, o1, o2, o3].into_iter().zip(&acc) {
            // SAFETY: `out` holds exactly 8 floats (chunks_exact_mut): two 16-byte stores.
            unsafe {
                let at = out.as_mut_ptr() as *mut v128;
                v128_store(at, acc_r[0]);
                v128_store(at.add(1), acc_r[1]);
            }
        }
    }
}

/// `projected[r * stride + k] = ω_k · z_r` for the ROWS vectors of `z`: for each panel of
/// COLUMNS projections, ROWS × COLUMNS accumulators stay in registers over the d coordinates.
#[inline(always)]
fn project_block(omega: &TransposedOmega, z: &[f32], projected: &mut [f32]) {
    let ([z0, z1, z2, z3], panels) = block_panels(omega, z, projected);
    for (panel, [o0, o1, o2, o3]) in panels {
        let mut acc = [[0.0f32; COLUMNS]; ROWS];
        for ((((w, a), b), c), e) in panel.chunks_exact(COLUMNS).zip(z0).zip(z1).zip(z2).zip(z3) {
            for l in 0..COLUMNS {
                acc[0][l] += a * w[l];
                acc[1][l] += b * w[l];
                acc[2][l] += c * w[l];
                acc[3][l] += e * w[l];
            }
        }
        o0.copy_from_slice(&acc[0]);
        o1.copy_from_slice(&acc[1]);
        o2.copy_from_slice(&acc[2]);
        o3.copy_from_slice(&acc[3]);
    }
}

const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// ln 2 split in two so that `n · LN2_HI` is exact for |n| < 2^9 (Cody and Waite).
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;

/// `e^x` for `x ≤ 0` in f32, to about 2 ulp: `2^n · e^r` with `n = round(x / ln 2)`,
/// `|r| ≤ ln 2 / 2`, and Cephes' degree-7 polynomial for `e^r`. Arguments below −87 give
/// `e^-87 ≈ 1.6e-38` instead of a denormal or 0: relative to the shifted sum's leading term
/// 1 that is nothing. Branch-free so that it vectorises.
#[inline(always)]
pub(crate) fn exp_nonpositive(x: f32) -> f32 {
    let x = x.clamp(-87.0, 0.0);
    // Round x / ln 2 to the nearest integer by adding 1.5·2^23: the sum's low mantissa bits
    // are then n itself (no float-to-int conversion, no `floor`, both slow without SSE4.1).
    let shifted = x * LOG2_E + ROUNDING_MAGIC;
    let n = shifted - ROUNDING_MAGIC;
    let n_bits = shifted.to_bits().wrapping_sub(ROUNDING_MAGIC.to_bits());
    let r = x - n * LN2_HI - n * LN2_LO;
    let mut p = 1.987_569_1e-4f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5; // Cephes' 5.0000001201e-1 rounds to 0.5 in f32
    let e_r = p * r * r + r + 1.0;
    // n ∈ [−126, 0]: 2^n is a normal number built from its exponent bits.
    let two_n = f32::from_bits(n_bits.wrapping_add(127) << 23);
    e_r * two_n
}

/// `1.5 · 2^23`: adding it to a float of magnitude below 2^22 rounds to an integer.
const ROUNDING_MAGIC: f32 = 12_582_912.0;

/// `max(floor, max_k key(t_k))` with COLUMNS lane accumulators (an ordered fold does not
/// vectorise).
#[inline(always)]
fn lane_max(t: &[f32], floor: f32, key: impl Fn(f32) -> f32) -> f32 {
    let chunks = t.chunks_exact(COLUMNS);
    let tail = chunks.remainder();
    let mut lanes = [floor; COLUMNS];
    for chunk in chunks {
        for l in 0..COLUMNS {
            lanes[l] = lanes[l].max(key(chunk[l]));
        }
    }
    lanes
        .into_iter()
        .chain(tail.iter().map(|v| key(*v)))
        .fold(floor, f32::max)
}

/// `log Σ_k exp(t_k)`, shifted by the maximum; the sum accumulates in COLUMNS lanes.
#[inline(always)]
fn log_sum_exp_f32(t: &[f32]) -> f64 {
    let max = lane_max(t, f32::NEG_INFINITY, |v| v);
    if !max.is_finite() {
        return f64::from(max);
    }
    f64::from(max) + f64::from(exp_sum(t, 1.0, max)).libm_ln()
}

/// `Σ_k exp(sign · t_k − shift)` with COLUMNS lane accumulators, for `sign · t_k ≤ shift`.
/// One exponential per loop body: with two, LLVM vectorises across the pair instead of across
/// the lanes, at less than half the speed.
#[inline(always)]
fn exp_sum(t: &[f32], sign: f32, shift: f32) -> f32 {
    let chunks = t.chunks_exact(COLUMNS);
    let tail = chunks.remainder();
    let mut sums = [0.0f32; COLUMNS];
    for chunk in chunks {
        for l in 0..COLUMNS {
            sums[l] += exp_nonpositive(sign * chunk[l] - shift);
        }
    }
    let mut sum: f32 = sums.iter().sum();
    // The tail is at most seven terms: opaque, so that LLVM keeps it a loop instead of
    // unrolling seven copies of the exponential into every caller.
    for v in std::hint::black_box(tail) {
        sum += exp_nonpositive(sign * v - shift);
    }
    sum
}

mod cosh;
mod packed;
#[cfg(test)]
mod tests;
