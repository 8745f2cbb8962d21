//! Property tests (proptest): the URL/configuration parser and the numerical entry points
//! never panic on any input, and the estimators keep their invariants.
#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use softmax_kernel_lab::lab::config::{ExperimentConfig, Param};
use softmax_kernel_lab::numerics::dataset::{Dataset, SampleMoments};
use softmax_kernel_lab::numerics::estimators::{
    Estimator, EstimatorId, EstimatorParams, Fit, FitInput, Projections, REGISTRY,
    reference_estimate,
};
use softmax_kernel_lab::numerics::heuristics::{A_MAX, A_MIN, AHeuristic, diagonal_a};
use softmax_kernel_lab::numerics::probe::{ProbeRequest, probe_pair};
use softmax_kernel_lab::numerics::projections::couplings::Coupling;
use softmax_kernel_lab::numerics::rng::{StreamPurpose, stream_rng};

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
    let every: Vec<Param> = Param::every().collect();
    (0..every.len()).prop_map(move |i| every[i])
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
    fn estimates_are_finite_in_the_log_domain_and_positive_where_the_sum_is(
        x in vector(5, 25.0), y in vector(5, 25.0), a in proptest::collection::vec(0.01..100.0f64, 5),
        m in 1usize..24, seed in any::<u64>(), theta in 0.0..std::f64::consts::FRAC_PI_2,
    ) {
        let omega = Projections::sample(m, 5, &mut stream_rng(seed, StreamPurpose::Trial, 0, 0)).unwrap();
        // CEXP and HCEXP with an arbitrary diagonal A (the real-diagonal registry entries read
        // only `fit.a`), as before the registry.
        for id in ["cexp-var", "hcexp-var"] {
            let estimator = EstimatorId::from_id(id).unwrap().get();
            let log_estimate = reference_estimate(estimator, &Fit::diagonal(a.clone(), 0), &x, &y, &omega).unwrap();
            prop_assert!(!log_estimate.negative && log_estimate.ln_abs.is_finite(), "{id}: {log_estimate:?}");
        }
        // Every registry entry fitted to the pair itself (and θ for the complex A): the log
        // magnitude is never NaN or +∞, and an estimator whose sum is not signed is positive
        // with a finite log.
        let data = Dataset { d: 5, n: 1, x: x.clone(), y: y.clone() };
        let moments = SampleMoments::of_pair(&x, &y);
        let params = EstimatorParams { theta, complex_a: AHeuristic::VarianceAdjusted };
        for estimator in REGISTRY {
            let fit = estimator.fit(FitInput { data: &data, moments: &moments }, &params).unwrap();
            let estimate = reference_estimate(*estimator, &fit, &x, &y, &omega).unwrap();
            prop_assert!(!estimate.ln_abs.is_nan() && estimate.ln_abs < f64::INFINITY, "{}: {estimate:?}", estimator.id());
            if !estimator.fast_sum(&fit).is_signed() {
                prop_assert!(!estimate.negative && estimate.ln_abs.is_finite(), "{}: {estimate:?}", estimator.id());
            }
        }
    }

    #[test]
    fn hyperbolic_estimate_is_the_mean_of_the_positive_ones_with_omega_and_minus_omega(
        x in vector(4, 1.5), y in vector(4, 1.5), a in proptest::collection::vec(0.5..2.0f64, 4),
        theta in 0.0..std::f64::consts::FRAC_PI_2, m in 1usize..16, seed in any::<u64>(),
    ) {
        // cosh(t) = (e^t + e^-t)/2: HCEXP with ω equals the mean of CEXP with ω and with −ω;
        // likewise every hyperbolic registry entry and its positive twin, with the same fit
        // (PRF with A = I, as before the registry, and every other pair of twins).
        let mut rng = stream_rng(seed, StreamPurpose::Trial, 1, 0);
        let omega = Projections::sample(m, 4, &mut rng).unwrap();
        let negated = omega.negated();
        let mut pairs_of_twins = 0;
        for hyperbolic in REGISTRY.iter().filter(|e| e.is_hyperbolic()) {
            let Some(twin) = hyperbolic.twin() else { continue };
            let positive = EstimatorId::from_id(twin).unwrap().get();
            prop_assert!(!positive.is_hyperbolic());
            pairs_of_twins += 1;
            let fits = [
                Fit::identity(4),
                Fit { theta, ..Fit::diagonal(a.clone(), 0) },
            ];
            for fit in fits {
                let value = |e: &dyn Estimator, w: &Projections| reference_estimate(e, &fit, &x, &y, w).unwrap().value();
                let (up, down) = (value(positive, &omega), value(positive, &negated));
                let both = value(*hyperbolic, &omega);
                let mean = 0.5 * (up + down);
                // Relative to the magnitudes summed (a signed estimate can cancel to ~0).
                prop_assert!(
                    (both - mean).abs() <= 1e-10 * (up.abs() + down.abs()),
                    "{}: {both} vs {mean} ({fit:?})", hyperbolic.id()
                );
            }
        }
        prop_assert!(pairs_of_twins >= 3);
    }

    #[test]
    fn moving_scale_between_queries_and_keys_changes_no_estimate(
        x in vector(4, 2.0), y in vector(4, 2.0), scale in 0.05..20.0f64, seed in any::<u64>(),
    ) {
        // (x, y) -> (x/c, c·y) keeps x·y; both data-driven heuristics give A' = c·A, so
        // A'x' = Ax and A'^-T y' = A^-T y: the estimate must not move (same ω). This holds
        // for every registry entry whose A is fitted to the data (HCEXP with mean-only and
        // variance-adjusted A as before the registry, CEXP, the optimised A, OPRF on (Ax, A⁻¹y)
        // and the complex A with data-driven magnitudes); an entry with A = I (a fit of all
        // ones) does not claim it.
        prop_assume!(x.iter().chain(&y).all(|v| v.abs() > 1e-3));
        let xs: Vec<f64> = x.iter().map(|v| v / scale).collect();
        let ys: Vec<f64> = y.iter().map(|v| v * scale).collect();
        let omega = Projections::sample(8, 4, &mut stream_rng(seed, StreamPurpose::Trial, 2, 0)).unwrap();
        let params = EstimatorParams { theta: 0.6, complex_a: AHeuristic::VarianceAdjusted };
        let fit_to = |e: &dyn Estimator, x: &[f64], y: &[f64]| {
            let data = Dataset { d: 4, n: 1, x: x.to_vec(), y: y.to_vec() };
            e.fit(FitInput { data: &data, moments: &SampleMoments::of_pair(x, y) }, &params).unwrap()
        };
        for heuristic in [AHeuristic::MeanOnly, AHeuristic::VarianceAdjusted] {
            let a = diagonal_a(heuristic, &SampleMoments::of_pair(&x, &y));
            let a_scaled = diagonal_a(heuristic, &SampleMoments::of_pair(&xs, &ys));
            prop_assume!(a.clamped == 0 && a_scaled.clamped == 0);
        }
        let mut data_driven = 0;
        for estimator in REGISTRY {
            let (fit, fit_scaled) = (fit_to(*estimator, &x, &y), fit_to(*estimator, &xs, &ys));
            if fit.a.iter().all(|a| *a == 1.0) {
                continue;
            }
            data_driven += 1;
            let before = reference_estimate(*estimator, &fit, &x, &y, &omega).unwrap();
            let after = reference_estimate(*estimator, &fit_scaled, &xs, &ys, &omega).unwrap();
            let (b, c) = (before.value(), after.value());
            prop_assert!(
                (before.negative == after.negative && (before.ln_abs - after.ln_abs).abs() < 1e-9)
                    || (b - c).abs() <= 1e-9 * (b.abs() + c.abs()),
                "{}: {before:?} vs {after:?}", estimator.id()
            );
        }
        prop_assert!(data_driven >= 4, "{data_driven}");
    }

    #[test]
    fn probe_never_panics(
        x in proptest::collection::vec(any::<f64>(), 0..5),
        y in proptest::collection::vec(any::<f64>(), 0..5),
        a in proptest::collection::vec(any::<f64>(), 0..5),
        theta in any::<f64>(), alpha in any::<f64>(),
        m in 0usize..8, trials in 0usize..6, seed in any::<u64>(), coupling in 0usize..4,
    ) {
        // Valid inputs give exactly `trials` estimates; anything else is an error, not a panic.
        let finite = |v: &[f64]| v.iter().all(|c| c.is_finite());
        let valid = !x.is_empty()
            && x.len() == y.len()
            && x.len() == a.len()
            && finite(&x)
            && finite(&y)
            && finite(&a)
            && !a.contains(&0.0)
            && theta.is_finite()
            && alpha.is_finite()
            && m >= 1
            && trials >= 2;
        for estimator in EstimatorId::all() {
            let fit = Fit { theta, alpha, ..Fit::diagonal(a.clone(), 0) };
            let request = ProbeRequest {
                estimator, fit, x: x.clone(), y: y.clone(), m, trials, seed,
                coupling: Coupling::ALL[coupling],
                fit_to_pair: None,
            };
            match probe_pair(&request) {
                Ok(result) => {
                    prop_assert!(valid, "{estimator:?} accepted invalid input");
                    prop_assert_eq!(result.estimates.len(), trials);
                }
                Err(_) => prop_assert!(!valid, "{estimator:?} refused valid input"),
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Well-formed pairs (the hostile generator above rarely makes one): every estimator
    /// answers with exactly `trials` estimates when trials ≥ 2, and refuses otherwise.
    #[test]
    fn probe_answers_well_formed_requests(
        (x, y, a) in (1usize..5).prop_flat_map(|d| (
            proptest::collection::vec(-2.0f64..2.0, d),
            proptest::collection::vec(-2.0f64..2.0, d),
            proptest::collection::vec(0.1f64..10.0, d),
        )),
        theta in 0.0f64..1.6, m in 1usize..8, trials in 0usize..6, seed in any::<u64>(),
        coupling in 0usize..4,
    ) {
        for estimator in EstimatorId::all() {
            let fit = Fit { theta, alpha: -0.05, ..Fit::diagonal(a.clone(), 0) };
            let request = ProbeRequest {
                estimator, fit, x: x.clone(), y: y.clone(), m, trials, seed,
                coupling: Coupling::ALL[coupling],
                fit_to_pair: None,
            };
            match probe_pair(&request) {
                Ok(result) => {
                    prop_assert!(trials >= 2, "{estimator:?} accepted {trials} trials");
                    prop_assert_eq!(result.estimates.len(), trials);
                    prop_assert!(result.estimates.iter().all(|e| e.is_finite()));
                }
                Err(error) => prop_assert!(trials < 2, "{estimator:?} refused: {error}"),
            }
        }
    }
}

/// Found by `any_key_value_soup_gives_a_valid_configuration`: every value `set` accepts must
/// survive its own text (`get`, the URL) and `validate`. θ's range starts at 0, so tiny angles
/// such as 1e-255 are accepted, but f64's `Display` writes them without an exponent (257
/// characters), past the 256-character limit of `set`.
#[test]
fn every_accepted_theta_round_trips_through_its_text() {
    for text in ["1e-255", "5e-324", "1e-300", "0.6"] {
        let mut config = ExperimentConfig::default();
        config.set(Param::Theta, text).unwrap();
        let (parsed, notices) = ExperimentConfig::from_query(&config.to_query());
        assert!(notices.is_empty(), "θ = {text}: {notices:?}");
        assert_eq!(parsed, config, "θ = {text}");
        assert!(config.validate().is_ok(), "θ = {text}");
    }
}
