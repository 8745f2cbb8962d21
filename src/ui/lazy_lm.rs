//! The language model's view on demand: like the attention view ([`super::lazy_attention`]),
//! its code is a split part of the page's module (src/main.rs: `lm_view`), fetched the first
//! time the view is shown (or its tab is pointed at). The worker's handle ([`LmClient`]) stays
//! in the first part, so the model loads once per page whatever view is shown.

use leptos::prelude::*;

use super::lm::{LmClient, LmView};
use super::on_demand::{Load, LoadState, Loader, Loading};
use crate::lab::config::ExperimentConfig;

/// Builds the language model's view.
pub type LmMount =
    fn(ReadSignal<ExperimentConfig>, WriteSignal<ExperimentConfig>, LmClient) -> AnyView;

/// What loading the view's code gives.
pub type LmLoading = Loading<LmMount>;

/// Loads the view's code.
pub type LmLoad = Load<LmMount>;

/// The page's load of the view's code.
pub type LmLoader = Loader<LmMount>;

/// The view's entry: what the split part of the page's module holds.
pub fn mount_lm(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    client: LmClient,
) -> AnyView {
    view! { <LmView config set_config client/> }.into_any()
}

/// An [`LmLoad`] for a module that links the view itself (the browser tests).
pub fn lm_linked() -> LmLoading {
    Box::pin(std::future::ready(Ok(mount_lm as LmMount)))
}

/// The view once its code is in: a line while it loads, a sentence and a retry if it fails.
///
/// - `config`, `set_config`: the page's configuration, handed to the view.
/// - `client`: the language model's worker, kept by the page across views.
/// - `loader`: the load of the view's code (the tab starts it early).
#[component]
pub fn LazyLmView(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    client: LmClient,
    loader: LmLoader,
) -> impl IntoView {
    loader.start();
    move || {
        match loader.state.get() {
        LoadState::Ready(mount) => untrack(|| mount(config, set_config, client)),
        LoadState::Failed(message) => view! {
            <p class="status" role="alert" data-lm-view="error">
                "The language model's view could not be loaded (" {message} "). "
                <button type="button" class="retry" on:click=move |_| loader.start()>"Try again"</button>
            </p>
        }
        .into_any(),
        LoadState::NotAsked | LoadState::Loading => {
            view! { <p class="status" data-lm-view="loading">"Loading the language model's view…"</p> }
                .into_any()
        }
    }
    }
}
