//! Split parts of the page's module on demand: a part's load ([`Load`]) and the page's one
//! [`Loader`] of it, shared by whatever starts it early and what shows it. The page binary
//! (src/main.rs) puts each part's entry behind a split point and scripts/build-page.sh cuts
//! everything only it reaches into its own WebAssembly file, fetched the first time it is
//! needed. This module holds no split point itself: the page is handed its loads, so a build
//! that is not split (the browser tests) links the parts directly. The parts: the attention
//! view (`ui::lazy_attention`), the tour's step panel (`ui::tour`), the kernel view's panels
//! below its first screen (`ui::below`) and the export's actions (`ui::export`).

use std::future::Future;
use std::pin::Pin;

use leptos::prelude::*;

/// What loading a split part's code gives: its entry, or why it could not be loaded.
pub type Loading<T> = Pin<Box<dyn Future<Output = Result<T, String>>>>;

/// Loads a split part's code (at most once at a time; a failed load may be asked again).
pub type Load<T> = fn() -> Loading<T>;

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
