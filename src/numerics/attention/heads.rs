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
use serde::Deserialize;

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
#[derive(Clone, Debug, PartialEq, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct HeadsSource {
    pub registry: String,
    pub package: String,
    pub version: String,
    pub file: String,
    /// SHA-256 of the safetensors file, hex.
    pub sha256: String,
}

/// One input text and its tokens (word pieces, `[CLS]` first and `[SEP]` last).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Passage {
    pub text: String,
    pub tokens: Vec<String>,
}

/// `softmax(q kᵀ / √head_dim)` row `row` of one head, from the full-precision forward.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ReferenceRow {
    pub passage: usize,
    pub layer: usize,
    pub head: usize,
    pub row: usize,
    pub probs: Vec<f32>,
}

/// One head's queries, keys and values on one passage: `len × dim` each, row-major (row `i` is
/// token `i`), raw (unscaled) unless made by [`HeadQkv::model_scaled`].
#[derive(Clone, Debug, PartialEq)]
pub struct HeadQkv {
    pub len: usize,
    pub dim: usize,
    pub q: Vec<f64>,
    pub k: Vec<f64>,
    pub v: Vec<f64>,
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
        }
    }
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

impl RealHeads {
    /// Reads the asset's bytes (see the module documentation for the format). Any input gives
    /// either the heads or an error: the header must describe exactly the data that follows,
    /// and every value must be finite.
    pub fn parse(bytes: &[u8]) -> Result<Self, HeadsError> {
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

    /// What the values are: model, passages, shapes, reference rows, verification.
    pub fn header(&self) -> &HeadsHeader {
        &self.header
    }

    /// Head `head` of layer `layer` on passage `passage`: raw `q`, `k`, `v`, each
    /// `tokens_per_passage × head_dim`. An index out of range is an error.
    pub fn head(&self, passage: usize, layer: usize, head: usize) -> Result<HeadQkv, HeadsError> {
        let h = &self.header;
        for (what, index, count) in [
            ("passage", passage, h.passages.len()),
            ("layer", layer, h.layers),
            ("head", head, h.heads),
        ] {
            if index >= count {
                return Err(HeadsError::OutOfRange { what, index, count });
            }
        }
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
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A well-formed asset of the given shape; value `i` is `i` modulo 64 (exact in f16).
    fn blob_with(header: &serde_json::Value, values: usize) -> Vec<u8> {
        let json = serde_json::to_vec(header).unwrap();
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(json.len() as u32).to_le_bytes());
        out.extend_from_slice(&json);
        for i in 0..values {
            out.extend_from_slice(&f16::from_f32((i % 64) as f32).to_le_bytes());
        }
        out
    }

    fn small_header() -> serde_json::Value {
        serde_json::json!({
            "model": "test", "license": "MIT",
            "source": {"registry": "none", "package": "none", "version": "0", "file": "none",
                       "sha256": "00"},
            "layers": 2, "heads": 3, "head_dim": 2, "tokens_per_passage": 2,
            "passages": [{"text": "a", "tokens": ["[CLS]", "[SEP]"]}],
            "dtype": "f16", "layout": "test", "scaling": "raw",
            "reference_rows": [{"passage": 0, "layer": 1, "head": 2, "row": 1,
                                "probs": [0.25, 0.75]}],
            "verification": null
        })
    }

    /// 1 passage × 2 layers × 3 heads × 3 × 2 tokens × 2 dims.
    const SMALL_VALUES: usize = 72;

    #[test]
    fn a_small_asset_round_trips() {
        let heads = RealHeads::parse(&blob_with(&small_header(), SMALL_VALUES)).unwrap();
        assert_eq!(heads.header().reference_rows[0].probs, vec![0.25, 0.75]);
        // Layer 1, head 2 is the last head: values 60..71.
        let h = heads.head(0, 1, 2).unwrap();
        assert_eq!((h.len, h.dim), (2, 2));
        assert_eq!(h.q, vec![60.0, 61.0, 62.0, 63.0]);
        assert_eq!(h.k, vec![0.0, 1.0, 2.0, 3.0]); // 64..67 modulo 64
        assert_eq!(h.v, vec![4.0, 5.0, 6.0, 7.0]);
        let first = heads.head(0, 0, 0).unwrap();
        assert_eq!(first.q, vec![0.0, 1.0, 2.0, 3.0]);
    }

    #[test]
    fn model_scaling_multiplies_q_and_k_by_dim_to_the_minus_quarter() {
        let heads = RealHeads::parse(&blob_with(&small_header(), SMALL_VALUES)).unwrap();
        let raw = heads.head(0, 0, 1).unwrap();
        let scaled = raw.model_scaled();
        let s = 2f64.powf(-0.25);
        for i in 0..4 {
            assert_eq!(scaled.q[i], raw.q[i] * s);
            assert_eq!(scaled.k[i], raw.k[i] * s);
        }
        assert_eq!(scaled.v, raw.v);
        // q·k after scaling is the logit q kᵀ / √dim.
        let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
        let logit = dot(&raw.q[..2], &raw.k[..2]) / 2f64.sqrt();
        assert!((dot(&scaled.q[..2], &scaled.k[..2]) - logit).abs() < 1e-12);
    }

    #[test]
    fn out_of_range_indices_are_errors() {
        let heads = RealHeads::parse(&blob_with(&small_header(), SMALL_VALUES)).unwrap();
        assert_eq!(
            heads.head(1, 0, 0),
            Err(HeadsError::OutOfRange {
                what: "passage",
                index: 1,
                count: 1
            })
        );
        assert!(matches!(
            heads.head(0, 2, 0),
            Err(HeadsError::OutOfRange { what: "layer", .. })
        ));
        assert!(matches!(
            heads.head(0, 0, 3),
            Err(HeadsError::OutOfRange { what: "head", .. })
        ));
        assert!(heads.head(usize::MAX, usize::MAX, usize::MAX).is_err());
    }

    #[test]
    fn broken_preambles_are_errors() {
        let good = blob_with(&small_header(), SMALL_VALUES);
        assert_eq!(
            RealHeads::parse(&[]),
            Err(HeadsError::Truncated {
                needed: 16,
                available: 0
            })
        );
        assert_eq!(
            RealHeads::parse(b"SKLH"),
            Err(HeadsError::Truncated {
                needed: 16,
                available: 4
            })
        );
        assert_eq!(RealHeads::parse(b"PK\x03\x04"), Err(HeadsError::BadMagic));
        let mut bad_magic = good.clone();
        bad_magic[0] = b's';
        assert_eq!(RealHeads::parse(&bad_magic), Err(HeadsError::BadMagic));
        let mut version = good.clone();
        version[8] = 2;
        assert_eq!(
            RealHeads::parse(&version),
            Err(HeadsError::UnsupportedVersion(2))
        );
        let mut long_header = good.clone();
        long_header[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            RealHeads::parse(&long_header),
            Err(HeadsError::Truncated { .. })
        ));
    }

    #[test]
    fn data_of_the_wrong_size_is_an_error() {
        let header = small_header();
        let short = blob_with(&header, SMALL_VALUES - 1);
        assert_eq!(
            RealHeads::parse(&short),
            Err(HeadsError::DataLength {
                expected: 144,
                found: 142
            })
        );
        let mut odd = blob_with(&header, SMALL_VALUES);
        odd.push(0);
        assert!(matches!(
            RealHeads::parse(&odd),
            Err(HeadsError::DataLength { .. })
        ));
        // A header claiming more layers than the data holds.
        let mut more = header.clone();
        more["layers"] = 3.into();
        assert!(matches!(
            RealHeads::parse(&blob_with(&more, SMALL_VALUES)),
            Err(HeadsError::DataLength { .. })
        ));
        // Sizes whose product overflows usize.
        let mut huge = header;
        huge["layers"] = (usize::MAX / 2).into();
        huge["heads"] = (usize::MAX / 2).into();
        assert!(matches!(
            RealHeads::parse(&blob_with(&huge, SMALL_VALUES)),
            Err(HeadsError::InvalidHeader { .. })
        ));
    }

    #[test]
    fn bad_headers_are_errors() {
        let mut not_json = blob_with(&small_header(), SMALL_VALUES);
        not_json[PREAMBLE_LEN] = b'[';
        assert!(matches!(
            RealHeads::parse(&not_json),
            Err(HeadsError::BadHeader(_))
        ));
        let mutations: [(&str, serde_json::Value); 6] = [
            ("dtype", "f32".into()),
            ("heads", 0.into()),
            ("tokens_per_passage", 3.into()),
            ("passages", serde_json::json!([])),
            (
                "reference_rows",
                serde_json::json!([{"passage": 0, "layer": 2, "head": 0, "row": 0,
                                    "probs": [0.5, 0.5]}]),
            ),
            (
                "reference_rows",
                serde_json::json!([{"passage": 0, "layer": 0, "head": 0, "row": 0,
                                    "probs": [0.5]}]),
            ),
        ];
        for (field, value) in mutations {
            let mut header = small_header();
            header[field] = value;
            let err = RealHeads::parse(&blob_with(&header, SMALL_VALUES)).unwrap_err();
            assert!(
                matches!(
                    err,
                    HeadsError::InvalidHeader { .. } | HeadsError::NonFinite { .. }
                ),
                "{field}: {err}"
            );
        }
        // A probability beyond f32 (serde_json refuses it rather than making it infinite).
        let mut beyond_f32 = small_header();
        beyond_f32["reference_rows"][0]["probs"][1] = 1e300.into();
        assert!(matches!(
            RealHeads::parse(&blob_with(&beyond_f32, SMALL_VALUES)),
            Err(HeadsError::BadHeader(_))
        ));
        let mut missing = small_header();
        missing.as_object_mut().unwrap().remove("passages");
        assert!(matches!(
            RealHeads::parse(&blob_with(&missing, SMALL_VALUES)),
            Err(HeadsError::BadHeader(_))
        ));
    }

    #[test]
    fn non_finite_values_are_errors() {
        for bits in [0x7c00u16, 0xfc00, 0x7e00] {
            // +inf, -inf, NaN as the 10th value.
            let mut blob = blob_with(&small_header(), SMALL_VALUES);
            let at = blob.len() - SMALL_VALUES * 2 + 9 * 2;
            blob[at..at + 2].copy_from_slice(&bits.to_le_bytes());
            assert_eq!(
                RealHeads::parse(&blob),
                Err(HeadsError::NonFinite {
                    what: "value",
                    index: 9
                })
            );
        }
    }

    #[test]
    fn errors_display_what_went_wrong() {
        let text = HeadsError::OutOfRange {
            what: "layer",
            index: 7,
            count: 6,
        }
        .to_string();
        assert_eq!(text, "layer 7 does not exist (there are 6)");
        assert!(HeadsError::BadMagic.to_string().contains("SKLHEADS"));
    }

    /// The committed asset: parses, and has the documented shape.
    #[test]
    fn the_committed_asset_parses_with_its_documented_shape() {
        let path = format!("{}/{HEADS_ASSET_PATH}", env!("CARGO_MANIFEST_DIR"));
        let bytes = std::fs::read(&path).expect("the committed asset is readable");
        assert!(bytes.len() < 1_000_000, "the asset stays under 1 MB");
        let heads = RealHeads::parse(&bytes).unwrap();
        let h = heads.header();
        assert_eq!(h.model, "sentence-transformers/all-MiniLM-L6-v2");
        assert_eq!(h.license, "Apache-2.0");
        assert_eq!(
            (
                h.passages.len(),
                h.layers,
                h.heads,
                h.tokens_per_passage,
                h.head_dim
            ),
            (2, 6, 12, 32, 32)
        );
        for p in &h.passages {
            assert_eq!(p.tokens.first().map(String::as_str), Some("[CLS]"));
            assert_eq!(p.tokens.last().map(String::as_str), Some("[SEP]"));
        }
        let last = heads.head(1, 5, 11).unwrap();
        assert_eq!((last.len, last.dim, last.q.len()), (32, 32, 1024));
    }
}
