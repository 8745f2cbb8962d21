//! What the causal model says about a text: its tokens, each token's loss in nats (how
//! surprised the model is by it, given the tokens before), the perplexity `exp(mean loss)`, each
//! position's most likely next tokens; and the same with a method of the registry replacing
//! softmax in the chosen layers, causally (each query sees its own and earlier keys only), over
//! several draws of a random method.

use super::protocol::{
    LM_MAX_TOKENS, LmLayerBar, LmLayerReport, LmReport, LmSwapDraw, LmSwapReport, NextToken,
    TOP_TOKENS,
};
use super::protocol::{LmJob, Share};
use super::sweep::LayerSweep;
use crate::lab::config::{ExperimentConfig, MAX_TEXT_BYTES, MODEL_MAX_TOKENS};
use crate::lab::models::head_swap::{
    RegistryContext, Swap, SwapMethod, registry_of, replacement_of,
};
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

/// What the page's worker answers for `job`: the text under exact attention (its swap, if
/// any, comes draw by draw from [`swap_draw`], on both of the page's workers), and the exact run
/// (kept by the worker for the per-layer chart of the same text).
pub fn score(
    model: &LlamaModel,
    job: &LmJob,
    now: fn() -> f64,
) -> Result<(LmReport, ExactRun), LmError> {
    let ids = lm_tokens(model, &job.text)?;
    let start = now();
    let exact = model.exact_run(&ids, TOP_TOKENS)?;
    let forward_ms = now() - start;
    let report = report_of(
        model,
        &job.text,
        &exact,
        &job.config,
        None,
        (forward_ms, now),
    )?;
    Ok((report, exact))
}

/// The report of `job`'s text from its exact run (computed in `forward_ms`, by one worker or
/// split over several): what [`score`] answers.
pub fn report_of_run(
    model: &LlamaModel,
    job: &LmJob,
    exact: &ExactRun,
    (forward_ms, now): (f64, fn() -> f64),
) -> Result<LmReport, LmError> {
    report_of(
        model,
        &job.text,
        exact,
        &job.config,
        None,
        (forward_ms, now),
    )
}

/// Draw `draw` of `job`'s swap on its text (`Ok` with the draw's failure when the method could
/// not run; `Err` when the text cannot be scored or the job has no method). `exact`, the
/// worker's kept exact run, saves the layers before the first swapped one when it is this
/// text's (the answer is the same bit for bit either way).
pub fn swap_draw(
    model: &LlamaModel,
    job: &LmJob,
    draw: usize,
    now: fn() -> f64,
    exact: Option<&ExactRun>,
) -> Result<LmSwapDraw, LmError> {
    let ids = lm_tokens(model, &job.text)?;
    let swap = swap_of(&job.config)
        .ok_or_else(|| LmError::Replacement("no method is chosen to swap in".into()))?;
    let registry = registry_of(&swap, &job.config, model.config.head_dim);
    one_draw(model, &ids, (&swap, registry.as_ref()), (draw, exact), now)
}

/// One forward of `ids` with draw `draw` of `swap` (its registry context prepared once per
/// swap); draw 0 keeps each position's next tokens. With `exact`, the exact run of the same
/// ids, the forward starts from its hidden states entering the first swapped layer: the layers
/// before it are softmax whatever the swap, so only their cost is saved.
fn one_draw(
    model: &LlamaModel,
    ids: &[u32],
    (swap, registry): (&Swap, Option<&RegistryContext>),
    (draw, exact): (usize, Option<&ExactRun>),
    now: fn() -> f64,
) -> Result<LmSwapDraw, LmError> {
    let start = now();
    let mut replace = replacement_of(swap, registry, draw, LinearForm::CausalChunked);
    let keep_top = if draw == 0 { TOP_TOKENS } else { 0 };
    let first_swapped = swap.layers.iter().copied().min().unwrap_or(0);
    let kept = exact
        .filter(|run| run.ids == ids)
        .and_then(|run| Some((run.states.get(first_swapped)?, &run.rope)));
    let scores = match kept {
        Some((entering, rope)) => model.finish(
            first_swapped,
            (entering.clone(), rope),
            ids,
            keep_top,
            Some(&mut replace),
        ),
        None => model.forward(ids, keep_top, Some(&mut replace)),
    };
    draw_of_scores(model, draw, scores, now() - start)
}

/// Draw `draw`'s answer from its forward's scores (`Ok` with the draw's failure when the
/// method could not run), which took `forward_ms`.
pub(super) fn draw_of_scores(
    model: &LlamaModel,
    draw: usize,
    scores: Result<LmScores, LmError>,
    forward_ms: f64,
) -> Result<LmSwapDraw, LmError> {
    let (losses, perplexity, failure, top) = match scores {
        Ok(scores) => {
            let top = next_tokens(model, &scores);
            (scores.losses.clone(), scores.perplexity(), None, top)
        }
        Err(LmError::Replacement(reason)) => (Vec::new(), None, Some(reason), Vec::new()),
        Err(other) => return Err(other),
    };
    Ok(LmSwapDraw {
        workers: 1,
        draw,
        losses,
        // A text of two tokens or more always has a loss; NaN marks a non-finite forward.
        perplexity: failure.is_none().then(|| perplexity.unwrap_or(f64::NAN)),
        failure,
        top,
        forward_ms,
    })
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
        .map(|swap| swap_report(model, exact, config, swap, now))
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

/// `exact`'s text under `swap`, every draw of a random method, one after the other, each from
/// the exact states entering the first swapped layer (the page hands the draws to its two
/// workers and gathers them with the same [`LmSwapReport::from_draws`]).
fn swap_report(
    model: &LlamaModel,
    exact: &ExactRun,
    config: &ExperimentConfig,
    swap: &Swap,
    now: fn() -> f64,
) -> Result<LmSwapReport, LmError> {
    let draws = swap.draws_run();
    let registry = registry_of(swap, config, model.config.head_dim);
    let received = (0..draws)
        .map(|draw| {
            let draw_of = (draw, Some(exact));
            one_draw(model, &exact.ids, (swap, registry.as_ref()), draw_of, now)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(LmSwapReport::from_draws(
        (swap.method.id(), swap.method.label()),
        &swap.layers,
        draws,
        &received,
    ))
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
