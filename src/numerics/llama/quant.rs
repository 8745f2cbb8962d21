//! ggml's tensor types the model uses (F32 norms, Q8_0 embeddings, Q4_1 linear weights; F16 for
//! completeness) and products computed from the quantised blocks without an f32 copy of the
//! weights: each panel of [`PANEL`] output rows is widened into a small buffer just before the
//! packed kernel multiplies every input row against it, so the model keeps its 98 MB of blocks
//! and the widening costs `1/rows` of the multiply-adds.
//!
//! Blocks (ggml's `ggml-common.h` and `dequantize_row_q4_1` / `dequantize_row_q8_0`):
//! - Q4_1, 32 weights in 20 bytes: f16 scale `d`, f16 minimum `m`, 16 bytes of nibbles; weight
//!   `j < 16` is `(q[j] & 15)·d + m`, weight `j ≥ 16` is `(q[j − 16] >> 4)·d + m`;
//! - Q8_0, 32 weights in 34 bytes: f16 scale `d`, 32 signed bytes; weight `j` is `q[j]·d`.
//!
//! Products in f32, rounded as llama.cpp's reference dequantisation rounds (`x·d`, then `+ m`).

use crate::numerics::packed_linear::{PANEL, panel_rows};
use crate::numerics::simd::{F4, transpose4};
use crate::numerics::stored_float::{f16_bits_to_f32, f16_is_special};

/// Weights per quantisation block.
pub const BLOCK: usize = 32;

/// A tensor's element type (ggml's `ggml_type` codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorType {
    F32,
    F16,
    Q4_1,
    Q8_0,
}

impl TensorType {
    /// The type of a ggml code, `None` for the types this reader does not compute with.
    pub fn from_code(code: u32) -> Option<TensorType> {
        match code {
            0 => Some(TensorType::F32),
            1 => Some(TensorType::F16),
            3 => Some(TensorType::Q4_1),
            8 => Some(TensorType::Q8_0),
            _ => None,
        }
    }

    /// Elements per block and bytes per block.
    pub fn block(self) -> (usize, usize) {
        match self {
            TensorType::F32 => (1, 4),
            TensorType::F16 => (1, 2),
            TensorType::Q4_1 => (BLOCK, 20),
            TensorType::Q8_0 => (BLOCK, 34),
        }
    }

    /// Bytes of `elements` values whose rows are `row` long, `None` when a row is not whole
    /// blocks or the size overflows.
    pub fn bytes_for(self, elements: u64, row: u64) -> Option<usize> {
        let (per_block, bytes) = self.block();
        let per_block = per_block as u64;
        if row == 0 || !row.is_multiple_of(per_block) {
            return None;
        }
        usize::try_from((elements / per_block).checked_mul(bytes as u64)?).ok()
    }
}

/// Widens one row's stored values into `out` (its length is the row's); false when a value is
/// not finite (a scale that is an infinity or a NaN, or such an F32/F16 value).
pub fn dequantize_row(kind: TensorType, bytes: &[u8], out: &mut [f32]) -> bool {
    let half = |b: &[u8]| u16::from_le_bytes([b[0], b[1]]);
    let mut finite = true;
    match kind {
        TensorType::F32 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                finite &= o.is_finite();
            }
        }
        TensorType::F16 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                finite &= !f16_is_special(half(b));
                *o = f16_bits_to_f32(half(b));
            }
        }
        TensorType::Q4_1 => {
            for (o, b) in out.chunks_exact_mut(BLOCK).zip(bytes.chunks_exact(20)) {
                finite &= !f16_is_special(half(b)) && !f16_is_special(half(&b[2..]));
                let (d, m) = (f16_bits_to_f32(half(b)), f16_bits_to_f32(half(&b[2..])));
                let (low, high) = o.split_at_mut(BLOCK / 2);
                for ((lo, hi), &q) in low.iter_mut().zip(high).zip(&b[4..20]) {
                    *lo = f32::from(q & 15) * d + m;
                    *hi = f32::from(q >> 4) * d + m;
                }
            }
        }
        TensorType::Q8_0 => {
            for (o, b) in out.chunks_exact_mut(BLOCK).zip(bytes.chunks_exact(34)) {
                finite &= !f16_is_special(half(b));
                let d = f16_bits_to_f32(half(b));
                for (w, &q) in o.iter_mut().zip(&b[2..34]) {
                    *w = f32::from(q as i8) * d;
                }
            }
        }
    }
    finite
}

/// A matrix of `rows × cols` (ggml's `[cols, rows]`) in its stored bytes, row after row.
#[derive(Clone, Copy, Debug)]
pub struct QuantMatrix<'a> {
    pub kind: TensorType,
    pub rows: usize,
    pub cols: usize,
    pub bytes: &'a [u8],
}

impl<'a> QuantMatrix<'a> {
    /// The view, `None` when the bytes are not `rows` whole rows of `cols`.
    pub fn new(kind: TensorType, rows: usize, cols: usize, bytes: &'a [u8]) -> Option<Self> {
        let size = kind.bytes_for((rows as u64).checked_mul(cols as u64)?, cols as u64)?;
        (size == bytes.len() && rows > 0).then_some(Self {
            kind,
            rows,
            cols,
            bytes,
        })
    }

    /// Bytes of one row.
    pub fn row_bytes(&self) -> usize {
        self.bytes.len() / self.rows
    }

    /// Row `r` widened into `out` (`cols` long); false when a value is not finite.
    pub fn row(&self, r: usize, out: &mut [f32]) -> bool {
        let n = self.row_bytes();
        dequantize_row(self.kind, &self.bytes[r * n..(r + 1) * n], out)
    }

    /// `y = x Wᵀ` for `n` rows of `x` (`n × cols`) into `y` (`n × rows`): each panel of
    /// [`PANEL`] rows of W widened, then multiplied by the packed kernel. Every output is the
    /// same sequence of multiply-adds whatever `n` > 1 (a row's result does not depend on the
    /// others in the call). One row (a decoding step) goes through [`QuantMatrix::apply_one`]
    /// instead: the same weights, summed in another order.
    pub fn apply(&self, x: &[f32], n: usize, y: &mut [f32], scratch: &mut Vec<f32>) {
        let cols = self.cols;
        assert_eq!(x.len(), n * cols, "input shape");
        assert_eq!(y.len(), n * self.rows, "output shape");
        if n == 1 {
            self.apply_one(x, y);
            return;
        }
        self.apply_panels(x, n, y, scratch);
    }

    /// [`QuantMatrix::apply`] through the widened panels whatever `n` (one row too): a row's
    /// result is the one it has among other rows.
    pub fn apply_panels(&self, x: &[f32], n: usize, y: &mut [f32], scratch: &mut Vec<f32>) {
        let cols = self.cols;
        assert_eq!(x.len(), n * cols, "input shape");
        assert_eq!(y.len(), n * self.rows, "output shape");
        scratch.resize(2 * PANEL * cols, 0.0);
        let (panel, rows) = scratch.split_at_mut(PANEL * cols);
        for p in 0..self.rows.div_ceil(PANEL) {
            let first = p * PANEL;
            let width = PANEL.min(self.rows - first);
            for (l, row) in rows.chunks_exact_mut(cols).enumerate() {
                if l < width {
                    self.row(first + l, row);
                } else {
                    row.fill(0.0);
                }
            }
            interleave(rows, cols, panel);
            panel_rows(panel, first, width, None, x, n, cols, y, self.rows);
        }
    }
}

impl QuantMatrix<'_> {
    /// `y = W x` for one input `x` (`cols`): each row's blocks widened in registers, a block at
    /// a time, and multiplied into eight running sums, with no copy of the row. A decoding step
    /// reads every weight once for one token, so widening panels for the packed kernel (built
    /// for many rows of `x`) cost more than the products: 75 ms a token natively, against the
    /// weights' 135 million multiply-adds. Each weight is rounded as [`dequantize_row`] rounds
    /// it (`q·d`, then `+ m`).
    pub fn apply_one(&self, x: &[f32], y: &mut [f32]) {
        let row_bytes = self.row_bytes();
        let (per_block, block_bytes) = self.kind.block();
        for (out, row) in y.iter_mut().zip(self.bytes.chunks_exact(row_bytes)) {
            let mut sums = [0.0f32; 8];
            match self.kind {
                TensorType::Q4_1 => {
                    for (b, x) in row.chunks_exact(block_bytes).zip(x.chunks_exact(per_block)) {
                        q4_1_block_dot(b, x, &mut sums);
                    }
                }
                TensorType::Q8_0 => {
                    for (b, x) in row.chunks_exact(block_bytes).zip(x.chunks_exact(per_block)) {
                        q8_0_block_dot(b, x, &mut sums);
                    }
                }
                TensorType::F32 | TensorType::F16 => {
                    let mut w = vec![0.0f32; self.cols];
                    dequantize_row(self.kind, row, &mut w);
                    for (i, (w, x)) in w.iter().zip(x).enumerate() {
                        sums[i % 8] += w * x;
                    }
                }
            }
            *out = ((sums[0] + sums[4]) + (sums[1] + sums[5]))
                + ((sums[2] + sums[6]) + (sums[3] + sums[7]));
        }
    }
}

/// `sums[l] += Σ_c w[8c + l] · x[8c + l]` in two four-lane registers.
#[inline(always)]
fn accumulate(w: &[f32; 32], x: &[f32; 32], sums: &mut [f32; 8]) {
    let (mut low, mut high) = (F4::load(&sums[..4]), F4::load(&sums[4..]));
    for c in 0..4 {
        low = low.mul_add(F4::load(&w[8 * c..]), F4::load(&x[8 * c..]));
        high = high.mul_add(F4::load(&w[8 * c + 4..]), F4::load(&x[8 * c + 4..]));
    }
    low.store(&mut sums[..4]);
    high.store(&mut sums[4..]);
}

/// One Q4_1 block (20 bytes) times 32 inputs, into eight lanes: fixed-size loops that LLVM
/// turns into vector code (the nibbles widened four at a time).
#[inline(always)]
fn q4_1_block_dot(b: &[u8], x: &[f32], sums: &mut [f32; 8]) {
    let half = |b: &[u8]| f16_bits_to_f32(u16::from_le_bytes([b[0], b[1]]));
    let (d, m) = (half(b), half(&b[2..]));
    let q: &[u8; 16] = b[4..20].try_into().unwrap_or(&[0; 16]);
    let x: &[f32; 32] = x.try_into().unwrap_or(&[0.0; 32]);
    let mut w = [0.0f32; 32];
    for j in 0..16 {
        w[j] = f32::from(q[j] & 15) * d + m;
        w[16 + j] = f32::from(q[j] >> 4) * d + m;
    }
    accumulate(&w, x, sums);
}

/// One Q8_0 block (34 bytes) times 32 inputs, into eight lanes.
#[inline(always)]
fn q8_0_block_dot(b: &[u8], x: &[f32], sums: &mut [f32; 8]) {
    let d = f16_bits_to_f32(u16::from_le_bytes([b[0], b[1]]));
    let q: &[u8; 32] = b[2..34].try_into().unwrap_or(&[0; 32]);
    let x: &[f32; 32] = x.try_into().unwrap_or(&[0.0; 32]);
    let mut w = [0.0f32; 32];
    for j in 0..32 {
        w[j] = f32::from(q[j] as i8) * d;
    }
    accumulate(&w, x, sums);
}

/// [`PANEL`] rows of `cols` values (row after row) into the packed kernel's panel layout,
/// `panel[k · PANEL + l] = rows[l][k]`: four-by-four blocks transposed in registers (`cols` is
/// whole quantisation blocks, so a multiple of four; a scalar copy took a tenth of the forward).
fn interleave(rows: &[f32], cols: usize, panel: &mut [f32]) {
    const _: () = assert!(PANEL.is_multiple_of(4) && BLOCK.is_multiple_of(4));
    for k in (0..cols).step_by(4) {
        for group in 0..PANEL / 4 {
            let block: [F4; 4] =
                std::array::from_fn(|i| F4::load(&rows[(4 * group + i) * cols + k..]));
            for (j, column) in transpose4(block).into_iter().enumerate() {
                let at = (k + j) * PANEL + 4 * group;
                column.store(&mut panel[at..at + 4]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    fn f16_bytes(x: f32) -> [u8; 2] {
        f16::from_f32(x).to_bits().to_le_bytes()
    }

    /// A Q4_1 block and a Q8_0 block widen to the values of their formulas, nibble order
    /// included (low nibbles are weights 0..16, high nibbles 16..32).
    #[test]
    fn blocks_widen_to_their_formulas() {
        let mut q41 = Vec::new();
        q41.extend(f16_bytes(0.5));
        q41.extend(f16_bytes(-1.25));
        q41.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
        let mut out = [0f32; 32];
        assert!(dequantize_row(TensorType::Q4_1, &q41, &mut out));
        for j in 0..16 {
            assert_eq!(out[j], j as f32 * 0.5 - 1.25);
            assert_eq!(out[16 + j], (15 - j) as f32 * 0.5 - 1.25);
        }
        let mut q80 = Vec::new();
        q80.extend(f16_bytes(0.25));
        q80.extend((0..32i32).map(|j| (j * 8 - 128) as i8 as u8));
        assert!(dequantize_row(TensorType::Q8_0, &q80, &mut out));
        for (j, w) in out.iter().enumerate() {
            assert_eq!(*w, (j as f32 * 8.0 - 128.0) * 0.25);
        }
        // An infinite scale is reported.
        q80[..2].copy_from_slice(&0x7c00u16.to_le_bytes());
        assert!(!dequantize_row(TensorType::Q8_0, &q80, &mut out));
    }

    /// The product from blocks equals the plain product of the widened matrix (in f64), with
    /// a partial last panel and a row count that is not a multiple of the kernel's block.
    #[test]
    fn product_from_blocks_equals_the_widened_product() {
        let (rows, cols, n) = (19, 64, 7);
        let mut bytes = Vec::new();
        for r in 0..rows * cols / BLOCK {
            bytes.extend(f16_bytes(0.01 * (r % 5 + 1) as f32));
            bytes.extend(f16_bytes(-0.07 * (r % 3) as f32));
            bytes.extend((0..16).map(|j| ((r * 7 + j * 13) % 256) as u8));
        }
        let m = QuantMatrix::new(TensorType::Q4_1, rows, cols, &bytes).expect("whole rows");
        assert!(QuantMatrix::new(TensorType::Q4_1, rows, cols, &bytes[1..]).is_none());
        let x: Vec<f32> = (0..n * cols)
            .map(|i| ((i * 31 % 17) as f32 - 8.0) / 8.0)
            .collect();
        let mut y = vec![f32::NAN; n * rows];
        m.apply(&x, n, &mut y, &mut Vec::new());
        // One row at a time (a decoding step's product) gives each row's result too.
        let mut one = vec![f32::NAN; rows];
        for r in 0..n {
            m.apply(&x[r * cols..(r + 1) * cols], 1, &mut one, &mut Vec::new());
            for (o, (a, b)) in one.iter().zip(&y[r * rows..(r + 1) * rows]).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                    "row {r} output {o}: {a} against {b}"
                );
            }
        }
        let mut w = vec![0f32; cols];
        for o in 0..rows {
            m.row(o, &mut w);
            for r in 0..n {
                let exact: f64 = (0..cols)
                    .map(|k| f64::from(x[r * cols + k]) * f64::from(w[k]))
                    .sum();
                assert!(
                    (f64::from(y[r * rows + o]) - exact).abs() < 1e-5,
                    "({r}, {o})"
                );
            }
        }
    }
}
