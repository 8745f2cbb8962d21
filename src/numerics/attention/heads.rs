//! Real attention inputs: the queries, keys and values of every head of a pretrained
//! transformer (all-MiniLM-L6-v2), read from the committed asset `assets/minilm-heads.bin`.
//!
//! Why: the seed paper's synthetic datasets (Laplace means, Gamma variances) are a model of
//! attention inputs; these are the real thing, so the estimators can be scored on the q and k a
//! trained model actually produces (6 layers × 12 heads, two fixed passages of 32 tokens).
//!
//! The asset is written by `scripts/extract-heads.py` (a NumPy forward of the model, checked
//! against candle's `BertModel` by `tools/verify-heads`). Its format, little-endian:
//!
//! | bytes | content |
//! |---|---|
//! | 8 | magic `SKLHEADS` |
//! | 4 | `u32` format version, [`FORMAT_VERSION`] |
//! | 4 | `u32` length `n` of the header |
//! | n | UTF-8 JSON header ([`HeadsHeader`]) |
//! | rest | f16 values ordered `[passage][layer][head][q, k, v][token][dim]` |
//!
//! The values are the raw projections `x Wᵀ + b` of each layer's input, before any scaling; the
//! model itself scales `q` and `k` by `head_dim^(-1/4)` each ([`HeadQkv::model_scaled`]), so that
//! `q·k` is the logit `q kᵀ / √head_dim` of its softmax.
//!
//! [`RealHeads::parse`] takes any bytes: a wrong magic, a truncated file, a header that does not
//! match the data, bad JSON or a non-finite value is a [`HeadsError`], never a panic. The page
//! fetches the asset lazily (it is about 0.9 MB, kept out of the wasm).

use std::fmt;

use half::f16;

use super::AttentionError;
use super::data::AttentionData;
use serde::{Deserialize, Serialize};

/// Where the asset lives, relative to the crate root; also the URL path the page fetches it from.
pub const HEADS_ASSET_PATH: &str = "assets/minilm-heads.bin";

/// The first 8 bytes of the asset.
pub const MAGIC: &[u8; 8] = b"SKLHEADS";

/// The only format version this loader reads.
pub const FORMAT_VERSION: u32 = 1;

/// Magic, version and header length.
const PREAMBLE_LEN: usize = 16;

/// Bytes per stored value (f16).
const VALUE_BYTES: usize = 2;

/// Why the asset could not be read, or a head not returned.
#[derive(Clone, Debug, PartialEq)]
pub enum HeadsError {
    /// The first 8 bytes are not `SKLHEADS`.
    BadMagic,
    /// A format version this loader does not know.
    UnsupportedVersion(u32),
    /// The input ends before the preamble or the header it announces.
    Truncated { needed: usize, available: usize },
    /// The header is not valid UTF-8 JSON of the expected shape.
    BadHeader(String),
    /// The header parses but describes something unusable (zero sizes, wrong dtype, …).
    InvalidHeader { field: &'static str, reason: String },
    /// The data after the header is not exactly the size the header describes.
    DataLength { expected: usize, found: usize },
    /// A stored value (or a reference probability) is NaN or infinite.
    NonFinite { what: &'static str, index: usize },
    /// A requested passage, layer or head does not exist.
    OutOfRange {
        what: &'static str,
        index: usize,
        count: usize,
    },
}

impl fmt::Display for HeadsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeadsError::BadMagic => write!(f, "not a heads asset: the magic is not SKLHEADS"),
            HeadsError::UnsupportedVersion(v) => {
                write!(
                    f,
                    "heads asset version {v} (this loader reads {FORMAT_VERSION})"
                )
            }
            HeadsError::Truncated { needed, available } => write!(
                f,
                "heads asset truncated: needs at least {needed} bytes, has {available}"
            ),
            HeadsError::BadHeader(reason) => write!(f, "heads asset header: {reason}"),
            HeadsError::InvalidHeader { field, reason } => {
                write!(f, "heads asset header field `{field}`: {reason}")
            }
            HeadsError::DataLength { expected, found } => write!(
                f,
                "heads asset data is {found} bytes, the header describes {expected}"
            ),
            HeadsError::NonFinite { what, index } => {
                write!(f, "heads asset: {what} {index} is not a finite number")
            }
            HeadsError::OutOfRange { what, index, count } => {
                write!(f, "{what} {index} does not exist (there are {count})")
            }
        }
    }
}

impl std::error::Error for HeadsError {}

/// The asset's JSON header: what the values are and where they come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeadsHeader {
    /// `sentence-transformers/all-MiniLM-L6-v2`.
    pub model: String,
    /// The model's licence (Apache-2.0).
    pub license: String,
    /// Where the weights were taken from.
    pub source: HeadsSource,
    pub layers: usize,
    pub heads: usize,
    pub head_dim: usize,
    pub tokens_per_passage: usize,
    pub passages: Vec<Passage>,
    /// `"f16"`, the only stored type this loader reads.
    pub dtype: String,
    /// The order of the values, in words.
    pub layout: String,
    /// What scaling the values carry (none: raw projections).
    pub scaling: String,
    /// Softmax rows computed by the extraction's forward at full precision (stored as f32).
    pub reference_rows: Vec<ReferenceRow>,
    /// The agreement measured at extraction time, as written by the script (free-form JSON).
    pub verification: serde_json::Value,
}

/// The package and file the weights were read from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeadsSource {
    pub registry: String,
    pub package: String,
    pub version: String,
    pub file: String,
    /// SHA-256 of the safetensors file, hex.
    pub sha256: String,
}

/// One input text and its tokens (word pieces, `[CLS]` first and `[SEP]` last).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Passage {
    pub text: String,
    pub tokens: Vec<String>,
}

/// `softmax(q kᵀ / √head_dim)` row `row` of one head, from the full-precision forward.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReferenceRow {
    pub passage: usize,
    pub layer: usize,
    pub head: usize,
    pub row: usize,
    pub probs: Vec<f32>,
}

/// One head's queries, keys and values on one passage: `len × dim` each, row-major (row `i` is
/// token `i`), raw (unscaled) unless made by [`HeadQkv::model_scaled`]; `causal` for a
/// decoder's head (each query sees its own and the earlier keys only).
#[derive(Clone, Debug, PartialEq)]
pub struct HeadQkv {
    pub len: usize,
    pub dim: usize,
    pub q: Vec<f64>,
    pub k: Vec<f64>,
    pub v: Vec<f64>,
    pub causal: bool,
}

impl HeadQkv {
    /// The vectors as the model uses them: `q` and `k` times `dim^(-1/4)`, so that `q·k` is the
    /// softmax logit `q kᵀ / √dim`; `v` unchanged.
    pub fn model_scaled(&self) -> HeadQkv {
        let scale = (self.dim as f64).powf(-0.25);
        HeadQkv {
            len: self.len,
            dim: self.dim,
            q: self.q.iter().map(|x| x * scale).collect(),
            k: self.k.iter().map(|x| x * scale).collect(),
            v: self.v.clone(),
            causal: self.causal,
        }
    }

    /// The attention view's problem on this head (checked: shapes and finite values), under
    /// the causal mask when the head is a decoder's.
    pub fn into_data(self) -> Result<AttentionData, AttentionError> {
        let causal = self.causal;
        Ok(
            AttentionData::new(self.len, self.dim, self.dim, self.q, self.k, self.v)?
                .with_causal_mask(causal),
        )
    }
}

/// The sizes of a set of real heads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadShape {
    pub layers: usize,
    /// Heads per layer (a decoder's query heads: heads sharing keys and values count apart).
    pub heads: usize,
    pub head_dim: usize,
    /// Tokens of each passage.
    pub tokens: usize,
    pub passages: usize,
    /// Whether attention is causal (a decoder's).
    pub causal: bool,
}

/// Real heads the attention view reads: the stored asset's ([`RealHeads`], two passages), a
/// text's heads of the encoder (one passage), or a causal language model's on a text.
pub trait HeadSet: Send + Sync {
    /// Its sizes.
    fn shape(&self) -> HeadShape;
    /// Passage `passage`'s tokens, as the model's tokenizer wrote them.
    fn tokens(&self, passage: usize) -> Option<&[String]>;
    /// Head `head` of layer `layer` on passage `passage`: raw `q`, `k`, `v`, each
    /// `tokens × head_dim`. An index out of range is an error.
    fn head(&self, passage: usize, layer: usize, head: usize) -> Result<HeadQkv, HeadsError>;
}

/// [`HeadsError::OutOfRange`] for the first of `checks` (name, index, count) out of range.
pub fn check_ranges(checks: [(&'static str, usize, usize); 3]) -> Result<(), HeadsError> {
    for (what, index, count) in checks {
        if index >= count {
            return Err(HeadsError::OutOfRange { what, index, count });
        }
    }
    Ok(())
}

/// The parsed asset: its header and every value, widened from f16 to f32 (exactly).
#[derive(Clone, Debug, PartialEq)]
pub struct RealHeads {
    header: HeadsHeader,
    values: Vec<f32>,
}

fn invalid(field: &'static str, reason: impl Into<String>) -> HeadsError {
    HeadsError::InvalidHeader {
        field,
        reason: reason.into(),
    }
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Number of f16 values the header describes, checked against overflow.
fn value_count(h: &HeadsHeader) -> Result<usize, HeadsError> {
    [h.layers, h.heads, 3, h.tokens_per_passage, h.head_dim]
        .into_iter()
        .try_fold(h.passages.len(), usize::checked_mul)
        .ok_or_else(|| invalid("layers", "the sizes multiply beyond addressable memory"))
}

fn check_header(h: &HeadsHeader) -> Result<(), HeadsError> {
    if h.dtype != "f16" {
        return Err(invalid(
            "dtype",
            format!("\"{}\", expected \"f16\"", h.dtype),
        ));
    }
    for (field, value) in [
        ("layers", h.layers),
        ("heads", h.heads),
        ("head_dim", h.head_dim),
        ("tokens_per_passage", h.tokens_per_passage),
        ("passages", h.passages.len()),
    ] {
        if value == 0 {
            return Err(invalid(field, "must not be zero"));
        }
    }
    if let Some(p) = h
        .passages
        .iter()
        .position(|p| p.tokens.len() != h.tokens_per_passage)
    {
        return Err(invalid(
            "passages",
            format!(
                "passage {p} has {} tokens, tokens_per_passage is {}",
                h.passages[p].tokens.len(),
                h.tokens_per_passage
            ),
        ));
    }
    for (i, r) in h.reference_rows.iter().enumerate() {
        let in_range = r.passage < h.passages.len()
            && r.layer < h.layers
            && r.head < h.heads
            && r.row < h.tokens_per_passage
            && r.probs.len() == h.tokens_per_passage;
        if !in_range {
            return Err(invalid(
                "reference_rows",
                format!("row {i} does not fit the shape the header describes"),
            ));
        }
        if let Some(j) = r.probs.iter().position(|p| !p.is_finite()) {
            return Err(HeadsError::NonFinite {
                what: "reference probability",
                index: i * h.tokens_per_passage + j,
            });
        }
    }
    Ok(())
}

/// Writes `values` (ordered as the module documentation says, rounded to f16) after `header`
/// in the asset's format: what the model worker sends for the user's text, read back by
/// [`RealHeads::parse`] like the stored asset.
pub fn write_asset(header: &HeadsHeader, values: &[f32]) -> Result<Vec<u8>, HeadsError> {
    let json = serde_json::to_vec(header).map_err(|e| HeadsError::BadHeader(e.to_string()))?;
    let header_len = u32::try_from(json.len())
        .map_err(|_| invalid("passages", "the header is longer than 4 GB"))?;
    let mut bytes = Vec::with_capacity(PREAMBLE_LEN + json.len() + values.len() * VALUE_BYTES);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&header_len.to_le_bytes());
    bytes.extend_from_slice(&json);
    for v in values {
        bytes.extend_from_slice(&f16::from_f32(*v).to_le_bytes());
    }
    Ok(bytes)
}

/// The asset's header, checked, and its data, checked to be the size the header describes.
fn split_asset(bytes: &[u8]) -> Result<(HeadsHeader, &[u8]), HeadsError> {
    if bytes.len() < PREAMBLE_LEN {
        // A short input that does not even start like the asset is not one.
        if !MAGIC.starts_with(bytes) {
            return Err(HeadsError::BadMagic);
        }
        return Err(HeadsError::Truncated {
            needed: PREAMBLE_LEN,
            available: bytes.len(),
        });
    }
    if &bytes[..8] != MAGIC {
        return Err(HeadsError::BadMagic);
    }
    let version = read_u32(bytes, 8);
    if version != FORMAT_VERSION {
        return Err(HeadsError::UnsupportedVersion(version));
    }
    let header_len = usize::try_from(read_u32(bytes, 12)).unwrap_or(usize::MAX);
    let data_start = PREAMBLE_LEN.saturating_add(header_len);
    if bytes.len() < data_start {
        return Err(HeadsError::Truncated {
            needed: data_start,
            available: bytes.len(),
        });
    }
    let header: HeadsHeader = serde_json::from_slice(&bytes[PREAMBLE_LEN..data_start])
        .map_err(|e| HeadsError::BadHeader(e.to_string()))?;
    check_header(&header)?;
    let data = &bytes[data_start..];
    let expected = value_count(&header)?
        .checked_mul(VALUE_BYTES)
        .ok_or_else(|| invalid("layers", "the sizes multiply beyond addressable memory"))?;
    if data.len() != expected {
        return Err(HeadsError::DataLength {
            expected,
            found: data.len(),
        });
    }
    Ok((header, data))
}

impl RealHeads {
    /// Reads the asset's bytes (see the module documentation for the format). Any input gives
    /// either the heads or an error: the header must describe exactly the data that follows,
    /// and every value must be finite.
    pub fn parse(bytes: &[u8]) -> Result<Self, HeadsError> {
        let (header, data) = split_asset(bytes)?;
        let values: Vec<f32> = data
            .chunks_exact(VALUE_BYTES)
            .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect();
        if let Some(index) = values.iter().position(|v| !v.is_finite()) {
            return Err(HeadsError::NonFinite {
                what: "value",
                index,
            });
        }
        Ok(RealHeads { header, values })
    }

    /// The heads of `header` from `values` (ordered as the module documentation says), rounded
    /// to f16 as [`write_asset`] stores them: what [`RealHeads::parse`] gives on that asset,
    /// without writing and reading it (the model workers keep the reader's text's heads so).
    pub fn from_values(header: HeadsHeader, values: &[f32]) -> Result<Self, HeadsError> {
        check_header(&header)?;
        let expected = value_count(&header)?;
        if values.len() != expected {
            return Err(HeadsError::DataLength {
                expected: expected.saturating_mul(VALUE_BYTES),
                found: values.len().saturating_mul(VALUE_BYTES),
            });
        }
        let values: Vec<f32> = values.iter().map(|&v| f16::from_f32(v).to_f32()).collect();
        if let Some(index) = values.iter().position(|v| !v.is_finite()) {
            return Err(HeadsError::NonFinite {
                what: "value",
                index,
            });
        }
        Ok(RealHeads { header, values })
    }

    /// What the values are: model, passages, shapes, reference rows, verification.
    pub fn header(&self) -> &HeadsHeader {
        &self.header
    }

    /// Head `head` of layer `layer` on passage `passage`: raw `q`, `k`, `v`, each
    /// `tokens_per_passage × head_dim`. An index out of range is an error.
    pub fn head(&self, passage: usize, layer: usize, head: usize) -> Result<HeadQkv, HeadsError> {
        let h = &self.header;
        check_ranges([
            ("passage", passage, h.passages.len()),
            ("layer", layer, h.layers),
            ("head", head, h.heads),
        ])?;
        // In range, and parse checked that the product of all sizes fits in usize.
        let block = h.tokens_per_passage * h.head_dim;
        let start = ((passage * h.layers + layer) * h.heads + head) * 3 * block;
        let widen = |part: usize| -> Vec<f64> {
            self.values[start + part * block..start + (part + 1) * block]
                .iter()
                .map(|&x| f64::from(x))
                .collect()
        };
        Ok(HeadQkv {
            len: h.tokens_per_passage,
            dim: h.head_dim,
            q: widen(0),
            k: widen(1),
            v: widen(2),
            causal: false,
        })
    }
}

impl HeadSet for RealHeads {
    fn shape(&self) -> HeadShape {
        let h = &self.header;
        HeadShape {
            layers: h.layers,
            heads: h.heads,
            head_dim: h.head_dim,
            tokens: h.tokens_per_passage,
            passages: h.passages.len(),
            causal: false,
        }
    }

    fn tokens(&self, passage: usize) -> Option<&[String]> {
        self.header
            .passages
            .get(passage)
            .map(|p| p.tokens.as_slice())
    }

    fn head(&self, passage: usize, layer: usize, head: usize) -> Result<HeadQkv, HeadsError> {
        RealHeads::head(self, passage, layer, head)
    }
}

#[cfg(test)]
mod tests;
