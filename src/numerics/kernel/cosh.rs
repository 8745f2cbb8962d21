//! The hyperbolic form's sums `log Σ_k cosh(t_k)` in f32, for one length or for every prefix
//! of one projection (the MSE-against-m curve), with one range reduction per term.

use super::{COLUMNS, LN2_HI, LN2_LO, LOG2_E, ROUNDING_MAGIC, exp_sum, lane_max};
use crate::numerics::portable::Libm;
use std::slice::ChunksExact;

/// `log Σ_{k<m} cosh(t_k)` for every `m` of `lengths` (at most `t.len()` each), `emit(i, value)`
/// for `lengths[i]`: `M + log Σ_k (e^{t_k − M} + e^{−t_k − M})/2`, `M = max |t_k|` of the
/// prefix. Below [`SHARED_REDUCTION_LIMIT`] both exponentials of a term come from one range
/// reduction ([`accumulate`], shifted by `K ln 2 ≥ M` with `K` an integer, so that the shift is
/// exact in the exponent); beyond it, from two ([`exp_sum`]), whose arguments are reduced after
/// the shift and so stay exact at any magnitude.
///
/// Each length's value is bit for bit what it alone gives, and the terms are summed once for
/// all of them (the MSE-against-m curve's prefixes): the lane sums run on from one length to
/// the next over whole lane chunks (the chunks start at 0 whatever the length, so the lanes
/// hold the same sums), each length's tail of fewer than COLUMNS terms added after them; when
/// the shift grows, the lanes are rescaled by the power of two between the shifts, exact
/// while both are at most [`UNCLAMPED_MAX_SHIFT`] (every term is at least `2^-K`, far from the
/// subnormals); past it, and after a shorter length, they start again from 0.
#[inline(never)]
pub(super) fn log_sum_cosh_prefixes(
    t: &[f32],
    lengths: &[usize],
    fused: bool,
    emit: &mut dyn FnMut(usize, f64),
) {
    let mut lanes = Lanes::zero();
    // `lanes` holds the terms of t[..summed] at shift `shift`; `max` is max |t| over t[..seen].
    let (mut summed, mut seen, mut max, mut shift) = (0, 0, 0.0f32, 0);
    for (i, &m) in lengths.iter().enumerate() {
        let m = m.min(t.len());
        if m < seen {
            (lanes, summed, seen, max) = (Lanes::zero(), 0, 0, 0.0);
        }
        max = lane_max(&t[seen..m], max, f32::abs);
        seen = m;
        if !max.is_finite() {
            emit(i, f64::from(max));
            continue;
        }
        if max >= SHARED_REDUCTION_LIMIT {
            let sum = exp_sum(&t[..m], 1.0, max) + exp_sum(&t[..m], -1.0, max);
            emit(i, f64::from(max) + f64::from(0.5 * sum).libm_ln());
            continue;
        }
        let k = shift_exponent(max);
        if k != shift {
            if summed > 0 && shift < k && k <= UNCLAMPED_MAX_SHIFT {
                lanes.scale_by_power_of_two(shift - k);
            } else {
                (lanes, summed) = (Lanes::zero(), 0);
            }
            shift = k;
        }
        let whole = m - m % COLUMNS;
        accumulate(&mut lanes, t[summed..whole].chunks_exact(COLUMNS), k, fused);
        summed = whole;
        let mut sum = lanes.total();
        // At most seven terms, opaque so that LLVM keeps them a loop (as in `exp_sum`).
        for v in std::hint::black_box(&t[whole..m]) {
            sum += cosh_term(*v, k);
        }
        emit(i, log_of_shifted(k, sum));
    }
}

/// `log Σ_k cosh(t_k)` over all of `t` ([`log_sum_cosh_prefixes`] at one length).
pub(super) fn log_sum_cosh_f32(t: &[f32], fused: bool) -> f64 {
    let mut value = f64::NAN;
    log_sum_cosh_prefixes(t, &[t.len()], fused, &mut |_, v| value = v);
    value
}

/// The shift `K = ⌈M log₂ e⌉` of a sum whose largest `|t|` is `M`: `K ln 2 ≥ M`, and the
/// shift is exact in the exponent.
#[inline(always)]
fn shift_exponent(max: f32) -> i32 {
    (max * LOG2_E).ceil() as i32
}

/// `log Σ cosh` from the sum shifted by `K ln 2` (twice the mean of the exponentials).
#[inline(always)]
fn log_of_shifted(k: i32, sum: f32) -> f64 {
    f64::from(k) * std::f64::consts::LN_2 + f64::from(0.5 * sum).libm_ln()
}

/// Largest `max |t_k|` for the shared reduction: `n = round(t / ln 2)` then stays below 2^14,
/// where `n · LN2_HI` is exact and the rounding trick works.
const SHARED_REDUCTION_LIMIT: f32 = 8192.0;

/// Largest shift `K` whose terms need no clamp: `|n| ≤ K`, so the biased exponents
/// `±n − K + 127` of `2^{±n−K}` are at least `127 − 2K ≥ 1` (normal numbers).
const UNCLAMPED_MAX_SHIFT: i32 = 63;

/// Taylor coefficients of `e^r`: `E(r) = 1 + r²/2 + r⁴/24 + r⁶/720`,
/// `O(r) = r (1 + r²/6 + r⁴/120 + r⁶/5040)`.
const EVEN: [f32; 3] = [0.5, 1.0 / 24.0, 1.0 / 720.0];
const ODD: [f32; 3] = [1.0 / 6.0, 1.0 / 120.0, 1.0 / 5040.0];

/// `e^{t − K ln 2} + e^{−t − K ln 2}` for `|t| ≤ K ln 2`, `K ln 2 < 11356`, with one range
/// reduction: `t = n ln 2 + r`, `|r| ≤ ln 2 / 2`, so `e^{±t − K ln 2} = 2^{±n − K} · e^{±r}`,
/// and `e^{±r} = E(r) ± O(r)` from the even and odd halves of the Taylor polynomial of degree 7
/// (truncation error `r^8/8! < 6e-9`). Powers of two below 2^-126 become 0, which beside the
/// largest term (at least 1/2) is nothing.
#[inline(always)]
fn cosh_term(t: f32, k: i32) -> f32 {
    let shifted = t * LOG2_E + ROUNDING_MAGIC;
    let n = shifted - ROUNDING_MAGIC;
    let n_bits = (shifted.to_bits() as i32).wrapping_sub(ROUNDING_MAGIC.to_bits() as i32);
    let r = t - n * LN2_HI - n * LN2_LO;
    let r2 = r * r;
    let even = 1.0 + r2 * (EVEN[0] + r2 * (EVEN[1] + r2 * EVEN[2]));
    let odd = r * (1.0 + r2 * (ODD[0] + r2 * (ODD[1] + r2 * ODD[2])));
    // Biased exponents of 2^{n−K} and 2^{−n−K}; 0 (the float 0) below the normal range.
    let up = (n_bits - k + 127).max(0) << 23;
    let down = (-n_bits - k + 127).max(0) << 23;
    (even + odd) * f32::from_bits(up as u32) + (even - odd) * f32::from_bits(down as u32)
}

/// Adds the terms of `chunks` (shift `K = k`) to `lanes`. `fused` (the page's interactive
/// work, with relaxed SIMD) with `K` at most [`UNCLAMPED_MAX_SHIFT`] takes the fused loop
/// without clamps; anything else the loop that gives every build the same bits.
#[inline(always)]
fn accumulate(lanes: &mut Lanes, chunks: ChunksExact<'_, f32>, k: i32, fused: bool) {
    if fused && k <= UNCLAMPED_MAX_SHIFT {
        lanes.add_terms::<true>(chunks, k);
    } else {
        lanes.add_terms::<false>(chunks, k);
    }
}

/// The COLUMNS running sums of [`accumulate`]: lane `l` sums the terms at `l` modulo COLUMNS,
/// in order.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
#[derive(Clone, Copy)]
struct Lanes([f32; COLUMNS]);

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
impl Lanes {
    fn zero() -> Self {
        Self([0.0; COLUMNS])
    }

    /// The portable loop: every build's bits (`FAST` is the simd128 version's choice).
    #[inline(always)]
    fn add_terms<const FAST: bool>(&mut self, chunks: ChunksExact<'_, f32>, k: i32) {
        for chunk in chunks {
            for (lane, t) in self.0.iter_mut().zip(chunk) {
                *lane += cosh_term(*t, k);
            }
        }
    }

    /// The simd128 version's reduction, in its order: its two f32x4 accumulators (lanes 0–3
    /// and 4–7) added lane by lane, then the four lanes in turn. The same rounding, so the
    /// native build and the simd128 worker give the same bits.
    #[inline(always)]
    fn total(&self) -> f32 {
        let both: [f32; 4] = std::array::from_fn(|l| self.0[l] + self.0[l + 4]);
        both[0] + both[1] + both[2] + both[3]
    }

    /// Every lane times `2^power` (`−126 < power ≤ 0`: a normal factor).
    #[inline(always)]
    fn scale_by_power_of_two(&mut self, power: i32) {
        let factor = f32::from_bits(((power + 127) as u32) << 23);
        for lane in &mut self.0 {
            *lane *= factor;
        }
    }
}

/// The COLUMNS running sums of [`accumulate`] as two f32x4 vectors (lanes 0–3 and 4–7).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[derive(Clone, Copy)]
struct Lanes {
    low: core::arch::wasm32::v128,
    high: core::arch::wasm32::v128,
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
impl Lanes {
    fn zero() -> Self {
        let zero = core::arch::wasm32::f32x4_splat(0.0);
        Self {
            low: zero,
            high: zero,
        }
    }

    /// Explicit `simd128` (LLVM leaves the portable loop scalar in WebAssembly). `FAST`: fused
    /// multiply-adds where the module has relaxed SIMD, and no clamp of the exponents (the
    /// caller's `K` is at most [`UNCLAMPED_MAX_SHIFT`]); else the portable loop's operations
    /// and bits.
    #[inline(always)]
    fn add_terms<const FAST: bool>(&mut self, chunks: ChunksExact<'_, f32>, k: i32) {
        use core::arch::wasm32::*;
        /// `a·b + c`: fused where the module has relaxed SIMD and `FAST` asks for it, else
        /// two operations (every build's bits).
        #[inline(always)]
        fn madd<const FAST: bool>(a: v128, b: v128, c: v128) -> v128 {
            #[cfg(target_feature = "relaxed-simd")]
            if FAST {
                return f32x4_relaxed_madd(a, b, c);
            }
            f32x4_add(f32x4_mul(a, b), c)
        }
        let magic = f32x4_splat(ROUNDING_MAGIC);
        // The biased exponents 127 − K ± n straight from the rounded sum's bits (n is their
        // offset from the magic number's), in wrapping integer arithmetic.
        let magic_bits = ROUNDING_MAGIC.to_bits() as i32;
        let up_bias = i32x4_splat((127 - k).wrapping_sub(magic_bits));
        let down_bias = i32x4_splat((127 - k).wrapping_add(magic_bits));
        let zero = i32x4_splat(0);
        let one = f32x4_splat(1.0);
        let [e0, e1, e2] = EVEN.map(|c| f32x4_splat(c));
        let [o0, o1, o2] = ODD.map(|c| f32x4_splat(c));
        let (minus_ln2_hi, minus_ln2_lo) = (f32x4_splat(-LN2_HI), f32x4_splat(-LN2_LO));
        let add_term = |sum: v128, t: v128| {
            let shifted = madd::<FAST>(t, f32x4_splat(LOG2_E), magic);
            let n = f32x4_sub(shifted, magic);
            // n · LN2_HI is exact, so both steps keep r exact to f32 rounding (and the first
            // has the same bits fused or not).
            let r = madd::<FAST>(n, minus_ln2_hi, t);
            let r = madd::<FAST>(n, minus_ln2_lo, r);
            let r2 = f32x4_mul(r, r);
            let even = madd::<FAST>(r2, madd::<FAST>(r2, madd::<FAST>(r2, e2, e1), e0), one);
            let odd = f32x4_mul(
                r,
                madd::<FAST>(r2, madd::<FAST>(r2, madd::<FAST>(r2, o2, o1), o0), one),
            );
            let mut up = i32x4_add(shifted, up_bias);
            let mut down = i32x4_sub(down_bias, shifted);
            if !FAST {
                (up, down) = (i32x4_max(up, zero), i32x4_max(down, zero));
            }
            let (up, down) = (i32x4_shl(up, 23), i32x4_shl(down, 23));
            if FAST {
                madd::<FAST>(
                    f32x4_add(even, odd),
                    up,
                    madd::<FAST>(f32x4_sub(even, odd), down, sum),
                )
            } else {
                let term = f32x4_add(
                    f32x4_mul(f32x4_add(even, odd), up),
                    f32x4_mul(f32x4_sub(even, odd), down),
                );
                f32x4_add(sum, term)
            }
        };
        let Lanes { mut low, mut high } = *self;
        for chunk in chunks {
            // SAFETY: `chunk` holds exactly COLUMNS = 8 floats: two unaligned 16-byte loads.
            let (a, b) = unsafe {
                let at = chunk.as_ptr() as *const v128;
                (v128_load(at), v128_load(at.add(1)))
            };
            low = add_term(low, a);
            high = add_term(high, b);
        }
        *self = Lanes { low, high };
    }

    #[inline(always)]
    fn total(&self) -> f32 {
        use core::arch::wasm32::{f32x4_add, f32x4_extract_lane};
        let both = f32x4_add(self.low, self.high);
        f32x4_extract_lane::<0>(both)
            + f32x4_extract_lane::<1>(both)
            + f32x4_extract_lane::<2>(both)
            + f32x4_extract_lane::<3>(both)
    }

    /// Every lane times `2^power` (`−126 < power ≤ 0`: a normal factor).
    #[inline(always)]
    fn scale_by_power_of_two(&mut self, power: i32) {
        use core::arch::wasm32::{f32x4_mul, f32x4_splat};
        let factor = f32x4_splat(f32::from_bits(((power + 127) as u32) << 23));
        self.low = f32x4_mul(self.low, factor);
        self.high = f32x4_mul(self.high, factor);
    }
}
