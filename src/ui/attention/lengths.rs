//! The length study on the page: where linear attention pays. Its control (`lmax`, written to
//! the configuration and so to the URL), a log–log chart of milliseconds against L per head
//! size with a form selector, the legend, the sentences read from the report (row error against
//! a chosen threshold, the two rates, what stopped or was not timed), the crossover table
//! (`lengths_table`) and the CSV download. The study runs unit by unit over the pool's workers
//! (`lengths_client`), its charts, notes and table redrawn as each unit's points arrive, a
//! progress bar and a stop button while it runs. Its status is the section's
//! `data-lengths-status` (off, computing, ready, stopped, error); `data-lengths-done` and
//! `data-lengths-total` count its units, `data-lengths-points` the points measured.

use leptos::ev;
use leptos::html::Canvas;
use leptos::prelude::*;

use super::chart_error;
use super::figure::draw_when;
use super::lengths_table::{CrossoverTable, LengthsLegend};
use crate::chart_geometry::timings::timing_chart;
use crate::charts::{describe, draw_timings};
use crate::lab::attention::lengths::{FIRST_LENGTH, LengthsReport, lengths_csv, study_features};
use crate::lab::attention::report::AttentionPart;
use crate::lab::attention::timing_notes::{
    FORMS, TV_THRESHOLDS, form_key, form_label, grouped, length_text, rates_sentence,
    skipped_sentence, stopped_sentences, threshold_note, threshold_text,
};
use crate::lab::config::{ExperimentConfig, HEAD_DIM, HeadSource, LM_HEAD_DIM, Param};
use crate::lab::page::formulas;
use crate::lab::page::lengths_run::{LengthsProgress, RunState};
use crate::numerics::attention::gaussian_head::GaussianHead;
use crate::numerics::attention::long::LinearForm;
use crate::ui::controls::{NumberControl, commit};
use crate::ui::export::{PngButton, download, text_url};
use crate::ui::math::Math;

/// The longest lengths the control offers (0: off).
const LENGTH_CHOICES: [usize; 6] = [0, 1024, 2048, 4096, 8192, 16_384];

type Report = RwSignal<Option<Result<LengthsReport, String>>, LocalStorage>;
type Progress = RwSignal<Option<LengthsProgress>>;

/// The section's status for the tests: `off`, `computing` (units in flight), `ready` (every
/// unit measured), `stopped` (the reader stopped it: what was measured is shown) or `error`.
pub(super) fn status_of(
    on: bool,
    running: bool,
    progress: Option<&LengthsProgress>,
    report: Option<&Result<LengthsReport, String>>,
) -> &'static str {
    let state = progress.map(|p| &p.state);
    match (on, report, state) {
        (false, ..) => "off",
        (true, Some(Err(_)), _) | (true, _, Some(RunState::Failed(_))) => "error",
        _ if running => "computing",
        (true, _, Some(RunState::Stopped)) => "stopped",
        (true, Some(Ok(_)), _) => "ready",
        (true, None, _) => "computing",
    }
}

/// The `lmax` select: off and the usual lengths, and the configuration's own value if a link
/// chose another one.
#[component]
fn LengthControl(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
) -> impl IntoView {
    let (error, set_error) = signal(None::<String>);
    let on_change = move |ev: ev::Event| {
        let value = event_target_value(&ev);
        set_error.set(commit(config, set_config, Param::LengthMax, &value).map(|e| e.to_string()));
    };
    let current = move || config.with(|c| c.attention.length_max);
    let options = move || {
        let now = current();
        let mut choices = LENGTH_CHOICES.to_vec();
        if !choices.contains(&now) {
            choices.push(now);
            choices.sort_unstable();
        }
        choices
            .into_iter()
            .map(|l| {
                let text = if l == 0 {
                    "off".to_string()
                } else if l < FIRST_LENGTH {
                    format!("off (lmax = {l} is below {FIRST_LENGTH})")
                } else {
                    format!("up to L = {}", grouped(l as u64))
                };
                view! { <option value=l.to_string() selected=move || current() == l>{text}</option> }
            })
            .collect_view()
    };
    view! {
        <label class="field">
            <span>"length study (lmax)"</span>
            <select name="lmax" on:change=on_change prop:value=move || current().to_string()>
                {options}
            </select>
        </label>
        {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
    }
}

/// The form and row-error selects and the model switch (page-local: they change only what is
/// shown, never the study).
#[component]
fn DisplayControls(
    form: RwSignal<LinearForm>,
    threshold: RwSignal<f64>,
    model: RwSignal<bool>,
) -> impl IntoView {
    let set_form = move |ev: ev::Event| {
        let value = event_target_value(&ev);
        if let Some(f) = FORMS.into_iter().find(|f| form_key(*f) == value) {
            form.set(f);
        }
    };
    let set_threshold = move |ev: ev::Event| {
        if let Ok(v) = event_target_value(&ev).parse::<f64>()
            && v.is_finite()
            && v > 0.0
        {
            threshold.set(v);
        }
    };
    view! {
        <label class="field">
            <span>"methods' form in the charts"</span>
            <select name="lengths-form" on:change=set_form prop:value=move || form_key(form.get())>
                {FORMS.into_iter().map(|f| view! { <option value=form_key(f)>{form_label(f)}</option> }).collect_view()}
            </select>
        </label>
        <label class="field">
            <span>"row error allowed (mean TV)"</span>
            <select name="lengths-tv" on:change=set_threshold prop:value=move || threshold_text(threshold.get())>
                {TV_THRESHOLDS.into_iter().map(|t| view! { <option value=threshold_text(t)>{threshold_text(t)}</option> }).collect_view()}
            </select>
        </label>
        <label class="check">
            <input type="checkbox" name="lengths-model" prop:checked=move || model.get() on:change=move |ev| model.set(event_target_checked(&ev))/>
            <span>"the multiply-add model (dotted)"</span>
        </label>
    }
}

/// The two head sizes' charts.
#[component]
fn TimingCharts(
    report: Report,
    form: RwSignal<LinearForm>,
    model: RwSignal<bool>,
) -> impl IntoView {
    let canvases: [NodeRef<Canvas>; 2] = [NodeRef::new(), NodeRef::new()];
    let error = draw_when(report, move |r| {
        let (form, model) = (form.get(), model.get());
        for (canvas, d) in canvases.iter().zip(GaussianHead::HEAD_SIZES) {
            let Some(c) = canvas.get() else { continue };
            if !r.series.iter().any(|s| s.d == d) {
                continue;
            }
            let chart = timing_chart(r, d, form, model);
            describe(&c, &chart_summary(r, d, form));
            draw_timings(
                &c,
                &format!("d = {d}: time against L ({})", form_label(form)),
                &chart,
            )
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    let [small, large] = canvases;
    // A head size the model does not give (32 in the language model) has no chart.
    let measured = move |d: usize| {
        report.with(|r| matches!(r, Some(Ok(r)) if r.series.iter().any(|s| s.d == d)))
    };
    view! {
        <div class="pair">
            <canvas node_ref=small class="chart timing" data-chart="lengths-d32" hidden=move || !measured(32)></canvas>
            <canvas node_ref=large class="chart timing" data-chart="lengths-d64" hidden=move || !measured(64)></canvas>
        </div>
        {chart_error(error)}
    }
}

/// A chart's text alternative: exact attention's first and last times, and the crossovers.
fn chart_summary(report: &LengthsReport, d: usize, form: LinearForm) -> String {
    use crate::lab::attention::lengths::Kernel;
    use crate::lab::attention::timing_notes::{crossover_cell, method_name};
    let exact = report
        .series
        .iter()
        .find(|s| s.d == d && s.kernel == Kernel::Exact && s.form.is_causal() == form.is_causal());
    let ends = exact
        .and_then(|s| Some((s.points.first()?, s.points.last()?)))
        .map(|(a, b)| {
            format!(
                "exact attention {:.3} ms at L = {} to {:.3} ms at L = {}",
                a.ms,
                grouped(a.len as u64),
                b.ms,
                grouped(b.len as u64)
            )
        })
        .unwrap_or_else(|| "no exact attention timing".to_string());
    let crossings: Vec<String> = report
        .crossovers
        .iter()
        .filter(|c| c.d == d && c.form == form)
        .map(|c| {
            format!(
                "{} faster from L {}",
                method_name(c.method, c.m),
                crossover_cell(c.length)
            )
        })
        .collect();
    format!(
        "milliseconds against sequence length at d = {d}, {}: {ends}; {}",
        form_label(form),
        if crossings.is_empty() {
            "no method timed".to_string()
        } else {
            crossings.join(", ")
        }
    )
}

/// The sentences under the charts: per head size against the threshold, the rates, the
/// stopped series and the methods not timed.
#[component]
fn LengthsNotes(report: Report, threshold: RwSignal<f64>) -> impl IntoView {
    let per_head = Memo::new(move |_| {
        let t = threshold.get();
        report.with(|r| match r {
            Some(Ok(r)) => r
                .head_sizes
                .iter()
                .filter_map(|&d| threshold_note(r, d, t))
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        })
    });
    let facts = Memo::new(move |_| {
        report.with(|r| match r {
            Some(Ok(r)) => {
                let mut facts = vec![rates_sentence(r)];
                let stopped = stopped_sentences(r);
                if !stopped.is_empty() {
                    facts.push(format!("{}.", stopped.join("; ")));
                }
                facts.extend(skipped_sentence(r));
                facts
            }
            _ => Vec::new(),
        })
    });
    view! {
        <div class="lengths-notes">
            {move || per_head.get().into_iter().map(|note| view! {
                <div class="threshold-note" data-note="lengths-threshold" data-d=note.d>
                    <p>{note.opening}</p>
                    <ul>{note.clauses.into_iter().map(|c| view! { <li>{c}</li> }).collect_view()}</ul>
                    <p class="verdict">{note.verdict}</p>
                </div>
            }).collect_view()}
            {move || facts.get().into_iter().map(|s| view! { <p class="caption" data-note="lengths-facts">{s}</p> }).collect_view()}
        </div>
    }
}

/// "Where linear attention pays": the length study's section.
///
/// - `config`, `set_config`: the configuration (the controls write `attention.length_max` and
///   `attention.lengths_alone`, one unit at a time, each kernel alone on the device, rather than
///   one per worker at once; the study reads the methods, m, the seed, the layer and the head).
/// - `report`: the study's latest outcome, the units answered so far merged (`None` before
///   the first answer).
/// - `running`: whether a study is in flight.
/// - `progress`: its units answered out of all, and whether it ended or was stopped.
/// - `stop`: stops it (what was measured stays).
/// - `compact`: the controls, the status and the charts with their legend only (a figure
///   embedded alone: its frame gives the title and caption); no notes, table or download.
#[component]
pub(super) fn LengthsView(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    report: Report,
    running: RwSignal<bool>,
    progress: Progress,
    stop: Callback<()>,
    #[prop(optional)] compact: bool,
) -> impl IntoView {
    let form = RwSignal::new(LinearForm::Bidirectional);
    let threshold = RwSignal::new(0.1);
    let model = RwSignal::new(true);
    let on = move || config.with(|c| AttentionPart::Lengths.applies(c));
    let status = move || {
        progress.with(|p| report.with(|r| status_of(on(), running.get(), p.as_ref(), r.as_ref())))
    };
    let count = move |pick: fn(&LengthsProgress) -> usize| {
        progress.with(|p| p.as_ref().filter(|_| on()).map(|p| pick(p).to_string()))
    };
    // Points measured so far (the benchmark and the tests wait for the first).
    let points = move || {
        report.with(|r| match r {
            Some(Ok(r)) if on() => r.series.iter().map(|s| s.points.len()).sum::<usize>(),
            _ => 0,
        })
    };
    let crossovers = move || {
        report.with(|r| match r {
            Some(Ok(r)) if on() => r.crossovers.len(),
            _ => 0,
        })
    };
    let has_report = move || on() && report.with(|r| matches!(r, Some(Ok(_))));
    // The two rates as numbers, for the benchmark (tests/e2e/lengths-bench.mjs).
    let rate = move |pick: fn(&LengthsReport) -> f64| {
        report.with(|r| match r {
            Some(Ok(r)) if on() => Some(format!("{:.4e}", pick(r))),
            _ => None,
        })
    };
    let whose = move || {
        config.with(|c| {
            let (model, head_dim) = match c.attention.source {
                HeadSource::Text => ("all-MiniLM-L6-v2 on your text", HEAD_DIM),
                HeadSource::Lm => ("SmolLM2-135M on your text", LM_HEAD_DIM),
                HeadSource::Synthetic | HeadSource::Minilm => {
                    ("all-MiniLM-L6-v2 (the stored passages)", HEAD_DIM)
                }
            };
            let sizes: Vec<String> = GaussianHead::head_sizes(head_dim)
                .iter()
                .map(usize::to_string)
                .collect();
            let m: Vec<String> = study_features(c.attention.features)
                .iter()
                .map(usize::to_string)
                .collect();
            format!(
                "Sequences drawn from a Gaussian fitted to layer {}, head {} of {model}, at head sizes d = {}; random maps at m = {} (a quarter of the chosen m, and m). {}",
                c.attention.layer,
                c.attention.head,
                sizes.join(" and "),
                m.join(" and "),
                if config.with(|c| c.attention.lengths_alone) {
                    "Timed on one worker at a time: each kernel alone on this device."
                } else {
                    "Timed on every worker at once, one length each: each time is that of this device busy on every core (slower than alone where the cores share their work)."
                }
            )
        })
    };
    let message = move || {
        if !on() {
            return None;
        }
        if let Some(Some(e)) = report.with(|r| r.as_ref().map(|r| r.as_ref().err().cloned())) {
            return Some(view! { <p class="error" role="alert">{e}</p> }.into_any());
        }
        let (done, total, state) = progress.with(|p| {
            p.as_ref().map_or((0, 0, RunState::Running), |p| {
                (p.done, p.total, p.state.clone())
            })
        });
        match state {
            RunState::Stopped => Some(view! {
                <p class="status-line" data-lengths-partial="">
                    {format!("Stopped after {done} of {total} pieces: the charts, the table and the CSV hold what was measured. Change lmax, or a setting the study reads, to run it again.")}
                </p>
            }.into_any()),
            // Drawn apart (`running_view`), so that its Stop button stays the same element.
            _ if running.get() => None,
            _ if report.with(Option::is_none) => Some(view! { <p class="status-line">"waiting for the study…"</p> }.into_any()),
            _ => None,
        }
    };
    // The running study's line, bar and Stop button: one element whose text and values follow
    // the progress (re-created at each unit, a click landing on the button as it was replaced
    // could be lost).
    let counts = move || progress.with(|p| p.as_ref().map_or((0, 0), |p| (p.done, p.total)));
    let errored = move || report.with(|r| matches!(r, Some(Err(_))));
    let stopped =
        move || progress.with(|p| p.as_ref().is_some_and(|p| p.state == RunState::Stopped));
    let running_view = move || {
        view! {
            <Show when=move || on() && !errored() && !stopped() && running.get()>
                <div class="lengths-progress">
                    <p class="status-line">
                        {move || {
                            let (done, total) = counts();
                            format!("timing exact attention and each method at each length, shortest first: {done} of {total} pieces measured…")
                        }}
                    </p>
                    <progress
                        max=move || counts().1.to_string()
                        value=move || counts().0.to_string()
                        aria-label=move || {
                            let (done, total) = counts();
                            format!("length study: {done} of {total} pieces measured")
                        }
                    ></progress>
                    <button type="button" class="lengths-stop" on:click=move |_| stop.run(())>"Stop"</button>
                </div>
            </Show>
        }
    };
    let download_csv = move |_| {
        let partial =
            progress.with_untracked(|p| p.as_ref().is_some_and(|p| p.state != RunState::Complete));
        let name = if partial {
            "length-study-partial.csv"
        } else {
            "length-study.csv"
        };
        report.with_untracked(|r| {
            if let Some(Ok(r)) = r {
                download(name, &text_url("text/csv", &lengths_csv(r)));
            }
        });
    };
    let longest = move || {
        report.with(|r| match r {
            Some(Ok(r)) => r.lengths.last().map(|&l| length_text(l as f64)),
            _ => None,
        })
    };
    view! {
        <section
            class="figure lengths"
            data-lengths-status=status
            data-lengths-done=move || count(|p| p.done)
            data-lengths-total=move || count(|p| p.total)
            data-lengths-points=move || points().to_string()
            data-lengths-crossovers=move || crossovers().to_string()
            data-lengths-dense-rate=move || rate(|r| r.dense_rate)
            data-lengths-exact-rate=move || rate(|r| r.exact_rate)
        >
            {(!compact).then(|| view! {
                <h2>"Where linear attention pays: time against sequence length" <PngButton/></h2>
                <p class="formula"><Math text=formulas::LENGTH_STUDY/></p>
            })}
            <div class="lengths-controls">
                <LengthControl config set_config/>
                <Show when=on>
                    <NumberControl param=Param::Layer config set_config id_prefix="lengths-"/>
                    <NumberControl param=Param::Head config set_config id_prefix="lengths-"/>
                    <label class="check">
                        <input type="checkbox" name="lengths-alone" prop:checked=move || config.with(|c| c.attention.lengths_alone) on:change=move |ev| { let on = event_target_checked(&ev); set_config.update(|c| c.attention.lengths_alone = on); }/>
                        <span>"one worker at a time (each kernel timed alone; slower) " <code class="param-key">"lalone"</code></span>
                    </label>
                </Show>
            </div>
            {(!compact).then(|| view! {
                <p class="note">"It measures wall time on this device, in the page's workers, for L = 128, 256, … up to the chosen length: keep the machine quiet while it runs (other tabs, builds and videos move the numbers)."</p>
            })}
            <Show when=on>
                {(!compact).then(|| view! { <p class="caption">{whose}</p> })}
                {message}
                {running_view}
            </Show>
            <Show when=has_report>
                {(!compact).then(|| view! {
                    <div class="lengths-controls">
                        <DisplayControls form threshold model/>
                    </div>
                })}
                <TimingCharts report form model/>
                <LengthsLegend report/>
                {(!compact).then(|| view! {
                    <LengthsNotes report threshold/>
                    <CrossoverTable report longest=Signal::derive(longest)/>
                    <button type="button" class="download-csv" on:click=download_csv>"Download CSV"</button>
                })}
            </Show>
            {(!compact).then(|| view! {
                <p class="notice-line">"What to notice: on log–log axes exact attention climbs with slope 2 (L²) and linear attention with slope 1 (L), so they cross once; where depends on D and on this device's speed for each kernel (the dotted model predicts it from multiply-adds alone), and being faster says nothing about the rows: read the row error at the crossover."</p>
            })}
        </section>
    }
}
