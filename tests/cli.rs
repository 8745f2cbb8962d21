//! The `kernel-lab` binary, run as a user runs it: statistics of `pair` against each
//! estimator's MSE formula (Lemma 3.1 for the legacy names, every registry id by its own
//! name, orthogonal features unbiased), `estimators` against the registry, the one-line errors
//! and exit status 2, and `experiment` against the library's `run_experiment` (flags and URL
//! query alike).

#![cfg(not(target_arch = "wasm32"))]

use std::process::{Command, Output};

use serde_json::Value;
use softmax_kernel_lab::lab::config::ExperimentConfig;
use softmax_kernel_lab::lab::kernel::experiment::run_experiment;

fn kernel_lab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kernel-lab"))
        .args(args)
        .output()
        .expect("the kernel-lab binary runs")
}

/// Stdout of a run that must succeed.
fn stdout_of(args: &[&str]) -> String {
    let output = kernel_lab(args);
    assert!(
        output.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.stderr.is_empty(), "{args:?} wrote to stderr");
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

fn json_of(args: &[&str]) -> Value {
    let text = stdout_of(args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: {e}\n{text}"))
}

fn number(report: &Value, field: &str) -> f64 {
    report[field]
        .as_f64()
        .unwrap_or_else(|| panic!("`{field}` is not a number in {report}"))
}

/// Two pairs used only here: norms about 0.5 (d = 4) and about 1.5 (d = 5), with components
/// of both signs so that the mean-only and variance-adjusted A are far from I.
const SMALL_PAIR: (&str, &str) = ("0.3,-0.25,0.2,0.15", "0.2,0.35,-0.1,0.25");
const LARGE_PAIR: (&str, &str) = ("0.9,-0.6,0.7,0.4,-0.5", "-0.4,0.8,0.6,-0.7,0.5");

/// Runs `pair` and checks what every report must satisfy: the estimator's id, the length of
/// the diagonal, the mean within 4 standard errors of SM and the empirical MSE within 4
/// standard errors (of the squared errors) of the estimator's MSE formula.
fn check_pair(args: &[&str], expected_id: &str) -> Value {
    let report = json_of(args);
    assert_eq!(report["estimator"], expected_id, "{args:?}");
    let x = args[args.iter().position(|a| *a == "--x").unwrap() + 1];
    let diagonal: Vec<f64> = report["diagonal_a"]
        .as_array()
        .expect("diagonal_a is an array")
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    assert_eq!(diagonal.len(), x.split(',').count());
    let truth = number(&report, "true_value");
    let mean = number(&report, "mean_estimate");
    let se = number(&report, "standard_error");
    assert!(
        (mean - truth).abs() < 4.0 * se,
        "{args:?}: mean {mean} vs SM {truth}, standard error {se}"
    );
    let empirical = number(&report, "empirical_mse");
    let theory = number(&report, "theoretical_mse");
    let mse_se = number(&report, "mse_standard_error");
    assert!(
        (empirical - theory).abs() < 4.0 * mse_se,
        "{args:?}: empirical MSE {empirical} vs formula {theory}, standard error {mse_se}"
    );
    report
}

#[test]
fn pair_statistics_agree_with_lemma_3_1_within_four_standard_errors() {
    // The names from before the registry (`prf`, `prf-hyp`, `cexp`/`hcexp` with `--a`) and
    // the registry ids they map to.
    let mut cases: Vec<(&str, &str, &str)> = vec![
        ("prf", "identity", "prf-pos"),
        ("prf-hyp", "identity", "prf-hyp"),
    ];
    for (estimator, positive) in [("cexp", true), ("hcexp", false)] {
        for (a, short) in [("mean-only", "mean"), ("variance-adjusted", "var")] {
            let id = match (positive, short) {
                (true, "mean") => "cexp-mean",
                (true, _) => "cexp-var",
                (false, "mean") => "hcexp-mean",
                (false, _) => "hcexp-var",
            };
            cases.push((estimator, a, id));
        }
    }
    for (x, y) in [SMALL_PAIR, LARGE_PAIR] {
        for &(estimator, a, id) in &cases {
            let args = [
                "pair",
                "--x",
                x,
                "--y",
                y,
                "--estimator",
                estimator,
                "--a",
                a,
                "--m",
                "8",
                "--trials",
                "20000",
                "--seed",
                "41",
            ];
            let report = check_pair(&args, id);
            assert_eq!(report["orthogonal"], false);
            assert_eq!(number(&report, "theta"), 0.0);
            assert_eq!(number(&report, "alpha"), 0.0);
            if a != "identity" {
                let diagonal: Vec<f64> = report["diagonal_a"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(Value::as_f64)
                    .collect();
                assert!(
                    diagonal.iter().any(|ai| (ai - 1.0).abs() > 0.2),
                    "{args:?}: A is almost I: {diagonal:?}"
                );
            }
        }
    }
}

#[test]
fn pair_with_every_registry_id_agrees_with_its_formula() {
    // Every id that `kernel-lab estimators` lists, by its own name, on the small pair (the
    // larger one is covered for the exponential estimators above), with θ = 0.6 and the
    // variance-adjusted magnitudes so that the complex A is neither real nor RFF.
    let listing = json_of(&["estimators"]);
    let ids: Vec<&str> = listing
        .as_array()
        .expect("an array")
        .iter()
        .map(|e| e["id"].as_str().expect("an id"))
        .collect();
    use softmax_kernel_lab::numerics::estimators::REGISTRY;
    assert_eq!(ids.len(), REGISTRY.len(), "{ids:?}");
    let (x, y) = SMALL_PAIR;
    for id in ids {
        let args = [
            "pair",
            "--x",
            x,
            "--y",
            y,
            "--estimator",
            id,
            "--theta",
            "0.6",
            "--cplxa",
            "variance-adjusted",
            "--m",
            "8",
            "--trials",
            "20000",
            "--seed",
            "43",
        ];
        let report = check_pair(&args, id);
        let entry = REGISTRY
            .iter()
            .find(|e| e.id() == id)
            .expect("a registry id");
        assert_eq!(report["label"], entry.label(), "{id}");
        let theta = number(&report, "theta");
        let alpha = number(&report, "alpha");
        let family_complex = id.contains("cplx");
        assert_eq!(theta, if family_complex { 0.6 } else { 0.0 }, "{id}");
        if id.starts_with("oprf") {
            // OPRF's α* is negative for every ρ > 0.
            assert!(alpha < 0.0, "{id}: α = {alpha}");
        } else if id.contains("derf-") {
            // The closed forms' α is OPRF's α* or the hyperbolic one (≤ 0, and near 0 here:
            // one pair's P makes |z| small); a fitted α may be anything below 1/8.
            let bound = if id.ends_with("-fit") { 0.125 } else { 1e-300 };
            assert!(alpha.is_finite() && alpha < bound, "{id}: α = {alpha}");
        } else {
            assert_eq!(alpha, 0.0, "{id}");
        }
    }
}

#[test]
fn pair_with_orthogonal_features_is_unbiased_and_says_so() {
    // m = 8 = 2d: two full orthogonal blocks. The MSE formula is for i.i.d. ω, so only the
    // mean is checked (within 4 standard errors).
    let (x, y) = SMALL_PAIR;
    for id in ["prf-pos", "hcexp-var", "rff", "oprf"] {
        let report = json_of(&[
            "pair",
            "--x",
            x,
            "--y",
            y,
            "--estimator",
            id,
            "--orf",
            "1",
            "--m",
            "8",
            "--trials",
            "20000",
            "--seed",
            "44",
        ]);
        assert_eq!(report["orthogonal"], true, "{id}");
        let truth = number(&report, "true_value");
        let mean = number(&report, "mean_estimate");
        let se = number(&report, "standard_error");
        assert!(
            (mean - truth).abs() < 4.0 * se,
            "{id}: mean {mean} vs SM {truth}, standard error {se}"
        );
    }
}

#[test]
fn estimators_lists_the_registry() {
    use softmax_kernel_lab::numerics::estimators::{EstimatorParams, Fit, REGISTRY};
    let listing = json_of(&["estimators"]);
    let entries = listing.as_array().expect("an array");
    assert_eq!(entries.len(), REGISTRY.len());
    for (printed, estimator) in entries.iter().zip(REGISTRY) {
        assert_eq!(printed["id"], estimator.id());
        assert_eq!(printed["label"], estimator.label());
        assert_eq!(printed["family"], estimator.family().label());
        assert_eq!(printed["formula"], estimator.docs().formula);
        assert_eq!(printed["source"], estimator.docs().source);
        match estimator.twin() {
            Some(twin) => assert_eq!(printed["twin"], twin),
            None => assert!(printed["twin"].is_null()),
        }
        let fit = Fit {
            theta: EstimatorParams::default().theta,
            ..Fit::identity(1)
        };
        assert_eq!(printed["signed"], estimator.fast_sum(&fit).is_signed());
        assert_eq!(
            printed["seed_paper_bounds"],
            estimator.bounds().hyperbolic_real_a
        );
    }
    let output = kernel_lab(&["estimators", "extra"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn bad_arguments_exit_with_2_and_one_line_naming_the_argument() {
    for (args, argument) in [
        (
            vec!["pair", "--x", "1,2,3", "--y", "3,2,1", "--m", "abc"],
            "--m",
        ),
        (vec!["pair", "--x", "1,2", "--y", "1,2,3"], "--y"),
        (
            vec!["pair", "--x", "1,2", "--y", "1,2", "--trials", "0"],
            "--trials",
        ),
        (
            vec!["pair", "--x", "1,2", "--y", "1,2", "--estimator", "nope"],
            "--estimator",
        ),
        (
            vec!["pair", "--x", "1,2", "--y", "1,2", "--bogus", "1"],
            "--bogus",
        ),
        (vec!["pair", "--x", "", "--y", "1"], "--x"),
        (vec!["pair", "--x", "1,NaN", "--y", "1,2"], "--x"),
        (vec!["pair", "--x", "1", "--y", "2", "--m"], "--m"),
        (
            vec!["pair", "--x", "1,2", "--y", "1,2", "--theta", "2"],
            "--theta",
        ),
        (
            vec!["pair", "--x", "1,2", "--y", "1,2", "--cplxa", "nope"],
            "--cplxa",
        ),
        (
            vec!["pair", "--x", "1,2", "--y", "1,2", "--orf", "yes"],
            "--orf",
        ),
        (
            vec![
                "pair",
                "--x",
                "1,2",
                "--y",
                "1,2",
                "--estimator",
                "rff",
                "--a",
                "mean-only",
            ],
            "--a",
        ),
        (vec!["experiment", "--est", "prf-hyp,nope"], "--est"),
        (vec!["experiment", "--query", "m=abc"], "--query"),
        (vec!["experiment", "--d", "0"], "--d"),
        (vec!["experiment", "--omega", "sometimes"], "--omega"),
        (vec!["nope"], "<command>"),
        (vec![], "<command>"),
    ] {
        let output = kernel_lab(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?} printed to stdout");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr:?}");
        assert!(
            stderr.starts_with(&format!("error: {argument}: ")),
            "{args:?}: {stderr:?}"
        );
    }
    let stderr = String::from_utf8(
        kernel_lab(&["pair", "--x", "1,2,3", "--y", "3,2,1", "--m", "abc"]).stderr,
    )
    .unwrap();
    assert_eq!(
        stderr,
        "error: --m: must be an integer from 1 to 16384 (got \"abc\")\n"
    );
}

#[test]
fn help_prints_usage_and_exits_0() {
    let usage = stdout_of(&["--help"]);
    assert!(usage.contains("kernel-lab pair --x X --y Y"), "{usage}");
    assert_eq!(stdout_of(&["experiment", "--help"]), usage);
}

const QUERY: &str = "m=32&n=50&datasets=3&pairs=40&seed=3";
const FLAGS: [&str; 10] = [
    "--m",
    "32",
    "--n",
    "50",
    "--datasets",
    "3",
    "--pairs",
    "40",
    "--seed",
    "3",
];

#[test]
fn experiment_json_is_what_run_experiment_gives() {
    let (config, notices) = ExperimentConfig::from_query(QUERY);
    assert!(notices.is_empty(), "{notices:?}");
    let expected = run_experiment(&config).expect("the experiment runs");
    let report = json_of(&["experiment", "--query", QUERY]);
    assert_eq!(report["config"], config.to_query());
    let estimators = report["estimators"].as_array().expect("an array");
    assert_eq!(estimators.len(), expected.summaries.len());
    for ((printed, summary), scatter) in estimators
        .iter()
        .zip(&expected.summaries)
        .zip(&expected.scatter)
    {
        assert_eq!(printed["id"], summary.estimator.id());
        assert_eq!(printed["label"], summary.estimator.label());
        // Exact: the printed floats are the shortest text that reads back to the same bits.
        assert_eq!(number(printed, "median_mse"), summary.median_mse);
        assert_eq!(
            number(printed, "median_max_rel_err"),
            summary.median_max_rel_err
        );
        assert_eq!(
            number(printed, "median_theoretical_mse"),
            summary.median_theoretical_mse
        );
        assert_eq!(number(printed, "scatter_mse"), scatter.metrics.mse);
        assert_eq!(
            number(printed, "scatter_max_rel_err"),
            scatter.metrics.max_rel_err
        );
        assert_eq!(printed["clamped"], summary.clamped);
        let per_dataset: Vec<(f64, f64)> = summary
            .per_dataset
            .iter()
            .map(|m| (m.mse, m.max_rel_err))
            .collect();
        let printed_per_dataset: Vec<(f64, f64)> = printed["per_dataset_mse"]
            .as_array()
            .expect("an array")
            .iter()
            .zip(
                printed["per_dataset_max_rel_err"]
                    .as_array()
                    .expect("an array"),
            )
            .map(|(mse, rel)| (mse.as_f64().unwrap(), rel.as_f64().unwrap()))
            .collect();
        assert_eq!(printed_per_dataset, per_dataset);
    }
}

#[test]
fn experiment_csv_has_the_header_and_one_row_per_estimator_and_dataset() {
    let csv = stdout_of(&["experiment", "--query", QUERY, "--csv"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "estimator,dataset,mse,max_rel_err");
    let (datasets, estimators) = (3, 3);
    assert_eq!(lines.len() - 1, (datasets + 1) * estimators, "{csv}");
    for line in &lines[1..] {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), 4, "{line}");
        // The default set, by registry id.
        assert!(
            ["prf-hyp", "hcexp-mean", "hcexp-var"].contains(&cells[0]),
            "{line}"
        );
    }
    // Each row's numbers are the library's, exactly (the shortest text of each f64).
    let (config, notices) = ExperimentConfig::from_query(QUERY);
    assert!(notices.is_empty(), "{notices:?}");
    let expected = run_experiment(&config).expect("the experiment runs");
    let mut rows = Vec::new();
    for (summary, scatter) in expected.summaries.iter().zip(&expected.scatter) {
        let datasets = summary.per_dataset.iter().enumerate();
        for (dataset, m) in datasets.map(|(i, m)| ((i + 1).to_string(), m)) {
            rows.push((summary.estimator.id(), dataset, m.mse, m.max_rel_err));
        }
        rows.push((
            summary.estimator.id(),
            "scatter".to_string(),
            scatter.metrics.mse,
            scatter.metrics.max_rel_err,
        ));
    }
    let printed: Vec<(&str, String, f64, f64)> = lines[1..]
        .iter()
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            let number = |c: &str| c.parse::<f64>().unwrap_or_else(|e| panic!("{line}: {e}"));
            (
                cells[0],
                cells[1].to_string(),
                number(cells[2]),
                number(cells[3]),
            )
        })
        .collect();
    assert_eq!(printed, rows);
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.split(',').nth(1) == Some("scatter"))
            .count(),
        estimators
    );
}

#[test]
fn flags_and_query_give_identical_output() {
    let mut with_flags = vec!["experiment"];
    with_flags.extend(FLAGS);
    assert_eq!(
        stdout_of(&with_flags),
        stdout_of(&["experiment", "--query", QUERY])
    );
    with_flags.push("--csv");
    assert_eq!(
        stdout_of(&with_flags),
        stdout_of(&["experiment", "--csv", "--query", &format!("?{QUERY}")])
    );
}

#[test]
fn experiment_runs_any_registry_ids_and_the_legacy_names() {
    // New ids (with θ and the complex A's magnitudes) and the names from before the
    // registry: `prf,var` with `hyp=0` are the positive twins.
    let csv = stdout_of(&[
        "experiment",
        "--query",
        "d=4&m=8&n=20&datasets=2&pairs=10&seed=1&est=rff,cplx,oprf&theta=0.6&cplxa=variance-adjusted",
        "--csv",
    ]);
    let ids: Vec<&str> = csv
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').next())
        .collect();
    assert_eq!(ids.len(), 3 * 3, "{csv}");
    for id in ["rff", "cplx", "oprf"] {
        assert_eq!(ids.iter().filter(|i| **i == id).count(), 3, "{csv}");
    }
    let legacy = json_of(&[
        "experiment",
        "--query",
        "d=4&m=8&n=20&datasets=2&pairs=10&est=prf,var&hyp=0",
    ]);
    let printed: Vec<&str> = legacy["estimators"]
        .as_array()
        .expect("an array")
        .iter()
        .map(|e| e["id"].as_str().expect("an id"))
        .collect();
    assert_eq!(printed, ["prf-pos", "cexp-var"]);
}

#[test]
fn attention_prints_the_library_numbers_as_json_and_csv() {
    let args = [
        "attention",
        "--len",
        "40",
        "--d",
        "6",
        "--dv",
        "3",
        "--features",
        "16",
        "--draws",
        "3",
        "--methods",
        "prf-pos,hcexp-var,rff,taylor,elu,ra",
    ];
    let report = json_of(&args);
    let methods = report["methods"].as_array().expect("methods");
    let ids: Vec<&str> = methods
        .iter()
        .map(|m| m["method"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["prf-pos", "hcexp-var", "rff", "taylor", "elu", "ra"]);
    // The same numbers as the library's main part for the same query.
    let (config, _) = ExperimentConfig::from_query(
        "view=attention&len=40&d=6&dv=3&features=16&draws=3&methods=prf-pos,hcexp-var,rff,taylor,elu,ra",
    );
    let Ok(softmax_kernel_lab::lab::attention::AttentionOutput::Main(main)) =
        softmax_kernel_lab::lab::attention::run_attention(
            &softmax_kernel_lab::lab::attention::AttentionRequest {
                config,
                part: softmax_kernel_lab::lab::attention::AttentionPart::Main,
                share: None,
                lengths_unit: None,
            },
            &mut softmax_kernel_lab::lab::attention::StoredHeads::none(),
        )
    else {
        panic!("main part")
    };
    for (printed, computed) in methods.iter().zip(&main.methods) {
        let error = printed["mean_output_error"].as_f64().unwrap();
        assert_eq!(error, computed.mean_output_error(), "{}", computed.method);
        assert_eq!(
            printed["bad_rows"].as_u64().unwrap() as usize,
            computed.bad_rows
        );
    }
    let mut csv_args = args.to_vec();
    csv_args.push("--csv");
    let csv = stdout_of(&csv_args);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], softmax_kernel_lab::cli::ATTENTION_CSV_HEADER);
    assert_eq!(lines.len(), 7);
    assert!(lines[6].starts_with("ra,"), "{csv}");
}

#[test]
fn attention_table_covers_every_real_head() {
    let csv = stdout_of(&["attention", "--table", "--csv", "--features", "16"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "layer,head,prf-pos,cexp-var,hcexp-var,hcexp-opt,oprf,oprf-var"
    );
    assert_eq!(lines.len(), 1 + 72 + 2);
    assert!(
        lines[73].starts_with("wins against prf-pos,,0,"),
        "{}",
        lines[73]
    );
    let output = kernel_lab(&[
        "attention",
        "--src",
        "minilm",
        "--heads-file",
        "/nonexistent",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).starts_with("error: --heads-file:"));
    let output = kernel_lab(&["attention", "--len", "0"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).starts_with("error: --len:"));
}

#[test]
fn attention_lengths_prints_the_study_as_json_and_csv() {
    let args = [
        "attention",
        "--lengths",
        "--lmax",
        "256",
        "--features",
        "16",
        "--methods",
        "prf-pos,elu,ra",
    ];
    let report = json_of(&args);
    assert_eq!(report["lengths"], serde_json::json!([128, 256]));
    assert_eq!(report["head_sizes"], serde_json::json!([32, 64]));
    assert_eq!(report["features"], serde_json::json!([4, 16]));
    assert!(number(&report, "dense_rate") > 0.0 && number(&report, "exact_rate") > 0.0);
    // Per head size: 2 exact forms + 3 forms × (Performer at m = 4 and 16, elu).
    assert_eq!(
        report["series"].as_array().expect("series").len(),
        2 * (2 + 3 * 3)
    );
    assert_eq!(
        report["crossovers"].as_array().expect("crossovers").len(),
        2 * 3 * 3
    );
    assert_eq!(report["skipped"][0]["method"], "ra");
    let mut csv_args = args.to_vec();
    csv_args.push("--csv");
    let csv = stdout_of(&csv_args);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        softmax_kernel_lab::lab::attention::lengths::LENGTHS_CSV_HEADER
    );
    // A row per series and length.
    assert_eq!(lines.len(), 1 + 2 * (2 + 3 * 3) * 2);
    // Bad values are refused with the flag's name.
    let output = kernel_lab(&["attention", "--lengths", "--lmax", "99999"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).starts_with("error: --lmax:"));
    let output = kernel_lab(&["attention", "--lengths", "--table"]);
    assert_eq!(output.status.code(), Some(2));
}
