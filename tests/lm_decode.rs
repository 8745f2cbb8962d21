//! Decoding the causal language model token by token (`numerics::llama::Decoder`,
//! `lab::models::smollm::generate`) against recomputing the whole forward at every step:
//! - exact: the key/value cache's logits equal the whole causal softmax forward's;
//! - linear layers run as recurrent networks (their maps fitted on the prompt, then fixed):
//!   the same tokens and the same logits, to 1e-4 relative, as the whole causal linear
//!   attention with those maps recomputed at every step (the chunked form the swap uses);
//! - a softmax layer's memory grows by one cache row a token, a linear layer's does not;
//! - the lab's continuation (the page's and the command line's code) gives those tokens.
//!
//! Needs the GGUF file (scripts/fetch-model.sh caches it).

use std::collections::HashMap;
use std::sync::OnceLock;

use softmax_kernel_lab::cli::default_lm_path;
use softmax_kernel_lab::lab::config::{ExperimentConfig, Param};
use softmax_kernel_lab::lab::models::head_swap::{decoding_map, registry_of};
use softmax_kernel_lab::lab::models::smollm::{
    ContinuationEnd, ContinuationEvent, Decoding, LmJob, continue_text, swap_of,
};
use softmax_kernel_lab::numerics::attention::long::{
    FeatureMap32, LinearForm, Sequence, linear_attention_f32,
};
use softmax_kernel_lab::numerics::bert::HeadInputs;
use softmax_kernel_lab::numerics::llama::{Decoder, LlamaModel};

const PROMPT: &str = "The cat sat on the mat because it was warm, and the dog";
/// Logits agree to this relative error (of the larger magnitude, at least 1).
const RELATIVE: f64 = 1e-4;

fn model() -> &'static LlamaModel {
    static MODEL: OnceLock<LlamaModel> = OnceLock::new();
    MODEL.get_or_init(|| {
        let bytes = std::fs::read(default_lm_path()).unwrap_or_else(|e| {
            panic!(
                "cannot read the language model {}: {e}. Run scripts/fetch-model.sh first",
                default_lm_path().display()
            )
        });
        LlamaModel::load(bytes).expect("the pinned file loads")
    })
}

fn now() -> f64 {
    0.0
}

fn argmax(logits: &[f32]) -> u32 {
    logits
        .iter()
        .enumerate()
        .fold(0, |best, (i, &v)| if v > logits[best] { i } else { best }) as u32
}

/// The largest relative difference of two logit rows.
fn worst_relative(got: &[f32], want: &[f32]) -> f64 {
    assert_eq!(got.len(), want.len());
    got.iter()
        .zip(want)
        .map(|(&a, &b)| {
            let (a, b) = (f64::from(a), f64::from(b));
            (a - b).abs() / a.abs().max(b.abs()).max(1.0)
        })
        .fold(0.0, f64::max)
}

/// `config` with `method` in `layers`.
fn swapped(method: &str, layers: &str) -> ExperimentConfig {
    let mut config = ExperimentConfig::default();
    config.set(Param::LmMethod, method).expect("a method");
    config.set(Param::LmLayers, layers).expect("layers");
    config
}

/// Decodes `steps` greedy tokens after the prompt with `config`'s swap linear (or none), and
/// with `whole` at each step recomputes the whole forward with the same maps; returns the
/// tokens and the worst relative logit difference.
fn decode_against_whole(
    config: Option<&ExperimentConfig>,
    steps: usize,
    whole: bool,
) -> (Vec<u32>, f64) {
    let model = model();
    let mut ids = model.tokenizer.encode(PROMPT).expect("encodes");
    let swap = config.and_then(swap_of);
    let layers = swap.as_ref().map_or_else(Vec::new, |s| s.layers.clone());
    let registry = match (&swap, config) {
        (Some(swap), Some(config)) => registry_of(swap, config, model.config.head_dim),
        _ => None,
    };
    // The maps the prompt fits, kept for the whole forwards.
    let mut maps: HashMap<(usize, usize), FeatureMap32> = HashMap::new();
    let mut make = |h: &HeadInputs| {
        let map = decoding_map(registry.as_ref().expect("a registry method"), 0, h)?;
        maps.insert((h.layer, h.head), map.clone());
        Ok(map)
    };
    let mut decoder = Decoder::start(model, &ids, &layers, &mut make).expect("the prompt reads");
    assert_eq!(maps.len(), layers.len() * model.config.heads);
    let mut worst = 0.0f64;
    let mut tokens = Vec::new();
    for step in 0..steps {
        let got = decoder.logits().to_vec();
        if !whole {
            let token = argmax(&got);
            tokens.push(token);
            decoder.step(model, token).expect("a step");
            continue;
        }
        let mut whole = |h: &HeadInputs| -> Option<Result<Vec<f32>, String>> {
            let map = maps.get(&(h.layer, h.head))?;
            let scale = (h.dim as f64).powf(-0.25);
            let scaled = |x: &[f32]| -> Vec<f32> {
                x.iter().map(|&v| (f64::from(v) * scale) as f32).collect()
            };
            let (q, k) = (scaled(h.q), scaled(h.k));
            let seq = Sequence::new(h.len, h.dim, h.dim, &q, &k, h.v).expect("shapes");
            Some(Ok(linear_attention_f32(
                map,
                &seq,
                LinearForm::CausalChunked,
            )
            .output))
        };
        let want = model
            .next_logits(&ids, Some(&mut whole))
            .expect("the whole forward");
        let difference = worst_relative(&got, &want);
        assert!(
            difference < RELATIVE,
            "step {step}: logits differ by {difference:e} relative"
        );
        worst = worst.max(difference);
        let (token, whole_token) = (argmax(&got), argmax(&want));
        assert_eq!(token, whole_token, "step {step}: the same next token");
        tokens.push(token);
        ids.push(token);
        let before = decoder.memory_bytes();
        decoder.step(model, token).expect("a step");
        let after = decoder.memory_bytes();
        for (layer, (b, a)) in before.iter().zip(&after).enumerate() {
            if layers.contains(&layer) {
                assert_eq!(a, b, "layer {layer}: a linear layer's state does not grow");
            } else {
                // Keys and values of 3 heads of 64 floats.
                assert_eq!(a - b, 2 * 3 * 64 * 4, "layer {layer}: one cache row");
            }
        }
    }
    (tokens, worst)
}

/// The key/value cache decodes as the whole softmax forward does.
#[test]
fn exact_decoding_equals_the_whole_forward() {
    let (tokens, worst) = decode_against_whole(None, 6, true);
    eprintln!("exact: worst relative logit difference {worst:e}, tokens {tokens:?}");
}

/// Three layers of positive random features (maps fitted on the prompt) and elu + 1 in every
/// layer run as recurrent networks decode as the whole causal linear attention recomputed at
/// each step.
#[test]
fn linear_layers_decode_as_a_recurrent_network() {
    for (method, layers) in [("prf-pos", "3,10,20"), ("elu", "all")] {
        let config = swapped(method, layers);
        let (tokens, worst) = decode_against_whole(Some(&config), 6, true);
        eprintln!(
            "{method} in {layers}: worst relative logit difference {worst:e}, tokens {tokens:?}"
        );
        // A linear layer's state: 9 heads of (D × 64 + D + 2) floats, D = 64 for elu + 1.
        if method == "elu" {
            let mut none = |_: &HeadInputs| Ok(FeatureMap32::EluPlusOne { d: 64 });
            let ids = model().tokenizer.encode(PROMPT).expect("encodes");
            let all: Vec<usize> = (0..30).collect();
            let decoder = Decoder::start(model(), &ids, &all, &mut none).expect("reads");
            assert!(
                decoder
                    .memory_bytes()
                    .iter()
                    .all(|&b| b == 9 * 4 * (64 * 64 + 64 + 2))
            );
        }
    }
}

/// The lab's continuation: its greedy tokens are the decoder's above (exact, and linear with
/// the maps fitted on the prompt); a sampled continuation is
/// the same for the same seed and both continuations read one uniform per token.
#[test]
fn the_lab_continues_the_text_as_the_decoder_does() {
    let mut config = swapped("prf-pos", "3,10,20");
    config.attention.text = PROMPT.to_string();
    config.set(Param::LmGenerate, "6").expect("tokens");
    let collect = |config: &ExperimentConfig, decoding| {
        let mut events = Vec::new();
        continue_text(
            model(),
            &LmJob::of(config),
            (decoding, &[]),
            now,
            &mut |e| events.push(e),
        );
        events
    };
    let tokens = |events: &[ContinuationEvent]| -> Vec<u32> {
        events
            .iter()
            .filter_map(|e| match e {
                ContinuationEvent::Token(t) => Some(t.id),
                _ => None,
            })
            .collect()
    };
    let exact = collect(&config, Decoding::Exact);
    let linear = collect(&config, Decoding::Linear);
    assert!(
        matches!(exact.first(), Some(ContinuationEvent::Started(s)) if s.linear_layers.is_empty())
    );
    assert!(
        matches!(
            exact.last(),
            Some(ContinuationEvent::Ended(ContinuationEnd::Complete))
        ),
        "{:?}",
        exact.last()
    );
    assert_eq!(tokens(&exact), decode_against_whole(None, 6, false).0);
    assert_eq!(
        tokens(&linear),
        decode_against_whole(Some(&config), 6, false).0
    );
    config
        .set(Param::LmTemperature, "0.8")
        .expect("a temperature");
    let sampled = tokens(&collect(&config, Decoding::Exact));
    assert_eq!(
        sampled,
        tokens(&collect(&config, Decoding::Exact)),
        "seeded"
    );
    assert_eq!(sampled.len(), 6);
    // A method without a feature map is refused with its reason.
    let nystrom = swapped("nystrom", "3");
    let mut job = LmJob::of(&nystrom);
    job.text = PROMPT.to_string();
    let mut events = Vec::new();
    continue_text(model(), &job, (Decoding::Linear, &[]), now, &mut |e| {
        events.push(e)
    });
    match events.as_slice() {
        [ContinuationEvent::Ended(ContinuationEnd::Failed(reason))] => {
            assert!(reason.contains("no recurrent form"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}
