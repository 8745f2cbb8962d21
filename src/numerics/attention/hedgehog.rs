//! Hedgehog: linear attention with a learned feature map per head (Zhang, Bhatia, Kumbong, Ré,
//! "The Hedgehog & the Porcupine: Expressive Linear Attentions with Softmax Mimicry", ICLR 2024).
//!
//! Each head has two maps, one for queries and one for keys (untied, as LoLCATs'
//! `tie_qk_kernels = False`), each `φ(x) = [softmax(u), softmax(−u)]` with `u = W (c x) + b`,
//! softmax over the n features, W of n × d, b of n: φ has 2n features, all positive. The
//! attention they give is `P̂_ij = s_ij / Σ_l s_il` with `s_ij = φ_q(q_i)·φ_k(k_j)`, and the maps
//! are trained to mimic the head's softmax rows `P_ij = softmax_j(q_i·k_j)` by the soft-label
//! cross-entropy over the L rows (non-causal: every query sees every key)
//!
//! `CE = −(1/L) Σ_i Σ_j P_ij log P̂_ij`,   `KL = CE − H(P)`, `H(P) = −(1/L) Σ_ij P_ij log P_ij`.
//!
//! **What follows the reference code** (HazyResearch `lolcats`: `FeatureMapMLP` and
//! `SoftmaxDim` in `src/model/feature_map.py`, the loss of
//! `src/trainer/distill_attention_xent_mse.py`):
//! - the input scale `c = d^{1/4}`: the crate's queries and keys come scaled by `d^{-1/4}` each
//!   (so that softmax of their dot products is the head's attention), while LoLCATs applies its
//!   maps to the model's unscaled q, k; `c` undoes the scaling, so W = identity is LoLCATs'
//!   starting point exactly, and a learning rate means what it means there;
//! - every feature is floored at [`FEATURE_FLOOR`] = 1e-12 (LoLCATs' `clamp(min = eps)`), so
//!   `s_ij ≥ 2n·10⁻²⁴ > 0` and `log P̂` is always finite; no gradient flows through a floored
//!   feature, as with `clamp`. LoLCATs also adds eps to the row sums `Σ_l s_il`; the floor
//!   already keeps them positive, so they are used as they are and P̂'s rows sum to 1;
//! - the loss is the mean over rows of the rows' cross-entropies (`CrossEntropyLoss(reduction
//!   = 'mean')` on the rows), here the rows of one head;
//! - initialisation at n = d: W = identity, b = 0 (LoLCATs' `zero_init`). At n ≠ d (no
//!   reference), row r of W is `e_{r mod d}` plus Gaussian noise of standard deviation
//!   `0.1/√d` on every entry (stream `(seed, Hedgehog, head, 0 for queries / 1 for keys)`),
//!   b = 0. The bias is the paper's n-vector (`nn.Linear`); LoLCATs' default map has none
//!   (its optional bias is one number per head, which the softmax ignores).
//!
//! Training ([`train`]: Adam, full batch, the analytic gradient) is in `training.rs`. All the
//! transcendental functions are the `libm` crate's ([`Libm`]), so WebAssembly and native runs
//! give the same bits.

mod merge;
mod products;
mod trainer;
mod training;

use std::fmt;

use crate::numerics::input::{InputError, check_finite};
use crate::numerics::portable::{Libm, StandardNormal};
use crate::numerics::rng::{StreamPurpose, stream_rng};

use super::dots::transpose_into;
pub use merge::{CompactMap, merge_heads};
use products::{Products, SingleScratch, axpy, dot, multiply, product};
pub use trainer::{Trainer, train, train_heads};
pub use training::{HeadLoss, TrainedHeads, TrainingPoint};

/// Features below this are raised to it (LoLCATs' `clamp(min = 1e-12)`).
pub const FEATURE_FLOOR: f64 = 1e-12;
/// The largest half feature count n.
pub const MAX_HALF_FEATURES: usize = 512;
/// The most training steps.
pub const MAX_STEPS: usize = 5000;
/// The most tokens of a sample: training stores its L × L softmax rows.
pub const MAX_SAMPLE_TOKENS: usize = 2048;
/// The largest head dimension d.
pub const MAX_DIM: usize = 1024;

/// The initial noise of W at n ≠ d is this over √d.
const INITIAL_NOISE: f64 = 0.1;

/// Why a Hedgehog map could not be built, evaluated or trained.
#[derive(Clone, Debug, PartialEq)]
pub enum HedgehogError {
    /// A size or a setting is outside what the map can use.
    InvalidParameter { name: &'static str, reason: String },
    /// A matrix has the wrong number of entries (or a list of heads the wrong length), or an
    /// input is NaN or infinite.
    Input(InputError),
    /// An intermediate overflowed f64 (a score q·k, a projection W x).
    Overflow { what: &'static str },
    /// Training produced a non-finite loss (the learning rate is too large).
    Diverged { step: usize, head: usize },
}

impl fmt::Display for HedgehogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidParameter { name, reason } => write!(f, "Hedgehog `{name}`: {reason}"),
            Self::Input(e) => write!(f, "{e}"),
            Self::Overflow { what } => write!(f, "{what} overflows double precision"),
            Self::Diverged { step, head } => write!(
                f,
                "Hedgehog training diverged at step {step} (head {head}): lower the learning rate"
            ),
        }
    }
}

impl std::error::Error for HedgehogError {}

impl From<InputError> for HedgehogError {
    fn from(e: InputError) -> Self {
        HedgehogError::Input(e)
    }
}

/// `Ok` if `ok`, else `name` is invalid for `reason`.
fn require(
    ok: bool,
    name: &'static str,
    reason: impl FnOnce() -> String,
) -> Result<(), HedgehogError> {
    if ok {
        return Ok(());
    }
    let reason = reason();
    Err(HedgehogError::InvalidParameter { name, reason })
}

const PROJECTION_OVERFLOW: HedgehogError = HedgehogError::Overflow {
    what: "the projection W x",
};

/// `rows × cols`, both at least 1, rows at most `max_rows`.
fn matrix_size(
    name: &'static str,
    rows: usize,
    cols: usize,
    max_rows: usize,
) -> Result<usize, HedgehogError> {
    require(rows > 0 && cols > 0, name, || {
        format!("must be at least 1, got {rows} and {cols}")
    })?;
    require(rows <= max_rows, name, || {
        format!("{rows} rows, at most {max_rows}")
    })?;
    let overflow = || HedgehogError::InvalidParameter {
        name,
        reason: format!("{rows} × {cols} overflows"),
    };
    rows.checked_mul(cols).ok_or_else(overflow)
}

/// What a training run asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HedgehogSettings {
    /// n: each softmax block's features (φ has 2n).
    pub half_features: usize,
    /// Adam steps.
    pub steps: usize,
    /// Adam's learning rate.
    pub learning_rate: f64,
    /// The seed of the initial noise (n ≠ d only).
    pub seed: u64,
}

impl HedgehogSettings {
    /// n in `1..=512`, steps at most 5000, a positive finite learning rate.
    pub fn validate(&self) -> Result<(), HedgehogError> {
        let (n, steps, rate) = (self.half_features, self.steps, self.learning_rate);
        require(
            (1..=MAX_HALF_FEATURES).contains(&n),
            "half_features",
            || format!("must be 1 to {MAX_HALF_FEATURES}, got {n}"),
        )?;
        require(steps <= MAX_STEPS, "steps", || {
            format!("at most {MAX_STEPS}, got {steps}")
        })?;
        require(rate.is_finite() && rate > 0.0, "learning_rate", || {
            format!("must be positive and finite, got {rate}")
        })
    }
}

/// One head's training or evaluation data: queries and keys already scaled (so softmax(q·k)
/// is the head's attention), row-major len × dim.
#[derive(Clone, Debug, PartialEq)]
pub struct HeadSample {
    len: usize,
    dim: usize,
    q: Vec<f64>,
    k: Vec<f64>,
    /// Whether query i sees only keys j ≤ i (a decoder's head): its softmax rows, the maps'
    /// rows and the loss are then all under the causal mask.
    causal: bool,
}

impl HeadSample {
    /// Validates `1 ≤ len ≤ 2048`, `1 ≤ dim ≤ 1024`, `len × dim` finite entries in each.
    pub fn new(len: usize, dim: usize, q: Vec<f64>, k: Vec<f64>) -> Result<Self, HedgehogError> {
        let size = matrix_size("len, dim", len, dim, MAX_SAMPLE_TOKENS)?;
        require(dim <= MAX_DIM, "dim", || {
            format!("at most {MAX_DIM}, got {dim}")
        })?;
        check_finite("q", &q, size)?;
        check_finite("k", &k, size)?;
        Ok(Self {
            len,
            dim,
            q,
            k,
            causal: false,
        })
    }

    /// The same head under the causal mask (a decoder's: query i sees keys j ≤ i).
    pub fn causal(self) -> Self {
        Self {
            causal: true,
            ..self
        }
    }

    pub fn is_causal(&self) -> bool {
        self.causal
    }

    /// The tokens L (at least 1: a sample is never empty).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn queries(&self) -> &[f64] {
        &self.q
    }

    pub fn keys(&self) -> &[f64] {
        &self.k
    }
}

/// A map's fit to one head: the cross-entropy and `KL = CE − H(P)`, both in nats per row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Loss {
    pub cross_entropy: f64,
    pub kl: f64,
}

/// One side's projection `u = W (c x) + b`: W n × d row-major, b n.
#[derive(Clone, Debug, PartialEq)]
struct Projection {
    weights: Vec<f64>,
    bias: Vec<f64>,
}

/// The learned parameters of one head (or their gradient, or Adam's moments).
#[derive(Clone, Debug, PartialEq)]
struct MapParameters {
    query: Projection,
    key: Projection,
}

impl MapParameters {
    fn zeros(half_features: usize, dim: usize) -> Self {
        let zeros = || Projection {
            weights: vec![0.0; half_features * dim],
            bias: vec![0.0; half_features],
        };
        Self {
            query: zeros(),
            key: zeros(),
        }
    }

    #[cfg(test)]
    fn values(&self) -> impl Iterator<Item = &f64> {
        let (q, k) = (&self.query, &self.key);
        q.weights
            .iter()
            .chain(&q.bias)
            .chain(&k.weights)
            .chain(&k.bias)
    }

    #[cfg(test)]
    fn values_mut(&mut self) -> impl Iterator<Item = &mut f64> {
        let (q, k) = (&mut self.query, &mut self.key);
        let query = q.weights.iter_mut().chain(&mut q.bias);
        query.chain(&mut k.weights).chain(&mut k.bias)
    }
}

/// `buffer` as `size` zeros, keeping its allocation.
fn zeroed(buffer: &mut Vec<f64>, size: usize) {
    buffer.clear();
    buffer.resize(size, 0.0);
}

/// One side's features of L tokens, with the buffers that compute them (kept across steps).
#[derive(Default)]
struct TokenFeatures {
    /// Wᵀ (d × n), then `u = c X Wᵀ + b` (L × n).
    weights_t: Vec<f64>,
    projections: Vec<f64>,
    /// The softmax pairs before the floor (L × 2n), which the backward pass needs.
    raw: Vec<f64>,
    /// The features F (L × 2n).
    floored: Vec<f64>,
}

impl TokenFeatures {
    /// The features of `tokens` (L × d) with `projection`, `W x` at `precision`; false if one
    /// is not finite.
    fn compute(
        &mut self,
        projection: &Projection,
        tokens: &[f64],
        scale: f64,
        precision: Products,
        single: &mut SingleScratch,
    ) -> bool {
        let n = projection.bias.len();
        let dim = projection.weights.len() / n;
        let len = tokens.len() / dim;
        zeroed(&mut self.weights_t, dim * n);
        zeroed(&mut self.projections, len * n);
        zeroed(&mut self.raw, len * 2 * n);
        zeroed(&mut self.floored, len * 2 * n);
        transpose_into(&projection.weights, &mut self.weights_t, n, dim);
        product(
            precision,
            single,
            tokens,
            &self.weights_t,
            &mut self.projections,
            dim,
            n,
        );
        let rows = self.projections.chunks_exact(n);
        for (u, raw) in rows.zip(self.raw.chunks_exact_mut(2 * n)) {
            softmax_pair(u, &projection.bias, scale, raw);
        }
        for (f, r) in self.floored.iter_mut().zip(&self.raw) {
            *f = r.max(FEATURE_FLOOR);
        }
        self.raw.iter().all(|r| r.is_finite())
    }
}

/// `[softmax(u), softmax(−u)]` with `u = scale · wx + bias` (wx = W x), before the floor, into
/// `raw` (2n). Max-subtracted, so no exponential overflows; a non-finite u gives NaN entries.
fn softmax_pair(wx: &[f64], bias: &[f64], scale: f64, raw: &mut [f64]) {
    let (positive, negative) = raw.split_at_mut(bias.len());
    for ((u, wx), b) in positive.iter_mut().zip(wx).zip(bias) {
        *u = scale * wx + b;
    }
    let max = positive.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = positive.iter().copied().fold(f64::INFINITY, f64::min);
    // e^{min − u_r} = e^{min − max} / e^{u_r − max}: one exponential per feature where both are
    // normal numbers (the quotient is then within 2 ulps), two elsewhere.
    let spread = (min - max).libm_exp();
    for (p, m) in positive.iter_mut().zip(negative.iter_mut()) {
        let u = *p;
        *p = (u - max).libm_exp();
        *m = if spread >= f64::MIN_POSITIVE && *p >= f64::MIN_POSITIVE {
            spread / *p
        } else {
            (min - u).libm_exp()
        };
    }
    for block in [positive, negative] {
        let total: f64 = block.iter().sum();
        block.iter_mut().for_each(|p| *p /= total);
    }
}

/// An attention output, or the overflow that made one of its values not finite.
fn finite_output(output: Vec<f64>) -> Result<Vec<f64>, HedgehogError> {
    match output.iter().all(|o| o.is_finite()) {
        true => Ok(output),
        false => Err(HedgehogError::Overflow {
            what: "an attention output",
        }),
    }
}

/// One head's learned maps φ_q, φ_k.
#[derive(Clone, Debug, PartialEq)]
pub struct HedgehogMap {
    dim: usize,
    half_features: usize,
    /// `d^{1/4}`: the maps see the model's unscaled q, k, as LoLCATs' do.
    input_scale: f64,
    parameters: MapParameters,
}

impl HedgehogMap {
    /// The untrained maps of head `stream_index` (see the module documentation).
    pub fn initial(
        dim: usize,
        settings: &HedgehogSettings,
        stream_index: u64,
    ) -> Result<Self, HedgehogError> {
        settings.validate()?;
        require((1..=MAX_DIM).contains(&dim), "dim", || {
            format!("must be 1 to {MAX_DIM}, got {dim}")
        })?;
        let n = settings.half_features;
        let mut parameters = MapParameters::zeros(n, dim);
        let noise_sd = INITIAL_NOISE / (dim as f64).sqrt();
        let sides = [&mut parameters.query, &mut parameters.key];
        for (side, projection) in sides.into_iter().enumerate() {
            let stream =
                |side| stream_rng(settings.seed, StreamPurpose::Hedgehog, stream_index, side);
            let mut rng = (n != dim).then(|| stream(side as u64));
            for (r, row) in projection.weights.chunks_exact_mut(dim).enumerate() {
                row[r % dim] = 1.0;
                if let Some(rng) = rng.as_mut() {
                    row.iter_mut()
                        .for_each(|w| *w += noise_sd * StandardNormal.sample(rng));
                }
            }
        }
        Ok(Self {
            dim,
            half_features: n,
            input_scale: (dim as f64).libm_powf(0.25),
            parameters,
        })
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// n (φ has 2n features).
    pub fn half_features(&self) -> usize {
        self.half_features
    }

    fn check_dim(&self, name: &'static str, dim: usize) -> Result<(), HedgehogError> {
        require(dim == self.dim, name, || {
            format!("the map is for d = {}, got {dim}", self.dim)
        })
    }

    /// The features (L × 2n) of the rows of `tokens` (L × d, checked) with `projection`.
    fn features(&self, projection: &Projection, tokens: &[f64]) -> Result<Vec<f64>, HedgehogError> {
        let mut features = TokenFeatures::default();
        let (double, single) = (Products::Double, &mut SingleScratch::default());
        match features.compute(projection, tokens, self.input_scale, double, single) {
            true => Ok(features.floored),
            false => Err(PROJECTION_OVERFLOW),
        }
    }

    /// φ_q(x) (2n features) of one scaled query.
    pub fn features_q(&self, x: &[f64]) -> Result<Vec<f64>, HedgehogError> {
        check_finite("x", x, self.dim)?;
        self.features(&self.parameters.query, x)
    }

    /// φ_k(x) (2n features) of one scaled key.
    pub fn features_k(&self, x: &[f64]) -> Result<Vec<f64>, HedgehogError> {
        check_finite("x", x, self.dim)?;
        self.features(&self.parameters.key, x)
    }

    /// How well these maps reproduce the sample's softmax rows.
    pub fn loss(&self, sample: &HeadSample) -> Result<Loss, HedgehogError> {
        self.check_dim("sample.dim", sample.dim)?;
        training::loss(self, sample)
    }

    /// The keys' and the queries' features (L × 2n each) once the shapes and values of q, k
    /// (L × dim) and v (L × dv) are checked: what both attentions start from.
    fn checked_features(
        &self,
        (q, k, v): (&[f64], &[f64], &[f64]),
        len: usize,
        dim: usize,
        dv: usize,
    ) -> Result<(Vec<f64>, Vec<f64>), HedgehogError> {
        self.check_dim("dim", dim)?;
        let size = matrix_size("len, dim", len, dim, usize::MAX)?;
        check_finite("q", q, size)?;
        check_finite("k", k, size)?;
        check_finite("v", v, matrix_size("len, dv", len, dv, usize::MAX)?)?;
        let keys = self.features(&self.parameters.key, k)?;
        let queries = self.features(&self.parameters.query, q)?;
        Ok((keys, queries))
    }

    /// Linear attention output with this map: `out_i = Σ_j s_ij v_j / Σ_j s_ij`, computed in
    /// O(L n dv) as `φ_q(q_i)ᵀ(Σ_j φ_k(k_j) v_jᵀ) / φ_q(q_i)ᵀ Σ_j φ_k(k_j)`. q, k are L × dim
    /// (scaled, as [`HeadSample`]'s), v is L × dv, all row-major; the output is L × dv.
    pub fn attention(
        &self,
        q: &[f64],
        k: &[f64],
        v: &[f64],
        len: usize,
        dim: usize,
        dv: usize,
    ) -> Result<Vec<f64>, HedgehogError> {
        let (keys, queries) = self.checked_features((q, k, v), len, dim, dv)?;
        let m = 2 * self.half_features;
        let mut keys_t = vec![0.0; m * len];
        transpose_into(&keys, &mut keys_t, len, m);
        // Σ_j φ_k(k_j) v_jᵀ (2n × dv) and Σ_j φ_k(k_j) (2n).
        let mut key_values = vec![0.0; m * dv];
        multiply(&keys_t, v, &mut key_values, len, dv);
        let key_sum: Vec<f64> = keys_t.chunks_exact(len).map(|r| r.iter().sum()).collect();
        let mut output = vec![0.0; len * dv];
        multiply(&queries, &key_values, &mut output, m, dv);
        for (out, phi) in output.chunks_exact_mut(dv).zip(queries.chunks_exact(m)) {
            let denominator = dot(phi, &key_sum);
            out.iter_mut().for_each(|o| *o /= denominator);
        }
        finite_output(output)
    }

    /// Causal linear attention output with this map: `out_i = Σ_{j≤i} s_ij v_j / Σ_{j≤i} s_ij`,
    /// by prefix sums of `φ_k(k_j) v_jᵀ` and `φ_k(k_j)` (a decoder's layer with the learned
    /// map); the arguments as [`Self::attention`]'s.
    pub fn causal_attention(
        &self,
        q: &[f64],
        k: &[f64],
        v: &[f64],
        len: usize,
        dim: usize,
        dv: usize,
    ) -> Result<Vec<f64>, HedgehogError> {
        let (keys, queries) = self.checked_features((q, k, v), len, dim, dv)?;
        let m = 2 * self.half_features;
        let (mut state, mut key_sum) = (vec![0.0; m * dv], vec![0.0; m]);
        let mut output = vec![0.0; len * dv];
        let rows = keys.chunks_exact(m).zip(queries.chunks_exact(m));
        for (i, (psi, phi)) in rows.enumerate() {
            let value = &v[i * dv..(i + 1) * dv];
            for (f, &p) in psi.iter().enumerate() {
                key_sum[f] += p;
                axpy(&mut state[f * dv..(f + 1) * dv], p, value);
            }
            let out = &mut output[i * dv..(i + 1) * dv];
            for (f, &p) in phi.iter().enumerate() {
                axpy(out, p, &state[f * dv..(f + 1) * dv]);
            }
            let denominator = dot(phi, &key_sum);
            out.iter_mut().for_each(|o| *o /= denominator);
        }
        finite_output(output)
    }

    /// Multiply-adds of [`Self::attention`] at L tokens with values of `dv`: the projections
    /// `W x` of queries and keys (`2·L·n·d`), then the linear attention ratio over 2n features
    /// (`L·2n·(2dv + 2)`, as the other feature maps are counted).
    pub fn multiply_adds(&self, len: usize, dv: usize) -> f64 {
        let (l, n, d) = (len as f64, self.half_features as f64, self.dim as f64);
        2.0 * l * n * d + l * 2.0 * n * (2.0 * dv as f64 + 2.0)
    }
}

#[cfg(test)]
mod causal_tests;
#[cfg(test)]
mod tests;
