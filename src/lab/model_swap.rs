//! Approximate attention inside the model: every head of the chosen layers of all-MiniLM-L6-v2
//! runs one of the lab's attention methods instead of softmax, the forward goes on with the
//! approximated outputs, and the other layers stay exact. What moves ([`swap_report`]): per
//! layer, the attention outputs and the hidden states against the exact model's same layer
//! (relative Frobenius norm of the difference); the sentence embedding's cosine to the exact
//! one, over several draws of a random method. And the task the model exists for
//! ([`retrieval_report`]): a query and candidates ranked by cosine, exactly and with the method
//! (top-1 kept, Kendall's τ).
//!
//! A method sees each head as the attention view sees a real head: the raw projections with the
//! model's scaling `q/dh^{1/4}`, `k/dh^{1/4}`, the configuration's settings (m, coupling,
//! degree, landmarks, window, top-k, …), and a stream of its own per (draw, layer, head).

use serde::Serialize;

use crate::lab::attention::methods::{lln_constants, method_settings, prepare, run_with};
use crate::lab::config::{ExperimentConfig, MODEL_MAX_TOKENS};
use crate::lab::text_model::TextModel;
use crate::numerics::attention::AttentionError;
use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::method::MethodId;
use crate::numerics::bert::{Forward, HeadInputs, Keep, ModelError};

/// What is swapped in, where, and how often it is drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct Swap {
    pub method: MethodId,
    /// The layers whose every head runs the method (the others keep softmax).
    pub layers: Vec<usize>,
    /// Independent draws of a random method (a deterministic one is run once).
    pub draws: usize,
}

/// Mean, standard deviation and extremes of a quantity over draws.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub mean: f64,
    pub sd: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let sd = if values.len() > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Some(Spread {
            mean,
            sd,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

/// One layer's movement against the exact model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayerMovement {
    pub layer: usize,
    /// Whether this layer's heads ran the method (else softmax, on drifted inputs).
    pub swapped: bool,
    /// `‖A − A*‖_F / ‖A*‖_F` of the heads' outputs side by side.
    pub attention_error: Spread,
    /// `‖H − H*‖_F / ‖H*‖_F` of the layer's output hidden states.
    pub hidden_drift: Spread,
}

/// What a swap does to one text.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SwapReport {
    pub method: &'static str,
    pub label: &'static str,
    pub layers: Vec<usize>,
    pub tokens: usize,
    pub draws: usize,
    /// Draws whose forward could not go on (a row with an unusable denominator), and why.
    pub failed_draws: usize,
    pub failure: Option<String>,
    pub per_layer: Vec<LayerMovement>,
    /// Cosine of the sentence embedding to the exact model's, over the draws that went through.
    pub cosine: Option<Spread>,
}

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

/// The method's output for one head, or why it has none.
fn approximate(
    swap: &Swap,
    config: &ExperimentConfig,
    draw: usize,
    head: &HeadInputs,
) -> Result<Vec<f32>, String> {
    let scale = (head.dim as f64).powf(-0.25);
    let widen = |v: &[f32], s: f64| v.iter().map(|x| f64::from(*x) * s).collect::<Vec<f64>>();
    let data = AttentionData::new(
        head.len,
        head.dim,
        head.dim,
        widen(head.q, scale),
        widen(head.k, scale),
        widen(head.v, 1.0),
    )
    .map_err(|e| e.to_string())?;
    let describe = |e: AttentionError| format!("layer {} head {}: {e}", head.layer, head.head);
    let mut one = config.clone();
    one.attention.methods = vec![swap.method];
    let lln = lln_constants(&one, head.dim).map_err(describe)?;
    let prepared = prepare(swap.method, &data, config, lln.as_ref()).map_err(describe)?;
    // A stream per (draw, layer, head): 72 heads share no draw.
    let stream = (draw * 1_000 + head.layer * 100 + head.head) as u64;
    let run = run_with(
        swap.method,
        &prepared,
        &data,
        &method_settings(config),
        config.seed,
        stream,
        &[],
    )
    .map_err(describe)?;
    let output = run.attention.output;
    if let Some(row) = output
        .chunks_exact(head.dim)
        .position(|r| r.iter().any(|x| !x.is_finite()))
    {
        return Err(format!(
            "layer {} head {}: row {row} of {} has no usable normaliser (the estimated sum of \
             its weights is ≤ 0 or not finite), so the forward cannot go on",
            head.layer,
            head.head,
            swap.method.id()
        ));
    }
    Ok(output.iter().map(|x| *x as f32).collect())
}

/// The forward with `swap` in place, draw `draw`.
fn swapped_forward(
    model: &TextModel,
    ids: &[u32],
    config: &ExperimentConfig,
    swap: &Swap,
    draw: usize,
) -> Result<Forward, ModelError> {
    let mut replace = |head: &HeadInputs| {
        swap.layers
            .contains(&head.layer)
            .then(|| approximate(swap, config, draw, head))
    };
    model.weights.forward_with(
        ids,
        Keep {
            qkv: false,
            layers: true,
        },
        Some(&mut replace),
    )
}

fn draws_of(swap: &Swap) -> usize {
    if swap.method.is_random() {
        swap.draws.max(1)
    } else {
        1
    }
}

/// What `swap` does to `text` (cut to 512 tokens).
pub fn swap_report(
    model: &TextModel,
    text: &str,
    config: &ExperimentConfig,
    swap: &Swap,
) -> Result<SwapReport, ModelError> {
    let encoded = model.tokenizer.encode(text, MODEL_MAX_TOKENS)?;
    let exact = model.weights.forward_with(
        &encoded.ids,
        Keep {
            qkv: false,
            layers: true,
        },
        None,
    )?;
    let exact_layers = exact.layers.as_deref().unwrap_or_default();
    let draws = draws_of(swap);
    let mut cosines = Vec::new();
    let mut movements = vec![(Vec::new(), Vec::new()); exact_layers.len()];
    let mut failure = None;
    for draw in 0..draws {
        match swapped_forward(model, &encoded.ids, config, swap, draw) {
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
        method: swap.method.id(),
        label: swap.method.label(),
        layers: swap.layers.clone(),
        tokens: encoded.ids.len(),
        draws,
        failed_draws: draws - cosines.len(),
        failure,
        per_layer,
        cosine: Spread::of(&cosines),
    })
}

/// The retrieval preset: a query, then candidates (paraphrases of it first, then sentences on
/// nearby topics, then distractors). Written for this project.
pub const RETRIEVAL_QUERY: &str = "How does a transformer decide which words to attend to?";
pub const RETRIEVAL_CANDIDATES: [&str; 10] = [
    "A transformer compares each query with every key to weight the words it attends to.",
    "Attention scores come from dot products of queries and keys, normalised by a softmax.",
    "Which words a transformer focuses on is decided by its attention weights.",
    "Random features approximate the softmax kernel so attention costs linear time.",
    "Linear attention replaces the exponential kernel with a product of feature maps.",
    "Sentence embeddings are the mean of the last hidden states, normalised to length one.",
    "The recipe needs two eggs, a cup of flour and a pinch of salt.",
    "The train to the coast leaves at seven in the morning.",
    "Our cat sleeps on the windowsill when the sun is out.",
    "Stock markets fell sharply after the announcement on interest rates.",
];

/// One ranking of the candidates: their indices, most similar to the query first, with cosines.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ranking {
    pub order: Vec<usize>,
    pub cosines: Vec<f64>,
}

impl Ranking {
    fn of(query: &[f32], candidates: &[Vec<f32>]) -> Ranking {
        let cosines: Vec<f64> = candidates.iter().map(|c| cosine(query, c)).collect();
        let mut order: Vec<usize> = (0..cosines.len()).collect();
        order.sort_by(|&a, &b| cosines[b].total_cmp(&cosines[a]));
        Ranking { order, cosines }
    }
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

/// The retrieval set ranked exactly and with `swap`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RetrievalReport {
    pub method: &'static str,
    pub layers: Vec<usize>,
    pub query: String,
    pub candidates: Vec<String>,
    pub exact: Ranking,
    /// The first draw's ranking (when a draw went through).
    pub approximate: Option<Ranking>,
    pub draws: usize,
    pub failed_draws: usize,
    pub failure: Option<String>,
    /// Share of draws whose best candidate is the exact model's.
    pub top1_kept: Option<f64>,
    /// Kendall's τ of each draw's cosines against the exact ones.
    pub kendall_tau: Option<Spread>,
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
    let texts: Vec<&str> = std::iter::once(query)
        .chain(candidates.iter().copied())
        .collect();
    let ids = texts
        .iter()
        .map(|t| Ok(model.tokenizer.encode(t, MODEL_MAX_TOKENS)?.ids))
        .collect::<Result<Vec<_>, ModelError>>()?;
    let exact: Vec<Vec<f32>> = ids
        .iter()
        .map(|i| Ok(model.weights.forward(i, false)?.embedding))
        .collect::<Result<_, ModelError>>()?;
    let exact_ranking = Ranking::of(&exact[0], &exact[1..]);
    let draws = draws_of(swap);
    let mut rankings = Vec::new();
    let mut failure = None;
    for draw in 0..draws {
        let embedded: Result<Vec<Vec<f32>>, ModelError> = ids
            .iter()
            .map(|i| Ok(swapped_forward(model, i, config, swap, draw)?.embedding))
            .collect();
        match embedded {
            Ok(e) => rankings.push(Ranking::of(&e[0], &e[1..])),
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
        method: swap.method.id(),
        layers: swap.layers.clone(),
        query: query.to_string(),
        candidates: candidates.iter().map(|c| c.to_string()).collect(),
        exact: exact_ranking,
        top1_kept: (!rankings.is_empty()).then(|| kept as f64 / rankings.len() as f64),
        kendall_tau: Spread::of(&taus),
        approximate: rankings.into_iter().next(),
        draws,
        failed_draws: draws - taus.len(),
        failure,
    })
}
