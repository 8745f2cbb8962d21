//! The encoder's dense layers, `y = x Wᵀ + b`, with the weights packed once at load time into
//! panels of [`PANEL`] output columns, so that the product runs front to back through memory and
//! LLVM turns the inner loop into `simd128` (or SSE) code: [`ROWS`] rows of `x` × [`PANEL`]
//! columns of accumulators on fixed-size arrays, the layout of `numerics::kernel`.
//!
//! Why the project's own kernel and not a tensor crate: the forward is eight matrix products and
//! one attention per layer, and this file is the whole of what they need; a tensor crate that
//! builds for wasm32 (candle) would bring hundreds of kilobytes and a five-minute build for the
//! same loops, and would keep the per-head queries and keys, which the lab needs, private.

use crate::numerics::simd::F4;
use crate::numerics::stored_float::widen;
pub use crate::numerics::stored_float::{PackError, StoredFloat};

/// Output columns per panel: two `f32x4` vectors.
pub const PANEL: usize = 8;
/// Rows of `x` multiplied against one panel at a time (register blocking).
pub const ROWS: usize = 4;

/// A dense layer `y = x Wᵀ + b` with `W` (`outputs × inputs`, PyTorch's layout) packed in
/// panels: `panels[(p · inputs + k) · PANEL + l] = W[p · PANEL + l][k]`, zero past `outputs`.
#[derive(Clone, Debug, PartialEq)]
pub struct PackedLinear {
    inputs: usize,
    outputs: usize,
    panels: Vec<f32>,
    bias: Vec<f32>,
}

impl PackedLinear {
    /// Packs `weight` (row-major `outputs × inputs`) and `bias` (`outputs`). The caller checks
    /// the lengths (the weights' reader does, from the file's shapes); a mismatch here is a bug.
    pub fn new(weight: &[f32], bias: &[f32], inputs: usize, outputs: usize) -> Self {
        assert_eq!(weight.len(), inputs * outputs, "weight shape");
        assert_eq!(bias.len(), outputs, "bias shape");
        let panel_count = outputs.div_ceil(PANEL);
        let mut panels = vec![0.0f32; panel_count * inputs * PANEL];
        for (o, row) in weight.chunks_exact(inputs).enumerate() {
            let (p, l) = (o / PANEL, o % PANEL);
            for (k, &w) in row.iter().enumerate() {
                panels[(p * inputs + k) * PANEL + l] = w;
            }
        }
        Self {
            inputs,
            outputs,
            panels,
            bias: bias.to_vec(),
        }
    }

    /// Packs a weight stored as the model file's bytes straight into the panels, the same
    /// panels bit for bit as [`new`](Self::new) on the widened matrix, without an f32 copy of
    /// it: `blocks` are consecutive row blocks of the `outputs × inputs` matrix (a layer's query,
    /// key and value weights are three), each panel's eight rows are widened into a small
    /// scratch (a loop that vectorises) and interleaved from there. Refuses blocks that are not
    /// `outputs` whole rows, a bias that is not `outputs` long, and a non-finite weight.
    pub fn from_stored(
        blocks: &[&[u8]],
        format: StoredFloat,
        bias: Vec<f32>,
        inputs: usize,
        outputs: usize,
    ) -> Result<Self, PackError> {
        let found_bytes: usize = blocks.iter().map(|b| b.len()).sum();
        let shape_error = PackError::Shape {
            inputs,
            outputs,
            found_bytes,
        };
        let row_bytes = match inputs.checked_mul(format.size()) {
            Some(row_bytes) if row_bytes > 0 => row_bytes,
            _ => return Err(shape_error),
        };
        if bias.len() != outputs
            || outputs.checked_mul(row_bytes) != Some(found_bytes)
            || blocks.iter().any(|b| b.len() % row_bytes != 0)
        {
            return Err(shape_error);
        }
        let rows: Vec<&[u8]> = blocks
            .iter()
            .flat_map(|b| b.chunks_exact(row_bytes))
            .collect();
        // At most `found_bytes` · 4 floats: the bytes are in memory, so this does not overflow.
        let mut panels = vec![0.0f32; outputs.div_ceil(PANEL) * inputs * PANEL];
        let mut scratch = vec![0.0f32; PANEL * inputs];
        let mut finite = true;
        for (panel, panel_rows) in panels
            .chunks_exact_mut(inputs * PANEL)
            .zip(rows.chunks(PANEL))
        {
            for (row, out) in panel_rows.iter().zip(scratch.chunks_exact_mut(inputs)) {
                finite &= widen(row, format, out);
            }
            scratch[panel_rows.len() * inputs..].fill(0.0);
            for (k, slot) in panel.chunks_exact_mut(PANEL).enumerate() {
                for (l, value) in slot.iter_mut().enumerate() {
                    *value = scratch[l * inputs + k];
                }
            }
        }
        if !finite {
            return Err(PackError::NonFinite);
        }
        Ok(Self {
            inputs,
            outputs,
            panels,
            bias,
        })
    }

    /// The packed weights, `panels[(p · inputs + k) · PANEL + l] = W[p · PANEL + l][k]` (the
    /// tests compare packings bit for bit).
    pub fn panels(&self) -> &[f32] {
        &self.panels
    }

    /// The bias.
    pub fn bias(&self) -> &[f32] {
        &self.bias
    }

    pub fn inputs(&self) -> usize {
        self.inputs
    }

    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// Multiply-adds of one application to `rows` rows.
    pub fn multiply_adds(&self, rows: usize) -> u64 {
        (rows * self.inputs * self.outputs) as u64
    }

    /// `y = x Wᵀ + b` for `rows` rows: `x` is `rows × inputs`, `y` is `rows × outputs`.
    pub fn apply(&self, x: &[f32], rows: usize, y: &mut [f32]) {
        panel_product(
            PanelMatrix {
                inputs: self.inputs,
                outputs: self.outputs,
                panels: &self.panels,
            },
            Some(&self.bias),
            x,
            rows,
            y,
        );
    }
}

/// A matrix packed as [`PackedLinear`] packs `Wᵀ`: `panels[(p · inputs + k) · PANEL + l]` is
/// entry `(k, p · PANEL + l)` of the `inputs × outputs` right-hand factor, zero past `outputs`.
/// Other packers (the model's attention packs a head's keys and values so) multiply with
/// [`panel_product`] too.
#[derive(Clone, Copy, Debug)]
pub struct PanelMatrix<'a> {
    pub inputs: usize,
    pub outputs: usize,
    pub panels: &'a [f32],
}

/// `y = x · M (+ bias)` for `rows` rows of `x` (`rows × m.inputs`, contiguous); `y` is
/// `rows × m.outputs`. Each output is the same sequence of multiply-adds (bias first, then
/// `k = 0, 1, …` in order) whatever the row's block: a row's result does not depend on the
/// other rows of the call, which lets the forward split a text by rows bit for bit. (Taking the
/// rows in cache-sized chunks, every panel streaming past each chunk, was tried: no faster in
/// V8 at L = 512, and slower at 128.)
pub fn panel_product(m: PanelMatrix, bias: Option<&[f32]>, x: &[f32], rows: usize, y: &mut [f32]) {
    let (inputs, outputs) = (m.inputs, m.outputs);
    assert_eq!(x.len(), rows * inputs, "input shape");
    assert_eq!(y.len(), rows * outputs, "output shape");
    assert_eq!(
        m.panels.len(),
        outputs.div_ceil(PANEL) * inputs * PANEL,
        "panels"
    );
    assert!(bias.is_none_or(|b| b.len() == outputs), "bias shape");
    let stride = inputs * PANEL;
    if stride == 0 {
        // No inputs: every row is the bias.
        for row in y.chunks_exact_mut(outputs.max(1)) {
            row.copy_from_slice(
                bias.unwrap_or(&[])
                    .get(..row.len())
                    .unwrap_or(&[0.0; PANEL][..0]),
            );
        }
        return;
    }
    for (p, panel) in m.panels.chunks_exact(stride).enumerate() {
        let column = p * PANEL;
        panel_rows(
            panel,
            column,
            PANEL.min(outputs - column),
            bias,
            x,
            rows,
            inputs,
            y,
            outputs,
        );
    }
}

/// One panel (`inputs × PANEL`, interleaved as [`PackedLinear`] packs it) against `rows` rows
/// of `x`: columns `column .. column + width` of `y` (`rows × outputs`), the bias's entries
/// there first when given. [`panel_product`] runs every panel through it; the language model's
/// quantised matrices widen one panel at a time and call it directly.
#[allow(clippy::too_many_arguments)]
pub fn panel_rows(
    panel: &[f32],
    column: usize,
    width: usize,
    bias: Option<&[f32]>,
    x: &[f32],
    rows: usize,
    inputs: usize,
    y: &mut [f32],
    outputs: usize,
) {
    assert!(width <= PANEL && column + width <= outputs, "panel columns");
    assert_eq!(panel.len(), inputs * PANEL, "panel shape");
    let mut start = [0.0f32; PANEL];
    if let Some(bias) = bias {
        start[..width].copy_from_slice(&bias[column..column + width]);
    }
    let mut out = PanelOut {
        y,
        outputs,
        column,
        width,
        bias: start,
    };
    let mut row = 0;
    while row + ROWS <= rows {
        block::<ROWS>(x, row, inputs, panel, &mut out);
        row += ROWS;
    }
    while row < rows {
        block::<1>(x, row, inputs, panel, &mut out);
        row += 1;
    }
}

/// Where one panel's results go.
struct PanelOut<'a> {
    y: &'a mut [f32],
    outputs: usize,
    column: usize,
    width: usize,
    bias: [f32; PANEL],
}

/// Rows `row .. row + R` of `x` against one panel: `R × PANEL` accumulators, two 4-lane
/// vectors per row ([`F4`]: LLVM left the plain-array form of this loop scalar, with spills).
#[inline(always)]
fn block<const R: usize>(x: &[f32], row: usize, inputs: usize, panel: &[f32], out: &mut PanelOut) {
    let xs: [&[f32]; R] = std::array::from_fn(|r| &x[(row + r) * inputs..(row + r + 1) * inputs]);
    let bias = [F4::load(&out.bias[..4]), F4::load(&out.bias[4..])];
    let mut acc = [bias; R];
    for (k, w) in panel.chunks_exact(PANEL).enumerate() {
        let (w0, w1) = (F4::load(&w[..4]), F4::load(&w[4..]));
        for r in 0..R {
            let xv = F4::splat(xs[r][k]);
            acc[r][0] = acc[r][0].mul_add(xv, w0);
            acc[r][1] = acc[r][1].mul_add(xv, w1);
        }
    }
    for (r, [a0, a1]) in acc.iter().enumerate() {
        let mut values = [0.0f32; PANEL];
        a0.store(&mut values[..4]);
        a1.store(&mut values[4..]);
        let start = (row + r) * out.outputs + out.column;
        out.y[start..start + out.width].copy_from_slice(&values[..out.width]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    /// Stored bytes packed directly give the panels of [`PackedLinear::new`] on the widened
    /// matrix bit for bit, for f16 (negative zeros and subnormals among the values) and f32,
    /// with the rows split into blocks (as a layer's query, key and value are) or not, and
    /// with a partial last panel.
    #[test]
    fn packing_stored_bytes_equals_packing_the_widened_matrix() {
        for (inputs, outputs, parts) in [(3, 5, 1), (13, 19, 1), (32, 24, 3), (8, 8, 2)] {
            let bits: Vec<u16> = (0..inputs * outputs)
                .map(|i| match i % 7 {
                    0 => 0x8000,                    // −0
                    1 => 0x0001 + (i as u16 % 900), // subnormals
                    _ => ((i * 2654435761) % 0x7bff) as u16 | ((i as u16 & 1) << 15),
                })
                .collect();
            let widened: Vec<f32> = bits.iter().map(|&b| f16::from_bits(b).to_f32()).collect();
            let bias: Vec<f32> = (0..outputs).map(|o| o as f32 - 2.5).collect();
            let expected = PackedLinear::new(&widened, &bias, inputs, outputs);
            let as_bits = |p: &PackedLinear| -> Vec<u32> {
                p.panels()
                    .iter()
                    .chain(p.bias())
                    .map(|v| v.to_bits())
                    .collect()
            };
            let f16_bytes: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
            let f32_bytes: Vec<u8> = widened.iter().flat_map(|v| v.to_le_bytes()).collect();
            for (bytes, format) in [
                (&f16_bytes, StoredFloat::F16),
                (&f32_bytes, StoredFloat::F32),
            ] {
                let block = bytes.len() / parts;
                let blocks: Vec<&[u8]> = bytes.chunks(block).collect();
                let packed =
                    PackedLinear::from_stored(&blocks, format, bias.clone(), inputs, outputs)
                        .expect("a valid matrix");
                assert_eq!(
                    as_bits(&packed),
                    as_bits(&expected),
                    "{inputs}×{outputs} {format:?}"
                );
                assert_eq!(packed, expected);
            }
        }
    }

    /// Wrong lengths, a ragged block, no inputs, a short bias and a non-finite weight are
    /// errors, never a panic.
    #[test]
    fn packing_refuses_what_is_not_a_finite_matrix_of_its_shape() {
        let bytes = vec![0u8; 2 * 4 * 3];
        let ok = PackedLinear::from_stored(&[&bytes], StoredFloat::F16, vec![0.0; 3], 4, 3);
        assert!(ok.is_ok());
        let shape = |r: Result<PackedLinear, PackError>| matches!(r, Err(PackError::Shape { .. }));
        let f16 = StoredFloat::F16;
        assert!(shape(PackedLinear::from_stored(
            &[&bytes[1..]],
            f16,
            vec![0.0; 3],
            4,
            3
        )));
        assert!(shape(PackedLinear::from_stored(
            &[&bytes[..3], &bytes[3..]],
            f16,
            vec![0.0; 3],
            4,
            3
        )));
        assert!(shape(PackedLinear::from_stored(
            &[&bytes],
            f16,
            vec![0.0; 2],
            4,
            3
        )));
        assert!(shape(PackedLinear::from_stored(
            &[&bytes],
            f16,
            vec![0.0; 3],
            0,
            3
        )));
        assert!(shape(PackedLinear::from_stored(
            &[&bytes],
            f16,
            vec![],
            4,
            0
        )));
        assert!(shape(PackedLinear::from_stored(
            &[&bytes],
            StoredFloat::F32,
            vec![0.0; 3],
            4,
            3
        )));
        assert!(shape(PackedLinear::from_stored(
            &[&bytes],
            f16,
            vec![0.0; 3],
            usize::MAX,
            3
        )));
        for special in [0x7c00u16, 0xfc00, 0x7e00] {
            let mut bad = bytes.clone();
            bad[10..12].copy_from_slice(&special.to_le_bytes());
            assert_eq!(
                PackedLinear::from_stored(&[&bad], f16, vec![0.0; 3], 4, 3),
                Err(PackError::NonFinite)
            );
        }
        let mut bad = vec![0u8; 4 * 4 * 3];
        bad[4..8].copy_from_slice(&f32::NAN.to_le_bytes());
        assert_eq!(
            PackedLinear::from_stored(&[&bad], StoredFloat::F32, vec![0.0; 3], 4, 3),
            Err(PackError::NonFinite)
        );
    }

    /// The packed product equals the plain triple loop (in f64) on shapes that exercise the
    /// partial panel (outputs not a multiple of 8) and the single-row tail (rows not a multiple
    /// of 4).
    #[test]
    fn packed_product_equals_the_plain_one() {
        for (rows, inputs, outputs) in [(1, 3, 5), (7, 13, 19), (9, 32, 24), (4, 8, 8)] {
            let weight: Vec<f32> = (0..inputs * outputs)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
                .collect();
            let bias: Vec<f32> = (0..outputs).map(|o| o as f32 * 0.1 - 0.3).collect();
            let x: Vec<f32> = (0..rows * inputs)
                .map(|i| ((i * 53 % 97) as f32 - 48.0) / 31.0)
                .collect();
            let layer = PackedLinear::new(&weight, &bias, inputs, outputs);
            let mut y = vec![f32::NAN; rows * outputs];
            layer.apply(&x, rows, &mut y);
            for r in 0..rows {
                for o in 0..outputs {
                    let exact: f64 = f64::from(bias[o])
                        + (0..inputs)
                            .map(|k| {
                                f64::from(x[r * inputs + k]) * f64::from(weight[o * inputs + k])
                            })
                            .sum::<f64>();
                    let got = f64::from(y[r * outputs + o]);
                    // f32 accumulation of `inputs` products of magnitude ≤ 2·1.6.
                    assert!(
                        (got - exact).abs() < 1e-5 * inputs as f64,
                        "{rows}×{inputs}×{outputs} at ({r}, {o}): {got} vs {exact}"
                    );
                }
            }
        }
    }
}
