//! Native timing of the model's load, step by step (the converted model from the fetch
//! script's cache): the loader's part while the bytes stream in (in 64 KiB chunks: the SHA-256,
//! the copy, and the read-ahead: the header, the tokenizer, the embeddings and each layer as
//! their bytes complete), then `ModelLoader::finish` after the last byte; the whole-file reader
//! and the tokenizer alone; and the reader before the loader, step by step (the SHA-256 in one
//! call, the header, every matrix widened by `half`, then packed by `PackedLinear::new`).
//! `cargo run --release --example model_load_timing [rounds]`.
use std::time::Instant;

use half::f16;
use safetensors::{Dtype, SafeTensors};
use softmax_kernel_lab::cli::default_model_path;
use softmax_kernel_lab::lab::models::loader::ModelLoader;
use softmax_kernel_lab::numerics::bert::weights::sha256_hex;
use softmax_kernel_lab::numerics::bert::{BertWeights, WordPiece};
use softmax_kernel_lab::numerics::packed_linear::PackedLinear;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3);
    let bytes = std::fs::read(default_model_path()).expect("the converted model");
    for _ in 0..rounds {
        // While the bytes stream in, then after the last one.
        let t = Instant::now();
        let mut loader = ModelLoader::new();
        for chunk in bytes.chunks(1 << 16) {
            loader.push(chunk);
        }
        let streamed = ms(t);
        let t = Instant::now();
        let model = loader.finish().expect("the pinned file");
        let finish = ms(t);
        let t = Instant::now();
        let weights = BertWeights::from_bytes(&bytes).expect("the converted file");
        let reader = ms(t);
        let t = Instant::now();
        let _tokenizer = WordPiece::from_json(&weights.tokenizer_json).expect("its tokenizer");
        let tokenizer = ms(t);
        drop((model, weights));

        // The reader before the loader, step by step.
        let t = Instant::now();
        let _ = sha256_hex(&bytes);
        let sha = ms(t);
        let t = Instant::now();
        let file = SafeTensors::deserialize(&bytes).expect("safetensors");
        let header = ms(t);
        let t = Instant::now();
        let matrices: Vec<(Vec<usize>, Vec<f32>)> = file
            .tensors()
            .into_iter()
            .filter(|(name, view)| view.dtype() == Dtype::F16 && name.starts_with("encoder"))
            .map(|(_, view)| {
                let values = view
                    .data()
                    .chunks_exact(2)
                    .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
                    .collect();
                (view.shape().to_vec(), values)
            })
            .collect();
        let widen = ms(t);
        let t = Instant::now();
        for (shape, values) in &matrices {
            let _ = PackedLinear::new(values, &vec![0.0; shape[0]], shape[1], shape[0]);
        }
        let pack = ms(t);
        println!(
            "loader: pushes {streamed:.1} | finish {finish:.1} || whole-file reader {reader:.1} | tokenizer {tokenizer:.1} ms || \
             before: sha256 {sha:.1} | header {header:.1} | widen by half {widen:.1} | PackedLinear::new {pack:.1} ms"
        );
    }
}
