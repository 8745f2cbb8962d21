//! The URL and command-line parameters as one table: each entry says its key, its label, what
//! it means, what it accepts and how it reads and writes [`ExperimentConfig`]. The parser
//! ([`ExperimentConfig::set`]), the link ([`ExperimentConfig::to_query`]), validation, the
//! sliders' work limit, the controls' labels and hints, `kernel-lab`'s flags and the table in
//! docs/url-parameters.md (checked by `tests/readme.rs`) all read it. **A new parameter is one
//! entry in [`param_table!`] below.**

use std::fmt;

use crate::numerics::attention::methods::{MethodId, all_method_ids};
use crate::numerics::estimators::all_ids;
use crate::numerics::heuristics::AHeuristic;
use crate::numerics::projections::couplings::Coupling;

use super::attention::{
    HEAD_LAYERS, HEAD_PASSAGES, HeadSource, MAX_HEAD_LAYERS, MAX_HEADS_PER_LAYER,
    MAX_LINK_TEXT_CHARS, View,
};
use super::experiment::{ExperimentConfig, OmegaMode};
use super::values::{
    MEAN_SCALE_RANGE, NumericRange, PROBE_RANGE, Rejection, ascending_without_repeats,
    every_value_allowed, int, parse_estimators, parse_in_range, parse_same_or_scale, parse_switch,
    real, same_or_scale, scale_in_range, scale_text, switch_text, switch_words, with_form,
};

/// Which part of a link a parameter belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// The kernel view's: always written to a link.
    Kernel,
    /// The attention view's: written only when `view=attention`.
    Attention,
    /// Read from old links, never written.
    Legacy,
}

/// How a parameter's text is read and written.
#[derive(Clone, Copy)]
pub enum Value {
    /// A number within `range`: `read` gives the configuration's value, `write` stores one that
    /// was checked against the range. `grows_work`: a larger value never lowers the work, so a
    /// slider dragged past the work limit may stop at it
    /// ([`ExperimentConfig::set_within_work_limit`]).
    Number {
        range: NumericRange,
        grows_work: bool,
        read: fn(&ExperimentConfig) -> f64,
        write: fn(&mut ExperimentConfig, f64),
    },
    /// Anything else: the allowed values in words, the text in and out, and `check`: whether
    /// the configuration's value is one `write` could have stored (a list in registry order
    /// without repeats, a scale in range), for [`ExperimentConfig::validate`] without parsing.
    Text {
        allowed: fn() -> String,
        read: fn(&ExperimentConfig) -> String,
        write: fn(&mut ExperimentConfig, &str) -> Result<(), Rejection>,
        check: fn(&ExperimentConfig) -> bool,
    },
}

/// What validation reads of an entry: its range and value, or its `check`. Kept in a table of
/// its own ([`CHECKS`]), built from the same entries at compile time, because a worker checks
/// every message's configuration: through [`TABLE`] it would link every parser, every list of
/// ids and every method's description.
#[derive(Clone, Copy)]
pub(super) struct Check {
    pub key: &'static str,
    pub section: Section,
    pub rule: Rule,
}

/// See [`Check`].
#[derive(Clone, Copy)]
pub(super) enum Rule {
    Number {
        range: NumericRange,
        read: fn(&ExperimentConfig) -> f64,
    },
    Text {
        check: fn(&ExperimentConfig) -> bool,
    },
}

impl Check {
    const fn of(key: &'static str, spec: ParamSpec) -> Check {
        let rule = match spec.value {
            Value::Number { range, read, .. } => Rule::Number { range, read },
            Value::Text { check, .. } => Rule::Text { check },
        };
        Check {
            key,
            section: spec.section,
            rule,
        }
    }
}

/// One entry of the table.
#[derive(Clone, Copy)]
pub struct ParamSpec {
    /// The URL query key, also `kernel-lab`'s `--key`.
    pub key: &'static str,
    /// The control's label.
    pub label: &'static str,
    /// What it means, for docs/url-parameters.md.
    pub meaning: &'static str,
    pub section: Section,
    pub value: Value,
    /// When it is left out of a link (a side's own mean scale while it follows `scale`).
    pub omitted_when: Option<fn(&ExperimentConfig) -> bool>,
    /// What docs/url-parameters.md says it accepts, where that differs from
    /// [`Param::allowed`]: a list of registry ids points to the registry's own page, so that a
    /// new estimator or method changes no parameter's row.
    pub docs_allowed: Option<&'static str>,
}

const fn number(
    label: &'static str,
    meaning: &'static str,
    section: Section,
    range: NumericRange,
    grows_work: bool,
    read: fn(&ExperimentConfig) -> f64,
    write: fn(&mut ExperimentConfig, f64),
) -> ParamSpec {
    ParamSpec {
        key: "", // supplied by `param_table!`
        label,
        meaning,
        section,
        value: Value::Number {
            range,
            grows_work,
            read,
            write,
        },
        omitted_when: None,
        docs_allowed: None,
    }
}

const fn text(
    label: &'static str,
    meaning: &'static str,
    section: Section,
    allowed: fn() -> String,
    read: fn(&ExperimentConfig) -> String,
    write: fn(&mut ExperimentConfig, &str) -> Result<(), Rejection>,
    check: fn(&ExperimentConfig) -> bool,
) -> ParamSpec {
    ParamSpec {
        key: "", // supplied by `param_table!`
        label,
        meaning,
        section,
        value: Value::Text {
            allowed,
            read,
            write,
            check,
        },
        omitted_when: None,
        docs_allowed: None,
    }
}

/// One parameter: a handle on its entry of the table, by key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Param(pub(super) &'static str);

impl fmt::Debug for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Param({})", self.0)
    }
}

/// The table: `Name "key" => entry,` declares the handle `Param::Name` and its entry, in the
/// order of the link and of docs/url-parameters.md.
macro_rules! param_table {
    ($($name:ident $key:literal => $spec:expr,)*) => {
        // Named like the enum variants they replace: call sites read `Param::Seed`.
        #[allow(non_upper_case_globals)]
        impl Param {
            $(pub const $name: Param = Param($key);)*
        }

        pub(super) static TABLE: &[ParamSpec] = &[$(ParamSpec { key: $key, ..$spec },)*];

        pub(super) static CHECKS: &[Check] = &[$(Check::of($key, $spec),)*];

        #[cfg(test)]
        const TABLE_KEYS: &[(&str, &str)] = &[$((stringify!($name), $key),)*];
    };
}

use Section::{Attention, Kernel, Legacy};

param_table! {
    D "d" => number("dimension d", "dimension of queries and keys", Kernel,
        int(1.0, 512.0), true, |c| c.d as f64, |c, v| c.d = v as usize),
    M "m" => number("random features m",
        "random projections ω (a hyperbolic estimator has 2m features)", Kernel,
        int(1.0, 16384.0), true, |c| c.m as f64, |c, v| c.m = v as usize),
    N "n" => number("scatter pairs n", "pairs in the scatter dataset (Figure 1)", Kernel,
        int(2.0, 20000.0), true, |c| c.n as f64, |c, v| c.n = v as usize),
    Datasets "datasets" => number("boxplot datasets", "boxplot datasets (Figures 2, 3)", Kernel,
        int(1.0, 200.0), true, |c| c.datasets as f64, |c, v| c.datasets = v as usize),
    Pairs "pairs" => number("pairs per dataset", "pairs per boxplot dataset", Kernel,
        int(2.0, 5000.0), true, |c| c.pairs as f64, |c, v| c.pairs = v as usize),
    Seed "seed" => number("seed", "seed of every random draw", Kernel,
        int(0.0, 4_294_967_295.0), false, |c| c.seed as f64, |c, v| c.seed = v as u64),
    MeanScale "scale" => number("Laplace scale b of the means",
        "Laplace scale b of the component means", Kernel,
        MEAN_SCALE_RANGE, false, |c| c.mean_scale, |c, v| c.mean_scale = v),
    XMeanScale "xscale" => ParamSpec {
        omitted_when: Some(|c| c.x_mean_scale.is_none()),
        ..text("Laplace scale of the query means",
            "the query means' own Laplace scale b_x (the data panel sets it): how far the queries' means spread, apart from the keys'",
            Kernel, same_or_scale, |c| scale_text(c.x_mean_scale),
            |c, t| {
                c.x_mean_scale = parse_same_or_scale(t)?;
                Ok(())
            },
            |c| scale_in_range(c.x_mean_scale))
    },
    YMeanScale "yscale" => ParamSpec {
        omitted_when: Some(|c| c.y_mean_scale.is_none()),
        ..text("Laplace scale of the key means", "the key means' own Laplace scale b_y",
            Kernel, same_or_scale, |c| scale_text(c.y_mean_scale),
            |c, t| {
                c.y_mean_scale = parse_same_or_scale(t)?;
                Ok(())
            },
            |c| scale_in_range(c.y_mean_scale))
    },
    XShape "xshape" => number("Gamma shape of query variances",
        "Gamma shape of the query variances", Kernel,
        real(0.001, 100.0), false, |c| c.x_shape, |c, v| c.x_shape = v),
    YShape "yshape" => number("Gamma shape of key variances", "Gamma shape of the key variances",
        Kernel, real(0.001, 100.0), false, |c| c.y_shape, |c, v| c.y_shape = v),
    XNorm "xnorm" => number("mean query norm", "target mean norm of the queries", Kernel,
        real(0.01, 50.0), false, |c| c.x_norm, |c, v| c.x_norm = v),
    YNorm "ynorm" => number("mean key norm", "target mean norm of the keys", Kernel,
        real(0.01, 50.0), false, |c| c.y_norm, |c, v| c.y_norm = v),
    Estimators "est" => ParamSpec {
        docs_allowed: Some("a comma-separated, non-empty subset of the estimator ids (the first column of [the estimators](estimators.md); `kernel-lab --help` lists them too; the old names prf, mean, var also work)"),
        ..text("estimators", "estimators, by id (see [the estimators](estimators.md))",
        Kernel,
        || format!("a comma-separated, non-empty subset of the estimator ids {} (the old names prf, mean, var also work)", all_ids()),
        |c| c.estimators.iter().map(|e| e.id()).collect::<Vec<_>>().join(","),
        |c, t| {
            c.estimators = parse_estimators(t).map_err(Rejection::Because)?;
            Ok(())
        },
        |c| ascending_without_repeats(&c.estimators))
    },
    Theta "theta" => number("angle θ of the complex A",
        "angle θ of the complex A `e^(iθ)·diag(a)` (`cplx`, `hcplx`)", Kernel,
        real(0.0, std::f64::consts::FRAC_PI_2), false, |c| c.theta, |c, v| c.theta = v),
    ComplexA "cplxa" => text("magnitudes a of the complex A",
        "how the complex A's magnitudes a are chosen", Kernel,
        || "identity, mean-only or variance-adjusted".to_string(),
        |c| c.complex_a.cli_name().to_string(),
        |c, t| {
            c.complex_a = t.trim().parse::<AHeuristic>().map_err(|_| Rejection::NotAllowed)?;
            Ok(())
        },
        every_value_allowed),
    Coupling "coupling" => text("coupling of ω",
        "how every estimator draws its rows of ω together: `iid`, `orthogonal` blocks of d (Performer's ORF), `simplex` blocks (Reid et al. 2023) or `rqmc` (a randomly shifted Halton sequence through Φ⁻¹); each keeps every estimator unbiased", Kernel,
        || "iid, orthogonal, simplex or rqmc".to_string(),
        |c| c.coupling.id().to_string(),
        |c, t| {
            c.coupling = Coupling::from_id(t.trim()).ok_or(Rejection::NotAllowed)?;
            Ok(())
        },
        every_value_allowed),
    Omega "omega" => text("projections ω", "ω shared by a dataset's pairs, or fresh for every pair",
        Kernel, || "shared or fresh".to_string(),
        |c| match c.omega { OmegaMode::Shared => "shared", OmegaMode::Fresh => "fresh" }.to_string(),
        |c, t| {
            c.omega = match t.trim() {
                "shared" => OmegaMode::Shared,
                "fresh" => OmegaMode::Fresh,
                _ => return Err(Rejection::NotAllowed),
            };
            Ok(())
        },
        every_value_allowed),
    Probe "probe" => text("probed pair (index)",
        "the scatter dataset's pair examined by the single-pair probe", Kernel,
        || format!("none, or an integer from 0 to {} (a pair of the scatter dataset)", PROBE_RANGE.max),
        |c| c.probe.map_or_else(|| "none".to_string(), |i| i.to_string()),
        |c, t| {
            c.probe = match t.trim() {
                "" | "none" => None,
                number => Some(parse_in_range(number, PROBE_RANGE)? as usize),
            };
            Ok(())
        },
        |c| c.probe.is_none_or(|i| PROBE_RANGE.contains(i as f64))),
    Trials "trials" => number("probe estimates T", "independent estimates the probe draws", Kernel,
        int(2.0, 100_000.0), false, |c| c.trials as f64, |c, v| c.trials = v as usize),
    View "view" => text("view",
        "the view shown: single kernel values, whole attention rows, or the language model",
        Attention, || "kernel, attention or lm".to_string(),
        |c| match c.view {
            View::Kernel => "kernel",
            View::Attention => "attention",
            View::Lm => "lm",
        }.to_string(),
        |c, t| {
            c.view = match t.trim() {
                "kernel" => View::Kernel,
                "attention" => View::Attention,
                "lm" => View::Lm,
                _ => return Err(Rejection::NotAllowed),
            };
            Ok(())
        },
        every_value_allowed),
    Source "src" => text("data",
        "the attention view's data: the kernel view's distributions, or a real head", Attention,
        || "synthetic, minilm (the stored passages), text (the encoder on `text`) or lm (the causal language model on `text`)".to_string(),
        |c| match c.attention.source {
            HeadSource::Synthetic => "synthetic",
            HeadSource::Minilm => "minilm",
            HeadSource::Text => "text",
            HeadSource::Lm => "lm",
        }.to_string(),
        |c, t| {
            let source = match t.trim() {
                "synthetic" => HeadSource::Synthetic,
                "minilm" => HeadSource::Minilm,
                "text" => HeadSource::Text,
                "lm" => HeadSource::Lm,
                _ => return Err(Rejection::NotAllowed),
            };
            // The chosen head kept where the new model has it, else its last.
            let (layers, heads) = source.shape();
            c.attention.source = source;
            c.attention.layer = c.attention.layer.min(layers - 1);
            c.attention.head = c.attention.head.min(heads - 1);
            Ok(())
        },
        every_value_allowed),
    Passage "passage" => number("passage", "the stored passage of the real heads", Attention,
        int(0.0, (HEAD_PASSAGES - 1) as f64), false,
        |c| c.attention.passage as f64, |c, v| c.attention.passage = v as usize),
    Text "text" => text("text", "the text the model runs on (src=text, src=lm, view=lm)", Attention,
        || format!("any text of up to {MAX_LINK_TEXT_CHARS} characters"),
        |c| c.attention.text.chars().take(MAX_LINK_TEXT_CHARS).collect(),
        |c, t| {
            if t.chars().count() > MAX_LINK_TEXT_CHARS {
                return Err(Rejection::Because(format!(
                    "a link carries at most {MAX_LINK_TEXT_CHARS} characters of text"
                )));
            }
            c.attention.text = t.to_string();
            Ok(())
        },
        |c| c.attention.text.len() <= super::attention::MAX_TEXT_BYTES),
    Layer "layer" => number("layer", "the layer of the real head (0 to 5 in all-MiniLM-L6-v2, 0 to 29 in SmolLM2-135M)", Attention,
        int(0.0, (MAX_HEAD_LAYERS - 1) as f64), false,
        |c| c.attention.layer as f64, |c, v| c.attention.layer = v as usize),
    Head "head" => number("head", "the head within the layer (0 to 11 in all-MiniLM-L6-v2, 0 to 8 in SmolLM2-135M)", Attention,
        int(0.0, (MAX_HEADS_PER_LAYER - 1) as f64), false,
        |c| c.attention.head as f64, |c, v| c.attention.head = v as usize),
    Len "len" => number("tokens L", "tokens L of synthetic data (a real passage has 32)",
        Attention, int(2.0, 1024.0), true,
        |c| c.attention.len as f64, |c, v| c.attention.len = v as usize),
    ValueDim "dv" => number("value dimension",
        "dimension of synthetic values (a real head's are 32)", Attention,
        int(1.0, 64.0), true,
        |c| c.attention.value_dim as f64, |c, v| c.attention.value_dim = v as usize),
    Features "features" => number("random features m",
        "random projections m of every random feature map", Attention,
        int(1.0, 4096.0), true,
        |c| c.attention.features as f64, |c, v| c.attention.features = v as usize),
    Methods "methods" => ParamSpec {
        docs_allowed: Some("a comma-separated, non-empty subset of the method ids (the estimator ids, then those of [the attention view](attention-view.md); `kernel-lab --help` lists them all)"),
        ..text("methods", "the methods compared", Attention,
        || format!("a comma-separated, non-empty subset of the method ids {}", all_method_ids()),
        |c| c.attention.methods.iter().map(|m| m.id()).collect::<Vec<_>>().join(","),
        |c, t| {
            c.attention.methods = super::attention::parse_methods(t).map_err(Rejection::Because)?;
            Ok(())
        },
        |c| ascending_without_repeats(&c.attention.methods))
    },
    Degree "deg" => number("degree n (Taylor, (1 + x/n)^n)",
        "degree n of the Taylor and (1 + x/n)^n maps", Attention,
        int(1.0, 6.0), true,
        |c| c.attention.degree as f64, |c, v| c.attention.degree = v as usize),
    Draws "draws" => number("draws R (bias, variance)",
        "independent draws R for bias and variance", Attention,
        int(2.0, 64.0), true,
        |c| c.attention.draws as f64, |c, v| c.attention.draws = v as usize),
    RaSamples "ras" => number("randomized attention samples S",
        "samples S per query of randomized attention", Attention,
        int(1.0, 64.0), true,
        |c| c.attention.ra_samples as f64, |c, v| c.attention.ra_samples = v as usize),
    // Up to the longest sequence `len` allows: a larger value would only be clamped to L. A
    // window or top-k of 0 is the method's linear part alone (Taylor-2, Performer).
    Landmarks "landmarks" => number("Nyström landmarks c",
        "landmarks c of Nyström attention (more than L are clamped to L)", Attention,
        int(1.0, 1024.0), true,
        |c| c.attention.landmarks as f64, |c, v| c.attention.landmarks = v as usize),
    Window "window" => number("window w (window + Taylor-2)",
        "keys w near each query given their exact weight by the window + Taylor-2 method (clamped to L)",
        Attention, int(0.0, 1024.0), true,
        |c| c.attention.window as f64, |c, v| c.attention.window = v as usize),
    TopK "topk" => number("exact keys k (sparse + low-rank)",
        "largest-score keys k per query computed exactly by the sparse + low-rank method (clamped to L)",
        Attention, int(0.0, 1024.0), true,
        |c| c.attention.top_k as f64, |c, v| c.attention.top_k = v as usize),
    Focus "focus" => text("method in the heatmaps", "the method shown in the heatmaps", Attention,
        || "one method id (see methods)".to_string(),
        |c| c.attention.focus.id().to_string(),
        |c, t| {
            c.attention.focus = MethodId::from_id(t.trim()).ok_or(Rejection::NotAllowed)?;
            Ok(())
        },
        every_value_allowed),
    SwapLayers "swap" => text("layers swapped",
        "the model's layers whose every head runs each method in the model swap (src=text)", Attention,
        || format!("all, none (no swap), or distinct layers from 0 to {}, comma-separated", HEAD_LAYERS - 1),
        |c| super::attention::swap_layers_text(&c.attention.swap_layers),
        |c, t| {
            c.attention.swap_layers = super::attention::parse_swap_layers(t).map_err(Rejection::Because)?;
            Ok(())
        },
        |c| c.attention.swap_layers.windows(2).all(|p| p[0] < p[1])
            && c.attention.swap_layers.iter().all(|&l| l < HEAD_LAYERS)),
    SwapDraws "swapdraws" => number("draws in the model",
        "draws of each random method swapped into the model", Attention,
        int(1.0, super::attention::MAX_SWAP_DRAWS as f64), false,
        |c| c.attention.swap_draws as f64, |c, v| c.attention.swap_draws = v as usize),
    HedgehogSteps "hhsteps" => number("Hedgehog training steps",
        "Adam steps of the Hedgehog maps' training (0 leaves Hedgehog out)", Attention,
        int(0.0, 1000.0), false,
        |c| c.attention.hedgehog_steps as f64, |c, v| c.attention.hedgehog_steps = v as usize),
    LmMethod "lmmethod" => text("method in the language model",
        "the method that replaces softmax in the language model (view=lm)", Attention,
        || "none, or a method id with a causal form (any but nystrom, ra, sparse and window)".to_string(),
        |c| c.attention.lm_method.map_or("none", MethodId::id).to_string(),
        |c, t| {
            c.attention.lm_method = match t.trim() {
                "none" => None,
                id => Some(MethodId::from_id(id).ok_or(Rejection::NotAllowed)?),
            };
            Ok(())
        },
        every_value_allowed),
    LmLayers "lmlayers" => text("layers swapped in the language model",
        "the language model's layers that run the method (view=lm)", Attention,
        || format!("all, a layer from 0 to {}, a list (1,4) or ranges (3-7)", super::attention::LM_LAYERS - 1),
        |c| super::attention::lm_layers_text(&c.attention.lm_layers),
        |c, t| {
            c.attention.lm_layers = super::attention::parse_layers(t, super::attention::LM_LAYERS)
                .map_err(Rejection::Because)?;
            Ok(())
        },
        |c| !c.attention.lm_layers.is_empty()
            && c.attention.lm_layers.windows(2).all(|p| p[0] < p[1])
            && c.attention.lm_layers.iter().all(|&l| l < super::attention::LM_LAYERS)),
    LmChart "lmchart" => text("per-layer chart",
        "whether the language model view charts the method in each layer alone (view=lm)", Attention,
        || "on or off".to_string(),
        |c| if c.attention.lm_chart { "on" } else { "off" }.to_string(),
        |c, t| {
            c.attention.lm_chart = match t.trim() {
                "on" => true,
                "off" => false,
                _ => return Err(Rejection::NotAllowed),
            };
            Ok(())
        },
        every_value_allowed),
    LmGenerate "lmgen" => number("tokens to continue",
        "tokens the language model adds to the text, exactly (key/value cache) and with the swapped layers decoded as recurrent networks (0: no continuation; view=lm)",
        Attention, int(0.0, super::attention::LM_MAX_GENERATED as f64), true,
        |c| c.attention.lm_generate as f64, |c, v| c.attention.lm_generate = v as usize),
    LmTemperature "lmtemp" => number("temperature",
        "the continuation's sampling temperature, its draws from the seed (0: the likeliest token each time)",
        Attention, real(0.0, 2.0), false,
        |c| c.attention.lm_temperature, |c, v| c.attention.lm_temperature = v),
    LmTrain "lmtrain" => text("layers to transfer",
        "the language model's layers whose Hedgehog maps are trained to imitate their softmax attention, then judged by the text's perplexity (none: no transfer; view=lm)", Attention,
        || format!("none, or layers as in lmlayers (0,1 or 0-3), each below {}", super::attention::LM_LAYERS),
        |c| match c.attention.lm_train.is_empty() {
            true => "none".to_string(),
            false => super::attention::lm_layers_text(&c.attention.lm_train),
        },
        |c, t| {
            c.attention.lm_train = match t.trim() {
                "none" => Vec::new(),
                t => super::attention::parse_layers(t, super::attention::LM_LAYERS)
                    .map_err(Rejection::Because)?,
            };
            Ok(())
        },
        |c| c.attention.lm_train.windows(2).all(|p| p[0] < p[1])
            && c.attention.lm_train.iter().all(|&l| l < super::attention::LM_LAYERS)),
    LmSteps "lmsteps" => number("transfer steps",
        "Adam steps of each transferred layer's training (view=lm)",
        Attention, int(1.0, super::attention::LM_MAX_TRAIN_STEPS as f64), false,
        |c| c.attention.lm_train_steps as f64, |c, v| c.attention.lm_train_steps = v as usize),
    ReuseAnswers "reuse" => text("reuse answers",
        "whether the model swap takes the Hedgehog maps and the retrieval reports shipped with the lab or kept from an earlier visit when their check holds (off: computed here)", Attention,
        || "on or off".to_string(),
        |c| if c.attention.reuse_answers { "on" } else { "off" }.to_string(),
        |c, t| {
            c.attention.reuse_answers = match t.trim() {
                "on" => true,
                "off" => false,
                _ => return Err(Rejection::NotAllowed),
            };
            Ok(())
        },
        every_value_allowed),
    LengthMax "lmax" => number("length study up to L",
        "the length study's longest sequence L (0 turns it off; it measures L = 128, 256, … up to this)",
        Attention, int(0.0, 16384.0), true,
        |c| c.attention.length_max as f64, |c, v| c.attention.length_max = v as usize),
    LengthsAlone "lalone" => text("length study one worker at a time",
        "whether the page's length study times one piece at a time, each kernel alone (on), or one on every worker at once (off; the command line always times one at a time)", Attention,
        || "on or off".to_string(),
        |c| if c.attention.lengths_alone { "on" } else { "off" }.to_string(),
        |c, t| {
            c.attention.lengths_alone = match t.trim() {
                "on" => true,
                "off" => false,
                _ => return Err(Rejection::NotAllowed),
            };
            Ok(())
        },
        every_value_allowed),
    Retrieval "retrieval" => ParamSpec {
        omitted_when: Some(|c| c.attention.retrieval == super::attention::default_retrieval()),
        ..text("retrieval set", "the retrieval set: a query, then candidates, one per line", Attention,
        || {
            let (least, most) = super::attention::RETRIEVAL_CANDIDATES_RANGE;
            format!("a query line, then {least} to {most} candidate lines")
        },
        |c| c.attention.retrieval.clone(),
        |c, t| {
            super::attention::parse_retrieval(t).map_err(Rejection::Because)?;
            c.attention.retrieval = t.to_string();
            Ok(())
        },
        |c| super::attention::parse_retrieval(&c.attention.retrieval).is_ok())
    },
    Hyperbolic "hyp" => text("hyperbolic features (legacy)",
        "legacy: `hyp=1` or `0` puts every chosen estimator that has a twin in its hyperbolic or positive form",
        Legacy, switch_words,
        |c| switch_text(c.estimators.iter().any(|e| e.info().is_hyperbolic())),
        |c, t| {
            c.estimators = with_form(&c.estimators, parse_switch(t)?);
            Ok(())
        },
        every_value_allowed),
    Orthogonal "orf" => text("orthogonal random features (legacy)",
        "legacy: `orf=1` is `coupling=orthogonal`; `orf=0` turns orthogonal blocks back to `iid` and leaves another coupling as it is",
        Legacy, switch_words, |c| switch_text(c.coupling == Coupling::Orthogonal), |c, t| {
            match (parse_switch(t)?, c.coupling) {
                (true, _) => c.coupling = Coupling::Orthogonal,
                (false, Coupling::Orthogonal) => c.coupling = Coupling::Iid,
                (false, _) => {}
            }
            Ok(())
        }, every_value_allowed),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_handle_names_its_own_entry_and_keys_are_unique() {
        for (name, key) in TABLE_KEYS {
            let param = Param::from_key(key).unwrap_or_else(|| panic!("{name}: no entry"));
            assert_eq!(param.spec().key, *key, "{name}");
        }
        let mut keys: Vec<&str> = TABLE.iter().map(|spec| spec.key).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), TABLE.len(), "two entries share a key");
        assert!(Param::from_key("nope").is_none());
        // The legacy keys are read but not listed among a link's parameters.
        assert!(Param::every().all(|p| p != Param::Hyperbolic && p != Param::Orthogonal));
        assert_eq!(Param::every().count(), TABLE.len() - 2);
    }
}
