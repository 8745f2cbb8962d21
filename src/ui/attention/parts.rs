//! The attention view's parts on the page: the latest outcome of each (its signals) and how a
//! request is sent and its answer shown (the rules are `lab::page::attention_dispatch`'s).

use std::cell::RefCell;
use std::rc::Rc;

use leptos::prelude::*;

use crate::lab::attention::report::{
    AttentionOutput, AttentionPart, BiasVarianceReport, BudgetReport, HeadsTable,
    KernelVsAttention, LengthsReport, MainReport, TemperatureReport,
};
use crate::lab::page::attention_dispatch::{AnswerFate, AttentionDispatch, PartAsk};
use crate::lab::page::lengths_run::LengthsProgress;
use crate::ui::pool::AttentionRunner;

/// The latest outcome of each part (`None`: not computed yet), and how long the last main
/// part took from request to answer. The length study (seconds to a minute) is counted apart
/// from the other parts, so that the view is ready while it runs; its report is the merge of
/// the units answered so far, with its progress beside it.
#[derive(Clone, Copy)]
pub(super) struct Parts {
    pub(super) main: RwSignal<Option<Result<MainReport, String>>, LocalStorage>,
    pub(super) bias: RwSignal<Option<Result<BiasVarianceReport, String>>, LocalStorage>,
    pub(super) temperature: RwSignal<Option<Result<TemperatureReport, String>>, LocalStorage>,
    pub(super) budget: RwSignal<Option<Result<BudgetReport, String>>, LocalStorage>,
    pub(super) table: RwSignal<Option<Result<HeadsTable, String>>, LocalStorage>,
    pub(super) kernel_vs_attention:
        RwSignal<Option<Result<KernelVsAttention, String>>, LocalStorage>,
    pub(super) lengths: RwSignal<Option<Result<LengthsReport, String>>, LocalStorage>,
    /// Parts in flight, the length study left out.
    pub(super) busy: RwSignal<usize>,
    pub(super) main_ms: RwSignal<Option<f64>>,
    /// Answers of the main part so far (the benchmark waits for the next one).
    pub(super) main_answers: RwSignal<u64>,
    /// Whether a length study is in flight.
    pub(super) lengths_busy: RwSignal<bool>,
    /// The length study's units answered out of all, and whether it runs, ended or stopped
    /// (`None` before the first study).
    pub(super) lengths_progress: RwSignal<Option<LengthsProgress>>,
}

impl Parts {
    pub(super) fn new() -> Self {
        Self {
            main: RwSignal::new_local(None),
            bias: RwSignal::new_local(None),
            temperature: RwSignal::new_local(None),
            budget: RwSignal::new_local(None),
            table: RwSignal::new_local(None),
            kernel_vs_attention: RwSignal::new_local(None),
            lengths: RwSignal::new_local(None),
            busy: RwSignal::new(0),
            main_ms: RwSignal::new(None),
            main_answers: RwSignal::new(0),
            lengths_busy: RwSignal::new(false),
            lengths_progress: RwSignal::new(None),
        }
    }

    /// The in-flight counts of the dispatch's newest requests (the length study apart).
    pub(super) fn count_pending(&self, dispatch: &AttentionDispatch) {
        self.busy.set(dispatch.pending_besides_lengths());
        self.lengths_busy
            .set(dispatch.is_pending(AttentionPart::Lengths));
    }

    /// Stores an answer in its part's signal.
    fn store(&self, part: AttentionPart, answer: Result<AttentionOutput, String>) {
        fn pick<T>(
            answer: Result<AttentionOutput, String>,
            f: impl FnOnce(AttentionOutput) -> Option<T>,
        ) -> Result<T, String> {
            answer.and_then(|o| f(o).ok_or_else(|| "unexpected answer".to_string()))
        }
        match part {
            AttentionPart::Main => self.main.set(Some(pick(answer, |o| match o {
                AttentionOutput::Main(r) => Some(r),
                _ => None,
            }))),
            AttentionPart::BiasVariance => self.bias.set(Some(pick(answer, |o| match o {
                AttentionOutput::BiasVariance(r) => Some(r),
                _ => None,
            }))),
            AttentionPart::Temperature => self.temperature.set(Some(pick(answer, |o| match o {
                AttentionOutput::Temperature(r) => Some(r),
                _ => None,
            }))),
            AttentionPart::Budget => self.budget.set(Some(pick(answer, |o| match o {
                AttentionOutput::Budget(r) => Some(r),
                _ => None,
            }))),
            AttentionPart::HeadsTable => self.table.set(Some(pick(answer, |o| match o {
                AttentionOutput::HeadsTable(r) => Some(r),
                _ => None,
            }))),
            AttentionPart::KernelVsAttention => {
                self.kernel_vs_attention.set(Some(pick(answer, |o| match o {
                    AttentionOutput::KernelVsAttention(r) => Some(r),
                    _ => None,
                })))
            }
            AttentionPart::Lengths => self.lengths.set(Some(pick(answer, |o| match o {
                AttentionOutput::Lengths(r) => Some(r),
                _ => None,
            }))),
        }
    }
}

fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0)
}

/// Sends `ask` for its part (the pool holds it while an older one of the part is in flight);
/// the answer is shown if the dispatch says it is the part's newest, and the parts' in-flight
/// counts follow the dispatch's. (The length study goes unit by unit: `lengths_client`.)
pub(super) fn submit(
    runner: AttentionRunner,
    dispatch: StoredValue<Rc<RefCell<AttentionDispatch>>, LocalStorage>,
    parts: Parts,
    ask: PartAsk,
) {
    let PartAsk {
        request,
        generation,
    } = ask;
    let part = request.part;
    parts.count_pending(&dispatch.get_value().borrow());
    let started = now_ms();
    runner.run(request, move |answer| {
        // The view may be gone by the time the answer comes (the reader moved on): its parts
        // went with it.
        let Some(dispatch) = dispatch.try_get_value() else {
            return;
        };
        let fate = dispatch
            .borrow_mut()
            .on_answer(part, generation, answer.is_ok());
        parts.count_pending(&dispatch.borrow());
        if fate == AnswerFate::Stale {
            return;
        }
        if part == AttentionPart::Main {
            parts.main_ms.set(Some(now_ms() - started));
            parts.main_answers.update(|n| *n += 1);
        }
        parts.store(part, answer);
    });
}
