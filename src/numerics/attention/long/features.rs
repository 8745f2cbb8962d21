//! Feature maps for long sequences: a block of tokens at a time, in f32, the projections by
//! [`super::gemm`]. Each token's features come with the log of a factor taken out of them
//! (`φ(u) = e^{shift(u)} · features(u)`, the largest feature is 1), so that no feature
//! overflows f32 whatever the norms: the linear kernels put the factors back where they
//! matter (keys) and drop them where they cancel (a query's own numerator and denominator).

use crate::numerics::attention::deterministic::PolynomialKernel;
use crate::numerics::estimators::{BatchedForm, Projections, Side};

use super::flash::lane_max;
use super::gemm::{MatRef, exp_approx, gemm};

/// Why a map has no long-sequence form.
pub const NO_BATCHED_FORM: &str = "its feature map has no batched f32 form (complex A, dense P)";

/// A feature map of D features per token, in f32.
#[derive(Clone, Debug, PartialEq)]
pub enum FeatureMap32 {
    /// `exp(c_k − |w|²/2 ± s ω_k·w)`, w = a∘x or y/a ([`BatchedForm::Exponential`]).
    Exponential {
        d: usize,
        m: usize,
        hyperbolic: bool,
        /// `s · a_i · ω_k,i` (queries) and `s · ω_k,i / a_i` (keys), d × m row-major.
        query_projection: Vec<f32>,
        key_projection: Vec<f32>,
        query_scale: Vec<f32>,
        key_scale: Vec<f32>,
        offsets: Vec<f32>,
    },
    /// RFA: `m^{-1/2} e^{|u|²/2} [sin ω·u, cos ω·u]`.
    Trigonometric {
        d: usize,
        m: usize,
        /// ωᵀ, d × m row-major.
        projection: Vec<f32>,
    },
    /// The linear transformer's `elu(u) + 1`, D = d.
    EluPlusOne { d: usize },
    /// LLN's `φ(q) = exp(α q)`, `ψ(k) = exp(β k)` elementwise (seed 001), D = d.
    ElementwiseExponential {
        d: usize,
        query_scale: f32,
        key_scale: f32,
    },
    /// Taylor's or `(1 + x/n)^n`'s explicit polynomial features (`deterministic`), D = `size`,
    /// signed: built per token by the f64 map, O(D) work against the O(D·dv) of S and the
    /// outputs.
    Polynomial {
        kernel: PolynomialKernel,
        d: usize,
        size: usize,
    },
    /// Hedgehog's learned maps (`hedgehog`): `[softmax(u), softmax(−u)]` with `u = W x + b`,
    /// each feature floored at 1e-12 (LoLCATs' clamp); queries and keys have their own W, b.
    /// D = 2n.
    Learned {
        d: usize,
        n: usize,
        /// Wᵀ (d × n row-major) of each side, the input scale folded in, and b (n).
        query_weights: Vec<f32>,
        query_bias: Vec<f32>,
        key_weights: Vec<f32>,
        key_bias: Vec<f32>,
    },
}

/// The floor of a learned feature (`hedgehog::FEATURE_FLOOR` in f32).
const LEARNED_FLOOR: f32 = 1e-12;

/// `(ω_k,i · scale_i)` in f32 as d × m row-major (ωᵀ, each input coordinate scaled). Four
/// rows of ω at a time, so that each of the d output rows takes four adjacent values per
/// write (the m × d draw is read once, in order).
fn scaled_transpose(omega: &Projections, scale: &[f64]) -> Vec<f32> {
    let (m, d) = (omega.m(), omega.d());
    let mut out = vec![0.0f32; d * m];
    let rows = omega.as_slice();
    let whole = m - m % 4;
    for k in (0..whole).step_by(4) {
        let block = &rows[k * d..(k + 4) * d];
        for (i, &s) in scale.iter().enumerate() {
            let at = i * m + k;
            out[at] = (block[i] * s) as f32;
            out[at + 1] = (block[d + i] * s) as f32;
            out[at + 2] = (block[2 * d + i] * s) as f32;
            out[at + 3] = (block[3 * d + i] * s) as f32;
        }
    }
    for k in whole..m {
        for (i, &s) in scale.iter().enumerate() {
            out[i * m + k] = (rows[k * d + i] * s) as f32;
        }
    }
    out
}

impl FeatureMap32 {
    /// The map of an estimator's [`BatchedForm`] with projections ω.
    pub fn from_form(form: &BatchedForm, omega: &Projections) -> FeatureMap32 {
        let (m, d) = (omega.m(), omega.d());
        match form {
            BatchedForm::Exponential {
                a,
                hyperbolic,
                offsets,
                projection_scale,
            } => {
                let query: Vec<f64> = a.iter().map(|a| projection_scale * a).collect();
                let key: Vec<f64> = a.iter().map(|a| projection_scale / a).collect();
                FeatureMap32::Exponential {
                    d,
                    m,
                    hyperbolic: *hyperbolic,
                    query_projection: scaled_transpose(omega, &query),
                    key_projection: scaled_transpose(omega, &key),
                    query_scale: a.iter().map(|&a| a as f32).collect(),
                    key_scale: a.iter().map(|&a| (1.0 / a) as f32).collect(),
                    offsets: offsets.iter().map(|&c| c as f32).collect(),
                }
            }
            BatchedForm::Trigonometric => FeatureMap32::Trigonometric {
                d,
                m,
                projection: scaled_transpose(omega, &vec![1.0; d]),
            },
        }
    }

    /// Features per token D.
    pub fn size(&self) -> usize {
        match self {
            FeatureMap32::Exponential { m, hyperbolic, .. } => m * if *hyperbolic { 2 } else { 1 },
            FeatureMap32::Trigonometric { m, .. } => 2 * m,
            FeatureMap32::EluPlusOne { d } | FeatureMap32::ElementwiseExponential { d, .. } => *d,
            FeatureMap32::Polynomial { size, .. } => *size,
            FeatureMap32::Learned { n, .. } => 2 * n,
        }
    }

    /// The input dimension d.
    pub fn dim(&self) -> usize {
        match self {
            FeatureMap32::Exponential { d, .. }
            | FeatureMap32::Trigonometric { d, .. }
            | FeatureMap32::EluPlusOne { d }
            | FeatureMap32::ElementwiseExponential { d, .. }
            | FeatureMap32::Polynomial { d, .. }
            | FeatureMap32::Learned { d, .. } => *d,
        }
    }

    /// Whether every feature is positive (then a denominator is > 0 unless it underflows).
    pub fn is_positive(&self) -> bool {
        !matches!(
            self,
            FeatureMap32::Trigonometric { .. } | FeatureMap32::Polynomial { .. }
        )
    }

    /// Multiply-adds of the features of one token (the projection).
    pub fn multiply_adds_per_token(&self) -> f64 {
        match self {
            FeatureMap32::Exponential { d, m, .. }
            | FeatureMap32::Trigonometric { d, m, .. }
            | FeatureMap32::Learned { d, n: m, .. } => (d * m) as f64,
            FeatureMap32::EluPlusOne { .. } | FeatureMap32::ElementwiseExponential { .. } => 0.0,
            // One multiply per feature of each Kronecker block.
            FeatureMap32::Polynomial { size, .. } => *size as f64,
        }
    }

    /// Floats of scratch [`FeatureMap32::features`] needs per token beyond its output.
    pub fn scratch_per_token(&self) -> usize {
        match self {
            FeatureMap32::Exponential { m, .. }
            | FeatureMap32::Trigonometric { m, .. }
            | FeatureMap32::Learned { n: m, .. } => *m,
            FeatureMap32::EluPlusOne { .. }
            | FeatureMap32::ElementwiseExponential { .. }
            | FeatureMap32::Polynomial { .. } => 0,
        }
    }

    /// The features of `rows` tokens `u` (rows × d) into `out` (rows × D), each row divided by
    /// `e^{shifts[r]}`; `scratch` holds at least `rows ·` [`Self::scratch_per_token`] floats.
    pub fn features(
        &self,
        u: &[f32],
        rows: usize,
        side: Side,
        out: &mut [f32],
        shifts: &mut [f32],
        scratch: &mut [f32],
    ) {
        let size = self.size();
        match self {
            FeatureMap32::Exponential {
                d,
                m,
                hyperbolic,
                query_projection,
                key_projection,
                query_scale,
                key_scale,
                offsets,
            } => {
                let (projection, scale) = match side {
                    Side::Query => (query_projection, query_scale),
                    Side::Key => (key_projection, key_scale),
                };
                let t = project(u, rows, *d, *m, projection, scratch);
                for r in 0..rows {
                    let token = &u[r * d..(r + 1) * d];
                    let half_norm = 0.5
                        * token
                            .iter()
                            .zip(scale)
                            .map(|(x, a)| (x * a) * (x * a))
                            .sum::<f32>();
                    let t_row = &t[r * m..(r + 1) * m];
                    let row = &mut out[r * size..(r + 1) * size];
                    let (plus, minus) = row.split_at_mut(*m);
                    for ((p, c), t) in plus.iter_mut().zip(offsets).zip(t_row) {
                        *p = c - half_norm + t;
                    }
                    if *hyperbolic {
                        for ((p, c), t) in minus.iter_mut().zip(offsets).zip(t_row) {
                            *p = c - half_norm - t;
                        }
                    }
                    let shift = lane_max(row);
                    shifts[r] = shift;
                    for p in row.iter_mut() {
                        *p = exp_approx(*p - shift);
                    }
                }
            }
            FeatureMap32::Trigonometric { d, m, projection } => {
                let t = project(u, rows, *d, *m, projection, scratch);
                let ln_scale = -0.5 * (*m as f32).ln();
                for r in 0..rows {
                    let token = &u[r * d..(r + 1) * d];
                    shifts[r] = 0.5 * token.iter().map(|x| x * x).sum::<f32>() + ln_scale;
                    let (sines, cosines) = out[r * size..(r + 1) * size].split_at_mut(*m);
                    for ((s, c), t) in sines.iter_mut().zip(cosines).zip(&t[r * m..(r + 1) * m]) {
                        (*s, *c) = t.sin_cos();
                    }
                }
            }
            FeatureMap32::EluPlusOne { d } => {
                for (o, x) in out[..rows * d].iter_mut().zip(&u[..rows * d]) {
                    *o = if *x > 0.0 { x + 1.0 } else { exp_approx(*x) };
                }
                shifts[..rows].fill(0.0);
            }
            FeatureMap32::ElementwiseExponential {
                d,
                query_scale,
                key_scale,
            } => {
                let scale = if side == Side::Query {
                    *query_scale
                } else {
                    *key_scale
                };
                for r in 0..rows {
                    let row = &mut out[r * d..(r + 1) * d];
                    for (o, x) in row.iter_mut().zip(&u[r * d..(r + 1) * d]) {
                        *o = scale * x;
                    }
                    let shift = lane_max(row);
                    shifts[r] = shift;
                    row.iter_mut().for_each(|o| *o = exp_approx(*o - shift));
                }
            }
            FeatureMap32::Learned {
                d,
                n,
                query_weights,
                query_bias,
                key_weights,
                key_bias,
            } => {
                let (weights, bias) = match side {
                    Side::Query => (query_weights, query_bias),
                    Side::Key => (key_weights, key_bias),
                };
                let t = project(u, rows, *d, *n, weights, scratch);
                for r in 0..rows {
                    let row = &mut out[r * size..(r + 1) * size];
                    let (plus, minus) = row.split_at_mut(*n);
                    for ((p, t), b) in plus.iter_mut().zip(&t[r * n..(r + 1) * n]).zip(bias) {
                        *p = t + b;
                    }
                    let max = plus.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
                    let min = plus.iter().fold(f32::INFINITY, |a, &b| a.min(b));
                    for (p, m) in plus.iter_mut().zip(minus.iter_mut()) {
                        *m = exp_approx(min - *p);
                        *p = exp_approx(*p - max);
                    }
                    for block in [plus, minus] {
                        let total: f32 = block.iter().sum();
                        block
                            .iter_mut()
                            .for_each(|p| *p = (*p / total).max(LEARNED_FLOOR));
                    }
                    shifts[r] = 0.0;
                }
            }
            FeatureMap32::Polynomial { kernel, d, size } => {
                for r in 0..rows {
                    let token: Vec<f64> = u[r * d..(r + 1) * d]
                        .iter()
                        .map(|&x| f64::from(x))
                        .collect();
                    let features = kernel.features(&token, *size).unwrap_or_default();
                    let row = &mut out[r * size..(r + 1) * size];
                    row.fill(f32::NAN);
                    for (o, f) in row.iter_mut().zip(&features) {
                        *o = *f as f32;
                    }
                    shifts[r] = 0.0;
                }
            }
        }
    }
}

/// `T = U · B` for `rows` tokens `u` (rows × d) and a projection `b` (d × m row-major), into
/// the first `rows · m` floats of `scratch`.
fn project<'a>(
    u: &[f32],
    rows: usize,
    d: usize,
    m: usize,
    b: &[f32],
    scratch: &'a mut [f32],
) -> &'a [f32] {
    let t = &mut scratch[..rows * m];
    gemm(
        rows,
        m,
        d,
        MatRef {
            values: u,
            stride: d,
        },
        MatRef {
            values: b,
            stride: m,
        },
        t,
        m,
        false,
    );
    t
}
