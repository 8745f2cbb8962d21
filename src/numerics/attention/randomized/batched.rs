//! Randomized attention's draw with its products in f32, for the heads of a real model (the
//! model swap: its random feature maps run in `long`'s f32 kernels the same way): the same
//! draws from the same stream as [`super::randomized_attention`] (softmax's rows, which pick
//! each sample's component, in f64; then `ω = q_i + k_j + ε`), the log-weights
//! `ω·k_l − |k_l|²/2` of every sample of every query as one product, and the weighted values
//! as another ([`gemm`]). The f64 draw computes each sample's weights and values one dot
//! product at a time: about five times the time for the same numbers to f32 rounding (tests:
//! within 2·10⁻⁵ of the f64 draw on the same stream).

use rand::Rng;

use super::{
    AttentionShape, RandomizedError, check_samples, draw_omega, half_squared_norms, softmax_rows,
};
use crate::numerics::attention::long::gemm::{MatRef, exp_in_place, gemm};
use crate::numerics::input::check_finite;

/// Randomized attention (seed 003) with `samples` draws of ω per query: `Ô` (`len × dv`),
/// `ô_i = (1/S) Σ_s Σ_j w_sj v_j / Σ_l w_sl`, `w_sj = exp(ω_s·k_j − |k_j|²/2)`, the draws taken
/// from `rng` exactly as [`super::randomized_attention`] takes them (query by query, sample by
/// sample: a uniform for the component, then d normals). `q`, `k` (`len × d`, scaled) are f64
/// as softmax's rows need them; `v` is the model's f32 values.
///
/// Errors as the f64 draw's: shapes, no samples, entries or intermediates not finite.
pub fn randomized_attention_f32<R: Rng + ?Sized>(
    q: &[f64],
    k: &[f64],
    v: &[f32],
    shape: AttentionShape,
    samples: usize,
    rng: &mut R,
) -> Result<Vec<f32>, RandomizedError> {
    shape.validate(q, k, None)?;
    let AttentionShape { len, d, dv } = shape;
    let widened: Vec<f64> = v.iter().map(|&x| f64::from(x)).collect();
    check_finite("v", &widened, len * dv)?;
    check_samples(samples)?;
    let p = softmax_rows(q, k, len, d)?;
    let rows = len * samples;
    let mut omega = vec![0.0f32; rows * d];
    let mut draws = omega.chunks_exact_mut(d);
    let mut sample = vec![0.0f64; d];
    for (qi, prow) in q.chunks_exact(d).zip(p.chunks_exact(len)) {
        for _ in 0..samples {
            draw_omega(qi, k, prow, rng, &mut sample);
            let Some(row) = draws.next() else {
                break;
            };
            for (w, x) in row.iter_mut().zip(&sample) {
                *w = *x as f32;
            }
        }
    }
    let mut keys_t = vec![0.0f32; d * len];
    for (j, kj) in k.chunks_exact(d).enumerate() {
        for (c, &x) in kj.iter().enumerate() {
            keys_t[c * len + j] = x as f32;
        }
    }
    let half_sq: Vec<f32> = half_squared_norms(k, d)?
        .iter()
        .map(|&x| x as f32)
        .collect();
    let mut weights = vec![0.0f32; rows * len];
    gemm(
        rows,
        len,
        d,
        MatRef {
            values: &omega,
            stride: d,
        },
        MatRef {
            values: &keys_t,
            stride: len,
        },
        &mut weights,
        len,
        false,
    );
    let scale = 1.0 / samples as f32;
    for row in weights.chunks_exact_mut(len) {
        for (w, h) in row.iter_mut().zip(&half_sq) {
            *w -= h;
        }
        if !row.iter().all(|w| w.is_finite()) {
            return Err(RandomizedError::Overflow {
                what: "a log-weight ω·k − |k|²/2",
            });
        }
        let max = row
            .iter()
            .fold(f32::NEG_INFINITY, |m, &w| if w > m { w } else { m });
        row.iter_mut().for_each(|w| *w -= max);
        exp_in_place(row);
        // total ≥ 1 (the maximum's weight is exp(0)).
        let factor = scale / row.iter().sum::<f32>();
        row.iter_mut().for_each(|w| *w *= factor);
    }
    let mut per_sample = vec![0.0f32; rows * dv];
    gemm(
        rows,
        dv,
        len,
        MatRef {
            values: &weights,
            stride: len,
        },
        MatRef {
            values: v,
            stride: dv,
        },
        &mut per_sample,
        dv,
        false,
    );
    let mut out = vec![0.0f32; len * dv];
    for (o, block) in out
        .chunks_exact_mut(dv)
        .zip(per_sample.chunks_exact(samples * dv))
    {
        for sample in block.chunks_exact(dv) {
            for (x, y) in o.iter_mut().zip(sample) {
                *x += y;
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
