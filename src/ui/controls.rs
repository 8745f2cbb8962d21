//! Controls: each edits one [`Param`] of the configuration through
//! [`ExperimentConfig::set`], the same parser the URL uses, and shows its error inline.

use leptos::prelude::*;

use crate::math::config::{ExperimentConfig, Param, ParamError};
use crate::math::heuristics::AHeuristic;

/// Applies `text` to `param` on a copy of the current configuration and publishes it; returns
/// the message to show when the value is refused (the configuration then stays as it was).
fn commit(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    param: Param,
    text: &str,
) -> Option<ParamError> {
    let mut next = config.get_untracked();
    match next.set(param, text) {
        Ok(()) => {
            if next != config.get_untracked() {
                set_config.set(next);
            }
            None
        }
        Err(error) => Some(error),
    }
}

/// A slider's range and step (the number box accepts the parameter's full range).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slider {
    pub min: f64,
    pub max: f64,
    pub step: f64,
}

/// A labelled number box, optionally with a slider, for one numeric parameter.
///
/// - `param`: which parameter it edits (its label, range and URL key come from [`Param`]).
/// - `config` / `set_config`: the page's configuration and its setter.
/// - `slider`: show a range slider as well (it updates while dragged).
#[component]
pub fn NumberControl(
    param: Param,
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    #[prop(optional)] slider: Option<Slider>,
    #[prop(optional)] children: Option<Children>,
) -> impl IntoView {
    let (error, set_error) = signal(None::<ParamError>);
    let value = move || config.with(|c| c.get(param));
    let on_value = move |text: String| set_error.set(commit(config, set_config, param, &text));
    let id = format!("control-{}", param.key());
    let range_hint = param.allowed();
    view! {
        <div class="control" class:invalid=move || error.with(Option::is_some)>
            <label for=id.clone()>{param.label()} <code class="param-key">{param.key()}</code></label>
            <div class="control-row">
                {slider.map(|s| view! {
                    <input
                        type="range"
                        min=s.min
                        max=s.max
                        step=s.step
                        aria-label=param.label()
                        prop:value=value
                        on:input=move |ev| on_value(event_target_value(&ev))
                    />
                })}
                <input
                    id=id
                    type="text"
                    inputmode="decimal"
                    name=param.key()
                    title=range_hint
                    prop:value=value
                    on:change=move |ev| on_value(event_target_value(&ev))
                />
                {children.map(|c| c())}
            </div>
            <p class="control-error" role="alert">
                {move || error.get().map(|e| format!("{}: {}", e.key, e.message))}
            </p>
        </div>
    }
}

/// Check boxes for the estimators, the hyperbolic switch and the ω mode.
///
/// - `config` / `set_config`: the page's configuration and its setter.
#[component]
pub fn EstimatorControls(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
) -> impl IntoView {
    let (error, set_error) = signal(None::<ParamError>);
    let toggle = move |heuristic: AHeuristic, on: bool| {
        let mut chosen = config.with_untracked(|c| c.estimators.clone());
        chosen.retain(|h| *h != heuristic);
        if on {
            chosen.push(heuristic);
        }
        let list: Vec<&str> = chosen.iter().map(|h| h.url_name()).collect();
        set_error.set(commit(
            config,
            set_config,
            Param::Estimators,
            &list.join(","),
        ));
    };
    let boxes = AHeuristic::ALL
        .into_iter()
        .map(|heuristic| {
            let checked = move || config.with(|c| c.estimators.contains(&heuristic));
            view! {
                <label class="check">
                    <input
                        type="checkbox"
                        name=format!("est-{}", heuristic.url_name())
                        prop:checked=checked
                        on:change=move |ev| toggle(heuristic, event_target_checked(&ev))
                    />
                    <span class=format!("swatch swatch-{}", heuristic.url_name())></span>
                    {match heuristic {
                        AHeuristic::Identity => "PRF (A = I)",
                        AHeuristic::MeanOnly => "mean-only A",
                        AHeuristic::VarianceAdjusted => "variance-adjusted A",
                    }}
                </label>
            }
        })
        .collect_view();
    view! {
        <fieldset class="control">
            <legend>"estimators " <code class="param-key">"est"</code></legend>
            {boxes}
            <p class="control-error" role="alert">
                {move || error.get().map(|e| format!("{}: {}", e.key, e.message))}
            </p>
            <label class="check">
                <input
                    type="checkbox"
                    name="hyp"
                    prop:checked=move || config.with(|c| c.hyperbolic)
                    on:change=move |ev| {
                        let on = if event_target_checked(&ev) { "1" } else { "0" };
                        set_error.set(commit(config, set_config, Param::Hyperbolic, on));
                    }
                />
                "hyperbolic features (cosh: HCEXP) " <code class="param-key">"hyp"</code>
            </label>
            <label class="select">
                "projections ω " <code class="param-key">"omega"</code>
                <select
                    name="omega"
                    prop:value=move || config.with(|c| c.get(Param::Omega))
                    on:change=move |ev| {
                        set_error.set(commit(config, set_config, Param::Omega, &event_target_value(&ev)));
                    }
                >
                    <option value="shared">"shared by a dataset's pairs"</option>
                    <option value="fresh">"fresh for every pair"</option>
                </select>
            </label>
        </fieldset>
    }
}

/// The seed's number box with a button that draws a new random seed.
///
/// - `config` / `set_config`: the page's configuration and its setter.
#[component]
pub fn SeedControl(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
) -> impl IntoView {
    let reroll = move |_| {
        // A uniform 32-bit seed; the page's randomness never needs to be cryptographic.
        let seed = (js_sys::Math::random() * 4_294_967_296.0).floor() as u64;
        commit(config, set_config, Param::Seed, &seed.to_string());
    };
    view! {
        <NumberControl param=Param::Seed config set_config>
            <button type="button" class="reroll" title="draw a new random seed" on:click=reroll>
                "re-roll"
            </button>
        </NumberControl>
    }
}
