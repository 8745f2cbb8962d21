//! The attention view on demand. The first view is the kernel view, so the page's module need
//! not carry the attention view (its text and swap views, its charts, its figures' embeds): the
//! page binary (src/main.rs) puts [`mount_attention`] behind a split point, and the view's code
//! is fetched the first time it is shown (or the "Attention rows" tab is pointed at), by the
//! page's [`AttentionLoader`] (`ui::on_demand`'s [`Loader`]); a build that is not split (the
//! browser tests) links it directly ([`attention_linked`]).

use leptos::prelude::*;

use super::attention::AttentionView;
use super::on_demand::{Load, LoadState, Loader, Loading};
use crate::lab::config::ExperimentConfig;
use crate::lab::page::mode::EmbedFigure;

/// Builds the attention view for the page's configuration, or one of its figures alone for an
/// `<iframe>` (`embed`).
pub type AttentionMount =
    fn(ReadSignal<ExperimentConfig>, WriteSignal<ExperimentConfig>, Option<EmbedFigure>) -> AnyView;

/// What loading the attention view's code gives.
pub type AttentionLoading = Loading<AttentionMount>;

/// Loads the attention view's code.
pub type AttentionLoad = Load<AttentionMount>;

/// The attention view's entry: what the split part of the page's module holds.
pub fn mount_attention(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    embed: Option<EmbedFigure>,
) -> AnyView {
    match embed {
        Some(figure) => view! { <AttentionView config set_config embed=figure/> }.into_any(),
        None => view! { <AttentionView config set_config/> }.into_any(),
    }
}

/// An [`AttentionLoad`] for a module that links the view itself (the browser tests).
pub fn attention_linked() -> AttentionLoading {
    Box::pin(std::future::ready(Ok(mount_attention as AttentionMount)))
}

/// The attention view's load.
pub type AttentionLoader = Loader<AttentionMount>;

/// The attention view once its code is in: until then a line saying it is loading, and if the
/// load fails, why, with a button to try again (the rest of the page keeps working).
///
/// - `config`, `set_config`: the one configuration.
/// - `embed`: one figure alone (`?embed=`), as [`AttentionView`] takes it.
#[component]
pub fn LazyAttentionView(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    #[prop(optional)] embed: Option<EmbedFigure>,
) -> impl IntoView {
    let Some(loader) = use_context::<AttentionLoader>() else {
        return view! { <p class="status error" role="alert">"The attention view is not part of this build."</p> }
            .into_any();
    };
    loader.start();
    (move || match loader.state.get() {
        LoadState::Ready(mount) => untrack(|| mount(config, set_config, embed)),
        LoadState::Failed(message) => view! {
            <div class="layout attention-view" data-attention-status="error">
                <p class="status" role="alert">
                    "The attention view could not be loaded (" {message} "). "
                    <button type="button" class="retry" on:click=move |_| loader.start()>"Try again"</button>
                </p>
            </div>
        }
        .into_any(),
        LoadState::NotAsked | LoadState::Loading => view! {
            <div class="attention-loading">
                <p class="status" aria-live="polite">
                    <span class="dot computing"></span>
                    "loading the attention view…"
                </p>
            </div>
        }
        .into_any(),
    })
    .into_any()
}
