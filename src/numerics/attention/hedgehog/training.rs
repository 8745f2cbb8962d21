//! The Hedgehog maps' loss, its analytic gradient, and their training by Adam (β1 = 0.9,
//! β2 = 0.999, ε = 1e-8, PyTorch's update), one optimiser state per head, full batch (all L
//! rows of the head) per step.
//!
//! **The gradient.** With `S_i = Σ_j s_ij` and `r_i = Σ_j P_ij` (1 up to rounding; kept so the
//! gradient is that of the loss as computed), `CE = (1/L) Σ_i (r_i log S_i − Σ_j P_ij log s_ij)`
//! and `G_ij = ∂CE/∂s_ij = −(1/L)(P_ij/s_ij − r_i/S_i)`. As `s = F_q F_kᵀ` (F the L × 2n
//! features), `∂F_q = G F_k` and `∂F_k = Gᵀ F_q`. G is `A + w 1ᵀ` with `A_ij = −P_ij/(L s_ij)`
//! and `w_i = r_i/(L S_i)`, so its rank-one part costs O(L·2n): `∂F_q = A F_k + w zᵀ` with
//! `z = Σ_j F_k,j`, and every row of `∂F_k` is `Aᵀ F_q`'s plus `Σ_i w_i F_q,i`. Through the
//! floor (no gradient where a feature is floored) and each softmax block, with g the gradient
//! of the block and p its softmax, `∂u_r = p_r (g_r − ⟨g, p⟩)`, with the opposite sign for the
//! `−u` block. Then `∂W = c ∂Uᵀ X` and `∂b = Σ_tokens ∂u`.
//!
//! **Under the causal mask** (a decoder's head, [`HeadSample::causal`]) row i has the pairs
//! j ≤ i only: `S_i = Σ_{j≤i} s_ij`, `G_ij = 0` for j > i, so the rank-one part becomes
//! `w_i Σ_{j≤i} F_k,j` in `∂F_q` (prefix sums) and `Σ_{i≥j} w_i F_q,i` in `∂F_k` (suffix sums).
//!
//! **Cost.** A step costs `3 · L² · 2n` multiply-adds per head (s, `A F_k`, `Aᵀ F_q`, as
//! blocked matrix products), `4 · L · n · d` for the projections and their gradient, `2 · L · n`
//! exponentials and L² logarithms (the reported loss).
//!
//! **Precision.** The training ([`train_heads`]) takes those three products and the projections'
//! two (`X Wᵀ` and `∂Uᵀ X`) in f32 ([`Products::Single`]: the long-sequence kernels' `gemm`, four
//! lanes with fused multiply-adds in WebAssembly, where f64 has two lanes and no fused form),
//! every other step in f64; the features are probabilities and A is of one sign, so each of the
//! three sums terms of one sign (relative error about 1e-7), and the model's own arithmetic is
//! f32 anyway. [`loss`] and the
//! gradient's check against central differences use f64 products ([`Products::Double`]).

use serde::{Deserialize, Serialize};

use crate::numerics::portable::{Libm, ln_positive_normal};

use super::products::{Products, SingleScratch, axpy, dot, product};
use super::{
    HeadSample, HedgehogError, HedgehogMap, Loss, MapParameters, PROJECTION_OVERFLOW, Projection,
    TokenFeatures, zeroed,
};
use crate::numerics::attention::dots::transpose_into;

const ADAM_BETA1: f64 = 0.9;
const ADAM_BETA2: f64 = 0.999;
const ADAM_EPSILON: f64 = 1e-8;

/// A head's softmax rows P (L × L) with their row sums and entropy, fixed during training.
pub(super) struct SoftmaxTarget {
    probabilities: Vec<f64>,
    row_sums: Vec<f64>,
    /// `H(P) = −(1/L) Σ_ij P_ij log P_ij`.
    entropy: f64,
}

impl SoftmaxTarget {
    pub(super) fn new(sample: &HeadSample) -> Result<Self, HedgehogError> {
        let (len, dim) = (sample.len, sample.dim);
        let mut probabilities = vec![0.0; len * len];
        let mut entropy = 0.0;
        let rows = sample
            .q
            .chunks_exact(dim)
            .zip(probabilities.chunks_exact_mut(len));
        for (i, (q, row)) in rows.enumerate() {
            // Under the causal mask the row is its first i + 1 keys; the rest stay 0.
            let seen = if sample.causal { i + 1 } else { len };
            let row = &mut row[..seen];
            for (score, k) in row.iter_mut().zip(sample.k.chunks_exact(dim)) {
                *score = dot(q, k);
            }
            if row.iter().any(|a| !a.is_finite()) {
                return Err(HedgehogError::Overflow {
                    what: "a score q·k",
                });
            }
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let total: f64 = row.iter().map(|a| (a - max).libm_exp()).sum();
            let log_total = total.libm_ln();
            for score in row.iter_mut() {
                // log P_ij = (a_ij − max) − log Σ_l e^{a_il − max}, exact where P_ij underflows.
                let log_p = *score - max - log_total;
                *score = log_p.libm_exp();
                if *score > 0.0 {
                    entropy -= *score * log_p;
                }
            }
        }
        let row_sums = probabilities
            .chunks_exact(len)
            .map(|r| r.iter().sum())
            .collect();
        Ok(Self {
            probabilities,
            row_sums,
            entropy: entropy / len as f64,
        })
    }
}

/// Buffers of one evaluation, reused from head to head and step to step.
#[derive(Default)]
pub(super) struct Workspace {
    single: SingleScratch,
    /// One row's `log s_ij`.
    logs: Vec<f64>,
    queries: TokenFeatures,
    keys: TokenFeatures,
    /// F_kᵀ (2n × L).
    keys_t: Vec<f64>,
    /// s (L × L), then `A_ij = −P_ij/(L s_ij)`; and Aᵀ.
    scores: Vec<f64>,
    scores_t: Vec<f64>,
    /// The rank-one part of ∂CE/∂s: `w_i = r_i/(L S_i)`.
    row_weights: Vec<f64>,
    /// `Σ_i w_i F_q,i` (2n).
    query_mix: Vec<f64>,
    /// ∂CE/∂F_q, ∂CE/∂F_k (L × 2n), then ∂U in their first n columns.
    grad_q: Vec<f64>,
    grad_k: Vec<f64>,
    /// ∂Uᵀ (n × L).
    grad_u_t: Vec<f64>,
}

/// The loss of `map` on `sample`, on its own.
pub(super) fn loss(map: &HedgehogMap, sample: &HeadSample) -> Result<Loss, HedgehogError> {
    let target = SoftmaxTarget::new(sample)?;
    let mut workspace = Workspace::default();
    evaluate(map, sample, &target, &mut workspace, None, Products::Double)
}

/// The loss of `map` on one head and, if `gradient` is given, its gradient written into it.
pub(super) fn evaluate(
    map: &HedgehogMap,
    sample: &HeadSample,
    target: &SoftmaxTarget,
    ws: &mut Workspace,
    gradient: Option<&mut MapParameters>,
    precision: Products,
) -> Result<Loss, HedgehogError> {
    let (len, m, scale) = (sample.len, 2 * map.half_features, map.input_scale);
    let (query, key) = (&map.parameters.query, &map.parameters.key);
    let (single, p) = (&mut ws.single, precision);
    let queries = ws.queries.compute(query, &sample.q, scale, p, single);
    if !(queries && ws.keys.compute(key, &sample.k, scale, p, single)) {
        return Err(PROJECTION_OVERFLOW);
    }
    let (features_q, features_k) = (&ws.queries.floored, &ws.keys.floored);
    zeroed(&mut ws.keys_t, m * len);
    zeroed(&mut ws.scores, len * len);
    zeroed(&mut ws.row_weights, len);
    transpose_into(features_k, &mut ws.keys_t, len, m);
    let single = &mut ws.single;
    product(
        precision,
        single,
        features_q,
        &ws.keys_t,
        &mut ws.scores,
        m,
        len,
    );
    let inv_len = 1.0 / len as f64;
    let with_gradient = gradient.is_some();
    let mut cross_entropy = 0.0;
    let rows = ws.scores.chunks_exact_mut(len);
    let targets = target.probabilities.chunks_exact(len).zip(&target.row_sums);
    let causal = sample.causal;
    for (i, ((s_row, (p_row, &row_sum)), weight)) in
        rows.zip(targets).zip(&mut ws.row_weights).enumerate()
    {
        // Under the causal mask, row i is its first i + 1 pairs: the others are no score and
        // no gradient (A_ij = 0).
        let seen = if causal { i + 1 } else { len };
        s_row[seen..].fill(0.0);
        let (s_row, p_row) = (&mut s_row[..seen], &p_row[..seen]);
        // r_i log S_i − Σ_j P_ij log s_ij, without the P_ij = 0 terms (0 · log = 0).
        let total: f64 = s_row.iter().sum();
        cross_entropy += row_sum * total.libm_ln();
        // The row's logarithms first, in a loop without calls or branches (s_ij ≥ 2n·10⁻²⁴:
        // positive and normal, where `ln_positive_normal` is libm's log bit for bit).
        ws.logs.clear();
        ws.logs.extend(s_row.iter().map(|&s| ln_positive_normal(s)));
        for ((s, &p), log_s) in s_row.iter_mut().zip(p_row).zip(&ws.logs) {
            if p > 0.0 {
                cross_entropy -= p * log_s;
            }
            if with_gradient {
                *s = -inv_len * p / *s;
            }
        }
        *weight = inv_len * row_sum / total;
    }
    let cross_entropy = cross_entropy * inv_len;
    if let Some(gradient) = gradient {
        zeroed(&mut ws.grad_q, len * m);
        zeroed(&mut ws.grad_k, len * m);
        zeroed(&mut ws.scores_t, len * len);
        zeroed(&mut ws.query_mix, m);
        // ∂F_q = A F_k + w zᵀ.
        product(
            precision,
            single,
            &ws.scores,
            features_k,
            &mut ws.grad_q,
            len,
            m,
        );
        if causal {
            // w_i Σ_{j≤i} F_k,j: the prefix sums of the keys' features.
            let mut prefix = vec![0.0; m];
            let rows = ws
                .grad_q
                .chunks_exact_mut(m)
                .zip(features_k.chunks_exact(m));
            for ((g_row, f_row), w) in rows.zip(&ws.row_weights) {
                axpy(&mut prefix, 1.0, f_row);
                axpy(g_row, *w, &prefix);
            }
        } else {
            let key_sums = ws.keys_t.chunks_exact(len).map(|r| r.iter().sum::<f64>());
            for (f, z) in key_sums.enumerate() {
                let column = ws.grad_q.iter_mut().skip(f).step_by(m);
                column.zip(&ws.row_weights).for_each(|(g, w)| *g += w * z);
            }
        }
        // ∂F_k = Aᵀ F_q + 1 (Σ_i w_i F_q,i)ᵀ.
        transpose_into(&ws.scores, &mut ws.scores_t, len, len);
        product(
            precision,
            single,
            &ws.scores_t,
            features_q,
            &mut ws.grad_k,
            len,
            m,
        );
        if causal {
            // Σ_{i≥j} w_i F_q,i: the suffix sums of the weighted queries' features.
            let rows = ws
                .grad_k
                .chunks_exact_mut(m)
                .zip(features_q.chunks_exact(m));
            for ((g_row, f_row), w) in rows.zip(&ws.row_weights).rev() {
                axpy(&mut ws.query_mix, *w, f_row);
                axpy(g_row, 1.0, &ws.query_mix);
            }
        } else {
            for (w, f_row) in ws.row_weights.iter().zip(features_q.chunks_exact(m)) {
                axpy(&mut ws.query_mix, *w, f_row);
            }
            for g_row in ws.grad_k.chunks_exact_mut(m) {
                axpy(g_row, 1.0, &ws.query_mix);
            }
        }
        let grad_u_t = &mut ws.grad_u_t;
        let (raw_q, raw_k) = (&ws.queries.raw, &ws.keys.raw);
        let (p, single) = (precision, &mut ws.single);
        let (grad_q, grad_k) = (&mut ws.grad_q, &mut ws.grad_k);
        (gradient.query).backpropagate(raw_q, grad_q, &sample.q, grad_u_t, scale, p, single);
        (gradient.key).backpropagate(raw_k, grad_k, &sample.k, grad_u_t, scale, p, single);
    }
    Ok(Loss {
        cross_entropy,
        kl: cross_entropy - target.entropy,
    })
}

impl Projection {
    /// Writes into `self` the gradient of one side from its tokens' softmax pairs before the
    /// floor (L × 2n), ∂CE/∂F (L × 2n, overwritten) and the tokens X (L × d); `grad_u_t` is
    /// scratch.
    #[allow(clippy::too_many_arguments)]
    fn backpropagate(
        &mut self,
        raw: &[f64],
        grad: &mut [f64],
        tokens: &[f64],
        grad_u_t: &mut Vec<f64>,
        scale: f64,
        precision: Products,
        single: &mut SingleScratch,
    ) {
        let n = self.bias.len();
        let (dim, len) = (self.weights.len() / n, raw.len() / (2 * n));
        zeroed(grad_u_t, n * len);
        for (t, (raw, g)) in raw
            .chunks_exact(2 * n)
            .zip(grad.chunks_exact_mut(2 * n))
            .enumerate()
        {
            // A floored feature is a constant: no gradient flows through it (clamp's rule).
            for (g, r) in g.iter_mut().zip(raw) {
                if *r < super::FEATURE_FLOOR {
                    *g = 0.0;
                }
            }
            let ((g_pos, g_neg), (p_pos, p_neg)) = (g.split_at(n), raw.split_at(n));
            let (c_pos, c_neg) = (dot(g_pos, p_pos), dot(g_neg, p_neg));
            // ∂u_r = p⁺_r (g⁺_r − ⟨g⁺, p⁺⟩) − p⁻_r (g⁻_r − ⟨g⁻, p⁻⟩), into column t of ∂Uᵀ.
            let blocks = g_pos.iter().zip(g_neg).zip(p_pos.iter().zip(p_neg));
            for (r, ((g_p, g_n), (p_p, p_n))) in blocks.enumerate() {
                grad_u_t[r * len + t] = p_p * (g_p - c_pos) - p_n * (g_n - c_neg);
            }
        }
        product(
            precision,
            single,
            grad_u_t,
            tokens,
            &mut self.weights,
            len,
            dim,
        );
        self.weights.iter_mut().for_each(|w| *w *= scale);
        for (b, row) in self.bias.iter_mut().zip(grad_u_t.chunks_exact(len)) {
            *b = row.iter().sum();
        }
    }
}

/// Adam's moments for one head, with the running powers of β1, β2 for the bias correction.
pub(super) struct Adam {
    first: MapParameters,
    second: MapParameters,
    beta1_power: f64,
    beta2_power: f64,
}

impl Adam {
    pub(super) fn new(half_features: usize, dim: usize) -> Self {
        Self {
            first: MapParameters::zeros(half_features, dim),
            second: MapParameters::zeros(half_features, dim),
            beta1_power: 1.0,
            beta2_power: 1.0,
        }
    }

    /// PyTorch's update: `θ −= lr · m̂ / (√v̂ + ε)`.
    pub(super) fn update(
        &mut self,
        parameters: &mut MapParameters,
        gradient: &MapParameters,
        rate: f64,
    ) {
        self.beta1_power *= ADAM_BETA1;
        self.beta2_power *= ADAM_BETA2;
        let corrections = (1.0 - self.beta1_power, 1.0 - self.beta2_power);
        // Slice by slice (W and b of each side), so that each loop is one vectorisable pass.
        let sides = [
            (&mut parameters.query, &gradient.query),
            (&mut parameters.key, &gradient.key),
        ];
        let moments = [
            (&mut self.first.query, &mut self.second.query),
            (&mut self.first.key, &mut self.second.key),
        ];
        for ((theta, g), (m, v)) in sides.into_iter().zip(moments) {
            adam_step(
                &mut theta.weights,
                &g.weights,
                &mut m.weights,
                &mut v.weights,
                rate,
                corrections,
            );
            adam_step(
                &mut theta.bias,
                &g.bias,
                &mut m.bias,
                &mut v.bias,
                rate,
                corrections,
            );
        }
    }
}

/// PyTorch's Adam update of one slice of parameters θ with gradient g and moments m, v.
fn adam_step(
    theta: &mut [f64],
    gradient: &[f64],
    first: &mut [f64],
    second: &mut [f64],
    rate: f64,
    (correction1, correction2): (f64, f64),
) {
    let moments = first.iter_mut().zip(second.iter_mut());
    for ((theta, g), (m, v)) in theta.iter_mut().zip(gradient).zip(moments) {
        *m = ADAM_BETA1 * *m + (1.0 - ADAM_BETA1) * g;
        *v = ADAM_BETA2 * *v + (1.0 - ADAM_BETA2) * g * g;
        *theta -= rate * (*m / correction1) / ((*v / correction2).sqrt() + ADAM_EPSILON);
    }
}

/// One point of the training curve.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainingPoint {
    /// Adam steps taken (0: the initial maps).
    pub step: usize,
    /// Means over the heads of the training samples' loss.
    pub train_cross_entropy: f64,
    pub train_kl: f64,
    /// Mean over the heads of the evaluation samples' KL, when evaluated at this step.
    pub eval_kl: Option<f64>,
}

/// One head's losses at one step: what [`super::merge_heads`] averages.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeadLoss {
    pub train_cross_entropy: f64,
    pub train_kl: f64,
    /// The evaluation sample's KL, at the steps that evaluate.
    pub eval_kl: Option<f64>,
}

/// Some heads' trained maps, with each head's losses at every step: a part of a training split
/// by heads ([`train_heads`]), merged with the others by [`super::merge_heads`].
#[derive(Clone, Debug, PartialEq)]
pub struct TrainedHeads {
    /// The heads' indices in the whole list, increasing.
    pub heads: Vec<usize>,
    /// `maps[i]` is head `heads[i]`'s.
    pub maps: Vec<HedgehogMap>,
    /// `losses[step][i]`: head `heads[i]`'s losses after `step` steps (0 to `settings.steps`).
    pub losses: Vec<Vec<HeadLoss>>,
}

/// The point of one step from the heads' losses: means over the heads, summed in their order.
pub(super) fn point_of(step: usize, losses: &[HeadLoss]) -> TrainingPoint {
    let (mut cross_entropy, mut kl, mut eval, mut evaluated) = (0.0, 0.0, 0.0, 0);
    for loss in losses {
        cross_entropy += loss.train_cross_entropy;
        kl += loss.train_kl;
        if let Some(e) = loss.eval_kl {
            eval += e;
            evaluated += 1;
        }
    }
    let heads = losses.len().max(1) as f64;
    TrainingPoint {
        step,
        train_cross_entropy: cross_entropy / heads,
        train_kl: kl / heads,
        eval_kl: (evaluated > 0).then(|| eval / evaluated as f64),
    }
}
