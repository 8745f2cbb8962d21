//! The `kernel-lab` command line, as a library so that it is unit-testable and shares the
//! page's code path: `pair` runs one registered estimator on one (x, y) pair many times with
//! [`reference_estimate`] and compares it with the estimator's MSE formula; `estimators` lists
//! the registry; `experiment` parses the page's parameters with
//! [`ExperimentConfig::set`] (or [`ExperimentConfig::from_query`], strictly), runs
//! [`run_experiment`] and prints what the page shows, as JSON or CSV.
//!
//! The binary (`src/bin/kernel-lab.rs`) only collects the arguments, calls [`run`], prints
//! the text or the one-line error, and exits with [`CliError::EXIT_CODE`] on an error.
//! Nothing here touches the web, so it builds natively and for `wasm32-unknown-unknown`.

use std::fmt;

use serde::Serialize;

use crate::math::config::{ExperimentConfig, MAX_WORK, Param, ParamError};
use crate::math::dataset::{Dataset, SampleMoments};
use crate::math::estimators::{
    EstimatorId, EstimatorParams, Fit, FitInput, Projections, REGISTRY, all_ids,
    log_softmax_kernel, reference_estimate,
};
use crate::math::experiment::{EstimatorSummary, ExperimentResult, ScatterSeries, run_experiment};
use crate::math::heuristics::AHeuristic;
use crate::math::rng::{StreamPurpose, stream_rng};

/// Most components of `--x` and `--y`.
pub const MAX_VECTOR_LEN: usize = 4096;
/// Fewest trials of `pair`: the standard errors need a sample variance.
pub const MIN_TRIALS: u64 = 2;
/// Most trials of `pair`.
pub const MAX_TRIALS: u64 = 10_000_000;
/// Largest magnitude of a component of `--x` or `--y`. Beyond it `|Ax + A^-T y|²` (with
/// `a_i` up to [`crate::math::heuristics::A_MAX`] and 4096 components) could overflow even in
/// the log domain; below it every logarithm the estimators form is finite.
pub const MAX_COMPONENT: f64 = 1e100;
/// Default number of projections of `pair`.
pub const DEFAULT_M: u64 = 64;
/// Default number of trials of `pair`.
pub const DEFAULT_TRIALS: u64 = 10_000;

/// What `--help` prints.
pub const USAGE: &str = "\
kernel-lab: random-feature estimators of the softmax kernel SM(x, y) = exp(x·y)

USAGE:
    kernel-lab pair --x X --y Y [--estimator E] [--a A] [--m M] [--trials T] [--seed S]
                    [--theta T] [--cplxa A] [--orf 0|1]
    kernel-lab experiment [--d D --m M ... | --query QUERY] [--csv]
    kernel-lab estimators
    kernel-lab --help

pair: estimate SM(x, y) for one pair T times, each trial with fresh ω, and print JSON with
the true value, the mean estimate, the empirical MSE, the estimator's MSE formula and the
standard errors of the mean estimate and of the empirical MSE.
    --x, --y        comma-separated numbers, same length (1 to 4096), |value| <= 1e100
    --estimator     an id of `kernel-lab estimators` (prf-pos, prf-hyp, cexp-mean, ...,
                    rff, cplx, hcplx, oprf, oprf-var, hcexp-opt); the older names prf,
                    cexp and hcexp (with --a) still work                      [prf = prf-pos]
    --a             with cexp or hcexp: identity, mean-only or variance-adjusted, A from
                    the pair's components taken as the means, variance 0      [identity]
    --theta         the complex A's angle, 0 to pi/2 (cplx, hcplx)            [0.785...]
    --cplxa         the complex A's magnitudes: identity, mean-only, variance-adjusted
                                                                              [identity]
    --orf           1 for orthogonal random features                          [0]
    --m             random projections ω, 1 to 16384                          [64]
    --trials        independent trials, 2 to 10000000                         [10000]
    --seed          0 to 18446744073709551615                                 [0]

experiment: run the page's experiment and print its numbers as JSON (or CSV with --csv).
Parameters are the page's URL keys, as flags (--d 50 --m 64 --n 200 --datasets 5
--pairs 100 --seed 3 --scale 0.02 --xshape 0.02 --yshape 0.01 --xnorm 5 --ynorm 0.5
--est prf-hyp,hcexp-mean,hcexp-var --theta 0.5 --cplxa identity --orf 0 --omega shared)
or as one URL query (--query 'm=64&seed=3'), not both; a missing parameter takes the page's
default, a bad one is an error. --hyp 0/1 (legacy) puts the estimators in one form.
    --csv           print estimator,dataset,mse,max_rel_err rows instead of JSON

estimators: list every estimator (id, label, family, formula, source) as JSON.

Flags also accept --flag=value. Exit status: 0 on success, 2 on a rejected argument (one
line on stderr names it), 1 if the output cannot be written.
";

/// A rejected argument: which one and why. Every error of [`run`] is one of these, and the
/// binary exits with [`CliError::EXIT_CODE`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CliError {
    argument: String,
    message: String,
}

impl CliError {
    /// The exit status of the binary for any [`CliError`].
    pub const EXIT_CODE: u8 = 2;

    /// An error about `argument`. Control characters (a newline in a quoted value, say) are
    /// escaped so that the error always prints as one line.
    pub fn new(argument: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            argument: one_line(&argument.into()),
            message: one_line(&message.into()),
        }
    }

    /// The argument the error is about, for example `--m`.
    pub fn argument(&self) -> &str {
        &self.argument
    }

    /// What is wrong and what is allowed.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The exit status of the binary for this error (always [`CliError::EXIT_CODE`]).
    pub fn exit_code(&self) -> u8 {
        Self::EXIT_CODE
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.argument, self.message)
    }
}

impl std::error::Error for CliError {}

/// `text` with every control character escaped (`\n`, `\u{1b}`, ...).
fn one_line(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

/// User text for a message: at most 24 characters, in quotes, control characters escaped.
fn quote(text: &str) -> String {
    let mut shown: String = text.chars().take(24).collect();
    if text.chars().count() > 24 {
        shown.push('…');
    }
    format!("{shown:?}")
}

/// Runs the command line `args` (the arguments after the program name) and returns the text
/// to print on standard output (it ends with a newline), or the rejected argument.
pub fn run(args: &[String]) -> Result<String, CliError> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(USAGE.to_string());
    }
    let Some((command, rest)) = args.split_first() else {
        return Err(CliError::new(
            "<command>",
            "missing: expected `pair`, `experiment` or `estimators` (see --help)",
        ));
    };
    match command.as_str() {
        "pair" => {
            let request = PairRequest::parse(rest)?;
            to_json(&pair_report(&request)?)
        }
        "estimators" => {
            if let Some(extra) = rest.first() {
                return Err(CliError::new(extra, "`estimators` takes no arguments"));
            }
            to_json(&estimator_listing())
        }
        "experiment" => {
            let request = ExperimentRequest::parse(rest)?;
            let result = run_experiment(&request.config)
                .map_err(|e| CliError::new("experiment", e.to_string()))?;
            if request.csv {
                Ok(experiment_csv(&result))
            } else {
                to_json(&experiment_report(&result))
            }
        }
        other => Err(CliError::new(
            "<command>",
            format!(
                "expected `pair`, `experiment` or `estimators` (got {}; see --help)",
                quote(other)
            ),
        )),
    }
}

fn to_json<T: Serialize>(value: &T) -> Result<String, CliError> {
    let mut text =
        serde_json::to_string_pretty(value).map_err(|e| CliError::new("output", e.to_string()))?;
    text.push('\n');
    Ok(text)
}

// ---------------------------------------------------------------------------------------------
// Flags

/// Whether a flag takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FlagKind {
    Value,
    Switch,
}

/// One flag as given: its name with the dashes (`--m`) and its value (empty for a switch).
#[derive(Clone, Debug, PartialEq, Eq)]
struct GivenFlag {
    name: String,
    value: String,
}

/// Splits `args` into flags. `kind_of` says which flag names the command knows and whether
/// they take a value. A flag may appear once; its value is the next argument or follows `=`.
/// A value may start with one `-` (a negative number) but not with `--`, which is taken for
/// the next flag, so `--m --trials 5` reports `--m` as missing its value.
fn split_flags(
    command: &str,
    args: &[String],
    kind_of: impl Fn(&str) -> Option<FlagKind>,
) -> Result<Vec<GivenFlag>, CliError> {
    let mut flags: Vec<GivenFlag> = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let Some(body) = arg.strip_prefix("--") else {
            return Err(CliError::new(
                quote(arg),
                format!("unexpected argument for `{command}`: flags start with -- (see --help)"),
            ));
        };
        let (name, inline_value) = match body.split_once('=') {
            Some((name, value)) => (format!("--{name}"), Some(value.to_string())),
            None => (arg.clone(), None),
        };
        let Some(kind) = kind_of(&name[2..]) else {
            return Err(CliError::new(
                &name,
                format!("unknown flag for `{command}` (see --help)"),
            ));
        };
        if flags.iter().any(|f| f.name == name) {
            return Err(CliError::new(&name, "given more than once"));
        }
        let value = match (kind, inline_value) {
            (FlagKind::Switch, None) => String::new(),
            (FlagKind::Switch, Some(_)) => {
                return Err(CliError::new(&name, "takes no value"));
            }
            (FlagKind::Value, Some(value)) => value,
            (FlagKind::Value, None) => match rest.next() {
                Some(value) if !value.starts_with("--") => value.clone(),
                _ => return Err(CliError::new(&name, "missing value")),
            },
        };
        flags.push(GivenFlag { name, value });
    }
    Ok(flags)
}

/// An integer in `min..=max`, written as digits or (like the page) as an integral number
/// such as `1e3`.
fn parse_integer(flag: &str, text: &str, min: u64, max: u64) -> Result<u64, CliError> {
    let reject = || {
        CliError::new(
            flag,
            format!(
                "must be an integer from {min} to {max} (got {})",
                quote(text)
            ),
        )
    };
    let trimmed = text.trim();
    let value = match trimmed.parse::<u64>() {
        Ok(value) => value,
        Err(_) => {
            let real: f64 = trimmed.parse().map_err(|_| reject())?;
            // Above 2^53 a float no longer names one integer.
            if !(real.is_finite()
                && real.fract() == 0.0
                && (0.0..=9.007_199_254_740_992e15).contains(&real))
            {
                return Err(reject());
            }
            real as u64
        }
    };
    if value < min || value > max {
        return Err(reject());
    }
    Ok(value)
}

/// A comma-separated vector of finite numbers of magnitude at most [`MAX_COMPONENT`], with 1
/// to [`MAX_VECTOR_LEN`] components.
fn parse_vector(flag: &str, text: &str) -> Result<Vec<f64>, CliError> {
    if text.trim().is_empty() {
        return Err(CliError::new(
            flag,
            "must be a non-empty, comma-separated list of numbers",
        ));
    }
    let len = text.split(',').count();
    if len > MAX_VECTOR_LEN {
        return Err(CliError::new(
            flag,
            format!("must have at most {MAX_VECTOR_LEN} components (got {len})"),
        ));
    }
    text.split(',')
        .enumerate()
        .map(|(i, item)| {
            let position = i + 1;
            let item = item.trim();
            let value: f64 = item.parse().map_err(|_| {
                CliError::new(
                    flag,
                    format!("component {position} is not a number (got {})", quote(item)),
                )
            })?;
            if !value.is_finite() {
                return Err(CliError::new(
                    flag,
                    format!("component {position} must be finite (got {})", quote(item)),
                ));
            }
            if value.abs() > MAX_COMPONENT {
                return Err(CliError::new(
                    flag,
                    format!(
                        "component {position} must have magnitude at most 1e100 (got {})",
                        quote(item)
                    ),
                ));
            }
            Ok(value)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// pair

/// A parsed `pair` command.
#[derive(Clone, Debug, PartialEq)]
pub struct PairRequest {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub estimator: EstimatorId,
    /// θ and the complex A's magnitudes (read by the complex estimators only).
    pub params: EstimatorParams,
    pub m: usize,
    pub trials: u64,
    pub seed: u64,
    /// Orthogonal random features.
    pub orthogonal: bool,
}

/// The estimator named by `--estimator` and `--a`: a registry id, or one of the names from
/// before the registry (`prf`, `cexp`, `hcexp` with `--a`), which map onto the ids.
fn pair_estimator(name: Option<&str>, a: Option<&str>) -> Result<EstimatorId, CliError> {
    let heuristic = match a {
        Some(text) => Some(text.trim().parse::<AHeuristic>().map_err(|_| {
            CliError::new(
                "--a",
                format!(
                    "must be identity, mean-only or variance-adjusted (got {})",
                    quote(text)
                ),
            )
        })?),
        None => None,
    };
    let name = name.map_or("prf", str::trim);
    let legacy = |positive: bool| {
        let id = match heuristic.unwrap_or(AHeuristic::Identity) {
            AHeuristic::Identity if positive => "prf-pos",
            AHeuristic::Identity => "prf-hyp",
            AHeuristic::MeanOnly if positive => "cexp-mean",
            AHeuristic::MeanOnly => "hcexp-mean",
            AHeuristic::VarianceAdjusted if positive => "cexp-var",
            AHeuristic::VarianceAdjusted => "hcexp-var",
        };
        EstimatorId::from_id(id)
    };
    let id = match name {
        "cexp" => legacy(true),
        "hcexp" => legacy(false),
        _ => {
            let id = match name {
                "prf" => "prf-pos",
                other => other,
            };
            let estimator = EstimatorId::from_id(id).ok_or_else(|| {
                CliError::new(
                    "--estimator",
                    format!(
                        "must be one of {} (or cexp, hcexp with --a) (got {})",
                        all_ids(),
                        quote(name)
                    ),
                )
            })?;
            if let Some(h) = heuristic.filter(|h| *h != AHeuristic::Identity) {
                return Err(CliError::new(
                    "--a",
                    format!(
                        "{name} names its own A; use --estimator cexp or hcexp for a {} A",
                        h.cli_name()
                    ),
                ));
            }
            Some(estimator)
        }
    };
    id.ok_or_else(|| CliError::new("--estimator", "is not registered"))
}

impl PairRequest {
    /// Parses the flags of `pair` (everything after the word `pair`).
    pub fn parse(args: &[String]) -> Result<Self, CliError> {
        let flags = split_flags("pair", args, |name| match name {
            "x" | "y" | "estimator" | "a" | "m" | "trials" | "seed" | "theta" | "cplxa" | "orf" => {
                Some(FlagKind::Value)
            }
            _ => None,
        })?;
        let value_of = |name: &str| {
            flags
                .iter()
                .find(|f| f.name == name)
                .map(|f| f.value.as_str())
        };
        let x = parse_vector(
            "--x",
            value_of("--x")
                .ok_or_else(|| CliError::new("--x", "required (for example --x 1,2,3)"))?,
        )?;
        let y = parse_vector(
            "--y",
            value_of("--y")
                .ok_or_else(|| CliError::new("--y", "required (for example --y 3,2,1)"))?,
        )?;
        if x.len() != y.len() {
            return Err(CliError::new(
                "--y",
                format!(
                    "must have as many components as --x ({} components, got {})",
                    x.len(),
                    y.len()
                ),
            ));
        }
        let estimator = pair_estimator(value_of("--estimator"), value_of("--a"))?;
        // θ, the complex A and orthogonal features go through the page's parser.
        let mut page = ExperimentConfig::default();
        for param in [Param::Theta, Param::ComplexA, Param::Orthogonal] {
            if let Some(text) = value_of(&format!("--{}", param.key())) {
                page.set(param, text)
                    .map_err(|e| CliError::new(format!("--{}", param.key()), e.message))?;
            }
        }
        let m_range = Param::M
            .range()
            .map_or((1, 16384), |r| (r.min as u64, r.max as u64));
        let m = match value_of("--m") {
            Some(text) => parse_integer("--m", text, m_range.0, m_range.1)?,
            None => DEFAULT_M,
        };
        let trials = match value_of("--trials") {
            Some(text) => parse_integer("--trials", text, MIN_TRIALS, MAX_TRIALS)?,
            None => DEFAULT_TRIALS,
        };
        let seed = match value_of("--seed") {
            Some(text) => parse_integer("--seed", text, 0, u64::MAX)?,
            None => 0,
        };
        let work = trials as f64 * m as f64 * x.len() as f64 * estimator.get().cost_factor();
        if work > MAX_WORK {
            return Err(CliError::new(
                "--trials",
                format!(
                    "trials · m · d = {work:.1e} multiply-adds, above the limit of {MAX_WORK:.1e} (the page's): lower --trials, --m or the length of --x"
                ),
            ));
        }
        Ok(Self {
            x,
            y,
            estimator,
            params: page.estimator_params(),
            m: m as usize,
            trials,
            seed,
            orthogonal: page.orthogonal,
        })
    }
}

/// What `pair` prints. A number beyond the range of a 64-bit float (for example
/// `SM = exp(x·y)` with `x·y > 709`) is `None`, printed as JSON `null`; the `log_` fields
/// stay finite much longer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PairReport {
    /// The estimator's registry id (`kernel-lab estimators` lists them).
    pub estimator: &'static str,
    /// Its label.
    pub label: &'static str,
    /// Orthogonal random features.
    pub orthogonal: bool,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub m: usize,
    pub trials: u64,
    pub seed: u64,
    /// The diagonal of A that was used (its magnitudes for a complex A; ones for A = I).
    pub diagonal_a: Vec<f64>,
    /// Entries of A clamped into `[A_MIN, A_MAX]` (for example a zero component of x).
    pub clamped: usize,
    /// The complex A's angle θ (0 for a real A).
    pub theta: f64,
    /// GERF's α (0 for the others).
    pub alpha: f64,
    /// `SM(x, y) = exp(x·y)`.
    pub true_value: Option<f64>,
    /// `x·y`.
    pub log_true_value: Option<f64>,
    /// Mean of the `trials` estimates.
    pub mean_estimate: Option<f64>,
    /// Standard error of `mean_estimate`: sample standard deviation of the estimates / √T.
    pub standard_error: Option<f64>,
    /// Mean of the squared errors `(ŜM_t − SM)²`.
    pub empirical_mse: Option<f64>,
    /// Standard error of `empirical_mse`: sample sd of the squared errors / √T.
    pub mse_standard_error: Option<f64>,
    /// The estimator's MSE formula for i.i.d. ω (Lemma 3.1 for CEXP/HCEXP; 0 when the
    /// estimator is exact, `null` where there is no formula).
    pub theoretical_mse: Option<f64>,
    /// Its logarithm (`null` when the MSE is 0).
    pub log_theoretical_mse: Option<f64>,
}

/// `Some(value)` when it is finite.
fn finite(value: f64) -> Option<f64> {
    value.is_finite().then_some(value)
}

/// `value · exp(log_factor)` as one exponential, so that it overflows only when the product
/// does.
fn scaled(value: f64, log_factor: f64) -> f64 {
    if value == 0.0 {
        0.0
    } else {
        value.signum() * (log_factor + value.abs().ln()).exp()
    }
}

/// Running mean and sum of squared deviations (Welford), so that ten million trials need no
/// storage and lose no precision to a large mean.
#[derive(Clone, Copy, Debug, Default)]
struct RunningMoments {
    count: u64,
    mean: f64,
    squared_deviations: f64,
}

impl RunningMoments {
    fn push(&mut self, value: f64) {
        self.count += 1;
        let delta = value - self.mean;
        self.mean += delta / self.count as f64;
        self.squared_deviations += delta * (value - self.mean);
    }

    /// Sample standard deviation (divisor n − 1) over √n: the standard error of the mean.
    fn standard_error(&self) -> f64 {
        let n = self.count as f64;
        (self.squared_deviations / (n - 1.0) / n).sqrt()
    }
}

/// Runs `pair`. The estimator fits to the pair itself: its components are the means and the
/// variances are 0 ([`SampleMoments::of_pair`]), so mean-only and variance-adjusted A
/// coincide. Trial `t` draws its ω from the stream `(seed, Trial, t, 0)`.
///
/// The statistics are accumulated as ratios `ŜM_t / SM` and scaled by `SM` (or `SM²`) at the
/// end, so a pair whose estimates would overflow one by one still gets finite summaries
/// whenever the summaries themselves are representable.
pub fn pair_report(request: &PairRequest) -> Result<PairReport, CliError> {
    let (x, y) = (&request.x, &request.y);
    let d = x.len();
    let estimator = request.estimator.get();
    let data = Dataset {
        d,
        n: 1,
        x: x.clone(),
        y: y.clone(),
    };
    let fit = estimator
        .fit(
            FitInput {
                data: &data,
                moments: &SampleMoments::of_pair(x, y),
            },
            &request.params,
        )
        .map_err(|e| CliError::new("--estimator", e.to_string()))?;
    let mut omega =
        Projections::zeroed(request.m, d).map_err(|e| CliError::new("--m", e.to_string()))?;
    let log_true = log_softmax_kernel(x, y);
    let mut ratios = RunningMoments::default();
    let mut squared_relative_errors = RunningMoments::default();
    for trial in 0..request.trials {
        let mut rng = stream_rng(request.seed, StreamPurpose::Trial, trial, 0);
        if request.orthogonal {
            omega.resample_orthogonal(&mut rng);
        } else {
            omega.resample(&mut rng);
        }
        let estimate = reference_estimate(estimator, &fit, x, y, &omega)
            .map_err(|e| CliError::new("--y", e.to_string()))?;
        let ratio = estimate.scaled(-log_true).value();
        ratios.push(ratio);
        squared_relative_errors.push((ratio - 1.0) * (ratio - 1.0));
    }
    let log_mse = estimator.log_mse(&fit, x, y, request.m).unwrap_or(f64::NAN);
    Ok(PairReport {
        estimator: estimator.id(),
        label: estimator.label(),
        orthogonal: request.orthogonal,
        x: x.clone(),
        y: y.clone(),
        m: request.m,
        trials: request.trials,
        seed: request.seed,
        theta: fit.theta,
        alpha: fit.alpha,
        clamped: fit.clamped,
        diagonal_a: fit.a,
        true_value: finite(log_true.exp()),
        log_true_value: finite(log_true),
        mean_estimate: finite(scaled(ratios.mean, log_true)),
        standard_error: finite(scaled(ratios.standard_error(), log_true)),
        empirical_mse: finite(scaled(squared_relative_errors.mean, 2.0 * log_true)),
        mse_standard_error: finite(scaled(
            squared_relative_errors.standard_error(),
            2.0 * log_true,
        )),
        theoretical_mse: if log_mse.is_nan() {
            None
        } else {
            finite(log_mse.exp())
        },
        log_theoretical_mse: finite(log_mse),
    })
}

/// What `kernel-lab estimators` prints: every registered estimator, one JSON object each.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EstimatorListing {
    pub id: &'static str,
    pub label: &'static str,
    pub family: &'static str,
    pub formula: &'static str,
    pub source: &'static str,
    /// `+` and `hyp+` twins for the legacy `hyp` parameter.
    pub twin: Option<&'static str>,
    /// Whether the estimate can be negative.
    pub signed: bool,
    /// Whether Lemma 3.2 and Theorem 3.3 hold for it.
    pub seed_paper_bounds: bool,
}

/// The registry as [`EstimatorListing`]s.
pub fn estimator_listing() -> Vec<EstimatorListing> {
    let params = EstimatorParams::default();
    REGISTRY
        .iter()
        .map(|e| {
            let fit = Fit {
                theta: params.theta,
                ..Fit::identity(1)
            };
            EstimatorListing {
                id: e.id(),
                label: e.label(),
                family: e.family().label(),
                formula: e.docs().formula,
                source: e.docs().source,
                twin: e.twin(),
                signed: e.fast_sum(&fit).is_signed(),
                seed_paper_bounds: e.bounds().hyperbolic_real_a,
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// experiment

/// A parsed `experiment` command.
#[derive(Clone, Debug, PartialEq)]
pub struct ExperimentRequest {
    pub config: ExperimentConfig,
    /// CSV rows instead of JSON.
    pub csv: bool,
}

impl ExperimentRequest {
    /// Parses the flags of `experiment`: the page's parameters by their URL keys, or one
    /// `--query`, and `--csv`.
    pub fn parse(args: &[String]) -> Result<Self, CliError> {
        let flags = split_flags("experiment", args, |name| match name {
            "csv" => Some(FlagKind::Switch),
            "query" => Some(FlagKind::Value),
            key => Param::from_key(key).map(|_| FlagKind::Value),
        })?;
        let csv = flags.iter().any(|f| f.name == "--csv");
        let query = flags.iter().find(|f| f.name == "--query");
        let parameters: Vec<(Param, &GivenFlag)> = flags
            .iter()
            .filter_map(|f| Param::from_key(&f.name[2..]).map(|p| (p, f)))
            .collect();
        let config = match (query, parameters.first()) {
            (Some(_), Some((_, flag))) => {
                return Err(CliError::new(
                    &flag.name,
                    "cannot be combined with --query: give every parameter in the query or every one as a flag",
                ));
            }
            (Some(query), None) => config_from_query(&query.value)?,
            (None, _) => config_from_flags(&parameters)?,
        };
        Ok(Self { config, csv })
    }
}

/// The configuration of a URL query, read by the page's own parser; where the page would
/// keep a default and show a notice, the command line refuses.
fn config_from_query(query: &str) -> Result<ExperimentConfig, CliError> {
    let (config, notices) = ExperimentConfig::from_query(query);
    match notices.first() {
        Some(notice) => Err(CliError::new("--query", strict_notice(notice))),
        None => Ok(config),
    }
}

/// A notice of [`ExperimentConfig::from_query`] as an error: `key: message`, without the
/// page's note on what it does instead (keep the default, ignore, use the first value).
fn strict_notice(notice: &ParamError) -> String {
    let mut message = notice.message.as_str();
    for lenient in ["; the default ", "; the first value is used", ", ignored"] {
        if let Some((strict, _)) = message.split_once(lenient) {
            message = strict;
        }
    }
    format!("{}: {message}", notice.key)
}

/// The configuration of parameter flags, set in order with [`ExperimentConfig::set`]. The work
/// limit depends on several parameters, so a refused value is retried after the others (what
/// [`ExperimentConfig::from_query`] does), and the order of the flags does not matter.
fn config_from_flags(parameters: &[(Param, &GivenFlag)]) -> Result<ExperimentConfig, CliError> {
    let mut config = ExperimentConfig::default();
    let mut deferred = Vec::new();
    // The legacy `--hyp` applies to the estimators chosen, wherever it stands.
    let mut parameters = parameters.to_vec();
    parameters.sort_by_key(|(param, _)| *param == Param::Hyperbolic);
    for (param, flag) in &parameters {
        if config.set(*param, &flag.value).is_err() {
            deferred.push((*param, *flag));
        }
    }
    for (param, flag) in deferred {
        config
            .set(param, &flag.value)
            .map_err(|e| CliError::new(&flag.name, e.message))?;
    }
    Ok(config)
}

/// The mean-only and variance-adjusted estimators compared dataset by dataset (the page's
/// paired count): the hyperbolic pair first, as in the seed paper.
pub const PAIRED_HEURISTICS: [(&str, &str); 2] =
    [("hcexp-mean", "hcexp-var"), ("cexp-mean", "cexp-var")];

/// What `experiment` prints as JSON. Non-finite numbers (an MSE that overflows, at extreme
/// norms) are `null`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExperimentReport {
    /// The configuration as the page's URL query (every parameter).
    pub config: String,
    /// One entry per selected estimator, in the page's order.
    pub estimators: Vec<EstimatorReport>,
    /// The page's paired count, when both mean-only and variance-adjusted A ran.
    pub paired_comparison: Option<PairedComparison>,
}

/// One estimator's numbers, as in the page's table and charts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EstimatorReport {
    /// The estimator's registry id (`kernel-lab estimators`).
    pub id: &'static str,
    pub label: &'static str,
    /// Median over the boxplot datasets of their MSE.
    pub median_mse: Option<f64>,
    /// Median over the boxplot datasets of their max relative error.
    pub median_max_rel_err: Option<f64>,
    /// Median over the boxplot datasets of Lemma 3.1's expected MSE (the boxplot's marker).
    pub median_theoretical_mse: Option<f64>,
    /// MSE on the scatter dataset (Figure 1).
    pub scatter_mse: Option<f64>,
    /// Max relative error on the scatter dataset.
    pub scatter_max_rel_err: Option<f64>,
    /// Clamped diagonal entries of A, summed over the boxplot datasets (the table's column).
    pub clamped: usize,
    /// Clamped diagonal entries of A on the scatter dataset.
    pub scatter_clamped: usize,
    /// MSE of boxplot datasets 1, 2, … (Figure 2).
    pub per_dataset_mse: Vec<Option<f64>>,
    /// Max relative error of boxplot datasets 1, 2, … (Figure 3).
    pub per_dataset_max_rel_err: Vec<Option<f64>>,
}

/// "Variance-adjusted A has the lower MSE in k of N datasets" (same data and ω).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PairedComparison {
    pub variance_adjusted_lower_mse: usize,
    pub datasets: usize,
}

fn estimator_report(summary: &EstimatorSummary, scatter: &ScatterSeries) -> EstimatorReport {
    EstimatorReport {
        id: summary.estimator.id(),
        label: summary.estimator.label(),
        median_mse: finite(summary.median_mse),
        median_max_rel_err: finite(summary.median_max_rel_err),
        median_theoretical_mse: finite(summary.median_theoretical_mse),
        scatter_mse: finite(scatter.metrics.mse),
        scatter_max_rel_err: finite(scatter.metrics.max_rel_err),
        clamped: summary.clamped,
        scatter_clamped: scatter.estimates.clamped(),
        per_dataset_mse: summary.per_dataset.iter().map(|m| finite(m.mse)).collect(),
        per_dataset_max_rel_err: summary
            .per_dataset
            .iter()
            .map(|m| finite(m.max_rel_err))
            .collect(),
    }
}

/// The numbers the page shows for `result`.
pub fn experiment_report(result: &ExperimentResult) -> ExperimentReport {
    let find = |id: &str| result.summaries.iter().find(|s| s.estimator.id() == id);
    let paired_comparison = PAIRED_HEURISTICS
        .iter()
        .find_map(|(mean, var)| find(mean).zip(find(var)))
        .map(|(mean, var)| PairedComparison {
            variance_adjusted_lower_mse: mean
                .per_dataset
                .iter()
                .zip(&var.per_dataset)
                .filter(|(m, v)| v.mse < m.mse)
                .count(),
            datasets: var.per_dataset.len(),
        });
    ExperimentReport {
        config: result.config.to_query(),
        estimators: result
            .summaries
            .iter()
            .zip(&result.scatter)
            .map(|(summary, scatter)| estimator_report(summary, scatter))
            .collect(),
        paired_comparison,
    }
}

/// The CSV header of `experiment --csv`.
pub const CSV_HEADER: &str = "estimator,dataset,mse,max_rel_err";

/// A number for CSV: the shortest text that reads back to the same float (as in the JSON),
/// `inf` or `nan` when it is not finite.
fn csv_number(value: f64) -> String {
    match serde_json::Number::from_f64(value) {
        Some(number) => number.to_string(),
        None if value.is_nan() => "nan".to_string(),
        None if value > 0.0 => "inf".to_string(),
        None => "-inf".to_string(),
    }
}

/// `experiment --csv`: the header, then per estimator one row per boxplot dataset
/// (`dataset` = 1, 2, …) and one for the scatter dataset (`dataset` = `scatter`).
pub fn experiment_csv(result: &ExperimentResult) -> String {
    let mut csv = format!("{CSV_HEADER}\n");
    for (summary, scatter) in result.summaries.iter().zip(&result.scatter) {
        let id = summary.estimator.id();
        let rows = summary
            .per_dataset
            .iter()
            .enumerate()
            .map(|(i, m)| ((i + 1).to_string(), m))
            .chain(std::iter::once(("scatter".to_string(), &scatter.metrics)));
        for (dataset, metrics) in rows {
            csv.push_str(&format!(
                "{id},{dataset},{},{}\n",
                csv_number(metrics.mse),
                csv_number(metrics.max_rel_err)
            ));
        }
    }
    csv
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    fn error_of(line: &str) -> CliError {
        run(&args(line)).expect_err(line)
    }

    #[test]
    fn help_wins_anywhere_and_no_command_is_an_error() {
        assert_eq!(run(&args("--help")).unwrap(), USAGE);
        assert_eq!(run(&args("pair --m abc -h")).unwrap(), USAGE);
        assert_eq!(error_of("").argument(), "<command>");
        assert_eq!(error_of("bogus").argument(), "<command>");
    }

    #[test]
    fn errors_name_the_argument_and_say_what_is_allowed() {
        let e = error_of("pair --x 1,2,3 --y 3,2,1 --m abc");
        assert_eq!(
            e.to_string(),
            "--m: must be an integer from 1 to 16384 (got \"abc\")"
        );
        assert_eq!(e.exit_code(), 2);
        for (line, argument) in [
            ("pair --x 1,2 --y 1,2,3", "--y"),
            ("pair --x 1,2 --y 1,2 --trials 0", "--trials"),
            ("pair --x 1,2 --y 1,2 --trials 10000001", "--trials"),
            ("pair --x 1,2 --y 1,2 --m 16385", "--m"),
            ("pair --x 1,2 --y 1,2 --m 2.5", "--m"),
            ("pair --x 1,2 --y 1,2 --seed -1", "--seed"),
            ("pair --x 1,2 --y 1,2 --estimator nope", "--estimator"),
            ("pair --x 1,2 --y 1,2 --a nope", "--a"),
            ("pair --x 1,2 --y 1,2 --estimator prf --a mean-only", "--a"),
            ("pair --x 1,2 --y 1,2 --bogus 3", "--bogus"),
            ("pair --x 1,nan --y 1,2", "--x"),
            ("pair --x 1,inf --y 1,2", "--x"),
            ("pair --x 1,1e101 --y 1,2", "--x"),
            ("pair --x 1,,2 --y 1,2,3", "--x"),
            ("pair --x= --y 1", "--x"),
            ("pair --y 1", "--x"),
            ("pair --x 1", "--y"),
            ("pair --x 1 --y 2 --m", "--m"),
            ("pair --x 1 --y 2 --m --trials 5", "--m"),
            ("pair --x 1 --x 2 --y 2", "--x"),
            ("pair stray", "\"stray\""),
            ("pair --x 1 --y 2 --m 16384 --trials 10000000", "--trials"),
            ("experiment --m abc", "--m"),
            ("experiment --m 0", "--m"),
            ("experiment --csv=1", "--csv"),
            ("experiment --est prf,nope", "--est"),
            ("experiment --bogus 1", "--bogus"),
            ("experiment --query m=abc", "--query"),
            ("experiment --query m=64 --seed 3", "--seed"),
        ] {
            let error = error_of(line);
            assert_eq!(error.argument(), argument, "{line}: {error}");
        }
    }

    #[test]
    fn vectors_longer_than_the_limit_are_refused_before_parsing() {
        let long = vec!["1"; MAX_VECTOR_LEN + 1].join(",");
        let e = run(&[
            "pair".into(),
            "--x".into(),
            long.clone(),
            "--y".into(),
            long,
        ])
        .unwrap_err();
        assert_eq!(e.argument(), "--x");
        assert!(e.message().contains("at most 4096"), "{e}");
    }

    #[test]
    fn control_characters_in_values_stay_on_one_line() {
        for line in [
            vec!["pair", "--x", "1\n2", "--y", "1"],
            vec!["experiment", "--m", "6\n4"],
            vec!["experiment", "--query", "m=6%0A4"],
            vec!["pair\n"],
        ] {
            let line: Vec<String> = line.into_iter().map(str::to_string).collect();
            let e = run(&line).unwrap_err();
            assert!(!e.to_string().contains('\n'), "{e}");
        }
    }

    #[test]
    fn query_notices_become_strict_errors_without_the_pages_fallback_note() {
        for (query, expected) in [
            (
                "m=abc",
                "m: must be an integer from 1 to 16384 (got \"abc\")",
            ),
            ("bogus=1", "bogus: unknown parameter"),
            ("m=5&m=6", "m: given more than once"),
        ] {
            let e = error_of(&format!("experiment --query {query}"));
            assert_eq!(e.message(), expected);
        }
    }

    #[test]
    fn flags_and_query_build_the_same_configuration_in_any_order() {
        let flags = ExperimentRequest::parse(&args("--d 2 --m 16384 --n 10 --est var,prf --hyp 0"))
            .unwrap();
        let reordered =
            ExperimentRequest::parse(&args("--m=16384 --hyp 0 --est var,prf --n 10 --d 2"))
                .unwrap();
        let query =
            ExperimentRequest::parse(&args("--query ?m=16384&d=2&n=10&est=prf,var&hyp=0")).unwrap();
        assert_eq!(flags, reordered);
        assert_eq!(flags, query);
        assert_eq!(flags.config.m, 16384);
        assert!(!flags.csv);
    }

    #[test]
    fn pair_is_reproducible_and_echoes_its_inputs() {
        let line = "pair --x 0.3,-0.2,0.1 --y 0.2,0.4,0 --estimator hcexp --a variance-adjusted --m 4 --trials 50 --seed 9";
        let first = run(&args(line)).unwrap();
        assert_eq!(first, run(&args(line)).unwrap());
        let report: serde_json::Value = serde_json::from_str(&first).unwrap();
        assert_eq!(report["estimator"], "hcexp-var");
        assert_eq!(report["label"], "HCEXP, variance-adjusted A");
        assert_eq!(report["trials"], 50);
        assert_eq!(report["seed"], 9);
        // y_3 = 0: a_3 = 0^(1/4) is clamped to A_MIN.
        assert_eq!(report["clamped"], 1);
        assert_eq!(report["diagonal_a"][2], 1e-3);
        let other_seed = run(&args(&line.replace("--seed 9", "--seed 10"))).unwrap();
        assert_ne!(first, other_seed);
    }

    #[test]
    fn pair_with_a_zero_z_is_exact() {
        // a_i = sqrt(|y_i| / |x_i|) = 2 and y = −a² x make z = Ax + A^-T y = 0.
        let request = PairRequest::parse(&args(
            "--x 1,0.5 --y -4,-2 --estimator cexp --a mean-only --m 3 --trials 10",
        ))
        .unwrap();
        let report = pair_report(&request).unwrap();
        assert_eq!(report.diagonal_a, vec![2.0, 2.0]);
        assert_eq!(report.theoretical_mse, Some(0.0));
        assert_eq!(report.log_theoretical_mse, None);
        let sm = report.true_value.unwrap();
        assert!((report.mean_estimate.unwrap() - sm).abs() < 1e-12 * sm);
        assert!(report.empirical_mse.unwrap() < 1e-24);
    }

    #[test]
    fn huge_pairs_give_null_not_nan() {
        let request = PairRequest::parse(&args("--x 30,30 --y 30,-5 --m 2 --trials 5")).unwrap();
        let report = pair_report(&request).unwrap();
        assert_eq!(report.true_value, None, "exp(750) overflows");
        assert_eq!(report.log_true_value, Some(750.0));
        let json = serde_json::to_string(&report).unwrap();
        assert!(!json.contains("NaN") && !json.contains("inf"), "{json}");
    }

    #[test]
    fn csv_has_one_row_per_estimator_and_dataset_plus_scatter() {
        let request = ExperimentRequest::parse(&args(
            "--d 3 --m 4 --n 5 --datasets 2 --pairs 4 --est prf,var --csv",
        ))
        .unwrap();
        let result = run_experiment(&request.config).unwrap();
        let csv = experiment_csv(&result);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(lines.len(), 1 + 2 * (2 + 1));
        assert!(lines[1].starts_with("prf-hyp,1,"));
        assert!(lines[3].starts_with("prf-hyp,scatter,"));
        assert!(lines[6].starts_with("hcexp-var,scatter,"));
        let mse: f64 = lines[1].split(',').nth(2).unwrap().parse().unwrap();
        assert_eq!(mse, result.summaries[0].per_dataset[0].mse);
    }

    #[test]
    fn report_has_the_pages_paired_count_only_when_both_heuristics_ran() {
        let mut config =
            ExperimentRequest::parse(&args("--d 3 --m 4 --n 5 --datasets 3 --pairs 4"))
                .unwrap()
                .config;
        let both = experiment_report(&run_experiment(&config).unwrap());
        assert_eq!(both.paired_comparison.map(|p| p.datasets), Some(3));
        assert_eq!(both.estimators.len(), 3);
        config.set(Param::Estimators, "prf,var").unwrap();
        let one = experiment_report(&run_experiment(&config).unwrap());
        assert_eq!(one.paired_comparison, None);
    }

    #[test]
    fn csv_numbers_read_back_exactly() {
        for value in [0.1, 1e-300, 123456.789, 5e-324, 1.7976931348623157e308] {
            assert_eq!(csv_number(value).parse::<f64>().unwrap(), value);
        }
        assert_eq!(csv_number(f64::INFINITY), "inf");
        assert_eq!(csv_number(f64::NAN), "nan");
    }
}
