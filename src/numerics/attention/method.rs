//! What an attention method is ([`AttentionMethod`]), what it reads ([`MethodSettings`]), what a
//! draw of it returns ([`MethodRun`]), and [`MethodId`], the handle every other part of the lab
//! uses: the methods themselves are one file each in [`super::methods`], listed in its registry.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::numerics::estimators::{EstimatorId, EstimatorParams};
use crate::numerics::projections::couplings::Coupling;
use crate::numerics::rng::StreamRng;

use super::data::AttentionData;
use super::linear::ApproximateAttention;
use super::lln::LlnConstants;
use super::{AttentionError, Evaluation};

/// The settings a method may read (each method says which, [`AttentionMethod::parameters`]).
#[derive(Clone, Debug, PartialEq)]
pub struct MethodSettings {
    /// Random projections ω per draw (URL `features`).
    pub features: usize,
    /// How the rows of ω are drawn together (URL `coupling`).
    pub coupling: Coupling,
    /// The polynomial maps' degree n (URL `degree`).
    pub degree: usize,
    /// Randomized attention's samples ω per query (URL `ras`).
    pub ra_samples: usize,
    /// Nyström's landmarks c (URL `landmarks`; more than L are clamped to L at fit time).
    pub landmarks: usize,
    /// The sliding window's width w in keys (URL `window`; clamped to L at fit time).
    pub window: usize,
    /// The sparse + low-rank method's exact keys k per query (URL `topk`; clamped to L).
    pub top_k: usize,
    /// What a registry estimator reads when it fits (θ, the complex A's magnitudes).
    pub estimator_params: EstimatorParams,
    /// A deterministic map with more features than this is evaluated pair by pair instead.
    pub deterministic_feature_budget: usize,
}

/// What a method's fit may use beyond the data and the settings: constants fitted once for
/// the whole view (LLN's moment-matching constants, fitted only when LLN is chosen).
#[derive(Clone, Copy, Debug, Default)]
pub struct SharedFits<'a> {
    pub lln: Option<&'a LlnConstants>,
}

/// What a draw of a method reports besides its attention.
#[derive(Clone, Debug)]
pub struct MethodRun {
    pub attention: ApproximateAttention,
    /// Features per token (randomized attention: samples per query).
    pub feature_size: usize,
    pub evaluation: Evaluation,
    /// What was fitted, in words (A's range, α and β, the optimiser's iterations).
    pub note: String,
}

/// How a method approximates softmax attention: the page groups methods by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MethodFamily {
    /// A registry estimator's random features φ, ψ in the linear attention ratio.
    RandomFeatures,
    /// A deterministic feature map (Taylor, `(1 + x/n)^n`, LLN, `elu + 1`).
    Deterministic,
    /// Sampling from softmax's own rows (randomized attention): quadratic in L.
    Sampled,
    /// Attention-level approximations that are not one kernel estimator: a low-rank
    /// factorisation of P (Nyström), exact weights on a few keys plus a feature map for the
    /// rest (a sliding window, the top-k keys).
    SparseOrLowRank,
}

/// A method fitted to one problem, ready to be drawn as often as asked.
pub trait FittedMethod: Send + Sync {
    /// One draw (a fresh ω, or fresh samples, from `rng`), returning P̂'s `rows`.
    fn draw(
        &self,
        data: &AttentionData,
        settings: &MethodSettings,
        rng: &mut StreamRng,
        rows: &[usize],
    ) -> Result<MethodRun, AttentionError>;

    /// Its error as an estimator of the kernel `SM(q, k) = exp(q·k)` itself, on this problem's
    /// pairs: the mean over every (i, j) of the relative MSE `E[(k̂(q_i, k_j) − SM)²] / SM²`
    /// (a random map's formula for i.i.d. ω at `settings.features`; a deterministic map's
    /// squared relative error). `None` for a method that does not estimate SM (a map that
    /// approximates attention only up to each row's normaliser, or no kernel at all).
    fn kernel_relative_mse(
        &self,
        _data: &AttentionData,
        _settings: &MethodSettings,
    ) -> Option<f64> {
        None
    }
}

/// Everything about one way of computing an attention output. **A new method is one file in
/// [`super::methods`] implementing this and [`FitMethod`], plus one line in its registry.**
pub trait AttentionMethod: Send + Sync {
    /// The stable id: URL `methods=`, CSV, `--methods`, `data-method`.
    fn id(&self) -> &'static str;
    /// A short human-readable name.
    fn label(&self) -> &'static str;
    /// How it approximates softmax attention.
    fn family(&self) -> MethodFamily;
    /// The registry estimator behind it, for the methods that are one.
    fn estimator(&self) -> Option<EstimatorId> {
        None
    }
    /// The colour of its marks.
    fn colour(&self) -> [u8; 3];
    /// Its formula, in LaTeX.
    fn formula(&self) -> &'static str;
    /// Where it comes from.
    fn source(&self) -> &'static str;
    /// The URL keys of the settings it reads.
    fn parameters(&self) -> &'static [&'static str];
    /// Whether repeated draws differ (bias and variance apply).
    fn is_random(&self) -> bool;
    /// Whether it costs O(L²) by construction.
    fn is_quadratic(&self) -> bool {
        false
    }
    /// Whether it is exact softmax attention once its feature size reaches the sequence's
    /// length L (every token a landmark, every key exact).
    fn exact_at_full_length(&self) -> bool {
        false
    }
    /// Whether its fit needs LLN's moment-matching constants ([`SharedFits::lln`]).
    fn needs_lln_constants(&self) -> bool {
        false
    }
    /// Whether the equal-budget chart sweeps it over several feature sizes (two draws each).
    fn sweeps_budget(&self) -> bool {
        self.is_random()
    }
    /// Its cost in features per token at dimension d (`None` when that overflows).
    fn feature_size(&self, settings: &MethodSettings, d: usize) -> Option<usize>;
    /// Multiply-adds of one draw on an L-token problem with `tv_rows` rows of P̂ formed: the
    /// linear attention ratio over its features (and their projections), or O(L²) when it is
    /// evaluated pair by pair.
    fn work(
        &self,
        settings: &MethodSettings,
        (len, d, dv): (usize, usize, usize),
        tv_rows: usize,
    ) -> f64 {
        let (l, dv_f) = (len as f64, dv as f64);
        let quadratic = l * l * (d as f64 + dv_f);
        match self.feature_size(settings, d) {
            Some(size) if self.family() == MethodFamily::RandomFeatures => {
                let size = size as f64;
                self.projection_work(settings, len, d)
                    + l * size * (2.0 * dv_f + 1.0)
                    + tv_rows as f64 * l * size
            }
            Some(size) if size <= settings.deterministic_feature_budget => {
                let size = size as f64;
                l * size * (2.0 * dv_f + 2.0) + tv_rows as f64 * l * size
            }
            _ => quadratic,
        }
    }
    /// Multiply-adds of the projections that produce its features for L tokens, beyond
    /// forming the linear attention ratio (a random map's `ω·u`).
    fn projection_work(&self, _settings: &MethodSettings, _len: usize, _d: usize) -> f64 {
        0.0
    }
    /// The points of the equal-budget chart: the settings that give each feature size D.
    fn budget_points(
        &self,
        settings: &MethodSettings,
        d: usize,
        budgets: &[usize],
        max_samples: usize,
    ) -> Vec<(usize, MethodSettings)>;
}

/// What a worker does with a method: fit it to one problem. Apart from [`AttentionMethod`]
/// (what the page shows and plans with) because the page's module only describes methods: the
/// registry keeps one table of each (`super::methods`), and a page that never reaches this
/// table links no method's fit, no estimator's fit and no optimiser.
pub trait FitMethod: Send + Sync {
    /// Fits its parameters to `data` once (an estimator's A on the queries and keys, LLN's α
    /// and β, a polynomial map's evaluation route).
    fn fit(
        &self,
        data: &AttentionData,
        settings: &MethodSettings,
        shared: SharedFits<'_>,
    ) -> Result<Box<dyn FittedMethod>, AttentionError>;
}

/// The error of method `id`.
pub fn method_error(id: &str, message: impl fmt::Display) -> AttentionError {
    AttentionError::Method {
        method: id.to_string(),
        message: message.to_string(),
    }
}

/// One method of the registry ([`super::methods::all`]), by position; serialised as its id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MethodId(u16);

impl MethodId {
    /// Every method, in the page's order: the registry's estimators, then the others.
    pub fn all() -> impl Iterator<Item = MethodId> {
        (0..super::methods::count()).map(|i| MethodId(i as u16))
    }

    /// The registry's first method (the registry is never empty).
    pub fn first() -> MethodId {
        MethodId(0)
    }

    /// The method with this id.
    pub fn from_id(id: &str) -> Option<MethodId> {
        super::methods::all()
            .iter()
            .position(|m| m.id() == id)
            .map(|i| MethodId(i as u16))
    }

    /// Its registry entry.
    pub fn get(self) -> &'static dyn AttentionMethod {
        let all = super::methods::all();
        all[usize::from(self.0).min(all.len() - 1)]
    }

    /// Fits it to `data` (workers and the command line only: see [`FitMethod`]).
    pub fn fit(
        self,
        data: &AttentionData,
        settings: &MethodSettings,
        shared: SharedFits<'_>,
    ) -> Result<Box<dyn FittedMethod>, AttentionError> {
        let fits = super::methods::fits();
        fits[usize::from(self.0).min(fits.len() - 1)].fit(data, settings, shared)
    }

    /// The stable id.
    pub fn id(self) -> &'static str {
        self.get().id()
    }

    /// A short human-readable name.
    pub fn label(self) -> &'static str {
        self.get().label()
    }

    /// Whether repeated draws differ.
    pub fn is_random(self) -> bool {
        self.get().is_random()
    }

    /// Whether it costs O(L²) by construction.
    pub fn is_quadratic(self) -> bool {
        self.get().is_quadratic()
    }

    /// The colour of its marks.
    pub fn colour(self) -> [u8; 3] {
        self.get().colour()
    }

    /// Its formula, in LaTeX.
    pub fn formula(self) -> &'static str {
        self.get().formula()
    }

    /// Where it comes from.
    pub fn source(self) -> &'static str {
        self.get().source()
    }

    /// The registry estimator behind it, if it is one.
    pub fn estimator(self) -> Option<EstimatorId> {
        self.get().estimator()
    }

    /// The index of its draws' random stream: keyed by its id, so that adding a method
    /// anywhere in the registry changes no other method's numbers
    /// ([`super::methods::stream_index`]).
    pub fn stream_index(self) -> u64 {
        super::methods::stream_index(self.id())
    }
}

impl fmt::Debug for MethodId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MethodId({})", self.id())
    }
}

impl fmt::Display for MethodId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// As its id in text formats (JSON); as its position in binary ones (the worker messages,
/// between a page and workers of the same build), so that a worker that never describes a
/// method (the kernel view's) decodes a configuration without linking the registry's
/// descriptions.
impl Serialize for MethodId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.serialize_str(self.id())
        } else {
            serializer.serialize_u16(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for MethodId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if !deserializer.is_human_readable() {
            let index = u16::deserialize(deserializer)?;
            return (usize::from(index) < super::methods::count())
                .then_some(MethodId(index))
                .ok_or_else(|| {
                    serde::de::Error::custom(format!("no attention method at position {index}"))
                });
        }
        let id = String::deserialize(deserializer)?;
        MethodId::from_id(&id)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown attention method `{id}`")))
    }
}

/// The attention view's default methods (eight: the benchmark's case).
pub const DEFAULT_METHODS: [&str; 8] = [
    "prf-pos",
    "hcexp-var",
    "oprf-var",
    "rff",
    "taylor",
    "lln",
    "elu",
    "ra",
];

/// Every method id, comma-separated.
pub fn all_method_ids() -> String {
    MethodId::all()
        .map(MethodId::id)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_are_unique() {
        let ids: Vec<&str> = MethodId::all().map(MethodId::id).collect();
        let mut unique = ids.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), ids.len());
        for m in MethodId::all() {
            assert_eq!(MethodId::from_id(m.id()), Some(m));
        }
        for id in DEFAULT_METHODS {
            assert!(MethodId::from_id(id).is_some(), "{id}");
        }
        assert_eq!(MethodId::from_id("nope"), None);
    }
}
