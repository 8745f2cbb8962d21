//! Property tests (proptest): the URL/configuration parser and the numerical entry points
//! never panic on any input, and the estimators keep their invariants.
#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use softmax_kernel_lab::math::config::{ExperimentConfig, Param};
use softmax_kernel_lab::math::dataset::SampleMoments;
use softmax_kernel_lab::math::estimators::{FeatureForm, PairEstimator, Projections};
use softmax_kernel_lab::math::heuristics::{A_MAX, A_MIN, AHeuristic, diagonal_a};
use softmax_kernel_lab::math::probe::probe_pair;
use softmax_kernel_lab::math::rng::{StreamPurpose, stream_rng};

/// Strings shaped like hostile URL values: numbers, specials, text, unicode, long runs.
fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[-+]?[0-9]{0,30}(\\.[0-9]{0,20})?(e[-+]?[0-9]{1,5})?",
        Just("NaN".to_string()),
        Just("inf".to_string()),
        Just("-0".to_string()),
        "[a-z,]{0,80}",
        "\\PC{0,200}",
    ]
}

fn param() -> impl Strategy<Value = Param> {
    (0..Param::ALL.len()).prop_map(|i| Param::ALL[i])
}

/// Finite vectors of dimension `d` with components in (-bound, bound).
fn vector(d: usize, bound: f64) -> impl Strategy<Value = Vec<f64>> {
    proptest::collection::vec(-bound..bound, d)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn any_query_gives_a_valid_configuration(query in "\\PC{0,300}") {
        let (config, _notices) = ExperimentConfig::from_query(&query);
        prop_assert!(config.validate().is_ok());
    }

    #[test]
    fn any_key_value_soup_gives_a_valid_configuration(
        pairs in proptest::collection::vec((param(), hostile_text()), 0..20)
    ) {
        let query: String = pairs
            .iter()
            .map(|(p, v)| format!("{}={}", p.key(), v.replace(['&', '#'], "")))
            .collect::<Vec<_>>()
            .join("&");
        let (config, _) = ExperimentConfig::from_query(&query);
        prop_assert!(config.validate().is_ok());
    }

    #[test]
    fn set_never_panics_and_never_leaves_an_invalid_configuration(
        edits in proptest::collection::vec((param(), hostile_text()), 1..12)
    ) {
        let mut config = ExperimentConfig::default();
        for (param, text) in edits {
            let before = config.clone();
            if config.set(param, &text).is_err() {
                prop_assert_eq!(&config, &before, "a refused value changes nothing");
            }
            prop_assert!(config.validate().is_ok());
        }
    }

    #[test]
    fn heuristics_give_finite_entries_in_range_for_any_finite_moments(
        means_x in vector(6, 1e6), means_y in vector(6, 1e6),
        vars_x in proptest::collection::vec(0.0..1e6f64, 6),
        vars_y in proptest::collection::vec(0.0..1e6f64, 6),
    ) {
        let moments = SampleMoments { mean_x: means_x, var_x: vars_x, mean_y: means_y, var_y: vars_y };
        for heuristic in AHeuristic::ALL {
            let diag = diagonal_a(heuristic, &moments);
            prop_assert!(diag.a.iter().all(|a| a.is_finite() && (A_MIN..=A_MAX).contains(a)));
        }
    }

    #[test]
    fn estimates_are_positive_and_finite_in_the_log_domain(
        x in vector(5, 25.0), y in vector(5, 25.0), a in proptest::collection::vec(0.01..100.0f64, 5),
        m in 1usize..24, seed in any::<u64>(),
    ) {
        let omega = Projections::sample(m, 5, &mut stream_rng(seed, StreamPurpose::Trial, 0, 0)).unwrap();
        for form in [FeatureForm::Positive, FeatureForm::Hyperbolic] {
            let log_estimate = PairEstimator::new(form, 5, m).log_estimate(&x, &y, &a, &omega).unwrap();
            // Positive estimators: the log exists (the estimate is > 0) and is finite.
            prop_assert!(log_estimate.is_finite(), "{form:?}: {log_estimate}");
        }
    }

    #[test]
    fn hyperbolic_estimate_is_the_mean_of_the_positive_ones_with_omega_and_minus_omega(
        x in vector(4, 1.5), y in vector(4, 1.5), m in 1usize..16, seed in any::<u64>(),
    ) {
        // cosh(t) = (e^t + e^-t)/2: HCEXP with ω equals the mean of CEXP with ω and with −ω.
        let a = [1.0; 4];
        let mut rng = stream_rng(seed, StreamPurpose::Trial, 1, 0);
        let omega = Projections::sample(m, 4, &mut rng).unwrap();
        let negated = omega.negated();
        let positive = |w: &Projections| {
            PairEstimator::new(FeatureForm::Positive, 4, m).log_estimate(&x, &y, &a, w).unwrap().exp()
        };
        let hyperbolic = PairEstimator::new(FeatureForm::Hyperbolic, 4, m)
            .log_estimate(&x, &y, &a, &omega).unwrap().exp();
        let mean = 0.5 * (positive(&omega) + positive(&negated));
        prop_assert!((hyperbolic / mean - 1.0).abs() < 1e-10, "{hyperbolic} vs {mean}");
    }

    #[test]
    fn moving_scale_between_queries_and_keys_changes_no_estimate(
        x in vector(4, 2.0), y in vector(4, 2.0), scale in 0.05..20.0f64, seed in any::<u64>(),
    ) {
        // (x, y) -> (x/c, c·y) keeps x·y; both data-driven heuristics give A' = c·A, so
        // A'x' = Ax and A'^-T y' = A^-T y: the estimate must not move (same ω).
        prop_assume!(x.iter().chain(&y).all(|v| v.abs() > 1e-3));
        let xs: Vec<f64> = x.iter().map(|v| v / scale).collect();
        let ys: Vec<f64> = y.iter().map(|v| v * scale).collect();
        let omega = Projections::sample(8, 4, &mut stream_rng(seed, StreamPurpose::Trial, 2, 0)).unwrap();
        for heuristic in [AHeuristic::MeanOnly, AHeuristic::VarianceAdjusted] {
            let a = diagonal_a(heuristic, &SampleMoments::of_pair(&x, &y));
            let a_scaled = diagonal_a(heuristic, &SampleMoments::of_pair(&xs, &ys));
            prop_assume!(a.clamped == 0 && a_scaled.clamped == 0);
            let mut estimator = PairEstimator::new(FeatureForm::Hyperbolic, 4, 8);
            let before = estimator.log_estimate(&x, &y, &a.a, &omega).unwrap();
            let after = estimator.log_estimate(&xs, &ys, &a_scaled.a, &omega).unwrap();
            prop_assert!((before - after).abs() < 1e-9, "{heuristic:?}: {before} vs {after}");
        }
    }

    #[test]
    fn probe_never_panics(
        x in proptest::collection::vec(any::<f64>(), 0..5),
        y in proptest::collection::vec(any::<f64>(), 0..5),
        a in proptest::collection::vec(any::<f64>(), 0..5),
        m in 0usize..8, trials in 0usize..6, seed in any::<u64>(),
    ) {
        for form in [FeatureForm::Positive, FeatureForm::Hyperbolic] {
            let _ = probe_pair(&x, &y, &a, form, m, trials, seed);
        }
    }
}
