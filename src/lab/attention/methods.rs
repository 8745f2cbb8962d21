//! Running one method on one attention problem: fitting its parameters to the data once, then
//! drawing it (a fresh ω, or randomized attention's samples) as often as asked.

use crate::lab::config::{DETERMINISTIC_FEATURE_BUDGET, ExperimentConfig};
use crate::numerics::dataset::Dataset;
use crate::numerics::estimators::{EstimatorId, Fit, FitInput, Projections, dot};
use crate::numerics::rng::{StreamPurpose, StreamRng, stream_rng};

use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::deterministic::PolynomialKernel;
use crate::numerics::attention::linear::{
    ApproximateAttention, FeatureMap, linear_attention, quadratic_attention,
};
use crate::numerics::attention::lln::{LlnConstants, lln_fit};
use crate::numerics::attention::method::MethodId;
use crate::numerics::attention::randomized::randomized_attention_rows;
use crate::numerics::attention::{AttentionError, Evaluation};

/// A method fitted to one problem, ready to be drawn.
#[derive(Clone, Debug)]
pub enum Prepared {
    Estimator {
        id: EstimatorId,
        fit: Fit,
    },
    Polynomial(PolynomialKernel),
    /// A polynomial map whose features exceed the budget: its kernel, pair by pair.
    PolynomialQuadratic(PolynomialKernel),
    LogNormal {
        alpha: f64,
        beta: f64,
        note: String,
    },
    EluPlusOne,
    Randomized,
}

/// What a draw of a method reports besides its attention.
#[derive(Clone, Debug)]
pub struct MethodRun {
    pub attention: ApproximateAttention,
    /// Features per token (randomized attention: samples per query).
    pub feature_size: usize,
    pub evaluation: Evaluation,
    /// What was fitted, in words (A's range, α and β, the optimiser's iterations).
    pub note: String,
}

/// Fits `method` to `data`: a registry estimator's A (θ, α) on the queries and keys, LLN's α
/// and β by moment matching, a polynomial map's evaluation route.
pub fn prepare(
    method: MethodId,
    data: &AttentionData,
    config: &ExperimentConfig,
    lln: Option<&LlnConstants>,
) -> Result<Prepared, AttentionError> {
    let failed = |message: String| AttentionError::Method {
        method: method.id().to_string(),
        message,
    };
    Ok(match method {
        MethodId::Kernel(id) => {
            // Every query with a key half a sequence away: each token once in the optimiser's
            // pair objective; the heuristics read only the two sides' moments.
            let shift = data.len / 2;
            let y: Vec<f64> = (0..data.len)
                .flat_map(|i| data.key((i + shift) % data.len).to_vec())
                .collect();
            let pairs = Dataset {
                d: data.d,
                n: data.len,
                x: data.q.clone(),
                y,
            };
            let moments = pairs.moments();
            let fit = id
                .get()
                .fit(
                    FitInput {
                        data: &pairs,
                        moments: &moments,
                    },
                    &config.estimator_params(),
                )
                .map_err(|e| failed(e.to_string()))?;
            Prepared::Estimator { id, fit }
        }
        MethodId::Taylor | MethodId::Power => {
            let degree = config.attention.degree;
            let kernel = if method == MethodId::Taylor {
                PolynomialKernel::taylor(degree)
            } else {
                PolynomialKernel::power(degree)
            }
            .map_err(|e| failed(e.to_string()))?;
            match kernel.feature_size(data.d) {
                Some(size) if size <= DETERMINISTIC_FEATURE_BUDGET => Prepared::Polynomial(kernel),
                _ => Prepared::PolynomialQuadratic(kernel),
            }
        }
        MethodId::Lln => {
            let constants =
                lln.ok_or_else(|| failed("its moment-matching constants were not fitted".into()))?;
            let fit = lln_fit(&data.q, &data.k, data.len, data.d, constants)
                .map_err(|e| failed(e.to_string()))?;
            Prepared::LogNormal {
                alpha: fit.alpha,
                beta: fit.beta,
                note: format!(
                    "σ_q = {:.3}, σ_k = {:.3}, σ̃ = {:.3}{}",
                    fit.sigma_q,
                    fit.sigma_k,
                    fit.sigma_tilde,
                    if fit.clamped { " (clamped)" } else { "" }
                ),
            }
        }
        MethodId::Elu => Prepared::EluPlusOne,
        MethodId::Randomized => Prepared::Randomized,
    })
}

/// The stream of draw `draw` of `method`: independent across methods and draws.
pub fn draw_rng(config: &ExperimentConfig, method: MethodId, draw: u64) -> StreamRng {
    let index = MethodId::all().position(|m| m == method).unwrap_or(0) as u64;
    stream_rng(config.seed, StreamPurpose::Attention, 2 + index, draw)
}

/// One draw of a prepared method, returning P̂'s `rows`.
pub fn run(
    method: MethodId,
    prepared: &Prepared,
    data: &AttentionData,
    config: &ExperimentConfig,
    draw: u64,
    rows: &[usize],
) -> Result<MethodRun, AttentionError> {
    let failed = |message: String| AttentionError::Method {
        method: method.id().to_string(),
        message,
    };
    let mut rng = draw_rng(config, method, draw);
    let m = config.attention.features;
    Ok(match prepared {
        Prepared::Estimator { id, fit } => {
            let omega = if config.orthogonal {
                Projections::sample_orthogonal(m, data.d, &mut rng)
            } else {
                Projections::sample(m, data.d, &mut rng)
            }
            .map_err(|e| failed(e.to_string()))?;
            let map = FeatureMap::Estimator {
                id: *id,
                fit: fit.clone(),
                omega,
            };
            let attention = linear_attention(&map, data, rows);
            MethodRun {
                feature_size: m * crate::numerics::attention::features_per_projection(*id),
                attention,
                evaluation: Evaluation::Linear,
                note: fit_note(fit),
            }
        }
        Prepared::Polynomial(kernel) => MethodRun {
            feature_size: kernel.feature_size(data.d).unwrap_or(usize::MAX),
            attention: linear_attention(&FeatureMap::Polynomial(*kernel), data, rows),
            evaluation: Evaluation::Linear,
            note: kernel.label(),
        },
        Prepared::PolynomialQuadratic(kernel) => {
            let pair = |q: &[f64], k: &[f64]| kernel.kernel(dot(q, k));
            MethodRun {
                feature_size: kernel.feature_size(data.d).unwrap_or(usize::MAX),
                attention: quadratic_attention(&pair, data, rows),
                evaluation: Evaluation::QuadraticFallback,
                note: format!(
                    "{}: its features exceed {DETERMINISTIC_FEATURE_BUDGET}, so its kernel is evaluated pair by pair (O(L²))",
                    kernel.label()
                ),
            }
        }
        Prepared::LogNormal { alpha, beta, note } => MethodRun {
            feature_size: data.d,
            attention: linear_attention(
                &FeatureMap::LogNormal {
                    alpha: *alpha,
                    beta: *beta,
                },
                data,
                rows,
            ),
            evaluation: Evaluation::Linear,
            note: format!("α = {alpha:.3}, β = {beta:.3}; {note}"),
        },
        Prepared::EluPlusOne => MethodRun {
            feature_size: data.d,
            attention: linear_attention(&FeatureMap::EluPlusOne, data, rows),
            evaluation: Evaluation::Linear,
            note: String::new(),
        },
        Prepared::Randomized => {
            let samples = config.attention.ra_samples;
            let (output, rows) = randomized_attention_rows(data, samples, rows, &mut rng)
                .map_err(|e| failed(e.to_string()))?;
            MethodRun {
                feature_size: samples,
                attention: ApproximateAttention {
                    output,
                    denominators: vec![1.0; data.len],
                    bad_rows: 0,
                    rows,
                },
                evaluation: Evaluation::Quadratic,
                note: format!("{samples} samples ω per query"),
            }
        }
    })
}

fn fit_note(fit: &Fit) -> String {
    let (lo, hi) = fit
        .a
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), a| {
            (lo.min(*a), hi.max(*a))
        });
    let mut note = if lo == hi {
        format!("A = {lo:.3}·I")
    } else {
        format!("A diagonal in [{lo:.3}, {hi:.3}]")
    };
    if fit.theta != 0.0 {
        note.push_str(&format!(", θ = {:.3}", fit.theta));
    }
    if fit.alpha != 0.0 {
        note.push_str(&format!(", α = {:.3}", fit.alpha));
    }
    if let Some(report) = fit.optimiser {
        note.push_str(&format!(", {} L-BFGS iterations", report.iterations));
    }
    note
}
