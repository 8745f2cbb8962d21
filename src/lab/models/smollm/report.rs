//! What the causal model says about a text: its tokens, each token's loss in nats (how
//! surprised the model is by it, given the tokens before), the perplexity `exp(mean loss)`, each
//! position's most likely next tokens; and the same with a method of the registry replacing
//! softmax in the chosen layers, causally (each query sees its own and earlier keys only), over
//! several draws of a random method.

use serde::{Deserialize, Serialize};

use crate::lab::config::ExperimentConfig;
use crate::lab::models::head_swap::{Swap, registry_of, replacement_of};
use crate::lab::models::protocol::Spread;
use crate::numerics::attention::long::LinearForm;
use crate::numerics::llama::{LlamaModel, LmError, LmScores};

/// Tokens of the reader's text the model reads at most (its context is 8,192; the page's
/// budget is a second's forward on a laptop).
pub const LM_MAX_TOKENS: usize = 1024;
/// Bytes of text accepted before tokenising (a pasted book is refused, not tokenised).
pub const LM_MAX_TEXT_BYTES: usize = 100_000;
/// Next tokens kept per position.
pub const TOP_TOKENS: usize = 5;

/// One candidate next token.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NextToken {
    pub id: u32,
    /// Its text as the reader sees it.
    pub piece: String,
    /// Its log-probability in nats.
    pub logprob: f64,
}

/// The text under a swap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LmSwapReport {
    pub method: String,
    pub label: String,
    pub layers: Vec<usize>,
    /// Draws asked for (1 for a deterministic method) and draws that failed (a row whose
    /// estimated normaliser is not positive cannot go on).
    pub draws: usize,
    pub failed_draws: usize,
    pub failure: Option<String>,
    /// Each token's loss, the mean over the draws that ran.
    pub losses: Vec<f64>,
    /// The perplexity of each draw, summarised.
    pub perplexity: Option<Spread>,
    /// The first draw's next tokens per position.
    pub top: Vec<Vec<NextToken>>,
    pub forward_ms: f64,
}

/// What `kernel-lab lm` prints and the view shows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LmReport {
    pub text: String,
    pub ids: Vec<u32>,
    /// Each token's text as the reader sees it.
    pub pieces: Vec<String>,
    /// `losses[t]`: the loss of token `t + 1` in nats (the first token has none).
    pub losses: Vec<f64>,
    pub perplexity: f64,
    /// Per position, the most likely next tokens under exact attention.
    pub top: Vec<Vec<NextToken>>,
    pub multiply_adds: f64,
    pub forward_ms: f64,
    pub swap: Option<LmSwapReport>,
}

/// The text's ids, or why the model cannot score it.
pub fn lm_tokens(model: &LlamaModel, text: &str) -> Result<Vec<u32>, LmError> {
    if text.len() > LM_MAX_TEXT_BYTES {
        return Err(LmError::TextTooLong {
            bytes: text.len(),
            limit: LM_MAX_TEXT_BYTES,
        });
    }
    let ids = model.tokenizer.encode(text)?;
    match ids.len() {
        0 => Err(LmError::NoTokens),
        1 => Err(LmError::OneToken),
        n if n > LM_MAX_TOKENS => Err(LmError::TooManyTokens {
            tokens: n,
            limit: LM_MAX_TOKENS,
        }),
        _ => Ok(ids),
    }
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
    let exact = model.forward(&ids, TOP_TOKENS, None)?;
    let forward_ms = now() - start;
    let swap = swap
        .map(|swap| swap_report(model, &ids, config, swap, now))
        .transpose()?;
    Ok(LmReport {
        text: text.to_string(),
        pieces: ids.iter().map(|&id| model.tokenizer.piece(id)).collect(),
        perplexity: exact.perplexity().unwrap_or(f64::NAN),
        top: next_tokens(model, &exact),
        losses: exact.losses,
        multiply_adds: model.config.forward_multiply_adds(ids.len()),
        forward_ms,
        swap,
        ids,
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
