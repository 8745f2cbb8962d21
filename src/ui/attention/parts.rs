//! The attention view's parts on the page: the latest outcome of each (its signals), the parts
//! awaited, and what each part's numbers depend on (an unchanged part is not asked again).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use leptos::prelude::*;

use crate::lab::attention::report::{
    AttentionOutput, AttentionPart, AttentionRequest, BiasVarianceReport, BudgetReport, HeadsTable,
    KernelVsAttention, LengthsReport, MainReport, TemperatureReport,
};
use crate::lab::config::{ExperimentConfig, HeadSource};
use crate::numerics::attention::methods::MethodId;
use crate::ui::pool::AttentionRunner;

/// The latest outcome of each part (`None`: not computed yet), and how long the last main
/// part took from request to answer. The length study (seconds to a minute) is counted apart
/// from the other parts, so that the view is ready while it runs.
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
        }
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

/// The parts asked for and not answered yet, and what the last request of each computes (the
/// configuration without what only the display reads), so an unchanged part is not
/// recomputed. The pool keeps at most one request of a part in flight and delivers only the
/// newest one's answer (each part is a channel of its own).
#[derive(Default)]
pub(super) struct Requested {
    pending: HashSet<AttentionPart>,
    last_key: HashMap<AttentionPart, String>,
}

impl Requested {
    /// Records `key` as `part`'s newest request; false if it is the one already asked for.
    pub(super) fn is_new(&mut self, part: AttentionPart, key: String) -> bool {
        if self.last_key.get(&part) == Some(&key) {
            return false;
        }
        self.last_key.insert(part, key);
        true
    }
}

/// What a part's numbers depend on: for the real-head table only m, the seed and the
/// estimators' parameters; for the kernel-against-attention part on the real heads not the head
/// shown; for the length study what it reads (below); for the others everything but the
/// heatmaps' method.
pub(super) fn part_key(part: AttentionPart, config: &ExperimentConfig) -> String {
    if part == AttentionPart::Lengths {
        return lengths_key(config);
    }
    let mut c = config.clone();
    c.attention.focus = MethodId::first();
    c.probe = None;
    if part == AttentionPart::HeadsTable {
        return format!(
            "{} {} {:?} {} {:?}",
            c.attention.features, c.seed, c.coupling, c.theta, c.complex_a
        );
    }
    if part == AttentionPart::KernelVsAttention && c.attention.source.is_real() {
        // Every head of both passages: the one shown does not matter.
        (c.attention.passage, c.attention.layer, c.attention.head) = (0, 0, 0);
    }
    c.to_query()
}

/// What the length study reads: `lmax`, the methods and their settings (m, the seed, the
/// coupling, θ, the complex A, and the sizes a method's map may read: degree, window,
/// samples, landmarks, top k), the head whose Gaussian the sequences follow, and whose heads
/// they are (the stored asset for synthetic data and the real heads alike, or the text's).
/// Not the synthetic data's L, d and norms, the draws or the heatmaps' method: moving those
/// does not re-run a study of many seconds.
fn lengths_key(c: &ExperimentConfig) -> String {
    let a = &c.attention;
    let methods: Vec<&str> = a.methods.iter().map(|m| m.id()).collect();
    let heads = match a.source {
        HeadSource::Text => format!("text {:?}", a.text),
        HeadSource::Synthetic | HeadSource::Minilm => "stored heads".to_string(),
    };
    format!(
        "lengths lmax={} methods={} m={} seed={} coupling={:?} theta={:?} complex_a={:?} degree={} window={} ra={} landmarks={} topk={} layer={} head={} {heads}",
        a.length_max,
        methods.join(","),
        a.features,
        c.seed,
        c.coupling,
        c.theta,
        c.complex_a,
        a.degree,
        a.window,
        a.ra_samples,
        a.landmarks,
        a.top_k,
        a.layer,
        a.head,
    )
}

fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0)
}

/// Sends `request` for its part (the pool holds it while an older one of the part is in
/// flight); the answer is stored and `busy` counts the parts still awaited.
pub(super) fn submit(
    runner: AttentionRunner,
    requested: Rc<RefCell<Requested>>,
    parts: Parts,
    request: AttentionRequest,
) {
    let part = request.part;
    let study = part == AttentionPart::Lengths;
    if requested.borrow_mut().pending.insert(part) {
        if study {
            parts.lengths_busy.set(true);
        } else {
            parts.busy.update(|n| *n += 1);
        }
    }
    let started = now_ms();
    runner.run(request, move |answer| {
        if requested.borrow_mut().pending.remove(&part) {
            if study {
                parts.lengths_busy.set(false);
            } else {
                parts.busy.update(|n| *n = n.saturating_sub(1));
            }
        }
        if part == AttentionPart::Main {
            parts.main_ms.set(Some(now_ms() - started));
            parts.main_answers.update(|n| *n += 1);
        }
        parts.store(part, answer);
    });
}
