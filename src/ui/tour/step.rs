//! The tour's step panel, the tour's split part of the page's module (src/main.rs): the step's
//! question, then what the lab measured (its verdict, computed from the results on screen),
//! what to notice and the formula. [`mount_tour_step`] is its entry.

use leptos::prelude::*;
use wasm_bindgen::JsCast;

use super::{TourAttentionEvidence, TourStepInputs, step_link};
use crate::lab::config::ExperimentConfig;
use crate::lab::page::tour::{Evidence, EvidenceKind, STEPS, TourError, Verdict, step_config};
use crate::ui::math::Math;
use crate::ui::{PageModeContext, same_experiment};

/// A step's panel for the page's signals: the tour's split part's entry.
pub fn mount_tour_step(inputs: TourStepInputs) -> AnyView {
    let TourStepInputs {
        index,
        config,
        set_config,
        summaries,
        curves,
        revealed,
    } = inputs;
    let tour_evidence = use_context::<TourAttentionEvidence>();
    // What the results on screen say for this step (`None`: not in yet). The tour reads what
    // is on screen: the kernel view's result (and curves) of the configuration shown, or the
    // attention view's parts once none is in flight.
    let verdict = Memo::new(move |_| {
        let step = STEPS.get(index)?;
        if config.with(|c| c.view) != step.view() {
            return Some(Err(TourError::WrongEvidence));
        }
        match step.evidence {
            EvidenceKind::Kernel | EvidenceKind::KernelCurves => summaries.with(|shown| {
                let shown = shown.as_ref()?;
                // Results of an older configuration are still on screen while a new one
                // computes: not what the step's sentence should read.
                if !config.with(|c| same_experiment(c, &shown.value.config)) {
                    return None;
                }
                curves.with(|curves| {
                    let curves = curves
                        .as_ref()
                        .filter(|c| c.generation == shown.generation)
                        .map(|c| c.value.as_slice());
                    if step.evidence == EvidenceKind::KernelCurves && curves.is_none() {
                        return None;
                    }
                    Some((step.verdict)(&Evidence::Kernel {
                        result: &shown.value,
                        curves,
                    }))
                })
            }),
            EvidenceKind::Attention => tour_evidence?
                .main
                .with(|m| m.as_ref().map(|r| (step.verdict)(&Evidence::Attention(r)))),
            EvidenceKind::KernelVsAttention => tour_evidence?.kernel_vs_attention.with(|k| {
                k.as_ref()
                    .map(|r| (step.verdict)(&Evidence::KernelVsAttention(r)))
            }),
            EvidenceKind::Swap => tour_evidence?
                .swap
                .with(|r| r.as_ref().map(|r| (step.verdict)(&Evidence::Swap(r)))),
            EvidenceKind::LanguageModel => tour_evidence?.language_model.with(|lm| {
                lm.as_ref()
                    .map(|lm| (step.verdict)(&Evidence::LanguageModel(lm)))
            }),
        }
    });
    view! { <StepPanel index set_config verdict revealed/> }.into_any()
}

/// Marks the control a step points at (`data-tour-target` on its box) while the step is on
/// screen; the box is found by the URL key the control shows (`code.param-key`). Whether one
/// was found.
fn mark_control(key: &str, on: bool) -> Option<bool> {
    let document = web_sys::window()?.document()?;
    let codes = document.query_selector_all("code.param-key").ok()?;
    let mut found = false;
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
        found = true;
    }
    Some(found)
}

/// Frames the step looks for its control in (about ten seconds).
const MARK_FRAMES: u32 = 600;

/// Marks `key`'s control at the next frame, or, until it is drawn, at one of the next `frames`
/// while `current` says the step is still on screen.
fn mark_soon(key: &'static str, frames: u32, current: impl Fn() -> bool + 'static) {
    request_animation_frame(move || {
        if !current() {
            return;
        }
        if mark_control(key, true) != Some(true) && frames > 0 {
            mark_soon(key, frames - 1, current);
        }
    });
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
    // The control the step points at, marked once the view has drawn it (a view whose code
    // loads on demand draws it frames later: looked for again at each frame for a while), and
    // again as results arrive (some controls, the model swap's, appear only with them).
    let on_this_step = move || mode.with_untracked(|m| m.tour) == Some(index);
    mark_soon(step.control, MARK_FRAMES, on_this_step);
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
