//! The model worker's loader (src/lab/models/loader.rs) on the converted model: it hashes the
//! file as the chunks arrive and unpacks it at the end. Checked here: the weights it gives are
//! bit for bit those of the reader before the loader (each tensor widened with `half`, then
//! packed by `PackedLinear::new`, written out again below as that reference), whatever the chunk
//! sizes, from 1 byte to the whole file; a byte changed in any chunk, a cut file, a longer one
//! and random bytes are the hash error, never a panic.
//!
//! Needs the converted model, like tests/model.rs (scripts/fetch-model.sh; a missing file fails
//! with that sentence).
#![cfg(all(not(target_arch = "wasm32"), feature = "text-model"))]

use std::sync::OnceLock;

use half::f16;
use safetensors::{Dtype, SafeTensors};
use softmax_kernel_lab::cli::default_model_path;
use softmax_kernel_lab::lab::models::loader::ModelLoader;
use softmax_kernel_lab::numerics::bert::reader::FileHeader;
use softmax_kernel_lab::numerics::bert::weights::{MODEL_BYTES, MODEL_HEADER_SHA256, sha256_hex};
use softmax_kernel_lab::numerics::bert::{BertWeights, MODEL_SHA256, ModelError};
use softmax_kernel_lab::numerics::packed_linear::PackedLinear;

static MODEL_BYTES_READ: OnceLock<Vec<u8>> = OnceLock::new();

/// The converted file's bytes, read once.
fn model_bytes() -> &'static [u8] {
    MODEL_BYTES_READ.get_or_init(|| {
        let path = default_model_path();
        std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "cannot read the converted model {}: {e}. Run scripts/fetch-model.sh first \
                 (scripts/test.sh does), or point SKL_MODEL_CACHE at the folder that holds it",
                path.display()
            )
        })
    })
}

/// The bytes through a loader in chunks of `chunk` bytes.
fn load_in_chunks(bytes: &[u8], chunk: usize) -> ModelLoader {
    let mut loader = ModelLoader::new();
    for piece in bytes.chunks(chunk) {
        loader.push(piece);
    }
    assert_eq!(loader.loaded(), bytes.len() as u64);
    loader
}

/// A tensor as the reader before the loader read it: every value widened by `half`.
fn widened(file: &SafeTensors, name: &str) -> Vec<f32> {
    let view = file.tensor(name).expect("the tensor is there");
    match view.dtype() {
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
        other => panic!("{name} is {other:?}"),
    }
}

/// A dense layer as the reader before the loader made it: the weights widened, joined, then
/// packed by `PackedLinear::new`.
fn reference_linear(file: &SafeTensors, prefixes: &[String], inputs: usize) -> PackedLinear {
    let weight: Vec<f32> = prefixes
        .iter()
        .flat_map(|p| widened(file, &format!("{p}.weight")))
        .collect();
    let bias: Vec<f32> = prefixes
        .iter()
        .flat_map(|p| widened(file, &format!("{p}.bias")))
        .collect();
    PackedLinear::new(&weight, &bias, inputs, bias.len())
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

fn same_linear(got: &PackedLinear, expected: &PackedLinear, what: &str) {
    assert_eq!(
        (got.inputs(), got.outputs()),
        (expected.inputs(), expected.outputs()),
        "{what}"
    );
    assert!(
        bits(got.panels()) == bits(expected.panels()),
        "{what}: panels"
    );
    assert!(bits(got.bias()) == bits(expected.bias()), "{what}: bias");
}

/// Every weight the loader gives against the reference reader's, bit for bit.
fn assert_reference_weights(weights: &BertWeights) {
    let bytes = model_bytes();
    let file = SafeTensors::deserialize(bytes).expect("the converted file");
    let h = weights.config.hidden_size;
    let word = file
        .tensor("embeddings.word_embeddings.weight")
        .expect("word embeddings");
    let word_bits: Vec<u16> = word
        .data()
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    assert!(
        weights
            .word_embeddings
            .iter()
            .map(|v| v.to_bits())
            .eq(word_bits),
        "word embeddings"
    );
    assert_eq!(
        bits(&weights.position_embeddings),
        bits(&widened(&file, "embeddings.position_embeddings.weight")),
        "position embeddings"
    );
    assert_eq!(
        bits(&weights.token_type_embedding),
        bits(&widened(&file, "embeddings.token_type_embeddings.weight")[..h]),
        "token type embedding"
    );
    let norm = |got: &softmax_kernel_lab::numerics::bert::weights::LayerNorm, prefix: &str| {
        assert_eq!(
            bits(&got.weight),
            bits(&widened(&file, &format!("{prefix}.weight")))
        );
        assert_eq!(
            bits(&got.bias),
            bits(&widened(&file, &format!("{prefix}.bias")))
        );
    };
    norm(&weights.embedding_norm, "embeddings.LayerNorm");
    assert_eq!(weights.layers.len(), weights.config.num_hidden_layers);
    for (l, layer) in weights.layers.iter().enumerate() {
        let p = format!("encoder.layer.{l}");
        let qkv = ["query", "key", "value"].map(|m| format!("{p}.attention.self.{m}"));
        same_linear(
            &layer.qkv,
            &reference_linear(&file, &qkv, h),
            &format!("{p} qkv"),
        );
        for (got, name, inputs) in [
            (&layer.attention_output, "attention.output.dense", h),
            (&layer.intermediate, "intermediate.dense", h),
            (
                &layer.output,
                "output.dense",
                weights.config.intermediate_size,
            ),
        ] {
            let prefix = format!("{p}.{name}");
            let expected = reference_linear(&file, std::slice::from_ref(&prefix), inputs);
            same_linear(got, &expected, &prefix);
        }
        norm(
            &layer.attention_norm,
            &format!("{p}.attention.output.LayerNorm"),
        );
        norm(&layer.output_norm, &format!("{p}.output.LayerNorm"));
    }
    let (_, metadata) = SafeTensors::read_metadata(bytes).expect("the header");
    assert_eq!(
        Some(&weights.tokenizer_json),
        metadata
            .metadata()
            .as_ref()
            .and_then(|m| m.get("tokenizer.json"))
    );
}

/// The file is the pinned one, of the pinned length, and its header (the length field and
/// the header) has the pinned hash that lets the loader read it before the rest arrives.
#[test]
fn the_pinned_length_and_header_hash_are_the_files() {
    let bytes = model_bytes();
    assert_eq!(bytes.len(), MODEL_BYTES);
    let header_end = FileHeader::end(bytes)
        .expect("a header length")
        .expect("8 bytes");
    assert_eq!(sha256_hex(&bytes[..header_end]), MODEL_HEADER_SHA256);
    assert_eq!(sha256_hex(bytes), MODEL_SHA256);
}

/// Whole, in 64 KiB chunks (the browser's usual size) and in odd sizes, the loader gives the
/// same model, and its weights are the reference reader's bit for bit; one byte at a time it
/// hashes to the same digest (checked by `finish`, whose parse is the same bytes again).
#[test]
fn any_chunking_gives_the_reference_weights() {
    let bytes = model_bytes();
    // Read ahead: nothing before the header is in, then the embeddings and every layer but
    // the last before the last megabyte arrives.
    let mut ahead = ModelLoader::new();
    ahead.push(&bytes[..500_000]);
    assert_eq!(ahead.pieces_read(), 0);
    ahead.push(&bytes[500_000..bytes.len() - (1 << 20)]);
    assert_eq!(ahead.pieces_read(), 6);
    ahead.push(&bytes[bytes.len() - (1 << 20)..]);
    assert_eq!(ahead.pieces_read(), 7);
    let model = load_in_chunks(bytes, bytes.len())
        .finish()
        .expect("the whole file loads");
    assert_reference_weights(&model.weights);
    for chunk in [1, 7, 4093, 65_536, (1 << 20) + 3, bytes.len() - 1] {
        let other = load_in_chunks(bytes, chunk)
            .finish()
            .unwrap_or_else(|e| panic!("chunks of {chunk}: {e}"));
        assert!(other.weights == model.weights, "chunks of {chunk}");
    }
    // The same text gives the same tokens through either model's tokenizer.
    let text = "Hashing while the bytes stream in.";
    assert_eq!(
        model.tokenizer.encode(text, 512),
        load_in_chunks(bytes, 65_536)
            .finish()
            .expect("loads")
            .tokenizer
            .encode(text, 512)
    );
}

fn assert_hash_error(result: Result<impl std::fmt::Debug, ModelError>, what: &str) {
    match result {
        Err(ModelError::Hash { expected, found }) => {
            assert_eq!(expected, MODEL_SHA256, "{what}");
            assert_ne!(found, MODEL_SHA256, "{what}");
            assert_eq!(found.len(), 64, "{what}");
        }
        other => panic!("{what} gave {other:?}"),
    }
}

/// A byte changed in the first, a middle or the last chunk (the header's, a weight's, the
/// last value's), a file cut anywhere, one byte more, and random bytes are the hash error.
#[test]
fn changed_cut_or_foreign_bytes_are_the_hash_error() {
    let bytes = model_bytes();
    let chunk = 1 << 20;
    for at in [0, 9, chunk - 1, chunk, bytes.len() / 2, bytes.len() - 1] {
        let mut loader = ModelLoader::new();
        for (i, piece) in bytes.chunks(chunk).enumerate() {
            if i == at / chunk {
                let mut changed = piece.to_vec();
                changed[at % chunk] ^= 0x10;
                loader.push(&changed);
            } else {
                loader.push(piece);
            }
        }
        assert_hash_error(loader.finish(), &format!("byte {at} changed"));
    }
    // A weight of layer 0 made infinite: read ahead, the reader's error, but the hash's first.
    let file = SafeTensors::deserialize(bytes).expect("the converted file");
    let layer_0 = file
        .tensor("encoder.layer.0.intermediate.dense.weight")
        .expect("a layer-0 matrix");
    let at = layer_0.data().as_ptr() as usize - bytes.as_ptr() as usize + 100;
    let mut infinite = bytes.to_vec();
    infinite[at..at + 2].copy_from_slice(&0x7c00u16.to_le_bytes());
    assert_hash_error(
        load_in_chunks(&infinite, 65_536).finish(),
        "an infinite weight",
    );
    for cut in [0, 1, 8, 600_000, 30_000_000, bytes.len() - 1] {
        assert_hash_error(
            load_in_chunks(&bytes[..cut], 65_536).finish(),
            &format!("the first {cut} bytes"),
        );
    }
    let mut longer = load_in_chunks(bytes, 65_536);
    longer.push(&[0]);
    assert_eq!(longer.loaded(), bytes.len() as u64 + 1);
    assert_hash_error(longer.finish(), "one byte more");
    // Twice the file, in one push and in many: hashed, not kept.
    let mut twice = load_in_chunks(bytes, bytes.len());
    twice.push(bytes);
    assert_hash_error(twice.finish(), "the file twice");

    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for len in [1usize, 8, 64, 4096, 1 << 20] {
        let random: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect();
        assert_hash_error(
            load_in_chunks(&random, 1000).finish(),
            &format!("{len} random bytes"),
        );
    }
    let mut empty_chunks = ModelLoader::new();
    empty_chunks.push(&[]);
    empty_chunks.push_with(0, |_| {});
    assert_hash_error(empty_chunks.finish(), "empty chunks");
}
