//! The address bar follows the configuration, so that a link always reproduces the view.

use std::time::Duration;

use leptos::prelude::*;

use crate::lab::config::ExperimentConfig;
use crate::lab::page::mode::PageMode;

use super::url_query;

/// How long the address bar waits for the reader to stop typing a text before it follows.
const URL_TYPING_PAUSE_MS: u64 = 400;

/// Replaces the URL's query so that the address bar always reproduces the view (no history
/// entry per slider step).
fn replace_url_query(query: &str) {
    if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
        let url = format!("?{query}");
        if url_query() != url {
            let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url));
        }
    }
}

/// Writes `config` (with the page's `mode`) into the address bar whenever it changes.
pub(super) fn follow(config: ReadSignal<ExperimentConfig>, mode: ReadSignal<PageMode>) {
    // While the reader types a text, the address bar follows after a pause: each write is a
    // same-document navigation, which cost the browser's main thread about 11 ms per keystroke
    // here, on the cores the model's forward of that keystroke runs on.
    let pending_url = StoredValue::new_local(None::<TimeoutHandle>);
    Effect::new(move |previous: Option<ExperimentConfig>| {
        let current = config.get();
        let query = mode.with(|m| m.query_with(&current));
        if let Some(handle) = pending_url.get_value() {
            handle.clear();
            pending_url.set_value(None);
        }
        let typing = previous.as_ref().is_some_and(|before| {
            before.attention.text != current.attention.text && {
                let mut only_text = before.clone();
                only_text.attention.text.clone_from(&current.attention.text);
                only_text == current
            }
        });
        if typing {
            let write = set_timeout_with_handle(
                move || replace_url_query(&query),
                Duration::from_millis(URL_TYPING_PAUSE_MS),
            );
            pending_url.set_value(write.ok());
        } else {
            replace_url_query(&query);
        }
        current
    });
    on_cleanup(move || {
        if let Some(handle) = pending_url.try_get_value().flatten() {
            handle.clear();
        }
    });
}
