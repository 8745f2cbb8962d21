//! Every random-feature estimator of the softmax kernel `SM(x, y) = exp(x·y)`, one file each,
//! and the registry that lists them.
//!
//! An estimator states everything about itself through [`Estimator`]: its id (URL, CLI, CSV,
//! `data-estimator`), label, colour, formula and source, how it fits its parameters to a
//! dataset ([`Fit`]: a diagonal A or a dense P, an angle θ, GERF's α, an optimiser's report), its estimate
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
//! **Signed log magnitudes.** Estimates are [`SignedLog`](crate::numerics::logspace::SignedLog)s:
//! trigonometric features and a complex A can go negative, and `exp(x·y)` overflows f64 beyond
//! `x·y = 709`.
//!
//! This file holds the two traits and the registry; what they share is re-exported from here:
//! [`Fit`] and its inputs (`fit.rs`), [`FastSum`], [`reduce`] and [`reference_estimate`]
//! (`sum.rs`), the feature maps' pieces (`feature_maps.rs`), [`EstimatorId`] (`id.rs`), and
//! Lemma 3.1's [`FeatureForm`], [`transform`] and MSE from [`crate::numerics::theory::lemma_3_1`].

pub mod cexp;
pub mod complex;
pub mod dense;
pub mod derf;
mod feature_maps;
mod fit;
pub mod gerf;
mod id;
pub mod optimised;
pub mod rff;
mod sum;
#[cfg(test)]
mod tests;

pub use super::projections::{EstimatorError, Projections};
pub use crate::numerics::theory::lemma_3_1::{
    FeatureForm, dot, log_softmax_kernel, log_theoretical_mse, log_theoretical_mse_of, transform,
};
pub use feature_maps::{
    BatchedForm, Side, exponential_features, exponential_offsets, transformed_side,
};
pub use fit::{
    DenseTransform, EstimatorParams, Fit, FitInput, OptimiserReport, ParameterSweep,
    off_diagonal_share,
};
pub use id::{EstimatorId, all_ids};
pub use sum::{Collapsed, FastSum, reduce, reference_estimate};

use crate::numerics::dataset::Dataset;

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
    /// Dense-exponential features with a dense P and `A_ω = αI`.
    Derf,
}

impl Family {
    /// Every family, in the page's order.
    pub const ALL: [Family; 6] = [
        Family::Prf,
        Family::Cexp,
        Family::Trigonometric,
        Family::Complex,
        Family::Gerf,
        Family::Derf,
    ];

    /// The family's name on the page.
    pub fn label(self) -> &'static str {
        match self {
            Family::Prf => "PRF (Performer, A = I)",
            Family::Cexp => "CEXP / HCEXP (real diagonal A)",
            Family::Trigonometric => "Trigonometric (random Fourier features)",
            Family::Complex => "Complex diagonal A = e^(iθ)·diag(a)",
            Family::Gerf => "GERF with OPRF's α*",
            Family::Derf => "DERF: dense P, A_ω = αI",
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
    /// Formula, what to notice, source. Only in the builds that show it (the page, the
    /// command line, native code: `build.rs`'s `estimator_prose`), not in the workers.
    #[cfg(estimator_prose)]
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
    /// [`Estimator::log_mse`] of a pair already collapsed: `z` as [`Estimator::collapse`]
    /// wrote it and `log_true` its [`log_softmax_kernel`], bit for bit `log_mse`'s value. The
    /// kernel's pairs know both, and a formula that reads only them (the real diagonal A's)
    /// skips recomputing them at each m.
    fn log_mse_collapsed(
        &self,
        fit: &Fit,
        (x, y): (&[f64], &[f64]),
        _collapsed: (&[f64], f64),
        m: usize,
    ) -> Option<f64> {
        self.log_mse(fit, x, y, m)
    }
    /// The explicit real feature map: `features(x, Query) · features(y, Key)` is the estimate
    /// with the same ω (complex features stacked as real and imaginary parts).
    fn features(&self, fit: &Fit, u: &[f64], side: Side, omega: &Projections) -> Vec<f64>;
    /// The same map in the shape a kernel computing it for many tokens at once needs (the
    /// long-sequence attention kernels); `None` for a map of another shape (complex A, a dense P).
    fn batched_form(&self, _fit: &Fit, _omega: &Projections) -> Option<BatchedForm> {
        None
    }
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
    dense::DERF_DENSE,
    dense::HDERF_DENSE,
    dense::DERF_FIT,
    dense::HDERF_FIT,
];
