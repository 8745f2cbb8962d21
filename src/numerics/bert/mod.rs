//! A BERT encoder on the user's text: the real all-MiniLM-L6-v2 (6 layers, hidden 384, 12 heads
//! of 32, exact GELU), its own tokenizer, and every head's queries, keys and values for the
//! attention view. Feature `text-model`; no notion of a page here either: the CLI, the model
//! worker and the tests call the same functions.
//!
//! - `weights`: the converted model file (f16 safetensors with the model's config and tokenizer
//!   in its metadata), checked against its SHA-256;
//! - `reader`: that file read in pieces (header, embeddings, each layer) as its bytes arrive;
//! - `tokenizer`: Hugging Face `tokenizers` on the stored `tokenizer.json`;
//! - `linear`: the packed dense layers (the forward's multiply-adds);
//! - `forward`: the forward pass and the sentence embedding;
//! - `batch`: several texts at once, their rows stacked for the dense layers (each text's
//!   forward bit for bit);
//! - `part`: the forward split by rows (two workers each run some of a text's rows and swap
//!   only keys and values per layer); the whole forward is one part;
//! - `rows`, `head_attention`: the row-wise steps (embeddings, layer norm, GELU) and one head's
//!   softmax attention on packed keys and values.

use std::fmt;

mod batch;
pub mod forward;
mod forward_io;
mod head_attention;
pub use crate::numerics::packed_linear as linear;
pub mod part;
#[cfg(test)]
mod part_tests;
pub mod reader;
mod rows;
pub mod tokenizer;
pub mod weights;

pub use forward_io::{Forward, HeadInputs, Keep, LayerStates, Replacement};
pub use part::{ForwardPart, KeptLayer, KeyValues, PartOutput, embedding_of_sums, join_parts};
pub use tokenizer::{Encoded, WordPiece};
pub use weights::{BertWeights, MODEL_FILE_NAME, MODEL_SHA256};

/// Why the model could not be read or run on a text.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelError {
    /// The file's SHA-256 is not the pinned one (a partial download, another conversion).
    Hash { expected: String, found: String },
    /// The file is not the converted format (not safetensors, a tensor missing or misshapen).
    Format(String),
    /// The stored `config.json` describes something this forward does not run.
    Config(String),
    /// The tokenizer could not be read or failed on the text.
    Tokenizer(String),
    /// The text has no token but `[CLS]` and `[SEP]`.
    EmptyText,
    /// The text is longer than the caller accepts.
    TextTooLong { bytes: usize, limit: usize },
    /// More token ids than the model has positions.
    TooManyTokens { tokens: usize, limit: usize },
    /// No token ids at all.
    NoTokens,
    /// A replacement of softmax attention inside the model failed.
    Replacement(String),
    /// A forward split by rows was given parts that do not fit (a gap, an overlap, wrong
    /// sizes), or its steps out of order.
    Parts(String),
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::Hash { expected, found } => write!(
                f,
                "the model file's SHA-256 is {found}, expected {expected}: the copy is incomplete \
                 or another conversion; on the machine that serves the lab, run \
                 scripts/fetch-model.sh (it fetches and checks the model) and build again"
            ),
            ModelError::Format(reason) => write!(f, "the model file: {reason}"),
            ModelError::Config(reason) => write!(f, "the model's config.json: {reason}"),
            ModelError::Tokenizer(reason) => write!(f, "the tokenizer: {reason}"),
            ModelError::EmptyText => write!(
                f,
                "the text has no words: it is empty, or only whitespace and control characters"
            ),
            ModelError::TextTooLong { bytes, limit } => write!(
                f,
                "the text is {bytes} bytes; the lab reads at most {limit} (the model sees only \
                 its first 512 tokens anyway)"
            ),
            ModelError::TooManyTokens { tokens, limit } => {
                write!(f, "{tokens} tokens; the model has {limit} positions")
            }
            ModelError::NoTokens => write!(f, "no tokens to run the model on"),
            ModelError::Replacement(reason) => {
                write!(f, "approximate attention inside the model: {reason}")
            }
            ModelError::Parts(reason) => write!(f, "the forward's parts: {reason}"),
        }
    }
}

impl std::error::Error for ModelError {}
