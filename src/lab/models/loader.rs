//! The model file as it streams in (feature `text-model`): [`ModelLoader`] hashes each chunk as
//! it arrives and keeps its bytes, and reads ahead: once the header is in and its SHA-256 is the
//! pinned [`MODEL_HEADER_SHA256`], it builds the tokenizer from the header's `tokenizer.json` and
//! unpacks the embeddings and each encoder layer as soon as their bytes are in
//! ([`WeightsReader`]). When the last byte arrives, the whole file's SHA-256 is done and
//! [`finish`](ModelLoader::finish) only compares it and unpacks the last layer. Nothing read
//! ahead is used unless the whole file's hash is the pinned one. The model worker's fetch loop
//! feeds it (src/worker.rs); tests/model_loader.rs feeds it natively in chunks of every size.
//!
//! The pinned file's length is known ([`MODEL_BYTES`]), so the loader reserves exactly that once
//! (a `Content-Length` may be absent, or a compressed length) and never keeps more: a longer
//! stream is hashed to its end, and fails the hash check, without growing the buffer.

use sha2::{Digest, Sha256};

use crate::lab::models::text_model::TextModel;
use crate::numerics::bert::reader::{FileHeader, WeightsReader};
use crate::numerics::bert::weights::{MODEL_BYTES, MODEL_HEADER_SHA256, digest_hex, sha256_hex};
use crate::numerics::bert::{BertWeights, MODEL_SHA256, ModelError, WordPiece};

/// How far the loader has read ahead of the hash check.
enum ReadAhead {
    /// The header's bytes are not all in yet.
    AwaitingHeader,
    /// The pinned header: the tokenizer built, the weights read as their bytes arrive.
    Reading(Box<Pinned>),
    /// Not the pinned header: the hash check will fail (or, should only the header's pin be
    /// stale, `finish` reads the whole file).
    Unpinned,
    /// Reading failed: reported by `finish` if the whole file's hash is the pinned one.
    Failed(ModelError),
}

/// What the loader reads ahead from the pinned header on.
struct Pinned {
    reader: WeightsReader,
    tokenizer: WordPiece,
}

/// The model file, hashed, kept and read as its chunks arrive.
pub struct ModelLoader {
    hasher: Sha256,
    /// The bytes received, while they are no more than [`MODEL_BYTES`] (then emptied).
    bytes: Vec<u8>,
    /// Every byte received, kept or not.
    loaded: u64,
    /// More than [`MODEL_BYTES`] arrived: nothing more is kept or read.
    too_long: bool,
    ahead: ReadAhead,
}

impl std::fmt::Debug for ModelLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelLoader")
            .field("loaded", &self.loaded)
            .field("too_long", &self.too_long)
            .finish_non_exhaustive()
    }
}

impl Default for ModelLoader {
    fn default() -> Self {
        Self::new()
    }
}

impl ModelLoader {
    /// An empty loader, with room for the pinned file.
    pub fn new() -> Self {
        Self {
            hasher: Sha256::new(),
            bytes: Vec::with_capacity(MODEL_BYTES),
            loaded: 0,
            too_long: false,
            ahead: ReadAhead::AwaitingHeader,
        }
    }

    /// Hashes `chunk`, keeps it and reads what it completes.
    pub fn push(&mut self, chunk: &[u8]) {
        self.push_with(chunk.len(), |slot| slot.copy_from_slice(chunk));
    }

    /// Appends `len` bytes that `fill` writes into place (the worker copies a JavaScript chunk
    /// straight into the buffer, with no copy between), hashes them and reads what they
    /// complete.
    pub fn push_with(&mut self, len: usize, fill: impl FnOnce(&mut [u8])) {
        self.loaded = self.loaded.saturating_add(len as u64);
        let start = self.bytes.len();
        if !self.too_long && len <= MODEL_BYTES - start {
            self.bytes.resize(start + len, 0);
            fill(&mut self.bytes[start..]);
            self.hasher.update(&self.bytes[start..]);
            self.read_ahead();
        } else {
            // Not the pinned file: hashed (the error names what arrived), no longer kept.
            self.too_long = true;
            self.bytes = Vec::new();
            self.ahead = ReadAhead::Unpinned;
            let mut chunk = vec![0; len];
            fill(&mut chunk);
            self.hasher.update(&chunk);
        }
    }

    /// Bytes received so far.
    pub fn loaded(&self) -> u64 {
        self.loaded
    }

    /// Pieces of the weights read ahead so far (the embeddings, then one per encoder layer;
    /// none before the pinned header is in).
    pub fn pieces_read(&self) -> usize {
        match &self.ahead {
            ReadAhead::Reading(pinned) => pinned.reader.pieces_read(),
            _ => 0,
        }
    }

    /// Reads the header once it is in (only the pinned one: its hash is checked first, so the
    /// tokenizer's JSON parser sees only the pinned bytes), then every piece of the weights
    /// whose bytes are in.
    fn read_ahead(&mut self) {
        if let ReadAhead::AwaitingHeader = self.ahead {
            match FileHeader::end(&self.bytes) {
                Ok(Some(end)) if end <= self.bytes.len() => {
                    self.ahead = if sha256_hex(&self.bytes[..end]) != MODEL_HEADER_SHA256 {
                        ReadAhead::Unpinned
                    } else {
                        match Self::pinned_header(&self.bytes) {
                            Ok((header, tokenizer)) => ReadAhead::Reading(Box::new(Pinned {
                                reader: WeightsReader::new(header),
                                tokenizer,
                            })),
                            Err(e) => ReadAhead::Failed(e),
                        }
                    };
                }
                Ok(_) => return,
                Err(_) => self.ahead = ReadAhead::Unpinned,
            }
        }
        if let ReadAhead::Reading(pinned) = &mut self.ahead
            && let Err(e) = pinned.reader.advance(&self.bytes)
        {
            self.ahead = ReadAhead::Failed(e);
        }
    }

    /// The pinned header, read, and its tokenizer.
    fn pinned_header(bytes: &[u8]) -> Result<(FileHeader, WordPiece), ModelError> {
        let header = FileHeader::read(bytes)?
            .ok_or_else(|| ModelError::Format("the header is not all in".into()))?;
        let tokenizer = WordPiece::from_json(&header.tokenizer_json)?;
        Ok((header, tokenizer))
    }

    /// The model, once every byte is in: the SHA-256 (already computed) against
    /// [`MODEL_SHA256`], then the last pieces unpacked. Anything but the pinned file is an
    /// error ([`ModelError::Hash`] naming what arrived), never a panic.
    pub fn finish(self) -> Result<TextModel, ModelError> {
        let found = digest_hex(&self.hasher.finalize());
        if found != MODEL_SHA256 || self.too_long {
            return Err(ModelError::Hash {
                expected: MODEL_SHA256.to_string(),
                found,
            });
        }
        match self.ahead {
            ReadAhead::Reading(pinned) => {
                let Pinned { reader, tokenizer } = *pinned;
                TextModel::from_parts(reader.finish(&self.bytes)?, tokenizer)
            }
            ReadAhead::Failed(e) => Err(e),
            ReadAhead::AwaitingHeader | ReadAhead::Unpinned => {
                TextModel::with_weights(BertWeights::from_bytes(&self.bytes)?)
            }
        }
    }
}
