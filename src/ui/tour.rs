//! The guided tour on the page ([`crate::lab::page::tour`] holds the steps): the "Start the tour"
//! entry, the presenter mode's keys, what the attention view publishes for a step that reads
//! it, and the step's panel ([`step`]: the question first, then what the lab measured, what
//! to notice and the formula). Only a `?tour=N` page shows a step, so the panel, with every
//! step's prose and verdict, is a split part of the page's module ([`mount_tour_step`],
//! src/main.rs), fetched when a step is first shown; this file needs the steps' states alone
//! ([`step_config`], [`STEP_COUNT`]).

use leptos::ev;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use crate::lab::attention::report::{KernelVsAttention, MainReport};
use crate::lab::config::ExperimentConfig;
use crate::lab::kernel::experiment::{ExperimentResult, MseCurve};
use crate::lab::models::protocol::SwapReport;
use crate::lab::page::mode::PageMode;
use crate::lab::page::tour::{LanguageModelEvidence, STEP_COUNT, step_config};
use crate::ui::PageModeContext;
use crate::ui::Shown;
use crate::ui::on_demand::{Load, LoadState, Loader, Loading};

mod step;
pub use step::mount_tour_step;

/// What a step's panel reads and writes (the page's signals), handed to the split part.
#[derive(Clone, Copy)]
pub struct TourStepInputs {
    /// The step on screen.
    pub index: usize,
    pub config: ReadSignal<ExperimentConfig>,
    /// Replaced by a step's state when the reader moves to it.
    pub set_config: WriteSignal<ExperimentConfig>,
    /// The kernel view's results on screen, as the page shows them.
    pub summaries: ReadSignal<Option<Shown<ExperimentResult>>>,
    pub curves: ReadSignal<Option<Shown<Vec<MseCurve>>>>,
    /// Whether the reader has answered (or skipped) the step's question; the results stay
    /// covered until then.
    pub revealed: RwSignal<bool>,
}

/// Builds a step's panel: the tour's split part's entry.
pub type TourMount = fn(TourStepInputs) -> AnyView;

/// Loads the tour's step panel.
pub type TourLoad = Load<TourMount>;

/// The page's load of the tour's step panel.
pub type TourLoader = Loader<TourMount>;

/// A [`TourLoad`] for a module that links the panel itself (the browser tests).
pub fn tour_linked() -> Loading<TourMount> {
    Box::pin(std::future::ready(Ok(mount_tour_step as TourMount)))
}

/// What the attention view publishes while a tour step is on screen (the tour reads the
/// results there; it never asks for a computation of its own): its parts once none is in
/// flight, `None` while any is.
#[derive(Clone, Copy)]
pub struct TourAttentionEvidence {
    pub main: RwSignal<Option<MainReport>, LocalStorage>,
    pub kernel_vs_attention: RwSignal<Option<KernelVsAttention>, LocalStorage>,
    /// The model swap's reports on the text, once every job of its plan is answered.
    pub swap: RwSignal<Option<Vec<SwapReport>>, LocalStorage>,
    /// The language model view's swap and transfer on its text, once both are in.
    pub language_model: RwSignal<Option<LanguageModelEvidence>, LocalStorage>,
}

impl TourAttentionEvidence {
    pub fn new() -> Self {
        Self {
            main: RwSignal::new_local(None),
            kernel_vs_attention: RwSignal::new_local(None),
            swap: RwSignal::new_local(None),
            language_model: RwSignal::new_local(None),
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
    set_mode.update(|m| m.tour = index.filter(|&i| i < STEP_COUNT));
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
                        STEP_COUNT
                    )}
                </p>
            }
        })
    }
}

/// The tour's panel while a step is on screen; ← and → step through the tour in presenter
/// mode (→ starts it there). The step's panel itself is fetched with the tour's split part the
/// first time a step is shown (until then a line says it is loading; a failed load says why,
/// with a button to try again).
///
/// - `config`, `set_config`: the configuration; a step's state replaces it when the reader
///   moves to it.
/// - `summaries`, `curves`: the kernel view's results on screen (a step's verdict reads them).
/// - `revealed`: whether the reader has answered (or skipped) the current step's question;
///   the results stay covered until then.
#[component]
pub fn TourPanel(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    summaries: ReadSignal<Option<Shown<ExperimentResult>>>,
    curves: ReadSignal<Option<Shown<Vec<MseCurve>>>>,
    revealed: RwSignal<bool>,
) -> impl IntoView {
    let PageModeContext { mode, set_mode } = expect_context::<PageModeContext>();
    let loader = use_context::<TourLoader>();
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
            ("ArrowRight", Some(step)) if step + 1 < STEP_COUNT => {
                go_to(Some(step + 1), set_mode, set_config)
            }
            ("ArrowLeft", Some(step)) if step > 0 => go_to(Some(step - 1), set_mode, set_config),
            _ => return,
        }
        event.prevent_default();
    });
    on_cleanup(move || keys.remove());

    // Re-mounted only when the step changes (not when presenter mode does).
    let index = Memo::new(move |_| mode.with(|m| m.tour).filter(|&i| i < STEP_COUNT));
    move || {
        let index = index.get()?;
        let Some(loader) = loader else {
            return Some(
                view! { <p class="status error" role="alert">"The tour is not part of this build."</p> }
                    .into_any(),
            );
        };
        loader.start();
        let inputs = TourStepInputs {
            index,
            config,
            set_config,
            summaries,
            curves,
            revealed,
        };
        Some(
            (move || match loader.state.get() {
                LoadState::Ready(mount) => untrack(|| mount(inputs)),
                LoadState::Failed(message) => view! {
                    <section class="tour" aria-label="guided tour" data-tour-status="error">
                        <p class="status" role="alert">
                            "The tour could not be loaded (" {message} "). "
                            <button type="button" class="retry" on:click=move |_| loader.start()>"Try again"</button>
                        </p>
                    </section>
                }
                .into_any(),
                LoadState::NotAsked | LoadState::Loading => view! {
                    <section class="tour" aria-label="guided tour">
                        <p class="status" aria-live="polite">
                            <span class="dot computing"></span>
                            "loading the tour…"
                        </p>
                    </section>
                }
                .into_any(),
            })
            .into_any(),
        )
    }
}
