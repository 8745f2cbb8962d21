//! The converted file read in pieces as its bytes arrive: its header first ([`FileHeader`]:
//! where each tensor lies, the configuration, the tokenizer's JSON), then the embeddings and
//! each encoder layer ([`WeightsReader`]) as soon as all of their bytes are in. The file stores
//! the small vectors, the embeddings, then layer 0 to 5, so a reader fed the file as it
//! downloads has unpacked all but the last layer when the last byte arrives.
//!
//! Whole or in pieces, the reading is the same: [`BertWeights::from_bytes`] is a reader fed
//! the whole file at once. Nothing here checks a hash: the caller does (the whole file's,
//! before it trusts what was read). Any bytes give a [`ModelError`], never a panic.

use half::f16;
use safetensors::Dtype;
use safetensors::tensor::Metadata;

use super::ModelError;
use super::linear::PackedLinear;
use super::weights::{
    BertConfig, BertWeights, EncoderLayer, FORMAT_KEY, FORMAT_TAG, LayerNorm, MODEL_SHA256,
    sha256_hex,
};
use crate::numerics::stored_float::{StoredFloat, f16_is_special, widen};

/// The safetensors crate's own bound on a header's length.
const MAX_HEADER_BYTES: usize = 100_000_000;

/// The header's length field: 8 bytes, little-endian.
const LENGTH_BYTES: usize = 8;

fn format_error(reason: impl Into<String>) -> ModelError {
    ModelError::Format(reason.into())
}

/// The file's header: where each tensor lies, the checked configuration and the tokenizer.
#[derive(Debug)]
pub struct FileHeader {
    /// Where the tensors' data begins: the length field and the header.
    data_start: usize,
    tensors: Metadata,
    pub config: BertConfig,
    /// The model's `tokenizer.json`, as stored in the header's metadata.
    pub tokenizer_json: String,
}

impl FileHeader {
    /// Where the header ends (the length field and the header), once `prefix` holds the
    /// length field; a length over safetensors' bound is an error.
    pub fn end(prefix: &[u8]) -> Result<Option<usize>, ModelError> {
        let Some(field) = prefix.first_chunk::<LENGTH_BYTES>() else {
            return Ok(None);
        };
        match usize::try_from(u64::from_le_bytes(*field)) {
            Ok(n) if n <= MAX_HEADER_BYTES => Ok(Some(LENGTH_BYTES + n)),
            _ => Err(format_error(
                "not a safetensors file: its header length is over 100 MB",
            )),
        }
    }

    /// The header, once `prefix` (the file's first bytes) holds all of it: the tensors'
    /// places (safetensors' own parser and checks), the format tag, the checked `config.json`
    /// and `tokenizer.json`.
    pub fn read(prefix: &[u8]) -> Result<Option<Self>, ModelError> {
        let Some(end) = Self::end(prefix)? else {
            return Ok(None);
        };
        let Some(header) = prefix.get(LENGTH_BYTES..end) else {
            return Ok(None);
        };
        let text = std::str::from_utf8(header)
            .map_err(|e| format_error(format!("not a safetensors file: {e}")))?;
        let tensors: Metadata = serde_json::from_str(text)
            .map_err(|e| format_error(format!("not a safetensors file: {e}")))?;
        let entry = |key: &str| {
            tensors
                .metadata()
                .as_ref()
                .and_then(|m| m.get(key))
                .ok_or_else(|| format_error(format!("the file's metadata has no \"{key}\"")))
        };
        let tag = entry(FORMAT_KEY)?;
        if tag != FORMAT_TAG {
            return Err(format_error(format!(
                "format \"{tag}\", this reader reads \"{FORMAT_TAG}\""
            )));
        }
        let config: BertConfig = serde_json::from_str(entry("config.json")?)
            .map_err(|e| ModelError::Config(format!("config.json: {e}")))?;
        config.check()?;
        let tokenizer_json = entry("tokenizer.json")?.clone();
        Ok(Some(Self {
            data_start: end,
            tensors,
            config,
            tokenizer_json,
        }))
    }

    /// The file's length that this header describes.
    pub fn file_len(&self) -> usize {
        self.data_start + self.tensors.data_len()
    }
}

/// The converted file read whole ([`WeightsReader`] fed every byte at once).
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
        let header = FileHeader::read(bytes)?.ok_or_else(|| {
            ModelError::Format("not a safetensors file: it ends inside its header".into())
        })?;
        WeightsReader::new(header).finish(bytes)
    }
}

/// The token embeddings' part of the weights.
#[derive(Debug)]
struct Embeddings {
    word: Vec<f16>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    norm: LayerNorm,
}

/// One piece of the weights, read once all of its tensors' bytes are in.
#[derive(Clone, Copy, Debug)]
enum Piece {
    Embeddings,
    Layer(usize),
}

/// The weights read piece by piece from the file's bytes as they arrive.
#[derive(Debug)]
pub struct WeightsReader {
    header: FileHeader,
    embeddings: Option<Embeddings>,
    layers: Vec<EncoderLayer>,
    /// Where the next piece's bytes end in the data (so that a chunk that completes nothing
    /// costs one comparison).
    next_end: usize,
}

impl WeightsReader {
    /// A reader of the file that `header` describes, nothing read yet.
    pub fn new(header: FileHeader) -> Self {
        let layers = Vec::with_capacity(header.config.num_hidden_layers);
        let mut reader = Self {
            header,
            embeddings: None,
            layers,
            next_end: 0,
        };
        reader.next_end = reader.next_piece_end();
        reader
    }

    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// Pieces read so far: the embeddings, then one per encoder layer.
    pub fn pieces_read(&self) -> usize {
        usize::from(self.embeddings.is_some()) + self.layers.len()
    }

    /// Reads every piece whose bytes `received` (the file's first bytes) now holds.
    pub fn advance(&mut self, received: &[u8]) -> Result<(), ModelError> {
        let data = received.get(self.header.data_start..).unwrap_or_default();
        while let Some(piece) = self.next_piece() {
            if self.next_end > data.len() {
                return Ok(());
            }
            let stored = Stored {
                tensors: &self.header.tensors,
                data,
            };
            let config = &self.header.config;
            match piece {
                Piece::Embeddings => self.embeddings = Some(stored.embeddings(config)?),
                Piece::Layer(l) => self.layers.push(stored.layer(l, config)?),
            }
            self.next_end = self.next_piece_end();
        }
        Ok(())
    }

    /// Where the next piece's last tensor ends (0 when its tensors are missing: reading it then
    /// says which).
    fn next_piece_end(&self) -> usize {
        self.next_piece().map_or(0, |piece| {
            piece_tensors(piece)
                .iter()
                .filter_map(|name| self.header.tensors.info(name))
                .map(|info| info.data_offsets.1)
                .max()
                .unwrap_or(0)
        })
    }

    /// The weights, from the whole file (`file`, of the length its header gives).
    pub fn finish(mut self, file: &[u8]) -> Result<BertWeights, ModelError> {
        if file.len() != self.header.file_len() {
            return Err(format_error(format!(
                "not a safetensors file: {} bytes where its header describes {}",
                file.len(),
                self.header.file_len()
            )));
        }
        self.advance(file)?;
        // After the whole file every piece is read, or `advance` gave its error.
        let (None, Some(embeddings)) = (self.next_piece(), self.embeddings) else {
            return Err(format_error("the file ends before its last tensor"));
        };
        let FileHeader {
            config,
            tokenizer_json,
            ..
        } = self.header;
        Ok(BertWeights {
            config,
            word_embeddings: embeddings.word,
            position_embeddings: embeddings.position,
            token_type_embedding: embeddings.token_type,
            embedding_norm: embeddings.norm,
            layers: self.layers,
            tokenizer_json,
        })
    }

    fn next_piece(&self) -> Option<Piece> {
        if self.embeddings.is_none() {
            Some(Piece::Embeddings)
        } else if self.layers.len() < self.header.config.num_hidden_layers {
            Some(Piece::Layer(self.layers.len()))
        } else {
            None
        }
    }
}

const WORD_EMBEDDINGS: &str = "embeddings.word_embeddings.weight";
const POSITION_EMBEDDINGS: &str = "embeddings.position_embeddings.weight";
const TOKEN_TYPE_EMBEDDINGS: &str = "embeddings.token_type_embeddings.weight";
const EMBEDDING_NORM: &str = "embeddings.LayerNorm";
/// A layer's dense layers under `encoder.layer.{l}.`, besides the query, key and value.
const ATTENTION_OUTPUT: &str = "attention.output.dense";
const INTERMEDIATE: &str = "intermediate.dense";
const OUTPUT: &str = "output.dense";
const ATTENTION_NORM: &str = "attention.output.LayerNorm";
const OUTPUT_NORM: &str = "output.LayerNorm";
const QKV: [&str; 3] = ["query", "key", "value"];

/// The names of layer `l`'s tensor `name` (`weight` or `bias`).
fn layer_tensor(l: usize, name: &str, part: &str) -> String {
    format!("encoder.layer.{l}.{name}.{part}")
}

/// Every tensor a piece is read from.
fn piece_tensors(piece: Piece) -> Vec<String> {
    match piece {
        Piece::Embeddings => [WORD_EMBEDDINGS, POSITION_EMBEDDINGS, TOKEN_TYPE_EMBEDDINGS]
            .map(String::from)
            .into_iter()
            .chain(["weight", "bias"].map(|p| format!("{EMBEDDING_NORM}.{p}")))
            .collect(),
        Piece::Layer(l) => QKV
            .iter()
            .map(|m| format!("attention.self.{m}"))
            .chain(
                [
                    ATTENTION_OUTPUT,
                    INTERMEDIATE,
                    OUTPUT,
                    ATTENTION_NORM,
                    OUTPUT_NORM,
                ]
                .map(String::from),
            )
            .flat_map(|name| ["weight", "bias"].map(|p| layer_tensor(l, &name, p)))
            .collect(),
    }
}

/// The tensors' places and the data received so far.
struct Stored<'a> {
    tensors: &'a Metadata,
    data: &'a [u8],
}

impl<'a> Stored<'a> {
    /// A tensor's type and bytes, checked to be of `shape`.
    fn raw(&self, name: &str, shape: &[usize]) -> Result<(Dtype, &'a [u8]), ModelError> {
        let info = self
            .tensors
            .info(name)
            .ok_or_else(|| format_error(format!("tensor {name} is missing")))?;
        if info.shape != shape {
            return Err(format_error(format!(
                "tensor {name} has shape {:?}, expected {shape:?}",
                info.shape
            )));
        }
        let (start, end) = info.data_offsets;
        let bytes = self
            .data
            .get(start..end)
            .ok_or_else(|| format_error(format!("tensor {name} lies past the bytes received")))?;
        Ok((info.dtype, bytes))
    }

    fn format(name: &str, dtype: Dtype) -> Result<StoredFloat, ModelError> {
        match dtype {
            Dtype::F16 => Ok(StoredFloat::F16),
            Dtype::F32 => Ok(StoredFloat::F32),
            other => Err(format_error(format!(
                "tensor {name} is {other:?}, expected F16 or F32"
            ))),
        }
    }

    /// A tensor's values as f32 (f16 widened exactly), checked to be finite and of `shape`.
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let (dtype, bytes) = self.raw(name, shape)?;
        let format = Self::format(name, dtype)?;
        let mut values = vec![0.0f32; bytes.len() / format.size()];
        if !widen(bytes, format, &mut values) {
            return Err(format_error(format!(
                "tensor {name} has a non-finite value"
            )));
        }
        Ok(values)
    }

    /// The dense layer whose weight is the rows of `prefixes`' weights one after the other
    /// (`outputs × inputs` in all) and whose bias is theirs joined, packed straight from the
    /// file's bytes.
    fn linear(
        &self,
        prefixes: &[String],
        inputs: usize,
        outputs: usize,
    ) -> Result<PackedLinear, ModelError> {
        let part = outputs / prefixes.len().max(1);
        let mut blocks = Vec::with_capacity(prefixes.len());
        let mut bias = Vec::with_capacity(outputs);
        let mut format = None;
        for prefix in prefixes {
            let name = format!("{prefix}.weight");
            let (dtype, bytes) = self.raw(&name, &[part, inputs])?;
            let this = Self::format(&name, dtype)?;
            if format.is_some_and(|f| f != this) {
                return Err(format_error(format!(
                    "tensor {name} is {dtype:?}, unlike the others of its layer"
                )));
            }
            format = Some(this);
            blocks.push(bytes);
            bias.extend(self.tensor(&format!("{prefix}.bias"), &[part])?);
        }
        let format = format.unwrap_or(StoredFloat::F32);
        PackedLinear::from_stored(&blocks, format, bias, inputs, outputs)
            .map_err(|e| format_error(format!("tensor {}.weight: {e}", prefixes.join(" + "))))
    }

    fn layer_norm(&self, prefix: &str, size: usize) -> Result<LayerNorm, ModelError> {
        Ok(LayerNorm {
            weight: self.tensor(&format!("{prefix}.weight"), &[size])?,
            bias: self.tensor(&format!("{prefix}.bias"), &[size])?,
        })
    }

    /// The word embeddings (kept f16: only a text's rows are ever widened), the positions',
    /// token type 0's row, and their norm.
    fn embeddings(&self, config: &BertConfig) -> Result<Embeddings, ModelError> {
        let h = config.hidden_size;
        let (word_type, word) = self.raw(WORD_EMBEDDINGS, &[config.vocab_size, h])?;
        if word_type != Dtype::F16 {
            return Err(format_error(format!(
                "{WORD_EMBEDDINGS} is {word_type:?}, expected F16"
            )));
        }
        let mut special = false;
        let word: Vec<f16> = word
            .chunks_exact(2)
            .map(|c| {
                let bits = u16::from_le_bytes([c[0], c[1]]);
                special |= f16_is_special(bits);
                f16::from_bits(bits)
            })
            .collect();
        if special {
            return Err(format_error(format!(
                "{WORD_EMBEDDINGS} has a non-finite value"
            )));
        }
        let mut token_type = self.tensor(TOKEN_TYPE_EMBEDDINGS, &[config.type_vocab_size, h])?;
        token_type.truncate(h);
        Ok(Embeddings {
            word,
            position: self.tensor(POSITION_EMBEDDINGS, &[config.max_position_embeddings, h])?,
            token_type,
            norm: self.layer_norm(EMBEDDING_NORM, h)?,
        })
    }

    /// Encoder layer `l`: queries, keys and values as one product, then the rest.
    fn layer(&self, l: usize, config: &BertConfig) -> Result<EncoderLayer, ModelError> {
        let h = config.hidden_size;
        let prefix = |name: &str| format!("encoder.layer.{l}.{name}");
        let qkv = QKV.map(|m| prefix(&format!("attention.self.{m}")));
        let dense = |name: &str, inputs, outputs| {
            self.linear(std::slice::from_ref(&prefix(name)), inputs, outputs)
        };
        Ok(EncoderLayer {
            qkv: self.linear(&qkv, h, 3 * h)?,
            attention_output: dense(ATTENTION_OUTPUT, h, h)?,
            attention_norm: self.layer_norm(&prefix(ATTENTION_NORM), h)?,
            intermediate: dense(INTERMEDIATE, h, config.intermediate_size)?,
            output: dense(OUTPUT, config.intermediate_size, h)?,
            output_norm: self.layer_norm(&prefix(OUTPUT_NORM), h)?,
        })
    }
}
