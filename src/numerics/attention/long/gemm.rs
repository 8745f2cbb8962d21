//! The two building blocks of the long-sequence kernels, in f32: a register-blocked matrix
//! product ([`gemm`], the blocking of the model's dense layers, `numerics::bert::linear`) and an
//! exponential that LLVM vectorises ([`exp_in_place`]).

use crate::numerics::simd::F4;

/// Rows of A per register block.
const ROWS: usize = 4;
/// Columns of B per register block: two four-lane vectors.
const COLUMNS: usize = 8;

/// A matrix in a slice: `rows × columns` values, row `i` starting at `i · stride`.
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a> {
    pub values: &'a [f32],
    pub stride: usize,
}

/// `C (m × n) = A (m × k) · B (k × n)`, or `C += A · B` with `accumulate`; every matrix
/// row-major with its own row stride (so blocks of larger matrices are products too). Eight
/// columns of B at a time are first copied into a contiguous strip (k × 8), which every block
/// of four rows then reads as two vectors a step with A's entries broadcast: a 4 × 8 block of C
/// stays in registers for the whole inner dimension. Reading B in place, a row stride apart,
/// ran at two thirds of the strip's rate in V8 (15 against 22·10⁹ multiply-adds a second).
///
/// Shapes are the caller's contract (slices too short panic: these are internal kernels whose
/// shapes come from the same function that allocates the buffers).
#[allow(clippy::too_many_arguments)]
pub fn gemm(
    m: usize,
    n: usize,
    k: usize,
    a: MatRef<'_>,
    b: MatRef<'_>,
    c: &mut [f32],
    ldc: usize,
    accumulate: bool,
) {
    let full_columns = n - n % COLUMNS;
    let mut strip = vec![0.0f32; k * COLUMNS];
    let mut column = 0;
    while column < full_columns {
        for (p, to) in strip.chunks_exact_mut(COLUMNS).enumerate() {
            let from = p * b.stride + column;
            to.copy_from_slice(&b.values[from..from + COLUMNS]);
        }
        let mut row = 0;
        while row + ROWS <= m {
            block::<ROWS>(row, column, k, a, &strip, c, ldc, accumulate);
            row += ROWS;
        }
        while row < m {
            block::<1>(row, column, k, a, &strip, c, ldc, accumulate);
            row += 1;
        }
        column += COLUMNS;
    }
    // The last n mod 8 columns, plainly.
    for i in 0..m {
        for j in full_columns..n {
            let mut total = if accumulate { c[i * ldc + j] } else { 0.0 };
            for p in 0..k {
                total += a.values[i * a.stride + p] * b.values[p * b.stride + j];
            }
            c[i * ldc + j] = total;
        }
    }
}

/// Rows `row .. row + R` of A against one strip of B (k × 8, contiguous).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn block<const R: usize>(
    row: usize,
    column: usize,
    k: usize,
    a: MatRef<'_>,
    strip: &[f32],
    c: &mut [f32],
    ldc: usize,
    accumulate: bool,
) {
    let a_rows: [&[f32]; R] =
        std::array::from_fn(|r| &a.values[(row + r) * a.stride..(row + r) * a.stride + k]);
    let mut acc = [[F4::splat(0.0); 2]; R];
    if accumulate {
        for (r, acc) in acc.iter_mut().enumerate() {
            let start = (row + r) * ldc + column;
            *acc = [F4::load(&c[start..]), F4::load(&c[start + 4..])];
        }
    }
    for (p, w) in strip.chunks_exact(COLUMNS).enumerate() {
        let (b0, b1) = (F4::load(&w[..4]), F4::load(&w[4..]));
        for r in 0..R {
            let x = F4::splat(a_rows[r][p]);
            acc[r][0] = acc[r][0].mul_add(x, b0);
            acc[r][1] = acc[r][1].mul_add(x, b1);
        }
    }
    for (r, [a0, a1]) in acc.iter().enumerate() {
        let start = (row + r) * ldc + column;
        a0.store(&mut c[start..start + 4]);
        a1.store(&mut c[start + 4..start + 8]);
    }
}

/// Below this, `exp` is treated as this (about 1.6·10⁻³⁸, the smallest normal scale the
/// exponent bits can carry); the kernels only exponentiate scores minus their maximum, so a
/// value this small is a weight of zero to f32 rounding anyway.
const EXP_FLOOR: f32 = -87.0;

/// `x ← eˣ` for every entry, to about 2 ulp for `x ∈ [−87, 88]` (Cody–Waite reduction
/// `x = n ln 2 + r`, `|r| ≤ ln 2 / 2`, a degree-6 Taylor polynomial for `eʳ`, and `2ⁿ` built in
/// the exponent bits). Branch-free, so LLVM turns the loop into `simd128` (SSE) code; the
/// standard library's `expf` is a call per value.
pub fn exp_in_place(values: &mut [f32]) {
    for x in values.iter_mut() {
        *x = exp_approx(*x);
    }
}

/// One value of [`exp_in_place`].
#[inline(always)]
pub fn exp_approx(x: f32) -> f32 {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split so that n · LN2_HIGH is exact for |n| < 2¹².
    const LN2_HIGH: f32 = 0.693_359_4;
    const LN2_LOW: f32 = -2.121_944_4e-4;
    // Adding and subtracting 1.5 · 2²³ rounds to the nearest integer without a call.
    const ROUNDER: f32 = 12_582_912.0;
    let x = if x < EXP_FLOOR { EXP_FLOOR } else { x };
    let x = if x > 88.0 { 88.0 } else { x };
    // y holds round(x log₂e) in its low mantissa bits (its ulp is 1); n is that integer as f32.
    let y = x * LOG2_E + ROUNDER;
    let n = y - ROUNDER;
    let r = (x - n * LN2_HIGH) - n * LN2_LOW;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    // 2ⁿ from y's bits with integer lanes only (no float-to-int conversion, which not every
    // target vectorises): n + 127 in the exponent field.
    let bits = y
        .to_bits()
        .wrapping_sub(ROUNDER.to_bits())
        .wrapping_add(127)
        << 23;
    p * f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocked product equals the plain triple loop (in f64) on shapes that exercise the
    /// row tail (m mod 4), the column tail (n mod 8), strides wider than the block and
    /// accumulation.
    #[test]
    fn blocked_product_equals_the_plain_one() {
        for (m, n, k) in [(1, 1, 1), (4, 8, 3), (7, 19, 13), (9, 24, 32), (13, 8, 65)] {
            let (lda, ldb, ldc) = (k + 3, n + 5, n + 2);
            let a: Vec<f32> = (0..m * lda)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
                .collect();
            let b: Vec<f32> = (0..k * ldb)
                .map(|i| ((i * 53 % 97) as f32 - 48.0) / 31.0)
                .collect();
            for accumulate in [false, true] {
                let start: Vec<f32> = (0..m * ldc).map(|i| (i % 7) as f32 - 3.0).collect();
                let mut c = start.clone();
                gemm(
                    m,
                    n,
                    k,
                    MatRef {
                        values: &a,
                        stride: lda,
                    },
                    MatRef {
                        values: &b,
                        stride: ldb,
                    },
                    &mut c,
                    ldc,
                    accumulate,
                );
                for i in 0..m {
                    for j in 0..ldc {
                        let got = f64::from(c[i * ldc + j]);
                        if j >= n {
                            assert_eq!(got, f64::from(start[i * ldc + j]), "outside C touched");
                            continue;
                        }
                        let base = if accumulate {
                            f64::from(start[i * ldc + j])
                        } else {
                            0.0
                        };
                        let exact = base
                            + (0..k)
                                .map(|p| f64::from(a[i * lda + p]) * f64::from(b[p * ldb + j]))
                                .sum::<f64>();
                        // k products of magnitude ≤ 2 · 1.6, f32 accumulation.
                        assert!(
                            (got - exact).abs() < 2e-6 * k as f64 * 3.2 + 1e-6,
                            "{m}×{n}×{k} ({i}, {j}): {got} vs {exact}"
                        );
                    }
                }
            }
        }
    }

    /// The fast exponential against f64's over its whole range: relative error ≤ 4·10⁻⁷ (about
    /// 3 ulp), and the floor below −87.
    #[test]
    fn fast_exponential_is_accurate() {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x <= 88.0 {
            let got = f64::from(exp_approx(x));
            let exact = f64::from(x).exp();
            worst = worst.max((got - exact).abs() / exact);
            x += 0.003_1;
        }
        assert!(worst < 4e-7, "worst relative error {worst}");
        assert!(exp_approx(-1000.0) < 2e-38);
        assert!(exp_approx(-1000.0) > 0.0);
        assert_eq!(exp_approx(0.0), 1.0);
    }
}
