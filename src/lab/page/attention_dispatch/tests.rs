//! The attention view's dispatch, case by case: one test per kind of change.

use super::*;
use crate::lab::test_support::config_with;

fn parts(asks: &[PartAsk]) -> Vec<AttentionPart> {
    asks.iter().map(|a| a.request.part).collect()
}

fn view() -> ViewState<'static> {
    ViewState::default()
}

/// Answers every ask as `ok`.
fn answer_all(dispatch: &mut AttentionDispatch, asks: &[PartAsk], ok: bool) {
    for ask in asks {
        assert_eq!(
            dispatch.on_answer(ask.request.part, ask.generation, ok),
            AnswerFate::Show
        );
    }
}

const SYNTHETIC: [AttentionPart; 5] = [
    AttentionPart::Main,
    AttentionPart::BiasVariance,
    AttentionPart::Temperature,
    AttentionPart::Budget,
    AttentionPart::KernelVsAttention,
];

#[test]
fn settings_ask_again_only_the_parts_whose_numbers_they_change() {
    let mut dispatch = AttentionDispatch::new();
    let config = config_with(&[("view", "attention")]);
    let first = dispatch.on_change(&config, view());
    assert_eq!(
        parts(&first),
        SYNTHETIC,
        "the view opens: every part that applies"
    );
    assert!(first.iter().all(|a| a.request.config == config));
    answer_all(&mut dispatch, &first, true);
    // The same configuration again (an effect re-run): nothing.
    assert!(dispatch.on_change(&config, view()).is_empty());
    // The heatmaps' method is display only.
    let focus = config_with(&[("view", "attention"), ("focus", "elu")]);
    assert!(dispatch.on_change(&focus, view()).is_empty());
    // m changes every part's numbers.
    let m = config_with(&[("view", "attention"), ("features", "32")]);
    let again = dispatch.on_change(&m, view());
    assert_eq!(parts(&again), SYNTHETIC);
    assert!(
        again
            .iter()
            .zip(&first)
            .all(|(a, b)| a.generation > b.generation)
    );
    // A configuration above the ask-first budget asks nothing until it is confirmed.
    let large = config_with(&[("view", "attention"), ("features", "64")]);
    let waiting = ViewState {
        awaiting_confirmation: true,
        ..view()
    };
    assert!(dispatch.on_change(&large, waiting).is_empty());
    assert_eq!(parts(&dispatch.on_change(&large, view())), SYNTHETIC);
}

#[test]
fn the_reader_s_text_waits_until_the_model_ran_it() {
    let mut dispatch = AttentionDispatch::new();
    let text = |t: &str| config_with(&[("view", "attention"), ("src", "text"), ("text", t)]);
    let first = text("The cat sat on the mat.");
    assert!(dispatch.on_change(&first, view()).is_empty(), "not run yet");
    let ran = ViewState {
        text_ran: true,
        ..view()
    };
    let asks = dispatch.on_change(&first, ran);
    assert!(parts(&asks).contains(&AttentionPart::HeadsTable));
    assert!(parts(&asks).contains(&AttentionPart::Main));
    answer_all(&mut dispatch, &asks, true);
    // A new text: nothing until it ran; then every part (the heads changed).
    let second = text("A dog barked twice.");
    assert!(dispatch.on_change(&second, view()).is_empty());
    assert_eq!(parts(&dispatch.on_change(&second, ran)), parts(&asks));
}

#[test]
fn a_new_source_asks_every_part_of_it() {
    let mut dispatch = AttentionDispatch::new();
    let synthetic = config_with(&[("view", "attention")]);
    let asks = dispatch.on_change(&synthetic, view());
    answer_all(&mut dispatch, &asks, true);
    // The stored heads need no waiting on the page: the workers read them.
    let real = config_with(&[("view", "attention"), ("src", "minilm")]);
    let asks = dispatch.on_change(&real, view());
    assert_eq!(
        parts(&asks),
        [
            AttentionPart::Main,
            AttentionPart::BiasVariance,
            AttentionPart::Temperature,
            AttentionPart::Budget,
            AttentionPart::HeadsTable,
            AttentionPart::KernelVsAttention,
        ]
    );
    assert!(asks.iter().all(|a| a.request.reads_stored_heads()));
    answer_all(&mut dispatch, &asks, true);
    // Another head of the same source: the table (every head) stays, the head's parts go.
    let other_head = config_with(&[("view", "attention"), ("src", "minilm"), ("head", "3")]);
    let asks = dispatch.on_change(&other_head, view());
    assert!(!parts(&asks).contains(&AttentionPart::HeadsTable));
    assert!(!parts(&asks).contains(&AttentionPart::KernelVsAttention));
    assert!(parts(&asks).contains(&AttentionPart::Main));
}

#[test]
fn a_part_opened_is_asked_alone() {
    let mut dispatch = AttentionDispatch::new();
    let config = config_with(&[("view", "attention")]);
    let asks = dispatch.on_change(&config, view());
    answer_all(&mut dispatch, &asks, true);
    // The length study opens (lmax): only it is asked, and it reads the stored heads.
    let study = config_with(&[("view", "attention"), ("lmax", "512")]);
    let asks = dispatch.on_change(&study, view());
    assert_eq!(parts(&asks), [AttentionPart::Lengths]);
    assert!(asks[0].request.reads_stored_heads());
    // Moving L (the study does not read it) asks every other part, not the study.
    let longer = config_with(&[("view", "attention"), ("lmax", "512"), ("len", "64")]);
    assert!(!parts(&dispatch.on_change(&longer, view())).contains(&AttentionPart::Lengths));
    // One figure embedded alone: only its parts.
    let mut embedded = AttentionDispatch::new();
    let only = [AttentionPart::Main];
    let asks = embedded.on_change(
        &study,
        ViewState {
            embedded: Some(&only),
            ..view()
        },
    );
    assert_eq!(parts(&asks), [AttentionPart::Main]);
}

#[test]
fn an_answer_that_arrives_late_is_stale_and_a_failed_part_is_asked_again() {
    let mut dispatch = AttentionDispatch::new();
    let config = config_with(&[("view", "attention")]);
    let first = dispatch.on_change(&config, view());
    assert_eq!(dispatch.pending_besides_lengths(), SYNTHETIC.len());
    // m moves before the first answers come: they are stale when they come.
    let m = config_with(&[("view", "attention"), ("features", "32")]);
    let second = dispatch.on_change(&m, view());
    for ask in &first {
        assert_eq!(
            dispatch.on_answer(ask.request.part, ask.generation, true),
            AnswerFate::Stale
        );
    }
    assert_eq!(dispatch.pending_besides_lengths(), SYNTHETIC.len());
    answer_all(&mut dispatch, &second, true);
    assert_eq!(dispatch.pending_besides_lengths(), 0);
    // A second answer to the same request is stale too.
    let main = &second[0];
    assert_eq!(
        dispatch.on_answer(main.request.part, main.generation, true),
        AnswerFate::Stale
    );
    // A failed part is asked again at the next change, with the same key, and only it.
    let m8 = config_with(&[("view", "attention"), ("features", "8")]);
    let asks = dispatch.on_change(&m8, view());
    let (failed, rest) = asks.split_first().unwrap();
    assert_eq!(
        dispatch.on_answer(failed.request.part, failed.generation, false),
        AnswerFate::Show
    );
    answer_all(&mut dispatch, rest, true);
    assert!(!dispatch.is_pending(failed.request.part));
    let retry = dispatch.on_change(&m8, view());
    assert_eq!(parts(&retry), [failed.request.part]);
    assert!(dispatch.is_pending(failed.request.part));
    // The length study counts apart.
    let study = config_with(&[("view", "attention"), ("features", "8"), ("lmax", "512")]);
    let asks = dispatch.on_change(&study, view());
    assert_eq!(parts(&asks), [AttentionPart::Lengths]);
    assert!(dispatch.is_pending(AttentionPart::Lengths));
}

/// The study timed another way (`lalone`) is asked again, and its older answer is stale; the
/// other parts, and the study, do not read the swap's `reuse`.
#[test]
fn timing_the_study_another_way_asks_it_again_and_nothing_else() {
    let mut dispatch = AttentionDispatch::new();
    let config = config_with(&[("view", "attention"), ("lmax", "256")]);
    let first = dispatch.on_change(&config, view());
    let lengths = first
        .iter()
        .find(|a| a.request.part == AttentionPart::Lengths)
        .expect("the study is asked");
    let alone = config_with(&[("view", "attention"), ("lmax", "256"), ("lalone", "on")]);
    let again = dispatch.on_change(&alone, view());
    assert_eq!(parts(&again), [AttentionPart::Lengths]);
    assert_eq!(
        dispatch.on_answer(AttentionPart::Lengths, lengths.generation, true),
        AnswerFate::Stale
    );
    assert!(dispatch.is_pending(AttentionPart::Lengths));
    let reuse_off = config_with(&[
        ("view", "attention"),
        ("lmax", "256"),
        ("lalone", "on"),
        ("reuse", "off"),
    ]);
    assert!(dispatch.on_change(&reuse_off, view()).is_empty());
}
