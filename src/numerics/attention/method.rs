//! What an attention method is ([`AttentionMethod`]), what it reads ([`MethodSettings`]) and what
//! a draw of it returns ([`MethodRun`]). The methods themselves are one file each in
//! `super::methods`, listed in its registry with their handle `MethodId`; nothing here reads the
//! registry, so the methods' files and their registry import this module and not each other.

use std::fmt;

use crate::numerics::estimators::{EstimatorId, EstimatorParams};
use crate::numerics::projections::couplings::Coupling;
use crate::numerics::rng::StreamRng;

use super::data::AttentionData;
use super::linear::ApproximateAttention;
use super::lln::LlnConstants;
use super::long::FeatureMap32;
use super::{AttentionError, Evaluation};

/// The settings a method may read (each method says which, [`MethodInfo::parameters`]).
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

    /// One draw's feature map in the long-sequence kernels' f32 form, with ω drawn from `rng`
    /// as [`FittedMethod::draw`] draws it, for queries and keys of dimension `d`. `None` for a
    /// method that is not linear attention with a batched map (then the length study says so).
    fn batched_map(
        &self,
        _d: usize,
        _settings: &MethodSettings,
        _rng: &mut StreamRng,
    ) -> Option<Result<FeatureMap32, AttentionError>> {
        None
    }
}

/// What the page, the command line and the view's plan read about a method without computing
/// with it: one const record in each method's file (`elu::ELU_INFO`), returned by
/// [`AttentionMethod::info`] and read by its getters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MethodInfo {
    /// The stable id: URL `methods=`, CSV, `--methods`, `data-method`.
    pub id: &'static str,
    /// A short human-readable name.
    pub label: &'static str,
    /// How it approximates softmax attention.
    pub family: MethodFamily,
    /// The colour of its marks.
    pub colour: [u8; 3],
    /// Its formula, in LaTeX (a raw string `r"…"` in the method's file, where build.rs finds it
    /// and renders it to MathML).
    pub formula: &'static str,
    /// Where it comes from.
    pub source: &'static str,
    /// The URL keys of the settings it reads.
    pub parameters: &'static [&'static str],
    /// Whether repeated draws differ (bias and variance apply).
    pub is_random: bool,
    /// Whether it costs O(L²) by construction.
    pub is_quadratic: bool,
    /// Whether it is exact softmax attention once its feature size reaches the sequence's
    /// length L (every token a landmark, every key exact).
    pub exact_at_full_length: bool,
    /// Whether its fit needs LLN's moment-matching constants ([`SharedFits::lln`]).
    pub needs_lln_constants: bool,
    /// Whether the equal-budget chart sweeps it over several feature sizes (two draws each).
    pub sweeps_budget: bool,
}

/// Everything about one way of computing an attention output. **A new method is one file in
/// [`super::methods`] implementing this and [`FitMethod`], plus one line in its registry.**
///
/// What it is, it declares once, in its [`MethodInfo`]; the getters read that record and are
/// not overridden. What depends on the settings (its size, work and budget points) it computes.
pub trait AttentionMethod: Send + Sync {
    /// Its description.
    fn info(&self) -> &MethodInfo;
    /// [`MethodInfo::id`].
    fn id(&self) -> &'static str {
        self.info().id
    }
    /// [`MethodInfo::label`].
    fn label(&self) -> &'static str {
        self.info().label
    }
    /// [`MethodInfo::family`].
    fn family(&self) -> MethodFamily {
        self.info().family
    }
    /// The registry estimator behind it, for the methods that are one.
    fn estimator(&self) -> Option<EstimatorId> {
        None
    }
    /// [`MethodInfo::colour`].
    fn colour(&self) -> [u8; 3] {
        self.info().colour
    }
    /// [`MethodInfo::formula`].
    fn formula(&self) -> &'static str {
        self.info().formula
    }
    /// [`MethodInfo::source`].
    fn source(&self) -> &'static str {
        self.info().source
    }
    /// [`MethodInfo::parameters`].
    fn parameters(&self) -> &'static [&'static str] {
        self.info().parameters
    }
    /// [`MethodInfo::is_random`].
    fn is_random(&self) -> bool {
        self.info().is_random
    }
    /// [`MethodInfo::is_quadratic`].
    fn is_quadratic(&self) -> bool {
        self.info().is_quadratic
    }
    /// [`MethodInfo::exact_at_full_length`].
    fn exact_at_full_length(&self) -> bool {
        self.info().exact_at_full_length
    }
    /// [`MethodInfo::needs_lln_constants`].
    fn needs_lln_constants(&self) -> bool {
        self.info().needs_lln_constants
    }
    /// [`MethodInfo::sweeps_budget`].
    fn sweeps_budget(&self) -> bool {
        self.info().sweeps_budget
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
