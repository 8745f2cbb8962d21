//! The model worker's messages (postcard, as the other workers'), and what one text through the
//! model gives: shared by the page (which never links the model) and the worker
//! (`lab::text_model`, feature `text-model`).

use serde::{Deserialize, Serialize};

/// Where the page serves the converted model (the build copies it there: scripts/build-worker.sh).
pub const MODEL_URL: &str = "model/minilm-l6-v2-f16.safetensors";

/// One text through the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TextRun {
    /// The text as given.
    pub text: String,
    pub ids: Vec<u32>,
    /// Word pieces, `[CLS]` first and `[SEP]` last.
    pub tokens: Vec<String>,
    /// Tokens of the whole text when it was cut to the model's 512.
    pub full_len: Option<usize>,
    /// Mean-pooled, L2-normalised sentence embedding.
    pub embedding: Vec<f32>,
    /// Every head's raw Q, K, V in the stored heads' format (f16), one passage: the text.
    #[serde(with = "serde_bytes")]
    pub heads_asset: Vec<u8>,
    /// Multiply-adds of the forward.
    pub multiply_adds: u64,
}

/// What the page asks the model worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ModelRequest {
    /// Fetch the converted model file from `url` (relative to the page), check and load it.
    Load { url: String },
    /// Run the loaded model on a text.
    Run { text: String },
}

/// What the model worker answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ModelAnswer {
    /// Bytes of the model file received so far, of `total` when the server says.
    Progress { loaded: u64, total: Option<u64> },
    /// The model is ready: its file's size, its parameters, the time to check and unpack it.
    Loaded {
        bytes: u64,
        parameters: usize,
        load_ms: f64,
    },
    /// One text through the model, and the forward's time (tokenizer included).
    Ran { run: TextRun, forward_ms: f64 },
    /// Anything that went wrong, as a sentence for the page.
    Failed(String),
}

impl ModelAnswer {
    /// The answer as the worker posts it.
    pub fn encode(&self) -> Vec<u8> {
        postcard::to_allocvec(self).unwrap_or_default()
    }
}
