//! The run's rules: as many units in flight as workers, shortest length first; each answer
//! merged; a stop named in the units sent after it; the progress; a stop and an error end it;
//! answers out of place change nothing.

use super::*;
use crate::lab::attention::lengths::{
    Kernel, LengthPoint, LengthSeries, POINT_BUDGET_MS, UnitKernels,
};
use crate::lab::test_support::config_with;
use crate::numerics::attention::long::LinearForm;

fn config(lmax: &str) -> ExperimentConfig {
    config_with(&[("view", "attention"), ("lmax", lmax), ("methods", "elu")])
}

/// What a worker would answer for `request`'s unit: exact attention at its length, `ms` per
/// run.
fn answer(request: &AttentionRequest, ms: f64) -> LengthsReport {
    let unit = request.lengths_unit.as_ref().expect("a unit");
    let form = if unit.causal {
        LinearForm::CausalChunked
    } else {
        LinearForm::Bidirectional
    };
    LengthsReport {
        layer: 0,
        head: 0,
        lengths: study_lengths(request.config.attention.length_max),
        head_sizes: vec![32, 64],
        features: vec![64, 256],
        dense_rate: 1e9,
        exact_rate: 0.0,
        budget_ms: POINT_BUDGET_MS,
        series: vec![LengthSeries {
            d: unit.d,
            kernel: Kernel::Exact,
            form,
            points: vec![LengthPoint {
                len: unit.len,
                ms,
                runs_ms: vec![ms],
                multiply_adds: 1.0,
                model_ms: 0.0,
                memory_bytes: 0.0,
                output_error: None,
                row_tv: None,
                bad_rows: 0,
            }],
            stopped_at: (ms > POINT_BUDGET_MS).then_some(unit.len * 2),
        }],
        crossovers: Vec::new(),
        skipped: Vec::new(),
    }
}

#[test]
fn units_go_out_one_per_worker_shortest_first() {
    let mut run = LengthsRun::new(&config("512"));
    // 3 lengths × 2 head sizes × 2 causalities, the first split in two.
    assert_eq!(run.progress().total, 13);
    let first = run.next_requests(2);
    assert_eq!(first.len(), 2);
    let unit = |r: &AttentionRequest| r.lengths_unit.clone().expect("a unit");
    assert_eq!((unit(&first[0].1).len, unit(&first[0].1).d), (128, 64));
    assert_eq!(unit(&first[0].1).kernels, UnitKernels::Exact);
    assert_eq!(unit(&first[1].1).kernels, UnitKernels::Methods);
    assert!(first.iter().all(|(_, r)| r.part == AttentionPart::Lengths));
    // Nothing more while both are in flight; a zero worker count still keeps one going.
    assert!(run.next_requests(2).is_empty());
    run.on_answer(first[0].0, Ok(answer(&first[0].1, 1.0)));
    assert_eq!(run.report().map(|r| r.lengths.clone()), Some(vec![128]));
    assert_eq!(run.progress().done, 1);
    let next = run.next_requests(2);
    assert_eq!(next.len(), 1);
    let mut in_flight = vec![first[1].clone(), next[0].clone()];
    while let Some((index, request)) = in_flight.pop() {
        run.on_answer(index, Ok(answer(&request, 1.0)));
        in_flight.extend(run.next_requests(0));
    }
    assert_eq!(
        run.progress(),
        LengthsProgress {
            done: 13,
            total: 13,
            state: RunState::Complete
        }
    );
    let report = run.report().expect("merged");
    assert_eq!(report.lengths, vec![128, 256, 512]);
    assert_eq!(report.series.len(), 4);
    assert!(report.series.iter().all(|s| s.points.len() == 3));
    assert!(run.next_requests(2).is_empty());
}

/// A run over the budget at 128 stops that series at 256: units sent afterwards at its head
/// size name it, the others do not; a point another unit measured beyond the stop is dropped.
#[test]
fn a_stop_is_named_in_later_units() {
    let mut run = LengthsRun::new(&config("512"));
    let sent = run.next_requests(4);
    let (index, request) = &sent[0];
    let stopped_unit = request.lengths_unit.clone().expect("a unit");
    run.on_answer(*index, Ok(answer(request, 2.0 * POINT_BUDGET_MS)));
    for (index, request) in &sent[1..] {
        run.on_answer(*index, Ok(answer(request, 1.0)));
    }
    let mut later = run.next_requests(8);
    assert_eq!(later.len(), 8);
    while let Some((index, request)) = later.pop() {
        let unit = request.lengths_unit.as_ref().expect("a unit");
        let named = unit.d == stopped_unit.d;
        assert_eq!(unit.stopped.len(), usize::from(named), "{unit:?}");
        if named {
            assert_eq!(unit.stopped[0].kernel, Kernel::Exact);
            assert_eq!(unit.stopped[0].form, LinearForm::Bidirectional);
        }
        // The worker measures it anyway here: the merge drops it.
        run.on_answer(index, Ok(answer(&request, 1.0)));
        later.extend(run.next_requests(8));
    }
    let report = run.report().expect("merged");
    let stopped = report
        .series
        .iter()
        .find(|s| s.d == stopped_unit.d && s.form == LinearForm::Bidirectional)
        .expect("its series");
    assert_eq!(stopped.points.len(), 1);
    assert_eq!(stopped.stopped_at, Some(256));
    assert_eq!(run.progress().state, RunState::Complete);
}

/// A stop keeps what was measured and sends nothing more; answers still in flight are
/// ignored; an answer to a unit never sent or answered twice changes nothing; an error ends
/// the run with its message.
#[test]
fn stop_error_and_stray_answers() {
    let mut run = LengthsRun::new(&config("1024"));
    let sent = run.next_requests(2);
    run.on_answer(sent[0].0, Ok(answer(&sent[0].1, 1.0)));
    run.on_answer(sent[0].0, Ok(answer(&sent[0].1, 1.0)));
    run.on_answer(99, Ok(answer(&sent[0].1, 1.0)));
    assert_eq!(run.progress().done, 1);
    assert!(run.stop());
    assert!(!run.stop());
    assert!(run.next_requests(2).is_empty());
    run.on_answer(sent[1].0, Ok(answer(&sent[1].1, 1.0)));
    let progress = run.progress();
    assert_eq!((progress.done, progress.total), (1, 17));
    assert_eq!(progress.state, RunState::Stopped);
    assert_eq!(run.report().map(|r| r.series.len()), Some(1));

    let mut failing = LengthsRun::new(&config("1024"));
    let sent = failing.next_requests(2);
    failing.on_answer(sent[1].0, Err("worker 1 failed".into()));
    assert_eq!(
        failing.progress().state,
        RunState::Failed("worker 1 failed".into())
    );
    assert!(failing.next_requests(2).is_empty());
    assert!(!failing.stop());

    let off = LengthsRun::new(&config("0"));
    assert!(matches!(off.progress().state, RunState::Failed(_)));
    assert_eq!(off.progress().total, 0);
}

/// The language model's heads give one head size, 64.
#[test]
fn the_language_models_study_has_one_head_size() {
    let lm = config_with(&[("view", "attention"), ("src", "lm"), ("lmax", "256")]);
    let mut run = LengthsRun::new(&lm);
    assert_eq!(run.progress().total, 2 * 2 + 1);
    let sent = run.next_requests(8);
    assert!(
        sent.iter()
            .all(|(_, r)| r.lengths_unit.as_ref().is_some_and(|u| u.d == 64))
    );
}
