//! The Hedgehog maps' matrix arithmetic: dot products and row-major products in
//! f64 ([`multiply`]), or in f32 through the long-sequence kernels' `gemm` ([`product`] at
//! [`Products::Single`], what the training uses).

use crate::numerics::attention::long::gemm::{MatRef, gemm};

/// `Σ a_t b_t` with four running sums, so the compiler can vectorise it.
pub(super) fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut sums = [0.0; 4];
    let (a4, b4) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = a4
        .remainder()
        .iter()
        .zip(b4.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a4.zip(b4) {
        for t in 0..4 {
            sums[t] += x[t] * y[t];
        }
    }
    (sums[0] + sums[1]) + (sums[2] + sums[3]) + tail
}

/// `y += a x`.
pub(super) fn axpy(y: &mut [f64], a: f64, x: &[f64]) {
    y.iter_mut().zip(x).for_each(|(y, x)| *y += a * x);
}

/// The precision of an evaluation's matrix products (see `training.rs`'s documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Products {
    Double,
    Single,
}

/// f32 copies of a product's operands and result ([`Products::Single`]).
#[derive(Default)]
pub(crate) struct SingleScratch {
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
}

/// `c = a b` (a `rows × inner`, b `inner × width`, c `rows × width`, row-major) at `precision`.
pub(crate) fn product(
    precision: Products,
    scratch: &mut SingleScratch,
    a: &[f64],
    b: &[f64],
    c: &mut [f64],
    inner: usize,
    width: usize,
) {
    if precision == Products::Double {
        return multiply(a, b, c, inner, width);
    }
    let narrow = |from: &[f64], to: &mut Vec<f32>| {
        to.clear();
        to.extend(from.iter().map(|&x| x as f32));
    };
    narrow(a, &mut scratch.a);
    narrow(b, &mut scratch.b);
    scratch.c.clear();
    scratch.c.resize(c.len(), 0.0);
    let rows = c.len() / width;
    let (a, b) = (
        MatRef {
            values: &scratch.a,
            stride: inner,
        },
        MatRef {
            values: &scratch.b,
            stride: width,
        },
    );
    gemm(rows, width, inner, a, b, &mut scratch.c, width, false);
    c.iter_mut()
        .zip(&scratch.c)
        .for_each(|(c, x)| *c = f64::from(*x));
}

/// Columns of `c` that [`multiply_rows`] accumulates together in registers.
const BLOCK: usize = 8;

/// `c = a b`: a rows × inner, b inner × width, c rows × width, all row-major; two rows of c at
/// a time.
pub(super) fn multiply(a: &[f64], b: &[f64], c: &mut [f64], inner: usize, width: usize) {
    let a_pairs = a.chunks_exact(2 * inner);
    let a_last = a_pairs.remainder();
    let mut c_pairs = c.chunks_exact_mut(2 * width);
    for (a_pair, c_pair) in a_pairs.zip(&mut c_pairs) {
        let ((a0, a1), (c0, c1)) = (a_pair.split_at(inner), c_pair.split_at_mut(width));
        multiply_rows([a0, a1], b, [c0, c1], width);
    }
    if !a_last.is_empty() {
        multiply_rows([a_last], b, [c_pairs.into_remainder()], width);
    }
}

/// R rows of `c = a b`. Each block of [`BLOCK`] columns of the R rows is summed over b's rows
/// (read contiguously) in R·BLOCK running sums, independent of each other, so the additions
/// overlap instead of waiting on one another, and c is written once.
fn multiply_rows<const R: usize>(a: [&[f64]; R], b: &[f64], mut c: [&mut [f64]; R], width: usize) {
    let blocked = width - width % BLOCK;
    for start in (0..blocked).step_by(BLOCK) {
        let mut sums = [[0.0; BLOCK]; R];
        for (t, b_row) in b.chunks_exact(width).enumerate() {
            let b_block = &b_row[start..start + BLOCK];
            for (sums, a_row) in sums.iter_mut().zip(&a) {
                let x = a_row[t];
                sums.iter_mut().zip(b_block).for_each(|(s, y)| *s += x * y);
            }
        }
        for (c_row, sums) in c.iter_mut().zip(&sums) {
            c_row[start..start + BLOCK].copy_from_slice(sums);
        }
    }
    for col in blocked..width {
        for (c_row, a_row) in c.iter_mut().zip(&a) {
            let column = b.chunks_exact(width).map(|b_row| b_row[col]);
            c_row[col] = a_row.iter().zip(column).map(|(x, y)| x * y).sum();
        }
    }
}
