//! The real all-MiniLM-L6-v2 on any text (src/numerics/bert, `lab::models::text_model`, `kernel-lab
//! model`) against an independent reference: tests/fixtures/minilm-reference.json, written by
//! scripts/minilm-reference.py with Python `tokenizers` 0.23.3 and a float64 NumPy forward.
//!
//! Checked here: the tokens of every fixture string equal Hugging Face's (ids and word pieces,
//! the cut at 512, empty texts refused); the sentence embeddings against the f64 forward with the
//! original f32 weights (the issue's bar) and with the converted file's f16 weights (what is left
//! is our f32 arithmetic alone), and the last layer's first values; every head's Q, K, V on the
//! two passages of assets/minilm-heads.bin, and one head of a short sentence against the
//! fixture's; the file's SHA-256 check and the reader on corrupted bytes (an error, never a
//! panic); hostile texts; the first embedding values pinned; and `kernel-lab model` and
//! `kernel-lab attention --src text` through `cli::run`.
//!
//! Why: the forward is the project's own code (packed f32 products, its own attention and layer
//! norm), and the text view shows its tokens and heads as the model's; only an independent
//! implementation shows that they are.
//!
//! The converted model (46 MB) is read once per test binary from the fetch script's cache
//! (`cli::default_model_path()`, `SKL_MODEL_CACHE` overrides the folder). When it is missing
//! every test here fails, saying to run scripts/fetch-model.sh (scripts/test.sh runs it before
//! the tests): a skipped test would pass in a checkout that never ran the model.
#![cfg(all(not(target_arch = "wasm32"), feature = "text-model"))]

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;
use softmax_kernel_lab::cli::{self, attention_report, default_model_path};
use softmax_kernel_lab::lab::attention::run_attention_on;
use softmax_kernel_lab::lab::attention::{AttentionOutput, AttentionPart, AttentionRequest};
use softmax_kernel_lab::lab::config::{
    ExperimentConfig, HeadSource, MAX_TEXT_BYTES, MODEL_MAX_TOKENS,
};
use softmax_kernel_lab::lab::models::text_model::TextModel;
use softmax_kernel_lab::numerics::attention::heads::{HEADS_ASSET_PATH, RealHeads};
use softmax_kernel_lab::numerics::attention::methods::{DEFAULT_METHODS, MethodId};
use softmax_kernel_lab::numerics::bert::{BertWeights, MODEL_SHA256, ModelError};

/// The fixture (its "description" says how each field was made).
#[derive(Deserialize)]
struct Reference {
    strings: Vec<FixtureString>,
    embeddings: Vec<FixtureEmbedding>,
}

/// One string as Hugging Face `tokenizers` encodes it (no padding, truncation at 512).
#[derive(Deserialize)]
struct FixtureString {
    name: String,
    text: String,
    ids: Vec<u32>,
    tokens: Vec<String>,
    /// Tokens without truncation.
    full_len: usize,
    truncated: bool,
}

/// One string through the f64 NumPy forward.
#[derive(Deserialize)]
struct FixtureEmbedding {
    name: String,
    /// With the original f32 weights.
    embedding: Vec<f64>,
    /// With every matrix rounded to f16, as in the converted file.
    embedding_f16_weights: Vec<f64>,
    /// The last layer's output at token 0 (original weights).
    layer_6_token_0_first8: Vec<f64>,
    qkv: Option<FixtureQkv>,
}

/// Raw `x Wᵀ + b` of one head (original weights), flat `[token][dim]`.
#[derive(Deserialize)]
struct FixtureQkv {
    layer: usize,
    head: usize,
    shape: Vec<usize>,
    q: Vec<f64>,
    k: Vec<f64>,
    v: Vec<f64>,
}

fn reference() -> Reference {
    serde_json::from_str(include_str!("fixtures/minilm-reference.json"))
        .expect("the reference fixture parses")
}

fn fixture_string<'a>(reference: &'a Reference, name: &str) -> &'a FixtureString {
    reference
        .strings
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("the fixture has no string {name}"))
}

const CLS: u32 = 101;
const SEP: u32 = 102;
const UNK: u32 = 100;

/// The short sentence of the fixture, the one with a head's raw Q, K, V.
const SHORT: &str = "The quick brown fox jumps over the lazy dog.";

static MODEL_BYTES: OnceLock<Vec<u8>> = OnceLock::new();
static MODEL: OnceLock<TextModel> = OnceLock::new();

/// The converted file's bytes, read once.
fn model_bytes() -> &'static [u8] {
    MODEL_BYTES.get_or_init(|| {
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

/// The model, checked and unpacked once per test binary.
fn model() -> &'static TextModel {
    MODEL.get_or_init(|| {
        TextModel::from_checked_bytes(model_bytes()).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; scripts/fetch-model.sh fetches it again",
                default_model_path().display()
            )
        })
    })
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// cos(a, b), in f64.
fn cosine(a: &[f64], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, &y)| x * f64::from(y)).sum();
    let na = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb = b.iter().map(|&y| f64::from(y).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

fn max_abs_diff(a: &[f64], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, &y)| (x - f64::from(y)).abs())
        .fold(0.0, f64::max)
}

// ---------------------------------------------------------------------------------------------
// 1. Tokens

/// Every fixture string gives Hugging Face's ids and word pieces (29 strings: accents, combining
/// marks, CJK, kana, Hangul, emoji with ZWJ, zero-width and non-breaking spaces, control
/// characters, words of 100 to 300 letters, Arabic, Greek, Thai, punctuation, a URL, fullwidth
/// letters, U+FFFD, and a text of 602 tokens cut to 512); the strings Hugging Face turns into
/// `[CLS] [SEP]` alone are refused as empty, by the tokenizer and by the model's run.
#[test]
fn tokens_equal_hugging_face_tokenizers_on_every_fixture_string() {
    let reference = reference();
    let model = model();
    let (mut empty, mut truncated) = (Vec::new(), Vec::new());
    for s in &reference.strings {
        let name = &s.name;
        let encoded = model.tokenizer.encode(&s.text, MODEL_MAX_TOKENS);
        if s.ids == [CLS, SEP] {
            assert_eq!(encoded, Err(ModelError::EmptyText), "{name}");
            assert_eq!(model.run(&s.text), Err(ModelError::EmptyText), "{name}");
            empty.push(name.as_str());
            continue;
        }
        let encoded = encoded.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(encoded.ids, s.ids, "{name}: ids");
        assert_eq!(encoded.tokens, s.tokens, "{name}: word pieces");
        assert_eq!(
            encoded.full_len,
            s.truncated.then_some(s.full_len),
            "{name}: full_len"
        );
        if s.truncated {
            truncated.push(name.as_str());
        } else {
            assert_eq!(s.full_len, s.ids.len(), "{name}: the fixture's own count");
        }
    }
    assert_eq!(reference.strings.len(), 29);
    assert_eq!(empty, ["empty", "whitespace_only"]);
    assert_eq!(truncated, ["long_text"]);
}

// ---------------------------------------------------------------------------------------------
// 2. Sentence embeddings

/// The issue's bar: cosine ≥ 0.9999 to the f64 forward with the original f32 weights. Measured:
/// 1 − 1.0e-7 (passage 0) to 1 − 2.0e-7 (the 512-token text); nearly all of it is the f16
/// rounding of the weights in the converted file (the fixture's own f16-weights embedding is at
/// 1 − 1.3e-7 from the original one for the short sentence).
const ISSUE_MIN_COSINE: f64 = 0.9999;

/// Against the f64 forward on the same f16 weights only our f32 arithmetic differs: measured
/// 1 − cos ≤ 2.6e-13 over the six texts. 1e-9 is far from the measurement and 10⁵ times tighter
/// than the issue's bar, which the f16 weights alone use up to 2e-7 of.
const F16_WEIGHTS_MIN_COSINE: f64 = 1.0 - 1e-9;

/// The same comparison value by value: measured at most 1.34e-7 (embedding values up to about
/// 0.2, whose f32 spacing is 1.5e-8: a few roundings through six layers). 1e-6 leaves a factor 7.
const F16_WEIGHTS_MAX_ABS: f64 = 1e-6;

/// The last layer's first 8 values at token 0 (layer norm outputs, up to about 0.65) against the
/// fixture's, which come from the ORIGINAL weights: the difference is the f16 rounding of the
/// weights carried through six layers, not f32 arithmetic (the previous comparison bounds that
/// near 1e-7). Measured at most 3.4e-4 (the 512-token text; 2.4e-4 to 3.4e-4 over the six);
/// 1e-3 is three times that, a tenth of a percent of the values' scale.
const LAYER_6_TOLERANCE: f64 = 1e-3;

/// The six fixture texts through the forward: the sentence embedding against both f64 forwards
/// and the last layer's first values; `TextModel::run` (tokenizer and forward) gives the same
/// embedding bit for bit.
#[test]
fn sentence_embeddings_match_the_f64_forward() {
    let reference = reference();
    let model = model();
    let mut report = Vec::new();
    for e in &reference.embeddings {
        let s = fixture_string(&reference, &e.name);
        let forward = model
            .weights
            .forward(&s.ids, false)
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        assert_eq!(forward.len, s.ids.len());
        assert_eq!(forward.embedding.len(), 384);
        let original = cosine(&e.embedding, &forward.embedding);
        let same_weights = cosine(&e.embedding_f16_weights, &forward.embedding);
        let same_weights_abs = max_abs_diff(&e.embedding_f16_weights, &forward.embedding);
        let layer_6 = max_abs_diff(&e.layer_6_token_0_first8, &forward.hidden[..8]);
        let line = format!(
            "{}: 1 − cos {:.2e} (original weights), {:.2e} (f16 weights), max |Δ| {:.2e} \
             (f16 weights), layer 6 max |Δ| {:.2e}",
            e.name,
            1.0 - original,
            1.0 - same_weights,
            same_weights_abs,
            layer_6
        );
        assert!(original >= ISSUE_MIN_COSINE, "{line}");
        assert!(same_weights >= F16_WEIGHTS_MIN_COSINE, "{line}");
        assert!(same_weights_abs <= F16_WEIGHTS_MAX_ABS, "{line}");
        assert!(layer_6 <= LAYER_6_TOLERANCE, "{line}");
        report.push(line);
    }
    assert_eq!(report.len(), 6, "{report:#?}");

    let forward = model
        .weights
        .forward(&fixture_string(&reference, "short").ids, false);
    let run = model.run(SHORT).expect("the short sentence runs");
    assert_eq!(run.embedding, forward.expect("the forward runs").embedding);
}

// ---------------------------------------------------------------------------------------------
// 3. Every head's Q, K, V

/// The spacing of f16 numbers at magnitude `m`: 2^(e−10) in [2^e, 2^(e+1)), 2^−24 (the
/// subnormal spacing) below 2^−14.
fn f16_step(m: f64) -> f64 {
    let m = m.abs();
    if m < 2f64.powi(-14) {
        2f64.powi(-24)
    } else {
        2f64.powi(m.log2().floor() as i32 - 10)
    }
}

/// What separates our unrounded Q, K, V from the asset's: the asset (scripts/extract-heads.py)
/// and the fixture ran the ORIGINAL f32 weights, our forward runs the converted file's f16
/// weights (in f32 arithmetic, which adds ~1e-7). Rounding a weight moves it by up to 2^−11 of
/// itself, a projection sums 384 such products, and five layers of the same come before the
/// last. Measured: |ours − asset| up to one f16 step plus 1.95e-3 (both passages), our f32
/// values up to half a step plus 2.15e-3 from the asset's, and ours rounded to f16 up to 1.43e-3
/// from the fixture's f64 layer-2 head-5 values. 5e-3 is about 2.3 times the largest; the values
/// have a root mean square near 1 and reach 7.7, so a head, token or part out of place is far
/// outside it.
const WEIGHT_ROUNDING_SLACK: f64 = 5e-3;

/// Root mean square of (ours − asset) over the 221,184 values of one passage: measured 4.25e-4
/// (passage 0) and 4.12e-4 (passage 1), where 54 % of the values differ by a step or more. 1e-3
/// is 2.4 times that: an error spread over many values that the per-value slack lets through
/// (a systematic 2e-3, say) shows here.
const MAX_RMS_DIFFERENCE: f64 = 1e-3;

/// Both passages of the stored asset through `TextModel::run`: the same tokens, and every
/// head's q, k and v (6 layers × 12 heads × 32 tokens × 32 dims each) read back from the run's
/// asset with `RealHeads::parse` within the rounding of both to f16 and the weights' rounding:
/// for a = f16(x) and b = f16(y), |a − b| ≤ |x − y| + (half a step at each), so
/// |a − b| ≤ f16_step(max(|a|, |b|)) + [`WEIGHT_ROUNDING_SLACK`].
#[test]
fn every_head_matches_the_stored_asset_within_f16_rounding() {
    let path = format!("{}/{HEADS_ASSET_PATH}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let asset = RealHeads::parse(&bytes).expect("the committed asset parses");
    let model = model();
    let passages = &asset.header().passages;
    assert_eq!(passages.len(), 2);
    for (p, passage) in passages.iter().enumerate() {
        let (run, written) = model
            .run_with_asset(&passage.text)
            .unwrap_or_else(|e| panic!("passage {p}: {e}"));
        assert_eq!(run.tokens, passage.tokens, "passage {p}: tokens");
        let ours = RealHeads::parse(&written).expect("the run's heads parse");
        let h = ours.header();
        assert_eq!(
            (
                h.passages.len(),
                h.layers,
                h.heads,
                h.tokens_per_passage,
                h.head_dim
            ),
            (1, 6, 12, 32, 32)
        );
        assert_eq!(h.passages[0].tokens, passage.tokens);
        let (mut worst, mut worst_excess, mut squares, mut count) = (0.0f64, 0.0f64, 0.0, 0usize);
        let mut where_worst = String::new();
        for layer in 0..6 {
            for head in 0..12 {
                let a = asset.head(p, layer, head).expect("in range");
                let b = ours.head(0, layer, head).expect("in range");
                for (part, x, y) in [("q", &a.q, &b.q), ("k", &a.k, &b.k), ("v", &a.v, &b.v)] {
                    for (i, (&x, &y)) in x.iter().zip(y).enumerate() {
                        let d = (x - y).abs();
                        let excess = d - f16_step(x.abs().max(y.abs()));
                        squares += d * d;
                        count += 1;
                        worst = worst.max(d);
                        if excess > worst_excess {
                            worst_excess = excess;
                            where_worst = format!(
                                "layer {layer} head {head} {part}[{}][{}]: asset {x}, ours {y}",
                                i / 32,
                                i % 32
                            );
                        }
                    }
                }
            }
        }
        let rms = (squares / count as f64).sqrt();
        assert_eq!(count, 6 * 12 * 3 * 32 * 32);
        let summary = format!(
            "passage {p}: max |Δ| {worst:.3e}, largest excess over one f16 step \
             {worst_excess:.3e} ({where_worst}), rms {rms:.2e}"
        );
        assert!(worst_excess <= WEIGHT_ROUNDING_SLACK, "{summary}");
        assert!(rms <= MAX_RMS_DIFFERENCE, "{summary}");
    }
}

/// The short sentence's layer-2 head-5 raw Q, K, V against the fixture's f64 values: ours are
/// rounded to f16 in the run's asset (half a step at our value) on top of the weights' rounding
/// ([`WEIGHT_ROUNDING_SLACK`]). Measured max |Δ| 1.43e-3 (q), 1.24e-3 (k), 9.8e-4 (v).
#[test]
fn a_head_of_the_short_sentence_matches_the_f64_reference() {
    let reference = reference();
    let fixture = reference
        .embeddings
        .iter()
        .find_map(|e| e.qkv.as_ref().filter(|_| e.name == "short"))
        .expect("the fixture has the short sentence's Q, K, V");
    assert_eq!(fixture_string(&reference, "short").text, SHORT);
    let (run, asset) = model()
        .run_with_asset(SHORT)
        .expect("the short sentence runs");
    let tokens = run.tokens.len();
    assert_eq!(fixture.shape, [tokens, 32]);
    let ours = RealHeads::parse(&asset).expect("the run's heads parse");
    let head = ours.head(0, fixture.layer, fixture.head).expect("in range");
    let mut worst = [0.0f64; 3];
    for (p, (x, y)) in [
        (&fixture.q, &head.q),
        (&fixture.k, &head.k),
        (&fixture.v, &head.v),
    ]
    .into_iter()
    .enumerate()
    {
        assert_eq!(x.len(), tokens * 32);
        for (i, (&x, &y)) in x.iter().zip(y).enumerate() {
            let d = (x - y).abs();
            worst[p] = worst[p].max(d);
            assert!(
                d <= 0.5 * f16_step(y) + WEIGHT_ROUNDING_SLACK,
                "layer {} head {} part {p} [{}][{}]: reference {x}, ours {y} (max |Δ| so far \
                 q, k, v {worst:?})",
                fixture.layer,
                fixture.head,
                i / 32,
                i % 32
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 4. The file's check and the reader

/// A safetensors file of one small tensor with `metadata`, written by the format's own crate.
fn tiny_safetensors(metadata: Option<std::collections::HashMap<String, String>>) -> Vec<u8> {
    let data: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    let view = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![2], &data)
        .expect("a valid view");
    safetensors::tensor::serialize([("x", view)], metadata).expect("serializes")
}

/// A byte changed anywhere (here the last one, inside the last tensor) is a hash error that
/// says to fetch the file again; cut, empty or random bytes are errors, and so they are for the
/// reader without the hash check, never a panic; a valid safetensors file without the converted
/// format's metadata, or with another format tag, or without the tensors, is a format error.
#[test]
fn the_hash_check_and_the_reader_refuse_what_is_not_the_converted_file() {
    let bytes = model_bytes();
    let mut flipped = bytes.to_vec();
    *flipped.last_mut().expect("not empty") ^= 0x01;
    match TextModel::from_checked_bytes(&flipped) {
        Err(e @ ModelError::Hash { .. }) => {
            let ModelError::Hash { expected, found } = &e else {
                unreachable!()
            };
            assert_eq!(expected, MODEL_SHA256);
            assert_ne!(found, MODEL_SHA256);
            assert_eq!(found.len(), 64);
            assert!(e.to_string().contains("scripts/fetch-model.sh"), "{e}");
        }
        other => panic!("a flipped byte gave {other:?}"),
    }
    // Without the check the same bytes are read: one changed weight is still a well-formed
    // file, which is why the hash, not the parser, is what guards the values.
    assert!(BertWeights::from_bytes(&flipped).is_ok());

    let header_end = 8 + u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
    let cuts = [
        0,
        1,
        7,
        8,
        100,
        header_end - 1,
        header_end,
        header_end + 1,
        bytes.len() / 2,
        bytes.len() - 1,
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut random = |len: usize| -> Vec<u8> {
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect()
    };
    let mut hostile: Vec<(String, Vec<u8>)> = cuts
        .iter()
        .map(|&n| (format!("the first {n} bytes"), bytes[..n].to_vec()))
        .collect();
    for len in [1, 8, 64, 4096] {
        hostile.push((format!("{len} random bytes"), random(len)));
    }
    // Random bytes after a plausible header length: the JSON parser's turn.
    let mut plausible = 64u64.to_le_bytes().to_vec();
    plausible.extend(random(200));
    hostile.push(("a small header length, then random bytes".into(), plausible));
    // The real header followed by random data of the right length.
    let mut wrong_data = bytes[..header_end].to_vec();
    wrong_data.extend(random(bytes.len() - header_end));
    for (what, input) in &hostile {
        assert!(
            matches!(
                TextModel::from_checked_bytes(input),
                Err(ModelError::Hash { .. })
            ),
            "{what}"
        );
        assert!(
            matches!(BertWeights::from_bytes(input), Err(ModelError::Format(_))),
            "{what}: {:?}",
            BertWeights::from_bytes(input).err()
        );
    }
    // Right header, wrong (finite or not) values: the reader either reads them or refuses a
    // non-finite one; it never panics.
    match BertWeights::from_bytes(&wrong_data) {
        Ok(_) | Err(ModelError::Format(_)) => {}
        Err(other) => panic!("random tensor data gave {other:?}"),
    }

    let no_metadata = tiny_safetensors(None);
    match BertWeights::from_bytes(&no_metadata) {
        Err(ModelError::Format(reason)) => assert!(reason.contains("metadata"), "{reason}"),
        other => panic!("a file without metadata gave {other:?}"),
    }
    let (_, real) = safetensors::SafeTensors::read_metadata(bytes).expect("the real header");
    let real = real.metadata().clone().expect("the real file has metadata");
    let mut other_format = real.clone();
    other_format.insert("format".into(), "someone-else/1".into());
    match BertWeights::from_bytes(&tiny_safetensors(Some(other_format))) {
        Err(ModelError::Format(reason)) => assert!(reason.contains("someone-else/1"), "{reason}"),
        other => panic!("another format tag gave {other:?}"),
    }
    match BertWeights::from_bytes(&tiny_safetensors(Some(real))) {
        Err(ModelError::Format(reason)) => assert!(reason.contains("missing"), "{reason}"),
        other => panic!("the metadata without the tensors gave {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// 5. Hostile texts

/// A 10 MB text is refused before the tokenizer sees it; control characters alone are empty;
/// a 602-token text is cut to 512 ids ending with `[SEP]` and says how long it was; a word of
/// 300 letters is `[UNK]` (WordPiece gives up beyond 100 characters); the forward refuses 513
/// ids and ids outside the vocabulary.
#[test]
fn hostile_texts_are_errors_or_cut_as_the_model_needs() {
    let model = model();
    let huge = "a".repeat(10_000_000);
    assert_eq!(
        model.run(&huge),
        Err(ModelError::TextTooLong {
            bytes: 10_000_000,
            limit: MAX_TEXT_BYTES
        })
    );
    let controls = "\u{0}\u{7}\t\n";
    assert_eq!(
        model.tokenizer.encode(controls, MODEL_MAX_TOKENS),
        Err(ModelError::EmptyText)
    );
    assert_eq!(model.run(controls), Err(ModelError::EmptyText));

    let reference = reference();
    let long = fixture_string(&reference, "long_text");
    let encoded = model
        .tokenizer
        .encode(&long.text, MODEL_MAX_TOKENS)
        .expect("the long text tokenizes");
    assert_eq!(encoded.ids.len(), 512);
    assert_eq!(encoded.tokens.len(), 512);
    assert_eq!((encoded.ids[0], encoded.ids[511]), (CLS, SEP));
    assert_eq!(encoded.tokens[511], "[SEP]");
    assert_eq!(encoded.full_len, Some(602));
    assert_eq!(long.full_len, 602);

    // A word of 300 letters (ASCII, no piece boundary WordPiece could use past 100 characters).
    let word: String = "abcdefghijklmnopqrstuvwxyz"
        .chars()
        .cycle()
        .take(300)
        .collect();
    let encoded = model
        .tokenizer
        .encode(&word, MODEL_MAX_TOKENS)
        .expect("a word");
    assert_eq!(encoded.ids, [CLS, UNK, SEP]);
    assert_eq!(encoded.tokens, ["[CLS]", "[UNK]", "[SEP]"]);

    let weights = &model.weights;
    let too_many = vec![CLS; 513];
    assert_eq!(
        weights.forward(&too_many, false),
        Err(ModelError::TooManyTokens {
            tokens: 513,
            limit: 512
        })
    );
    assert_eq!(weights.forward(&[], false), Err(ModelError::NoTokens));
    assert!(matches!(
        weights.forward(&[CLS, 30_522, SEP], false),
        Err(ModelError::Tokenizer(_))
    ));
}

// ---------------------------------------------------------------------------------------------
// 6. Value stability

/// The short sentence's first four embedding values, as this forward computes them (f32,
/// x86-64 SSE). A change to the forward's arithmetic (summation order, a fused multiply-add,
/// another exp or erf) moves them by about 1e-8 (the f32 error, which the comparison with the
/// f16-weights reference bounds by 1.3e-7 at most); a change to the model moves them by 1e-3.
/// 1e-6 tells the two apart. The fixture's f64 values on the same weights are within 2e-7.
const SHORT_FIRST_FOUR: [f32; 4] = [0.043935735, 0.058926627, 0.04820304, 0.077596955];

#[test]
fn the_short_sentence_embedding_is_pinned() {
    let run = model().run(SHORT).expect("the short sentence runs");
    for (i, (&got, &pinned)) in run.embedding.iter().zip(&SHORT_FIRST_FOUR).enumerate() {
        assert!(
            (got - pinned).abs() <= 1e-6,
            "embedding[{i}] = {got}, pinned {pinned}: {:?}",
            &run.embedding[..4]
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 7. The command line, through the library

/// `kernel-lab model --qkv --layer 2 --head 5` gives the fixture's tokens, the model's
/// embedding and the run's f16 values of that one head (the JSON's floats read back exactly);
/// a layer out of range is refused, naming `--layer`, before the model is read.
#[test]
fn the_model_command_prints_the_tokens_embedding_and_the_chosen_head() {
    // The model first: when its file is missing, this is the message that says what to run.
    let (run, asset) = model()
        .run_with_asset(SHORT)
        .expect("the short sentence runs");
    let reference = reference();
    let short = fixture_string(&reference, "short");
    let text = cli::run(&args(&[
        "model", "--text", SHORT, "--qkv", "--layer", "2", "--head", "5",
    ]))
    .unwrap_or_else(|e| panic!("{e}"));
    let report: Value = serde_json::from_str(&text).expect("JSON");
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .expect("an array")
            .iter()
            .map(|t| t.as_str().expect("a string").to_string())
            .collect()
    };
    assert_eq!(strings(&report["tokens"]), short.tokens);
    let ids: Vec<u64> = report["ids"]
        .as_array()
        .expect("ids")
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    assert_eq!(
        ids,
        short.ids.iter().map(|&i| u64::from(i)).collect::<Vec<_>>()
    );
    assert_eq!(report["full_len"], Value::Null);
    assert_eq!(report["text"], SHORT);

    let embedding: Vec<f32> = report["embedding"]
        .as_array()
        .expect("embedding")
        .iter()
        .map(|x| x.as_f64().expect("a number") as f32)
        .collect();
    assert_eq!(embedding, run.embedding);
    assert_eq!(report["multiply_adds"].as_u64(), Some(run.multiply_adds));

    let heads = report["heads"].as_array().expect("--qkv prints heads");
    assert_eq!(heads.len(), 1);
    assert_eq!(
        (heads[0]["layer"].as_u64(), heads[0]["head"].as_u64()),
        (Some(2), Some(5))
    );
    let fixture = reference
        .embeddings
        .iter()
        .find_map(|e| e.qkv.as_ref().filter(|_| e.name == "short"))
        .expect("the fixture's head");
    let ours = RealHeads::parse(&asset).expect("the run's heads parse");
    let head = ours.head(0, 2, 5).expect("in range");
    for (part, values) in [("q", &head.q), ("k", &head.k), ("v", &head.v)] {
        let rows = heads[0][part].as_array().expect("rows");
        let shape = [rows.len(), rows[0].as_array().expect("a row").len()];
        assert_eq!(shape.as_slice(), fixture.shape.as_slice(), "{part}");
        let printed: Vec<f64> = rows
            .iter()
            .flat_map(|r| r.as_array().expect("a row").iter())
            .map(|x| x.as_f64().expect("a number"))
            .collect();
        assert_eq!(&printed, values, "{part}");
    }

    let error = cli::run(&args(&["model", "--text", SHORT, "--layer", "9"]))
        .expect_err("layer 9 does not exist");
    assert_eq!(error.argument(), "--layer");
    assert!(error.message().contains("0 to 5"), "{}", error.message());
}

/// `kernel-lab attention --src text --text …` runs the default methods on the model's heads of
/// that text (layer 0, head 0): as many tokens as the tokenizer gives, the head's dimensions,
/// the mean norm of the exact output recomputed here from the run's heads, and every number
/// equal to the library's report on the same heads (so the command used `TextModel::run`'s).
#[test]
fn attention_on_a_text_reports_the_default_methods_on_its_heads() {
    let (run, asset) = model()
        .run_with_asset(SHORT)
        .expect("the short sentence runs");
    let text = cli::run(&args(&["attention", "--src", "text", "--text", SHORT]))
        .unwrap_or_else(|e| panic!("{e}"));
    let report: Value = serde_json::from_str(&text).expect("JSON");
    let len = run.tokens.len();
    assert_eq!(len, 12);
    assert_eq!(report["len"].as_u64(), Some(len as u64));
    assert_eq!(
        (report["d"].as_u64(), report["dv"].as_u64()),
        (Some(32), Some(32))
    );

    let expected: Vec<&str> = MethodId::all()
        .map(MethodId::id)
        .filter(|id| DEFAULT_METHODS.contains(id))
        .collect();
    assert_eq!(expected.len(), DEFAULT_METHODS.len());
    let methods = report["methods"].as_array().expect("methods");
    let listed: Vec<&str> = methods
        .iter()
        .map(|m| m["method"].as_str().expect("an id"))
        .collect();
    assert_eq!(listed, expected);
    for m in methods {
        let id = &m["method"];
        assert!(
            m["bad_rows"].as_u64().expect("bad_rows") <= len as u64,
            "{id}"
        );
        assert!(
            m["rank_of_block"].as_u64().expect("rank") <= len as u64,
            "{id}"
        );
        assert!(
            m["feature_size"].as_u64().expect("feature_size") > 0,
            "{id}"
        );
        if let Some(tv) = m["median_row_tv"].as_f64() {
            assert!((0.0..=1.0).contains(&tv), "{id}: total variation {tv}");
        }
    }
    assert!(report["exact_rank_of_block"].as_u64().expect("rank") <= len as u64);

    // The exact output's mean norm, from the run's layer-0 head-0 with the model's scaling.
    let heads = RealHeads::parse(&asset).expect("the run's heads parse");
    let head = heads.head(0, 0, 0).expect("in range").model_scaled();
    let mut norms = 0.0;
    for qi in head.q.chunks_exact(32) {
        let logits: Vec<f64> = head
            .k
            .chunks_exact(32)
            .map(|kj| qi.iter().zip(kj).map(|(a, b)| a * b).sum())
            .collect();
        let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let weights: Vec<f64> = logits.iter().map(|l| (l - max).exp()).collect();
        let total: f64 = weights.iter().sum();
        let mut out = [0.0f64; 32];
        for (w, vj) in weights.iter().zip(head.v.chunks_exact(32)) {
            out.iter_mut()
                .zip(vj)
                .for_each(|(o, v)| *o += w / total * v);
        }
        norms += out.iter().map(|x| x * x).sum::<f64>().sqrt();
    }
    let mean_norm = norms / len as f64;
    let printed = report["mean_output_norm"]
        .as_f64()
        .expect("mean_output_norm");
    // Both in f64 from the same f16 values, summed in different orders: 1e-12 relative.
    assert!(
        (printed - mean_norm).abs() <= 1e-12 * mean_norm,
        "printed {printed}, recomputed {mean_norm}"
    );

    // The library on the same heads and the configuration the report names.
    let query = report["config"].as_str().expect("config");
    let (config, notices) = ExperimentConfig::from_query(query);
    assert!(notices.is_empty(), "{notices:?}");
    assert_eq!(config.attention.source, HeadSource::Text);
    assert_eq!(config.attention.text, SHORT);
    let part = |part| {
        let request = AttentionRequest {
            config: config.clone(),
            part,
            share: None,
            lengths_unit: None,
        };
        run_attention_on(&request, Some(&heads)).expect("the library runs the same request")
    };
    let (AttentionOutput::Main(main), AttentionOutput::BiasVariance(bias)) =
        (part(AttentionPart::Main), part(AttentionPart::BiasVariance))
    else {
        panic!("unexpected parts");
    };
    let library = serde_json::to_value(attention_report(&config, &main, &bias)).expect("JSON");
    assert_eq!(report, library);
}
