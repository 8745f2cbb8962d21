//! The length study's transport: its units sent to the pool as `lab::page::lengths_run` says
//! (one per worker, shortest length first), each answer handed back and the merged report and
//! progress shown; the stop button's stop.

use std::cell::RefCell;
use std::rc::Rc;

use leptos::prelude::*;

use super::parts::Parts;
use crate::lab::attention::report::{AttentionOutput, AttentionPart};
use crate::lab::page::attention_dispatch::{AttentionDispatch, PartAsk};
use crate::lab::page::lengths_run::{LengthsRun, RunState};
use crate::ui::pool::{AttentionRunner, NO_WORKER, StudyChannel};

type Dispatch = StoredValue<Rc<RefCell<AttentionDispatch>>, LocalStorage>;

/// The view's length study in flight (or its last one), for its units' answers and the stop.
pub(super) type StudySlot = StoredValue<Option<Rc<Study>>, LocalStorage>;

/// The study in flight: its run, its units' channel in the pool, the generation of the
/// dispatch's request it answers, and whether it times one unit at a time.
pub(super) struct Study {
    run: RefCell<LengthsRun>,
    channel: StudyChannel,
    generation: u64,
    alone: bool,
}

/// Starts the study `ask` asks for, in place of any older one (whose units in flight are
/// then never delivered), timed as the configuration says (`lalone`).
pub(super) fn start_study(
    runner: AttentionRunner,
    dispatch: Dispatch,
    parts: Parts,
    slot: StudySlot,
    ask: PartAsk,
) {
    let PartAsk {
        request,
        generation,
    } = ask;
    if let Some(dispatch) = dispatch.try_get_value() {
        parts.count_pending(&dispatch.borrow());
    }
    let Some(channel) = runner.length_study(request.config.attention.source) else {
        slot.set_value(None);
        parts.lengths.set(Some(Err(NO_WORKER.into())));
        parts.lengths_progress.set(None);
        answered(dispatch, parts, generation, false);
        return;
    };
    let study = Rc::new(Study {
        run: RefCell::new(LengthsRun::new(&request.config)),
        channel,
        generation,
        alone: request.config.attention.lengths_alone,
    });
    slot.set_value(Some(study.clone()));
    parts.lengths.set(None);
    show(dispatch, parts, &study);
    send(dispatch, parts, slot, &study);
}

/// Stops the study in flight, if any: nothing more is sent and what is in flight is dropped;
/// what was measured stays on screen. `again`: the study is asked again at the next change
/// (its part no longer applies, so a later return to it must not find it stopped).
pub(super) fn stop_study(dispatch: Dispatch, parts: Parts, slot: StudySlot, again: bool) {
    let Some(study) = slot.try_with_value(Clone::clone).flatten() else {
        return;
    };
    if study.run.borrow_mut().stop() {
        study.channel.supersede();
        parts
            .lengths_progress
            .set(Some(study.run.borrow().progress()));
        answered(dispatch, parts, study.generation, !again);
    }
}

/// Sends the units the run gives now.
fn send(dispatch: Dispatch, parts: Parts, slot: StudySlot, study: &Rc<Study>) {
    let workers = if study.alone {
        1
    } else {
        study.channel.workers()
    };
    let requests = study.run.borrow_mut().next_requests(workers);
    for (index, request) in requests {
        let this = study.clone();
        study.channel.ask(request, move |answer| {
            // A study replaced (or a view gone) hears nothing more.
            let current = slot
                .try_with_value(|s| s.as_ref().is_some_and(|s| Rc::ptr_eq(s, &this)))
                .unwrap_or(false);
            if !current {
                return;
            }
            let report = answer.and_then(|output| match output {
                AttentionOutput::Lengths(report) => Ok(report),
                _ => Err("unexpected answer to a unit of the length study".to_string()),
            });
            this.run.borrow_mut().on_answer(index, report);
            show(dispatch, parts, &this);
            send(dispatch, parts, slot, &this);
        });
    }
}

/// Shows the run's merged report and progress; tells the dispatch once it has ended.
fn show(dispatch: Dispatch, parts: Parts, study: &Study) {
    let (progress, report) = {
        let run = study.run.borrow();
        (run.progress(), run.report().cloned())
    };
    let shown = match &progress.state {
        RunState::Failed(message) => Some(Err(message.clone())),
        _ => report.map(Ok),
    };
    parts.lengths.set(shown);
    let ended = match &progress.state {
        RunState::Running => None,
        RunState::Failed(_) => Some(false),
        RunState::Complete | RunState::Stopped => Some(true),
    };
    parts.lengths_progress.set(Some(progress));
    if let Some(ok) = ended {
        answered(dispatch, parts, study.generation, ok);
    }
}

/// Tells the dispatch the study of `generation` ended (`ok`: not an error), and the parts'
/// in-flight counts follow.
fn answered(dispatch: Dispatch, parts: Parts, generation: u64, ok: bool) {
    let Some(dispatch) = dispatch.try_get_value() else {
        return;
    };
    dispatch
        .borrow_mut()
        .on_answer(AttentionPart::Lengths, generation, ok);
    parts.count_pending(&dispatch.borrow());
}
