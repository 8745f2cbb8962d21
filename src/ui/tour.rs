//! The guided tour on the page ([`crate::lab::tour`] holds the steps): the "Start the tour"
//! entry, the step's panel (the question first, then what the lab measured, what to notice
//! and the formula), the presenter mode's keys, and what the attention view publishes for a
//! step that reads it.

use leptos::ev;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use crate::lab::attention::report::{KernelVsAttention, MainReport};
use crate::lab::config::ExperimentConfig;
use crate::lab::model_protocol::SwapReport;
use crate::lab::page_mode::PageMode;
use crate::lab::tour::{STEPS, TourError, Verdict, step_config};
use crate::ui::PageModeContext;
use crate::ui::math::Math;

/// What the attention view publishes while a tour step is on screen (the tour reads the
/// results there; it never asks for a computation of its own): its parts once none is in
/// flight, `None` while any is.
#[derive(Clone, Copy)]
pub struct TourAttentionEvidence {
    pub main: RwSignal<Option<MainReport>, LocalStorage>,
    pub kernel_vs_attention: RwSignal<Option<KernelVsAttention>, LocalStorage>,
    /// The model swap's reports on the text, once every job of its plan is answered.
    pub swap: RwSignal<Option<Vec<SwapReport>>, LocalStorage>,
}

impl TourAttentionEvidence {
    pub fn new() -> Self {
        Self {
            main: RwSignal::new_local(None),
            kernel_vs_attention: RwSignal::new_local(None),
            swap: RwSignal::new_local(None),
        }
    }
}

impl Default for TourAttentionEvidence {
    fn default() -> Self {
        Self::new()
    }
}

/// Moves the tour to step `index` (its state replaces the configuration), or leaves it.
fn go_to(
    index: Option<usize>,
    set_mode: WriteSignal<PageMode>,
    set_config: WriteSignal<ExperimentConfig>,
) {
    if let Some(config) = index.and_then(step_config) {
        set_config.set(config);
    }
    set_mode.update(|m| m.tour = index.filter(|&i| i < STEPS.len()));
}

/// A link to step `index` (`?tour=N` opens on the step's state) that a plain click follows in
/// place.
fn step_link(
    index: usize,
    present: bool,
    set_mode: WriteSignal<PageMode>,
    set_config: WriteSignal<ExperimentConfig>,
) -> (String, impl Fn(ev::MouseEvent) + Copy + 'static) {
    let mode = PageMode {
        tour: Some(index),
        present,
        embed: None,
    };
    let href = format!("?{}", mode.to_query());
    let follow = move |event: ev::MouseEvent| {
        if event.ctrl_key() || event.meta_key() || event.shift_key() || event.button() != 0 {
            return;
        }
        event.prevent_default();
        go_to(Some(index), set_mode, set_config);
    };
    (href, follow)
}

/// "Start the guided tour": the entry on the first screen, shown while no step is.
///
/// - `set_config`: replaced by the first step's state when the tour starts.
#[component]
pub fn StartTour(set_config: WriteSignal<ExperimentConfig>) -> impl IntoView {
    let PageModeContext { mode, set_mode } = expect_context::<PageModeContext>();
    move || {
        mode.with(|m| m.tour.is_none() && m.embed.is_none()).then(|| {
            let (href, follow) = step_link(0, mode.with_untracked(|m| m.present), set_mode, set_config);
            view! {
                <p class="start-tour">
                    <a class="start-tour-link" href=href on:click=follow>"Start the guided tour"</a>
                    {format!(
                        " {} steps through the paper's story and beyond it: each asks you to predict, then shows what the lab measures.",
                        STEPS.len()
                    )}
                </p>
            }
        })
    }
}

/// Marks the control a step points at (`data-tour-target` on its box) while the step is on
/// screen; the box is found by the URL key the control shows (`code.param-key`).
fn mark_control(key: &str, on: bool) -> Option<()> {
    let document = web_sys::window()?.document()?;
    let codes = document.query_selector_all("code.param-key").ok()?;
    for i in 0..codes.length() {
        let Some(code) = codes
            .item(i)
            .and_then(|n| n.dyn_into::<web_sys::Element>().ok())
        else {
            continue;
        };
        if code.text_content().as_deref() != Some(key) {
            continue;
        }
        let target = code
            .closest(".control, fieldset, label")
            .ok()
            .flatten()
            .unwrap_or(code);
        if on {
            target.set_attribute("data-tour-target", "").ok()?;
        } else {
            target.remove_attribute("data-tour-target").ok()?;
        }
    }
    Some(())
}

/// Scrolls the marked control into view and focuses its first field.
fn show_control() -> Option<()> {
    let document = web_sys::window()?.document()?;
    let target = document.query_selector("[data-tour-target]").ok()??;
    target.scroll_into_view();
    let field = target
        .query_selector("input, select, textarea")
        .ok()??
        .dyn_into::<web_sys::HtmlElement>()
        .ok()?;
    field.focus().ok()
}

/// The tour's panel while a step is on screen; ← and → step through the tour in presenter
/// mode (→ starts it there).
///
/// - `set_config`: replaced by a step's state when the reader moves to it.
/// - `verdict`: what the results on screen say for the current step (`None`: not in yet).
/// - `revealed`: whether the reader has answered (or skipped) the current step's question;
///   the results stay covered until then.
#[component]
pub fn TourPanel(
    set_config: WriteSignal<ExperimentConfig>,
    verdict: Memo<Option<Result<Verdict, TourError>>>,
    revealed: RwSignal<bool>,
) -> impl IntoView {
    let PageModeContext { mode, set_mode } = expect_context::<PageModeContext>();
    let keys = window_event_listener(ev::keydown, move |event| {
        let (step, true) = mode.with_untracked(|m| (m.tour, m.present)) else {
            return;
        };
        // Arrows inside a field move the field, not the tour.
        let in_field = event
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .is_some_and(|e| matches!(e.tag_name().as_str(), "INPUT" | "SELECT" | "TEXTAREA"));
        if in_field || event.alt_key() || event.ctrl_key() || event.meta_key() {
            return;
        }
        // In presenter mode off the tour, → starts it.
        match (event.key().as_str(), step) {
            ("ArrowRight", None) => go_to(Some(0), set_mode, set_config),
            ("ArrowRight", Some(step)) if step + 1 < STEPS.len() => {
                go_to(Some(step + 1), set_mode, set_config)
            }
            ("ArrowLeft", Some(step)) if step > 0 => go_to(Some(step - 1), set_mode, set_config),
            _ => return,
        }
        event.prevent_default();
    });
    on_cleanup(move || keys.remove());

    // Re-mounted only when the step changes (not when presenter mode does).
    let index = Memo::new(move |_| mode.with(|m| m.tour).filter(|&i| i < STEPS.len()));
    move || {
        index
            .get()
            .map(|index| view! { <StepPanel index set_config verdict revealed/> })
    }
}

/// One step's panel; mounted afresh for each step, so the reader's choice starts empty.
#[component]
fn StepPanel(
    index: usize,
    set_config: WriteSignal<ExperimentConfig>,
    verdict: Memo<Option<Result<Verdict, TourError>>>,
    revealed: RwSignal<bool>,
) -> impl IntoView {
    let PageModeContext { mode, set_mode } = expect_context::<PageModeContext>();
    let step = STEPS[index];
    let (choice, set_choice) = signal(None::<usize>);
    revealed.set(false);
    // The control the step points at, marked once the view has drawn it, and again as results
    // arrive (some controls, the model swap's, appear only with them).
    request_animation_frame(move || {
        mark_control(step.control, true);
    });
    Effect::new(move |_| {
        verdict.track();
        revealed.track();
        request_animation_frame(move || {
            mark_control(step.control, true);
        });
    });
    on_cleanup(move || {
        mark_control(step.control, false);
    });
    let present = mode.with_untracked(|m| m.present);
    let previous = (index > 0).then(|| step_link(index - 1, present, set_mode, set_config));
    let next =
        (index + 1 < STEPS.len()).then(|| step_link(index + 1, present, set_mode, set_config));
    let leave = move |_| set_mode.update(|m| m.tour = None);
    let back_to_state = move |_| {
        if let Some(config) = step_config(index) {
            set_config.set(config);
        }
    };
    let options = step
        .options
        .iter()
        .enumerate()
        .map(|(i, option)| {
            view! {
                <label class="tour-option">
                    <input
                        type="radio"
                        name=format!("tour-{}", step.id)
                        value=i.to_string()
                        prop:checked=move || choice.get() == Some(i)
                        prop:disabled=move || revealed.get()
                        on:change=move |_| set_choice.set(Some(i))
                    />
                    " "{*option}
                </label>
            }
        })
        .collect_view();
    let answer = move || {
        if !revealed.get() {
            return None;
        }
        Some(match verdict.get() {
            None => view! {
                <p class="tour-answer" role="status" data-tour-answer="pending">
                    "Computing what this step shows…"
                </p>
            }
            .into_any(),
            Some(Err(error)) => view! {
                <div class="tour-answer" role="status" data-tour-answer="error">
                    <p>{error.to_string()}</p>
                    <button type="button" class="tour-restore" on:click=back_to_state>"Back to this step's state"</button>
                </div>
            }
            .into_any(),
            Some(Ok(verdict)) => {
                let supported = step.options.get(verdict.answer).copied().unwrap_or("");
                let judgement = match choice.get() {
                    Some(c) if c == verdict.answer => "You predicted it.".to_string(),
                    Some(c) => format!(
                        "You said \u{201c}{}\u{201d}; the measurement says \u{201c}{supported}\u{201d}.",
                        step.options.get(c).copied().unwrap_or("")
                    ),
                    None => format!("The measurement says \u{201c}{supported}\u{201d}."),
                };
                view! {
                    <div
                        class="tour-answer"
                        role="status"
                        data-tour-answer=verdict.answer
                        data-tour-correct=move || choice.get().map(|c| (c == verdict.answer).to_string())
                    >
                        <p class="tour-judgement"><strong>{judgement}</strong></p>
                        <p class="tour-measured">{verdict.measured.clone()}</p>
                    </div>
                }
                .into_any()
            }
        })
    };
    view! {
        <section class="tour" aria-label="guided tour" data-tour-step=step.id data-tour-index=index + 1>
            <p class="tour-progress">
                {format!("Guided tour, step {} of {}", index + 1, STEPS.len())}
                <button type="button" class="tour-leave" on:click=leave>"Leave the tour"</button>
            </p>
            <h2 class="tour-title">{step.title}</h2>
            <div class="tour-body">
                <div class="tour-ask">
                    <fieldset class="tour-question">
                        <legend>{step.question}</legend>
                        {options}
                    </fieldset>
                    <p class="tour-actions">
                        <button
                            type="button"
                            class="tour-reveal"
                            prop:disabled=move || revealed.get()
                            on:click=move |_| revealed.set(true)
                        >
                            {move || if choice.get().is_some() { "Show what the lab measured" } else { "Skip: just show me" }}
                        </button>
                    </p>
                </div>
                <div class="tour-learn">
                    {answer}
                    <Show when=move || revealed.get()>
                        <p class="tour-notice">{step.notice}</p>
                        <p class="formula-line"><Math text=step.formula block=true/></p>
                        <p class="tour-try">
                            <strong>"Now try: "</strong>{step.try_this}" "
                            <button type="button" class="tour-show-control" on:click=move |_| { show_control(); }>
                                "Show me the control"
                            </button>
                        </p>
                    </Show>
                </div>
            </div>
            <nav class="tour-nav" aria-label="tour steps">
                {previous.map(|(href, follow)| view! { <a class="tour-prev" href=href on:click=follow>"← Previous step"</a> })}
                {next.map(|(href, follow)| view! { <a class="tour-next" href=href on:click=follow>"Next step →"</a> })}
                <label class="tour-present">
                    <input
                        type="checkbox"
                        prop:checked=move || mode.with(|m| m.present)
                        on:change=move |_| set_mode.update(|m| m.present = !m.present)
                    />
                    " Presenter mode (larger type; ← and → step through the tour)"
                </label>
            </nav>
        </section>
    }
}
