//! Random-feature estimators of the softmax kernel `SM(x, y) = exp(x·y)`, evaluated for one
//! (x, y) pair at a time, in the log domain.
//!
//! PRF (Performer, Lemma 1) and CEXP/HCEXP with a real diagonal `A` (seed paper, section 3;
//! REFERENCE.md, "Estimators of SM(x, y)"). With `A = diag(a)`, `Ax = a∘x` and `A^-T y = y/a`.
//!
//! **One projection per pair** (REFERENCE.md, "Diagonal pairs in one projection"): for a single
//! pair the feature inner product collapses to
//! `φ(x)·φ(y) = (1/m) · exp(-(|Ax|² + |A^-T y|²)/2) · Σ_k f(ω_k·z)` with `z = Ax + A^-T y` and
//! `f = exp` (positive form) or `f = cosh` (hyperbolic form), so one projection of `z`
//! replaces the two projections of x and y.
//!
//! **Log domain.** `Σ_k f(ω_k·z)` is a log-sum-exp, so `exp` never sees a large argument; the
//! log of the estimate is finite whenever the inputs are.

use std::fmt;

use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

/// Which feature map turns the projections into an estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FeatureForm {
    /// `exp(ω·u)` features: PRF `+`, CEXP. Sum term `exp(ω_k·z)`.
    Positive,
    /// `[exp(ω·u), exp(-ω·u)]/sqrt(2)` features: PRF `hyp+`, HCEXP. Sum term `cosh(ω_k·z)`.
    Hyperbolic,
}

/// Why projections could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EstimatorError {
    /// `m` or `d` is zero.
    EmptyProjection { m: usize, d: usize },
    /// Vectors of different lengths were combined.
    DimensionMismatch { expected: usize, got: usize },
}

impl fmt::Display for EstimatorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EstimatorError::EmptyProjection { m, d } => {
                write!(f, "projections need m ≥ 1 and d ≥ 1 (got m = {m}, d = {d})")
            }
            EstimatorError::DimensionMismatch { expected, got } => {
                write!(f, "expected vectors of dimension {expected}, got {got}")
            }
        }
    }
}

impl std::error::Error for EstimatorError {}

/// `m` Gaussian projections `ω_k ~ N(0, I_d)`, stored row-major (`omega[k * d + j]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Projections {
    m: usize,
    d: usize,
    omega: Vec<f64>,
}

impl Projections {
    /// Draws `m` i.i.d. standard Gaussian vectors in `R^d`.
    pub fn sample<R: Rng + ?Sized>(
        m: usize,
        d: usize,
        rng: &mut R,
    ) -> Result<Self, EstimatorError> {
        let mut projections = Self::zeroed(m, d)?;
        projections.resample(rng);
        Ok(projections)
    }

    /// Storage for `m × d` projections, all zero until [`Projections::resample`].
    pub fn zeroed(m: usize, d: usize) -> Result<Self, EstimatorError> {
        if m == 0 || d == 0 {
            return Err(EstimatorError::EmptyProjection { m, d });
        }
        Ok(Self {
            m,
            d,
            omega: vec![0.0; m * d],
        })
    }

    /// Redraws every ω in place (fresh ω per pair reuses one allocation).
    pub fn resample<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        for w in &mut self.omega {
            *w = StandardNormal.sample(rng);
        }
    }

    /// The projections `−ω_k` (the antithetic set: the hyperbolic estimator with ω is the
    /// mean of the positive ones with ω and with −ω).
    pub fn negated(&self) -> Self {
        Self {
            m: self.m,
            d: self.d,
            omega: self.omega.iter().map(|w| -w).collect(),
        }
    }

    /// The number of projections m.
    pub fn m(&self) -> usize {
        self.m
    }

    /// The dimension d.
    pub fn d(&self) -> usize {
        self.d
    }

    /// The vectors `ω_k`, in order.
    pub fn rows(&self) -> impl Iterator<Item = &[f64]> {
        self.omega.chunks_exact(self.d)
    }

    /// `out[k] = ω_k · z`. Four lane accumulators per row, because an ordered float sum does
    /// not vectorise.
    fn project(&self, z: &[f64], out: &mut [f64]) {
        for (row, t) in self.omega.chunks_exact(self.d).zip(out.iter_mut()) {
            let mut lanes = [0.0f64; 4];
            let row_chunks = row.chunks_exact(4);
            let z_chunks = z.chunks_exact(4);
            let mut tail = 0.0;
            for (w, v) in row_chunks.remainder().iter().zip(z_chunks.remainder()) {
                tail += w * v;
            }
            for (w, v) in row_chunks.zip(z_chunks) {
                for lane in 0..4 {
                    lanes[lane] += w[lane] * v[lane];
                }
            }
            *t = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail;
        }
    }
}

/// The transformed pair: `z = Ax + A^-T y` and `|Ax|² + |A^-T y|²`.
pub(crate) fn transform(x: &[f64], y: &[f64], a: &[f64], z: &mut [f64]) -> f64 {
    let mut squared_norms = 0.0;
    for (((zi, xi), yi), ai) in z.iter_mut().zip(x).zip(y).zip(a) {
        let ax = ai * xi;
        let by = yi / ai;
        *zi = ax + by;
        squared_norms += ax * ax + by * by;
    }
    squared_norms
}

fn dot(u: &[f64], v: &[f64]) -> f64 {
    u.iter().zip(v).map(|(p, q)| p * q).sum()
}

/// `log SM(x, y) = x·y`.
pub fn log_softmax_kernel(x: &[f64], y: &[f64]) -> f64 {
    dot(x, y)
}

/// Evaluates one estimator on many pairs, reusing its scratch space.
#[derive(Clone, Debug)]
pub struct PairEstimator {
    form: FeatureForm,
    z: Vec<f64>,
    projected: Vec<f64>,
}

impl PairEstimator {
    /// An estimator of the given form for vectors of dimension `d` and `m` projections.
    pub fn new(form: FeatureForm, d: usize, m: usize) -> Self {
        Self {
            form,
            z: vec![0.0; d],
            projected: vec![0.0; m],
        }
    }

    /// `log ŜM(x, y)` for the diagonal `a` and the projections `omega`:
    /// `-(|Ax|² + |A^-T y|²)/2 - ln m + log Σ_k f(ω_k·z)`, the sum taken as a log-sum-exp.
    pub fn log_estimate(
        &mut self,
        x: &[f64],
        y: &[f64],
        a: &[f64],
        omega: &Projections,
    ) -> Result<f64, EstimatorError> {
        let d = omega.d;
        for len in [x.len(), y.len(), a.len(), self.z.len()] {
            if len != d {
                return Err(EstimatorError::DimensionMismatch {
                    expected: d,
                    got: len,
                });
            }
        }
        if self.projected.len() != omega.m {
            self.projected.resize(omega.m, 0.0);
        }
        let squared_norms = transform(x, y, a, &mut self.z);
        omega.project(&self.z, &mut self.projected);
        let log_sum = match self.form {
            FeatureForm::Positive => log_sum_exp(&self.projected),
            FeatureForm::Hyperbolic => log_sum_cosh(&self.projected),
        };
        Ok(-0.5 * squared_norms - (omega.m as f64).ln() + log_sum)
    }
}

/// `log Σ_k exp(t_k)`, shifted by the maximum so that no term overflows.
pub(crate) fn log_sum_exp(t: &[f64]) -> f64 {
    let max = t.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return max;
    }
    max + t.iter().map(|v| (v - max).exp()).sum::<f64>().ln()
}

/// `log Σ_k cosh(t_k) = M + log Σ_k (exp(t_k − M) + exp(−t_k − M))/2` with `M = max |t_k|`.
pub(crate) fn log_sum_cosh(t: &[f64]) -> f64 {
    let max = t.iter().map(|v| v.abs()).fold(0.0, f64::max);
    if !max.is_finite() {
        return max;
    }
    let sum: f64 = if max < 350.0 {
        // One exp per term: e^{−t−M} = e^{−2M} / e^{t−M}, and e^{t−M} ≥ e^{−2M} > 0 because
        // t ≥ −M, so the division cannot overflow while e^{−2M} stays a normal number.
        let shift = (-2.0 * max).exp();
        t.iter()
            .map(|v| {
                let up = (v - max).exp();
                up + shift / up
            })
            .sum()
    } else {
        t.iter().map(|v| (v - max).exp() + (-v - max).exp()).sum()
    };
    max + (0.5 * sum).ln()
}

/// `log` of Lemma 3.1's MSE for one pair (PRF being `a = 1`), in the log domain:
/// positive form `(1/m) e^{s} SM² (1 − e^{−s})`, hyperbolic form
/// `(1/2m) e^{s} SM² (1 − e^{−s})²`, with `s = |Ax + A^-T y|²` (REFERENCE.md, MSE column).
/// Returns `-inf` when `z = 0` (the estimator is then exact).
pub fn log_theoretical_mse(x: &[f64], y: &[f64], a: &[f64], form: FeatureForm, m: usize) -> f64 {
    let mut z = vec![0.0; x.len()];
    transform(x, y, a, &mut z);
    log_theoretical_mse_of(dot(&z, &z), log_softmax_kernel(x, y), form, m)
}

/// [`log_theoretical_mse`] from `s = |Ax + A^-T y|²` and `log SM(x, y)`, for callers that
/// already have both.
pub fn log_theoretical_mse_of(s: f64, log_sm: f64, form: FeatureForm, m: usize) -> f64 {
    // ln(1 − e^{−s}) = ln(−expm1(−s)), accurate for small s.
    let log_one_minus = (-(-s).exp_m1()).ln();
    let log_sm_squared = 2.0 * log_sm;
    match form {
        FeatureForm::Positive => -(m as f64).ln() + s + log_sm_squared + log_one_minus,
        FeatureForm::Hyperbolic => {
            -((2 * m) as f64).ln() + s + log_sm_squared + 2.0 * log_one_minus
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::rng::{StreamPurpose, stream_rng};
    use crate::math::stats::mean_and_standard_error;

    /// Mean and empirical MSE of `trials` independent estimates, each with fresh ω.
    fn repeated_estimates(
        x: &[f64],
        y: &[f64],
        a: &[f64],
        form: FeatureForm,
        m: usize,
        trials: usize,
    ) -> (Vec<f64>, f64) {
        let d = x.len();
        let mut rng = stream_rng(11, StreamPurpose::Trial, m as u64, d as u64);
        let mut omega = Projections::zeroed(m, d).unwrap();
        let mut estimator = PairEstimator::new(form, d, m);
        let estimates: Vec<f64> = (0..trials)
            .map(|_| {
                omega.resample(&mut rng);
                estimator.log_estimate(x, y, a, &omega).unwrap().exp()
            })
            .collect();
        (estimates, log_softmax_kernel(x, y).exp())
    }

    #[test]
    fn estimators_are_unbiased_within_four_standard_errors() {
        let x = [0.4, -0.3, 0.8, 0.1, -0.5];
        let y = [0.2, 0.6, -0.1, 0.3, 0.4];
        let a = [1.3, 0.7, 1.0, 2.0, 0.5];
        for form in [FeatureForm::Positive, FeatureForm::Hyperbolic] {
            for diag in [[1.0; 5], a] {
                let (estimates, sm) = repeated_estimates(&x, &y, &diag, form, 8, 20_000);
                let (mean, se) = mean_and_standard_error(&estimates);
                assert!(
                    (mean - sm).abs() < 4.0 * se,
                    "{form:?} mean {mean} vs SM {sm}, se {se}"
                );
            }
        }
    }

    #[test]
    fn empirical_mse_matches_lemma_3_1() {
        // The empirical MSE is the mean of squared errors e_t; its standard error is
        // sd(e_t)/sqrt(T), estimated from the same draws.
        let x = [0.5, -0.2, 0.9, 0.3];
        let y = [0.1, 0.7, -0.4, 0.2];
        let a = [0.8, 1.5, 0.6, 1.1];
        for form in [FeatureForm::Positive, FeatureForm::Hyperbolic] {
            let m = 4;
            let (estimates, sm) = repeated_estimates(&x, &y, &a, form, m, 40_000);
            let squared_errors: Vec<f64> = estimates.iter().map(|e| (e - sm) * (e - sm)).collect();
            let (mse, se) = mean_and_standard_error(&squared_errors);
            let theory = log_theoretical_mse(&x, &y, &a, form, m).exp();
            assert!(
                (mse - theory).abs() < 4.0 * se,
                "{form:?}: empirical {mse}, theory {theory}, se {se}"
            );
        }
    }

    #[test]
    fn diagonal_a_is_exact_when_ax_cancels_a_inverse_y() {
        // If A x = −A^-T y then z = 0, every projection is 0 and the estimate is exactly SM.
        let x = [1.0, 2.0];
        let a = [2.0, 0.5];
        // y = −A² x = [−4, −0.5]
        let y = [-4.0, -0.5];
        let omega =
            Projections::sample(16, 2, &mut stream_rng(1, StreamPurpose::Trial, 0, 0)).unwrap();
        for form in [FeatureForm::Positive, FeatureForm::Hyperbolic] {
            let mut estimator = PairEstimator::new(form, 2, 16);
            let log_est = estimator.log_estimate(&x, &y, &a, &omega).unwrap();
            assert!((log_est - log_softmax_kernel(&x, &y)).abs() < 1e-12);
            assert_eq!(log_theoretical_mse(&x, &y, &a, form, 16), f64::NEG_INFINITY);
        }
    }

    #[test]
    fn large_norms_stay_finite_in_the_log_domain() {
        let x = [40.0, -30.0, 25.0];
        let y = [35.0, 20.0, -45.0];
        let omega =
            Projections::sample(64, 3, &mut stream_rng(2, StreamPurpose::Trial, 0, 0)).unwrap();
        for form in [FeatureForm::Positive, FeatureForm::Hyperbolic] {
            let mut estimator = PairEstimator::new(form, 3, 64);
            let log_est = estimator.log_estimate(&x, &y, &[1.0; 3], &omega).unwrap();
            assert!(log_est.is_finite() && log_est.abs() > 709.0, "{log_est}");
            assert!(log_theoretical_mse(&x, &y, &[1.0; 3], form, 64).is_finite());
        }
    }

    #[test]
    fn log_sum_cosh_matches_the_direct_sum_on_both_branches() {
        let small = [0.3, -1.2, 2.5, 0.0];
        let direct: f64 = small.iter().map(|v: &f64| v.cosh()).sum::<f64>().ln();
        assert!((log_sum_cosh(&small) - direct).abs() < 1e-12);
        // Beyond 350 the two-exp branch: cosh(400) + cosh(-399) = e^400 (1 + e^-1) / 2 (+ tiny).
        let large = [400.0, -399.0];
        let expected = 400.0 + (0.5 * (1.0 + (-1.0f64).exp())).ln();
        assert!((log_sum_cosh(&large) - expected).abs() < 1e-12);
    }

    #[test]
    fn mismatched_dimensions_are_an_error() {
        let omega =
            Projections::sample(4, 3, &mut stream_rng(2, StreamPurpose::Trial, 0, 0)).unwrap();
        let mut estimator = PairEstimator::new(FeatureForm::Positive, 3, 4);
        assert!(
            estimator
                .log_estimate(&[1.0; 2], &[1.0; 3], &[1.0; 3], &omega)
                .is_err()
        );
        assert!(Projections::zeroed(0, 3).is_err());
    }
}
