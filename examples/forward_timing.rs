//! Native timing of the model's forward (all-MiniLM-L6-v2) at L = 32, 128, 512, one thread:
//! the whole `TextModel::run` (tokenizer, forward, heads asset), the forward alone (and with
//! every head's Q, K, V kept), and parts timed apart: the tokenizer, the dense layers, the
//! length study's `flash_attention` on 72 heads and a `libm::erff` GELU (the forward's own
//! attention and GELU are private). The fastest of ROUNDS runs each (the machine is shared). Needs the
//! converted model in the fetch script's cache. `cargo run --release --example forward_timing
//! --features text-model [-- ROUNDS]`.
use std::time::Instant;

use softmax_kernel_lab::cli::default_model_path;
use softmax_kernel_lab::lab::models::text_model::TextModel;

const WORDS: [&str; 20] = [
    "the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to", "house", "with", "red",
    "blue", "book", "tree", "water", "light", "small", "large",
];

/// The benchmark's text of `tokens` tokens (tests/e2e/model-bench.mjs's `textOf`).
fn text_of(tokens: usize, seed: usize) -> String {
    (0..tokens - 2)
        .map(|i| WORDS[(i * 7 + seed * 13 + (i * i) % 5) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

/// The fastest run: on a shared machine, other work only adds time.
fn fastest(xs: Vec<f64>) -> f64 {
    xs.into_iter().fold(f64::INFINITY, f64::min)
}

fn ms(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let bytes = std::fs::read(default_model_path()).expect("the cached model");
    let model = TextModel::from_checked_bytes(&bytes).expect("the model loads");
    let w = &model.weights;
    for len in [32usize, 128, 512] {
        let (mut run, mut forward, mut tokens, mut kept) = (vec![], vec![], vec![], vec![]);
        let (mut dense, mut attention, mut gelu) = (vec![], vec![], vec![]);
        for round in 0..rounds {
            let text = text_of(len, round);
            let ids = model.tokenizer.encode(&text, 512).expect("encodes").ids;
            assert_eq!(ids.len(), len);
            tokens.push(ms(|| {
                model.tokenizer.encode(&text, 512).expect("encodes");
            }));
            run.push(ms(|| {
                model.run(&text).expect("runs");
            }));
            forward.push(ms(|| {
                w.forward(&ids, false).expect("runs");
            }));
            kept.push(ms(|| {
                w.forward(&ids, true).expect("runs");
            }));
            // The dense layers alone on stand-in inputs of the right shapes.
            let h = w.config.hidden_size;
            let x: Vec<f32> = (0..len * 1536)
                .map(|i| ((i % 17) as f32 - 8.0) / 8.0)
                .collect();
            let mut y = vec![0.0f32; len * 1536];
            dense.push(ms(|| {
                for layer in &w.layers {
                    layer.qkv.apply(&x[..len * h], len, &mut y[..len * 3 * h]);
                    layer
                        .attention_output
                        .apply(&x[..len * h], len, &mut y[..len * h]);
                    layer
                        .intermediate
                        .apply(&x[..len * h], len, &mut y[..len * 1536]);
                    layer.output.apply(&x[..len * 1536], len, &mut y[..len * h]);
                }
            }));
            let q: Vec<f32> = (0..len * 32)
                .map(|i| ((i % 13) as f32 - 6.0) / 6.0)
                .collect();
            attention.push(ms(|| {
                for _ in 0..72 {
                    let seq = softmax_kernel_lab::numerics::attention::long::Sequence::new(
                        len, 32, 32, &q, &q, &q,
                    )
                    .expect("shape");
                    std::hint::black_box(
                        softmax_kernel_lab::numerics::attention::long::flash_attention(&seq, false),
                    );
                }
            }));
            gelu.push(ms(|| {
                for _ in 0..6 {
                    for v in y.iter_mut() {
                        *v = 0.5 * *v * (1.0 + libm::erff(*v * std::f32::consts::FRAC_1_SQRT_2));
                    }
                }
                std::hint::black_box(&y);
            }));
        }
        println!(
            "L = {len}: run {:.2} ms, forward {:.2} ms, with Q, K, V kept {:.2} ms (tokenizer \
             {:.2}; dense {:.2}, flash_attention × 72 {:.2}, libm erf GELU {:.2})",
            fastest(run),
            fastest(forward),
            fastest(kept),
            fastest(tokens),
            fastest(dense),
            fastest(attention),
            fastest(gelu)
        );
    }
}
