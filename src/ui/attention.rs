//! The attention view: softmax attention against every linear approximation, on synthetic data
//! or a real head of all-MiniLM-L6-v2. Its parts are computed in the worker pool
//! ([`AttentionRunner`]), each shown as it arrives; each part is a channel of the pool, so a
//! part's newer request waits for the one in flight and replaces any older waiting one, and
//! dragging a slider never queues stale work (the length study is asked unit by unit, as many
//! at once as the pool has workers). Which parts to ask for, and which answers to
//! show, is `lab::page::attention_dispatch`'s; the workers read the stored heads themselves.
//!
//! The files: this one (the view and its status), `parts` (the parts' signals, a request sent
//! and its answer shown), `lengths_client` (the length study's units sent, one per worker, and
//! shown as they land), `controls`, `figure` (what every figure shares), `text` (numbers
//! and colours as text), and one file per figure or group of figures: `table`, `matrices`,
//! `errors`, `temperature`, `budget`, `heads_table`, `kernel_vs_attention`, `lengths` (the
//! length study: time against sequence length), `tensorised` and `formulas`; `embed` lays out
//! one of its figures alone for a course page's `<iframe>` (`?embed=rows`, `?embed=lengths`).

mod budget;
mod controls;
mod embed;
mod errors;
mod figure;
mod formulas;
mod heads_table;
mod kernel_vs_attention;
mod lengths;
mod lengths_client;
mod lengths_table;
mod matrices;
mod model_client;
mod parts;
mod swap;
mod table;
mod temperature;
mod tensorised;
mod text;
mod text_input;

use std::cell::RefCell;
use std::rc::Rc;

use leptos::prelude::*;

use crate::lab::attention::AttentionPart;
use crate::lab::config::{ATTENTION_ASK_WORK, ExperimentConfig, HeadSource};
use crate::lab::page::attention_dispatch::{AttentionDispatch, ViewState};
use crate::lab::page::mode::EmbedFigure;

use super::pool::{AttentionRunner, ModelPool, WorkerKind};
use super::tour::TourAttentionEvidence;
use budget::BudgetChart;
use controls::AttentionControls;
use embed::AttentionEmbed;
use errors::{BiasVarianceChart, RowErrors};
use figure::ConfirmRun;
pub(super) use figure::{Figure, TableScroll, chart_error, paced_chart, resize_counter};
use formulas::AttentionFormulas;
use heads_table::HeadsTableView;
use kernel_vs_attention::KernelVsAttentionChart;
use lengths::LengthsView;
use lengths_client::{StudySlot, start_study, stop_study};
use matrices::{Heatmaps, SingularValues};
use model_client::ModelClient;
use parts::{Parts, submit};
use swap::ModelSwap;
use table::MethodTable;
use temperature::TemperatureCharts;
use tensorised::Tensorised;
use text_input::TextInput;

/// A part's report for the tour: only once no part is in flight, and only a success.
fn settled_ok<T: Clone>(part: &Option<Result<T, String>>, settled: bool) -> Option<T> {
    part.as_ref()
        .filter(|_| settled)
        .and_then(|r| r.as_ref().ok())
        .cloned()
}

/// The attention view: its controls beside its charts.
///
/// - `config`, `set_config`: the one configuration (this view reads and writes its
///   `attention` settings, the data parameters and the seed).
/// - `embed`: one figure alone (`?embed=`): only its parts are computed, and it is shown with
///   its own few controls ([`AttentionEmbed`]).
#[component]
pub fn AttentionView(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    #[prop(optional)] embed: Option<EmbedFigure>,
) -> impl IntoView {
    let runner = use_context::<AttentionRunner>();
    let parts = Parts::new();
    // A tour step on screen reads the parts once none is in flight (src/ui/tour.rs).
    if let Some(tour) = use_context::<TourAttentionEvidence>() {
        Effect::new(move |_| {
            let settled = parts.busy.get() == 0;
            tour.main.set(parts.main.with(|m| settled_ok(m, settled)));
            tour.kernel_vs_attention
                .set(parts.kernel_vs_attention.with(|k| settled_ok(k, settled)));
        });
    }
    let text_model = ModelClient::new(use_context::<ModelPool>().unwrap_or_else(ModelPool::idle));
    // The language model's heads workers (`src=lm`): only their start-up is followed here.
    let lm_model =
        ModelClient::new(runner.map_or_else(|| ModelPool::idle_of(WorkerKind::LmHeads), |r| r.lm));
    let is_lm = move || config.with(|c| c.attention.source == HeadSource::Lm);
    Effect::new(move |_| {
        if is_lm() {
            lm_model.start();
        }
    });
    // The model swap's reports, once its whole plan is answered.
    if let Some(tour) = use_context::<TourAttentionEvidence>() {
        Effect::new(move |_| {
            let (done, total) = text_model.swap.progress.get();
            let reports = (total > 0 && done == total).then(|| {
                text_model.swap.cells.with(|cells| {
                    cells
                        .iter()
                        .filter_map(|cell| cell.report.as_ref().ok().cloned())
                        .collect::<Vec<_>>()
                })
            });
            tour.swap.set(reports);
        });
    }
    let is_text = move || config.with(|c| c.attention.source == HeadSource::Text);
    let text = Memo::new(move |_| {
        config.with(|c| (c.attention.source == HeadSource::Text).then(|| c.attention.text.clone()))
    });
    // The model runs on the text whenever it changes (the worker keeps only the newest waiting).
    Effect::new(move |_| {
        if let Some(text) = text.get() {
            text_model.start();
            text_model.submit(text);
        }
    });
    let dispatch: Rc<RefCell<AttentionDispatch>> = Rc::default();
    let dispatch = StoredValue::new_local(dispatch);
    let study: StudySlot = StoredValue::new_local(None);
    // A configuration above the ask-first budget waits for a click; this is the last one
    // confirmed (its query).
    let confirmed = RwSignal::new(None::<String>);
    let large = Memo::new(move |_| {
        config.with(|c| {
            let work = c.attention.work(c.d);
            (work > ATTENTION_ASK_WORK && confirmed.get().as_deref() != Some(c.to_query().as_str()))
                .then_some(work)
        })
    });

    // Every part follows the configuration: the dispatch says which to ask for
    // (lab::page::attention_dispatch); this only sends them.
    Effect::new(move |_| {
        let config = config.get();
        // A study whose part no longer applies (lmax off) sends nothing more.
        if !AttentionPart::Lengths.applies(&config) {
            stop_study(dispatch, parts, study, true);
        }
        let awaiting_confirmation = large.get().is_some();
        // The model workers hold this very text's heads once it ran (an older text's answer
        // does not count).
        let text_ran = config.attention.source == HeadSource::Text
            && text_model.outcome.with(
                |o| matches!(o, Some(Ok(outcome)) if outcome.run.text == config.attention.text),
            );
        let Some(runner) = runner else {
            return;
        };
        let embedded = embed.map(|figure| figure.attention_parts());
        let view = ViewState {
            awaiting_confirmation,
            text_ran,
            embedded,
        };
        let asks = dispatch.get_value().borrow_mut().on_change(&config, view);
        for ask in asks {
            if ask.request.part == AttentionPart::Lengths {
                start_study(runner, dispatch, parts, study, ask);
            } else {
                submit(runner, dispatch, parts, ask);
            }
        }
    });

    let status = move || {
        let parts_status = match (parts.busy.get(), parts.main_ms.get()) {
            (0, Some(ms)) => format!("attention recomputed; main part in {ms:.0} ms"),
            (0, None) => String::new(),
            (n, _) => format!("computing… ({n} parts in flight)"),
        };
        if parts.lengths_busy.get() {
            let timing = "the length study is timing in the workers";
            if parts_status.is_empty() {
                timing.to_string()
            } else {
                format!("{parts_status}; {timing}")
            }
        } else {
            parts_status
        }
    };
    let status_attr = move || {
        if parts.busy.get() > 0 {
            "computing"
        } else if parts.main.with(|m| matches!(m, Some(Err(_)))) {
            "error"
        } else if parts.main.with(Option::is_some) {
            "ready"
        } else {
            "computing"
        }
    };

    // The length study's stop button: what was measured stays, as it is.
    let stop = Callback::new(move |()| stop_study(dispatch, parts, study, false));

    if let Some(figure) = embed {
        return view! {
            <AttentionEmbed
                figure
                config
                set_config
                parts
                status=Signal::derive(status)
                status_attr=Signal::derive(status_attr)
                large
                confirmed
                stop
            />
        }
        .into_any();
    }
    view! {
        <div
            class="layout attention-view"
            data-attention-status=status_attr
            data-attention-ms=move || parts.main_ms.get().map(|ms| format!("{ms:.1}"))
            data-attention-answers=move || parts.main_answers.get()
        >
            <aside class="controls">
                <AttentionControls config set_config/>
            </aside>
            <section class="results">
                <Show when=is_text>
                    <TextInput config set_config model=text_model/>
                    <ModelSwap config set_config model=text_model/>
                </Show>
                <Show when=is_lm>
                    <TextInput config set_config model=lm_model/>
                </Show>
                <p class="status" aria-live="polite">
                    <span class=move || format!("dot {}", status_attr())></span>
                    {status}
                </p>
                <ConfirmRun config large confirmed/>
                <MethodTable main=parts.main/>
                <Heatmaps config main=parts.main/>
                <RowErrors main=parts.main/>
                <BiasVarianceChart bias=parts.bias/>
                <TemperatureCharts temperature=parts.temperature/>
                <SingularValues main=parts.main/>
                <BudgetChart budget=parts.budget/>
                <HeadsTableView config table=parts.table/>
                <KernelVsAttentionChart config report=parts.kernel_vs_attention/>
                <LengthsView
                    config
                    set_config
                    report=parts.lengths
                    running=parts.lengths_busy
                    progress=parts.lengths_progress
                    stop
                />
                <Tensorised/>
                <AttentionFormulas/>
            </section>
        </div>
    }
    .into_any()
}
