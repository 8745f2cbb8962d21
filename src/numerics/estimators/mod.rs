//! Every random-feature estimator of the softmax kernel `SM(x, y) = exp(x·y)`, one file each,
//! and the registry that lists them.
//!
//! An estimator states everything about itself through [`Estimator`]: its id (URL, CLI, CSV,
//! `data-estimator`), label, colour, formula and source, how it fits its parameters to a
//! dataset ([`Fit`]: a diagonal A, an angle θ, GERF's α, an optimiser's report), its estimate
//! of one pair, its explicit feature maps φ(x) and ψ(y), its MSE formula and which of the page's
//! bounds hold for it. The page, the workers, the command line and the statistical harness
//! (`tests/estimators.rs`) iterate [`REGISTRY`]; nothing else names an estimator. **Adding one
//! is one new file here plus one line in [`REGISTRY`].**
//!
//! **One pair, one projection.** For a single pair every estimator here collapses to
//! `ŜM = exp(prefactor) · (1/m) · Σ_k g(ω_k·z)` for one or two vectors z per pair
//! ([`Estimator::collapse`]) and a sum [`FastSum`] (`exp`, `cosh`, `cos`, …): the f32 simd128
//! kernel ([`super::kernel`]) projects z for blocks of pairs that share ω, and
//! [`reduce`] forms the sum in the log domain. [`reference_estimate`] is the same in f64, for
//! tests and the command line.
//!
//! **Signed log magnitudes.** Estimates are [`SignedLog`]s: trigonometric features and a
//! complex A can go negative, and `exp(x·y)` overflows f64 beyond `x·y = 709`.

use crate::numerics::portable::Libm;
pub mod cexp;
pub mod complex;
pub mod gerf;
pub mod optimised;
pub mod rff;

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::dataset::{Dataset, SampleMoments};
use super::heuristics::AHeuristic;
use super::logspace::{SignedLog, log_sum_cosh, log_sum_exp};
pub use super::projections::{EstimatorError, Projections};

/// Which feature map turns the projections into an estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FeatureForm {
    /// `exp(ω·u)` features: PRF `+`, CEXP. Sum term `exp(ω_k·z)`.
    Positive,
    /// `[exp(ω·u), exp(-ω·u)]/sqrt(2)` features: PRF `hyp+`, HCEXP. Sum term `cosh(ω_k·z)`.
    Hyperbolic,
}

/// The family an estimator belongs to (the first level of the page's grouped list).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// Performer's positive random features (A = I).
    Prf,
    /// Complex exponential features with a real diagonal A (seed paper).
    Cexp,
    /// Trigonometric random Fourier features.
    Trigonometric,
    /// A complex diagonal A = e^{iθ} diag(a).
    Complex,
    /// Generalized exponential features (GERF) with OPRF's α.
    Gerf,
}

impl Family {
    /// Every family, in the page's order.
    pub const ALL: [Family; 5] = [
        Family::Prf,
        Family::Cexp,
        Family::Trigonometric,
        Family::Complex,
        Family::Gerf,
    ];

    /// The family's name on the page.
    pub fn label(self) -> &'static str {
        match self {
            Family::Prf => "PRF (Performer, A = I)",
            Family::Cexp => "CEXP / HCEXP (real diagonal A)",
            Family::Trigonometric => "Trigonometric (random Fourier features)",
            Family::Complex => "Complex diagonal A = e^(iθ)·diag(a)",
            Family::Gerf => "GERF with OPRF's α*",
        }
    }
}

/// The words the page shows beside an estimator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Docs {
    /// The estimate of one pair, as a formula.
    pub formula: &'static str,
    /// One line on what to notice in its charts.
    pub notice: &'static str,
    /// Where it comes from.
    pub source: &'static str,
}

/// Which of the seed paper's bounds hold for an estimator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Lemma 3.2 (corrected) and Theorem 3.3: hyperbolic features with a real diagonal A.
    pub hyperbolic_real_a: bool,
}

impl Bounds {
    /// No bound of the seed paper applies.
    pub const NONE: Bounds = Bounds {
        hyperbolic_real_a: false,
    };
}

/// The page's parameters that some estimators read when they fit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct EstimatorParams {
    /// The angle θ of the complex A `e^{iθ}·diag(a)`, from 0 (real A) to π/2.
    pub theta: f64,
    /// How the complex A's magnitudes `a` are chosen.
    pub complex_a: AHeuristic,
}

impl Default for EstimatorParams {
    fn default() -> Self {
        Self {
            theta: std::f64::consts::FRAC_PI_4,
            complex_a: AHeuristic::Identity,
        }
    }
}

/// What an optimiser of A reports (shown in the results table).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct OptimiserReport {
    pub iterations: usize,
    /// `ln` of the objective (mean relative MSE · m) at the variance-adjusted start.
    pub log_objective_start: f64,
    /// `ln` of the objective at the optimum.
    pub log_objective_end: f64,
}

/// The parameters an estimator fitted to one dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    /// The diagonal of A (its magnitudes for a complex A; ones where A = I).
    pub a: Vec<f64>,
    /// Entries of `a` that had to be clamped into `[A_MIN, A_MAX]`.
    pub clamped: usize,
    /// The angle of a complex A (0 for a real one).
    pub theta: f64,
    /// GERF's α (0 for the others).
    pub alpha: f64,
    /// Present when A came from an optimiser.
    pub optimiser: Option<OptimiserReport>,
}

impl Fit {
    /// `A = I` of dimension d, nothing else fitted.
    pub fn identity(d: usize) -> Self {
        Self::diagonal(vec![1.0; d], 0)
    }

    /// A real diagonal A.
    pub fn diagonal(a: Vec<f64>, clamped: usize) -> Self {
        Self {
            a,
            clamped,
            theta: 0.0,
            alpha: 0.0,
            optimiser: None,
        }
    }
}

/// An estimator's MSE formula against one of its parameters, averaged over a dataset's pairs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParameterSweep {
    /// The parameter's name and URL key, for the chart (`θ`, `theta`).
    pub parameter: String,
    pub key: String,
    /// The parameter's values, increasing.
    pub values: Vec<f64>,
    /// `ln` of the mean over the pairs of the MSE formula at each value, for `m = 1` (the MSE
    /// of m features is this divided by m).
    pub log_mean_mse_one_feature: Vec<f64>,
    /// `ln` of the median over the pairs, for `m = 1`: the typical pair, where the mean is
    /// ruled by a few pairs with huge MSE.
    pub log_median_mse_one_feature: Vec<f64>,
    /// The value in use.
    pub current: f64,
}

/// The data an estimator fits to: a dataset and its component-wise moments.
#[derive(Clone, Copy, Debug)]
pub struct FitInput<'a> {
    pub data: &'a Dataset,
    pub moments: &'a SampleMoments,
}

/// How the terms `g(ω_k·z)` of one pair are summed (the kernel's and [`reduce`]'s paths).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FastSum {
    /// `Σ exp(t_k)`.
    Exp,
    /// `Σ cosh(t_k)`.
    Cosh,
    /// `Σ cos(t_k)`: signed.
    Cos,
    /// `Σ exp(scale·t_k + norm_weight·|ω_k|²)` (GERF, positive).
    ScaledExp { scale: f64, norm_weight: f64 },
    /// Two projections `u_k`, `v_k` per pair (a complex A): `Σ exp(c·u_k)·cos(s·v_k − φ)`,
    /// or with `hyperbolic` its mean with `ω → −ω`; `φ` is the pair's [`Collapsed::phase`].
    Complex {
        cos_theta: f64,
        sin_theta: f64,
        hyperbolic: bool,
    },
}

impl FastSum {
    /// Whether the sum can be negative.
    pub fn is_signed(self) -> bool {
        matches!(self, FastSum::Cos | FastSum::Complex { .. })
    }
}

/// One pair reduced to what multiplies the sum: `ŜM = exp(log_prefactor) · (1/m) · Σ_k …`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Collapsed {
    pub log_prefactor: f64,
    /// The phase `φ` of a complex A's cosine (0 otherwise).
    pub phase: f64,
}

/// Which side a feature map is for: queries x get φ, keys y get ψ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Query,
    Key,
}

/// What the page shows and plans with about an estimator, and nothing it computes: the
/// page's module links only this half ([`DESCRIPTIONS`]), so that no `fit` (argmin's L-BFGS
/// for the optimised A) stays reachable through a vtable the page uses for labels and colours.
pub trait Describe: Send + Sync {
    /// The stable id: URL `est=`, `data-estimator`, CSV, `--estimator`.
    fn id(&self) -> &'static str;
    /// A short human-readable name.
    fn label(&self) -> &'static str;
    /// The grouped list's family.
    fn family(&self) -> Family;
    /// The colour of its charts (colour-blind-safe palette, Okabe–Ito and Tol).
    fn colour(&self) -> [u8; 3];
    /// Formula, what to notice, source.
    fn docs(&self) -> Docs;
    /// The same estimator with the other feature form (positive ↔ hyperbolic), if any: the
    /// legacy URL key `hyp` maps through it.
    fn twin(&self) -> Option<&'static str> {
        None
    }
    /// Whether its features come in `(ω, −ω)` pairs (the hyperbolic form, `2m` features).
    fn is_hyperbolic(&self) -> bool {
        false
    }
    /// The page parameters its fit reads, as text (part of the task keys, so changing θ
    /// recomputes only the estimators that read it). Empty when it reads none.
    fn parameter_key(&self, _params: &EstimatorParams) -> String {
        String::new()
    }
    /// How many vectors z one pair projects (1, or 2 for a complex A).
    fn projections_per_pair(&self) -> usize {
        1
    }
    /// Which of the seed paper's bounds hold.
    fn bounds(&self) -> Bounds {
        Bounds::NONE
    }
    /// Multiply-adds per pair and projection relative to one projection of z (for the work
    /// estimate and the budget).
    fn cost_factor(&self) -> f64 {
        self.projections_per_pair() as f64
    }
    /// Whether its estimate depends on more than `t = ω·z ~ N(0, |z|²)` of one z (GERF's
    /// `|ω|²` weights, a complex A's two projections): the probe then draws the full ω.
    fn draws_full_omega(&self) -> bool {
        false
    }
    /// Whether its fit runs the optimiser (argmin's L-BFGS), which only builds with the feature
    /// `optimised-a` have: `kernel-worker`, the first view's worker, leaves it out, and the
    /// page computes a configuration with such an estimator in `full-worker`.
    fn needs_optimiser(&self) -> bool {
        false
    }
    /// Features per projection ω ([`Estimator::features`] has `m` times this many): 1
    /// (positive), 2 (hyperbolic `±ω`, or the cos and sin of RFF), 4 (a complex A's hyperbolic
    /// features, real and imaginary parts).
    fn features_per_projection(&self) -> usize {
        if self.is_hyperbolic() { 2 } else { 1 }
    }
}

/// Everything the lab computes with an estimator of `SM(x, y)` (the workers, the command
/// line and the tests; never the page), on top of its [`Describe`] half.
pub trait Estimator: Describe {
    /// Its parameters, fitted to one dataset.
    fn fit(&self, input: FitInput<'_>, params: &EstimatorParams) -> Result<Fit, EstimatorError>;
    /// How the projections are summed.
    fn fast_sum(&self, fit: &Fit) -> FastSum;
    /// Writes the pair's `projections_per_pair` vectors z (each of length d, one after the
    /// other) into `z` and returns the prefactor.
    fn collapse(&self, fit: &Fit, x: &[f64], y: &[f64], z: &mut [f64]) -> Collapsed;
    /// `ln` of the MSE of one pair with `m` i.i.d. projections, where a formula exists.
    fn log_mse(&self, fit: &Fit, x: &[f64], y: &[f64], m: usize) -> Option<f64>;
    /// The explicit real feature map: `features(x, Query) · features(y, Key)` is the estimate
    /// with the same ω (complex features stacked as real and imaginary parts).
    fn features(&self, fit: &Fit, u: &[f64], side: Side, omega: &Projections) -> Vec<f64>;
    /// Its MSE formula against one of its parameters on a dataset (θ for a complex A), for
    /// the page's sweep chart. `None` for estimators without such a parameter.
    fn parameter_sweep(&self, _fit: &Fit, _data: &Dataset) -> Option<ParameterSweep> {
        None
    }
}

/// Both tables from one list, in the same order: [`REGISTRY`] (compute) and
/// [`DESCRIPTIONS`] (what the page shows).
macro_rules! registry {
    ($($estimator:path),* $(,)?) => {
        /// Every estimator, in the page's order.
        pub static REGISTRY: &[&dyn Estimator] = &[$(&$estimator),*];
        /// The same estimators' [`Describe`] halves, in the same order: what the page uses.
        pub static DESCRIPTIONS: &[&dyn Describe] = &[$(&$estimator),*];
    };
}

// Every estimator, in the page's order. **One line per estimator.**
registry![
    cexp::PRF_POSITIVE,
    cexp::PRF_HYPERBOLIC,
    cexp::CEXP_MEAN,
    cexp::CEXP_VARIANCE,
    cexp::HCEXP_MEAN,
    cexp::HCEXP_VARIANCE,
    optimised::HCEXP_OPTIMISED,
    rff::RFF,
    complex::COMPLEX_POSITIVE,
    complex::COMPLEX_HYPERBOLIC,
    gerf::OPRF,
    gerf::OPRF_VARIANCE,
];

/// An estimator of [`REGISTRY`], by position; serialised as its id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EstimatorId(u8);

impl EstimatorId {
    /// Every estimator, in registry order.
    pub fn all() -> impl Iterator<Item = EstimatorId> {
        (0..DESCRIPTIONS.len()).map(|i| EstimatorId(i as u8))
    }

    /// The estimator with this id.
    pub fn from_id(id: &str) -> Option<EstimatorId> {
        DESCRIPTIONS
            .iter()
            .position(|e| e.id() == id)
            .map(|i| EstimatorId(i as u8))
    }

    /// Its registry entry, to compute with (never on the page: see [`Describe`]).
    pub fn get(self) -> &'static dyn Estimator {
        REGISTRY[usize::from(self.0).min(REGISTRY.len() - 1)]
    }

    /// What the page shows and plans with.
    pub fn info(self) -> &'static dyn Describe {
        DESCRIPTIONS[usize::from(self.0).min(DESCRIPTIONS.len() - 1)]
    }

    /// Its stable id.
    pub fn id(self) -> &'static str {
        self.info().id()
    }

    /// Its label.
    pub fn label(self) -> &'static str {
        self.info().label()
    }

    /// Its position in [`REGISTRY`].
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

impl fmt::Debug for EstimatorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EstimatorId({})", self.id())
    }
}

impl fmt::Display for EstimatorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl Serialize for EstimatorId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

impl<'de> Deserialize<'de> for EstimatorId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = String::deserialize(deserializer)?;
        EstimatorId::from_id(&id)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown estimator `{id}`")))
    }
}

/// Every id, comma-separated (for messages and usage text).
pub fn all_ids() -> String {
    DESCRIPTIONS
        .iter()
        .map(|e| e.id())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `Σ_k g(t_k)` of one pair in the log domain, from its projections: `t` (and `v`, the
/// second projection of a complex A), `norms` the `|ω_k|²` (read only by GERF), `phase` the
/// pair's [`Collapsed::phase`].
pub fn reduce(sum: FastSum, t: &[f64], v: &[f64], norms: &[f64], phase: f64) -> SignedLog {
    match sum {
        FastSum::Exp => SignedLog::positive(log_sum_exp(t)),
        FastSum::Cosh => SignedLog::positive(log_sum_cosh(t)),
        FastSum::Cos => SignedLog::from_value(t.iter().map(|t| t.libm_cos()).sum()),
        FastSum::ScaledExp { scale, norm_weight } => {
            let terms = t
                .iter()
                .zip(norms)
                .map(|(t, n)| scale * t + norm_weight * n);
            let max = terms.clone().fold(f64::NEG_INFINITY, f64::max);
            if !max.is_finite() {
                return SignedLog::positive(max);
            }
            SignedLog::positive(max + terms.map(|l| (l - max).libm_exp()).sum::<f64>().libm_ln())
        }
        FastSum::Complex {
            cos_theta,
            sin_theta,
            hyperbolic,
        } => {
            let max = t
                .iter()
                .map(|u| {
                    let r = cos_theta * u;
                    if hyperbolic { r.abs() } else { r }
                })
                .fold(f64::NEG_INFINITY, f64::max);
            if !max.is_finite() {
                return SignedLog::positive(max);
            }
            let sum: f64 = t
                .iter()
                .zip(v)
                .map(|(u, v)| {
                    let (r, i) = (cos_theta * u, sin_theta * v);
                    let up = (r - max).libm_exp() * (i - phase).libm_cos();
                    if hyperbolic {
                        0.5 * (up + (-r - max).libm_exp() * (-i - phase).libm_cos())
                    } else {
                        up
                    }
                })
                .sum();
            SignedLog::from_value(sum).scaled(max)
        }
    }
}

/// The estimate of one pair in f64 with the given projections: [`Estimator::collapse`], one
/// f64 projection of each z, [`reduce`]. The f32 kernel is checked against it.
pub fn reference_estimate(
    estimator: &dyn Estimator,
    fit: &Fit,
    x: &[f64],
    y: &[f64],
    omega: &Projections,
) -> Result<SignedLog, EstimatorError> {
    let d = omega.d();
    for len in [x.len(), y.len(), fit.a.len()] {
        if len != d {
            return Err(EstimatorError::DimensionMismatch {
                expected: d,
                got: len,
            });
        }
    }
    let count = estimator.projections_per_pair();
    let mut z = vec![0.0; count * d];
    let collapsed = estimator.collapse(fit, x, y, &mut z);
    let m = omega.m();
    let mut t = vec![0.0; m];
    let mut v = vec![0.0; if count > 1 { m } else { 0 }];
    omega.project(&z[..d], &mut t);
    if count > 1 {
        omega.project(&z[d..2 * d], &mut v);
    }
    let sum = estimator.fast_sum(fit);
    let norms = match sum {
        FastSum::ScaledExp { .. } => omega.squared_norms(),
        _ => Vec::new(),
    };
    Ok(reduce(sum, &t, &v, &norms, collapsed.phase)
        .scaled(collapsed.log_prefactor - (m as f64).libm_ln()))
}

/// `z = Ax + A^-T y` for a real diagonal A, and `|Ax|² + |A^-T y|²`.
pub fn transform(x: &[f64], y: &[f64], a: &[f64], z: &mut [f64]) -> f64 {
    let mut squared_norms = 0.0;
    for (((zi, xi), yi), ai) in z.iter_mut().zip(x).zip(y).zip(a) {
        let ax = ai * xi;
        let by = yi / ai;
        *zi = ax + by;
        squared_norms += ax * ax + by * by;
    }
    squared_norms
}

/// The vector a feature map sees: `a∘x` for a query, `y/a` for a key (`A` and `A^-T` of a
/// diagonal A; a complex A applies its phase on top).
pub fn transformed_side(a: &[f64], u: &[f64], side: Side) -> Vec<f64> {
    match side {
        Side::Query => u.iter().zip(a).map(|(u, a)| a * u).collect(),
        Side::Key => u.iter().zip(a).map(|(u, a)| u / a).collect(),
    }
}

/// `u · v`.
pub fn dot(u: &[f64], v: &[f64]) -> f64 {
    u.iter().zip(v).map(|(p, q)| p * q).sum()
}

/// `log SM(x, y) = x·y`.
pub fn log_softmax_kernel(x: &[f64], y: &[f64]) -> f64 {
    dot(x, y)
}

/// `log` of Lemma 3.1's MSE for one pair from `s = |Ax + A^-T y|²` and `log SM(x, y)`:
/// positive form `(1/m) e^{s} SM² (1 − e^{−s})`, hyperbolic form
/// `(1/2m) e^{s} SM² (1 − e^{−s})²` (REFERENCE.md, MSE column; PRF is `A = I`).
/// `-inf` when `z = 0` (the estimator is then exact).
pub fn log_theoretical_mse_of(s: f64, log_sm: f64, form: FeatureForm, m: usize) -> f64 {
    let log_one_minus = super::logspace::log_one_minus_exp_neg(s);
    let log_sm_squared = 2.0 * log_sm;
    match form {
        FeatureForm::Positive => -(m as f64).libm_ln() + s + log_sm_squared + log_one_minus,
        FeatureForm::Hyperbolic => {
            -((2 * m) as f64).libm_ln() + s + log_sm_squared + 2.0 * log_one_minus
        }
    }
}

/// Lemma 3.1 for a real diagonal `a` (see [`log_theoretical_mse_of`]).
pub fn log_theoretical_mse(x: &[f64], y: &[f64], a: &[f64], form: FeatureForm, m: usize) -> f64 {
    let mut z = vec![0.0; x.len()];
    transform(x, y, a, &mut z);
    log_theoretical_mse_of(dot(&z, &z), log_softmax_kernel(x, y), form, m)
}

/// Positive (or, with `hyperbolic`, the `[exp(ω·w), exp(−ω·w)]` pair of) features of a
/// transformed vector `w`: `scale · exp(−|w|²/2 + log_extra) · exp(±ω_k·w)`, with
/// `scale = m^{-1/2}` (positive) or `(2m)^{-1/2}` (hyperbolic). Shared by the real-A and GERF
/// feature maps.
pub fn exponential_features(
    w: &[f64],
    omega: &Projections,
    hyperbolic: bool,
    ln_extra: &dyn Fn(usize) -> f64,
    projection_scale: f64,
) -> Vec<f64> {
    let m = omega.m();
    let mut t = vec![0.0; m];
    omega.project(w, &mut t);
    let half_norm = 0.5 * dot(w, w);
    let ln_scale = if hyperbolic {
        -0.5 * ((2 * m) as f64).libm_ln()
    } else {
        -0.5 * (m as f64).libm_ln()
    };
    let mut out = Vec::with_capacity(if hyperbolic { 2 * m } else { m });
    for (k, tk) in t.iter().enumerate() {
        out.push((ln_scale - half_norm + ln_extra(k) + projection_scale * tk).libm_exp());
    }
    if hyperbolic {
        for (k, tk) in t.iter().enumerate() {
            out.push((ln_scale - half_norm + ln_extra(k) - projection_scale * tk).libm_exp());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_round_trip() {
        let mut ids: Vec<&str> = REGISTRY.iter().map(|e| e.id()).collect();
        for id in EstimatorId::all() {
            assert_eq!(EstimatorId::from_id(id.id()), Some(id));
            let json = serde_json::to_string(&id).unwrap();
            assert_eq!(serde_json::from_str::<EstimatorId>(&json).unwrap(), id);
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), REGISTRY.len());
        assert!(EstimatorId::from_id("nope").is_none());
    }

    #[test]
    fn descriptions_match_what_the_estimators_compute() {
        assert_eq!(DESCRIPTIONS.len(), REGISTRY.len());
        let omega = Projections::zeroed(3, 2).unwrap();
        for (info, estimator) in DESCRIPTIONS.iter().zip(REGISTRY) {
            assert_eq!(info.id(), estimator.id());
            let fit = Fit::identity(2);
            let features = estimator.features(&fit, &[0.1, 0.2], Side::Query, &omega);
            assert_eq!(
                features.len(),
                3 * info.features_per_projection(),
                "{}",
                info.id()
            );
            let one_gaussian = estimator.projections_per_pair() == 1
                && matches!(
                    estimator.fast_sum(&fit),
                    FastSum::Exp | FastSum::Cosh | FastSum::Cos
                );
            assert_eq!(info.draws_full_omega(), !one_gaussian, "{}", info.id());
        }
    }

    #[test]
    fn twins_point_back() {
        for e in REGISTRY {
            if let Some(twin) = e.twin() {
                let other = EstimatorId::from_id(twin)
                    .expect("twin is registered")
                    .get();
                assert_eq!(other.twin(), Some(e.id()));
            }
        }
    }

    #[test]
    fn reduce_matches_direct_sums() {
        let t: [f64; 3] = [0.3, -1.2, 2.0];
        let v: [f64; 3] = [0.7, 0.1, -0.4];
        let n: [f64; 3] = [1.5, 0.5, 2.5];
        let direct = |f: &dyn Fn(usize) -> f64| (0..3).map(f).sum::<f64>();
        let cases: Vec<(FastSum, f64)> = vec![
            (FastSum::Exp, direct(&|k| t[k].libm_exp())),
            (FastSum::Cosh, direct(&|k| t[k].libm_cosh())),
            (FastSum::Cos, direct(&|k| t[k].libm_cos())),
            (
                FastSum::ScaledExp {
                    scale: 0.8,
                    norm_weight: -0.1,
                },
                direct(&|k| (0.8 * t[k] - 0.1 * n[k]).libm_exp()),
            ),
            (
                FastSum::Complex {
                    cos_theta: 0.6,
                    sin_theta: 0.8,
                    hyperbolic: false,
                },
                direct(&|k| (0.6 * t[k]).libm_exp() * (0.8 * v[k] - 0.3).libm_cos()),
            ),
            (
                FastSum::Complex {
                    cos_theta: 0.6,
                    sin_theta: 0.8,
                    hyperbolic: true,
                },
                direct(&|k| {
                    0.5 * ((0.6 * t[k]).libm_exp() * (0.8 * v[k] - 0.3).libm_cos()
                        + (-0.6 * t[k]).libm_exp() * (-0.8 * v[k] - 0.3).libm_cos())
                }),
            ),
        ];
        for (sum, expected) in cases {
            let got = reduce(sum, &t, &v, &n, 0.3).value();
            assert!(
                (got - expected).abs() < 1e-12 * expected.abs().max(1.0),
                "{sum:?}"
            );
        }
    }
}
