//! The model continues the reader's text, token by token: exactly (softmax in every layer, each
//! layer's keys and values cached), or with the view's swap (`lmmethod` in `lmlayers`) decoded
//! as recurrent networks, each linear head's map fitted on the prompt and then fixed
//! ([`Decoder`]), or with an attention transfer's layers linear, their trained maps
//! ([`Decoding::Transferred`]). The next token is the likeliest (`lmtemp` 0) or drawn from
//! `softmax(logits / T)` with one uniform per token from the seed's stream, the same stream for
//! both continuations, so they part only where the two models' distributions do.
//!
//! One token per [`Generation::step`], so that the page's worker reads its messages between two
//! tokens (a new text stops it) and sends each token as it comes.

use super::protocol::{
    ContinuationEnd, ContinuationEvent, ContinuationStart, Decoding, GeneratedToken, LmJob,
    TrainedLayer,
};
use super::report::{lm_tokens, swap_of};
use crate::lab::config::LM_MAX_GENERATED;
use crate::lab::models::head_swap::{SwapMethod, decoding_map, registry_of};
use crate::numerics::attention::hedgehog::CompactMap;
use crate::numerics::bert::HeadInputs;
use crate::numerics::llama::{Decoder, LlamaModel, LmError};
use crate::numerics::rng::{StreamPurpose, StreamRng, stream_rng};
use rand::RngExt;

/// A continuation part way.
pub struct Generation {
    decoder: Decoder,
    rng: StreamRng,
    temperature: f64,
    remaining: usize,
    ended: bool,
}

/// The index of the token chosen from `logits`: the largest (the lower id on a tie) at
/// temperature 0, else the first whose cumulative probability under `softmax(logits / T)`
/// passes `uniform`; with its log-probability at temperature 1.
pub fn choose(logits: &[f32], temperature: f64, uniform: f64) -> (u32, f64) {
    let max = logits.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let max = f64::from(max);
    let log_normaliser = max
        + logits
            .iter()
            .map(|&v| (f64::from(v) - max).exp())
            .sum::<f64>()
            .ln();
    let likeliest = logits.iter().enumerate().fold(
        0usize,
        |best, (i, &v)| if v > logits[best] { i } else { best },
    );
    let chosen = if temperature > 0.0 {
        let weights: Vec<f64> = logits
            .iter()
            .map(|&v| ((f64::from(v) - max) / temperature).exp())
            .collect();
        let target = uniform * weights.iter().sum::<f64>();
        let mut running = 0.0;
        weights
            .iter()
            .position(|w| {
                running += w;
                running > target
            })
            .unwrap_or(likeliest)
    } else {
        likeliest
    };
    let logprob = f64::from(logits[chosen]) - log_normaliser;
    (chosen as u32, logprob)
}

impl Generation {
    /// Reads `job`'s text (at most `LM_MAX_TOKENS` tokens) as the prompt of the `decoding`
    /// continuation: the exact one, the swap's layers linear (refused without a method, or with
    /// one that has no feature map), or `trained`'s layers linear with their trained maps (the
    /// transfer's; refused without). `now` is a clock in milliseconds.
    pub fn start(
        model: &LlamaModel,
        job: &LmJob,
        (decoding, trained): (Decoding, &[TrainedLayer]),
        now: fn() -> f64,
    ) -> Result<(Self, ContinuationStart), LmError> {
        let ids = lm_tokens(model, &job.text)?;
        let a = &job.config.attention;
        let started = now();
        let (decoder, linear_layers) = match decoding {
            Decoding::Exact => {
                let mut none = |_: &HeadInputs| Err("no layer is linear".to_string());
                (Decoder::start(model, &ids, &[], &mut none)?, Vec::new())
            }
            Decoding::Linear => {
                let swap = swap_of(&job.config).ok_or_else(|| {
                    LmError::Replacement("no method is chosen for the linear layers".into())
                })?;
                if let SwapMethod::Learned(_) = swap.method {
                    return Err(LmError::Replacement(
                        "the learned maps are not trained for the decoder".into(),
                    ));
                }
                let registry = registry_of(&swap, &job.config, model.config.head_dim)
                    .ok_or_else(|| LmError::Replacement("no registry method".into()))?;
                let mut make = |h: &HeadInputs| decoding_map(&registry, 0, h);
                let decoder = Decoder::start(model, &ids, &swap.layers, &mut make)?;
                (decoder, swap.layers.clone())
            }
            Decoding::Transferred => {
                let mut layers: Vec<usize> = trained.iter().map(|t| t.layer).collect();
                layers.sort_unstable();
                if layers.is_empty() {
                    return Err(LmError::Replacement("no layer is transferred yet".into()));
                }
                let mut make = |h: &HeadInputs| {
                    let layer = trained.iter().find(|t| t.layer == h.layer);
                    let map = layer.and_then(|t| t.maps.get(h.head));
                    map.map(CompactMap::feature_map_32)
                        .ok_or_else(|| format!("layer {} head {}: no trained map", h.layer, h.head))
                };
                (Decoder::start(model, &ids, &layers, &mut make)?, layers)
            }
        };
        let start = ContinuationStart {
            prompt_tokens: ids.len(),
            linear_layers,
            prefill_ms: now() - started,
            memory: widen(&decoder.memory_bytes()),
            step_multiply_adds: decoder.step_attention_multiply_adds(model),
        };
        let generation = Self {
            decoder,
            rng: stream_rng(job.config.seed, StreamPurpose::Generation, 0, 0),
            temperature: a.lm_temperature.max(0.0),
            remaining: a.lm_generate.min(LM_MAX_GENERATED),
            ended: false,
        };
        Ok((generation, start))
    }

    /// Whether no token is left to make.
    pub fn is_done(&self) -> bool {
        self.ended || self.remaining == 0
    }

    /// The next event: a token (chosen, then read through every layer), or the end.
    pub fn step(&mut self, model: &LlamaModel, now: fn() -> f64) -> ContinuationEvent {
        if self.is_done() {
            self.ended = true;
            return ContinuationEvent::Ended(ContinuationEnd::Complete);
        }
        let started = now();
        // One uniform per token whatever the temperature, so the stream stays aligned.
        let uniform: f64 = self.rng.random();
        let (id, logprob) = choose(self.decoder.logits(), self.temperature, uniform);
        if let Err(error) = self.decoder.step(model, id) {
            self.ended = true;
            return ContinuationEvent::Ended(ContinuationEnd::Failed(error.to_string()));
        }
        self.remaining -= 1;
        if model.tokenizer.is_control(id) {
            self.ended = true;
        }
        ContinuationEvent::Token(GeneratedToken {
            id,
            piece: model.tokenizer.piece(id),
            logprob,
            ms: now() - started,
            memory: widen(&self.decoder.memory_bytes()),
        })
    }

    /// Why it ended, once [`Generation::is_done`]: every token made, or a control token.
    pub fn end(&self, last: Option<&GeneratedToken>, model: &LlamaModel) -> ContinuationEnd {
        match last {
            Some(token) if model.tokenizer.is_control(token.id) => ContinuationEnd::EndOfText,
            _ => ContinuationEnd::Complete,
        }
    }
}

fn widen(bytes: &[usize]) -> Vec<u64> {
    bytes.iter().map(|&b| b as u64).collect()
}

/// The whole `decoding` continuation of `job`, event by event into `on_event` (the command
/// line's, and a test's).
pub fn continue_text(
    model: &LlamaModel,
    job: &LmJob,
    decoding: (Decoding, &[TrainedLayer]),
    now: fn() -> f64,
    on_event: &mut dyn FnMut(ContinuationEvent),
) {
    let (mut generation, start) = match Generation::start(model, job, decoding, now) {
        Ok(started) => started,
        Err(error) => {
            on_event(ContinuationEvent::Ended(ContinuationEnd::Failed(
                error.to_string(),
            )));
            return;
        }
    };
    on_event(ContinuationEvent::Started(start));
    let mut last = None;
    while !generation.is_done() {
        match generation.step(model, now) {
            ContinuationEvent::Token(token) => {
                last = Some(token.clone());
                on_event(ContinuationEvent::Token(token));
            }
            other => return on_event(other),
        }
    }
    on_event(ContinuationEvent::Ended(
        generation.end(last.as_ref(), model),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Temperature 0 takes the largest logit (the lower id on a tie); a positive temperature
    /// takes the token whose cumulative probability passes the uniform; the log-probability
    /// is the model's at temperature 1.
    #[test]
    fn choosing_follows_the_temperature() {
        let logits = [1.0f32, 3.0, 3.0, 0.0];
        let z: f64 = logits.iter().map(|&v| f64::from(v).exp()).sum();
        let (id, logprob) = choose(&logits, 0.0, 0.99);
        assert_eq!(id, 1);
        assert!((logprob - (3.0 - z.ln())).abs() < 1e-12);
        // At T = 1 the probabilities are e¹/z, e³/z, e³/z, 1/z.
        let p0 = 1f64.exp() / z;
        assert_eq!(choose(&logits, 1.0, p0 * 0.5).0, 0);
        assert_eq!(choose(&logits, 1.0, p0 + 1e-9).0, 1);
        assert_eq!(choose(&logits, 1.0, 0.999_999).0, 3);
        // A high temperature flattens: at T = 100 token 0 takes about a quarter.
        assert_eq!(choose(&logits, 100.0, 0.2).0, 0);
        assert_eq!(choose(&logits, 100.0, 0.3).0, 1);
    }
}
