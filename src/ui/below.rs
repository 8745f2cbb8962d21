//! The kernel view's panels below its first screen, a split part of the page's module
//! (src/main.rs: `kernel_below`): the data panel ([`super::data::DataPanel`]), the single-pair
//! probe ([`super::probe::ProbePanel`]) and "What is computed" ([`super::results::Formulas`]).
//! A fresh visit sees the charts first, so these are fetched when the reader scrolls near one
//! of them (within [`NEAR_PX`] of the window), or at once when a pair is probed (a click on a
//! scatter point, or `?probe=` in the address). Until then, and while the part loads, each is an
//! empty box of its class (of no height: a panel mounting pushes down what follows it, so the page
//! puts nothing the reader clicks after one, `ui/mod.rs`); a failed load says why, with a button
//! to try again.

use std::sync::Arc;

use leptos::html::Div;
use leptos::prelude::*;

use super::data::DataPanel;
use super::on_demand::{Load, LoadState, Loader, Loading};
use super::probe::ProbePanel;
use super::results::Formulas;
use crate::lab::config::ExperimentConfig;
use crate::lab::kernel::experiment::ExperimentResult;

/// How near the window's bottom edge (in CSS pixels) a panel's box starts its load.
const NEAR_PX: f64 = 300.0;

/// Which of the panels below the first screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BelowPart {
    /// The data panel, after the figures.
    Data,
    /// The probe and "What is computed", after the results table.
    ProbeAndFormulas,
}

/// What the panels read and write (the page's signals), handed to the split part.
#[derive(Clone, Copy)]
pub struct BelowInputs {
    pub config: ReadSignal<ExperimentConfig>,
    pub set_config: WriteSignal<ExperimentConfig>,
    /// Whether the experiment's job is computing (the data panel asks only once it is not).
    pub job_running: Signal<bool>,
    /// The experiment's result on screen (the probe reads its datasets' pairs).
    pub result: Signal<Option<Arc<ExperimentResult>>>,
}

/// Builds one of the panels: the split part's entry.
pub type BelowMount = fn(BelowPart, BelowInputs) -> AnyView;

/// Loads the panels' split part.
pub type BelowLoad = Load<BelowMount>;

/// The page's load of the panels' split part.
pub type BelowLoader = Loader<BelowMount>;

/// The panels: what the split part holds.
pub fn mount_below(part: BelowPart, inputs: BelowInputs) -> AnyView {
    let BelowInputs {
        config,
        set_config,
        job_running,
        result,
    } = inputs;
    match part {
        BelowPart::Data => view! { <DataPanel config set_config job_running/> }.into_any(),
        BelowPart::ProbeAndFormulas => view! {
            <ProbePanel config set_config result/>
            <Formulas/>
        }
        .into_any(),
    }
}

/// A [`BelowLoad`] for a module that links the panels itself (the browser tests).
pub fn below_linked() -> Loading<BelowMount> {
    Box::pin(std::future::ready(Ok(mount_below as BelowMount)))
}

/// Whether `element`'s top is within [`NEAR_PX`] of the window's bottom edge.
fn near_view(element: &web_sys::Element) -> bool {
    let Some(window) = web_sys::window() else {
        return true;
    };
    let height = window
        .inner_height()
        .ok()
        .and_then(|h| h.as_f64())
        .unwrap_or(0.0);
    element.get_bounding_client_rect().top() < height + NEAR_PX
}

/// One of the panels once the split part is in: an empty box of its class until the reader
/// scrolls near it (or, for the probe, a pair is probed).
#[component]
pub fn LazyBelow(part: BelowPart, inputs: BelowInputs) -> impl IntoView {
    let Some(loader) = use_context::<BelowLoader>() else {
        return view! { <p class="status error" role="alert">"This panel is not part of this build."</p> }
            .into_any();
    };
    let placeholder = NodeRef::<Div>::new();
    let check = move || {
        if let Some(element) = placeholder.get_untracked()
            && near_view(&element)
        {
            loader.start();
        }
    };
    let on_scroll = window_event_listener(leptos::ev::scroll, move |_| check());
    let on_resize = window_event_listener(leptos::ev::resize, move |_| check());
    on_cleanup(move || {
        on_scroll.remove();
        on_resize.remove();
    });
    // Once laid out (the first screen's charts have their size by then).
    request_animation_frame(check);
    if part == BelowPart::ProbeAndFormulas {
        Effect::new(move |_| {
            if inputs.config.with(|c| c.probe.is_some()) {
                loader.start();
            }
        });
    }
    let class = match part {
        BelowPart::Data => "below-placeholder data-panel-placeholder",
        BelowPart::ProbeAndFormulas => "below-placeholder probe-placeholder",
    };
    (move || match loader.state.get() {
        LoadState::Ready(mount) => untrack(|| mount(part, inputs)),
        LoadState::Failed(message) => view! {
            <div class=class data-below-status="error">
                <p class="status" role="alert">
                    "This part of the page could not be loaded (" {message} "). "
                    <button type="button" class="retry" on:click=move |_| loader.start()>"Try again"</button>
                </p>
            </div>
        }
        .into_any(),
        LoadState::NotAsked | LoadState::Loading => {
            view! { <div class=class node_ref=placeholder></div> }.into_any()
        }
    })
    .into_any()
}
