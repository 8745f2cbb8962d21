//! The attention view's figures embedded alone (`?embed=rows`, `?embed=lengths`): the figure
//! with its own few controls, from the view's own parts (only the figure's are computed, see
//! [`EmbedFigure::attention_parts`]). The frame around it (title, caption, the link to the full
//! lab) is `crate::ui::embed`'s.

use leptos::ev;
use leptos::prelude::*;

use super::figure::ConfirmRun;
use super::lengths::{LengthsView, status_of};
use super::matrices::Heatmaps;
use super::parts::Parts;
use crate::lab::attention::report::AttentionPart;
use crate::lab::config::{ExperimentConfig, HeadSource, Param, ParamError};
use crate::lab::page::mode::EmbedFigure;
use crate::numerics::attention::methods::MethodId;
use crate::ui::controls::{NumberControl, Slider, commit};

/// The method shown in the heatmaps, chosen among every method: a method not yet compared is
/// added to the configuration's list (the full lab's link then compares it too).
#[component]
fn ShownMethod(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
) -> impl IntoView {
    let (error, set_error) = signal(None::<ParamError>);
    let on_change = move |ev: ev::Event| {
        let value = event_target_value(&ev);
        let Some(method) = MethodId::from_id(value.trim()) else {
            return;
        };
        let mut next = config.get_untracked();
        let mut ids: Vec<&str> = next.attention.methods.iter().map(|m| m.id()).collect();
        if !ids.contains(&method.id()) {
            ids.push(method.id());
        }
        let outcome = next
            .set(Param::Methods, &ids.join(","))
            .and_then(|()| next.set(Param::Focus, method.id()));
        match outcome {
            Ok(()) => {
                set_error.set(None);
                if next != config.get_untracked() {
                    set_config.set(next);
                }
            }
            Err(e) => set_error.set(Some(e)),
        }
    };
    view! {
        <label class="field">
            <span>"method " <code class="param-key">"focus"</code></span>
            <select name="focus" on:change=on_change prop:value=move || config.with(|c| c.get(Param::Focus))>
                {MethodId::all().map(|m| view! { <option value=m.id()>{m.label()}</option> }).collect_view()}
            </select>
        </label>
        {move || error.get().map(|e| view! { <p class="error" role="alert">{format!("{}: {}", e.key, e.message)}</p> })}
    }
}

/// The data: synthetic or the stored real heads (a text chosen in the full lab stays, named).
#[component]
fn SourceSelect(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
) -> impl IntoView {
    let (error, set_error) = signal(None::<String>);
    let on_change = move |ev: ev::Event| {
        let value = event_target_value(&ev);
        set_error.set(commit(config, set_config, Param::Source, &value).map(|e| e.to_string()));
    };
    let is_text = move || config.with(|c| c.attention.source == HeadSource::Text);
    let is_lm = move || config.with(|c| c.attention.source == HeadSource::Lm);
    view! {
        <label class="field">
            <span>"data " <code class="param-key">"src"</code></span>
            <select name="src" on:change=on_change prop:value=move || config.with(|c| c.get(Param::Source))>
                <option value="synthetic">"synthetic"</option>
                <option value="minilm">"real heads: all-MiniLM-L6-v2"</option>
                <Show when=is_text>
                    <option value="text">"your text (edit it in the full lab)"</option>
                </Show>
                <Show when=is_lm>
                    <option value="lm">"your text through SmolLM2-135M (edit it in the full lab)"</option>
                </Show>
            </select>
        </label>
        {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
    }
}

/// One attention figure alone with its controls.
///
/// - `figure`: [`EmbedFigure::Rows`] or [`EmbedFigure::Lengths`] (any other shows nothing).
/// - `parts`, `status`, `status_attr`, `large`, `confirmed`: the view's state,
///   as its full layout shows it.
/// - `stop`: stops the length study in flight.
#[component]
pub(super) fn AttentionEmbed(
    figure: EmbedFigure,
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    parts: Parts,
    status: Signal<String>,
    status_attr: Signal<&'static str>,
    large: Memo<Option<f64>>,
    confirmed: RwSignal<Option<String>>,
    stop: Callback<()>,
) -> impl IntoView {
    let real = move || config.with(|c| c.attention.source != HeadSource::Synthetic);
    // The view's status is the study's here (nothing to compute is ready).
    let lengths_status = move || {
        let on = config.with(|c| AttentionPart::Lengths.applies(c));
        let running = parts.lengths_busy.get();
        let status = parts.lengths_progress.with(|p| {
            parts
                .lengths
                .with(|r| status_of(on, running, p.as_ref(), r.as_ref()))
        });
        match status {
            "off" => "ready",
            status => status,
        }
    };
    match figure {
        EmbedFigure::Rows => view! {
            <div
                class="attention-view embed-body"
                data-attention-status=move || status_attr.get()
                data-attention-ms=move || parts.main_ms.get().map(|ms| format!("{ms:.1}"))
            >
                <div class="embed-controls">
                    <ShownMethod config set_config/>
                    <NumberControl param=Param::Features config set_config slider=Slider { min: 1.0, max: 1024.0, step: 1.0 }/>
                    <SourceSelect config set_config/>
                    <Show when=real>
                        <NumberControl param=Param::Layer config set_config slider=Slider { min: 0.0, max: 5.0, step: 1.0 }/>
                        <NumberControl param=Param::Head config set_config slider=Slider { min: 0.0, max: 11.0, step: 1.0 }/>
                    </Show>
                </div>
                <p class="status" aria-live="polite">
                    <span class=move || format!("dot {}", status_attr.get())></span>
                    {move || status.get()}
                </p>
                <ConfirmRun config large confirmed/>
                <Heatmaps config main=parts.main compact=true/>
            </div>
        }
        .into_any(),
        EmbedFigure::Lengths => view! {
            <div class="attention-view embed-body" data-attention-status=lengths_status>
                <ConfirmRun config large confirmed/>
                <LengthsView
                    config
                    set_config
                    report=parts.lengths
                    running=parts.lengths_busy
                    progress=parts.lengths_progress
                    stop
                    compact=true
                />
            </div>
        }
        .into_any(),
        EmbedFigure::Scatter | EmbedFigure::Errors | EmbedFigure::MseVsM => ().into_any(),
    }
}
