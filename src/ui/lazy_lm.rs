//! The language model's view on demand: like the attention view ([`super::lazy_attention`]),
//! its code is a split part of the page's module (src/main.rs: `lm_view`), fetched the first
//! time the view is shown (or its tab is pointed at). The page keeps the worker's handle
//! ([`LmClient`]) across views in an [`LmSlot`], so the model loads once per page; the slot does
//! not name the handle's type, so none of its code is in the first part.

use std::any::Any;
use std::rc::Rc;

use leptos::prelude::*;

use super::lm::{LmClient, LmView};
use super::on_demand::{Load, LoadState, Loader, Loading};
use crate::lab::config::ExperimentConfig;

/// Where the page keeps the language model's worker handle between views: filled by the view's
/// split part the first time it is shown, under the page's reactive owner (made under the
/// view's, its signals would be disposed when the reader leaves the view).
#[derive(Clone, Copy)]
pub struct LmSlot(StoredValue<Kept, LocalStorage>);

/// The owner to make the handle under, and the handle once made (its type not named here).
type Kept = (Option<Owner>, Option<Rc<dyn Any>>);

impl LmSlot {
    /// An empty slot owned by the current owner (the page's).
    pub fn new() -> Self {
        Self(StoredValue::new_local((Owner::current(), None)))
    }

    /// The handle, made the first time.
    fn client(self) -> LmClient {
        let (owner, kept) = self.0.with_value(|(owner, kept)| {
            let kept = kept
                .as_ref()
                .and_then(|c| c.downcast_ref::<LmClient>().copied());
            (owner.clone(), kept)
        });
        kept.unwrap_or_else(|| {
            let client = match owner {
                Some(owner) => owner.with(LmClient::new),
                None => LmClient::new(),
            };
            self.0
                .update_value(|(_, kept)| *kept = Some(Rc::new(client)));
            client
        })
    }
}

/// Builds the language model's view.
pub type LmMount =
    fn(ReadSignal<ExperimentConfig>, WriteSignal<ExperimentConfig>, LmSlot) -> AnyView;

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
    slot: LmSlot,
) -> AnyView {
    let client = slot.client();
    view! { <LmView config set_config client/> }.into_any()
}

/// An [`LmLoad`] for a module that links the view itself (the browser tests).
pub fn lm_linked() -> LmLoading {
    Box::pin(std::future::ready(Ok(mount_lm as LmMount)))
}

/// The view once its code is in: a line while it loads, a sentence and a retry if it fails.
///
/// - `config`, `set_config`: the page's configuration, handed to the view.
/// - `kept`: where the page keeps the language model's worker across views.
/// - `loader`: the load of the view's code (the tab starts it early).
#[component]
pub fn LazyLmView(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    kept: LmSlot,
    loader: LmLoader,
) -> impl IntoView {
    loader.start();
    move || {
        match loader.state.get() {
        LoadState::Ready(mount) => untrack(|| mount(config, set_config, kept)),
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
