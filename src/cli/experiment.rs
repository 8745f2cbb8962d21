//! `kernel-lab experiment`: the page's parameters, as flags named by their URL keys or as one
//! URL query, through the page's own parser; the numbers the page shows, as JSON
//! ([`experiment_report`]) or CSV ([`experiment_csv`]).

use serde::Serialize;

use super::args::{Flag, FlagKind, Flags};
use super::{CliError, finite};
use crate::lab::config::{ExperimentConfig, Param, ParamError};
use crate::lab::experiment::{EstimatorSummary, ExperimentResult, ScatterSeries};

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
        let flags = Flags::parse("experiment", args, |name| match name {
            "csv" => Some(FlagKind::Switch),
            "query" => Some(FlagKind::Value),
            key => Param::from_key(key).map(|_| FlagKind::Value),
        })?;
        let csv = flags.has("--csv");
        let config = config_of(&flags)?;
        Ok(Self { config, csv })
    }
}

/// The configuration that `flags` give: the page's parameters as flags named by their URL keys,
/// or one `--query`, not both (`experiment` and `attention` alike).
pub(super) fn config_of(flags: &Flags) -> Result<ExperimentConfig, CliError> {
    let parameters: Vec<(Param, &Flag)> = flags
        .iter()
        .filter_map(|f| Param::from_key(&f.name[2..]).map(|p| (p, f)))
        .collect();
    match (flags.value("--query"), parameters.first()) {
        (Some(_), Some((_, flag))) => Err(CliError::new(
            &flag.name,
            "cannot be combined with --query: give every parameter in the query or every one as a flag",
        )),
        (Some(query), None) => config_from_query(query),
        (None, _) => config_from_flags(&parameters),
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
pub(super) fn config_from_flags(
    parameters: &[(Param, &Flag)],
) -> Result<ExperimentConfig, CliError> {
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

/// What `experiment` prints as JSON (and the page's "Download JSON"): [`experiment_report`]
/// pretty-printed, with a final newline.
pub fn experiment_json(result: &ExperimentResult) -> Result<String, CliError> {
    super::to_json(&experiment_report(result))
}

/// `experiment --csv` (and the page's "Download CSV"): the header, then per estimator one row
/// per boxplot dataset (`dataset` = 1, 2, …) and one for the scatter dataset
/// (`dataset` = `scatter`).
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
    use crate::cli::test_support::{args, error_of};
    use crate::lab::experiment::run_experiment;

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
