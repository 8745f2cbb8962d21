//! Every step's state run natively, as the page runs it, and its verdict checked: the answer the
//! step's prose relies on holds on its state, by numbers computed here independently of the
//! verdict (plain medians, ranks and regressions over the raw results), and every number the
//! verdict's sentence states is one of them.

use super::numbers::{from_log, percent, plain};
use super::*;
use crate::lab::attention::StoredHeads;
use crate::lab::attention::report::{
    AttentionOutput, AttentionPart, AttentionRequest, run_attention,
};
use crate::lab::config::ExperimentConfig;
use crate::lab::config::{CURVE_MS, Param};
use crate::lab::kernel::experiment::{ExperimentResult, MseCurve};
use crate::lab::kernel::experiment::{mse_against_m, run_experiment};
use crate::numerics::attention::heads::HEADS_ASSET_PATH;
use crate::numerics::estimators::EstimatorId;
use crate::numerics::stats::mean_and_standard_error;

fn step(id: &str) -> &'static TourStep {
    STEPS
        .iter()
        .find(|s| s.id == id)
        .expect("a step with this id")
}

/// The step's state computed as the page computes it: the experiment and its curves.
fn kernel_run(step: &TourStep) -> (ExperimentResult, Vec<MseCurve>, Verdict) {
    let config = step.config().expect("the step's query parses");
    let result = run_experiment(&config).expect("the step's experiment runs");
    let curves = mse_against_m(&config, &CURVE_MS).expect("its curves run");
    let verdict = (step.verdict)(&Evidence::Kernel {
        result: &result,
        curves: Some(&curves),
    })
    .expect("the step reads its own state");
    (result, curves, verdict)
}

/// The median of `values`, written out here rather than shared with the code under test.
fn plain_median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Ranks (average ranks for ties) and Pearson's correlation of the ranks.
fn rank_correlation(a: &[f64], b: &[f64]) -> f64 {
    fn ranks(v: &[f64]) -> Vec<f64> {
        let mut order: Vec<usize> = (0..v.len()).collect();
        order.sort_by(|&i, &j| v[i].total_cmp(&v[j]));
        let mut ranks = vec![0.0; v.len()];
        let mut i = 0;
        while i < order.len() {
            let mut j = i;
            while j + 1 < order.len() && v[order[j + 1]] == v[order[i]] {
                j += 1;
            }
            for k in i..=j {
                ranks[order[k]] = (i + j) as f64 / 2.0;
            }
            i = j + 1;
        }
        ranks
    }
    let (ra, rb) = (ranks(a), ranks(b));
    let n = ra.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / n, rb.iter().sum::<f64>() / n);
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = ra.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = rb.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

/// Median MSE of `id` over the datasets, from the per-dataset values.
fn median_mse(result: &ExperimentResult, id: &str) -> f64 {
    let estimator = EstimatorId::from_id(id).expect("a registry id");
    let summary = result
        .summaries
        .iter()
        .find(|s| s.estimator == estimator)
        .expect("the estimator ran");
    plain_median(summary.per_dataset.iter().map(|d| d.mse).collect()).ln()
}

#[test]
fn every_step_is_a_valid_state_with_prose_free_of_typed_numbers() {
    assert!((8..=12).contains(&STEPS.len()), "about ten steps");
    for step in &STEPS {
        let config = step
            .config()
            .unwrap_or_else(|e| panic!("{}: {e:?}", step.id));
        config.validate().expect("a valid configuration");
        assert!(
            Param::from_key(step.control).is_some(),
            "{}: control",
            step.id
        );
        assert!(step.options.len() >= 2, "{}: options", step.id);
        // Every number the step states is computed: none is typed into its prose.
        for text in [step.title, step.question, step.notice, step.try_this]
            .into_iter()
            .chain(step.options.iter().copied())
        {
            // A result's name is not a number the step states.
            let text = text
                .replace("Lemma 3.1", "Lemma")
                .replace("Theorem 3.3", "Theorem");
            assert!(
                !text.chars().any(|c| c.is_ascii_digit()),
                "{}: a typed number in {text:?}",
                step.id
            );
        }
        let sentences = step.notice.matches(". ").count() + 1;
        assert!(
            (2..=4).contains(&sentences),
            "{}: {sentences} sentences",
            step.id
        );
        assert!(
            !crate::lab::page::mathml::to_mathml(step.formula).contains("<code"),
            "{}: its formula renders",
            step.id
        );
        assert_eq!(
            step_config(STEPS.iter().position(|s| s.id == step.id).unwrap()),
            Some(config)
        );
    }
    let ids: std::collections::HashSet<_> = STEPS.iter().map(|s| s.id).collect();
    assert_eq!(ids.len(), STEPS.len(), "ids are unique");
}

#[test]
fn a_step_given_other_results_says_so_instead_of_panicking() {
    let mut config = ExperimentConfig::default();
    (config.n, config.datasets, config.pairs, config.m) = (50, 3, 20, 16);
    config.estimators = vec![EstimatorId::from_id("rff").unwrap()];
    let result = run_experiment(&config).unwrap();
    for step in &STEPS {
        let verdict = (step.verdict)(&Evidence::Kernel {
            result: &result,
            curves: None,
        });
        assert!(
            matches!(
                verdict,
                Err(TourError::WrongEvidence | TourError::Missing(_))
            ),
            "{}: {verdict:?}",
            step.id
        );
        if let Err(error) = verdict {
            assert!(!error.to_string().is_empty());
        }
    }
}

#[test]
fn one_pair_few_estimates_are_close_though_unbiased() {
    let (result, _, verdict) = kernel_run(step("one-pair"));
    let series = &result.scatter[0];
    let (within, n) = series
        .estimates
        .log_true
        .iter()
        .zip(&series.estimates.estimates)
        .fold((0usize, 0usize), |(w, n), (t, e)| {
            let ratio = if e.negative {
                -1.0
            } else {
                (e.ln_abs - t).exp()
            };
            (w + usize::from((ratio - 1.0).abs() < 0.1), n + 1)
        });
    let share = within as f64 / n as f64;
    assert!(share < 0.25, "{share}");
    assert_eq!(verdict.answer, 2, "{}", verdict.measured);
    assert!(
        verdict
            .measured
            .contains(&format!("{within} of the {n} pairs ({})", percent(share)))
    );
}

#[test]
fn heavy_tails_follow_x_plus_y_not_the_kernel() {
    let (result, _, verdict) = kernel_run(step("heavy-tails"));
    let series = &result.scatter[0];
    let estimates = &series.estimates;
    // |ŜM/SM − 1| by plain arithmetic (the state's kernel values are within f64's range).
    let errors: Vec<f64> = estimates
        .log_true
        .iter()
        .zip(&estimates.estimates)
        .map(|(t, e)| (e.value() / t.exp() - 1.0).abs())
        .collect();
    let rho_z = rank_correlation(&errors, &estimates.z_squared);
    let rho_dot = rank_correlation(&errors, &estimates.log_true);
    // n = 1000 pairs: a rank correlation's standard error is about 1/√n ≈ 0.03.
    assert!(rho_z > rho_dot + 0.15 && rho_z > 0.5, "{rho_z} {rho_dot}");
    assert_eq!(verdict.answer, 1, "{}", verdict.measured);
    assert!(
        verdict.measured.contains(&plain(rho_z)),
        "{}",
        verdict.measured
    );
    assert!(
        verdict.measured.contains(&plain(rho_dot)),
        "{}",
        verdict.measured
    );
}

#[test]
fn the_variance_adjusted_a_wins_the_papers_figure() {
    let (result, _, verdict) = kernel_run(step("choosing-a"));
    let logs = PAPER.map(|id| median_mse(&result, id));
    assert!(logs[2] < logs[1] && logs[2] < logs[0], "{logs:?}");
    assert_eq!(verdict.answer, 2, "{}", verdict.measured);
    for log in logs {
        assert!(
            verdict.measured.contains(&from_log(log)),
            "{}",
            verdict.measured
        );
    }
}

const PAPER: [&str; 3] = ["prf-hyp", "hcexp-mean", "hcexp-var"];

#[test]
fn the_mean_only_a_loses_to_a_equal_i_when_the_means_vanish() {
    let (result, _, verdict) = kernel_run(step("mean-only-fails"));
    let logs = PAPER.map(|id| median_mse(&result, id));
    // On most datasets, not only in the median: a sign test over the datasets.
    let summaries = |id| {
        let id = EstimatorId::from_id(id).unwrap();
        result.summaries.iter().find(|s| s.estimator == id).unwrap()
    };
    let (mean_only, identity) = (summaries("hcexp-mean"), summaries("prf-hyp"));
    let worse = mean_only
        .per_dataset
        .iter()
        .zip(&identity.per_dataset)
        .filter(|(m, i)| m.log_mse > i.log_mse)
        .count();
    // 20 datasets: at least 15 worse has probability 2 % under a fair coin.
    assert!(worse >= 15, "{worse}");
    assert!(logs[1] - logs[0] > 2f64.ln(), "{logs:?}");
    assert_eq!(verdict.answer, 2, "{}", verdict.measured);
    assert!(verdict.measured.contains(&from_log(logs[1] - logs[0])));
}

#[test]
fn the_measured_mse_falls_like_one_over_m() {
    let (_, curves, verdict) = kernel_run(step("lemma-3-1"));
    let id = EstimatorId::from_id("hcexp-var").unwrap();
    let curve = curves.iter().find(|c| c.estimator == id).unwrap();
    let points: Vec<(f64, f64)> = curve
        .points
        .iter()
        .map(|p| ((p.m as f64).ln(), p.log_measured_mse))
        .collect();
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let slope = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / sxx;
    let residual: f64 = points
        .iter()
        .map(|p| (p.1 - my - slope * (p.0 - mx)).powi(2))
        .sum::<f64>()
        / (n - 2.0);
    let standard_error = (residual / sxx).sqrt();
    assert!(
        (slope + 1.0).abs() < 3.0 * standard_error + 0.05,
        "slope {slope} ± {standard_error}"
    );
    assert_eq!(verdict.answer, 0, "{}", verdict.measured);
    assert!(
        verdict.measured.contains(&plain(slope)),
        "{}",
        verdict.measured
    );
}

/// The variance-adjusted HCEXP's per-dataset (MSE, Lemma 3.1's MSE for i.i.d. ω).
fn per_dataset(query: &str) -> Vec<(f64, f64)> {
    let (config, notices) = ExperimentConfig::from_query(query);
    assert!(notices.is_empty());
    let result = run_experiment(&config).unwrap();
    let id = EstimatorId::from_id("hcexp-var").unwrap();
    let summary = result.summaries.iter().find(|s| s.estimator == id).unwrap();
    summary
        .per_dataset
        .iter()
        .map(|d| (d.mse, d.theoretical_mse))
        .collect()
}

#[test]
fn orthogonal_blocks_land_below_the_iid_prediction_and_iid_draws_on_it() {
    let step = step("couplings");
    let (_, _, verdict) = kernel_run(step);
    assert_eq!(verdict.answer, 2, "{}", verdict.measured);
    for seed in [0, 1] {
        let orthogonal = per_dataset(&format!("{}&seed={seed}", step.query));
        let iid = per_dataset(&format!(
            "{}&seed={seed}",
            step.query.replace("orthogonal", "iid")
        ));
        // Fresh ω per pair: each dataset's MSE is a mean of independent errors whose
        // expectation, for i.i.d. ω, is Lemma 3.1's. The mean gap over the datasets is within
        // three of its standard errors of zero.
        let gaps: Vec<f64> = iid.iter().map(|(m, t)| m - t).collect();
        let (mean, se) = mean_and_standard_error(&gaps);
        assert!(mean.abs() < 3.0 * se, "seed {seed}: iid gap {mean} ± {se}");
        // The same datasets with orthogonal blocks: lower on at least 16 of 20 (a sign test,
        // probability 0.6 % under no effect).
        let lower = orthogonal
            .iter()
            .zip(&iid)
            .filter(|(o, i)| o.0 < i.0)
            .count();
        assert!(
            lower >= 16,
            "seed {seed}: orthogonal lower on {lower} of 20 datasets"
        );
    }
}

#[test]
fn the_fitted_derf_beats_the_papers_best_on_most_datasets() {
    let (result, _, verdict) = kernel_run(step("beyond-the-paper"));
    let by_id = |id| {
        let id = EstimatorId::from_id(id).unwrap();
        result.summaries.iter().find(|s| s.estimator == id).unwrap()
    };
    let (paper, derf) = (by_id("hcexp-var"), by_id("hderf-fit"));
    let better = derf
        .per_dataset
        .iter()
        .zip(&paper.per_dataset)
        .filter(|(d, p)| d.log_mse < p.log_mse)
        .count();
    assert!(better >= 15, "{better} of 20");
    assert_eq!(verdict.answer, 1, "{}", verdict.measured);
    assert!(
        verdict
            .measured
            .contains(&from_log(median_mse(&result, "hderf-fit")))
    );
}

fn attention_run(step: &TourStep, part: AttentionPart) -> AttentionOutput {
    let config = step.config().unwrap();
    let path = format!("{}/{HEADS_ASSET_PATH}", env!("CARGO_MANIFEST_DIR"));
    let mut stored = StoredHeads::read_by(move || std::fs::read(&path).map_err(|e| e.to_string()));
    run_attention(
        &AttentionRequest {
            config,
            part,
            share: None,
            lengths_unit: None,
        },
        &mut stored,
    )
    .expect("the part runs")
}

#[test]
fn positive_features_give_closer_rows_than_trigonometric_ones() {
    let step = step("rows");
    let AttentionOutput::Main(report) = attention_run(step, AttentionPart::Main) else {
        panic!("the main part");
    };
    let tv = |id: &str| {
        let method = report.methods.iter().find(|m| m.method.id() == id).unwrap();
        plain_median(method.row_tv.clone())
    };
    let (performer, rfa) = (tv("prf-pos"), tv("rff"));
    assert!(rfa > 1.25 * performer, "{performer} {rfa}");
    let verdict = (step.verdict)(&Evidence::Attention(&report)).unwrap();
    assert_eq!(verdict.answer, 0, "{}", verdict.measured);
    assert!(verdict.measured.contains(&plain(performer)));
    assert!(verdict.measured.contains(&plain(rfa)));
}

#[test]
fn on_the_real_heads_the_kernels_winner_rarely_wins_the_rows() {
    let step = step("real-heads");
    let AttentionOutput::KernelVsAttention(report) =
        attention_run(step, AttentionPart::KernelVsAttention)
    else {
        panic!("the kernel-against-attention part");
    };
    // Counted here from the two tables: the kernel's and the rows' argmin per head.
    let argmin = |column: Vec<f64>| {
        column
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite())
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, _)| i)
    };
    let with_kernel: Vec<usize> = (0..report.methods.len())
        .filter(|&m| report.kernel[m].iter().any(|v| v.is_finite()))
        .collect();
    let heads = report.problems.len();
    let agree = (0..heads)
        .filter(|&p| {
            let kernel = argmin(with_kernel.iter().map(|&m| report.kernel[m][p]).collect());
            let rows = argmin(
                with_kernel
                    .iter()
                    .map(|&m| report.attention[m][p])
                    .collect(),
            );
            kernel.is_some() && kernel == rows
        })
        .count();
    assert_eq!(heads, 72);
    assert!(agree < heads * 3 / 10, "{agree} of {heads}");
    let verdict = (step.verdict)(&Evidence::KernelVsAttention(&report)).unwrap();
    assert_eq!(verdict.answer, 2, "{}", verdict.measured);
    assert!(
        verdict
            .measured
            .contains(&format!("{agree} of the {heads} heads"))
    );
}
