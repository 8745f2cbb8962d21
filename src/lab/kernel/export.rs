//! The kernel view's numbers as files: the JSON report and the CSV rows that the page's
//! "Download JSON / CSV" and `kernel-lab experiment` both print, byte for byte, from one
//! [`ExperimentResult`], and the paired count the page's table shows. Here, in the lab half,
//! so that the page links these writers without the command line (src/cli).

use serde::Serialize;

use crate::lab::kernel::experiment::{EstimatorSummary, ExperimentResult, ScatterSeries};

/// `Some(value)` when it is finite (JSON has no infinities or NaN).
fn finite(value: f64) -> Option<f64> {
    value.is_finite().then_some(value)
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

/// The page's paired count for `result` (its table's caption, the report's
/// `paired_comparison`): the first pair of [`PAIRED_HEURISTICS`] that both ran.
pub fn paired_comparison(result: &ExperimentResult) -> Option<PairedComparison> {
    let find = |id: &str| result.summaries.iter().find(|s| s.estimator.id() == id);
    PAIRED_HEURISTICS
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
        })
}

/// The numbers the page shows for `result`.
pub fn experiment_report(result: &ExperimentResult) -> ExperimentReport {
    ExperimentReport {
        config: result.config.to_query(),
        estimators: result
            .summaries
            .iter()
            .zip(&result.scatter)
            .map(|(summary, scatter)| estimator_report(summary, scatter))
            .collect(),
        paired_comparison: paired_comparison(result),
    }
}

/// The CSV header of `experiment --csv` (and the page's "Download CSV").
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
pub fn experiment_json(result: &ExperimentResult) -> Result<String, serde_json::Error> {
    let mut text = serde_json::to_string_pretty(&experiment_report(result))?;
    text.push('\n');
    Ok(text)
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
    use crate::lab::config::{ExperimentConfig, Param};
    use crate::lab::kernel::experiment::run_experiment;

    /// A small configuration from a query without notices.
    fn config(query: &str) -> ExperimentConfig {
        let (config, notices) = ExperimentConfig::from_query(query);
        assert!(notices.is_empty(), "{query}: {notices:?}");
        config
    }

    #[test]
    fn csv_has_one_row_per_estimator_and_dataset_plus_scatter() {
        let config = config("d=3&m=4&n=5&datasets=2&pairs=4&est=prf,var");
        let result = run_experiment(&config).unwrap();
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
        let mut config = config("d=3&m=4&n=5&datasets=3&pairs=4");
        let both = experiment_report(&run_experiment(&config).unwrap());
        assert_eq!(both.paired_comparison.map(|p| p.datasets), Some(3));
        assert_eq!(both.estimators.len(), 3);
        config.set(Param::Estimators, "prf,var").unwrap();
        let one = experiment_report(&run_experiment(&config).unwrap());
        assert_eq!(one.paired_comparison, None);
    }

    #[test]
    fn json_ends_with_a_newline_and_reads_back_as_the_report() {
        let result = run_experiment(&config("d=3&m=4&n=5&datasets=2&pairs=4")).unwrap();
        let json = experiment_json(&result).unwrap();
        assert!(json.ends_with("}\n"));
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["config"], result.config.to_query());
        assert_eq!(value["estimators"].as_array().map(Vec::len), Some(3));
    }

    #[test]
    fn csv_numbers_read_back_exactly() {
        for value in [0.1, 1e-300, 123456.789, 5e-324, 1.7976931348623157e308] {
            assert_eq!(csv_number(value).parse::<f64>().unwrap(), value);
        }
        assert_eq!(csv_number(f64::INFINITY), "inf");
        assert_eq!(csv_number(f64::NEG_INFINITY), "-inf");
        assert_eq!(csv_number(f64::NAN), "nan");
    }
}
