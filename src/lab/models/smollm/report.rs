//! What the causal model says about a text: its tokens, each token's loss in nats (how
//! surprised the model is by it, given the tokens before), the perplexity `exp(mean loss)`, each
//! position's most likely next tokens; and the same with a method of the registry replacing
//! softmax in the chosen layers, causally (each query sees its own and earlier keys only), over
//! several draws of a random method.

use super::protocol::{
    LM_MAX_TOKENS, LmLayerBar, LmLayerReport, LmReport, LmSwapReport, NextToken, TOP_TOKENS,
};
use super::protocol::{LmJob, Share};
use super::sweep::LayerSweep;
use crate::lab::config::{ExperimentConfig, MAX_TEXT_BYTES, MODEL_MAX_TOKENS};
use crate::lab::models::head_swap::{Swap, SwapMethod, registry_of, replacement_of};
use crate::lab::models::protocol::Spread;
use crate::numerics::attention::long::LinearForm;
use crate::numerics::llama::{ExactRun, LlamaModel, LmError, LmHeads, LmScores};

/// The swap a configuration names: its `lmmethod` in its `lmlayers`, `swapdraws` draws of a
/// random method; `None` when the method is `none`.
pub fn swap_of(config: &ExperimentConfig) -> Option<Swap> {
    let a = &config.attention;
    a.lm_method.map(|method| Swap {
        method: SwapMethod::Registry(method),
        layers: a.lm_layers.clone(),
        draws: a.swap_draws,
    })
}

/// What the page's worker answers for `job`: [`lm_report`] with the job's swap, and the exact
/// run it made (kept by the worker for the per-layer chart of the same text).
pub fn score(
    model: &LlamaModel,
    job: &LmJob,
    now: fn() -> f64,
) -> Result<(LmReport, ExactRun), LmError> {
    let ids = lm_tokens(model, &job.text)?;
    let start = now();
    let exact = model.exact_run(&ids, TOP_TOKENS)?;
    let forward_ms = now() - start;
    let swap = swap_of(&job.config);
    let report = report_of(
        model,
        &job.text,
        &exact,
        &job.config,
        swap.as_ref(),
        (forward_ms, now),
    )?;
    Ok((report, exact))
}

/// The text's ids, at least one: a text over [`MAX_TEXT_BYTES`] is refused before tokenising.
fn text_ids(model: &LlamaModel, text: &str) -> Result<Vec<u32>, LmError> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(LmError::TextTooLong {
            bytes: text.len(),
            limit: MAX_TEXT_BYTES,
        });
    }
    let ids = model.tokenizer.encode(text)?;
    if ids.is_empty() {
        return Err(LmError::NoTokens);
    }
    Ok(ids)
}

/// The text's ids, or why the model cannot score it.
pub fn lm_tokens(model: &LlamaModel, text: &str) -> Result<Vec<u32>, LmError> {
    let ids = text_ids(model, text)?;
    match ids.len() {
        1 => Err(LmError::OneToken),
        n if n > LM_MAX_TOKENS => Err(LmError::TooManyTokens {
            tokens: n,
            limit: LM_MAX_TOKENS,
        }),
        _ => Ok(ids),
    }
}

/// The most tokens of a text whose heads the attention view reads (as the encoder's 512):
/// a longer text's heads are its first 512 tokens'.
pub const LM_HEAD_TOKENS: usize = MODEL_MAX_TOKENS;

/// Every head of the model on `text` (its first [`LM_HEAD_TOKENS`] tokens), for the attention
/// view's source `lm`; an empty text, or one over [`MAX_TEXT_BYTES`], is refused.
pub fn lm_heads(model: &LlamaModel, text: &str) -> Result<LmHeads, LmError> {
    let mut ids = text_ids(model, text)?;
    ids.truncate(LM_HEAD_TOKENS);
    let pieces = ids.iter().map(|&id| model.tokenizer.piece(id)).collect();
    model.heads(&ids, pieces)
}

/// The report of `text`, with `swap` when given (its method's settings from `config`); `now`
/// is a clock in milliseconds.
pub fn lm_report(
    model: &LlamaModel,
    text: &str,
    config: &ExperimentConfig,
    swap: Option<&Swap>,
    now: fn() -> f64,
) -> Result<LmReport, LmError> {
    let ids = lm_tokens(model, text)?;
    let start = now();
    let exact = model.exact_run(&ids, TOP_TOKENS)?;
    let forward_ms = now() - start;
    report_of(model, text, &exact, config, swap, (forward_ms, now))
}

/// The report of an exact run (which took `forward_ms`), and of `swap` on its text.
fn report_of(
    model: &LlamaModel,
    text: &str,
    exact: &ExactRun,
    config: &ExperimentConfig,
    swap: Option<&Swap>,
    (forward_ms, now): (f64, fn() -> f64),
) -> Result<LmReport, LmError> {
    let ids = &exact.ids;
    let swap = swap
        .map(|swap| swap_report(model, ids, config, swap, now))
        .transpose()?;
    Ok(LmReport {
        text: text.to_string(),
        pieces: ids.iter().map(|&id| model.tokenizer.piece(id)).collect(),
        perplexity: exact.scores.perplexity().unwrap_or(f64::NAN),
        top: next_tokens(model, &exact.scores),
        losses: exact.scores.losses.clone(),
        multiply_adds: model.config.forward_multiply_adds(ids.len()),
        forward_ms,
        swap,
        ids: ids.clone(),
    })
}

fn next_tokens(model: &LlamaModel, scores: &LmScores) -> Vec<Vec<NextToken>> {
    scores
        .predictions
        .iter()
        .map(|p| {
            p.top
                .iter()
                .map(|&(id, logprob)| NextToken {
                    id,
                    piece: model.tokenizer.piece(id),
                    logprob,
                })
                .collect()
        })
        .collect()
}

/// `ids` under `swap`, every draw of a random method.
fn swap_report(
    model: &LlamaModel,
    ids: &[u32],
    config: &ExperimentConfig,
    swap: &Swap,
    now: fn() -> f64,
) -> Result<LmSwapReport, LmError> {
    let draws = if swap.method.is_random() {
        swap.draws.max(1)
    } else {
        1
    };
    let registry = registry_of(swap, config, model.config.head_dim);
    let mut sums = vec![0.0f64; ids.len() - 1];
    let (mut perplexities, mut top, mut failure) = (Vec::new(), Vec::new(), None);
    let start = now();
    for draw in 0..draws {
        let mut replace = replacement_of(swap, registry.as_ref(), draw, LinearForm::CausalChunked);
        let keep_top = if draw == 0 { TOP_TOKENS } else { 0 };
        match model.forward(ids, keep_top, Some(&mut replace)) {
            Ok(scores) => {
                for (s, l) in sums.iter_mut().zip(&scores.losses) {
                    *s += l;
                }
                perplexities.push(scores.perplexity().unwrap_or(f64::NAN));
                if draw == 0 {
                    top = next_tokens(model, &scores);
                }
            }
            Err(LmError::Replacement(reason)) => {
                failure.get_or_insert(reason);
            }
            Err(other) => return Err(other),
        }
    }
    let ran = perplexities.len();
    Ok(LmSwapReport {
        method: swap.method.id().to_string(),
        label: swap.method.label().to_string(),
        layers: swap.layers.clone(),
        draws,
        failed_draws: draws - ran,
        failure,
        losses: if ran > 0 {
            sums.iter().map(|s| s / ran as f64).collect()
        } else {
            Vec::new()
        },
        perplexity: Spread::of(&perplexities),
        top,
        forward_ms: (now() - start) / draws as f64,
    })
}

/// Perplexity of `text` with the swap's method in each of `swap.layers` alone (the others
/// softmax), over the swap's draws of a random method ([`LayerSweep`]: the exact states
/// entering each layer reused, deepest layer first). `on_bar` sees each bar as it is known.
pub fn per_layer_report(
    model: &LlamaModel,
    text: &str,
    config: &ExperimentConfig,
    swap: &Swap,
    on_bar: &mut dyn FnMut(&LmLayerBar),
) -> Result<LmLayerReport, LmError> {
    let ids = lm_tokens(model, text)?;
    let exact = model.exact_run(&ids, 0)?;
    let mut sweep = LayerSweep::new(model, config, swap, Share::ALL);
    while !sweep.is_done() {
        if let Some(bar) = sweep.step(model, &exact)?.filter(|b| b.complete) {
            on_bar(&bar);
        }
    }
    Ok(sweep.into_report(&exact))
}
