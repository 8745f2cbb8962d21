//! A GGUF file read from its bytes (llama.cpp's format, version 3: `docs/gguf.md` of ggml):
//! the magic `GGUF`, the version, the tensor and key/value counts, the key/values (typed:
//! integers, floats, booleans, strings, arrays of one type), the tensor infos (name, dimensions
//! innermost first, type, offset), then the tensors' data from the next multiple of
//! `general.alignment` (32 when absent).
//!
//! Every length is checked against the bytes that remain before anything is allocated, so a
//! truncated or damaged file is an [`LmError::Format`] naming what was being read, never a
//! panic or an allocation of what a corrupt count claims.

use std::collections::BTreeMap;
use std::ops::Range;

use super::LmError;
use super::quant::TensorType;

/// One key's value.
#[derive(Clone, Debug, PartialEq)]
pub enum GgufValue {
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    Bool(bool),
    Text(String),
    Array(Vec<GgufValue>),
}

/// One tensor's description; `data` is its byte range in the file.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// Dimensions, innermost first (a matrix of `rows` rows of `cols` is `[cols, rows]`).
    pub dims: Vec<u64>,
    pub kind: TensorType,
    pub data: Range<usize>,
}

/// A parsed GGUF file: its key/values and its tensors (the bytes stay with the caller).
#[derive(Clone, Debug, PartialEq)]
pub struct Gguf {
    pub version: u32,
    pub metadata: BTreeMap<String, GgufValue>,
    pub tensors: Vec<TensorInfo>,
}

/// Reads the header, key/values and tensor infos of `bytes` (the whole file), and checks that
/// every tensor's data lies inside it.
pub fn parse(bytes: &[u8]) -> Result<Gguf, LmError> {
    let mut cursor = Cursor { bytes, at: 0 };
    let magic = cursor.take(4, "the magic number")?;
    if magic != b"GGUF" {
        return Err(format_error(
            "it does not start with GGUF: it is not a GGUF model file",
        ));
    }
    let version = cursor.u32("the version")?;
    if version != 2 && version != 3 {
        return Err(format_error(format!(
            "GGUF version {version}; this reader knows versions 2 and 3"
        )));
    }
    let tensor_count = cursor.u64("the tensor count")?;
    let kv_count = cursor.u64("the key/value count")?;
    let mut metadata = BTreeMap::new();
    for index in 0..kv_count {
        let key = cursor.string(&format!("key {index}"))?;
        let kind = cursor.u32(&format!("the type of {key}"))?;
        let value = cursor.value(kind, &key, 0)?;
        metadata.insert(key, value);
    }
    // Each tensor info takes at least 8 + 4 + 4 + 8 bytes: a count past that is damage.
    if tensor_count > (bytes.len() / 24) as u64 {
        return Err(format_error(format!(
            "it claims {tensor_count} tensors in {} bytes",
            bytes.len()
        )));
    }
    let mut infos = Vec::with_capacity(tensor_count as usize);
    for index in 0..tensor_count {
        let name = cursor.string(&format!("tensor {index}'s name"))?;
        let n_dims = cursor.u32(&format!("{name}'s dimension count"))?;
        if n_dims == 0 || n_dims > 4 {
            return Err(format_error(format!("{name} has {n_dims} dimensions")));
        }
        let dims = (0..n_dims)
            .map(|_| cursor.u64(&format!("{name}'s dimensions")))
            .collect::<Result<Vec<u64>, LmError>>()?;
        let code = cursor.u32(&format!("{name}'s type"))?;
        let kind = TensorType::from_code(code).ok_or_else(|| {
            format_error(format!(
                "{name} has ggml type {code}, which this reader does not know"
            ))
        })?;
        let offset = cursor.u64(&format!("{name}'s offset"))?;
        infos.push((name, dims, kind, offset));
    }
    let alignment = match metadata.get("general.alignment") {
        None => 32,
        Some(GgufValue::Unsigned(a)) if *a > 0 && a.is_power_of_two() && *a <= 1 << 16 => {
            *a as usize
        }
        Some(other) => {
            return Err(format_error(format!(
                "general.alignment is {other:?}, not a power of two"
            )));
        }
    };
    let data_start = cursor.at.div_ceil(alignment) * alignment;
    let mut tensors = Vec::with_capacity(infos.len());
    for (name, dims, kind, offset) in infos {
        let elements = dims
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .filter(|&n| n > 0);
        let size = elements.and_then(|n| kind.bytes_for(n, dims[0]));
        let start = usize::try_from(offset)
            .ok()
            .and_then(|o| o.checked_add(data_start));
        let range = match (size, start) {
            (Some(size), Some(start)) => start
                .checked_add(size)
                .filter(|&end| end <= bytes.len())
                .map(|end| start..end),
            _ => None,
        };
        let Some(data) = range else {
            return Err(format_error(format!(
                "{name} ({kind:?}, dimensions {dims:?}, at offset {offset}) does not fit in \
                 the file's {} bytes: the file is truncated or damaged",
                bytes.len()
            )));
        };
        tensors.push(TensorInfo {
            name,
            dims,
            kind,
            data,
        });
    }
    Ok(Gguf {
        version,
        metadata,
        tensors,
    })
}

fn format_error(reason: impl Into<String>) -> LmError {
    LmError::Format(reason.into())
}

impl Gguf {
    /// A key's value.
    pub fn get(&self, key: &str) -> Result<&GgufValue, LmError> {
        self.metadata
            .get(key)
            .ok_or_else(|| format_error(format!("the key {key} is missing")))
    }

    /// A key holding a non-negative integer.
    pub fn unsigned(&self, key: &str) -> Result<u64, LmError> {
        match self.get(key)? {
            GgufValue::Unsigned(n) => Ok(*n),
            GgufValue::Signed(n) if *n >= 0 => Ok(*n as u64),
            other => Err(format_error(format!("{key} is {other:?}, not a count"))),
        }
    }

    /// A key holding a number.
    pub fn float(&self, key: &str) -> Result<f64, LmError> {
        match self.get(key)? {
            GgufValue::Float(x) => Ok(*x),
            GgufValue::Unsigned(n) => Ok(*n as f64),
            GgufValue::Signed(n) => Ok(*n as f64),
            other => Err(format_error(format!("{key} is {other:?}, not a number"))),
        }
    }

    /// A key holding a string.
    pub fn text(&self, key: &str) -> Result<&str, LmError> {
        match self.get(key)? {
            GgufValue::Text(s) => Ok(s),
            other => Err(format_error(format!("{key} is {other:?}, not a string"))),
        }
    }

    /// A key holding an array of strings.
    pub fn texts(&self, key: &str) -> Result<Vec<&str>, LmError> {
        match self.get(key)? {
            GgufValue::Array(items) => items
                .iter()
                .map(|item| match item {
                    GgufValue::Text(s) => Ok(s.as_str()),
                    other => Err(format_error(format!(
                        "{key} holds {other:?}, not only strings"
                    ))),
                })
                .collect(),
            other => Err(format_error(format!("{key} is {other:?}, not an array"))),
        }
    }

    /// A key holding an array of integers.
    pub fn integers(&self, key: &str) -> Result<Vec<i64>, LmError> {
        match self.get(key)? {
            GgufValue::Array(items) => items
                .iter()
                .map(|item| match item {
                    GgufValue::Signed(n) => Ok(*n),
                    GgufValue::Unsigned(n) => i64::try_from(*n)
                        .map_err(|_| format_error(format!("{key} holds {n}, too large"))),
                    other => Err(format_error(format!(
                        "{key} holds {other:?}, not only integers"
                    ))),
                })
                .collect(),
            other => Err(format_error(format!("{key} is {other:?}, not an array"))),
        }
    }

    /// A tensor by name.
    pub fn tensor(&self, name: &str) -> Result<&TensorInfo, LmError> {
        self.tensors
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| format_error(format!("the tensor {name} is missing")))
    }
}

/// Reads little-endian values from the front of the bytes, each read checked.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

/// Nested arrays deeper than this are damage (GGUF writers nest one level at most).
const MAX_ARRAY_DEPTH: usize = 4;

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], LmError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| {
                format_error(format!(
                    "it ends at byte {} while reading {what}: the file is truncated",
                    self.bytes.len()
                ))
            })?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], LmError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    fn u32(&mut self, what: &str) -> Result<u32, LmError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, LmError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A length that must fit in what remains, at `unit` bytes an item at least.
    fn length(&mut self, unit: usize, what: &str) -> Result<usize, LmError> {
        let n = self.u64(what)?;
        let remaining = (self.bytes.len() - self.at) as u64;
        if n.saturating_mul(unit as u64) > remaining {
            return Err(format_error(format!(
                "{what} claims {n} items with {remaining} bytes left: the file is truncated \
                 or damaged"
            )));
        }
        Ok(n as usize)
    }

    fn string(&mut self, what: &str) -> Result<String, LmError> {
        let n = self.length(1, what)?;
        let raw = self.take(n, what)?;
        String::from_utf8(raw.to_vec())
            .map_err(|_| format_error(format!("{what} is not valid UTF-8")))
    }

    fn value(&mut self, kind: u32, key: &str, depth: usize) -> Result<GgufValue, LmError> {
        Ok(match kind {
            0 => GgufValue::Unsigned(u64::from(self.array::<1>(key)?[0])),
            1 => GgufValue::Signed(i64::from(i8::from_le_bytes(self.array(key)?))),
            2 => GgufValue::Unsigned(u64::from(u16::from_le_bytes(self.array(key)?))),
            3 => GgufValue::Signed(i64::from(i16::from_le_bytes(self.array(key)?))),
            4 => GgufValue::Unsigned(u64::from(self.u32(key)?)),
            5 => GgufValue::Signed(i64::from(i32::from_le_bytes(self.array(key)?))),
            6 => GgufValue::Float(f64::from(f32::from_le_bytes(self.array(key)?))),
            7 => match self.array::<1>(key)?[0] {
                0 => GgufValue::Bool(false),
                1 => GgufValue::Bool(true),
                b => return Err(format_error(format!("{key} is a boolean of value {b}"))),
            },
            8 => GgufValue::Text(self.string(key)?),
            9 => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(format_error(format!("{key} nests arrays too deep")));
                }
                let item_kind = self.u32(key)?;
                let n = self.length(1, key)?;
                let mut items = Vec::with_capacity(n.min(1 << 20));
                for _ in 0..n {
                    items.push(self.value(item_kind, key, depth + 1)?);
                }
                GgufValue::Array(items)
            }
            10 => GgufValue::Unsigned(self.u64(key)?),
            11 => GgufValue::Signed(i64::from_le_bytes(self.array(key)?)),
            12 => GgufValue::Float(f64::from_le_bytes(self.array(key)?)),
            other => {
                return Err(format_error(format!(
                    "{key} has value type {other}, which GGUF does not define"
                )));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small GGUF: two keys (a string array and a float), one F32 tensor of 2 × 3.
    fn tiny_file() -> Vec<u8> {
        let mut b = Vec::new();
        let string = |b: &mut Vec<u8>, s: &str| {
            b.extend((s.len() as u64).to_le_bytes());
            b.extend(s.as_bytes());
        };
        b.extend(b"GGUF");
        b.extend(3u32.to_le_bytes());
        b.extend(1u64.to_le_bytes());
        b.extend(2u64.to_le_bytes());
        string(&mut b, "names");
        b.extend(9u32.to_le_bytes());
        b.extend(8u32.to_le_bytes());
        b.extend(2u64.to_le_bytes());
        string(&mut b, "a");
        string(&mut b, "bc");
        string(&mut b, "eps");
        b.extend(6u32.to_le_bytes());
        b.extend(0.5f32.to_le_bytes());
        string(&mut b, "w");
        b.extend(2u32.to_le_bytes());
        b.extend(3u64.to_le_bytes());
        b.extend(2u64.to_le_bytes());
        b.extend(0u32.to_le_bytes());
        b.extend(0u64.to_le_bytes());
        while b.len() % 32 != 0 {
            b.push(0);
        }
        for x in 0..6 {
            b.extend((x as f32).to_le_bytes());
        }
        b
    }

    #[test]
    fn a_small_file_reads_back() {
        let bytes = tiny_file();
        let gguf = parse(&bytes).expect("a valid file");
        assert_eq!(gguf.version, 3);
        assert_eq!(gguf.texts("names").unwrap(), vec!["a", "bc"]);
        assert_eq!(gguf.float("eps").unwrap(), 0.5);
        let w = gguf.tensor("w").unwrap();
        assert_eq!(w.dims, vec![3, 2]);
        assert_eq!(w.kind, TensorType::F32);
        assert_eq!(w.data.len(), 24);
        assert_eq!(&bytes[w.data.clone()][4..8], 1f32.to_le_bytes());
        assert!(matches!(gguf.tensor("x"), Err(LmError::Format(m)) if m.contains("x is missing")));
    }

    /// Every truncation of the file is an error naming what was being read, and so is each
    /// kind of damage; none panics.
    #[test]
    fn truncated_and_damaged_files_are_refused_with_a_reason() {
        let bytes = tiny_file();
        for len in 0..bytes.len() {
            match parse(&bytes[..len]) {
                Err(LmError::Format(reason)) => assert!(
                    reason.contains("truncated") || reason.contains("does not fit"),
                    "{len}: {reason}"
                ),
                other => panic!("{len} bytes: {other:?}"),
            }
        }
        let damaged = |at: usize, with: &[u8]| {
            let mut b = bytes.clone();
            b[at..at + with.len()].copy_from_slice(with);
            parse(&b)
        };
        let reason = |r: Result<Gguf, LmError>| match r {
            Err(LmError::Format(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(reason(damaged(0, b"GGUG")).contains("not a GGUF"));
        assert!(reason(damaged(4, &7u32.to_le_bytes())).contains("version 7"));
        // A huge tensor count and a huge array length.
        assert!(reason(damaged(8, &u64::MAX.to_le_bytes())).contains("tensors"));
        assert!(reason(damaged(16, &(1u64 << 40).to_le_bytes())).contains("truncated"));
        // The string array's length (after "names" and its two types).
        let names_len_at = 24 + 8 + 5 + 4 + 4;
        assert!(reason(damaged(names_len_at, &u64::MAX.to_le_bytes())).contains("claims"));
        // An unknown value type in place of the array's item type.
        assert!(reason(damaged(24 + 8 + 5 + 4, &99u32.to_le_bytes())).contains("type 99"));
    }
}
