//! The seed paper's experiment (section 4) as a pure function from an [`ExperimentConfig`] to
//! plain data: no signals, no DOM, so the page, a Web Worker and the command line share it.
//!
//! Dataset 0 is the scatter dataset (Figure 1, `n` pairs); datasets `1..=datasets` are the
//! boxplot datasets (Figures 2 and 3, `pairs` pairs each). Each dataset and each set of ω comes
//! from its own seeded stream ([`crate::numerics::rng`]), so any piece can be recomputed alone. Within a
//! dataset every estimator sees the same ω (common random numbers), so differences between
//! estimators come from A and not from the draw.

pub use crate::lab::config::{CURVE_MS, CURVE_PAIRS, CURVE_REPEATS};
pub use crate::lab::kernel::results::{
    CurvePoint, DatasetMetrics, EstimatorSummary, ExperimentError, ExperimentResult, MseCurve,
    PairEstimates, ScatterSeries,
};
pub use crate::lab::kernel::tasks::generate_dataset;
pub use crate::numerics::estimators::EstimatorId;
pub use crate::numerics::logspace::log_of_median;

use crate::lab::config::ExperimentConfig;
use crate::lab::kernel::tasks::{Piece, TaskStore, Workspace, plan};

/// Runs the whole experiment (the scatter dataset and every boxplot dataset) on this thread:
/// the tasks a Web Worker pool shares on the page, one after another ([`crate::lab::kernel::tasks`]).
pub fn run_experiment(config: &ExperimentConfig) -> Result<ExperimentResult, ExperimentError> {
    config.validate().map_err(ExperimentError::Config)?;
    let mut workspace = Workspace::new();
    let mut store = TaskStore::new();
    for task in plan(config).iter().filter(|t| t.piece != Piece::Curve) {
        let output = workspace.run(config, task)?;
        store.insert(config, task, output);
    }
    store
        .result(config)
        .ok_or_else(|| ExperimentError::InvalidTask("the plan left a piece out".into()))
}

/// MSE against m for the configuration's estimators at each m of `ms`, on the first
/// [`CURVE_PAIRS`] pairs of the scatter dataset with A from the whole dataset, as in Figure 1.
/// For each m, [`CURVE_REPEATS`] independent sets of ω (each shared by the pairs) give as many
/// MSEs; their mean and standard error are the measured point, and the mean of Lemma 3.1 over
/// the same pairs is the theory, so the two agree in expectation. The page runs the same
/// tasks ([`Piece::Curve`]) in its workers.
pub fn mse_against_m(
    config: &ExperimentConfig,
    ms: &[usize],
) -> Result<Vec<MseCurve>, ExperimentError> {
    config.validate().map_err(ExperimentError::Config)?;
    let mut workspace = Workspace::new();
    config
        .estimators
        .iter()
        .map(|&estimator| {
            let points = workspace.curve_points(config, estimator, ms)?;
            Ok(MseCurve { estimator, points })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::config::Param;
    use crate::numerics::dataset::SampleMoments;
    use crate::numerics::estimators::Fit;
    use crate::numerics::logspace::SignedLog;
    use crate::numerics::portable::Libm;
    use crate::numerics::theory::Theorem33Inputs;

    fn small_config() -> ExperimentConfig {
        let mut config = ExperimentConfig::default();
        for (param, value) in [
            ("m", "64"),
            ("n", "200"),
            ("datasets", "5"),
            ("pairs", "100"),
        ] {
            config.set(Param::from_key(param).unwrap(), value).unwrap();
        }
        config
    }

    #[test]
    fn mse_curve_theory_falls_as_one_over_m_and_measurements_follow_it() {
        let config = small_config();
        let curves = mse_against_m(&config, &[16, 64, 256, 1024]).unwrap();
        assert_eq!(curves.len(), 3);
        for curve in &curves {
            let first = curve.points[0];
            for point in &curve.points {
                // Lemma 3.1 is exactly proportional to 1/m.
                let expected =
                    first.log_theoretical_mse + (first.m as f64 / point.m as f64).libm_ln();
                assert!((point.log_theoretical_mse - expected).abs() < 1e-9);
            }
        }
        // With the variance-adjusted A, |z| is small and the squared errors are light-tailed:
        // at the largest m the measurement lies within 5 standard errors (or 30 %) of the
        // theory. (PRF's |z|² is about 25 here: its MSE is dominated by draws too rare to
        // appear in a few repeats, which the page shows as points far below the line.)
        for curve in curves.iter().filter(|c| c.estimator.id() == "hcexp-var") {
            let last = curve.points[3];
            let (measured, theory) = (
                last.log_measured_mse.libm_exp(),
                last.log_theoretical_mse.libm_exp(),
            );
            let tolerance = (5.0 * last.log_standard_error.libm_exp()).max(0.3 * theory);
            assert!(
                (measured - theory).abs() < tolerance,
                "{:?}: {last:?}",
                curve.estimator
            );
        }
    }

    #[test]
    fn same_configuration_same_numbers() {
        let config = small_config();
        assert_eq!(run_experiment(&config), run_experiment(&config));
    }

    #[test]
    fn a_different_seed_gives_different_numbers() {
        let config = small_config();
        let mut other = config.clone();
        other.seed = 1;
        let a = run_experiment(&config).unwrap();
        let b = run_experiment(&other).unwrap();
        assert_ne!(a.summaries[0].median_mse, b.summaries[0].median_mse);
    }

    /// Lemma 3.1 for the hyperbolic form, in log space, computed here from x, y and a:
    /// `log MSE = −ln(2m) + |z|² + 2 x·y + 2 ln(1 − e^{−|z|²})` with `z = a∘x + y/a`, and a
    /// tolerance for its f64 rounding (d-term sums: d ε times the sums of |terms|).
    fn lemma_3_1_hyperbolic(x: &[f64], y: &[f64], a: &[f64], m: usize) -> (f64, f64) {
        let s: f64 = x
            .iter()
            .zip(y)
            .zip(a)
            .map(|((x, y), a)| (a * x + y / a).powi(2))
            .sum();
        let xy: f64 = x.iter().zip(y).map(|(x, y)| x * y).sum();
        let xy_abs: f64 = x.iter().zip(y).map(|(x, y)| (x * y).abs()).sum();
        let log_one_minus = (-(-s).exp_m1()).ln();
        let value = -((2 * m) as f64).ln() + s + 2.0 * xy + 2.0 * log_one_minus;
        let tolerance = 4.0
            * x.len() as f64
            * f64::EPSILON
            * (s + 2.0 * xy_abs + 2.0 * log_one_minus.abs() + 10.0);
        (value, tolerance)
    }

    #[test]
    fn norms_of_fifty_follow_lemma_3_1_in_log_space() {
        // exp(x·y) overflows f64 here (x·y reaches thousands), yet each pair's log theoretical
        // MSE is Lemma 3.1's closed form in log space (the three default estimators are all
        // hyperbolic), and the curve's theory at m is the log of its mean over the first
        // CURVE_PAIRS pairs.
        let mut config = small_config();
        config.set(Param::XNorm, "50").unwrap();
        config.set(Param::YNorm, "50").unwrap();
        let data = generate_dataset(&config, 0).unwrap();
        let result = run_experiment(&config).unwrap();
        let ids: Vec<&str> = result
            .scatter
            .iter()
            .map(|s| s.estimates.estimator.id())
            .collect();
        assert_eq!(ids, ["prf-hyp", "hcexp-mean", "hcexp-var"]);
        let mut overflowing = 0;
        for series in &result.scatter {
            let e = &series.estimates;
            assert_eq!(e.log_theoretical_mse.len(), data.n);
            for (i, got) in e.log_theoretical_mse.iter().enumerate() {
                let (x, y) = (data.query(i), data.key(i));
                let (want, tolerance) = lemma_3_1_hyperbolic(x, y, &e.fit.a, config.m);
                assert!(
                    (got - want).abs() <= tolerance,
                    "{} pair {i}: log MSE {got} vs Lemma 3.1 {want} (tolerance {tolerance:e})",
                    e.estimator.id()
                );
                overflowing += usize::from(want > 709.0);
            }
        }
        assert!(
            overflowing > 0,
            "some MSE must overflow f64 for this test to mean anything"
        );
        // The measured logs have no closed form; they must at least be numbers.
        for summary in &result.summaries {
            assert!(
                summary.log_median_theoretical_mse.is_finite(),
                "{summary:?}"
            );
            assert!(summary.log_median_mse.is_finite(), "{summary:?}");
            assert!(summary.log_median_max_rel_err.is_finite(), "{summary:?}");
        }
        assert!(
            result.scatter.iter().all(|s| s
                .estimates
                .estimates
                .iter()
                .all(|l| l.ln_abs.is_finite()))
        );
        let curves = mse_against_m(&config, &[16, 256]).unwrap();
        let pairs = CURVE_PAIRS.min(data.n);
        for (curve, series) in curves.iter().zip(&result.scatter) {
            for point in &curve.points {
                let logs: Vec<(f64, f64)> = (0..pairs)
                    .map(|i| {
                        lemma_3_1_hyperbolic(
                            data.query(i),
                            data.key(i),
                            &series.estimates.fit.a,
                            point.m,
                        )
                    })
                    .collect();
                let max = logs.iter().map(|l| l.0).fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = logs.iter().map(|l| (l.0 - max).exp()).sum();
                let want = max + (sum / pairs as f64).ln();
                let tolerance = logs.iter().map(|l| l.1).fold(0.0, f64::max) + 1e-12;
                assert!(
                    (point.log_theoretical_mse - want).abs() <= tolerance,
                    "{:?} m {}: {} vs {want}",
                    curve.estimator,
                    point.m,
                    point.log_theoretical_mse
                );
                assert!(point.log_measured_mse.is_finite());
            }
        }
    }

    #[test]
    fn theory_is_recorded_for_every_pair() {
        let result = run_experiment(&small_config()).unwrap();
        for series in &result.scatter {
            let e = &series.estimates;
            assert_eq!(e.log_theoretical_mse.len(), e.log_true.len());
            assert!(e.data_radius > 0.0 && series.metrics.theoretical_mse > 0.0);
        }
        for summary in &result.summaries {
            assert!(summary.median_theoretical_mse > 0.0);
        }
    }

    #[test]
    fn result_has_one_entry_per_estimator_and_dataset() {
        let mut config = small_config();
        config.set(Param::Estimators, "prf-hyp,hcexp-var").unwrap();
        let result = run_experiment(&config).unwrap();
        assert_eq!(result.scatter.len(), 2);
        assert_eq!(result.scatter[0].estimates.log_true.len(), 200);
        assert_eq!(result.summaries[1].per_dataset.len(), 5);
        assert_eq!(result.summaries[1].estimator.id(), "hcexp-var");
    }

    #[test]
    fn metrics_match_a_direct_computation() {
        let mut estimates = PairEstimates {
            estimator: EstimatorId::from_id("prf-pos").unwrap(),
            log_true: vec![0.0, 1.0_f64.libm_ln() + 1.0],
            estimates: vec![
                SignedLog::positive(2.0_f64.libm_ln()),
                SignedLog::positive(1.0),
            ],
            fit: Fit::identity(1),
            log_theoretical_mse: vec![0.0, 2.0_f64.libm_ln()],
            z_squared: vec![1.0, 2.0],
            data_radius: 1.0,
            theorem_3_3: Some(
                Theorem33Inputs::new(&SampleMoments::of_pair(&[1.0], &[1.0]), &[1.0], 1).unwrap(),
            ),
            sweep: None,
        };
        // pair 0: SM 1, estimate 2: sq err 1, rel 1; pair 1: exact.
        let metrics = estimates.metrics();
        assert!((metrics.mse - 0.5).abs() < 1e-12);
        assert!((metrics.max_rel_err - 1.0).abs() < 1e-12);
        assert!((metrics.theoretical_mse - 1.5).abs() < 1e-12);
        // A negative estimate −1 of SM = 1: squared error 4, relative error 2.
        estimates.estimates[0] = SignedLog::from_value(-1.0);
        let metrics = estimates.metrics();
        assert!((metrics.mse - 2.0).abs() < 1e-12);
        assert!((metrics.max_rel_err - 2.0).abs() < 1e-12);
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_two_middle_values() {
        let logs = [
            1f64.libm_ln(),
            3f64.libm_ln(),
            100f64.libm_ln(),
            0.5f64.libm_ln(),
        ];
        assert!((log_of_median(&logs).libm_exp() - 2.0).abs() < 1e-12);
        assert!((log_of_median(&logs[..3]).libm_exp() - 3.0).abs() < 1e-12);
        assert!(log_of_median(&[]).is_nan());
        // Beyond f64: the middle values e^1000 and e^1001.
        let huge = [1000.0, 1001.0];
        let expected = 1000.0 + ((1.0 + 1f64.libm_exp()) / 2.0).libm_ln();
        assert!((log_of_median(&huge) - expected).abs() < 1e-12);
    }

    #[test]
    fn fresh_omega_is_reproducible_and_differs_from_shared() {
        let mut config = small_config();
        config.set(Param::Omega, "fresh").unwrap();
        let a = run_experiment(&config).unwrap();
        assert_eq!(Ok(a.clone()), run_experiment(&config));
        let shared = run_experiment(&small_config()).unwrap();
        assert_eq!(
            a.scatter[0].estimates.log_true, shared.scatter[0].estimates.log_true,
            "the data does not depend on how ω is drawn"
        );
        assert_ne!(
            a.scatter[0].estimates.estimates,
            shared.scatter[0].estimates.estimates
        );
    }

    fn medians_for(pairs: &str, mean_scale: &str) -> Vec<f64> {
        let mut config = ExperimentConfig::default();
        config.set(Param::N, "2").unwrap();
        config.set(Param::Pairs, pairs).unwrap();
        config.set(Param::MeanScale, mean_scale).unwrap();
        let result = run_experiment(&config).unwrap();
        result.summaries.iter().map(|s| s.median_mse).collect()
    }

    #[test]
    fn prf_is_far_worse_than_both_hcexp_heuristics_with_the_scale_reading() {
        // With b = 50 (the paper's "Laplace(0, 50)" read as a scale), PRF is still poor and HCEXP
        // much better. Measured with seed 0: PRF's median MSE about 0.7, HCEXP's about 1e-3;
        // require a factor of 20.
        let medians = medians_for("100", "50");
        assert!(medians[0] > 20.0 * medians[1], "{medians:?}");
        assert!(medians[0] > 20.0 * medians[2], "{medians:?}");
    }

    #[test]
    fn heuristics_coincide_when_variances_are_negligible_against_means() {
        // With b = 50 and Gamma(0.02)/Gamma(0.01) variances, σ²_i ≪ μ²_i in
        // almost every component, and the seed paper notes both heuristics agree at σ² = 0:
        // their medians differ by well under 5 %.
        let medians = medians_for("100", "50");
        assert!((medians[1] / medians[2] - 1.0).abs() < 0.05, "{medians:?}");
    }

    #[test]
    fn paper_ordering_holds_at_the_default_settings() {
        // The paper's Figures 2 and 3: PRF > HCEXP mean-only > HCEXP variance-adjusted in
        // median MSE. At the default b = 0.02 the query variances are comparable to the squared
        // means, mean-only A magnifies them (seed paper, end of section 3) and Lemma 3.4's A
        // is better. Measured with seed 0 on the full default page: 0.83, 0.54, 1.7e-3; here
        // (100 pairs per dataset) require factors of 2 and 10.
        let medians = medians_for("100", "0.02");
        assert!(medians[0] > 2.0 * medians[1], "{medians:?}");
        assert!(medians[1] > 10.0 * medians[2], "{medians:?}");
    }
}
