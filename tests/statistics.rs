//! Statistical tests of the estimators and of the seed paper's section 3 (native, seeded,
//! able to fail):
//!
//! - **Lemma 3.1** for PRF `+`, PRF `hyp+`, CEXP and HCEXP (the registry entries `prf-pos`,
//!   `prf-hyp`, `cexp-var` and `hcexp-var`, evaluated by [`reference_estimate`], CEXP/HCEXP
//!   with a hand-chosen diagonal as their [`Fit`]): on pairs with small and larger norms, the
//!   mean of 100,000 independent estimates (fresh ω per draw) is within 4 standard errors of
//!   SM, and their empirical MSE is within a 4-standard-error confidence interval of the
//!   entry's `log_mse`, which equals the free [`log_theoretical_mse`] to 1e-12. A companion test shows that the same interval rejects Lemma 3.1's
//!   value scaled by 1.2 (and by 1/1.2), so the check has power.
//! - **Lemma 3.2, corrected** (REFERENCE.md, "Bounds"): on randomly sampled regions the bound
//!   `W(r)/sqrt(2m)` is never below Lemma 3.1's relative RMSE, it is attained when
//!   `Ax = A^-T y` with `|Ax| = r`, and the printed `1 − exp(+4r²)` would fail everywhere.
//! - **Lemma 3.4**: the variance-adjusted diagonal minimises
//!   `J(a) = Σ a_i² E[x_i²] + a_i^-2 E[y_i²]` against random perturbations and is a stationary
//!   point of J in `log a`.
//!
//! # Why the MSE confidence interval is trustworthy for these cases
//!
//! Write `s = |z|² = |Ax + A^-T y|²`. The estimate divided by SM is the mean of m i.i.d. terms,
//! `u = exp(ω·z − s/2)` (positive form, log-normal with `E[u^k] = e^{k(k−1)s/2}`) or
//! `v = e^{−s/2} cosh(ω·z)` (hyperbolic form). The empirical MSE is the mean of the squared
//! errors `e_t = (est_t − SM)²`, so its standard error involves `E[est⁴]`, and the *sample*
//! estimate of that standard error involves `E[est⁸]`, which grows like `e^{28s}`. When s is
//! large, the draws that dominate `E[e_t²]` are rarer than 1 in N·m: the sample misses them,
//! the empirical MSE then sits a little *below* Lemma 3.1 and the estimated standard error is
//! too small, so a nominal 4-SE interval fails far more often than a Gaussian 6·10⁻⁵.
//!
//! Measured miss rates ("miss" = Lemma 3.1 outside the interval used below; a Gaussian would
//! give 6·10⁻⁵), release build, 1,000–3,000 seeds per cell, `+` / `hyp+`:
//!
//! | m | s | N = 20,000 | N = 100,000 |
//! |---|---|---|---|
//! | 8 | 0.57 | 0.1 % / 0 % | 0 % / 0 % |
//! | 4 | 0.65 | 0.1 % / 0 % | 0 % / 0 % |
//! | 16 | 1.5 | 0.3 % / 0.2 % | |
//! | 32 | 1.5 | 0 % / 0.1 % | 0 % / 0 % (s = 1.55) |
//! | 32 | 2.0 | 0.4 % / 0.5 % | 0.1 % / 0.1 % |
//! | 32 | 2.5 | 1.7 % / 1.3 % | 0.8 % / – |
//! | 4 | 3.0 | 10 % / 8 % (400 seeds) | |
//!
//! Misses are almost all on the low side (z-scores down to −10 at m = 4, s = 3: the
//! missing-tail bias described above). A larger m helps most, since it thins the tail of the
//! mean; a larger N helps slowly, because the tail is log-normal and the reach of a sample grows
//! only like `sqrt(log N)`. Hence the choices: N = 100,000 draws per case (5× the minimum of
//! 20,000; the whole file still runs in about 2 s in the dev profile); small norms
//! (`|x|, |y| ≈ 0.4–0.5`, `s ≤ 0.7`, m = 8 and 4) where the 8th moment is tame; and larger
//! norms with `s ≈ 1.5–1.6` and `s ≈ 2` at m = 32, where Lemma 3.1's relative RMSE is 0.2–0.3
//! (hyperbolic) and 0.34–0.46 (positive), large, yet the interval misses in about 0.1 % of seeds.
//! `s ≈ 2.5–3` would put the interval in the regime where it is no longer trustworthy. Over the
//! whole suite (16 cases) a fresh seed fails with a probability of roughly 1 % (1 of 80 seeds
//! tried, on an s ≈ 2 case with z ≈ −4.1; the ignored test below saw 1 miss in 16 × 200
//! case-seeds); the committed seed passes deterministically.
//! `cases_lie_in_the_regime_where_the_interval_is_reliable` pins these s ranges and checks,
//! from the exact log-normal moments, that the true relative standard error of each empirical
//! MSE is at most 10 %. The ignored test `coverage_of_the_mse_interval_over_many_seeds`
//! reproduces the measurement (`cargo test --release --test statistics -- --ignored`).
//!
//! The interval's half-width is 4 × the larger of two standard-error estimates of the mean of
//! `e_t`: the i.i.d. one, `sd(e_t)/sqrt(N)`, and a batch-means one (40 batches of N/40 draws,
//! `sd(batch means)/sqrt(40)`). The draws are independent, so both estimate the same quantity;
//! the batch-means estimate is a second, differently-weighted look at the heavy tail (one large
//! `e_t` inflates one batch mean, which the 40-point sd reacts to differently from the
//! N-point sd), and taking the larger is the conservative choice.

use std::sync::OnceLock;

use rand::RngExt;
use rand_distr::{Distribution, Normal, StandardNormal};
use softmax_kernel_lab::numerics::dataset::SampleMoments;
use softmax_kernel_lab::numerics::estimators::{
    Estimator as RegistryEstimator, EstimatorId, FeatureForm, Fit, Projections, log_softmax_kernel,
    log_theoretical_mse, reference_estimate,
};
use softmax_kernel_lab::numerics::heuristics::{AHeuristic, diagonal_a};
use softmax_kernel_lab::numerics::rng::{StreamPurpose, stream_rng};
use softmax_kernel_lab::numerics::theory::log_lemma_3_2_bound;

/// Draws per case (each with fresh ω).
const DRAWS: usize = 100_000;
/// Batches for the batch-means standard error.
const BATCHES: usize = 40;
/// Half-width of every confidence interval, in standard errors.
const Z: f64 = 4.0;
// The issue asks for at least 20,000 draws; the batches must split them evenly.
const _: () = assert!(DRAWS >= 20_000 && DRAWS.is_multiple_of(BATCHES));

/// Seed of every stream in this file.
const SEED: u64 = 20_240_601;

// ---------------------------------------------------------------------------------------------
// Lemma 3.1: the estimators against the theory
// ---------------------------------------------------------------------------------------------

/// The four estimators of the issue.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Estimator {
    /// PRF `+`: A = I, positive features.
    PrfPositive,
    /// PRF `hyp+`: A = I, hyperbolic features.
    PrfHyperbolic,
    /// CEXP: positive features with a non-identity diagonal A.
    Cexp,
    /// HCEXP: hyperbolic features with a non-identity diagonal A.
    Hcexp,
}

impl Estimator {
    const ALL: [Estimator; 4] = [
        Estimator::PrfPositive,
        Estimator::PrfHyperbolic,
        Estimator::Cexp,
        Estimator::Hcexp,
    ];

    fn form(self) -> FeatureForm {
        match self {
            Estimator::PrfPositive | Estimator::Cexp => FeatureForm::Positive,
            Estimator::PrfHyperbolic | Estimator::Hcexp => FeatureForm::Hyperbolic,
        }
    }

    /// The registry entry that computes this estimator: PRF `+`/`hyp+` are `A = I`; for CEXP
    /// and HCEXP the real-diagonal entry is used with the case's hand-chosen diagonal as its
    /// [`Fit`] (the heuristic of the variance-adjusted entry is not consulted: only `fit.a`
    /// enters its estimate and its MSE).
    fn registry_entry(self) -> &'static dyn RegistryEstimator {
        let id = match self {
            Estimator::PrfPositive => "prf-pos",
            Estimator::PrfHyperbolic => "prf-hyp",
            Estimator::Cexp => "cexp-var",
            Estimator::Hcexp => "hcexp-var",
        };
        EstimatorId::from_id(id)
            .unwrap_or_else(|| panic!("`{id}` is registered"))
            .get()
    }

    fn uses_identity(self) -> bool {
        matches!(self, Estimator::PrfPositive | Estimator::PrfHyperbolic)
    }

    fn index(self) -> usize {
        Estimator::ALL.iter().position(|e| *e == self).unwrap()
    }
}

/// One (x, y, a, m) case.
#[derive(Clone, Debug)]
struct Case {
    label: &'static str,
    estimator: Estimator,
    /// True for the larger-norm cases (s ≈ 1.5–2.1), false for the small ones (s ≤ 0.8).
    large: bool,
    x: Vec<f64>,
    y: Vec<f64>,
    a: Vec<f64>,
    form: FeatureForm,
    m: usize,
}

impl Case {
    /// `s = |Ax + A^-T y|²`.
    fn s(&self) -> f64 {
        self.x
            .iter()
            .zip(&self.y)
            .zip(&self.a)
            .map(|((x, y), a)| (a * x + y / a).powi(2))
            .sum()
    }

    fn fit(&self) -> Fit {
        Fit::diagonal(self.a.clone(), 0)
    }

    /// The registry entry's MSE formula ([`RegistryEstimator::log_mse`]); the regime test
    /// checks it against the free Lemma 3.1 function and the exact log-normal moments.
    fn theoretical_mse(&self) -> f64 {
        self.estimator
            .registry_entry()
            .log_mse(&self.fit(), &self.x, &self.y, self.m)
            .expect("Lemma 3.1 exists for every real diagonal A")
            .exp()
    }

    /// Lemma 3.1 from the free function of the estimators module.
    fn lemma_3_1(&self) -> f64 {
        log_theoretical_mse(&self.x, &self.y, &self.a, self.form, self.m).exp()
    }

    fn softmax_kernel(&self) -> f64 {
        log_softmax_kernel(&self.x, &self.y).exp()
    }
}

/// `(label, large, x, y, non-identity diagonal a, m)`.
type CaseSpec = (
    &'static str,
    bool,
    &'static [f64],
    &'static [f64],
    &'static [f64],
    usize,
);

/// The cases of one estimator: two with small norms and two with larger norms. The same four
/// (x, y) pairs serve every estimator; CEXP/HCEXP use a non-identity diagonal, chosen so that
/// `s` stays in the same ranges. Values of s (A = I / A = diag(a)): A 0.20 / 0.57,
/// B 0.64 / 0.65, C 1.53 / 1.60, D 2.03 / 2.04.
fn cases(estimator: Estimator) -> Vec<Case> {
    let raw: [CaseSpec; 4] = [
        (
            "small A (d = 3, m = 8)",
            false,
            &[0.3, -0.2, 0.25],
            &[0.1, 0.4, -0.2],
            &[1.5, 0.6, 0.8],
            8,
        ),
        (
            "small B (d = 6, m = 4)",
            false,
            &[0.2, 0.1, -0.3, 0.15, 0.05, -0.1],
            &[0.25, -0.15, -0.2, 0.1, 0.3, 0.05],
            &[0.7, 1.3, 1.1, 0.5, 2.0, 0.9],
            4,
        ),
        (
            "large C (d = 2, m = 32)",
            true,
            &[0.9, -0.3],
            &[0.3, 0.6],
            &[1.1, 1.3],
            32,
        ),
        (
            "large D (d = 5, m = 32)",
            true,
            &[0.7, 0.4, -0.3, 0.2, 0.1],
            &[0.5, 0.25, 0.3, -0.1, 0.3],
            &[0.9, 1.2, 1.4, 0.7, 1.5],
            32,
        ),
    ];
    raw.into_iter()
        .map(|(label, large, x, y, a, m)| Case {
            label,
            estimator,
            large,
            x: x.to_vec(),
            y: y.to_vec(),
            a: if estimator.uses_identity() {
                vec![1.0; a.len()]
            } else {
                a.to_vec()
            },
            form: estimator.form(),
            m,
        })
        .collect()
}

/// Sample mean and unbiased sample standard deviation.
fn mean_and_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

/// What `DRAWS` estimates of one case gave.
#[derive(Clone, Debug)]
struct CaseResult {
    case: Case,
    sm: f64,
    mean: f64,
    /// `sd(est)/sqrt(N)`.
    mean_se: f64,
    /// The empirical MSE, `mean_t (est_t − SM)²`.
    mse: f64,
    /// `sd(e_t)/sqrt(N)`.
    mse_se_iid: f64,
    /// `sd(batch means of e_t)/sqrt(BATCHES)`.
    mse_se_batch: f64,
    /// Lemma 3.1.
    theory: f64,
}

impl CaseResult {
    /// The standard error used for the MSE interval: the larger of the two estimates.
    fn mse_se(&self) -> f64 {
        self.mse_se_iid.max(self.mse_se_batch)
    }

    /// Whether `value` lies in the MSE's confidence interval `mse ± Z·se`.
    fn mse_interval_contains(&self, value: f64) -> bool {
        (self.mse - value).abs() < Z * self.mse_se()
    }
}

/// `draws` estimates of one case, fresh ω per draw from stream `(seed, Trial, stream, 0)`.
fn run_case(case: &Case, seed: u64, stream: u64, draws: usize) -> CaseResult {
    let d = case.x.len();
    let mut rng = stream_rng(seed, StreamPurpose::Trial, stream, 0);
    let mut omega = Projections::zeroed(case.m, d).unwrap();
    let estimator = case.estimator.registry_entry();
    let fit = case.fit();
    let sm = case.softmax_kernel();
    let estimates: Vec<f64> = (0..draws)
        .map(|_| {
            omega.resample(&mut rng);
            let estimate = reference_estimate(estimator, &fit, &case.x, &case.y, &omega).unwrap();
            assert!(!estimate.negative, "{}: a negative estimate", case.label);
            estimate.value()
        })
        .collect();
    let squared_errors: Vec<f64> = estimates.iter().map(|e| (e - sm) * (e - sm)).collect();
    let (mean, sd) = mean_and_sd(&estimates);
    let (mse, sd_e) = mean_and_sd(&squared_errors);
    let batch_means: Vec<f64> = squared_errors
        .chunks_exact(draws / BATCHES)
        .map(|b| b.iter().sum::<f64>() / b.len() as f64)
        .collect();
    let (_, sd_batch) = mean_and_sd(&batch_means);
    let root_n = (draws as f64).sqrt();
    CaseResult {
        case: case.clone(),
        sm,
        mean,
        mean_se: sd / root_n,
        mse,
        mse_se_iid: sd_e / root_n,
        mse_se_batch: sd_batch / (batch_means.len() as f64).sqrt(),
        theory: case.theoretical_mse(),
    }
}

/// The results of one estimator's cases, computed once and shared by the Lemma 3.1 test and
/// the power test.
fn results(estimator: Estimator) -> &'static [CaseResult] {
    static CACHE: [OnceLock<Vec<CaseResult>>; 4] = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    CACHE[estimator.index()].get_or_init(|| {
        cases(estimator)
            .iter()
            .enumerate()
            .map(|(i, case)| run_case(case, SEED, (estimator.index() * 16 + i) as u64, DRAWS))
            .collect()
    })
}

fn check_lemma_3_1(estimator: Estimator) {
    for r in results(estimator) {
        let label = format!("{estimator:?}, {}", r.case.label);
        assert!(
            (r.mean - r.sm).abs() < Z * r.mean_se,
            "{label}: mean {} vs SM {} differs by more than {Z} SE ({})",
            r.mean,
            r.sm,
            r.mean_se
        );
        assert!(
            r.mse_interval_contains(r.theory),
            "{label}: empirical MSE {} vs Lemma 3.1 {}: outside ±{Z}·SE (iid SE {}, batch SE {})",
            r.mse,
            r.theory,
            r.mse_se_iid,
            r.mse_se_batch
        );
    }
}

#[test]
fn prf_positive_matches_lemma_3_1() {
    check_lemma_3_1(Estimator::PrfPositive);
}

#[test]
fn prf_hyperbolic_matches_lemma_3_1() {
    check_lemma_3_1(Estimator::PrfHyperbolic);
}

#[test]
fn cexp_matches_lemma_3_1() {
    check_lemma_3_1(Estimator::Cexp);
}

#[test]
fn hcexp_matches_lemma_3_1() {
    check_lemma_3_1(Estimator::Hcexp);
}

#[test]
fn mse_interval_rejects_a_wrong_formula() {
    // Power: Lemma 3.1 off by 20 % in either direction must fall outside the interval, for at
    // least one case of every estimator (in fact for every small-norm case, where the relative
    // standard error of the empirical MSE is 0.4–1.2 % with N = 100,000, so the half-width is
    // about 5 % at most, well below the 1 − 1/1.2 ≈ 16.7 % gap to the nearer wrong value; in
    // the larger-norm cases a rare huge draw can widen the interval past 20 %, which is why
    // those are not required to reject).
    let mut rejected_somewhere = false;
    for estimator in Estimator::ALL {
        let mut rejected_for_estimator = false;
        for r in results(estimator) {
            let rejects = !r.mse_interval_contains(1.2 * r.theory)
                && !r.mse_interval_contains(r.theory / 1.2);
            if !r.case.large {
                assert!(
                    rejects,
                    "{estimator:?}, {}: interval {} ± {} does not reject 1.2× or 1/1.2× {}",
                    r.case.label,
                    r.mse,
                    Z * r.mse_se(),
                    r.theory
                );
            }
            rejected_for_estimator |= rejects;
        }
        assert!(rejected_for_estimator, "{estimator:?}: no case has power");
        rejected_somewhere |= rejected_for_estimator;
    }
    assert!(rejected_somewhere);
}

/// Raw moments `E[t^k]`, k = 0..=4, of one term t of the estimate divided by SM:
/// positive `u = exp(g·sqrt(s) − s/2)` has `E[u^k] = e^{k(k−1)s/2}`; hyperbolic
/// `v = e^{−s/2} cosh(g·sqrt(s))` has `E[v^k] = e^{−ks/2} 2^{−k} Σ_j C(k, j) e^{(k−2j)² s/2}`.
fn single_term_raw_moments(s: f64, form: FeatureForm) -> [f64; 5] {
    let binomial =
        |k: i32, j: i32| -> f64 { (1..=j).map(|i| (k - j + i) as f64 / i as f64).product() };
    let mut raw = [0.0; 5];
    for (k, slot) in raw.iter_mut().enumerate() {
        let k = k as i32;
        let kf = k as f64;
        *slot = match form {
            FeatureForm::Positive => (kf * (kf - 1.0) * s / 2.0).exp(),
            FeatureForm::Hyperbolic => {
                let sum: f64 = (0..=k)
                    .map(|j| binomial(k, j) * (((k - 2 * j) as f64).powi(2) * s / 2.0).exp())
                    .sum();
                (-kf * s / 2.0).exp() * sum / 2f64.powi(k)
            }
        };
    }
    raw
}

/// `(relative MSE, exact relative standard error of the empirical MSE over `draws` draws)`
/// from the log-normal moments: for the mean of m i.i.d. terms with variance σ² and fourth
/// central moment μ₄, `E[(mean − 1)⁴] = (μ₄ + 3(m − 1)σ⁴)/m³`, so
/// `Var(e_t)/MSE² = μ₄/(mσ⁴) + 3(m − 1)/m − 1`.
fn exact_relative_mse_and_se(s: f64, form: FeatureForm, m: usize, draws: usize) -> (f64, f64) {
    let r = single_term_raw_moments(s, form);
    let variance = r[2] - 1.0;
    let mu4 = r[4] - 4.0 * r[3] + 6.0 * r[2] - 3.0;
    let mf = m as f64;
    let ratio = mu4 / (mf * variance * variance) + 3.0 * (mf - 1.0) / mf - 1.0;
    (variance / mf, (ratio / draws as f64).sqrt())
}

#[test]
fn cases_lie_in_the_regime_where_the_interval_is_reliable() {
    // Deterministic guard on the case design (see the module documentation): s ranges, m and d
    // limits, and a true relative standard error of the empirical MSE of at most 10 %. The
    // independent moment computation also re-derives Lemma 3.1 (σ²/m equals it relative to SM²).
    for estimator in Estimator::ALL {
        for case in cases(estimator) {
            let s = case.s();
            let label = format!("{estimator:?}, {}: s = {s}", case.label);
            if case.large {
                assert!((1.4..=2.1).contains(&s), "{label}");
            } else {
                assert!(s <= 0.8, "{label}");
                for v in [&case.x, &case.y] {
                    let norm = v.iter().map(|t| t * t).sum::<f64>().sqrt();
                    assert!((0.3..=0.6).contains(&norm), "{label}: norm {norm}");
                }
            }
            assert!((2..=8).contains(&case.x.len()) && (4..=32).contains(&case.m));
            assert_eq!(estimator.uses_identity(), case.a.iter().all(|a| *a == 1.0));
            // The registry entry's form and MSE are the case's: same feature form, and its
            // formula is the free Lemma 3.1 function to rounding.
            let entry = estimator.registry_entry();
            assert_eq!(
                entry.is_hyperbolic(),
                case.form == FeatureForm::Hyperbolic,
                "{label}"
            );
            assert!(
                (case.theoretical_mse() / case.lemma_3_1() - 1.0).abs() < 1e-12,
                "{label}: registry {} vs Lemma 3.1 {}",
                case.theoretical_mse(),
                case.lemma_3_1()
            );
            let (relative_mse, relative_se) =
                exact_relative_mse_and_se(s, case.form, case.m, DRAWS);
            let lemma = case.theoretical_mse() / case.softmax_kernel().powi(2);
            assert!(
                (relative_mse / lemma - 1.0).abs() < 1e-9,
                "{label}: moments give {relative_mse}, Lemma 3.1 {lemma}"
            );
            assert!(relative_se <= 0.10, "{label}: relative SE {relative_se}");
        }
    }
}

#[test]
#[ignore = "coverage measurement, about 3 min in release: --release -- --ignored"]
fn coverage_of_the_mse_interval_over_many_seeds() {
    // Reproduces the numbers in the module documentation: the fraction of seeds whose MSE
    // interval misses Lemma 3.1. With a nominal 4-SE interval the expected rate would be
    // 6·10⁻⁵; the heavy tail makes it larger, and the cases are chosen where it stays < 1 %
    // (the assertion allows 2 % of 200 seeds, i.e. 4 misses, for sampling noise).
    let seeds: u64 = 200;
    for estimator in Estimator::ALL {
        for (i, case) in cases(estimator).iter().enumerate() {
            let misses = (0..seeds)
                .filter(|&seed| {
                    let r = run_case(case, seed, (estimator.index() * 16 + i) as u64, DRAWS);
                    !r.mse_interval_contains(r.theory)
                })
                .count() as u64;
            println!(
                "{estimator:?}, {}: s = {:.2}, misses {misses}/{seeds}",
                case.label,
                case.s()
            );
            assert!(misses * 50 <= seeds, "{estimator:?}, {}", case.label);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Lemma 3.2, corrected
// ---------------------------------------------------------------------------------------------

/// A random unit vector in R^d.
fn unit_vector<R: rand::Rng + ?Sized>(d: usize, rng: &mut R) -> Vec<f64> {
    loop {
        let v: Vec<f64> = (0..d).map(|_| StandardNormal.sample(rng)).collect();
        let norm = v.iter().map(|t| t * t).sum::<f64>().sqrt();
        if norm > 1e-6 {
            return v.into_iter().map(|t| t / norm).collect();
        }
    }
}

/// A random region and a pair inside it.
struct RegionSample {
    r: f64,
    m: usize,
    x: Vec<f64>,
    y: Vec<f64>,
    a: Vec<f64>,
}

/// Draws r ∈ (0.05, 1.5), m ∈ [1, 512], d ∈ [1, 8], a random diagonal `a_i = e^{U(−1.5, 1.5)}`,
/// and a pair with `|Ax| ≤ r`, `|A^-T y| ≤ r`: `Ax = ρ_x u`, `A^-T y = ρ_y v` with random unit
/// u, v and radii `ρ = r·U^{1/d}` (uniform in the ball). One in five samples puts both radii at
/// r and one in five makes v = ±u, to probe the boundary where the bound is tight.
fn region_sample<R: rand::Rng + ?Sized>(rng: &mut R) -> RegionSample {
    let r = rng.random_range(0.05..1.5);
    let m = rng.random_range(1..=512usize);
    let d = rng.random_range(1..=8usize);
    let a: Vec<f64> = (0..d)
        .map(|_| rng.random_range(-1.5..1.5f64).exp())
        .collect();
    let u = unit_vector(d, rng);
    let v = if rng.random_bool(0.2) {
        let sign = if rng.random_bool(0.5) { 1.0 } else { -1.0 };
        u.iter().map(|t| sign * t).collect()
    } else {
        unit_vector(d, rng)
    };
    let (rho_x, rho_y) = if rng.random_bool(0.2) {
        (r, r)
    } else {
        let exponent = 1.0 / d as f64;
        (
            r * rng.random::<f64>().powf(exponent),
            r * rng.random::<f64>().powf(exponent),
        )
    };
    // x = A^-1 (ρ_x u), y = A (ρ_y v).
    let x = u.iter().zip(&a).map(|(t, ai)| rho_x * t / ai).collect();
    let y = v.iter().zip(&a).map(|(t, ai)| rho_y * t * ai).collect();
    RegionSample { r, m, x, y, a }
}

/// `log` of Lemma 3.1's relative RMSE of HCEXP, `0.5·log MSE − log SM`.
fn log_hcexp_relative_rmse(x: &[f64], y: &[f64], a: &[f64], m: usize) -> f64 {
    0.5 * log_theoretical_mse(x, y, a, FeatureForm::Hyperbolic, m) - log_softmax_kernel(x, y)
}

/// `|Ax|` and `|A^-T y|`, recomputed independently of the sampler.
fn transformed_norms(x: &[f64], y: &[f64], a: &[f64]) -> (f64, f64) {
    let ax = x.iter().zip(a).map(|(v, ai)| (ai * v).powi(2)).sum::<f64>();
    let ay = y.iter().zip(a).map(|(v, ai)| (v / ai).powi(2)).sum::<f64>();
    (ax.sqrt(), ay.sqrt())
}

#[test]
fn corrected_lemma_3_2_bound_dominates_lemma_3_1_on_sampled_regions() {
    let mut rng = stream_rng(SEED, StreamPurpose::Trial, 1000, 0);
    let mut tight = 0;
    for _ in 0..20_000 {
        let p = region_sample(&mut rng);
        let (ax, ay) = transformed_norms(&p.x, &p.y, &p.a);
        assert!(ax <= p.r * (1.0 + 1e-12) && ay <= p.r * (1.0 + 1e-12));
        let relative = log_hcexp_relative_rmse(&p.x, &p.y, &p.a, p.m);
        let bound = log_lemma_3_2_bound(p.r, p.m);
        assert!(bound.is_finite());
        // In the log domain; 1e-12 absorbs rounding at the boundary, where the two are equal.
        assert!(
            bound >= relative - 1e-12,
            "r = {}, m = {}, x = {:?}, y = {:?}, a = {:?}: bound {bound} < relative RMSE {relative}",
            p.r,
            p.m,
            p.x,
            p.y,
            p.a
        );
        if bound - relative < 1e-9 {
            tight += 1;
        }
    }
    // The sampler does reach the boundary (v = u with both radii r), so the check is not
    // passing only because the samples stay far inside the region.
    assert!(tight > 100, "only {tight} samples at the boundary");
}

#[test]
fn printed_lemma_3_2_bound_with_the_sign_typo_fails() {
    // The seed prints W(r) = exp(2r²)(1 − exp(+4r²)): negative for every r > 0, so it is below
    // the (positive) relative RMSE of every pair with z ≠ 0. Computed inline, not from the
    // library, so the test shows why the correction is needed.
    let mut rng = stream_rng(SEED, StreamPurpose::Trial, 1001, 0);
    let mut violated = 0;
    let mut samples = 0;
    for _ in 0..5_000 {
        let p = region_sample(&mut rng);
        let relative = log_hcexp_relative_rmse(&p.x, &p.y, &p.a, p.m).exp();
        if relative == 0.0 {
            continue; // z = 0: the estimator is exact, any bound ≥ 0 holds.
        }
        samples += 1;
        let r2 = p.r * p.r;
        let printed = (2.0 * r2).exp() * (1.0 - (4.0 * r2).exp()) / ((2 * p.m) as f64).sqrt();
        assert!(printed < 0.0);
        if printed < relative {
            violated += 1;
        }
        // The corrected bound holds for the same pair.
        assert!(log_lemma_3_2_bound(p.r, p.m).exp() >= relative * (1.0 - 1e-12));
    }
    assert!(samples > 4_000);
    assert_eq!(
        violated, samples,
        "the printed bound must fail for every pair"
    );
}

#[test]
fn corrected_lemma_3_2_bound_is_attained_when_ax_equals_a_inverse_transpose_y() {
    // Ax = A^-T y = r·u gives z = 2r·u, s = 4r²: Lemma 3.1 at the largest s, i.e. the bound.
    let mut rng = stream_rng(SEED, StreamPurpose::Trial, 1002, 0);
    for _ in 0..2_000 {
        let r = rng.random_range(0.05..1.5);
        let m = rng.random_range(1..=512usize);
        let d = rng.random_range(1..=8usize);
        let a: Vec<f64> = (0..d)
            .map(|_| rng.random_range(-1.5..1.5f64).exp())
            .collect();
        let u = unit_vector(d, &mut rng);
        let x: Vec<f64> = u.iter().zip(&a).map(|(t, ai)| r * t / ai).collect();
        let y: Vec<f64> = u.iter().zip(&a).map(|(t, ai)| r * t * ai).collect();
        let (ax, ay) = transformed_norms(&x, &y, &a);
        assert!((ax - r).abs() < 1e-12 && (ay - r).abs() < 1e-12);
        let relative = log_hcexp_relative_rmse(&x, &y, &a, m);
        let bound = log_lemma_3_2_bound(r, m);
        assert!(
            (bound - relative).abs() < 1e-9,
            "r = {r}, m = {m}: bound {bound}, relative RMSE {relative}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Lemma 3.4: the variance-adjusted A
// ---------------------------------------------------------------------------------------------

/// Component i of the objective: `J_i(a_i) = a_i² E[x_i²] + a_i^-2 E[y_i²]`, with
/// `E[x²] = σ² + μ²`.
fn objective_term(i: usize, a_i: f64, moments: &SampleMoments) -> f64 {
    let ex2 = moments.var_x[i] + moments.mean_x[i].powi(2);
    let ey2 = moments.var_y[i] + moments.mean_y[i].powi(2);
    a_i * a_i * ex2 + ey2 / (a_i * a_i)
}

/// `J(a) = Σ_i J_i(a_i) = E|Ax|² + E|A^-T y|²` for a diagonal A.
fn objective(a: &[f64], moments: &SampleMoments) -> f64 {
    a.iter()
        .enumerate()
        .map(|(i, a_i)| objective_term(i, *a_i, moments))
        .sum()
}

/// Random moments: d ∈ [1, 10], means `±c·U(0.1, 2)` with a per-side, per-component scale
/// `c = e^{U(−2, 2)}`, variances `(c'·g)²` with `c' = e^{U(−2, 2)}`, g standard normal, and
/// exactly 0 in one component of five (a valid sample variance; the mean then carries the
/// second moment). Means are kept away from 0 so that every second moment lies in about
/// `[1.8·10⁻⁴, 2·10³]`: the ratio's fourth root then stays far inside `[A_MIN, A_MAX]` and no
/// entry is clamped (a Gaussian mean near 0 with a zero variance would give a second moment
/// near 0 and a clamped entry, which is then rightly not the minimiser).
fn random_moments<R: rand::Rng + ?Sized>(rng: &mut R) -> SampleMoments {
    let d = rng.random_range(1..=10usize);
    let side = |rng: &mut R| -> (Vec<f64>, Vec<f64>) {
        (0..d)
            .map(|_| {
                let mean_scale = rng.random_range(-2.0..2.0f64).exp();
                let sign = if rng.random_bool(0.5) { 1.0 } else { -1.0 };
                let mean = sign * mean_scale * rng.random_range(0.1..2.0);
                let var = if rng.random_bool(0.2) {
                    0.0
                } else {
                    let sd_scale = rng.random_range(-2.0..2.0f64).exp();
                    let g: f64 = StandardNormal.sample(rng);
                    (sd_scale * g).powi(2)
                };
                (mean, var)
            })
            .unzip()
    };
    let (mean_x, var_x) = side(rng);
    let (mean_y, var_y) = side(rng);
    SampleMoments {
        mean_x,
        var_x,
        mean_y,
        var_y,
    }
}

/// The variance-adjusted diagonal, asserting that nothing was clamped (a clamped entry is no
/// longer the minimiser, and the random moments are built so that clamping never happens).
fn variance_adjusted(moments: &SampleMoments) -> Vec<f64> {
    let diag = diagonal_a(AHeuristic::VarianceAdjusted, moments);
    assert_eq!(diag.clamped, 0, "{moments:?}");
    diag.a
}

#[test]
fn variance_adjusted_a_minimises_the_second_moment_objective_against_perturbations() {
    let mut rng = stream_rng(SEED, StreamPurpose::Trial, 2000, 0);
    for _ in 0..500 {
        let moments = random_moments(&mut rng);
        let a = variance_adjusted(&moments);
        let best = objective(&a, &moments);
        assert!(best.is_finite() && best > 0.0);
        // Small (0.1) and large (1.0) multiplicative perturbations a_i·exp(ε_i), ε ~ N(0, σ²).
        for sigma in [0.1, 1.0] {
            let noise = Normal::new(0.0, sigma).unwrap();
            for _ in 0..10 {
                let perturbed: Vec<f64> = a
                    .iter()
                    .map(|ai| ai * Distribution::<f64>::sample(&noise, &mut rng).exp())
                    .collect();
                let value = objective(&perturbed, &moments);
                assert!(
                    best <= value * (1.0 + 1e-12),
                    "J(a*) = {best} > J(perturbed) = {value} for {moments:?}"
                );
            }
        }
    }
}

#[test]
fn variance_adjusted_a_is_a_stationary_point_in_log_a() {
    // Central differences in log a_i with h = 1e-3. J is separable, so ∂J/∂log a_i is the
    // derivative of its own term J_i(t) = A e^{2t} + B e^{−2t}, differenced alone so that the
    // other components' rounding (~1e-16·J/h, J possibly 10⁷ times J_i) does not swamp it. The
    // third derivative of J_i vanishes at the minimum (A e^{2t} = B e^{−2t}), so the truncation
    // error is O(h⁴) and rounding is ~1e-16·J_i/h: the derivative relative to the component's
    // own scale J_i must be below 1e-6 (a wrong formula such as a_i² = E[y²]/E[x²] gives an
    // O(1) derivative). The derivative of the whole J, differenced as a whole, must also be
    // below 1e-6 relative to J.
    let h = 1e-3;
    let mut rng = stream_rng(SEED, StreamPurpose::Trial, 2001, 0);
    for _ in 0..2_000 {
        let moments = random_moments(&mut rng);
        let a = variance_adjusted(&moments);
        let total = objective(&a, &moments);
        for i in 0..a.len() {
            let term = |t: f64| objective_term(i, a[i] * t.exp(), &moments);
            let scale = term(0.0);
            let gradient = (term(h) - term(-h)) / (2.0 * h);
            assert!(
                gradient.abs() <= 1e-6 * scale,
                "component {i}: dJ_i/dlog a_i = {gradient}, J_i = {scale}, {moments:?}"
            );
            // The step is visible: J_i rises by about 2·J_i·h² on either side.
            assert!(term(h) > scale && term(-h) > scale);
            let whole = |t: f64| {
                let mut b = a.clone();
                b[i] *= t.exp();
                objective(&b, &moments)
            };
            let whole_gradient = (whole(h) - whole(-h)) / (2.0 * h);
            assert!(
                whole_gradient.abs() <= 1e-6 * total,
                "component {i}: dJ/dlog a_i = {whole_gradient}, J = {total}, {moments:?}"
            );
        }
    }
}

#[test]
fn the_notebook_variant_of_lemma_3_4_is_not_the_minimiser() {
    // REFERENCE.md: the seed author's notebook squares the variance, a⁴ = (σ⁴_y + μ²_y)/(σ⁴_x +
    // μ²_x). The perturbation test above would catch it: its J is above the paper's whenever a
    // variance is not 0 or 1, which random moments almost always give.
    let mut rng = stream_rng(SEED, StreamPurpose::Trial, 2002, 0);
    let mut worse = 0;
    let trials = 500;
    for _ in 0..trials {
        let moments = random_moments(&mut rng);
        let a = variance_adjusted(&moments);
        let notebook: Vec<f64> = (0..a.len())
            .map(|i| {
                let num = moments.var_y[i].powi(2) + moments.mean_y[i].powi(2);
                let den = moments.var_x[i].powi(2) + moments.mean_x[i].powi(2);
                (num / den).powf(0.25)
            })
            .collect();
        let ours = objective(&a, &moments);
        let theirs = objective(&notebook, &moments);
        assert!(ours <= theirs * (1.0 + 1e-12));
        if theirs > ours * (1.0 + 1e-6) {
            worse += 1;
        }
    }
    assert!(
        worse * 10 >= trials * 9,
        "notebook worse in only {worse}/{trials}"
    );
}
