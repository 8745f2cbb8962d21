//! One figure alone, for a course page's `<iframe>` (`?embed=FIGURE`): its title, its own few
//! controls, the figure sized to the frame, a one-line caption and a link to the full lab at
//! the same state. Nothing is computed apart: a kernel figure is drawn by the full page's
//! [`Charts`] from the same job and pool ([`KernelJob`]), an attention figure by the
//! attention view's own components (`AttentionView` with `embed`, loaded on demand:
//! [`LazyAttentionView`]). The figures and their
//! ids are [`EmbedFigure`]'s; docs/teaching.md gives each one's `<iframe>`.

use leptos::ev;
use leptos::prelude::*;

use super::PageModeContext;
use super::controls::{
    CouplingOptions, NumberControl, Slider, commit, estimator_check, with_estimator,
};
use super::export::PngButton;
use super::lazy_attention::LazyAttentionView;
use super::results::Charts;
use super::{ScatterView, Shown, Status};
use crate::lab::config::{ExperimentConfig, Param, ParamError};
use crate::lab::kernel::experiment::{ExperimentResult, MseCurve};
use crate::lab::kernel::tasks::Part;
use crate::lab::page::mode::{EmbedFigure, PageMode};
use crate::numerics::estimators::{EstimatorId, Family};

/// The kernel view's job as the full page holds it (App's signals and callbacks), for a kernel
/// figure's frame.
#[derive(Clone, Copy)]
pub struct KernelJob {
    pub status: ReadSignal<Status>,
    /// The latest drawn job's generation and compute time.
    pub elapsed: ReadSignal<Option<(u64, f64)>>,
    /// What the full page's status line says, and the status its dot shows ([`Status::shown`]).
    pub status_line: Signal<String>,
    pub shown_status: Memo<Status>,
    pub scatter: ReadSignal<Option<Shown<ScatterView>>>,
    pub summaries: ReadSignal<Option<Shown<ExperimentResult>>>,
    pub curves: ReadSignal<Option<Shown<Vec<MseCurve>>>>,
    pub on_drawn: Callback<(u64, Part, Result<(), String>)>,
    /// Runs a configuration above the ask-first budget.
    pub run_anyway: Callback<()>,
    pub probe: Signal<Option<usize>>,
    pub on_pick: Callback<usize>,
}

/// The frame's one-line caption, from the configuration on screen.
fn caption(figure: EmbedFigure, c: &ExperimentConfig) -> String {
    match figure {
        EmbedFigure::Scatter => format!(
            "One dataset of n = {} pairs (d = {}, m = {}): each dot is one pair, the line is ŜM = SM.",
            c.n, c.d, c.m
        ),
        EmbedFigure::Errors => format!(
            "Each dot is one of {} datasets' MSE or largest relative error (d = {}, m = {}); boxes span the quartiles; ◆ is Lemma 3.1's prediction.",
            c.datasets, c.d, c.m
        ),
        EmbedFigure::MseVsM => "Measured MSE (points, ±1 standard error) against m beside the formula's 1/m line, on 32 pairs of the scatter dataset.".to_string(),
        EmbedFigure::Rows => "Softmax attention P, the approximation P̂ of the chosen method and P̂ − P on the first tokens (rows: queries, columns: keys).".to_string(),
        EmbedFigure::Lengths if c.attention.length_max == 0 => "Choose the longest length to time exact attention against linear attention on this device.".to_string(),
        EmbedFigure::Lengths => "Milliseconds against sequence length L on this device: exact attention grows as L², linear attention as L, so they cross once.".to_string(),
    }
}

/// The estimators as a drop-down list of check boxes (the full page's list, without its
/// presets and the complex A's settings).
#[component]
fn EstimatorPicker(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
) -> impl IntoView {
    let (error, set_error) = signal(None::<ParamError>);
    let toggle = move |estimator: EstimatorId, on: bool| {
        let list = with_estimator(config, estimator, on);
        set_error.set(commit(config, set_config, Param::Estimators, &list));
    };
    let groups = Family::ALL
        .into_iter()
        .map(|family| {
            let boxes = EstimatorId::all()
                .filter(|e| e.info().family() == family)
                .map(|estimator| estimator_check(config, estimator, false, toggle))
                .collect_view();
            view! { <fieldset class="group"><legend>{family.label()}</legend>{boxes}</fieldset> }
        })
        .collect_view();
    let chosen = move || {
        config.with(|c| {
            c.estimators
                .iter()
                .map(|e| e.id())
                .collect::<Vec<_>>()
                .join(", ")
        })
    };
    view! {
        <div class="control embed-estimators">
            <details>
                <summary>"estimators " <code class="param-key">"est"</code> <span class="chosen">{chosen}</span></summary>
                <div class="embed-estimator-list">{groups}</div>
            </details>
            <p class="control-error" role="alert">
                {move || error.get().map(|e| format!("{}: {}", e.key, e.message))}
            </p>
        </div>
    }
}

/// How the rows of ω are drawn together.
#[component]
fn CouplingSelect(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
) -> impl IntoView {
    let (error, set_error) = signal(None::<ParamError>);
    let on_change = move |ev: ev::Event| {
        set_error.set(commit(
            config,
            set_config,
            Param::Coupling,
            &event_target_value(&ev),
        ));
    };
    view! {
        <div class="control">
            <label class="select stacked">
                <span>"coupling of ω " <code class="param-key">"coupling"</code></span>
                <select name="coupling" prop:value=move || config.with(|c| c.get(Param::Coupling)) on:change=on_change>
                    <CouplingOptions/>
                </select>
            </label>
            <p class="control-error" role="alert">
                {move || error.get().map(|e| format!("{}: {}", e.key, e.message))}
            </p>
        </div>
    }
}

/// A kernel figure's controls, status and charts.
#[component]
fn KernelFigure(
    figure: EmbedFigure,
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    job: KernelJob,
) -> impl IntoView {
    let m = Slider {
        min: 16.0,
        max: 4096.0,
        step: 16.0,
    };
    let norm = Slider {
        min: 0.1,
        max: 10.0,
        step: 0.1,
    };
    let controls = match figure {
        EmbedFigure::Scatter => view! {
            <EstimatorPicker config set_config/>
            <NumberControl param=Param::M config set_config slider=m/>
            <NumberControl param=Param::XNorm config set_config slider=norm/>
            <NumberControl param=Param::YNorm config set_config slider=norm/>
        }
        .into_any(),
        EmbedFigure::Errors => view! {
            <EstimatorPicker config set_config/>
            <NumberControl param=Param::M config set_config slider=m/>
            <NumberControl param=Param::D config set_config slider=Slider { min: 2.0, max: 200.0, step: 1.0 }/>
        }
        .into_any(),
        EmbedFigure::MseVsM => view! {
            <EstimatorPicker config set_config/>
            <CouplingSelect config set_config/>
        }
        .into_any(),
        EmbedFigure::Rows | EmbedFigure::Lengths => ().into_any(),
    };
    let status = job.status;
    view! {
        <div class="embed-controls">{controls}</div>
        <p class="status" aria-live="polite">
            <span class=move || format!("dot {}", job.shown_status.with(|s| s.as_attr()))></span>
            {move || job.status_line.get()}
        </p>
        {move || (status.get() == Status::Confirm).then(|| view! {
            <div class="confirm-run" role="alertdialog" aria-label="large computation">
                <p>"These settings need a long computation. Run them?"</p>
                <button class="run-anyway" type="button" on:click=move |_| job.run_anyway.run(())>"Run it"</button>
            </div>
        })}
        <Charts
            scatter=job.scatter
            summaries=job.summaries
            curves=job.curves
            on_drawn=job.on_drawn
            probe=job.probe
            on_pick=job.on_pick
            only=figure
        />
    }
}

/// The page of one embedded figure (instead of the full lab).
///
/// - `figure`: which one.
/// - `config`, `set_config`: the one configuration, as in the full page.
/// - `notices`: the URL values that were not used (shown in the frame too).
/// - `kernel`: the kernel view's job (used by the kernel figures).
#[component]
pub fn EmbedPage(
    figure: EmbedFigure,
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    notices: Vec<ParamError>,
    kernel: KernelJob,
) -> impl IntoView {
    if let Some(document) = web_sys::window().and_then(|w| w.document()) {
        document.set_title(&format!("{} · softmax-kernel-lab", figure.title()));
    }
    let mode = use_context::<PageModeContext>().map(|c| c.mode);
    // The same state in the full lab: every key but `embed`.
    let full_lab = move || {
        let mode = mode.map_or_else(PageMode::default, |m| m.get());
        let full = PageMode {
            embed: None,
            ..mode
        };
        format!("?{}", config.with(|c| full.query_with(c)))
    };
    let kernel_figure = figure.view() == crate::lab::config::View::Kernel;
    let status = kernel.status;
    let elapsed = kernel.elapsed;
    let body = if kernel_figure {
        view! { <KernelFigure figure config set_config job=kernel/> }.into_any()
    } else {
        view! { <LazyAttentionView config set_config embed=figure/> }.into_any()
    };
    view! {
        <main
            class="app embed"
            data-embed=figure.id()
            data-status=move || kernel_figure.then(|| status.with(|s| s.as_attr()))
            data-compute-ms=move || elapsed.get().filter(|_| kernel_figure).map(|(_, ms)| format!("{ms:.1}"))
            data-generation=move || elapsed.get().filter(|_| kernel_figure).map(|(generation, _)| generation)
        >
            <section class="embed-figure">
                <h1>{figure.title()} <PngButton/></h1>
                {(!notices.is_empty()).then(|| view! {
                    <div class="notice" role="status">
                        <strong>"Some URL parameters were not used:"</strong>
                        <ul>
                            {notices.iter().map(|n| view! { <li><code>{n.key.clone()}</code>": "{n.message.clone()}</li> }).collect_view()}
                        </ul>
                    </div>
                })}
                {body}
                <p class="caption embed-caption">
                    {move || config.with(|c| caption(figure, c))}
                    " "
                    <a class="full-lab" href=full_lab target="_blank" rel="noopener">
                        "Open in the full lab"
                        <span class="visually-hidden">" (opens in a new tab)"</span>
                    </a>
                </p>
            </section>
        </main>
    }
}
