//! One statistical harness for every estimator of the registry (`REGISTRY`): nothing here
//! names an estimator except the value pins (which list what they pin and skip the fits that
//! come from an optimiser: `hcexp-opt`, `derf-fit`, `hderf-fit`);
//! which checks apply is decided from the trait (`fast_sum`, `log_mse`, `parameter_key`).
//!
//! On fixed pairs of two small seeded datasets (d = 4 with m = 8, d = 6 with m = 6), with each
//! estimator fitted to its dataset (θ = 0.6 and variance-adjusted magnitudes, so the complex A
//! is neither real nor RFF), and `TRIALS` estimates per case, each with fresh ω from its own
//! stream `stream_rng(SEED, Trial, t, k)`:
//!
//! - **unbiased**: the mean of the estimates is within 4 standard errors of SM (i.i.d. ω and
//!   orthogonal ω), and an estimator whose sum is not signed never gives a negative estimate;
//! - **MSE**: the empirical MSE is within 4 standard errors (of the squared errors) of the
//!   estimator's `log_mse`; the same interval rejects `log_mse + ln 2` and `log_mse − ln 2`
//!   for every estimator on at least one case, and the mean check rejects a 5 % bias (so
//!   neither tolerance is vacuous);
//! - **features**: `features(x, Query) · features(y, Key)` is `reference_estimate` with the
//!   same ω, for every pair (x_i, y_j) of a dataset, i.i.d. and orthogonal ω, to 1e-10
//!   relative to `Σ|φ_k ψ_k|` (the sum's own rounding scale; equal to the estimate itself for
//!   positive features, which must also be non-negative);
//! - **page parameters**: an estimator whose fit reads θ or the complex A's magnitudes is
//!   unbiased and matches its MSE formula across them (θ = 0, π/4, 1.2, π/2; each heuristic);
//! - **orthogonal features** (`resample_orthogonal`, whole blocks): for the `Exp` and `Cosh`
//!   sums the empirical MSE matches the exact MSE of orthogonal blocks (a series derived in
//!   `orthogonal_relative_mse`), and every estimator with an exponential sum (`Exp`, `Cosh`,
//!   `ScaledExp`, `ScaledCosh`) has a lower MSE than with i.i.d. ω on a pair with `|z|² = 1`, d = m = 8, by
//!   more than 2 combined standard errors (one-sided);
//! - **pins**: the exact `reference_estimate` of every estimator but those fitted by an
//!   optimiser (`hcexp-opt`, `derf-fit`, `hderf-fit`) on one pair, fit and ω, so that a dependency update that
//!   changes the numbers fails loudly.
//!
//! The f32 kernel through the task pipeline is checked against `reference_estimate` in
//! `src/math/tasks.rs`, not here.
//!
//! # Why 4 standard errors is a trustworthy interval here
//!
//! The estimates' error distributions are heavy-tailed (log-normal for exponential features;
//! see `tests/statistics.rs`), and the sample standard error of the empirical MSE depends on
//! the 8th moment of the estimate. The cases are therefore chosen with moderate norms
//! (`|x|, |y|` ≈ 0.35–0.8, and a diagonal A within [0.5, 2]) so that the formula's relative
//! MSE is at most 0.5 at the case's m (`the_cases_are_in_the_moderate_regime` pins it): for
//! positive exponential features that is `|z|² ≲ 1.4`, the range where `tests/statistics.rs`
//! measured the 4-SE interval to miss in well under 1 % of seeds. Measured here by the
//! ignored `coverage_over_many_seeds` (100 fresh seeds × 60 cases, dev profile, ~3 min): the
//! mean check missed 0 of 6,000 times with i.i.d. ω and 0 of 6,000 with orthogonal ω, the MSE
//! check 1 of 6,000 (hcplx, z = −4.1; a Gaussian would give 0.4 expected misses). That one
//! case re-run with 2,000,000 trials agrees with its formula (z = 0.5), as do cplx, rff and
//! oprf (|z| < 2.3, formulas within 0.3 %). So the whole file fails on a fresh seed with a
//! probability of about 1 %; the committed seed passes deterministically.

use std::sync::OnceLock;

use softmax_kernel_lab::numerics::dataset::{Dataset, DatasetParams, generate};
use softmax_kernel_lab::numerics::estimators::{
    Estimator, EstimatorParams, FastSum, Fit, FitInput, Projections, REGISTRY, Side, dot,
    log_softmax_kernel, reference_estimate,
};
use softmax_kernel_lab::numerics::heuristics::AHeuristic;
use softmax_kernel_lab::numerics::rng::{StreamPurpose, stream_rng};

/// Seed of every stream in this file.
const SEED: u64 = 20_250_302;
/// Estimates per case (each with fresh ω). With the relative MSEs of the cases (0.002–0.5),
/// the relative standard error of the mean is at most about 0.4 % and that of the empirical MSE a
/// few per cent, so a factor of 2 in the formula or a 5 % bias is far outside 4 SE.
const TRIALS: usize = 30_000;
/// Half-width of every two-sided interval, in standard errors (a Gaussian would miss 6·10⁻⁵).
const Z: f64 = 4.0;

/// θ and the complex A's magnitudes: a complex A that is neither real (θ = 0) nor RFF.
fn params() -> EstimatorParams {
    EstimatorParams {
        theta: 0.6,
        complex_a: AHeuristic::VarianceAdjusted,
    }
}

/// A dataset, the pairs of it that are estimated, m, and every estimator's fit to it.
struct Setup {
    label: &'static str,
    data: Dataset,
    m: usize,
    pairs: Vec<usize>,
    /// `fits[i]` is `REGISTRY[i]`'s.
    fits: Vec<Fit>,
}

impl Setup {
    /// A dataset of 64 pairs with Laplace(0, 0.3) means, Gamma(1, 1) variances and mean norms
    /// 0.6 on both sides: moderate norms, and means and variances of similar size so that
    /// the mean-only and variance-adjusted A differ. The dataset seed was picked (among 0–11)
    /// for a diagonal A within [0.5, 2] for every heuristic.
    fn new(label: &'static str, d: usize, dataset_seed: u64, m: usize, pairs: &[usize]) -> Self {
        let params = DatasetParams::new(d, 64, 0.3, 1.0, 1.0, 0.6, 0.6).unwrap();
        let data = generate(
            &params,
            &mut stream_rng(dataset_seed, StreamPurpose::Dataset, 0, 0),
        )
        .unwrap();
        let fits = fit_all(&data);
        Self {
            label,
            data,
            m,
            pairs: pairs.to_vec(),
            fits,
        }
    }

    fn pair(&self, i: usize) -> (&[f64], &[f64]) {
        (self.data.query(i), self.data.key(i))
    }
}

/// Every estimator fitted to `data`, in registry order.
fn fit_all(data: &Dataset) -> Vec<Fit> {
    let moments = data.moments();
    REGISTRY
        .iter()
        .map(|e| {
            e.fit(
                FitInput {
                    data,
                    moments: &moments,
                },
                &params(),
            )
            .unwrap_or_else(|err| panic!("{}: {err}", e.id()))
        })
        .collect()
}

/// The two setups: m a multiple of d, so that orthogonal ω come in whole blocks.
fn setups() -> &'static [Setup] {
    static SETUPS: OnceLock<Vec<Setup>> = OnceLock::new();
    SETUPS.get_or_init(|| {
        vec![
            Setup::new("d = 4, m = 8", 4, 7, 8, &[0, 1, 2]),
            Setup::new("d = 6, m = 6", 6, 10, 6, &[0, 1]),
        ]
    })
}

/// How ω is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Draw {
    Iid,
    Orthogonal,
    Simplex,
    Rqmc,
}

/// Summary of `trials` estimates of one pair.
#[derive(Clone, Debug)]
struct Stats {
    sm: f64,
    mean: f64,
    /// `sd(estimates)/sqrt(T)`.
    mean_se: f64,
    /// `mean_t (est_t − SM)²`.
    mse: f64,
    /// `sd((est_t − SM)²)/sqrt(T)`.
    mse_se: f64,
    /// Estimates below zero.
    negatives: usize,
}

impl Stats {
    fn unbiased(&self) -> bool {
        (self.mean - self.sm).abs() < Z * self.mean_se
    }

    /// Whether `mse` lies in the interval `empirical ± Z·SE`.
    fn mse_interval_contains(&self, mse: f64) -> bool {
        (self.mse - mse).abs() < Z * self.mse_se
    }
}

/// Sample mean and its standard error (unbiased sample variance).
fn mean_and_se(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
    (mean, (variance / n).sqrt())
}

/// `trials` estimates of `SM(x, y)`; estimate t draws ω from `stream_rng(seed, Trial, t, k)`.
#[allow(clippy::too_many_arguments)]
fn monte_carlo(
    estimator: &dyn Estimator,
    fit: &Fit,
    (x, y): (&[f64], &[f64]),
    m: usize,
    draw: Draw,
    trials: usize,
    seed: u64,
    k: u64,
) -> Stats {
    let mut omega = Projections::zeroed(m, x.len()).unwrap();
    let sm = log_softmax_kernel(x, y).exp();
    let estimates: Vec<f64> = (0..trials)
        .map(|t| {
            let mut rng = stream_rng(seed, StreamPurpose::Trial, t as u64, k);
            match draw {
                Draw::Iid => omega.resample(&mut rng),
                Draw::Orthogonal => omega.resample_orthogonal(&mut rng),
                Draw::Simplex => omega.resample_simplex(&mut rng),
                Draw::Rqmc => omega.resample_rqmc(&mut rng),
            }
            reference_estimate(estimator, fit, x, y, &omega)
                .unwrap()
                .value()
        })
        .collect();
    let squared_errors: Vec<f64> = estimates.iter().map(|e| (e - sm) * (e - sm)).collect();
    let (mean, mean_se) = mean_and_se(&estimates);
    let (mse, mse_se) = mean_and_se(&squared_errors);
    Stats {
        sm,
        mean,
        mean_se,
        mse,
        mse_se,
        negatives: estimates.iter().filter(|e| **e < 0.0).count(),
    }
}

/// One estimator on one pair of one setup, with i.i.d. and with orthogonal ω.
struct Case {
    estimator: usize,
    setup: usize,
    pair: usize,
    iid: Stats,
    orthogonal: Stats,
}

impl Case {
    fn estimator(&self) -> &'static dyn Estimator {
        REGISTRY[self.estimator]
    }

    fn label(&self) -> String {
        let setup = &setups()[self.setup];
        format!(
            "{} on pair {} ({})",
            self.estimator().id(),
            self.pair,
            setup.label
        )
    }

    /// The estimator's MSE formula for this case, if it has one.
    fn log_mse(&self) -> Option<f64> {
        let setup = &setups()[self.setup];
        let (x, y) = setup.pair(self.pair);
        self.estimator()
            .log_mse(&setup.fits[self.estimator], x, y, setup.m)
    }
}

/// The stream index of one (draw, setup, pair, estimator).
fn stream(draw: Draw, setup: usize, pair: usize, estimator: usize) -> u64 {
    let draw = match draw {
        Draw::Iid => 0,
        Draw::Orthogonal => 1,
        Draw::Simplex => 2,
        Draw::Rqmc => 3,
    };
    (((draw * 4 + setup as u64) * 64 + pair as u64) * 256) + estimator as u64
}

/// Runs `jobs` on every core (each job is independent; results come back in order).
fn parallel_map<T: Sync, R: Send>(jobs: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = jobs.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .chunks(chunk)
            .map(|part| scope.spawn(|| part.iter().map(&work).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a worker thread panicked"))
            .collect()
    })
}

/// The cases of every estimator on every pair of every setup, with the stated seed.
fn cases_with_seed(seed: u64, trials: usize) -> Vec<Case> {
    let mut jobs = Vec::new();
    for (s, setup) in setups().iter().enumerate() {
        for &pair in &setup.pairs {
            for e in 0..REGISTRY.len() {
                jobs.push((e, s, pair));
            }
        }
    }
    parallel_map(&jobs, |&(e, s, pair)| {
        let setup = &setups()[s];
        let run = |draw| {
            monte_carlo(
                REGISTRY[e],
                &setup.fits[e],
                setup.pair(pair),
                setup.m,
                draw,
                trials,
                seed,
                stream(draw, s, pair, e),
            )
        };
        Case {
            estimator: e,
            setup: s,
            pair,
            iid: run(Draw::Iid),
            orthogonal: run(Draw::Orthogonal),
        }
    })
}

/// The committed seed's cases, computed once for all tests.
fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| cases_with_seed(SEED, TRIALS))
}

// ---------------------------------------------------------------------------------------------
// The design of the cases
// ---------------------------------------------------------------------------------------------

#[test]
fn the_cases_are_in_the_moderate_regime() {
    // Deterministic guard on the design (module documentation): moderate norms, a diagonal A
    // near I, a relative MSE of at most 0.5 at the case's m, whole orthogonal blocks, and a
    // formula for every estimator (a new estimator without one gets no MSE check: say so).
    for setup in setups() {
        let d = setup.data.d;
        assert_eq!(setup.m % d, 0, "{}: whole blocks", setup.label);
        assert!((4..=8).contains(&setup.m) && (4..=6).contains(&d));
        for (estimator, fit) in REGISTRY.iter().zip(&setup.fits) {
            let label = format!("{} ({})", estimator.id(), setup.label);
            assert_eq!(fit.a.len(), d, "{label}");
            assert_eq!(fit.clamped, 0, "{label}");
            assert!(
                fit.a.iter().all(|a| (0.5..=2.0).contains(a)),
                "{label}: a = {:?}",
                fit.a
            );
            for &i in &setup.pairs {
                let (x, y) = setup.pair(i);
                for v in [x, y] {
                    let norm = dot(v, v).sqrt();
                    assert!((0.35..=0.8).contains(&norm), "{label}, pair {i}: {norm}");
                }
                let log_mse = estimator
                    .log_mse(fit, x, y, setup.m)
                    .unwrap_or_else(|| panic!("{label}: no MSE formula"));
                let relative = (log_mse - 2.0 * log_softmax_kernel(x, y)).exp();
                assert!(
                    relative <= 0.5,
                    "{label}, pair {i}: relative MSE {relative}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Unbiasedness and the MSE formulas
// ---------------------------------------------------------------------------------------------

#[test]
fn every_estimator_is_unbiased() {
    for case in cases() {
        let r = &case.iid;
        assert!(
            r.unbiased(),
            "{}: mean {} vs SM {}, more than {Z} SE ({}) apart",
            case.label(),
            r.mean,
            r.sm,
            r.mean_se
        );
        let setup = &setups()[case.setup];
        if !case
            .estimator()
            .fast_sum(&setup.fits[case.estimator])
            .is_signed()
        {
            assert_eq!(r.negatives, 0, "{}: a positive estimator", case.label());
        }
    }
}

#[test]
fn every_estimator_matches_its_mse_formula() {
    for case in cases() {
        let Some(log_mse) = case.log_mse() else {
            continue;
        };
        let r = &case.iid;
        let formula = log_mse.exp();
        assert!(
            r.mse_interval_contains(formula),
            "{}: empirical MSE {} vs formula {}, more than {Z} SE ({}) apart (z = {:.2})",
            case.label(),
            r.mse,
            formula,
            r.mse_se,
            (r.mse - formula) / r.mse_se
        );
    }
}

#[test]
fn the_checks_reject_a_wrong_formula_and_a_biased_mean() {
    // Power: the same intervals must reject a formula off by a factor of 2 (either way) and a
    // mean off by 5 %, for every estimator on at least one case. The relative SE of the
    // empirical MSE is a few per cent and that of the mean below 0.4 % (TRIALS), so 4 SE is
    // far inside both gaps; a check that accepted them would be vacuous.
    for (e, estimator) in REGISTRY.iter().enumerate() {
        let own: Vec<&Case> = cases().iter().filter(|c| c.estimator == e).collect();
        let wrong_formula_rejected = own.iter().any(|c| {
            c.log_mse().is_some_and(|log_mse| {
                let r = &c.iid;
                !r.mse_interval_contains((log_mse + 2f64.ln()).exp())
                    && !r.mse_interval_contains((log_mse - 2f64.ln()).exp())
            })
        });
        assert!(
            wrong_formula_rejected,
            "{}: ln 2 off the formula is never rejected",
            estimator.id()
        );
        let bias_rejected = own.iter().any(|c| {
            let r = &c.iid;
            (r.mean - 1.05 * r.sm).abs() >= Z * r.mean_se
                && (r.mean - r.sm / 1.05).abs() >= Z * r.mean_se
        });
        assert!(
            bias_rejected,
            "{}: a 5 % bias is never rejected",
            estimator.id()
        );
    }
}

#[test]
fn estimators_that_read_the_page_parameters_match_their_formulas_across_them() {
    // An estimator whose fit reads θ or the complex A's magnitudes (a non-empty
    // `parameter_key`) is checked, like above, at the ends and inside the range: θ = 0 (a real
    // A), π/2 with a = 1 (random Fourier features), and angles between with each heuristic.
    let sweep = [
        (0.0, AHeuristic::Identity),
        (0.0, AHeuristic::MeanOnly),
        (std::f64::consts::FRAC_PI_4, AHeuristic::MeanOnly),
        (1.2, AHeuristic::VarianceAdjusted),
        (std::f64::consts::FRAC_PI_2, AHeuristic::Identity),
    ];
    let setup = &setups()[0];
    let moments = setup.data.moments();
    let mut jobs = Vec::new();
    for (e, estimator) in REGISTRY.iter().enumerate() {
        for (p, &(theta, complex_a)) in sweep.iter().enumerate() {
            let params = EstimatorParams { theta, complex_a };
            if estimator.parameter_key(&params).is_empty() {
                continue;
            }
            let fit = estimator
                .fit(
                    FitInput {
                        data: &setup.data,
                        moments: &moments,
                    },
                    &params,
                )
                .unwrap();
            for &pair in &setup.pairs {
                jobs.push((e, p, fit.clone(), pair));
            }
        }
    }
    assert!(!jobs.is_empty(), "no estimator reads the page parameters");
    let results = parallel_map(&jobs, |(e, p, fit, pair)| {
        let stats = monte_carlo(
            REGISTRY[*e],
            fit,
            setup.pair(*pair),
            setup.m,
            Draw::Iid,
            TRIALS,
            SEED,
            40_000 + (*e as u64 * 16 + *p as u64) * 16 + *pair as u64,
        );
        let (x, y) = setup.pair(*pair);
        (stats, REGISTRY[*e].log_mse(fit, x, y, setup.m))
    });
    for ((e, p, _, pair), (r, log_mse)) in jobs.iter().zip(&results) {
        let label = format!(
            "{} with (θ, a) = {:?} on pair {pair}",
            REGISTRY[*e].id(),
            sweep[*p]
        );
        assert!(
            r.unbiased(),
            "{label}: mean {} vs SM {}, SE {}",
            r.mean,
            r.sm,
            r.mean_se
        );
        if let Some(log_mse) = log_mse {
            assert!(
                r.mse_interval_contains(log_mse.exp()),
                "{label}: empirical MSE {} vs formula {}, SE {}",
                r.mse,
                log_mse.exp(),
                r.mse_se
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Feature maps
// ---------------------------------------------------------------------------------------------

#[test]
fn features_factorise_the_estimate() {
    // φ(x) depends on x alone and ψ(y) on y alone, so every (x_i, y_j) of a dataset, not only
    // the estimated pairs, must give φ(x_i)·ψ(y_j) = ŜM(x_i, y_j) with the same ω. Tolerance:
    // 1e-10 of Σ_k |φ_k ψ_k|, the scale of the rounding of both sums (features and the
    // reference's log-domain sum differ by a few ulps per term, ~1e-15 each); for positive
    // features that scale is the estimate itself, so the check is 1e-10 relative.
    for (s, setup) in setups().iter().enumerate() {
        let (d, m) = (setup.data.d, setup.m);
        for (draw, draw_index) in [(Draw::Iid, 0u64), (Draw::Orthogonal, 1)] {
            for t in 0..3u64 {
                let mut rng = stream_rng(SEED, StreamPurpose::Trial, t, 10_000 + draw_index);
                let omega = match draw {
                    Draw::Iid => Projections::sample(m, d, &mut rng),
                    Draw::Orthogonal => Projections::sample_orthogonal(m, d, &mut rng),
                    Draw::Simplex | Draw::Rqmc => unreachable!("only i.i.d. and orthogonal here"),
                }
                .unwrap();
                for (estimator, fit) in REGISTRY.iter().zip(&setups()[s].fits) {
                    let positive = !estimator.fast_sum(fit).is_signed();
                    for i in 0..4 {
                        let x = setup.data.query(i);
                        let phi = estimator.features(fit, x, Side::Query, &omega);
                        for j in 0..4 {
                            let y = setup.data.key(j);
                            let psi = estimator.features(fit, y, Side::Key, &omega);
                            let label = format!(
                                "{} ({}, {draw:?}, x_{i}, y_{j})",
                                estimator.id(),
                                setup.label
                            );
                            assert_eq!(phi.len(), psi.len(), "{label}");
                            assert!(phi.len() >= m, "{label}: {} features", phi.len());
                            if positive {
                                assert!(
                                    phi.iter().chain(&psi).all(|f| *f >= 0.0),
                                    "{label}: a negative positive feature"
                                );
                            }
                            let product = dot(&phi, &psi);
                            let scale: f64 = phi.iter().zip(&psi).map(|(p, q)| (p * q).abs()).sum();
                            let reference = reference_estimate(*estimator, fit, x, y, &omega)
                                .unwrap()
                                .value();
                            assert!(
                                (product - reference).abs() <= 1e-10 * scale,
                                "{label}: φ·ψ = {product}, reference {reference} (scale {scale})"
                            );
                        }
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Orthogonal random features
// ---------------------------------------------------------------------------------------------

#[test]
fn orthogonal_features_keep_every_estimator_unbiased() {
    for case in cases() {
        let r = &case.orthogonal;
        assert!(
            r.unbiased(),
            "{} with orthogonal ω: mean {} vs SM {}, more than {Z} SE ({}) apart",
            case.label(),
            r.mean,
            r.sm,
            r.mean_se
        );
    }
}

/// Trials per case of [`every_coupling_keeps_every_estimator_unbiased`].
const COUPLING_TRIALS: usize = 12_000;

#[test]
fn every_coupling_keeps_every_estimator_unbiased() {
    // Simplex blocks and randomised QMC (the URL's `coupling`) keep each ω_k marginally
    // N(0, I), so every estimator stays unbiased: the mean of COUPLING_TRIALS estimates is
    // within Z standard errors of SM, on the first two pairs of each setup (whole blocks:
    // m is a multiple of d). The 5 % bias the i.i.d. check rejects is, at these trials and
    // the cases' relative MSE ≤ 0.5, at least 5 / (100·√(0.5/12000)) ≈ 7.7 SE away.
    for (s, setup) in setups().iter().enumerate() {
        for &pair in setup.pairs.iter().take(2) {
            for (e, estimator) in REGISTRY.iter().enumerate() {
                for draw in [Draw::Simplex, Draw::Rqmc] {
                    let r = monte_carlo(
                        *estimator,
                        &setup.fits[e],
                        setup.pair(pair),
                        setup.m,
                        draw,
                        COUPLING_TRIALS,
                        SEED,
                        stream(draw, s, pair, e),
                    );
                    assert!(
                        r.unbiased(),
                        "{} on pair {pair} ({}) with {draw:?} ω: mean {} vs SM {}, more than {Z} SE ({}) apart",
                        estimator.id(),
                        setup.label,
                        r.mean,
                        r.sm,
                        r.mean_se
                    );
                }
            }
        }
    }
}

/// `MSE/SM²` of an estimator whose sum is `Exp` or `Cosh` of one projection `t_k = ω_k·z`,
/// `|z|² = s`, with m orthogonal rows in blocks of d; `None` for other sums.
///
/// Unbiasedness fixes the prefactor, so `ŜM/SM = (1/m) Σ_k W_k` with `W = e^{t − s/2}` (Exp)
/// or `e^{−s/2} cosh t` (Cosh). One row alone is `N(0, I_d)`, so `Var W` is the i.i.d.
/// per-feature variance: `e^s − 1` (Exp), `e^{−s}(e^{2s} + 1)/2 − 1` (Cosh). Rows of
/// different blocks are independent; two rows of one block are `ω_k = r_k q_k` with
/// independent `r_k ~ chi(d)` and `(q_k·ẑ, q_l·ẑ) = (c_1, c_2)` the first two coordinates of
/// a uniform point of the sphere `S^{d−1}`. Both sums have the same covariance (the odd
/// parts of `e^t` vanish under `c_i → −c_i`): `Cov(W_k, W_l) = e^{−s} E[cosh(a r_k c_1)
/// cosh(a r_l c_2)] − 1`, `a = √s`, and with `E r^{2j} = P(j) = d(d+2)…(d+2j−2)`,
/// `E[c_1^{2j} c_2^{2k}] = (2j−1)!!(2k−1)!!/P(j+k)`:
/// `E[cosh cosh] = Σ_{j,k} (s/2)^{j+k}/(j! k!) · P(j)P(k)/P(j+k)` (the i.i.d. rows would have
/// `P(j)P(k)/P(j+k)` replaced by 1, giving `e^s` and covariance 0).
fn orthogonal_relative_mse(sum: FastSum, s: f64, d: usize, m: usize) -> Option<f64> {
    let variance = match sum {
        FastSum::Exp => s.exp_m1(),
        FastSum::Cosh => (-s).exp() * ((2.0 * s).exp() + 1.0) / 2.0 - 1.0,
        _ => return None,
    };
    let rising = |n: usize| -> f64 { (0..n).map(|i| (d + 2 * i) as f64).product() };
    let factorial = |n: usize| -> f64 { (1..=n).map(|i| i as f64).product() };
    let mut series = 0.0;
    for j in 0..60 {
        for k in 0..60 {
            series += (s / 2.0).powi((j + k) as i32) / (factorial(j) * factorial(k))
                * rising(j)
                * rising(k)
                / rising(j + k);
        }
    }
    let covariance = (-s).exp() * series - 1.0;
    // Ordered pairs of distinct rows that share a block.
    let same_block: usize = (0..m)
        .step_by(d)
        .map(|start| {
            let rows = d.min(m - start);
            rows * (rows - 1)
        })
        .sum();
    let mf = m as f64;
    Some(variance / mf + same_block as f64 * covariance / (mf * mf))
}

/// `|z|²` of the single vector an estimator projects for the pair.
fn squared_z(estimator: &dyn Estimator, fit: &Fit, x: &[f64], y: &[f64]) -> f64 {
    let mut z = vec![0.0; x.len() * estimator.projections_per_pair()];
    estimator.collapse(fit, x, y, &mut z);
    dot(&z, &z)
}

#[test]
fn orthogonal_mse_matches_the_exact_block_formula() {
    // For the `Exp` and `Cosh` sums the orthogonal arm of every case has an exact MSE
    // (`orthogonal_relative_mse`): the empirical MSE is within 4 SE of it. This checks that
    // `resample_orthogonal` draws what REFERENCE.md says (orthogonal rows with independent
    // chi(d) lengths), not only that it stays unbiased.
    let mut checked = 0;
    for case in cases() {
        let setup = &setups()[case.setup];
        let (estimator, fit) = (case.estimator(), &setup.fits[case.estimator]);
        let (x, y) = setup.pair(case.pair);
        if estimator.projections_per_pair() != 1 {
            continue;
        }
        let s = squared_z(estimator, fit, x, y);
        let Some(relative) =
            orthogonal_relative_mse(estimator.fast_sum(fit), s, setup.data.d, setup.m)
        else {
            continue;
        };
        checked += 1;
        let r = &case.orthogonal;
        let exact = relative * r.sm * r.sm;
        assert!(
            r.mse_interval_contains(exact),
            "{} with orthogonal ω: empirical MSE {} vs exact {exact}, more than {Z} SE ({}) apart",
            case.label(),
            r.mse,
            r.mse_se
        );
    }
    assert!(checked >= 10, "{checked}");
}

#[test]
fn the_orthogonal_mse_formula_reduces_to_known_cases() {
    // One row (m = 1) and d = 1 (every block one row) have no pairs in a block: the i.i.d.
    // Lemma 3.1 values. At s = 1, d = m = 8 the positive form gains about 17 % and the
    // hyperbolic form more than half (the series, cross-checked by the Monte Carlo above).
    for (sum, iid) in [
        (FastSum::Exp, 1f64.exp_m1()),
        (
            FastSum::Cosh,
            (1f64.exp() - 1.0).powi(2) / (2.0 * 1f64.exp()),
        ),
    ] {
        let one_row = orthogonal_relative_mse(sum, 1.0, 8, 1).unwrap();
        assert!((one_row / iid - 1.0).abs() < 1e-12, "{sum:?}");
        let d_one = orthogonal_relative_mse(sum, 1.0, 1, 8).unwrap();
        assert!((d_one / (iid / 8.0) - 1.0).abs() < 1e-12, "{sum:?}");
    }
    let ratio = |sum| orthogonal_relative_mse(sum, 1.0, 8, 8).unwrap();
    assert!((ratio(FastSum::Exp) / (1f64.exp_m1() / 8.0) - 0.828).abs() < 0.001);
    // The hyperbolic form gains 1 − 0.457 = 54 %, pinned like the positive form's 17 %.
    let cosh = ratio(FastSum::Cosh) / ((1f64.exp() - 1.0).powi(2) / (16.0 * 1f64.exp()));
    assert!((cosh - 0.457).abs() < 0.001, "{cosh}");
}

/// Trials of each arm of the ORF comparison.
const ORF_TRIALS: usize = 40_000;

#[test]
fn orthogonal_features_lower_the_mse_of_the_exponential_estimators() {
    // d = m = 8 (one whole block), fits to a d = 8 dataset, and for each estimator a pair with
    // z = u + v, |z|² = 1: x = A⁻¹u and y = A v for its diagonal A, so that every estimator
    // with an exponential sum sees the same z (checked through `collapse`). |z|² = 1 and not 2:
    // the positive form's gain is largest near |z|² = 1–1.5 (17 % by the exact series, 15.5 %
    // at 2) while its MSE's standard error is far more reliable there (statistics.rs); the
    // hyperbolic form gains 54 % at 1 (36 % at 2).
    // The i.i.d. and orthogonal arms use independent streams, so the difference of the
    // empirical MSEs has standard error sqrt(se_iid² + se_orf²); the one-sided test asks for a
    // difference of more than 2 of those (a false pass has probability 2 % per estimator if
    // ORF did not help; expected z-scores are about 6 for the positive form and far more for
    // the others, see the printed table).
    let d = 8;
    let m = 8;
    let data = generate(
        &DatasetParams::new(d, 64, 0.3, 1.0, 1.0, 0.6, 0.6).unwrap(),
        &mut stream_rng(2, StreamPurpose::Dataset, 0, 0),
    )
    .unwrap();
    let fits = fit_all(&data);
    let u = [0.282, -0.162, 0.244, 0.081, -0.205, 0.162, 0.12, -0.081];
    let v = [0.244, -0.244, 0.162, 0.205, -0.12, 0.081, 0.244, -0.042];
    let z: Vec<f64> = u.iter().zip(&v).map(|(p, q)| p + q).collect();
    let s = dot(&z, &z);
    assert!((s - 1.0).abs() < 0.01, "|z|² = {s}");
    let exponential: Vec<usize> = (0..REGISTRY.len())
        .filter(|&e| {
            REGISTRY[e].projections_per_pair() == 1
                && matches!(
                    REGISTRY[e].fast_sum(&fits[e]),
                    FastSum::Exp
                        | FastSum::Cosh
                        | FastSum::ScaledExp { .. }
                        | FastSum::ScaledCosh { .. }
                )
        })
        .collect();
    assert!(exponential.len() >= 4, "{exponential:?}");
    let results = parallel_map(&exponential, |&e| {
        let (estimator, fit) = (REGISTRY[e], &fits[e]);
        // A dense P (the DERF members): x = P⁻¹u, y = Pᵀv.
        let (x, y): (Vec<f64>, Vec<f64>) = match &fit.dense {
            Some(dense) => dense.pre_image(&u, &v),
            None => (
                u.iter().zip(&fit.a).map(|(u, a)| u / a).collect(),
                v.iter().zip(&fit.a).map(|(v, a)| v * a).collect(),
            ),
        };
        let mut collapsed = vec![0.0; d];
        estimator.collapse(fit, &x, &y, &mut collapsed);
        for (c, z) in collapsed.iter().zip(&z) {
            assert!(
                (c - z).abs() < 1e-12,
                "{}: z = {collapsed:?}",
                estimator.id()
            );
        }
        let run = |draw, k| monte_carlo(estimator, fit, (&x, &y), m, draw, ORF_TRIALS, SEED, k);
        let iid = run(Draw::Iid, 20_000 + e as u64);
        let orthogonal = run(Draw::Orthogonal, 30_000 + e as u64);
        let formula = estimator.log_mse(fit, &x, &y, m).map(f64::exp);
        let exact_orthogonal = orthogonal_relative_mse(estimator.fast_sum(fit), s, d, m)
            .map(|relative| relative * iid.sm * iid.sm);
        (e, iid, orthogonal, formula, exact_orthogonal)
    });
    println!(
        "|z|² = {s:.4}, d = m = {m}, {ORF_TRIALS} trials per arm\n\
         estimator   i.i.d. formula  MSE i.i.d. (SE)     ORF exact  MSE ORF (SE)        ratio  z"
    );
    for (e, iid, orthogonal, formula, exact) in &results {
        let combined = (iid.mse_se.powi(2) + orthogonal.mse_se.powi(2)).sqrt();
        println!(
            "{:<10}  {:<14.5}  {:.5} ({:.5})  {:<9.5}  {:.5} ({:.5})  {:.3}  {:.1}",
            REGISTRY[*e].id(),
            formula.unwrap_or(f64::NAN),
            iid.mse,
            iid.mse_se,
            exact.unwrap_or(f64::NAN),
            orthogonal.mse,
            orthogonal.mse_se,
            orthogonal.mse / iid.mse,
            (iid.mse - orthogonal.mse) / combined
        );
    }
    for (e, iid, orthogonal, _, exact) in &results {
        let id = REGISTRY[*e].id();
        let combined = (iid.mse_se.powi(2) + orthogonal.mse_se.powi(2)).sqrt();
        assert!(
            iid.mse - orthogonal.mse > 2.0 * combined,
            "{id}: MSE i.i.d. {} vs orthogonal {}, combined SE {combined}",
            iid.mse,
            orthogonal.mse
        );
        assert!(orthogonal.unbiased(), "{id}: {orthogonal:?}");
        if let Some(exact) = exact {
            assert!(
                orthogonal.mse_interval_contains(*exact),
                "{id}: orthogonal MSE {} vs exact {exact} ± {Z}·{}",
                orthogonal.mse,
                orthogonal.mse_se
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Pinned values
// ---------------------------------------------------------------------------------------------

/// `(id, ln|ŜM|, negative)` of every estimator whose fit has no optimiser report (all but
/// `hcexp-opt`, `derf-fit`, `hderf-fit`) on pair 0 of the d = 4 setup,
/// with ω = `Projections::sample(8, 4, stream_rng(SEED, Trial, 0, PIN_STREAM))`.
const PINNED: &[(&str, f64, bool)] = &[
    ("prf-pos", 0.947170832415448, false),
    ("prf-hyp", 0.46118689786642175, false),
    ("cexp-mean", 1.2909044812725083, false),
    ("cexp-var", 0.9323082857682277, false),
    ("hcexp-mean", 0.7274297679206376, false),
    ("hcexp-var", 0.4515524371831465, false),
    ("rff", 0.005574820224696575, false),
    ("cplx", 0.8004223840636029, false),
    ("hcplx", 0.363770948286005, false),
    ("oprf", 0.5816159729042112, false),
    ("oprf-var", 0.5771216526009881, false),
    ("derf-dense", 0.6473124160692882, false),
    ("hderf-dense", 0.3124128910763062, false),
];

/// The ω stream of the pins.
const PIN_STREAM: u64 = 99_999;

#[test]
fn reference_values_are_pinned() {
    // A change of the dataset generator, the fits, the ω stream (rand, rand_distr) or the
    // arithmetic of an estimator moves these numbers: the failure says which. 1e-12 in ln|ŜM|
    // is a few hundred ulps of values of order 1, room for a different libm, not for a change.
    let setup = &setups()[0];
    let (x, y) = setup.pair(setup.pairs[0]);
    let omega = Projections::sample(
        setup.m,
        setup.data.d,
        &mut stream_rng(SEED, StreamPurpose::Trial, 0, PIN_STREAM),
    )
    .unwrap();
    let mut actual = Vec::new();
    for (estimator, fit) in REGISTRY.iter().zip(&setup.fits) {
        // Fits that come from an optimiser (hcexp-opt, derf-fit, hderf-fit) are not pinned.
        if fit.optimiser.is_some() {
            continue;
        }
        let estimate = reference_estimate(*estimator, fit, x, y, &omega).unwrap();
        actual.push((estimator.id(), estimate.ln_abs, estimate.negative));
    }
    let printed: Vec<String> = actual
        .iter()
        .map(|(id, ln_abs, negative)| format!("    (\"{id}\", {ln_abs:?}, {negative}),"))
        .collect();
    println!(
        "const PINNED: &[(&str, f64, bool)] = &[\n{}\n];",
        printed.join("\n")
    );
    assert_eq!(
        actual.iter().map(|a| a.0).collect::<Vec<_>>(),
        PINNED.iter().map(|p| p.0).collect::<Vec<_>>(),
        "every estimator without an optimiser is pinned, in registry order"
    );
    for ((id, ln_abs, negative), (_, pinned_ln_abs, pinned_negative)) in actual.iter().zip(PINNED) {
        assert_eq!(negative, pinned_negative, "{id}: sign");
        assert!(
            (ln_abs - pinned_ln_abs).abs() <= 1e-12,
            "{id}: ln|ŜM| = {ln_abs:?}, pinned {pinned_ln_abs:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Coverage of the intervals
// ---------------------------------------------------------------------------------------------

#[test]
#[ignore = "coverage measurement, about 3 min: cargo test --test estimators -- --ignored"]
fn coverage_over_many_seeds() {
    // How often the committed checks would fail with another seed. With nominal 4-SE
    // intervals a Gaussian would miss 6·10⁻⁵ per check; heavy tails miss more. Measured
    // (module documentation): 0 misses of the means, 1 of the MSEs in 100 seeds × 60 cases.
    let seeds = 100u64;
    let mut mean_misses = vec![0usize; REGISTRY.len()];
    let mut mse_misses = vec![0usize; REGISTRY.len()];
    let mut orthogonal_misses = vec![0usize; REGISTRY.len()];
    let mut checks = vec![0usize; REGISTRY.len()];
    for seed in 0..seeds {
        for case in cases_with_seed(1_000 + seed, TRIALS) {
            let e = case.estimator;
            checks[e] += 1;
            mean_misses[e] += usize::from(!case.iid.unbiased());
            orthogonal_misses[e] += usize::from(!case.orthogonal.unbiased());
            if let Some(log_mse) = case.log_mse()
                && !case.iid.mse_interval_contains(log_mse.exp())
            {
                mse_misses[e] += 1;
                println!(
                    "seed {seed}: {} MSE z = {:.2}",
                    case.label(),
                    (case.iid.mse - log_mse.exp()) / case.iid.mse_se
                );
            }
        }
    }
    for (e, estimator) in REGISTRY.iter().enumerate() {
        println!(
            "{:<10} of {} case-seeds: mean {} misses, MSE {}, orthogonal mean {}",
            estimator.id(),
            checks[e],
            mean_misses[e],
            mse_misses[e],
            orthogonal_misses[e]
        );
    }
}
