//! The model's own tokenizer: Hugging Face `tokenizers` reading the `tokenizer.json` stored in
//! the model file (BERT's normaliser: control characters removed, CJK characters split, accents
//! stripped, lower case; whitespace and punctuation pre-splitting; WordPiece with `##`
//! continuations and `[UNK]`; `[CLS]` … `[SEP]` around the text).
//!
//! The stored `tokenizer.json` pads and truncates to 128 tokens: both are switched off here, and
//! a text longer than the model's positions is cut to `[CLS]`, its first `limit − 2` pieces and
//! `[SEP]`, what `enable_truncation(limit)` gives (tests/model.rs compares with Python's
//! `tokenizers` on hard strings).

use tokenizers::Tokenizer;

use super::ModelError;

/// A text's tokens.
#[derive(Clone, Debug, PartialEq)]
pub struct Encoded {
    /// Token ids, `[CLS]` first and `[SEP]` last, at most the limit.
    pub ids: Vec<u32>,
    /// The word pieces, as the vocabulary writes them (`##` marks a continuation).
    pub tokens: Vec<String>,
    /// Tokens of the whole text when it had to be cut (`None` when it fits).
    pub full_len: Option<usize>,
}

/// The model's tokenizer, without padding or truncation.
pub struct WordPiece {
    tokenizer: Tokenizer,
}

impl std::fmt::Debug for WordPiece {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WordPiece")
    }
}

impl WordPiece {
    /// Reads a `tokenizer.json`.
    pub fn from_json(json: &str) -> Result<Self, ModelError> {
        let mut tokenizer = Tokenizer::from_bytes(json.as_bytes())
            .map_err(|e| ModelError::Tokenizer(format!("tokenizer.json: {e}")))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(None)
            .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
        Ok(Self { tokenizer })
    }

    /// The text's tokens with `[CLS]` and `[SEP]`, cut to `limit` tokens (at least 2). An empty
    /// text, or one with nothing but whitespace and control characters, is an error that says so.
    /// (The caller bounds the text's length: `lab::models::text_model` refuses one over 100 KB.)
    pub fn encode(&self, text: &str, limit: usize) -> Result<Encoded, ModelError> {
        let encoding = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
        let mut ids = encoding.get_ids().to_vec();
        let mut tokens = encoding.get_tokens().to_vec();
        // [CLS] and [SEP] only: nothing the model could read.
        if ids.len() <= 2 {
            return Err(ModelError::EmptyText);
        }
        let limit = limit.max(2);
        let full_len = (ids.len() > limit).then_some(ids.len());
        if full_len.is_some() {
            let (last_id, last_token) = (ids[ids.len() - 1], tokens[tokens.len() - 1].clone());
            ids.truncate(limit - 1);
            tokens.truncate(limit - 1);
            ids.push(last_id);
            tokens.push(last_token);
        }
        Ok(Encoded {
            ids,
            tokens,
            full_len,
        })
    }
}
