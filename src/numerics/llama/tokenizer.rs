//! The model's tokenizer, built from the GGUF's `tokenizer.ggml.tokens`, `.token_type` and
//! `.merges` with Hugging Face `tokenizers`, as the model's published `tokenizer.json` composes
//! it: byte-level BPE (no unknown token, no dropout), the pre-tokenizer `Digits(individual)`
//! then `ByteLevel(add_prefix_space = false)` with GPT-2's regex, the control tokens (type 3:
//! `<|endoftext|>`, `<|im_start|>`, …) as special added tokens, no BOS
//! (`tokenizer.ggml.add_bos_token` is false). `scripts/smollm-reference.py` writes its own BPE
//! from the same tokens and merges; tests/lm.rs compares the ids on hard strings.

use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{BPE, Merges, Vocab};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::{AddedToken, Tokenizer};

use super::LmError;
use super::gguf::Gguf;

/// ggml's token type of a control token.
const CONTROL: i64 = 3;

/// The model's byte-level BPE.
pub struct LmTokenizer {
    tokenizer: Tokenizer,
    tokens: Vec<String>,
    /// The control tokens' ids (`<|endoftext|>`, `<|im_end|>`, …): a continuation ends at one.
    controls: Vec<u32>,
}

impl std::fmt::Debug for LmTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LmTokenizer({} tokens)", self.tokens.len())
    }
}

impl LmTokenizer {
    /// Builds the tokenizer from the file's key/values.
    pub fn from_gguf(gguf: &Gguf) -> Result<Self, LmError> {
        let model = gguf.text("tokenizer.ggml.model")?;
        if model != "gpt2" {
            return Err(LmError::Tokenizer(format!(
                "tokenizer.ggml.model is {model}; this reader builds byte-level BPE (gpt2) only"
            )));
        }
        let tokens: Vec<String> = gguf
            .texts("tokenizer.ggml.tokens")?
            .into_iter()
            .map(str::to_string)
            .collect();
        let types = gguf.integers("tokenizer.ggml.token_type")?;
        if types.len() != tokens.len() {
            return Err(LmError::Tokenizer(format!(
                "{} tokens but {} token types",
                tokens.len(),
                types.len()
            )));
        }
        let merges: Merges = gguf
            .texts("tokenizer.ggml.merges")?
            .into_iter()
            .map(|m| {
                m.split_once(' ')
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .ok_or_else(|| LmError::Tokenizer(format!("the merge {m:?} has no space")))
            })
            .collect::<Result<_, _>>()?;
        let vocab: Vocab = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as u32))
            .collect();
        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            .build()
            .map_err(|e| LmError::Tokenizer(format!("the BPE model: {e}")))?;
        let mut tokenizer = Tokenizer::new(bpe);
        tokenizer.with_pre_tokenizer(Some(Sequence::new(vec![
            Digits::new(true).into(),
            ByteLevel::new(false, true, true).into(),
        ])));
        tokenizer.with_decoder(Some(ByteLevelDecoder::default()));
        let controls: Vec<u32> = (0..tokens.len() as u32)
            .filter(|&i| types[i as usize] == CONTROL)
            .collect();
        let specials: Vec<AddedToken> = controls
            .iter()
            .map(|&i| AddedToken::from(tokens[i as usize].clone(), true))
            .collect();
        tokenizer
            .add_special_tokens(specials)
            .map_err(|e| LmError::Tokenizer(format!("the control tokens: {e}")))?;
        Ok(Self {
            tokenizer,
            tokens,
            controls,
        })
    }

    /// The text's token ids (no BOS).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, LmError> {
        let encoding = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| LmError::Tokenizer(e.to_string()))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Whether `id` is a control token (a continuation ends at one).
    pub fn is_control(&self, id: u32) -> bool {
        self.controls.contains(&id)
    }

    /// The text of `ids` together (a character split over two tokens whole).
    pub fn decode(&self, ids: &[u32]) -> String {
        self.tokenizer
            .decode(ids, false)
            .unwrap_or_else(|_| ids.iter().map(|&id| self.piece(id)).collect())
    }

    /// A token's text as the reader sees it (its bytes decoded; a token that is part of a
    /// UTF-8 character shows U+FFFD).
    pub fn piece(&self, id: u32) -> String {
        self.tokenizer
            .decode(&[id], false)
            .unwrap_or_else(|_| char::REPLACEMENT_CHARACTER.to_string())
    }
}
