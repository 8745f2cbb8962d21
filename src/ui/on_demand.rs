//! The attention view (and the tour's step panel) on demand. The first view is the kernel view,
//! so the page's module need not carry the attention view (its text and swap views, its charts,
//! its figures' embeds): the page binary (src/main.rs) puts [`mount_attention`] behind a split
//! point, and scripts/build-page.sh cuts everything only it reaches into a second WebAssembly
//! file, fetched the first time the view is shown (or the "Attention rows" tab is pointed at).
//! The tour's step panel is a split part of its own, loaded the same way by a [`Loader`]
//! (src/ui/tour.rs). This module holds no split point itself: the page is handed its loads
//! ([`AttentionLoad`], `TourLoad`), so a build that is not split (the browser tests) links the
//! parts directly ([`attention_linked`], `tour_linked`).

use std::future::Future;
use std::pin::Pin;

use leptos::prelude::*;

use super::attention::AttentionView;
use crate::lab::config::ExperimentConfig;
use crate::lab::page_mode::EmbedFigure;

/// Builds the attention view for the page's configuration, or one of its figures alone for an
/// `<iframe>` (`embed`).
pub type AttentionMount =
    fn(ReadSignal<ExperimentConfig>, WriteSignal<ExperimentConfig>, Option<EmbedFigure>) -> AnyView;

/// What loading a split part's code gives: its entry, or why it could not be loaded.
pub type Loading<T> = Pin<Box<dyn Future<Output = Result<T, String>>>>;

/// Loads a split part's code (at most once at a time; a failed load may be asked again).
pub type Load<T> = fn() -> Loading<T>;

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

/// Where the page's one load of a split part stands.
#[derive(Clone, Debug)]
pub(super) enum LoadState<T> {
    NotAsked,
    Loading,
    Ready(T),
    Failed(String),
}

/// The page's load of one split part's code (its entry `T`), shared by whatever starts it
/// early (the attention tab) and what shows it.
pub struct Loader<T: Send + Sync + 'static> {
    load: Load<T>,
    pub(super) state: RwSignal<LoadState<T>>,
}

impl<T: Send + Sync + 'static> Clone for Loader<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Send + Sync + 'static> Copy for Loader<T> {}

/// The attention view's load.
pub type AttentionLoader = Loader<AttentionMount>;

impl<T: Copy + Send + Sync + 'static> Loader<T> {
    pub fn new(load: Load<T>) -> Self {
        Self {
            load,
            state: RwSignal::new(LoadState::NotAsked),
        }
    }

    /// Starts loading the part's code, unless it is loaded or loading.
    pub fn start(self) {
        if self
            .state
            .with_untracked(|s| matches!(s, LoadState::Loading | LoadState::Ready(_)))
        {
            return;
        }
        self.state.set(LoadState::Loading);
        let loading = (self.load)();
        leptos::task::spawn_local(async move {
            let state = match loading.await {
                Ok(mount) => LoadState::Ready(mount),
                Err(message) => LoadState::Failed(message),
            };
            self.state.try_set(state);
        });
    }
}

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
