//! `kernel-lab pair`: one registered estimator on one (x, y) pair, `trials` times with fresh ω,
//! against the estimator's MSE formula. [`PairRequest`] is the parsed command (with the names
//! of estimators from before the registry mapped onto registry ids), [`pair_report`] runs it.

use crate::numerics::projections::couplings::Coupling;
use serde::Serialize;

use super::args::{FlagKind, Flags, parse_integer, parse_vector};
use super::{CliError, finite, quote};
use crate::lab::config::{ExperimentConfig, MAX_WORK, Param};
use crate::numerics::dataset::{Dataset, SampleMoments};
use crate::numerics::estimators::{
    EstimatorId, EstimatorParams, FitInput, Projections, all_ids, log_softmax_kernel,
    reference_estimate,
};
use crate::numerics::heuristics::AHeuristic;
use crate::numerics::rng::{StreamPurpose, stream_rng};

/// Fewest trials of `pair`: the standard errors need a sample variance.
pub const MIN_TRIALS: u64 = 2;
/// Most trials of `pair`.
pub const MAX_TRIALS: u64 = 10_000_000;
/// Default number of projections of `pair`.
pub const DEFAULT_M: u64 = 64;
/// Default number of trials of `pair`.
pub const DEFAULT_TRIALS: u64 = 10_000;

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
    /// How the rows of ω are drawn together.
    pub coupling: Coupling,
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
        let flags = Flags::parse("pair", args, |name| match name {
            "x" | "y" | "estimator" | "a" | "m" | "trials" | "seed" | "theta" | "cplxa"
            | "coupling" | "orf" => Some(FlagKind::Value),
            _ => None,
        })?;
        let value_of = |name: &str| flags.value(name);
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
        // θ, the complex A and the coupling go through the page's parser (the legacy `--orf`
        // last, as a link applies it).
        let mut page = ExperimentConfig::default();
        for param in [
            Param::Theta,
            Param::ComplexA,
            Param::Coupling,
            Param::Orthogonal,
        ] {
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
        let work = trials as f64 * m as f64 * x.len() as f64 * estimator.info().cost_factor();
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
            coupling: page.coupling,
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
    /// How the rows of ω were drawn together (`iid`, `orthogonal`, `simplex`, `rqmc`).
    pub coupling: &'static str,
    /// Whether that was orthogonal blocks (kept for scripts written before `coupling`).
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
        omega
            .resample_coupled(request.coupling, &mut rng)
            .map_err(|e| CliError::new("--coupling", e.to_string()))?;
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
        coupling: request.coupling.id(),
        orthogonal: request.coupling == Coupling::Orthogonal,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::run;
    use crate::cli::test_support::args;

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
}
