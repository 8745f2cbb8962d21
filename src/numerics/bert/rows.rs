//! The forward's row-wise steps, shared by the whole forward and its parts: the embeddings of
//! some rows, the layer norm, the exact GELU and the residual sum. Each row's result depends on
//! that row alone, so a text split by rows gives the same numbers bit for bit.

use half::f16;

use super::weights::{BertWeights, EncoderLayer, LayerNorm};

/// Rows `first .. first + out.len() / hidden` of the embeddings (word + position + token type
/// 0) before their layer norm; `ids` are those rows' tokens (checked against the vocabulary by
/// the caller).
pub(crate) fn embed(weights: &BertWeights, ids: &[u32], first: usize, out: &mut [f32]) {
    let h = weights.config.hidden_size;
    for (i, (&id, row)) in ids.iter().zip(out.chunks_exact_mut(h)).enumerate() {
        let word = &weights.word_embeddings[id as usize * h..(id as usize + 1) * h];
        let position = &weights.position_embeddings[(first + i) * h..(first + i + 1) * h];
        for (((v, w), p), t) in row
            .iter_mut()
            .zip(word)
            .zip(position)
            .zip(&weights.token_type_embedding)
        {
            *v = f16::to_f32(*w) + p + t;
        }
    }
}

/// The rest of a layer after its attention, row by row: `x ← LN(x + context Wₒ)`, then
/// `x ← LN(x + GELU(x W₁) W₂)`, for `rows` rows (`projected` and `inner` are scratch of
/// `rows × hidden` and `rows × intermediate`). The whole forward, its parts and a batch of
/// texts all end a layer here.
pub(crate) fn finish_rows(
    layer: &EncoderLayer,
    eps: f32,
    rows: usize,
    context: &[f32],
    x: &mut [f32],
    (projected, inner): (&mut [f32], &mut [f32]),
) {
    layer.attention_output.apply(context, rows, projected);
    add_in_place(x, projected);
    layer_norm(x, &layer.attention_norm, eps);
    layer.intermediate.apply(x, rows, inner);
    gelu_in_place(inner);
    layer.output.apply(inner, rows, projected);
    add_in_place(x, projected);
    layer_norm(x, &layer.output_norm, eps);
}

/// Lanes of the layer norm's sums: independent accumulators, so that the sums vectorise (an
/// ordered sum does not).
const LANES: usize = 8;

/// `Σ f(v)` over `row` in f64, [`LANES`] accumulators then the tail.
#[inline(always)]
fn lane_sum(row: &[f32], f: impl Fn(f64) -> f64) -> f64 {
    let mut lanes = [0.0f64; LANES];
    let chunks = row.chunks_exact(LANES);
    let tail: f64 = chunks.remainder().iter().map(|&v| f(f64::from(v))).sum();
    for chunk in chunks {
        for (s, &v) in lanes.iter_mut().zip(chunk) {
            *s += f(f64::from(v));
        }
    }
    lanes.iter().sum::<f64>() + tail
}

/// `x ← LayerNorm(x)` row by row: mean and population variance (`eps` inside the root) in f64
/// (two passes: the mean, then the squared deviations), each sum in [`LANES`] accumulators.
pub(crate) fn layer_norm(x: &mut [f32], norm: &LayerNorm, eps: f32) {
    let h = norm.weight.len();
    for row in x.chunks_exact_mut(h) {
        let mean = lane_sum(row, |v| v) / h as f64;
        let var = lane_sum(row, |v| (v - mean) * (v - mean)) / h as f64;
        let inv = 1.0 / (var + f64::from(eps)).sqrt();
        for ((v, w), b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
            *v = ((f64::from(*v) - mean) * inv) as f32 * w + b;
        }
    }
}

/// `x ← x + y`.
pub(crate) fn add_in_place(x: &mut [f32], y: &[f32]) {
    x.iter_mut().zip(y).for_each(|(a, b)| *a += b);
}

/// Beyond ±this, erf is ±1 in f32 (erf(3.92) = 1 − 2.98·10⁻⁸, below half an ulp of 1).
const ERF_CLAMP: f32 = 3.925_724;

/// erf(x) to about 1.2·10⁻⁷ (tested against f64's over the whole line): `x · P(x²) / Q(x²)`,
/// the rational approximation of Eigen's and XLA's `erf` for f32 (9.3·10⁻⁸ from erf in exact
/// arithmetic), evaluated in f64 (in f32 its rounding alone reaches 4·10⁻⁷), the input
/// clamped to ±[`ERF_CLAMP`]. Branch-free, so the loop over a slice vectorises (`libm::erff`
/// is a call with branches per value).
#[inline(always)]
pub(crate) fn erf_approx(x: f32) -> f32 {
    const A1: f64 = -1.609_603_3e-2;
    const A3: f64 = -2.954_6e-3;
    const A5: f64 = -7.349_906_3e-4;
    const A7: f64 = -5.692_506_4e-5;
    const A9: f64 = -2.101_024e-6;
    const A11: f64 = 2.770_681_4e-8;
    const A13: f64 = -2.726_142_3e-10;
    const B0: f64 = -1.426_474e-2;
    const B2: f64 = -7.373_329_2e-3;
    const B4: f64 = -1.682_827e-3;
    const B6: f64 = -2.133_740_6e-4;
    const B8: f64 = -1.456_607_2e-5;
    let x = if x < -ERF_CLAMP { -ERF_CLAMP } else { x };
    let x = f64::from(if x > ERF_CLAMP { ERF_CLAMP } else { x });
    let x2 = x * x;
    let p = x2 * (x2 * (x2 * (x2 * (x2 * (x2 * A13 + A11) + A9) + A7) + A5) + A3) + A1;
    let q = x2 * (x2 * (x2 * (x2 * B8 + B6) + B4) + B2) + B0;
    (x * p / q) as f32
}

/// `x ← GELU(x) = x (1 + erf(x/√2)) / 2`, the exact (erf) GELU of the model.
pub(crate) fn gelu_in_place(values: &mut [f32]) {
    for v in values.iter_mut() {
        *v = 0.5 * *v * (1.0 + erf_approx(*v * std::f32::consts::FRAC_1_SQRT_2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf against f64's over [−6, 6] (and the tails): absolute error at most 1.5·10⁻⁷ (the
    /// approximation's 9.3·10⁻⁸ and the rounding to f32, 3·10⁻⁸ near 1); odd; erf(0) = 0.
    #[test]
    fn erf_is_accurate() {
        let mut worst = 0.0f64;
        let mut x = -6.0f32;
        while x <= 6.0 {
            let got = f64::from(erf_approx(x));
            let exact = libm::erf(f64::from(x));
            worst = worst.max((got - exact).abs());
            assert_eq!(erf_approx(-x), -erf_approx(x), "odd at {x}");
            x += 0.000_37;
        }
        assert!(worst < 1.5e-7, "worst absolute error {worst:e}");
        assert_eq!(erf_approx(0.0), 0.0);
        assert!((erf_approx(100.0) - 1.0).abs() <= 1.5e-7);
        assert_eq!(erf_approx(-1e30), -erf_approx(100.0));
    }

    /// GELU against the f64 formula: |Δ| ≤ |x|/2 · (1.5·10⁻⁷ + 2 ulp(1)) + ulp(GELU(x)): the
    /// erf error and the rounding of `1 + erf` scaled by x/2, and the final rounding.
    #[test]
    fn gelu_matches_the_f64_formula() {
        let xs: Vec<f32> = (-40_000..40_000).map(|i| i as f32 * 2.5e-4).collect();
        let mut got = xs.clone();
        gelu_in_place(&mut got);
        for (&x, &g) in xs.iter().zip(&got) {
            let x64 = f64::from(x);
            let exact = 0.5 * x64 * (1.0 + libm::erf(x64 / std::f64::consts::SQRT_2));
            let bound = x64.abs() / 2.0 * (1.5e-7 + 2.4e-7) + exact.abs() * 1.2e-7 + 1e-30;
            assert!(
                (f64::from(g) - exact).abs() <= bound,
                "GELU({x}) = {g}, exact {exact}"
            );
        }
    }

    /// The layer norm against a plain f64 one: the lanes change only the order of f64 sums,
    /// so the outputs agree to within one f32 rounding (relative 2⁻²³ of the value, plus the
    /// bias's scale).
    #[test]
    fn layer_norm_matches_the_plain_f64_one() {
        for h in [3usize, 8, 13, 384] {
            let norm = LayerNorm {
                weight: (0..h).map(|i| 0.5 + (i % 7) as f32 * 0.1).collect(),
                bias: (0..h).map(|i| (i % 5) as f32 * 0.01 - 0.02).collect(),
            };
            let x: Vec<f32> = (0..3 * h)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0 + 3.0)
                .collect();
            let mut got = x.clone();
            layer_norm(&mut got, &norm, 1e-12);
            for (row, out) in x.chunks_exact(h).zip(got.chunks_exact(h)) {
                let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / h as f64;
                let var = row
                    .iter()
                    .map(|&v| (f64::from(v) - mean).powi(2))
                    .sum::<f64>()
                    / h as f64;
                for (k, (&v, &o)) in row.iter().zip(out).enumerate() {
                    let z = (f64::from(v) - mean) / (var + 1e-12).sqrt();
                    let exact = z * f64::from(norm.weight[k]) + f64::from(norm.bias[k]);
                    let bound = 3.0 * f64::from(f32::EPSILON) * (exact.abs() + 0.1);
                    assert!(
                        (f64::from(o) - exact).abs() <= bound,
                        "h {h}, column {k}: {o} vs {exact}"
                    );
                }
            }
        }
    }
}
