//! The Hedgehog maps inside the model (Zhang, Bhatia, Kumbong, Ré, ICLR 2024): one learned
//! feature map pair per head of all-MiniLM-L6-v2 ([`crate::numerics::attention::hedgehog`]),
//! trained to reproduce each head's softmax rows on one text and evaluated on another, then
//! swapped into the model like any method ([`crate::lab::model_swap::SwapMethod::Learned`]).
//!
//! The training data of a head are its queries and keys with the model's scaling `dh^{-1/4}`
//! each, so that softmax of their dot products is the head's attention.

use crate::lab::config::MODEL_MAX_TOKENS;
use crate::lab::model_protocol::{HedgehogJob, HedgehogPoint, HedgehogTraining};
use crate::lab::text_model::TextModel;
use crate::numerics::attention::hedgehog::{HeadSample, HedgehogMap, HedgehogSettings, train};
use crate::numerics::bert::ModelError;

/// The maps of every head, `[layer][head]`.
#[derive(Clone, Debug, PartialEq)]
pub struct LearnedMaps {
    heads_per_layer: usize,
    maps: Vec<HedgehogMap>,
}

impl LearnedMaps {
    /// The maps' features per token (2n).
    pub fn features(&self) -> usize {
        self.maps.first().map_or(0, |m| 2 * m.half_features())
    }

    /// Head `head` of `layer`'s output with its map (queries and keys already scaled).
    #[allow(clippy::too_many_arguments)]
    pub fn attention(
        &self,
        layer: usize,
        head: usize,
        q: &[f64],
        k: &[f64],
        v: &[f64],
        len: usize,
        dim: usize,
    ) -> Result<Vec<f64>, String> {
        let map = self
            .maps
            .get(layer * self.heads_per_layer + head)
            .ok_or_else(|| format!("no learned map for layer {layer} head {head}"))?;
        map.attention(q, k, v, len, dim, dim)
            .map_err(|e| e.to_string())
    }

    /// Multiply-adds of one head's output at L tokens with values of `dv`.
    pub fn multiply_adds(&self, len: usize, dv: usize) -> f64 {
        self.maps.first().map_or(0.0, |m| m.multiply_adds(len, dv))
    }
}

/// Every head's training sample of `text`: its scaled queries and keys.
fn head_samples(model: &TextModel, text: &str) -> Result<Vec<HeadSample>, ModelError> {
    let encoded = model.tokenizer.encode(text, MODEL_MAX_TOKENS)?;
    let forward = model.weights.forward(&encoded.ids, true)?;
    let qkv = forward.qkv.unwrap_or_default();
    let c = &model.weights.config;
    let (len, dim) = (forward.len, c.head_dim());
    let scale = (dim as f64).powf(-0.25);
    let block = len * dim;
    let heads = c.num_hidden_layers * c.num_attention_heads;
    (0..heads)
        .map(|h| {
            let base = h * 3 * block;
            let widen = |from: usize| -> Vec<f64> {
                qkv.get(from..from + block)
                    .unwrap_or_default()
                    .iter()
                    .map(|x| f64::from(*x) * scale)
                    .collect()
            };
            HeadSample::new(len, dim, widen(base), widen(base + block))
                .map_err(|e| ModelError::Replacement(e.to_string()))
        })
        .collect()
}

/// Trains the maps of every head on `job.train_text`, evaluating them on `job.eval_text`;
/// `on_point` sees each step's means over the heads, `now` is a clock in milliseconds.
pub fn train_learned_maps(
    model: &TextModel,
    job: &HedgehogJob,
    on_point: &mut dyn FnMut(&HedgehogPoint),
    now: fn() -> f64,
) -> Result<(LearnedMaps, HedgehogTraining), ModelError> {
    let start = now();
    let settings = HedgehogSettings {
        half_features: job.half_features,
        steps: job.steps,
        learning_rate: job.learning_rate,
        seed: job.seed,
    };
    let reject = |e: &dyn std::fmt::Display| ModelError::Replacement(e.to_string());
    settings.validate().map_err(|e| reject(&e))?;
    let train_samples = head_samples(model, &job.train_text)?;
    let eval_samples = head_samples(model, &job.eval_text)?;
    let (train_tokens, eval_tokens) = (
        train_samples.first().map_or(0, HeadSample::len),
        eval_samples.first().map_or(0, HeadSample::len),
    );
    let mut curve = Vec::new();
    let eval_every = (job.steps / 20).max(1);
    let maps = train(
        &settings,
        &train_samples,
        &eval_samples,
        eval_every,
        &mut |p| {
            let point = HedgehogPoint {
                step: p.step,
                train_cross_entropy: p.train_cross_entropy,
                train_kl: p.train_kl,
                eval_kl: p.eval_kl,
            };
            on_point(&point);
            curve.push(point);
        },
    )
    .map_err(|e| reject(&e))?;
    Ok((
        LearnedMaps {
            heads_per_layer: model.weights.config.num_attention_heads,
            maps,
        },
        HedgehogTraining {
            job: job.clone(),
            train_tokens,
            eval_tokens,
            curve,
            train_ms: now() - start,
        },
    ))
}
