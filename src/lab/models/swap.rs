//! Approximate attention inside the model: every head of the chosen layers of all-MiniLM-L6-v2
//! runs one of the lab's attention methods instead of softmax, the forward goes on with the
//! approximated outputs, and the other layers stay exact. What moves ([`swap_report`]): per
//! layer, the attention outputs and the hidden states against the exact model's same layer
//! (relative Frobenius norm of the difference); the sentence embedding's cosine to the exact
//! one, over several draws of a random method. And the task the model exists for
//! ([`retrieval_report`]): a query and candidates ranked by cosine, exactly and with the method
//! (top-1 kept, Kendall's τ).
//!
//! How a method replaces one head is [`super::head_swap`]'s, shared with the causal model.

use std::sync::Arc;

use crate::lab::config::{ExperimentConfig, HEAD_LAYERS, MAX_SWAP_DRAWS, MODEL_MAX_TOKENS};
pub use crate::lab::models::head_swap::{Swap, SwapMethod};
use crate::lab::models::head_swap::{registry_of, replacement_of};
use crate::lab::models::learned_map::LearnedMaps;
use crate::lab::models::protocol::{HEDGEHOG, Origin, SwapJob};
pub use crate::lab::models::protocol::{
    LayerMovement, Ranking, RetrievalReport, Spread, SwapCost, SwapReport,
};
use crate::lab::models::text_model::TextModel;
use crate::numerics::attention::long::LinearForm;
use crate::numerics::attention::methods::MethodId;
use crate::numerics::bert::{Forward, Keep, ModelError};

/// Relative Frobenius norm of `a − b` against `b`.
fn relative(a: &[f32], b: &[f32]) -> f64 {
    let (mut diff, mut base) = (0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        diff += (f64::from(*x) - f64::from(*y)).powi(2);
        base += f64::from(*y).powi(2);
    }
    (diff / base.max(f64::MIN_POSITIVE)).sqrt()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b)).max(f64::MIN_POSITIVE)
}

/// The forward of `exact`'s text with `swap` in place, draw `draw`, every layer's states
/// kept if `keep_layers`; layer 0's projections are the exact run's.
fn swapped_forward(
    model: &TextModel,
    exact: &ExactRun,
    config: &ExperimentConfig,
    swap: &Swap,
    (draw, keep_layers): (usize, bool),
) -> Result<Forward, ModelError> {
    let registry = registry_of(swap, config, model.weights.config.head_dim());
    let mut replace = replacement_of(swap, registry.as_ref(), draw, LinearForm::Bidirectional);
    let keep = Keep {
        qkv: false,
        layers: keep_layers,
    };
    let first = Some(exact.first_projections.as_slice()).filter(|p| !p.is_empty());
    model
        .weights
        .forward_from_first(&exact.ids, keep, Some(&mut replace), first)
        .map(|(forward, _)| forward)
}

/// The sentence embeddings of `texts` with `swap` in place, draw `draw`: one batch
/// ([`BertWeights::forward_batch`], each text's own forward bit for bit), each head of a
/// random method drawing the same ω for every text, as one model would.
///
/// [`BertWeights::forward_batch`]: crate::numerics::bert::BertWeights::forward_batch
fn swapped_embeddings(
    model: &TextModel,
    texts: &[&[u32]],
    config: &ExperimentConfig,
    swap: &Swap,
    draw: usize,
) -> Result<Vec<Vec<f32>>, ModelError> {
    let registry = registry_of(swap, config, model.weights.config.head_dim());
    let mut replace = replacement_of(swap, registry.as_ref(), draw, LinearForm::Bidirectional);
    let forwards = model.weights.forward_batch(texts, Some(&mut replace))?;
    Ok(forwards.into_iter().map(|f| f.embedding).collect())
}

/// Multiply-adds of one forward's swapped heads: the method's, and softmax's in the same heads.
fn attention_cost(
    swap: &Swap,
    config: &ExperimentConfig,
    len: usize,
    model: &TextModel,
) -> (f64, f64) {
    let c = &model.weights.config;
    let (dh, heads) = (
        c.head_dim(),
        (c.num_attention_heads * swap.layers.len()) as f64,
    );
    let softmax = crate::lab::config::softmax_work(len, dh, dh);
    let method = match &swap.method {
        SwapMethod::Registry(m) => config.attention.output_work(*m, len, dh, dh),
        SwapMethod::Learned(maps) => maps.multiply_adds(len, dh),
    };
    (heads * method, heads * softmax)
}

/// The method's budget m shown beside its results: the random projections of a method that
/// has them, the learned maps' features.
fn features_of(swap: &Swap, config: &ExperimentConfig) -> Option<usize> {
    match &swap.method {
        SwapMethod::Registry(m) => crate::lab::models::swap_plan::uses_features(config, *m)
            .then_some(config.attention.features),
        SwapMethod::Learned(maps) => Some(maps.features()),
    }
}

/// The exact model on one text, what every swap of that text is compared with: its tokens
/// (cut to 512), its forward with every layer kept, and that forward's measured time. The
/// model worker keeps the last one, so the jobs of one plan do not run it again.
#[derive(Clone, Debug)]
pub struct ExactRun {
    pub text: String,
    ids: Vec<u32>,
    forward: Forward,
    /// Layer 0's projections, the same for every forward of the text (each swapped forward
    /// takes them instead of computing them).
    first_projections: Vec<f32>,
    ms: f64,
}

/// The exact run of `text`; `now` is a clock in milliseconds.
pub fn exact_run(model: &TextModel, text: &str, now: fn() -> f64) -> Result<ExactRun, ModelError> {
    let ids = model.tokenizer.encode(text, MODEL_MAX_TOKENS)?.ids;
    Ok(exact_keeping(model, text, &ids, false, now)?.0)
}

/// The exact run of a text's answer, from the answer's own forward, and the heads' projections
/// that forward also kept (`[layer][head][q, k, v][token][dim]`, [`Forward::qkv`]): the worker
/// that runs a text then starts its swap without running the text again (the same forward as
/// [`exact_run`]'s, bit for bit: test).
pub fn forward_with_exact(
    model: &TextModel,
    text: &str,
    ids: &[u32],
    now: fn() -> f64,
) -> Result<(ExactRun, Vec<f32>), ModelError> {
    let (exact, qkv) = exact_keeping(model, text, ids, true, now)?;
    Ok((exact, qkv.unwrap_or_default()))
}

/// The exact run of `ids` (every layer's states and layer 0's projections kept), and with
/// `qkv` every head's projections, taken out of it.
fn exact_keeping(
    model: &TextModel,
    text: &str,
    ids: &[u32],
    qkv: bool,
    now: fn() -> f64,
) -> Result<(ExactRun, Option<Vec<f32>>), ModelError> {
    let start = now();
    let keep = Keep { qkv, layers: true };
    let (mut forward, first_projections) =
        model.weights.forward_from_first(ids, keep, None, None)?;
    let ms = now() - start;
    let qkv = forward.qkv.take();
    let exact = ExactRun {
        text: text.to_string(),
        ids: ids.to_vec(),
        forward,
        first_projections,
        ms,
    };
    Ok((exact, qkv))
}

impl ExactRun {
    /// The exact run of `text` (tokens `ids`) from a forward of it that kept every layer's
    /// states and from layer 0's projections (`L × 3·hidden`), made elsewhere (a text's
    /// forward split over the workers, joined: [`crate::lab::models::split::TextPart`]); `ms`
    /// the forward's time.
    pub fn from_forward(
        text: &str,
        ids: &[u32],
        forward: Forward,
        first_projections: Vec<f32>,
        ms: f64,
    ) -> Self {
        ExactRun {
            text: text.to_string(),
            ids: ids.to_vec(),
            forward,
            first_projections,
            ms,
        }
    }

    /// The exact sentence embedding.
    pub fn embedding(&self) -> &[f32] {
        &self.forward.embedding
    }
}

/// What `swap` does to `text` (cut to 512 tokens); `now` is a clock in milliseconds, for the
/// forwards' measured times.
pub fn swap_report(
    model: &TextModel,
    text: &str,
    config: &ExperimentConfig,
    swap: &Swap,
    now: fn() -> f64,
) -> Result<SwapReport, ModelError> {
    swap_report_on(model, &exact_run(model, text, now)?, config, swap, now)
}

/// [`swap_report`] against a text's exact run already computed.
pub fn swap_report_on(
    model: &TextModel,
    exact_run: &ExactRun,
    config: &ExperimentConfig,
    swap: &Swap,
    now: fn() -> f64,
) -> Result<SwapReport, ModelError> {
    let (exact, exact_forward_ms) = (&exact_run.forward, exact_run.ms);
    let exact_layers = exact.layers.as_deref().unwrap_or_default();
    let draws = swap.draws_run();
    let mut cosines = Vec::new();
    let mut movements = vec![(Vec::new(), Vec::new()); exact_layers.len()];
    let mut failure = None;
    let swapped_start = now();
    for draw in 0..draws {
        match swapped_forward(model, exact_run, config, swap, (draw, true)) {
            Ok(forward) => {
                cosines.push(cosine(&forward.embedding, &exact.embedding));
                for ((a, h), (mine, theirs)) in movements.iter_mut().zip(
                    forward
                        .layers
                        .as_deref()
                        .unwrap_or_default()
                        .iter()
                        .zip(exact_layers),
                ) {
                    a.push(relative(&mine.attention, &theirs.attention));
                    h.push(relative(&mine.hidden, &theirs.hidden));
                }
            }
            Err(ModelError::Replacement(reason)) => {
                failure.get_or_insert(reason);
            }
            Err(other) => return Err(other),
        }
    }
    let forward_ms = (now() - swapped_start) / draws as f64;
    let len = exact_run.ids.len();
    let (attention_multiply_adds, softmax_multiply_adds) = attention_cost(swap, config, len, model);
    let per_layer = movements
        .iter()
        .enumerate()
        .filter_map(|(layer, (a, h))| {
            Some(LayerMovement {
                layer,
                swapped: swap.layers.contains(&layer),
                attention_error: Spread::of(a)?,
                hidden_drift: Spread::of(h)?,
            })
        })
        .collect();
    Ok(SwapReport {
        method: swap.method.id().to_string(),
        label: swap.method.label().to_string(),
        features: features_of(swap, config),
        layers: swap.layers.clone(),
        tokens: len,
        draws,
        failed_draws: draws - cosines.len(),
        failure,
        per_layer,
        cosine: Spread::of(&cosines),
        cost: SwapCost {
            forward_ms,
            exact_forward_ms,
            attention_multiply_adds,
            softmax_multiply_adds,
            model_multiply_adds: model.weights.forward_multiply_adds(len) as f64,
        },
    })
}

pub use crate::lab::config::{RETRIEVAL_CANDIDATES, RETRIEVAL_QUERY};

/// The candidates ranked by cosine to the query.
fn ranking_of(query: &[f32], candidates: &[Vec<f32>]) -> Ranking {
    let cosines: Vec<f64> = candidates.iter().map(|c| cosine(query, c)).collect();
    let mut order: Vec<usize> = (0..cosines.len()).collect();
    order.sort_by(|&a, &b| cosines[b].total_cmp(&cosines[a]));
    Ranking { order, cosines }
}

/// Kendall's τ between two score lists (τ-a: pairs tied in either count as neither).
pub fn kendall_tau(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (mut concordant, mut discordant) = (0i64, 0i64);
    for i in 0..n {
        for j in i + 1..n {
            let s = (a[i] - a[j]).signum() * (b[i] - b[j]).signum();
            if s > 0.0 {
                concordant += 1;
            } else if s < 0.0 {
                discordant += 1;
            }
        }
    }
    let pairs = (n * n.saturating_sub(1) / 2).max(1) as f64;
    (concordant - discordant) as f64 / pairs
}

/// The exact model on a retrieval set, what every method's retrieval of that set is compared
/// with: the texts' tokens (query first) and exact embeddings. A worker that keeps it runs
/// the exact forwards once per set instead of once per method.
#[derive(Clone, Debug)]
pub struct ExactRetrieval {
    pub query: String,
    pub candidates: Vec<String>,
    ids: Vec<Vec<u32>>,
    ranking: Ranking,
}

impl ExactRetrieval {
    /// The candidates ranked by the exact model.
    pub fn ranking(&self) -> &Ranking {
        &self.ranking
    }
}

/// The exact run of a retrieval set.
pub fn exact_retrieval(
    model: &TextModel,
    query: &str,
    candidates: &[&str],
) -> Result<ExactRetrieval, ModelError> {
    let texts: Vec<&str> = std::iter::once(query)
        .chain(candidates.iter().copied())
        .collect();
    let ids = texts
        .iter()
        .map(|t| Ok(model.tokenizer.encode(t, MODEL_MAX_TOKENS)?.ids))
        .collect::<Result<Vec<_>, ModelError>>()?;
    let texts: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
    let exact: Vec<Vec<f32>> = model
        .weights
        .forward_batch(&texts, None)?
        .into_iter()
        .map(|f| f.embedding)
        .collect();
    Ok(ExactRetrieval {
        query: query.to_string(),
        candidates: candidates.iter().map(|c| c.to_string()).collect(),
        ranking: ranking_of(&exact[0], &exact[1..]),
        ids,
    })
}

/// Ranks `candidates` by cosine to `query`, exactly and with `swap` (query and candidates both
/// through the swapped model).
pub fn retrieval_report(
    model: &TextModel,
    query: &str,
    candidates: &[&str],
    config: &ExperimentConfig,
    swap: &Swap,
) -> Result<RetrievalReport, ModelError> {
    let exact = exact_retrieval(model, query, candidates)?;
    retrieval_report_on(model, &exact, config, swap)
}

/// [`retrieval_report`] against a retrieval set's exact run already computed.
pub fn retrieval_report_on(
    model: &TextModel,
    exact: &ExactRetrieval,
    config: &ExperimentConfig,
    swap: &Swap,
) -> Result<RetrievalReport, ModelError> {
    let (ids, exact_ranking) = (&exact.ids, exact.ranking.clone());
    let draws = swap.draws_run();
    let mut rankings = Vec::new();
    let mut failure = None;
    let texts: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
    for draw in 0..draws {
        match swapped_embeddings(model, &texts, config, swap, draw) {
            Ok(e) => rankings.push(ranking_of(&e[0], &e[1..])),
            Err(ModelError::Replacement(reason)) => {
                failure.get_or_insert(reason);
            }
            Err(other) => return Err(other),
        }
    }
    let taus: Vec<f64> = rankings
        .iter()
        .map(|r| kendall_tau(&r.cosines, &exact_ranking.cosines))
        .collect();
    let kept = rankings
        .iter()
        .filter(|r| r.order.first() == exact_ranking.order.first())
        .count();
    Ok(RetrievalReport {
        method: swap.method.id().to_string(),
        layers: swap.layers.clone(),
        query: exact.query.clone(),
        candidates: exact.candidates.clone(),
        exact: exact_ranking,
        top1_kept: (!rankings.is_empty()).then(|| kept as f64 / rankings.len() as f64),
        kendall_tau: Spread::of(&taus),
        approximate: rankings.into_iter().next(),
        draws,
        failed_draws: draws - taus.len(),
        failure,
        origin: Origin::Computed,
    })
}

/// The swap a job names: its method (the registry's, or the Hedgehog maps `learned`, which a
/// job of [`HEDGEHOG`] needs) in its layers, with its draws (1 to [`MAX_SWAP_DRAWS`]).
pub fn swap_of_job(job: &SwapJob, learned: Option<Arc<LearnedMaps>>) -> Result<Swap, String> {
    if let Some(layer) = job.layers.iter().find(|&&l| l >= HEAD_LAYERS) {
        return Err(format!(
            "the model has layers 0 to {} (got {layer})",
            HEAD_LAYERS - 1
        ));
    }
    job.config.validate().map_err(|e| e.to_string())?;
    let method = if job.method == HEDGEHOG {
        SwapMethod::Learned(
            learned.ok_or_else(|| "the Hedgehog maps are not trained yet".to_string())?,
        )
    } else {
        SwapMethod::Registry(
            MethodId::from_id(&job.method)
                .ok_or_else(|| format!("no attention method {}", job.method))?,
        )
    };
    Ok(Swap {
        method,
        layers: job.layers.clone(),
        draws: job.draws.clamp(1, MAX_SWAP_DRAWS),
    })
}
