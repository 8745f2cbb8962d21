//! A forward split by rows over several workers (`lab::models::smollm::split`, on
//! `numerics::llama::part`), with the parts' messages passed by hand through postcard as the
//! model workers pass them: the exact score's run (losses, next tokens, every layer's hidden
//! states) is the one-worker run bit for bit; a swap's draw's losses, perplexity and next
//! tokens are the one-worker draw's bit for bit, over two and three parts, from the embeddings and from a kept exact run,
//! for a deterministic map in every layer, Performer's random features and a diagonal A fitted
//! to each head's whole queries and keys (each part computes the attention whole, so a method
//! that reads every row is not cut). A part's failure reaches every part, and the draw says it.
//!
//! Needs the GGUF file (scripts/fetch-model.sh caches it; scripts/test.sh runs it first).

use std::sync::OnceLock;

use softmax_kernel_lab::cli::default_lm_path;
use softmax_kernel_lab::lab::config::ExperimentConfig;
use softmax_kernel_lab::lab::models::smollm::split::{LmPeerMessage, SplitForward};
use softmax_kernel_lab::lab::models::smollm::{LmJob, LmSwapDraw, score, swap_draw};
use softmax_kernel_lab::numerics::attention::methods::MethodId;
use softmax_kernel_lab::numerics::llama::{ExactRun, LlamaModel};

fn model() -> &'static LlamaModel {
    static MODEL: OnceLock<LlamaModel> = OnceLock::new();
    MODEL.get_or_init(|| {
        let path = default_lm_path();
        let bytes = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "cannot read the language model {}: {e}. Run scripts/fetch-model.sh first",
                path.display()
            )
        });
        LlamaModel::load(bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    })
}

fn now() -> f64 {
    0.0
}

/// A text of 53 tokens: long enough to split, with a head block boundary nowhere near.
const TEXT: &str = "The mill stood by the river for two hundred years. Every spring the water \
    rose and turned the wheel faster, and the miller's children counted the turns from the \
    bridge. When the railway came, the grain went to the city instead, and the wheel stopped.";

fn job(method: &str, layers: Vec<usize>, features: usize) -> LmJob {
    let mut config = ExperimentConfig::default();
    config.attention.text = TEXT.into();
    config.attention.lm_method = MethodId::from_id(method);
    assert!(config.attention.lm_method.is_some(), "{method}");
    config.attention.features = features;
    config.attention.lm_layers = layers;
    LmJob::of(&config)
}

/// Each part's view of one step: every other part's message, through postcard.
fn others(messages: &[LmPeerMessage], me: usize) -> Vec<LmPeerMessage> {
    messages
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != me)
        .map(|(_, m)| {
            let bytes = postcard::to_allocvec(m).expect("encodes");
            postcard::from_bytes(&bytes).expect("decodes")
        })
        .collect()
}

/// Draw `draw` of `job` over `count` parts in lock step, part 0 holding `exact`; `spoil` is
/// called on each step's messages before they travel.
fn split_draw(
    job: &LmJob,
    draw: usize,
    count: usize,
    exact: Option<&ExactRun>,
    spoil: &mut dyn FnMut(usize, &mut Vec<LmPeerMessage>),
) -> LmSwapDraw {
    let parts: Vec<SplitForward> = (0..count)
        .map(|i| SplitForward::draw(model(), job, draw, (i, count)).expect("a part"))
        .collect();
    let (first, mine, others) = lock_step(parts, exact, spoil);
    first.answer(mine, others, 0.0).expect("an answer")
}

/// Runs `parts` in lock step, part 0 holding `exact`; `spoil` is called on each step's
/// messages before they travel. Part 0, with its last message and the others'.
fn lock_step<'m>(
    mut parts: Vec<SplitForward<'m>>,
    exact: Option<&ExactRun>,
    spoil: &mut dyn FnMut(usize, &mut Vec<LmPeerMessage>),
) -> (SplitForward<'m>, LmPeerMessage, Vec<LmPeerMessage>) {
    assert!(parts[0].worth_splitting());
    let held = |i: usize| if i == 0 { exact } else { None };
    let mut step = 0;
    let mut starts: Vec<LmPeerMessage> = parts
        .iter()
        .enumerate()
        .map(|(i, p)| p.start_message(held(i)))
        .collect();
    spoil(step, &mut starts);
    for (i, part) in parts.iter_mut().enumerate() {
        part.begin(others(&starts, i), held(i));
    }
    while parts[0].layers_left() {
        step += 1;
        let mut shares: Vec<LmPeerMessage> = parts.iter_mut().map(|p| p.project()).collect();
        spoil(step, &mut shares);
        for (i, part) in parts.iter_mut().enumerate() {
            assert!(part.layers_left(), "part {i} is not at step {step}");
            part.finish_layer(others(&shares, i));
        }
        // A swapped layer's heads are split: one more step, for every part or none.
        let mut heads: Vec<Option<LmPeerMessage>> =
            parts.iter_mut().map(|p| p.heads_message()).collect();
        if heads[0].is_some() {
            assert!(
                heads.iter().all(Option::is_some),
                "every part has the heads' step"
            );
            step += 1;
            let mut heads: Vec<LmPeerMessage> = heads.drain(..).flatten().collect();
            spoil(step, &mut heads);
            for (i, part) in parts.iter_mut().enumerate() {
                part.finish_heads(others(&heads, i));
            }
        } else {
            assert!(
                heads.iter().all(Option::is_none),
                "no part has the heads' step"
            );
        }
    }
    assert!(parts.iter().all(|p| !p.layers_left()));
    let finals: Vec<LmPeerMessage> = parts.iter().map(|p| p.scores_message()).collect();
    let rest = others(&finals, 0);
    let first = parts.into_iter().next().expect("part 0");
    (first, finals[0].clone(), rest)
}

fn assert_same(split: &LmSwapDraw, whole: &LmSwapDraw, what: &str) {
    assert!(whole.failure.is_none(), "{what}: {:?}", whole.failure);
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&split.losses), bits(&whole.losses), "{what}: losses");
    assert_eq!(split.perplexity, whole.perplexity, "{what}: perplexity");
    assert_eq!(split.top, whole.top, "{what}: next tokens");
    assert_eq!(split.failure, None, "{what}");
    assert!(whole.perplexity.is_some_and(f64::is_finite), "{what}");
}

#[test]
fn a_split_draw_is_the_whole_draw_bit_for_bit() {
    let tokens = model().tokenizer.encode(TEXT).expect("tokens").len();
    assert!((40..128).contains(&tokens), "{tokens} tokens");
    let cases = [
        ("elu", (0..30).collect::<Vec<_>>(), 16, 0, 2),
        ("hcexp-var", vec![3, 17], 32, 1, 3),
    ];
    for (method, layers, features, draw, count) in cases {
        let job = job(method, layers, features);
        let whole = swap_draw(model(), &job, draw, now, None).expect("runs");
        let split = split_draw(&job, draw, count, None, &mut |_, _| {});
        assert_same(&split, &whole, &format!("{method}, {count} parts"));
        assert_eq!(split.top.len(), if draw == 0 { tokens } else { 0 });
    }
}

/// Part 0 keeps the exact run: the draw starts at the first swapped layer, the other parts
/// entering it with the hidden states part 0 sends; the answer is the same bit for bit.
#[test]
fn a_split_draw_from_a_kept_run_is_the_whole_draw() {
    let job = job("prf-pos", (20..30).collect(), 64);
    let (_, kept) = score(model(), &job, now).expect("scores");
    let whole = swap_draw(model(), &job, 0, now, None).expect("runs");
    let mut starts_from = None;
    let split = split_draw(&job, 0, 2, Some(&kept), &mut |step, messages| {
        if step == 0
            && let LmPeerMessage::Start { from, .. } = &messages[0]
        {
            starts_from = Some(*from);
        }
    });
    assert_eq!(starts_from, Some(20));
    assert_same(&split, &whole, "prf-pos from layer 20");
}

/// The exact score over two and three parts: part 0's run (every token's loss and next
/// tokens, and the hidden states entering every layer, which later draws and the per-layer
/// chart start from) is the one-worker exact run bit for bit.
#[test]
fn a_split_exact_score_is_the_whole_run() {
    let job = job("prf-pos", vec![5], 16);
    let (_, whole) = score(model(), &job, now).expect("scores");
    for count in [2, 3] {
        let parts: Vec<SplitForward> = (0..count)
            .map(|i| SplitForward::exact(model(), &job, (i, count)).expect("a part"))
            .collect();
        let (first, mine, rest) = lock_step(parts, None, &mut |_, _| {});
        let run = first.exact_run(mine, rest).expect("a run");
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(run.ids, whole.ids);
        assert_eq!(
            bits(&run.scores.losses),
            bits(&whole.scores.losses),
            "{count} parts"
        );
        assert_eq!(
            run.scores.predictions, whole.scores.predictions,
            "{count} parts"
        );
        assert_eq!(run.states.len(), whole.states.len());
        for (layer, (a, b)) in run.states.iter().zip(&whole.states).enumerate() {
            let same =
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "layer {layer}, {count} parts");
        }
    }
}

/// A part that fails at a layer (here its share lost on the way) makes every part fail at
/// that step and go on sending its failure, so that none waits: the draw's answer says why.
#[test]
fn a_parts_failure_reaches_every_part() {
    let job = job("elu", vec![4], 16);
    let split = split_draw(&job, 0, 2, None, &mut |step, messages| {
        if step == 3 {
            messages[1] = LmPeerMessage::Failed("part 1 was stopped".into());
        }
    });
    assert_eq!(split.failure.as_deref(), Some("part 1 was stopped"));
    assert_eq!(split.perplexity, None);
    assert!(split.losses.is_empty());
    // Layer 4 is swapped: its heads' step (step 6, after layers 0-4's) fails the same way,
    // and heads that do not fit (a value lost) are refused with a sentence, not a panic.
    let split = split_draw(&job, 0, 2, None, &mut |step, messages| {
        if step == 6 {
            assert!(matches!(messages[1], LmPeerMessage::Heads { .. }));
            messages[1] = LmPeerMessage::Failed("part 1 was stopped".into());
        }
    });
    assert_eq!(split.failure.as_deref(), Some("part 1 was stopped"));
    let split = split_draw(&job, 0, 2, None, &mut |step, messages| {
        if step == 6
            && let LmPeerMessage::Heads { values, .. } = &mut messages[1]
        {
            values.0.pop();
        }
    });
    let failure = split.failure.expect("refused");
    assert!(failure.contains("do not fit"), "{failure}");
}
