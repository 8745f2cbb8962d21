//! A causal language model on the user's text: SmolLM2-135M-Instruct (a Llama decoder: 30
//! layers, width 576, 9 query heads and 3 key/value heads of 64, RoPE, RMSNorm, SwiGLU, tied
//! embeddings) read from its GGUF file and run from its quantised blocks. Feature `text-model`;
//! no notion of a page: the CLI, the model worker and the tests call the same functions.
//!
//! - `gguf`: the file's header, key/values and tensor infos, every length checked;
//! - `quant`: Q4_1, Q8_0, F16 and F32 rows widened, and products from the blocks;
//! - `tokenizer`: the byte-level BPE built from the file's tokens and merges;
//! - `weights`: the configuration and every tensor checked against it;
//! - `forward`: the forward pass, each token's loss and the next-token predictions;
//! - `decode`: continuing a text token by token, softmax layers with a key/value cache and
//!   linear layers as recurrent networks;
//! - `scores`: the tied head, each token's loss and the next-token predictions;
//! - `part`: one worker's share of a forward split by rows over several;
//! - `heads`: every head's queries, keys and values on a text, for the attention view.

use std::fmt;

pub mod decode;
pub mod forward;
pub mod gguf;
pub mod heads;
pub mod part;
pub mod quant;
pub mod scores;
pub mod tokenizer;
pub mod weights;

pub use decode::{Decoder, MapMaker};
pub use forward::{ExactRun, LmScores, Prediction, Rope, Scratch};
pub use heads::LmHeads;
pub use part::{HeadShare, LayerShare, LmPart, join_scores};
pub use tokenizer::LmTokenizer;
pub use weights::{LM_FILE_NAME, LM_SHA256, LlamaConfig, LlamaModel};

/// Why the language model could not be read or run on a text.
#[derive(Clone, Debug, PartialEq)]
pub enum LmError {
    /// The file's SHA-256 is not the pinned one (a partial download, another file).
    Hash { expected: String, found: String },
    /// The file is not a GGUF this reader can use (truncated, damaged, a tensor missing).
    Format(String),
    /// The file's key/values describe a model this forward does not run.
    Config(String),
    /// The tokenizer could not be built or failed on the text.
    Tokenizer(String),
    /// No token at all.
    NoTokens,
    /// One token: nothing is predicted (the first token has no loss).
    OneToken,
    /// More bytes of text than the caller accepts (refused before tokenising).
    TextTooLong { bytes: usize, limit: usize },
    /// More tokens than the caller or the model accepts.
    TooManyTokens { tokens: usize, limit: usize },
    /// A token id outside the vocabulary.
    UnknownToken(u32),
    /// A replacement of softmax attention failed.
    Replacement(String),
}

impl fmt::Display for LmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LmError::Hash { expected, found } => write!(
                f,
                "the language model file's SHA-256 is {found}, expected {expected}: the copy is \
                 incomplete or another file; run scripts/fetch-model.sh (it fetches and checks \
                 the model)"
            ),
            LmError::Format(reason) => write!(f, "the language model file: {reason}"),
            LmError::Config(reason) => write!(f, "the language model's settings: {reason}"),
            LmError::Tokenizer(reason) => write!(f, "the language model's tokenizer: {reason}"),
            LmError::NoTokens => write!(f, "the text is empty: there is no token to read"),
            LmError::OneToken => write!(
                f,
                "the text is a single token: the model scores each token from the ones before \
                 it, so it needs at least two"
            ),
            LmError::TextTooLong { bytes, limit } => write!(
                f,
                "the text has {bytes} bytes; at most {limit} are read: shorten it"
            ),
            LmError::TooManyTokens { tokens, limit } => write!(
                f,
                "the text has {tokens} tokens; at most {limit} are read: shorten it"
            ),
            LmError::UnknownToken(id) => {
                write!(f, "token id {id} is not in the model's vocabulary")
            }
            LmError::Replacement(reason) => write!(f, "the swapped attention: {reason}"),
        }
    }
}

impl std::error::Error for LmError {}
