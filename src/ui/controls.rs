//! Controls: each edits one [`Param`] of the configuration through
//! [`ExperimentConfig::set`], the same parser the URL uses, and shows its error inline.

use leptos::ev;
use leptos::prelude::*;

use crate::lab::config::{DEFAULT_ESTIMATORS, ExperimentConfig, MAX_WORK, Param, ParamError};
use crate::numerics::estimators::{EstimatorId, Family};

/// Applies `text` to `param` on a copy of the current configuration and publishes it; returns
/// the message to show when the value is refused (the configuration then stays as it was).
pub(super) fn commit(
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

/// Like [`commit`] for a slider: a value past the work limit stops at the largest value
/// within it ([`ExperimentConfig::set_within_work_limit`]). Returns the error to show, or the
/// note that the value was limited.
fn commit_slider(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    param: Param,
    text: &str,
) -> (Option<ParamError>, Option<String>) {
    let mut next = config.get_untracked();
    match next.set_within_work_limit(param, text) {
        Ok(limited) => {
            if next != config.get_untracked() {
                set_config.set(next);
            }
            let note = limited.map(|value| {
                format!(
                    "{} = {text} is past the work limit of {:.1e} multiply-adds: stopped at {value}",
                    param.key(),
                    MAX_WORK
                )
            });
            (None, note)
        }
        Err(error) => (Some(error), None),
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
/// - `id_prefix`: put before the box's id `control-<key>`, for a second control of the same
///   parameter elsewhere on the page (ids are unique; both show the one configuration).
#[component]
pub fn NumberControl(
    param: Param,
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    #[prop(optional)] slider: Option<Slider>,
    #[prop(optional)] id_prefix: Option<&'static str>,
    #[prop(optional)] children: Option<Children>,
) -> impl IntoView {
    let (error, set_error) = signal(None::<ParamError>);
    let (note, set_note) = signal(None::<String>);
    let value = move || config.with(|c| c.get(param));
    let on_value = move |text: String| {
        set_note.set(None);
        set_error.set(commit(config, set_config, param, &text));
    };
    let on_slide = move |text: String| {
        let (error, note) = commit_slider(config, set_config, param, &text);
        set_error.set(error);
        set_note.set(note);
    };
    // A finger that lands on a slider moves its thumb there at once; if the finger then
    // scrolls the page instead (the browser takes the gesture over and says `pointercancel`),
    // it did not mean to change the value, which goes back to what it was.
    let before_touch = StoredValue::new(None::<String>);
    let on_pointerdown = move |ev: ev::PointerEvent| {
        let touch = ev.pointer_type() == "touch";
        before_touch.set_value(touch.then(|| config.with_untracked(|c| c.get(param))));
    };
    let on_pointercancel = move |_: ev::PointerEvent| {
        if let Some(text) = before_touch.try_update_value(Option::take).flatten() {
            on_slide(text);
        }
    };
    let id = format!("{}control-{}", id_prefix.unwrap_or(""), param.key());
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
                        on:input=move |ev| on_slide(event_target_value(&ev))
                        on:pointerdown=on_pointerdown
                        on:pointercancel=on_pointercancel
                        on:pointerup=move |_| before_touch.set_value(None)
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
            <p class="control-note" role="status">{move || note.get()}</p>
        </div>
    }
}

/// The `est` list with `estimator` ticked (`on`) or unticked, as the URL writes it.
pub(crate) fn with_estimator(
    config: ReadSignal<ExperimentConfig>,
    estimator: EstimatorId,
    on: bool,
) -> String {
    let mut chosen = config.with_untracked(|c| c.estimators.clone());
    chosen.retain(|e| *e != estimator);
    if on {
        chosen.push(estimator);
    }
    chosen.iter().map(|e| e.id()).collect::<Vec<_>>().join(",")
}

/// One estimator's check box with its colour swatch and label (the sidebar's list and an
/// embedded figure's).
///
/// - `config`: the page's configuration (the box is ticked while the estimator is chosen).
/// - `with_notice`: the tooltip also says what to notice about the estimator.
/// - `toggle`: told the estimator and whether it was ticked.
pub(crate) fn estimator_check(
    config: ReadSignal<ExperimentConfig>,
    estimator: EstimatorId,
    with_notice: bool,
    toggle: impl Fn(EstimatorId, bool) + Copy + 'static,
) -> impl IntoView {
    let checked = move || config.with(|c| c.estimators.contains(&estimator));
    let [r, g, b] = estimator.info().colour();
    let title = if with_notice {
        format!(
            "{}: {} (est id {})",
            estimator.label(),
            estimator.info().docs().notice,
            estimator.id()
        )
    } else {
        format!("{} (est id {})", estimator.label(), estimator.id())
    };
    view! {
        <label class="check" title=title>
            <input
                type="checkbox"
                name=format!("est-{}", estimator.id())
                data-estimator=estimator.id()
                prop:checked=checked
                on:change=move |ev| toggle(estimator, event_target_checked(&ev))
            />
            <span class="swatch" style=format!("background:rgb({r},{g},{b})")></span>
            <span>{estimator.label()}</span>
        </label>
    }
}

/// The options of the `coupling` select, one per coupling of ω.
#[component]
pub(crate) fn CouplingOptions() -> impl IntoView {
    view! {
        <option value="iid">"i.i.d."</option>
        <option value="orthogonal">"orthogonal blocks"</option>
        <option value="simplex">"simplex blocks"</option>
        <option value="rqmc">"randomised QMC"</option>
    }
}

/// The estimators as a grouped list (family, then variant), the complex A's angle and
/// magnitudes, the coupling of ω and the ω mode.
///
/// - `config` / `set_config`: the page's configuration and its setter.
#[component]
pub fn EstimatorControls(
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
                .map(|estimator| estimator_check(config, estimator, true, toggle))
                .collect_view();
            view! {
                <div class="estimator-group" data-family=format!("{family:?}")>
                    <p class="group-name">{family.label()}</p>
                    {boxes}
                </div>
            }
        })
        .collect_view();
    // From the registry, so a new estimator joins "every estimator" by itself.
    let twin_of = |id: &'static str| -> &'static str {
        EstimatorId::from_id(id)
            .and_then(|e| e.info().twin())
            .unwrap_or(id)
    };
    let presets = [
        ("the paper's three", DEFAULT_ESTIMATORS.join(",")),
        ("positive forms", DEFAULT_ESTIMATORS.map(twin_of).join(",")),
        (
            "every estimator",
            EstimatorId::all()
                .map(EstimatorId::id)
                .collect::<Vec<_>>()
                .join(","),
        ),
    ]
    .into_iter()
    .map(|(label, list)| {
        view! {
            <button
                type="button"
                class="preset"
                on:click=move |_| {
                    set_error.set(commit(config, set_config, Param::Estimators, &list));
                }
            >
                {label}
            </button>
        }
    })
    .collect_view();
    let uses_complex = move || {
        config.with(|c| {
            c.estimators
                .iter()
                .any(|e| e.info().family() == Family::Complex)
        })
    };
    view! {
        <fieldset class="control estimators">
            <legend>"estimators " <code class="param-key">"est"</code></legend>
            <div class="preset-row">{presets}</div>
            <div class="estimator-groups">{groups}</div>
            <p class="control-error" role="alert">
                {move || error.get().map(|e| format!("{}: {}", e.key, e.message))}
            </p>
            <div class="complex-controls" class:dimmed=move || !uses_complex()>
                <NumberControl
                    param=Param::Theta
                    config
                    set_config
                    slider=Slider { min: 0.0, max: std::f64::consts::FRAC_PI_2, step: 0.01 }
                />
                <label class="select stacked">
                    <span>"complex A's magnitudes a " <code class="param-key">"cplxa"</code></span>
                    <select
                        name="cplxa"
                        prop:value=move || config.with(|c| c.get(Param::ComplexA))
                        on:change=move |ev| {
                            set_error.set(commit(config, set_config, Param::ComplexA, &event_target_value(&ev)));
                        }
                    >
                        <option value="identity">"a = 1 (θ slides PRF → RFF)"</option>
                        <option value="mean-only">"mean-only"</option>
                        <option value="variance-adjusted">"variance-adjusted"</option>
                    </select>
                </label>
                // Said in words, not only greyed out: faded text would fail contrast (axe).
                <p class="control-note complex-note">
                    {move || (!uses_complex()).then_some("Used only by the complex-A estimators (cplx, hcplx); neither is chosen.")}
                </p>
            </div>
            <label class="select">
                "coupling of ω " <code class="param-key">"coupling"</code>
                <select
                    name="coupling"
                    prop:value=move || config.with(|c| c.get(Param::Coupling))
                    on:change=move |ev| {
                        set_error.set(commit(config, set_config, Param::Coupling, &event_target_value(&ev)));
                    }
                >
                    <CouplingOptions/>
                </select>
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
/// - `id_prefix`: as for [`NumberControl`].
#[component]
pub fn SeedControl(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    #[prop(optional)] id_prefix: Option<&'static str>,
) -> impl IntoView {
    let reroll = move |_| {
        // A uniform 32-bit seed; the page's randomness never needs to be cryptographic.
        let seed = (js_sys::Math::random() * 4_294_967_296.0).floor() as u64;
        commit(config, set_config, Param::Seed, &seed.to_string());
    };
    view! {
        <NumberControl param=Param::Seed config set_config id_prefix=id_prefix.unwrap_or("")>
            <button type="button" class="reroll" title="draw a new random seed" on:click=reroll>
                "re-roll"
            </button>
        </NumberControl>
    }
}
