//! [`ExperimentConfig`]: every value an experiment and the attention view depend on, its
//! defaults (the seed paper's section 4), its work and memory.
use serde::{Deserialize, Serialize};

use super::attention::{AttentionSettings, View};

use crate::numerics::dataset::{DatasetError, DatasetParams};
use crate::numerics::estimators::{EstimatorId, EstimatorParams};
use crate::numerics::heuristics::AHeuristic;
use crate::numerics::projections::couplings::Coupling;

/// Whether the projections ω are shared by all pairs of a dataset or drawn afresh per pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OmegaMode {
    /// One set of ω per dataset, as linear attention uses it (the default).
    Shared,
    /// Fresh ω for every pair, as the seed author's notebook does; same expected MSE.
    Fresh,
}

/// Everything an experiment depends on. Defaults are the seed paper's section 4.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentConfig {
    /// Dimension of queries and keys.
    pub d: usize,
    /// Number of random projections ω (a hyperbolic estimator has 2m features).
    pub m: usize,
    /// Pairs in the scatter dataset (Figure 1).
    pub n: usize,
    /// Number of boxplot datasets (Figures 2 and 3).
    pub datasets: usize,
    /// Pairs per boxplot dataset.
    pub pairs: usize,
    /// Seed of every random draw.
    pub seed: u64,
    /// Laplace scale b of the component means. The default 0.02 reads the paper's
    /// "Laplace(0, 50)" as rate 50 (scale 1/50): only that reading reproduces its Figures 1–3
    /// (see README, "The Laplace parameter"); `scale=50` gives the scale reading.
    pub mean_scale: f64,
    /// The query means' own Laplace scale `b_x`, set apart from `b` (`None`: `b`).
    #[serde(default)]
    pub x_mean_scale: Option<f64>,
    /// The key means' own Laplace scale `b_y`, set apart from `b` (`None`: `b`).
    #[serde(default)]
    pub y_mean_scale: Option<f64>,
    /// Gamma shape of the query variances.
    pub x_shape: f64,
    /// Gamma shape of the key variances.
    pub y_shape: f64,
    /// Target mean norm of the queries.
    pub x_norm: f64,
    /// Target mean norm of the keys.
    pub y_norm: f64,
    /// Which estimators to run ([`crate::numerics::estimators::REGISTRY`] order, no repeats, at least
    /// one).
    pub estimators: Vec<EstimatorId>,
    /// The angle θ of the complex A `e^{iθ}·diag(a)`, 0 to π/2.
    pub theta: f64,
    /// How the complex A's magnitudes are chosen.
    pub complex_a: AHeuristic,
    /// How every estimator draws its rows of ω together: i.i.d., orthogonal blocks (the legacy
    /// `orf=1`), simplex blocks or randomised quasi-Monte Carlo.
    pub coupling: Coupling,
    /// ω shared per dataset or fresh per pair.
    pub omega: OmegaMode,
    /// The scatter dataset's pair examined by the single-pair probe, if any.
    pub probe: Option<usize>,
    /// Independent estimates drawn by the single-pair probe.
    pub trials: usize,
    /// The view shown: single kernel values or whole attention rows.
    pub view: View,
    /// The attention view's parameters (its data also uses d, the distributions and the seed
    /// above, and its estimators θ, the complex A and the coupling of ω).
    pub attention: AttentionSettings,
    /// Set on a preview while a slider moves ([`ExperimentConfig::preview`]): the whole
    /// answer's sizes, which this computation takes a part of. The page's own: never in a
    /// URL, nor in what the workers are sent (their tasks read only `n` and `datasets`), so
    /// the configuration's encoding, and the shipped answers' requests, stay as they were.
    #[serde(skip)]
    pub preview_of: Option<WholeSize>,
}

/// The sizes of the whole answer a preview stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WholeSize {
    pub n: usize,
    pub datasets: usize,
}

/// A preview's scatter pairs and boxplot datasets at most: about a quarter of the default
/// experiment's work, so that a step of a dragged slider is drawn within a frame or two.
pub const PREVIEW_PAIRS: usize = 250;
pub const PREVIEW_DATASETS: usize = 5;

impl Default for ExperimentConfig {
    fn default() -> Self {
        Self {
            d: 50,
            m: 1024,
            n: 1000,
            datasets: 20,
            pairs: 250,
            seed: 0,
            mean_scale: 0.02,
            x_mean_scale: None,
            y_mean_scale: None,
            x_shape: 0.02,
            y_shape: 0.01,
            x_norm: 5.0,
            y_norm: 0.5,
            estimators: DEFAULT_ESTIMATORS
                .iter()
                .filter_map(|id| EstimatorId::from_id(id))
                .collect(),
            theta: std::f64::consts::FRAC_PI_4,
            complex_a: AHeuristic::Identity,
            coupling: Coupling::Iid,
            omega: OmegaMode::Shared,
            probe: None,
            trials: 2000,
            view: View::Kernel,
            attention: AttentionSettings::default(),
            preview_of: None,
        }
    }
}

/// The seed paper's three estimators (section 4), the page's default.
pub const DEFAULT_ESTIMATORS: [&str; 3] = ["prf-hyp", "hcexp-mean", "hcexp-var"];

/// The m values of the MSE-against-m chart: powers of two from 16 to 8192.
pub const CURVE_MS: [usize; 10] = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192];
/// The curve's largest m: its projections are computed once, and every smaller m sums a
/// prefix of them.
pub const CURVE_LARGEST_M: usize = CURVE_MS[CURVE_MS.len() - 1];
/// Pairs of the scatter dataset used for the curve (the first ones), to bound its cost.
pub const CURVE_PAIRS: usize = 32;
/// Independent draws of ω per m, for the error bars.
pub const CURVE_REPEATS: usize = 4;
/// Upper limit of `(n + datasets · pairs) · m · d · estimators` multiply-adds, about
/// 15 times the paper's experiment: beyond it one recompute would hold the page for many
/// seconds.
pub const MAX_WORK: f64 = 1.5e10;

impl ExperimentConfig {
    /// What the page computes while a slider moves: the first [`PREVIEW_PAIRS`] scatter pairs
    /// and the first [`PREVIEW_DATASETS`] boxplot datasets of this configuration, without the
    /// MSE-against-m curve (the last one drawn stays). `None` when the whole answer has no
    /// more pairs or datasets than that (it is as quick as its preview would be).
    pub fn preview(&self) -> Option<ExperimentConfig> {
        let whole = self.whole();
        let n = whole.n.min(PREVIEW_PAIRS);
        let datasets = whole.datasets.min(PREVIEW_DATASETS);
        if n == whole.n && datasets == whole.datasets {
            return None;
        }
        Some(ExperimentConfig {
            n,
            datasets,
            probe: whole.probe.filter(|&p| p < n),
            preview_of: Some(WholeSize {
                n: whole.n,
                datasets: whole.datasets,
            }),
            ..whole
        })
    }

    /// The whole configuration a preview stands for (itself if it is not one).
    pub fn whole(&self) -> ExperimentConfig {
        match self.preview_of {
            Some(size) => ExperimentConfig {
                n: size.n,
                datasets: size.datasets,
                preview_of: None,
                ..self.clone()
            },
            None => self.clone(),
        }
    }

    /// The Laplace scales of the query and the key means: `xscale` and `yscale` where set,
    /// else `scale` for both (the paper's one `b`).
    pub fn mean_scales(&self) -> (f64, f64) {
        (
            self.x_mean_scale.unwrap_or(self.mean_scale),
            self.y_mean_scale.unwrap_or(self.mean_scale),
        )
    }

    /// The generator's parameters for `n` pairs in dimension `d` (the distributions, scales
    /// and norms of this configuration).
    pub fn dataset_params(&self, d: usize, n: usize) -> Result<DatasetParams, DatasetError> {
        let (x_scale, y_scale) = self.mean_scales();
        DatasetParams::new(
            d,
            n,
            self.mean_scale,
            self.x_shape,
            self.y_shape,
            self.x_norm,
            self.y_norm,
        )?
        .with_mean_scales(x_scale, y_scale)
    }

    /// Multiply-adds of one full recompute: one projection (m × d) per pair and estimator,
    /// plus the MSE-against-m curve (its pairs × repeats × its largest m, whose prefixes give
    /// the smaller m).
    pub fn work(&self) -> f64 {
        let pairs = self.n as f64 + self.datasets as f64 * self.pairs as f64;
        let curve_projections = (CURVE_PAIRS.min(self.n) * CURVE_REPEATS * CURVE_LARGEST_M) as f64;
        let projections_per_pair: f64 =
            self.estimators.iter().map(|e| e.info().cost_factor()).sum();
        (pairs * self.m as f64 + curve_projections) * self.d as f64 * projections_per_pair
    }

    /// Bytes of working memory with `workers` workers, each caching every dataset (f64 queries
    /// and keys) and every dataset's ω (f32), plus the page's copy of the scatter estimates.
    /// Never an n × m matrix: the kernel keeps one m-long row per pair of a block.
    pub fn memory_bytes(&self, workers: usize) -> f64 {
        let pairs = self.n as f64 + self.datasets as f64 * self.pairs as f64;
        let data = pairs * self.d as f64 * 2.0 * 8.0;
        let omega = (self.datasets + 1) as f64 * self.m as f64 * self.d as f64 * 4.0;
        let scatter = self.n as f64 * 3.0 * 8.0 * self.estimators.len() as f64 * 2.0;
        workers.max(1) as f64 * (data + omega) + scatter
    }

    /// The page parameters the estimators' fits read.
    pub fn estimator_params(&self) -> EstimatorParams {
        EstimatorParams {
            theta: self.theta,
            complex_a: self.complex_a,
        }
    }
}
