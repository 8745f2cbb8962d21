//! Approximate attention inside the model (`lab::models::swap`, `kernel-lab swap`): the exact path
//! pinned (a method that is exact in a limit, swapped into every layer, leaves the model as it
//! is), a random method checked statistically (more features move the embedding less, by more
//! than the draws' standard errors), Kendall's τ, the retrieval preset's exact ranking, and a
//! method whose rows can have no usable normaliser reported as such, never a panic or a NaN; the
//! learned Hedgehog maps trained in the model against Performer at their size.
//!
//! Needs the converted model, like tests/model.rs (scripts/fetch-model.sh; a missing file fails
//! every test here with that sentence).
#![cfg(all(not(target_arch = "wasm32"), feature = "text-model"))]

use std::sync::OnceLock;
use std::time::Instant;

use softmax_kernel_lab::cli::{self, default_model_path};
use softmax_kernel_lab::lab::config::ExperimentConfig;
use softmax_kernel_lab::lab::models::swap::{
    RETRIEVAL_CANDIDATES, RETRIEVAL_QUERY, Swap, SwapMethod, kendall_tau, retrieval_report,
    swap_report,
};
use softmax_kernel_lab::lab::models::text_model::TextModel;
use softmax_kernel_lab::numerics::attention::methods::MethodId;

static MODEL: OnceLock<TextModel> = OnceLock::new();

fn model() -> &'static TextModel {
    MODEL.get_or_init(|| {
        let path = default_model_path();
        let bytes = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "cannot read the converted model {}: {e}. Run scripts/fetch-model.sh first \
                 (scripts/test.sh does)",
                path.display()
            )
        });
        TextModel::from_checked_bytes(&bytes).unwrap_or_else(|e| panic!("{e}"))
    })
}

const TEXT: &str = "Attention lets every word look at every other word: each query is compared \
                    with all keys, and a softmax turns scores into weights for the values.";

fn method(id: &str) -> SwapMethod {
    SwapMethod::Registry(MethodId::from_id(id).unwrap_or_else(|| panic!("no method {id}")))
}

/// Milliseconds since the first call.
fn now() -> f64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
}

fn all_layers() -> Vec<usize> {
    (0..6).collect()
}

/// Methods exact in their limit (a window of L keys, L landmarks), swapped into every layer:
/// the model is unchanged up to f32 against f64 arithmetic (the method runs in f64 on the f32
/// projections; the forward's softmax uses a polynomial exp good to 2 ulp in f32).
#[test]
fn a_method_exact_in_its_limit_leaves_the_model_unchanged() {
    let mut config = ExperimentConfig::default();
    config.attention.window = 1024;
    config.attention.landmarks = 1024;
    for id in ["window", "nystrom"] {
        let swap = Swap {
            method: method(id),
            layers: all_layers(),
            draws: 1,
        };
        let report = swap_report(model(), TEXT, &config, &swap, now).unwrap();
        assert_eq!(report.failed_draws, 0, "{id}: {:?}", report.failure);
        let cosine = report.cosine.as_ref().unwrap().mean;
        assert!(1.0 - cosine < 1e-9, "{id}: cosine {cosine}");
        for layer in &report.per_layer {
            // f32 outputs of a softmax computed once in f32, once in f64: relative 1e-6 at most.
            assert!(
                layer.attention_error.max < 1e-5,
                "{id} layer {}: {:?}",
                layer.layer,
                layer.attention_error
            );
            assert!(
                layer.hidden_drift.max < 1e-5,
                "{id} layer {}: {:?}",
                layer.layer,
                layer.hidden_drift
            );
        }
    }
}

/// Performer's positive features in layer 0: with m = 4096 the embedding moves less than with
/// m = 16, by more than three standard errors of the difference of the two means over 32 draws
/// (measured: 1 − cos 0.086 ± 0.061 against 0.020 ± 0.010 per draw, a margin of 6 standard
/// errors; at m = 16 the distribution has a long tail, hence the number of draws). The layers after the
/// swapped one are not swapped, and their attention still moves (their inputs drifted).
#[test]
fn more_features_move_the_embedding_less() {
    let mut config = ExperimentConfig::default();
    let mut distance = Vec::new();
    for m in [16, 4096] {
        config.attention.features = m;
        let swap = Swap {
            method: method("prf-pos"),
            layers: vec![0],
            draws: 32,
        };
        let report = swap_report(model(), TEXT, &config, &swap, now).unwrap();
        assert_eq!(report.draws, 32);
        let c = report.cosine.unwrap();
        distance.push((1.0 - c.mean, c.sd / (32f64).sqrt()));
        let later = &report.per_layer[3];
        assert!(!later.swapped && later.attention_error.mean > 0.0);
    }
    let ((far, se_far), (near, se_near)) = (distance[0], distance[1]);
    let se = (se_far * se_far + se_near * se_near).sqrt();
    assert!(
        far - near > 3.0 * se,
        "1 − cos at m = 16: {far} ± {se_far}; at 4096: {near} ± {se_near}"
    );
}

#[test]
fn kendall_tau_of_equal_reversed_and_one_swapped_orders() {
    let a = [0.9, 0.7, 0.5, 0.3];
    assert_eq!(kendall_tau(&a, &a), 1.0);
    assert_eq!(kendall_tau(&a, &[0.1, 0.2, 0.3, 0.4]), -1.0);
    // One adjacent pair swapped: 5 concordant, 1 discordant of 6.
    assert!((kendall_tau(&a, &[0.7, 0.9, 0.5, 0.3]) - 4.0 / 6.0).abs() < 1e-12);
}

/// The exact model ranks a paraphrase of the query first and the four off-topic sentences last
/// (a check of the preset, and of the model); an exact-in-its-limit swap keeps the ranking.
#[test]
fn the_retrieval_preset_ranks_paraphrases_first() {
    let mut config = ExperimentConfig::default();
    config.attention.window = 1024;
    let swap = Swap {
        method: method("window"),
        layers: all_layers(),
        draws: 1,
    };
    let report = retrieval_report(
        model(),
        RETRIEVAL_QUERY,
        &RETRIEVAL_CANDIDATES,
        &config,
        &swap,
    )
    .unwrap();
    let order = &report.exact.order;
    assert!(
        order[0] < 3,
        "best candidate {}: {}",
        order[0],
        RETRIEVAL_CANDIDATES[order[0]]
    );
    let mut last_four = order[6..].to_vec();
    last_four.sort_unstable();
    assert_eq!(last_four, vec![6, 7, 8, 9], "ranking {order:?}");
    assert_eq!(report.top1_kept, Some(1.0));
    assert_eq!(report.kendall_tau.unwrap().mean, 1.0);
}

/// Trigonometric features at m = 1 in every layer: rows whose estimated normaliser is ≤ 0 stop
/// the forward; the report counts the failed draws and says why, with no NaN cosine.
#[test]
fn a_row_without_a_usable_normaliser_is_reported() {
    let mut config = ExperimentConfig::default();
    config.attention.features = 1;
    let swap = Swap {
        method: method("rff"),
        layers: all_layers(),
        draws: 6,
    };
    let report = swap_report(model(), TEXT, &config, &swap, now).unwrap();
    assert!(report.failed_draws > 0, "{report:?}");
    assert!(
        report
            .failure
            .as_deref()
            .unwrap()
            .contains("no usable normaliser")
    );
    if let Some(c) = &report.cosine {
        assert!(c.mean.is_finite() && c.min >= -1.0 && c.max <= 1.0 + 1e-12);
    }
}

/// `kernel-lab swap` prints one report per method and layer set and text, and `--layers 9` is
/// a rejected argument naming `--layers`.
#[test]
fn kernel_lab_swap_prints_a_report_per_method_and_layer() {
    let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let json = cli::run(&args(&[
        "swap",
        "--methods",
        "prf-pos,taylor",
        "--layers",
        "each",
        "--swapdraws",
        "2",
        "--text",
        TEXT,
    ]))
    .unwrap();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let texts = value["texts"].as_array().unwrap();
    assert_eq!(texts.len(), 2 * 6);
    assert_eq!(texts[0]["layers"], serde_json::json!([0]));
    assert_eq!(texts[6]["method"], "taylor");
    assert_eq!(texts[6]["draws"], 1, "a deterministic method runs once");
    let error = cli::run(&args(&["swap", "--layers", "9", "--text", TEXT])).unwrap_err();
    assert!(error.to_string().contains("--layers"), "{error}");
}

/// The Hedgehog maps trained in the model (100 steps on their own text): the held-out KL falls,
/// and swapped into every layer they keep the embedding closer than Performer at the same m = 64,
/// by more than three standard errors of Performer's mean over 8 draws (measured: 0.90 against
/// 0.61 ± 0.06 per draw on this text); the cost counts 2n = 64 features.
#[test]
fn learned_hedgehog_maps_beat_performer_at_their_size() {
    use softmax_kernel_lab::lab::models::learned_map::train_learned_maps;
    use softmax_kernel_lab::lab::models::protocol::{HEDGEHOG_TRAINING_TEXT, HedgehogJob};
    use std::sync::Arc;

    let job = HedgehogJob {
        train_text: HEDGEHOG_TRAINING_TEXT.to_string(),
        eval_text: TEXT.to_string(),
        half_features: 32,
        steps: 100,
        learning_rate: 0.01,
        seed: 0,
    };
    let mut points = 0;
    let (maps, training) = train_learned_maps(model(), &job, &mut |_| points += 1, now).unwrap();
    assert_eq!(points, 101, "step 0 and every step after");
    let (first, last) = (&training.curve[0], training.curve.last().unwrap());
    assert!(last.train_kl < 0.2 * first.train_kl, "{first:?} → {last:?}");
    assert!(
        last.eval_kl.unwrap() < 0.5 * first.eval_kl.unwrap(),
        "{first:?} → {last:?}"
    );
    let mut config = ExperimentConfig::default();
    config.attention.features = 64;
    let learned = swap_report(
        model(),
        TEXT,
        &config,
        &Swap {
            method: SwapMethod::Learned(Arc::new(maps)),
            layers: all_layers(),
            draws: 4,
        },
        now,
    )
    .unwrap();
    assert_eq!(
        (learned.draws, learned.features),
        (1, Some(64)),
        "deterministic, 64 features"
    );
    let performer = swap_report(
        model(),
        TEXT,
        &config,
        &Swap {
            method: method("prf-pos"),
            layers: all_layers(),
            draws: 8,
        },
        now,
    )
    .unwrap();
    let (h, p) = (learned.cosine.unwrap(), performer.cosine.unwrap());
    let se = p.sd / 8f64.sqrt();
    assert!(
        h.mean > p.mean + 3.0 * se,
        "Hedgehog {h:?} against Performer {p:?}"
    );
}

/// The Hedgehog training split by heads (layers 0–2 and 3–5, as two workers would train them),
/// each part sent through postcard, merged: the maps and the curve of one training of every
/// head; the maps sent again arrive equal (f32 parameters: 72 × 8,448 bytes and a few for the
/// sizes) and swap in as the originals do.
#[test]
fn hedgehog_training_splits_by_heads_and_the_maps_travel() {
    use softmax_kernel_lab::lab::models::learned_map::{
        LearnedHeads, LearnedMaps, merge_learned_heads, train_learned_heads, train_learned_maps,
    };
    use softmax_kernel_lab::lab::models::protocol::{HEDGEHOG_TRAINING_TEXT, HedgehogJob};
    use std::sync::Arc;

    let job = HedgehogJob {
        train_text: HEDGEHOG_TRAINING_TEXT.to_string(),
        eval_text: TEXT.to_string(),
        half_features: 32,
        steps: 10,
        learning_rate: 0.01,
        seed: 0,
    };
    let (whole, whole_record) = train_learned_maps(model(), &job, &mut |_| {}, now).unwrap();
    let travel = |part: LearnedHeads| -> LearnedHeads {
        postcard::from_bytes(&postcard::to_allocvec(&part).unwrap()).unwrap()
    };
    let first: Vec<usize> = (0..36).collect();
    let second: Vec<usize> = (36..72).collect();
    let parts = [
        travel(train_learned_heads(model(), &job, &second, &mut |_| {}, now).unwrap()),
        travel(train_learned_heads(model(), &job, &first, &mut |_| {}, now).unwrap()),
    ];
    let (merged, record) = merge_learned_heads(&parts).unwrap();
    assert_eq!(merged, whole);
    assert_eq!(record.curve, whole_record.curve);
    assert_eq!(record.curve.len(), 11);
    assert!(merge_learned_heads(&parts[..1]).is_err(), "half the heads");
    let bytes = postcard::to_allocvec(&merged).unwrap();
    eprintln!("the maps in postcard: {} bytes", bytes.len());
    assert!(
        bytes.len() > 72 * 8448 && bytes.len() < 72 * 8448 + 2048,
        "{}",
        bytes.len()
    );
    let arrived: LearnedMaps = postcard::from_bytes(&bytes).unwrap();
    assert_eq!(arrived, merged);
    let swap = |maps: LearnedMaps| {
        let swap = Swap {
            method: SwapMethod::Learned(Arc::new(maps)),
            layers: all_layers(),
            draws: 1,
        };
        let report = swap_report(model(), TEXT, &ExperimentConfig::default(), &swap, now);
        report.unwrap().cosine.unwrap().mean
    };
    assert_eq!(swap(arrived), swap(whole));
    // A truncated message is an error, never a panic.
    assert!(postcard::from_bytes::<LearnedMaps>(&bytes[..bytes.len() / 2]).is_err());
}

/// A retrieval against the set's exact run computed once equals the retrieval that runs it.
#[test]
fn a_retrieval_against_a_kept_exact_run_is_the_same() {
    use softmax_kernel_lab::lab::models::swap::{exact_retrieval, retrieval_report_on};

    let config = ExperimentConfig::default();
    let swap = Swap {
        method: method("prf-pos"),
        layers: vec![1, 4],
        draws: 2,
    };
    let candidates = &RETRIEVAL_CANDIDATES[..4];
    let exact = exact_retrieval(model(), RETRIEVAL_QUERY, candidates).unwrap();
    let kept = retrieval_report_on(model(), &exact, &config, &swap).unwrap();
    let again = retrieval_report(model(), RETRIEVAL_QUERY, candidates, &config, &swap).unwrap();
    assert_eq!(kept, again);
}

/// The text's own forward keeps what its swap reads (`forward_with_exact`, the worker that
/// runs the text keeps it): a swap from it reports the same numbers as from a separate exact
/// run, bit for bit (the measured times aside), and the forward is the answer's.
#[test]
fn a_swap_from_the_texts_own_forward_is_the_swap_from_its_exact_run() {
    use softmax_kernel_lab::lab::models::swap::{exact_run, forward_with_exact, swap_report_on};
    let model = model();
    let mut config = ExperimentConfig::default();
    config.attention.features = 16;
    let swap = Swap {
        method: method("prf-pos"),
        layers: all_layers(),
        draws: 2,
    };
    let ids = model.encode(TEXT).unwrap().ids;
    let (kept, qkv) = forward_with_exact(model, TEXT, &ids, now).unwrap();
    let answer = model.weights.forward(&ids, true).unwrap();
    assert_eq!(kept.embedding(), &answer.embedding[..]);
    assert_eq!(Some(qkv), answer.qkv);
    let separate = exact_run(model, TEXT, now).unwrap();
    let without_times = |mut report: softmax_kernel_lab::lab::models::protocol::SwapReport| {
        report.cost.forward_ms = 0.0;
        report.cost.exact_forward_ms = 0.0;
        report
    };
    let from_kept = swap_report_on(model, &kept, &config, &swap, now).unwrap();
    let from_separate = swap_report_on(model, &separate, &config, &swap, now).unwrap();
    assert!(from_kept.cosine.is_some(), "{from_kept:?}");
    assert_eq!(without_times(from_kept), without_times(from_separate));
}
