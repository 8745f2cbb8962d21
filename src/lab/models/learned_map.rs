//! The Hedgehog maps inside the model (Zhang, Bhatia, Kumbong, Ré, ICLR 2024): one learned
//! feature map pair per head of all-MiniLM-L6-v2 ([`crate::numerics::attention::hedgehog`]),
//! trained to reproduce each head's softmax rows on one text and evaluated on another, then
//! swapped into the model like any method ([`crate::lab::models::swap::SwapMethod::Learned`]).
//!
//! The training data of a head are its queries and keys with the model's scaling `dh^{-1/4}`
//! each, so that softmax of their dot products is the head's attention.
//!
//! The maps of every head train independently of each other, so the training splits by heads
//! ([`train_learned_heads`] trains some, [`merge_learned_heads`] puts the parts together, equal
//! to [`train_learned_maps`] of every head), and the parts and the maps are serialisable with
//! their parameters in f32 ([`CompactMap`]): what one worker trains, another can swap in. The
//! maps kept for the swap are always the f32-rounded ones, however they were trained, so a
//! split training and one of every head give the same swaps.

use serde::{Deserialize, Serialize};

use crate::lab::config::MODEL_MAX_TOKENS;
use crate::lab::models::protocol::{HedgehogJob, HedgehogPoint, HedgehogTraining, Origin};
use crate::lab::models::text_model::TextModel;
use crate::numerics::attention::hedgehog::{
    CompactMap, HeadLoss, HeadSample, HedgehogMap, HedgehogSettings, TrainedHeads, TrainingPoint,
    merge_heads, train_heads,
};
use crate::numerics::bert::ModelError;

/// The maps of every head, `[layer][head]`, with their parameters in f32 (serialised as
/// [`CompactMap`]s: 72 × 8,448 bytes of parameters for all-MiniLM-L6-v2 at n = 32).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "CompactMaps", into = "CompactMaps")]
pub struct LearnedMaps {
    heads_per_layer: usize,
    maps: Vec<HedgehogMap>,
}

/// [`LearnedMaps`] as sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct CompactMaps {
    heads_per_layer: usize,
    maps: Vec<CompactMap>,
}

impl From<LearnedMaps> for CompactMaps {
    fn from(learned: LearnedMaps) -> Self {
        Self {
            heads_per_layer: learned.heads_per_layer,
            maps: learned.maps.iter().map(HedgehogMap::to_compact).collect(),
        }
    }
}

impl TryFrom<CompactMaps> for LearnedMaps {
    type Error = String;

    fn try_from(compact: CompactMaps) -> Result<Self, String> {
        LearnedMaps::from_compact(compact.heads_per_layer, &compact.maps)
    }
}

impl LearnedMaps {
    /// The maps of `compact` (one per head, layer by layer, `heads_per_layer` ≥ 1 to a layer).
    pub fn from_compact(heads_per_layer: usize, compact: &[CompactMap]) -> Result<Self, String> {
        if heads_per_layer == 0
            || compact.is_empty()
            || !compact.len().is_multiple_of(heads_per_layer)
        {
            return Err(format!(
                "{} maps do not make whole layers of {heads_per_layer} heads",
                compact.len()
            ));
        }
        let maps = compact
            .iter()
            .map(HedgehogMap::from_compact)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        Ok(Self {
            heads_per_layer,
            maps,
        })
    }

    /// The maps of every head (`[layer][head]`, `heads_per_layer` to a layer), rounded to f32.
    fn rounded(heads_per_layer: usize, maps: &[HedgehogMap]) -> Result<Self, String> {
        let compact: Vec<CompactMap> = maps.iter().map(HedgehogMap::to_compact).collect();
        Self::from_compact(heads_per_layer, &compact)
    }

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

/// Some heads' trained maps (f32) and each head's losses at every step: one worker's part of a
/// training split by heads, sent to the worker that merges the parts
/// ([`merge_learned_heads`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LearnedHeads {
    pub job: HedgehogJob,
    /// The model's heads to a layer and in all (12 and 72).
    pub heads_per_layer: usize,
    pub total_heads: usize,
    /// The heads trained here (`layer × heads_per_layer + head`), increasing.
    pub heads: Vec<usize>,
    maps: Vec<CompactMap>,
    /// `losses[step][i]`: head `heads[i]`'s.
    losses: Vec<Vec<HeadLoss>>,
    pub train_tokens: usize,
    pub eval_tokens: usize,
    pub train_ms: f64,
}

fn point_of(p: &TrainingPoint) -> HedgehogPoint {
    HedgehogPoint {
        step: p.step,
        train_cross_entropy: p.train_cross_entropy,
        train_kl: p.train_kl,
        eval_kl: p.eval_kl,
    }
}

/// Trains the maps of the heads `heads` (`layer × 12 + head`, increasing) on
/// `job.train_text`, evaluating them on `job.eval_text`; `on_point` sees each step's means over
/// these heads, `now` is a clock in milliseconds.
pub fn train_learned_heads(
    model: &TextModel,
    job: &HedgehogJob,
    heads: &[usize],
    on_point: &mut dyn FnMut(&HedgehogPoint),
    now: fn() -> f64,
) -> Result<LearnedHeads, ModelError> {
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
    let eval_every = (job.steps / 20).max(1);
    let trained = train_heads(
        &settings,
        &train_samples,
        &eval_samples,
        heads,
        eval_every,
        &mut |p| on_point(&point_of(p)),
    )
    .map_err(|e| reject(&e))?;
    Ok(LearnedHeads {
        job: job.clone(),
        heads_per_layer: model.weights.config.num_attention_heads,
        total_heads: train_samples.len(),
        heads: trained.heads,
        maps: trained.maps.iter().map(HedgehogMap::to_compact).collect(),
        losses: trained.losses,
        train_tokens,
        eval_tokens,
        train_ms: now() - start,
    })
}

/// The parts of a training split by heads as the maps of every head and the training's record,
/// equal to [`train_learned_maps`]'s: every part of the same job and model, every head in
/// exactly one part. The record's time is the longest part's (the parts run side by side).
pub fn merge_learned_heads(
    parts: &[LearnedHeads],
) -> Result<(LearnedMaps, HedgehogTraining), ModelError> {
    let reject = |e: String| ModelError::Replacement(format!("the Hedgehog parts: {e}"));
    let first = parts.first().ok_or_else(|| reject("none".into()))?;
    let same = |p: &LearnedHeads| {
        (
            &p.job,
            p.heads_per_layer,
            p.total_heads,
            p.train_tokens,
            p.eval_tokens,
        ) == (
            &first.job,
            first.heads_per_layer,
            first.total_heads,
            first.train_tokens,
            first.eval_tokens,
        )
    };
    if !parts.iter().all(same) {
        return Err(reject("they come from different trainings".into()));
    }
    let trained = parts
        .iter()
        .map(|p| {
            let maps = p.maps.iter().map(HedgehogMap::from_compact);
            Ok(TrainedHeads {
                heads: p.heads.clone(),
                maps: maps.collect::<Result<_, _>>()?,
                losses: p.losses.clone(),
            })
        })
        .collect::<Result<Vec<_>, crate::numerics::attention::hedgehog::HedgehogError>>()
        .map_err(|e| reject(e.to_string()))?;
    let (maps, curve) =
        merge_heads(&trained, first.total_heads).map_err(|e| reject(e.to_string()))?;
    let maps = LearnedMaps::rounded(first.heads_per_layer, &maps).map_err(reject)?;
    Ok((
        maps,
        HedgehogTraining {
            job: first.job.clone(),
            train_tokens: first.train_tokens,
            eval_tokens: first.eval_tokens,
            curve: curve.iter().map(point_of).collect(),
            train_ms: parts.iter().map(|p| p.train_ms).fold(0.0, f64::max),
            origin: Origin::Computed,
        },
    ))
}

/// Trains the maps of every head on `job.train_text`, evaluating them on `job.eval_text`;
/// `on_point` sees each step's means over the heads, `now` is a clock in milliseconds.
pub fn train_learned_maps(
    model: &TextModel,
    job: &HedgehogJob,
    on_point: &mut dyn FnMut(&HedgehogPoint),
    now: fn() -> f64,
) -> Result<(LearnedMaps, HedgehogTraining), ModelError> {
    let c = &model.weights.config;
    let all: Vec<usize> = (0..c.num_hidden_layers * c.num_attention_heads).collect();
    merge_learned_heads(&[train_learned_heads(model, job, &all, on_point, now)?])
}

/// A training's parts kept from an earlier visit (the model worker keeps them in the browser's
/// Cache Storage under [`kept_training_key`]), with what checks that this build and this model
/// still give them: every head's kept (f32) maps' cross-entropy on the training text, in the
/// parts' order ([`kept_check`]), bit for bit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeptTraining {
    pub parts: Vec<LearnedHeads>,
    pub check: Vec<f64>,
}

/// Where a training's parts are kept: the job, the model file's SHA-256 and the lab's version,
/// hashed (SHA-256, hex), as a relative address for Cache Storage.
pub fn kept_training_key(job: &HedgehogJob, model_sha256: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    hash.update(postcard::to_allocvec(job).unwrap_or_default());
    hash.update(model_sha256.as_bytes());
    hash.update(env!("CARGO_PKG_VERSION").as_bytes());
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("./hedgehog-maps/{hex}.bin")
}

/// Every kept head's cross-entropy on `parts`' training text with its f32 maps, part by part
/// and head by head: the same numbers from the same build and model, so a kept training whose
/// check differs (another build's arithmetic, a damaged entry) is trained again instead.
pub fn kept_check(model: &TextModel, parts: &[LearnedHeads]) -> Result<Vec<f64>, ModelError> {
    let reject = |e: String| ModelError::Replacement(format!("the kept Hedgehog maps: {e}"));
    let first = parts.first().ok_or_else(|| reject("none".into()))?;
    let samples = head_samples(model, &first.job.train_text)?;
    let mut check = Vec::new();
    for part in parts {
        if part.job != first.job || part.heads.len() != part.maps.len() {
            return Err(reject("the parts do not match".into()));
        }
        for (&head, compact) in part.heads.iter().zip(&part.maps) {
            let sample = samples
                .get(head)
                .ok_or_else(|| reject(format!("no head {head}")))?;
            let map = HedgehogMap::from_compact(compact).map_err(|e| reject(e.to_string()))?;
            let loss = map.loss(sample).map_err(|e| reject(e.to_string()))?;
            check.push(loss.cross_entropy);
        }
    }
    Ok(check)
}
