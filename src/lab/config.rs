//! The one configuration type: what is computed. The URL query, the page's controls, the
//! (future) worker messages and the command line all read and write [`ExperimentConfig`]
//! through [`ExperimentConfig::set`] and [`ExperimentConfig::get`], so a value is parsed and
//! range-checked in exactly one place.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::numerics::dataset::{DatasetError, DatasetParams};
use crate::numerics::estimators::{EstimatorId, EstimatorParams, all_ids};
use crate::numerics::heuristics::AHeuristic;

mod attention;
use crate::numerics::attention::method::{MethodId, all_method_ids};
pub use attention::{
    ATTENTION_ASK_WORK, AttentionSettings, BLOCK, BUDGETS, DETERMINISTIC_FEATURE_BUDGET, HEAD_DIM,
    HEAD_LAYERS, HEAD_PASSAGES, HEAD_TOKENS, HEADS_PER_LAYER, HeadSource, MAX_ATTENTION_WORK,
    TEMPERATURES, TV_ROWS, View,
};

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
    /// Orthogonal random features: every estimator draws ω in orthogonal blocks.
    pub orthogonal: bool,
    /// ω shared per dataset or fresh per pair.
    pub omega: OmegaMode,
    /// The scatter dataset's pair examined by the single-pair probe, if any.
    pub probe: Option<usize>,
    /// Independent estimates drawn by the single-pair probe.
    pub trials: usize,
    /// The view shown: single kernel values or whole attention rows.
    pub view: View,
    /// The attention view's parameters (its data also uses d, the distributions and the seed
    /// above, and its estimators θ, the complex A and orthogonal features).
    pub attention: AttentionSettings,
}

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
            orthogonal: false,
            omega: OmegaMode::Shared,
            probe: None,
            trials: 2000,
            view: View::Kernel,
            attention: AttentionSettings::default(),
        }
    }
}

/// The seed paper's three estimators (section 4), the page's default.
pub const DEFAULT_ESTIMATORS: [&str; 3] = ["prf-hyp", "hcexp-mean", "hcexp-var"];

/// The `est` names of links made before the registry (always with `hyp`, default 1): they
/// name the hyperbolic estimators, and `hyp=0` turns them into their positive twins.
const LEGACY_ESTIMATORS: [(&str, &str); 3] = [
    ("prf", "prf-hyp"),
    ("mean", "hcexp-mean"),
    ("var", "hcexp-var"),
];

/// The m values of the MSE-against-m chart: powers of two from 16 to 8192.
pub const CURVE_MS: [usize; 10] = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192];
/// Pairs of the scatter dataset used for the curve (the first ones), to bound its cost.
pub const CURVE_PAIRS: usize = 32;
/// Independent draws of ω per m, for the error bars.
pub const CURVE_REPEATS: usize = 4;

/// One configurable parameter, named as in the URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Param {
    D,
    M,
    N,
    Datasets,
    Pairs,
    Seed,
    MeanScale,
    /// The query means' own Laplace scale (`same`: follow `scale`).
    XMeanScale,
    /// The key means' own Laplace scale (`same`: follow `scale`).
    YMeanScale,
    XShape,
    YShape,
    XNorm,
    YNorm,
    Estimators,
    Theta,
    ComplexA,
    Orthogonal,
    Omega,
    Probe,
    Trials,
    /// Legacy (links made before the registry): `hyp=1` or `0` puts every chosen estimator
    /// that has a twin in its hyperbolic or positive form. Read, never written.
    Hyperbolic,
    // The attention view (written to a link only when it is shown).
    View,
    Source,
    Passage,
    Layer,
    Head,
    Len,
    ValueDim,
    Features,
    Methods,
    Degree,
    Draws,
    RaSamples,
    Focus,
}

/// The allowed range of a numeric parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NumericRange {
    pub min: f64,
    pub max: f64,
    pub integer: bool,
}

/// Upper limit of `(n + datasets · pairs) · m · d · estimators` multiply-adds, about
/// 15 times the paper's experiment: beyond it one recompute would hold the page for many
/// seconds.
pub const MAX_WORK: f64 = 1.5e10;

/// Indices the probe accepts: any pair of the largest scatter dataset.
const PROBE_RANGE: NumericRange = NumericRange {
    min: 0.0,
    max: 19_999.0,
    integer: true,
};

/// The Laplace scales of the means (`scale`, `xscale`, `yscale`).
const MEAN_SCALE_RANGE: NumericRange = NumericRange {
    min: 0.001,
    max: 1000.0,
    integer: false,
};

/// Longest parameter text considered; longer text is rejected without being parsed.
const MAX_VALUE_LEN: usize = 256;

impl Param {
    /// Every parameter, in the order of the URL and the README table.
    pub const ALL: [Param; 20] = [
        Param::D,
        Param::M,
        Param::N,
        Param::Datasets,
        Param::Pairs,
        Param::Seed,
        Param::MeanScale,
        Param::XMeanScale,
        Param::YMeanScale,
        Param::XShape,
        Param::YShape,
        Param::XNorm,
        Param::YNorm,
        Param::Estimators,
        Param::Theta,
        Param::ComplexA,
        Param::Orthogonal,
        Param::Omega,
        Param::Probe,
        Param::Trials,
    ];

    /// The attention view's parameters, in the order of the URL and the README table.
    pub const ATTENTION: [Param; 13] = [
        Param::View,
        Param::Source,
        Param::Passage,
        Param::Layer,
        Param::Head,
        Param::Len,
        Param::ValueDim,
        Param::Features,
        Param::Methods,
        Param::Degree,
        Param::Draws,
        Param::RaSamples,
        Param::Focus,
    ];

    /// Every parameter a link may hold (the kernel's, then the attention view's).
    pub fn every() -> impl Iterator<Item = Param> {
        Param::ALL.into_iter().chain(Param::ATTENTION)
    }

    /// The URL query key (also the `--key` of the command line).
    pub fn key(self) -> &'static str {
        match self {
            Param::D => "d",
            Param::M => "m",
            Param::N => "n",
            Param::Datasets => "datasets",
            Param::Pairs => "pairs",
            Param::Seed => "seed",
            Param::MeanScale => "scale",
            Param::XMeanScale => "xscale",
            Param::YMeanScale => "yscale",
            Param::XShape => "xshape",
            Param::YShape => "yshape",
            Param::XNorm => "xnorm",
            Param::YNorm => "ynorm",
            Param::Estimators => "est",
            Param::Theta => "theta",
            Param::ComplexA => "cplxa",
            Param::Orthogonal => "orf",
            Param::Hyperbolic => "hyp",
            Param::Omega => "omega",
            Param::Probe => "probe",
            Param::Trials => "trials",
            Param::View => "view",
            Param::Source => "src",
            Param::Passage => "passage",
            Param::Layer => "layer",
            Param::Head => "head",
            Param::Len => "len",
            Param::ValueDim => "dv",
            Param::Features => "features",
            Param::Methods => "methods",
            Param::Degree => "deg",
            Param::Draws => "draws",
            Param::RaSamples => "ras",
            Param::Focus => "focus",
        }
    }

    /// The parameter with URL key `key`.
    pub fn from_key(key: &str) -> Option<Param> {
        Param::every()
            .chain([Param::Hyperbolic])
            .find(|p| p.key() == key)
    }

    /// A label for the page's controls.
    pub fn label(self) -> &'static str {
        match self {
            Param::D => "dimension d",
            Param::M => "random features m",
            Param::N => "scatter pairs n",
            Param::Datasets => "boxplot datasets",
            Param::Pairs => "pairs per dataset",
            Param::Seed => "seed",
            Param::MeanScale => "Laplace scale b of the means",
            Param::XMeanScale => "Laplace scale of the query means",
            Param::YMeanScale => "Laplace scale of the key means",
            Param::XShape => "Gamma shape of query variances",
            Param::YShape => "Gamma shape of key variances",
            Param::XNorm => "mean query norm",
            Param::YNorm => "mean key norm",
            Param::Estimators => "estimators",
            Param::Theta => "angle θ of the complex A",
            Param::ComplexA => "magnitudes a of the complex A",
            Param::Orthogonal => "orthogonal random features",
            Param::Hyperbolic => "hyperbolic features (legacy)",
            Param::Omega => "projections ω",
            Param::Probe => "probed pair (index)",
            Param::Trials => "probe estimates T",
            Param::View => "view",
            Param::Source => "data",
            Param::Passage => "passage",
            Param::Layer => "layer",
            Param::Head => "head",
            Param::Len => "tokens L",
            Param::ValueDim => "value dimension",
            Param::Features => "random features m",
            Param::Methods => "methods",
            Param::Degree => "degree n (Taylor, (1 + x/n)^n)",
            Param::Draws => "draws R (bias, variance)",
            Param::RaSamples => "randomized attention samples S",
            Param::Focus => "method in the heatmaps",
        }
    }

    /// The range of a numeric parameter; `None` for the others.
    pub fn range(self) -> Option<NumericRange> {
        let int = |min: f64, max: f64| NumericRange {
            min,
            max,
            integer: true,
        };
        let real = |min: f64, max: f64| NumericRange {
            min,
            max,
            integer: false,
        };
        match self {
            Param::D => Some(int(1.0, 512.0)),
            Param::M => Some(int(1.0, 16384.0)),
            Param::N => Some(int(2.0, 20000.0)),
            Param::Datasets => Some(int(1.0, 200.0)),
            Param::Pairs => Some(int(2.0, 5000.0)),
            Param::Seed => Some(int(0.0, 4_294_967_295.0)),
            Param::MeanScale => Some(MEAN_SCALE_RANGE),
            Param::XShape | Param::YShape => Some(real(0.001, 100.0)),
            Param::XNorm | Param::YNorm => Some(real(0.01, 50.0)),
            Param::Trials => Some(int(2.0, 100_000.0)),
            Param::Theta => Some(real(0.0, std::f64::consts::FRAC_PI_2)),
            Param::Passage => Some(int(0.0, (HEAD_PASSAGES - 1) as f64)),
            Param::Layer => Some(int(0.0, (HEAD_LAYERS - 1) as f64)),
            Param::Head => Some(int(0.0, (HEADS_PER_LAYER - 1) as f64)),
            Param::Len => Some(int(2.0, 1024.0)),
            Param::ValueDim => Some(int(1.0, 64.0)),
            Param::Features => Some(int(1.0, 4096.0)),
            Param::Degree => Some(int(1.0, 6.0)),
            Param::Draws => Some(int(2.0, 64.0)),
            Param::RaSamples => Some(int(1.0, 64.0)),
            Param::View | Param::Source | Param::Methods | Param::Focus => None,
            // Numbers or `same`: parsed apart (see `allowed`).
            Param::XMeanScale | Param::YMeanScale => None,
            Param::Estimators
            | Param::Hyperbolic
            | Param::Omega
            | Param::Probe
            | Param::ComplexA
            | Param::Orthogonal => None,
        }
    }

    /// What the parameter accepts, in words (for messages and the README).
    pub fn allowed(self) -> String {
        match self.range() {
            Some(r) if r.integer => format!("an integer from {} to {}", r.min, r.max),
            Some(r) => format!("a number from {} to {}", r.min, r.max),
            None => match self {
                Param::Estimators => format!(
                    "a comma-separated, non-empty subset of the estimator ids {} (the old names prf, mean, var also work)",
                    all_ids()
                ),
                Param::XMeanScale | Param::YMeanScale => format!(
                    "same (the scale b of scale) or a number from {} to {}",
                    MEAN_SCALE_RANGE.min, MEAN_SCALE_RANGE.max
                ),
                Param::Hyperbolic => "1 or 0 (true or false)".to_string(),
                Param::Orthogonal => "1 or 0 (true or false)".to_string(),
                Param::ComplexA => "identity, mean-only or variance-adjusted".to_string(),
                Param::Probe => format!(
                    "none, or an integer from 0 to {} (a pair of the scatter dataset)",
                    PROBE_RANGE.max
                ),
                Param::View => "kernel or attention".to_string(),
                Param::Source => "synthetic or minilm".to_string(),
                Param::Methods => format!(
                    "a comma-separated, non-empty subset of the method ids {}",
                    all_method_ids()
                ),
                Param::Focus => "one method id (see methods)".to_string(),
                _ => "shared or fresh".to_string(),
            },
        }
    }
}

/// A parameter value that was rejected (or a query key that was not understood).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    /// The URL key the message is about.
    pub key: String,
    pub message: String,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.key, self.message)
    }
}

impl std::error::Error for ParamError {}

/// User text for a message: at most 24 characters, in quotes, control characters and quotes
/// escaped (so that a message is always one line). The page and the command line share it.
pub fn quote(text: &str) -> String {
    let mut shown: String = text.chars().take(24).collect();
    if text.chars().count() > 24 {
        shown.push('…');
    }
    format!("{shown:?}")
}

/// A real parameter as URL text that reads back to the same f64: plain decimals, or
/// scientific notation where those would be long (`1e-255`, which `Display` writes with 255
/// zeros, longer than a value may be).
fn number_text(value: f64) -> String {
    let plain = value.to_string();
    if plain.len() <= 24 {
        plain
    } else {
        format!("{value:e}")
    }
}

fn parse_switch(param: Param, text: &str) -> Result<bool, ParamError> {
    match text.trim() {
        "1" | "true" | "on" => Ok(true),
        "0" | "false" | "off" => Ok(false),
        _ => Err(ParamError {
            key: param.key().to_string(),
            message: format!("must be {} (got {})", param.allowed(), quote(text)),
        }),
    }
}

/// Every chosen estimator that has a twin, in the hyperbolic (`true`) or positive form.
fn with_form(estimators: &[EstimatorId], hyperbolic: bool) -> Vec<EstimatorId> {
    let mapped: Vec<EstimatorId> = estimators
        .iter()
        .map(|&id| {
            let estimator = id.info();
            match estimator.twin().and_then(EstimatorId::from_id) {
                Some(twin) if estimator.is_hyperbolic() != hyperbolic => twin,
                _ => id,
            }
        })
        .collect();
    in_registry_order(&mapped)
}

/// The distinct estimators of `chosen`, in registry order (what a sort and a dedup would give,
/// without linking one more sort into the page).
fn in_registry_order(chosen: &[EstimatorId]) -> Vec<EstimatorId> {
    EstimatorId::all()
        .filter(|id| chosen.contains(id))
        .collect()
}

fn parse_number(param: Param, range: NumericRange, text: &str) -> Result<f64, ParamError> {
    let reject = || ParamError {
        key: param.key().to_string(),
        message: format!("must be {} (got {})", param.allowed(), quote(text)),
    };
    let value: f64 = text.trim().parse().map_err(|_| reject())?;
    let in_range = value.is_finite() && value >= range.min && value <= range.max;
    if !in_range || (range.integer && value.fract() != 0.0) {
        return Err(reject());
    }
    Ok(value)
}

fn parse_estimators(text: &str) -> Result<Vec<EstimatorId>, ParamError> {
    let mut chosen = Vec::new();
    for name in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let id = LEGACY_ESTIMATORS
            .iter()
            .find(|(old, _)| *old == name)
            .map_or(name, |(_, new)| new);
        let estimator = EstimatorId::from_id(id).ok_or_else(|| ParamError {
            key: Param::Estimators.key().to_string(),
            message: format!("unknown estimator {} (expected {})", quote(name), all_ids()),
        })?;
        chosen.push(estimator);
    }
    let chosen = in_registry_order(&chosen);
    if chosen.is_empty() {
        return Err(ParamError {
            key: Param::Estimators.key().to_string(),
            message: "choose at least one estimator".to_string(),
        });
    }
    Ok(chosen)
}

impl ExperimentConfig {
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

    /// The value of `param` as URL text (the inverse of [`ExperimentConfig::set`]).
    pub fn get(&self, param: Param) -> String {
        match param {
            Param::D => self.d.to_string(),
            Param::M => self.m.to_string(),
            Param::N => self.n.to_string(),
            Param::Datasets => self.datasets.to_string(),
            Param::Pairs => self.pairs.to_string(),
            Param::Seed => self.seed.to_string(),
            Param::MeanScale => number_text(self.mean_scale),
            Param::XMeanScale => self
                .x_mean_scale
                .map_or_else(|| "same".to_string(), number_text),
            Param::YMeanScale => self
                .y_mean_scale
                .map_or_else(|| "same".to_string(), number_text),
            Param::XShape => number_text(self.x_shape),
            Param::YShape => number_text(self.y_shape),
            Param::XNorm => number_text(self.x_norm),
            Param::YNorm => number_text(self.y_norm),
            Param::Estimators => self
                .estimators
                .iter()
                .map(|e| e.id())
                .collect::<Vec<_>>()
                .join(","),
            Param::Theta => number_text(self.theta),
            Param::ComplexA => self.complex_a.cli_name().to_string(),
            Param::Orthogonal => if self.orthogonal { "1" } else { "0" }.to_string(),
            Param::Hyperbolic => {
                let hyperbolic = self.estimators.iter().any(|e| e.info().is_hyperbolic());
                if hyperbolic { "1" } else { "0" }.to_string()
            }
            Param::Omega => match self.omega {
                OmegaMode::Shared => "shared",
                OmegaMode::Fresh => "fresh",
            }
            .to_string(),
            Param::Probe => self
                .probe
                .map_or_else(|| "none".to_string(), |i| i.to_string()),
            Param::Trials => self.trials.to_string(),
            Param::View => match self.view {
                View::Kernel => "kernel",
                View::Attention => "attention",
            }
            .to_string(),
            Param::Source => match self.attention.source {
                HeadSource::Synthetic => "synthetic",
                HeadSource::Minilm => "minilm",
            }
            .to_string(),
            Param::Methods => self
                .attention
                .methods
                .iter()
                .map(|m| m.id())
                .collect::<Vec<_>>()
                .join(","),
            Param::Focus => self.attention.focus.id().to_string(),
            _ => self
                .numeric(param)
                .map_or_else(String::new, |v| (v as u64).to_string()),
        }
    }

    /// Parses `text` for `param` and stores it, or explains what is allowed and leaves the
    /// configuration unchanged. A value that would push the work past [`MAX_WORK`] is refused.
    pub fn set(&mut self, param: Param, text: &str) -> Result<(), ParamError> {
        if text.len() > MAX_VALUE_LEN {
            return Err(ParamError {
                key: param.key().to_string(),
                message: format!(
                    "must be {} (got {} characters of text)",
                    param.allowed(),
                    text.len()
                ),
            });
        }
        let mut next = self.clone();
        if let Some(range) = param.range() {
            let value = parse_number(param, range, text)?;
            match param {
                Param::D => next.d = value as usize,
                Param::M => next.m = value as usize,
                Param::N => next.n = value as usize,
                Param::Datasets => next.datasets = value as usize,
                Param::Pairs => next.pairs = value as usize,
                Param::Seed => next.seed = value as u64,
                Param::MeanScale => next.mean_scale = value,
                Param::XShape => next.x_shape = value,
                Param::YShape => next.y_shape = value,
                Param::XNorm => next.x_norm = value,
                Param::YNorm => next.y_norm = value,
                Param::Trials => next.trials = value as usize,
                Param::Theta => next.theta = value,
                Param::Passage => next.attention.passage = value as usize,
                Param::Layer => next.attention.layer = value as usize,
                Param::Head => next.attention.head = value as usize,
                Param::Len => next.attention.len = value as usize,
                Param::ValueDim => next.attention.value_dim = value as usize,
                Param::Features => next.attention.features = value as usize,
                Param::Degree => next.attention.degree = value as usize,
                Param::Draws => next.attention.draws = value as usize,
                Param::RaSamples => next.attention.ra_samples = value as usize,
                _ => {}
            }
        } else {
            let bad = || ParamError {
                key: param.key().to_string(),
                message: format!("must be {} (got {})", param.allowed(), quote(text)),
            };
            match param {
                Param::Estimators => next.estimators = parse_estimators(text)?,
                Param::Hyperbolic => {
                    next.estimators = with_form(&next.estimators, parse_switch(param, text)?)
                }
                Param::Orthogonal => next.orthogonal = parse_switch(param, text)?,
                Param::View => {
                    next.view = match text.trim() {
                        "kernel" => View::Kernel,
                        "attention" => View::Attention,
                        _ => return Err(bad()),
                    }
                }
                Param::Source => {
                    next.attention.source = match text.trim() {
                        "synthetic" => HeadSource::Synthetic,
                        "minilm" => HeadSource::Minilm,
                        _ => return Err(bad()),
                    }
                }
                Param::Methods => {
                    next.attention.methods =
                        attention::parse_methods(text).map_err(|message| ParamError {
                            key: param.key().to_string(),
                            message,
                        })?
                }
                Param::Focus => {
                    next.attention.focus = MethodId::from_id(text.trim()).ok_or_else(bad)?
                }
                Param::ComplexA => {
                    next.complex_a = text.trim().parse::<AHeuristic>().map_err(|_| bad())?
                }
                Param::XMeanScale | Param::YMeanScale => {
                    let value = match text.trim() {
                        "" | "same" => None,
                        number => {
                            Some(parse_number(param, MEAN_SCALE_RANGE, number).map_err(|_| bad())?)
                        }
                    };
                    if param == Param::XMeanScale {
                        next.x_mean_scale = value;
                    } else {
                        next.y_mean_scale = value;
                    }
                }
                Param::Probe => {
                    next.probe = match text.trim() {
                        "" | "none" => None,
                        number => {
                            Some(parse_number(param, PROBE_RANGE, number).map_err(|_| bad())?
                                as usize)
                        }
                    }
                }
                _ => {
                    next.omega = match text.trim() {
                        "shared" => OmegaMode::Shared,
                        "fresh" => OmegaMode::Fresh,
                        _ => return Err(bad()),
                    }
                }
            }
        }
        next.check_work(param)?;
        *self = next;
        Ok(())
    }

    /// [`ExperimentConfig::set`] for a slider: a value that would push the work past
    /// [`MAX_WORK`] is replaced by the largest value between the current one and the
    /// requested one that stays within it (the work grows with d, m, n, datasets and pairs),
    /// so dragging to the end stops at the limit instead of being refused. Returns the value
    /// applied when it differs from the one asked for.
    pub fn set_within_work_limit(
        &mut self,
        param: Param,
        text: &str,
    ) -> Result<Option<String>, ParamError> {
        let original = match self.set(param, text) {
            Ok(()) => return Ok(None),
            Err(error) => error,
        };
        let grows_work = matches!(
            param,
            Param::D
                | Param::M
                | Param::N
                | Param::Datasets
                | Param::Pairs
                | Param::Len
                | Param::ValueDim
                | Param::Features
                | Param::Degree
                | Param::Draws
                | Param::RaSamples
        );
        let requested = text.trim().parse::<f64>().ok().filter(|v| v.is_finite());
        let (Some(requested), true) = (requested, grows_work) else {
            return Err(original);
        };
        let Ok(current) = self.get(param).parse::<u64>() else {
            return Err(original);
        };
        let mut trial = self.clone();
        // Only a value in range and above the current one can have hit the limit.
        let (mut fits, mut too_big) = (current, requested.floor() as u64);
        if too_big <= fits || trial.set(param, &too_big.to_string()).is_ok() {
            return Err(original);
        }
        while too_big - fits > 1 {
            let middle = fits + (too_big - fits) / 2;
            if trial.clone().set(param, &middle.to_string()).is_ok() {
                fits = middle;
            } else {
                too_big = middle;
            }
        }
        // Already at the limit (the slider is dragged further): stay there.
        if fits != current {
            self.set(param, &fits.to_string())?;
        }
        Ok(Some(fits.to_string()))
    }

    /// Multiply-adds of one full recompute: one projection (m × d) per pair and estimator,
    /// plus the MSE-against-m curve (its pairs × repeats × every m of the chart).
    pub fn work(&self) -> f64 {
        let pairs = self.n as f64 + self.datasets as f64 * self.pairs as f64;
        let curve_projections =
            (CURVE_PAIRS.min(self.n) * CURVE_REPEATS * CURVE_MS.iter().sum::<usize>()) as f64;
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

    fn check_work(&self, param: Param) -> Result<(), ParamError> {
        let attention = self.attention.work(self.d);
        if attention > attention::MAX_ATTENTION_WORK {
            return Err(ParamError {
                key: param.key().to_string(),
                message: format!(
                    "this value makes one attention recompute {attention:.1e} multiply-adds, above the limit of {:.1e}: lower L, m, the draws or the degree first",
                    attention::MAX_ATTENTION_WORK
                ),
            });
        }
        if self.work() > MAX_WORK {
            return Err(ParamError {
                key: param.key().to_string(),
                message: format!(
                    "this value makes one recompute {:.1e} multiply-adds, above the limit of {:.1e}: lower m, d or the number of pairs first",
                    self.work(),
                    MAX_WORK
                ),
            });
        }
        Ok(())
    }

    /// Checks a configuration that did not come through [`ExperimentConfig::set`] (for example
    /// one deserialised from a message): every value in range, by the same rules.
    pub fn validate(&self) -> Result<(), ParamError> {
        // Numbers are checked as numbers, against the same ranges as `set`: no text round
        // trip, so a worker checks each message's configuration in microseconds.
        for param in Param::every() {
            let (Some(range), Some(value)) = (param.range(), self.numeric(param)) else {
                continue;
            };
            let in_range = value.is_finite() && value >= range.min && value <= range.max;
            if !in_range || (range.integer && value.fract() != 0.0) {
                return Err(ParamError {
                    key: param.key().to_string(),
                    message: format!("must be {} (got {value})", param.allowed()),
                });
            }
        }
        for (param, scale) in [
            (Param::XMeanScale, self.x_mean_scale),
            (Param::YMeanScale, self.y_mean_scale),
        ] {
            let r = MEAN_SCALE_RANGE;
            if scale.is_some_and(|b| !(b.is_finite() && b >= r.min && b <= r.max)) {
                return Err(ParamError {
                    key: param.key().to_string(),
                    message: format!("must be {}", param.allowed()),
                });
            }
        }
        if self.probe.is_some_and(|i| i as f64 > PROBE_RANGE.max) {
            return Err(ParamError {
                key: Param::Probe.key().to_string(),
                message: format!("must be {}", Param::Probe.allowed()),
            });
        }
        let methods = &self.attention.methods;
        if methods.is_empty() || methods.windows(2).any(|w| w[0] >= w[1]) {
            return Err(ParamError {
                key: Param::Methods.key().to_string(),
                message: "methods must be non-empty, sorted and without repeats".to_string(),
            });
        }
        if self.estimators.is_empty() || self.estimators.windows(2).any(|w| w[0] >= w[1]) {
            return Err(ParamError {
                key: Param::Estimators.key().to_string(),
                message: "estimators must be non-empty, sorted and without repeats".to_string(),
            });
        }
        self.check_work(Param::M)
    }

    /// The value of a numeric parameter (`None` for the others).
    fn numeric(&self, param: Param) -> Option<f64> {
        Some(match param {
            Param::D => self.d as f64,
            Param::M => self.m as f64,
            Param::N => self.n as f64,
            Param::Datasets => self.datasets as f64,
            Param::Pairs => self.pairs as f64,
            Param::Seed => self.seed as f64,
            Param::MeanScale => self.mean_scale,
            Param::XShape => self.x_shape,
            Param::YShape => self.y_shape,
            Param::XNorm => self.x_norm,
            Param::YNorm => self.y_norm,
            Param::Trials => self.trials as f64,
            Param::Theta => self.theta,
            Param::Passage => self.attention.passage as f64,
            Param::Layer => self.attention.layer as f64,
            Param::Head => self.attention.head as f64,
            Param::Len => self.attention.len as f64,
            Param::ValueDim => self.attention.value_dim as f64,
            Param::Features => self.attention.features as f64,
            Param::Degree => self.attention.degree as f64,
            Param::Draws => self.attention.draws as f64,
            Param::RaSamples => self.attention.ra_samples as f64,
            Param::View | Param::Source | Param::Methods | Param::Focus => return None,
            Param::XMeanScale | Param::YMeanScale => return None,
            Param::Estimators
            | Param::ComplexA
            | Param::Orthogonal
            | Param::Omega
            | Param::Probe
            | Param::Hyperbolic => return None,
        })
    }

    /// The page parameters the estimators' fits read.
    pub fn estimator_params(&self) -> EstimatorParams {
        EstimatorParams {
            theta: self.theta,
            complex_a: self.complex_a,
        }
    }

    /// The configuration described by a URL query (with or without the leading `?`). Every
    /// value that is missing keeps its default; every value that is bad keeps its default
    /// and yields a notice, as do unknown and repeated keys (the first occurrence wins).
    pub fn from_query(query: &str) -> (ExperimentConfig, Vec<ParamError>) {
        let query = query.strip_prefix('?').unwrap_or(query);
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap_or_default();
        let mut config = ExperimentConfig::default();
        let mut notices = Vec::new();
        let mut seen = Vec::new();
        let mut deferred = Vec::new();
        let mut legacy_form = None;
        for (key, value) in pairs {
            let Some(param) = Param::from_key(&key) else {
                notices.push(ParamError {
                    message: "unknown parameter, ignored".to_string(),
                    key: quote(&key).trim_matches('"').to_string(),
                });
                continue;
            };
            if seen.contains(&param) {
                notices.push(ParamError {
                    key: key.clone(),
                    message: "given more than once; the first value is used".to_string(),
                });
                continue;
            }
            seen.push(param);
            if param == Param::Hyperbolic {
                // Applies to the estimators chosen, whatever its place in the query.
                legacy_form = Some(value);
                continue;
            }
            // The work limit depends on several parameters: apply the ones that shrink the
            // work first by deferring failures once and retrying at the end.
            if config.set(param, &value).is_err() {
                deferred.push((param, value));
            }
        }
        deferred.extend(legacy_form.map(|v| (Param::Hyperbolic, v)));
        for (param, value) in deferred {
            if let Err(error) = config.set(param, &value) {
                notices.push(ParamError {
                    key: error.key,
                    message: format!(
                        "{}; the default {} is used",
                        error.message,
                        config.get(param)
                    ),
                });
            }
        }
        (config, notices)
    }

    /// The URL query that reproduces this configuration (every parameter, so a link keeps its
    /// meaning even if a default changes).
    pub fn to_query(&self) -> String {
        let attention = match self.view {
            View::Kernel => &[][..],
            View::Attention => &Param::ATTENTION[..],
        };
        // A side's own mean scale is written only when set: links stay as they were.
        let unset = |p: Param| match p {
            Param::XMeanScale => self.x_mean_scale.is_none(),
            Param::YMeanScale => self.y_mean_scale.is_none(),
            _ => false,
        };
        let pairs: Vec<(&str, String)> = Param::ALL
            .iter()
            .chain(attention)
            .filter(|&&p| !unset(p))
            .map(|&p| (p.key(), self.get(p)))
            .collect();
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn per_side_mean_scales_follow_scale_until_set_and_round_trip_through_a_link() {
        let (config, notices) = ExperimentConfig::from_query("scale=0.5&yscale=100");
        assert!(notices.is_empty(), "{notices:?}");
        assert_eq!(config.mean_scales(), (0.5, 100.0));
        assert_eq!(config.get(Param::XMeanScale), "same");
        let query = config.to_query();
        assert!(
            query.contains("yscale=100") && !query.contains("xscale"),
            "{query}"
        );
        assert_eq!(ExperimentConfig::from_query(&query).0, config);
        // `same` (or nothing) gives the side back to `scale`.
        let mut edited = config.clone();
        edited.set(Param::YMeanScale, "same").unwrap();
        assert_eq!(edited.mean_scales(), (0.5, 0.5));
        edited.set(Param::YMeanScale, " 0.25 ").unwrap();
        assert_eq!(edited.y_mean_scale, Some(0.25));
        edited.set(Param::YMeanScale, "").unwrap();
        assert_eq!(edited.y_mean_scale, None);
        // Out of range or not a number: refused with what is allowed, nothing changed.
        for bad in ["0", "1e9", "NaN", "wide"] {
            let before = edited.clone();
            let error = edited.set(Param::XMeanScale, bad).unwrap_err();
            assert_eq!(error.key, "xscale");
            assert!(
                error.message.contains("same (the scale b of scale)"),
                "{error}"
            );
            assert_eq!(edited, before);
        }
        // A message from elsewhere (a worker) is checked too.
        let forged = ExperimentConfig {
            x_mean_scale: Some(f64::NAN),
            ..ExperimentConfig::default()
        };
        assert_eq!(forged.validate().unwrap_err().key, "xscale");
        // The generator sees the side's own scale.
        let params = config.dataset_params(config.d, 10).unwrap();
        let same = ExperimentConfig::from_query("scale=0.5")
            .0
            .dataset_params(50, 10)
            .unwrap();
        assert_ne!(params, same);
    }

    use super::*;

    #[test]
    fn query_round_trips_every_parameter() {
        let mut config = ExperimentConfig::default();
        config.set(Param::M, "64").unwrap();
        config.set(Param::Seed, "3").unwrap();
        config.set(Param::XNorm, "2.5").unwrap();
        config.set(Param::Estimators, "var,prf").unwrap();
        config.set(Param::Hyperbolic, "0").unwrap();
        config.set(Param::Omega, "fresh").unwrap();
        config.set(Param::Probe, "17").unwrap();
        config.set(Param::Trials, "500").unwrap();
        let (parsed, notices) = ExperimentConfig::from_query(&format!("?{}", config.to_query()));
        assert!(notices.is_empty(), "{notices:?}");
        assert_eq!(parsed, config);
        assert!(parsed.validate().is_ok());
    }

    #[test]
    fn bad_values_fall_back_to_defaults_with_a_notice() {
        let (config, notices) = ExperimentConfig::from_query(
            "m=abc&d=NaN&n=-5&seed=inf&pairs=1e99&xnorm=%F0%9F%98%80&bogus=1&m=7&est=",
        );
        let defaults = ExperimentConfig::default();
        assert_eq!(config, defaults);
        let keys: Vec<&str> = notices.iter().map(|n| n.key.as_str()).collect();
        for key in ["m", "d", "n", "seed", "pairs", "xnorm", "bogus", "est"] {
            assert!(keys.contains(&key), "no notice for {key}: {notices:?}");
        }
        assert!(
            notices
                .iter()
                .any(|n| n.key == "m" && n.message.contains("integer from 1 to 16384")),
            "{notices:?}"
        );
        assert!(
            notices
                .iter()
                .any(|n| n.key == "m" && n.message.contains("more than once"))
        );
    }

    #[test]
    fn set_rejects_out_of_range_and_keeps_the_old_value() {
        let mut config = ExperimentConfig::default();
        assert!(config.set(Param::M, "0").is_err());
        assert!(config.set(Param::M, "2.5").is_err());
        assert!(config.set(Param::XNorm, "51").is_err());
        assert!(config.set(Param::Estimators, "prf,nope").is_err());
        assert!(config.set(Param::Hyperbolic, "maybe").is_err());
        assert!(config.set(Param::D, &"9".repeat(100)).is_err());
        assert_eq!(config, ExperimentConfig::default());
    }

    #[test]
    fn work_limit_refuses_huge_runs_but_order_of_the_query_does_not_matter() {
        let mut config = ExperimentConfig::default();
        config.set(Param::D, "100").unwrap();
        let error = config.set(Param::M, "16384").unwrap_err();
        assert_eq!(config.m, 1024, "a refused value changes nothing");
        assert!(error.message.contains("multiply-adds"));
        // d small first or last: both orders accept m = 16384 with d = 2.
        let (a, na) = ExperimentConfig::from_query("m=16384&d=2");
        let (b, nb) = ExperimentConfig::from_query("d=2&m=16384");
        assert!(na.is_empty() && nb.is_empty(), "{na:?} {nb:?}");
        assert_eq!(a, b);
        assert_eq!(a.m, 16384);
    }

    #[test]
    fn a_slider_dragged_past_the_work_limit_stops_at_it() {
        let mut config = ExperimentConfig::default();
        config.set(Param::D, "10").unwrap();
        config.set(Param::M, "16384").unwrap();
        // d = 512 is far beyond the limit at m = 16384: the largest d within it is applied.
        let applied = config.set_within_work_limit(Param::D, "512").unwrap();
        let d: usize = applied.clone().unwrap().parse().unwrap();
        assert_eq!(config.d, d);
        assert!(config.work() <= MAX_WORK);
        let mut one_more = config.clone();
        assert!(one_more.set(Param::D, &(d + 1).to_string()).is_err());
        // Dragged further while at the limit: it stays there, with the same note.
        assert_eq!(
            config.set_within_work_limit(Param::D, "300").unwrap(),
            applied
        );
        assert_eq!(config.d, d);
        // Within the limit nothing is clamped; a bad value is still refused as set refuses it.
        assert_eq!(config.set_within_work_limit(Param::D, "10").unwrap(), None);
        assert!(config.set_within_work_limit(Param::D, "abc").is_err());
        assert!(config.set_within_work_limit(Param::D, "0").is_err());
        assert_eq!(config.d, 10);
    }

    #[test]
    fn validate_rejects_what_set_would_reject() {
        let mut config = ExperimentConfig::default();
        assert!(config.validate().is_ok());
        config.m = 0;
        assert!(config.validate().is_err());
        let unsorted = ExperimentConfig {
            estimators: ["hcexp-mean", "prf-hyp"]
                .iter()
                .filter_map(|id| EstimatorId::from_id(id))
                .collect(),
            ..ExperimentConfig::default()
        };
        assert!(unsorted.validate().is_err());
        let nan_norm = ExperimentConfig {
            x_norm: f64::NAN,
            ..ExperimentConfig::default()
        };
        assert!(nan_norm.validate().is_err());
    }
}
