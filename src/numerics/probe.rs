//! The single-pair probe: many independent estimates of `SM(x, y)` for one pair, to compare
//! their spread with the estimator's MSE formula.
//!
//! **One Gaussian per feature, where that is exact.** An estimator that collapses a pair to
//! one vector z with an `exp`, `cosh` or `cos` sum ([`super::estimators::FastSum`]) sees only
//! `t_k = ω_k·z`, and for i.i.d. `ω_k ~ N(0, I_d)` the `t_k` are i.i.d. `N(0, |z|²)`. Drawing
//! `t_k = |z|·g_k` with `g_k ~ N(0, 1)` gives exactly the estimator's distribution at m
//! Gaussian draws instead of m·d. The others (GERF's `|ω_k|²` weights, a complex A's two
//! correlated projections) and orthogonal features draw the full ω for every estimate.

use crate::numerics::portable::Libm;
use std::fmt;

use super::portable::StandardNormal;
use serde::{Deserialize, Serialize};

use super::dataset::{Dataset, SampleMoments};
use super::estimators::{
    EstimatorId, EstimatorParams, FastSum, Fit, FitInput, Projections, dot, log_softmax_kernel,
    reduce, reference_estimate,
};
use super::projections::couplings::Coupling;
use super::rng::{StreamPurpose, stream_rng};
use super::stats::mean_and_standard_error;

/// Largest number of estimates one probe may draw.
pub const MAX_TRIALS: usize = 1_000_000;

/// Why a probe could not run.
#[derive(Clone, Debug, PartialEq)]
pub enum ProbeError {
    /// x, y and a must have the same, non-zero length.
    DimensionMismatch { x: usize, y: usize, a: usize },
    /// A component is NaN or infinite, or an entry of a is zero.
    NotFinite(&'static str),
    /// m must be at least 1.
    NoFeatures,
    /// The number of estimates must be between 2 and [`MAX_TRIALS`].
    Trials(usize),
    /// The estimator could not be fitted to the pair itself ([`ProbeRequest::fit_to_pair`]).
    Fit(String),
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::DimensionMismatch { x, y, a } => write!(
                f,
                "x, y and the diagonal of A need the same non-zero length (got {x}, {y} and {a})"
            ),
            ProbeError::NotFinite(what) => write!(f, "{what} must be finite (and a non-zero)"),
            ProbeError::NoFeatures => write!(f, "m must be at least 1"),
            ProbeError::Fit(message) => f.write_str(message),
            ProbeError::Trials(t) => {
                write!(
                    f,
                    "the number of estimates must be from 2 to {MAX_TRIALS} (got {t})"
                )
            }
        }
    }
}

impl std::error::Error for ProbeError {}

/// One pair's vectors: the probe's pair of the scatter dataset, which a worker draws (it has
/// the dataset cached; the page's module does not link the samplers).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairVectors {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

/// The probe's inputs: `trials` independent estimates of one pair by one fitted estimator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeRequest {
    pub estimator: EstimatorId,
    /// The estimator's parameters (fitted to the dataset the pair comes from).
    pub fit: Fit,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub m: usize,
    pub trials: usize,
    pub seed: u64,
    /// How the rows of ω are drawn together.
    #[serde(default)]
    pub coupling: Coupling,
    /// Fit the estimator to the pair itself (a one-pair dataset: the pair as the means,
    /// variance 0) with these parameters instead of using `fit`: a typed pair. The worker
    /// fits, so that the page never links the estimators' fits.
    #[serde(default)]
    pub fit_to_pair: Option<EstimatorParams>,
}

/// `trials` independent estimates of one pair and their summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    pub true_value: f64,
    /// The estimates (each with its own fresh ω).
    pub estimates: Vec<f64>,
    pub mean_estimate: f64,
    /// Standard error of `mean_estimate`: sample sd / sqrt(trials).
    pub standard_error: f64,
    /// Mean of `(estimate − SM)²`.
    pub empirical_mse: f64,
    /// Standard error of `empirical_mse`: sd of the squared errors / sqrt(trials).
    pub mse_standard_error: f64,
    /// The estimator's MSE formula (for i.i.d. ω), NaN where it has none.
    pub theoretical_mse: f64,
}

/// Whether one Gaussian per feature gives the estimator's exact distribution.
fn draws_one_gaussian_per_feature(sum: FastSum, projections_per_pair: usize) -> bool {
    projections_per_pair == 1 && matches!(sum, FastSum::Exp | FastSum::Cosh | FastSum::Cos)
}

/// How many Gaussians [`probe_pair`] draws for `request`: `m` per estimate where one Gaussian
/// per feature is exact with i.i.d. ω, else the full `m × d` projections (and, for orthogonal
/// or simplex blocks, their `chi(d)` lengths: `m × (d + 1)`), for the page's limit on one
/// probe's time.
pub fn probe_draws(request: &ProbeRequest) -> f64 {
    let per_estimate =
        if request.coupling == Coupling::Iid && !request.estimator.info().draws_full_omega() {
            request.m as f64
        } else {
            let d = request.x.len() as f64;
            let blocks = matches!(request.coupling, Coupling::Orthogonal | Coupling::Simplex);
            request.m as f64 * if blocks { d + 1.0 } else { d }
        };
    per_estimate * request.trials as f64
}

/// The estimator's fit to `(x, y)` as a one-pair dataset (the pair as the means, variance 0),
/// as `kernel-lab pair` does for a typed pair.
pub fn fit_to_pair(
    estimator: EstimatorId,
    x: &[f64],
    y: &[f64],
    params: &EstimatorParams,
) -> Result<Fit, ProbeError> {
    let data = Dataset {
        d: x.len(),
        n: 1,
        x: x.to_vec(),
        y: y.to_vec(),
    };
    let moments = SampleMoments::of_pair(x, y);
    estimator
        .get()
        .fit(
            FitInput {
                data: &data,
                moments: &moments,
            },
            params,
        )
        .map_err(|e| ProbeError::Fit(e.to_string()))
}

/// Draws `request.trials` independent estimates of `SM(x, y)`; estimate `t` uses the stream
/// `(seed, Probe, t)`, so results are reproducible and independent of the trials' order.
pub fn probe_pair(request: &ProbeRequest) -> Result<ProbeResult, ProbeError> {
    let ProbeRequest {
        estimator,
        fit,
        x,
        y,
        m,
        trials,
        seed,
        coupling,
        fit_to_pair: refit,
    } = request;
    let (m, trials, seed) = (*m, *trials, *seed);
    let refitted;
    let fit = match refit {
        Some(params) => {
            if x.len() != y.len() {
                return Err(ProbeError::DimensionMismatch {
                    x: x.len(),
                    y: y.len(),
                    a: x.len(),
                });
            }
            refitted = fit_to_pair(*estimator, x, y, params)?;
            &refitted
        }
        None => fit,
    };
    let a = &fit.a;
    if x.is_empty() || x.len() != y.len() || x.len() != a.len() {
        return Err(ProbeError::DimensionMismatch {
            x: x.len(),
            y: y.len(),
            a: a.len(),
        });
    }
    let finite = |v: &[f64]| v.iter().all(|c| c.is_finite());
    if !finite(x) || !finite(y) {
        return Err(ProbeError::NotFinite("every component of x and y"));
    }
    if !finite(a) || a.contains(&0.0) || !fit.theta.is_finite() || !fit.alpha.is_finite() {
        return Err(ProbeError::NotFinite("every entry of a"));
    }
    if m == 0 {
        return Err(ProbeError::NoFeatures);
    }
    if !(2..=MAX_TRIALS).contains(&trials) {
        return Err(ProbeError::Trials(trials));
    }
    let estimator = estimator.get();
    let d = x.len();
    let sum = estimator.fast_sum(fit);
    let per_pair = estimator.projections_per_pair();
    let log_true = log_softmax_kernel(x, y);
    let true_value = log_true.libm_exp();
    let estimates: Vec<f64> =
        if draws_one_gaussian_per_feature(sum, per_pair) && *coupling == Coupling::Iid {
            let mut z = vec![0.0; d];
            let collapsed = estimator.collapse(fit, x, y, &mut z);
            let z_norm = dot(&z, &z).sqrt();
            let log_prefactor = collapsed.log_prefactor - (m as f64).libm_ln();
            let mut projected = vec![0.0; m];
            (0..trials)
                .map(|trial| {
                    let mut rng = stream_rng(seed, StreamPurpose::Probe, trial as u64, 0);
                    for t in &mut projected {
                        let g: f64 = StandardNormal.sample(&mut rng);
                        *t = z_norm * g;
                    }
                    reduce(sum, &projected, &[], &[], 0.0)
                        .scaled(log_prefactor)
                        .value()
                })
                .collect()
        } else {
            let mut omega = Projections::zeroed(m, d).map_err(|_| ProbeError::NoFeatures)?;
            (0..trials)
                .map(|trial| {
                    let mut rng = stream_rng(seed, StreamPurpose::Probe, trial as u64, 0);
                    omega
                        .resample_coupled(*coupling, &mut rng)
                        .map_err(|e| ProbeError::Fit(e.to_string()))?;
                    Ok(reference_estimate(estimator, fit, x, y, &omega)
                        .map_or(f64::NAN, |estimate| estimate.value()))
                })
                .collect::<Result<_, ProbeError>>()?
        };
    let (mean_estimate, standard_error) = mean_and_standard_error(&estimates);
    let squared_errors: Vec<f64> = estimates
        .iter()
        .map(|e| (e - true_value) * (e - true_value))
        .collect();
    let (empirical_mse, mse_standard_error) = mean_and_standard_error(&squared_errors);
    Ok(ProbeResult {
        true_value,
        estimates,
        mean_estimate,
        standard_error,
        empirical_mse,
        mse_standard_error,
        theoretical_mse: estimator
            .log_mse(fit, x, y, m)
            .map_or(f64::NAN, |log_mse| log_mse.libm_exp()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: &str, a: &[f64], m: usize, trials: usize, seed: u64) -> ProbeRequest {
        ProbeRequest {
            estimator: EstimatorId::from_id(id).unwrap(),
            fit: Fit::diagonal(a.to_vec(), 0),
            x: vec![0.4, -0.6, 0.3, 0.2],
            y: vec![0.5, 0.2, -0.3, 0.6],
            m,
            trials,
            seed,
            coupling: Coupling::Iid,
            fit_to_pair: None,
        }
    }

    #[test]
    fn probe_agrees_with_lemma_3_1_and_is_unbiased() {
        let a = [1.4, 0.8, 1.0, 0.6];
        for id in ["cexp-var", "hcexp-var", "rff"] {
            let r = probe_pair(&request(id, &a, 8, 40_000, 5)).unwrap();
            assert!(
                (r.mean_estimate - r.true_value).abs() < 4.0 * r.standard_error,
                "{id}"
            );
            assert!(
                (r.empirical_mse - r.theoretical_mse).abs() < 4.0 * r.mse_standard_error,
                "{id}: {} vs {} ± {}",
                r.empirical_mse,
                r.theoretical_mse,
                r.mse_standard_error
            );
        }
    }

    #[test]
    fn one_gaussian_per_feature_matches_full_projections_in_distribution() {
        // The same estimator with full d-dimensional ω (the path orthogonal features take,
        // here with i.i.d. rows): means and spreads agree within their standard errors.
        let (m, trials) = (4, 30_000);
        let fast = probe_pair(&request("prf-hyp", &[1.0; 4], m, trials, 1)).unwrap();
        let slow = request("prf-hyp", &[1.0; 4], m, trials, 2);
        let estimator = slow.estimator.get();
        let mut omega = Projections::zeroed(m, 4).unwrap();
        let full: Vec<f64> = (0..trials)
            .map(|t| {
                omega.resample(&mut stream_rng(2, StreamPurpose::Trial, t as u64, 0));
                reference_estimate(estimator, &slow.fit, &slow.x, &slow.y, &omega)
                    .unwrap()
                    .value()
            })
            .collect();
        let n = trials as f64;
        let (mean, standard_error) = mean_and_standard_error(&full);
        let sd = standard_error * n.sqrt();
        let combined = (fast.standard_error.powi(2) + standard_error.powi(2)).sqrt();
        assert!((fast.mean_estimate - mean).abs() < 4.0 * combined);
        let fast_sd = fast.standard_error * n.sqrt();
        // Standard deviations agree within 5 % (their own relative standard error is ~1 %).
        assert!((fast_sd / sd - 1.0).abs() < 0.05, "{fast_sd} vs {sd}");
    }

    #[test]
    fn bad_inputs_are_errors_not_panics() {
        let good = request("prf-pos", &[1.0; 4], 4, 10, 0);
        let bad = [
            ProbeRequest {
                x: vec![],
                y: vec![],
                ..good.clone()
            },
            ProbeRequest {
                x: vec![1.0],
                ..good.clone()
            },
            ProbeRequest {
                x: vec![f64::NAN, 0.0, 0.0, 0.0],
                ..good.clone()
            },
            ProbeRequest {
                fit: Fit::diagonal(vec![0.0; 4], 0),
                ..good.clone()
            },
            ProbeRequest {
                m: 0,
                ..good.clone()
            },
            ProbeRequest {
                trials: 1,
                ..good.clone()
            },
        ];
        for request in bad {
            assert!(probe_pair(&request).is_err(), "{request:?}");
        }
        assert!(probe_pair(&good).is_ok());
    }
}
