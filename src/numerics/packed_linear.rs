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
        let width = PANEL.min(outputs - column);
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
