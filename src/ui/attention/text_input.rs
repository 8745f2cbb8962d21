//! The text view (`src=text`): the user's text, the model worker that runs all-MiniLM-L6-v2 on
//! it (asked through [`ModelClient`]; started, and the 46 MB model fetched, only when this view
//! is first opened), the download's progress in bytes, the text's tokens and what the forward
//! cost. The attention view then shows the chosen layer's and head's queries, keys and values
//! of this text as it shows a stored passage. With `src=lm` the same box feeds the causal
//! language model's heads workers instead.

use leptos::prelude::*;

use super::model_client::{ModelClient, ModelState};
use crate::lab::config::{
    ExperimentConfig, HeadSource, MAX_LINK_TEXT_CHARS, MAX_TEXT_BYTES, MODEL_MAX_TOKENS,
    STORED_PASSAGES,
};
use crate::lab::models::board::{SHARED_SPLIT_MIN_TOKENS, SPLIT_MIN_TOKENS};
use crate::ui::megabytes;

/// Whether the page is cross-origin isolated (served with COOP and COEP): only then may the
/// model workers share memory, and a text's parts meet on shared boards.
fn page_isolated() -> bool {
    web_sys::window()
        .and_then(|w| js_sys::Reflect::get(&w, &"crossOriginIsolated".into()).ok())
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}

/// What the status says of how the workers share a text (more than one worker).
fn sharing_note(workers: usize) -> String {
    match (workers, page_isolated()) {
        (0 | 1, _) => String::new(),
        (_, true) => format!(
            "; a text of {SHARED_SPLIT_MIN_TOKENS} tokens or more is split over them, which share memory"
        ),
        (_, false) => format!(
            "; this host does not isolate the page (no COOP/COEP headers: see the README), so the \
             workers pass a text's layers by message and a text under {SPLIT_MIN_TOKENS} tokens runs on one"
        ),
    }
}

/// The text box, the model's status and the text's tokens: the encoder's (`src=text`), or the
/// causal language model's (`src=lm`: its heads, masked; no text run of its own to show).
///
/// - `config`, `set_config`: the configuration (this reads and writes `text`).
/// - `model`: the model workers' handle (the encoder's, whose outcome the attention view
///   reads, or the language model's heads workers).
#[component]
pub(super) fn TextInput(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    model: ModelClient,
) -> impl IntoView {
    let (error, set_error) = signal(None::<String>);
    let on_input = move |ev: leptos::ev::Event| {
        let value = event_target_value(&ev);
        if value.len() > MAX_TEXT_BYTES {
            set_error.set(Some(format!(
                "That text is {}; the lab reads at most {} KB (the model sees its first 512 tokens). Paste a shorter part.",
                megabytes(value.len() as u64),
                MAX_TEXT_BYTES / 1000
            )));
            return;
        }
        set_error.set(None);
        // The link carries the first MAX_LINK_TEXT_CHARS characters; the page keeps it all.
        let mut next = config.get_untracked();
        next.attention.text = value;
        set_config.set(next);
    };
    let set_text = move |text: &str| {
        set_error.set(None);
        let mut next = config.get_untracked();
        next.attention.text = text.to_string();
        set_config.set(next);
    };
    let lm = move || config.with(|c| c.attention.source == HeadSource::Lm);
    let status = move || {
        match model.state.get() {
        ModelState::Idle => view! { <span>"the model starts with this view"</span> }.into_any(),
        ModelState::Downloading { loaded, total } => view! {
            <span>
                <progress
                    max=move || total.unwrap_or(0).max(1) as f64
                    value=loaded as f64
                    aria-label="the model's download"
                ></progress>
                {format!(
                    " downloading the model: {}{}",
                    megabytes(loaded),
                    total.map(|t| format!(" of {}", megabytes(t))).unwrap_or_default()
                )}
            </span>
        }
        .into_any(),
        ModelState::Ready {
            bytes,
            parameters,
            load_ms,
            workers,
        } if lm() => view! {
            <span>{format!(
                "SmolLM2-135M loaded: {:.1} M parameters, {} in Q4_1 blocks, checked and read in {load_ms:.0} ms, in {workers} worker{} (each runs one exact forward of the text, keeps its 270 heads and computes its share of the parts).",
                parameters as f64 / 1e6,
                megabytes(bytes),
                if workers == 1 { "" } else { "s" },
            )}</span>
        }
        .into_any(),
        ModelState::Ready {
            bytes,
            parameters,
            load_ms,
            workers,
        } => view! {
            <span>{format!(
                "all-MiniLM-L6-v2 loaded: {:.1} M parameters, {} in f16, checked and unpacked in {load_ms:.0} ms, in {workers} worker{} (one per core){}.",
                parameters as f64 / 1e6,
                megabytes(bytes),
                if workers == 1 { "" } else { "s" },
                sharing_note(workers)
            )}</span>
        }
        .into_any(),
        ModelState::Failed(message) => {
            view! { <span class="error" role="alert">{format!("The model is not available: {message}")}</span> }
                .into_any()
        }
    }
    };
    let tokens = move || {
        model.outcome.with(|o| match o {
            Some(Ok(outcome)) => {
                let run = &outcome.run;
                let cut = run.full_len.map(|n| {
                    let last = run.tokens.get(run.tokens.len().saturating_sub(2)).cloned().unwrap_or_default();
                    format!(
                        " The text has {n} tokens: the model reads the first 512 (up to “{last}”), the rest is left out."
                    )
                });
                let macs = run.multiply_adds as f64;
                let summary = format!(
                    "{} tokens; forward {:.0} ms in the worker ({:.2e} multiply-adds, {:.2} G/s); sentence embedding of {} values.",
                    run.tokens.len(),
                    outcome.forward_ms,
                    macs,
                    macs / outcome.forward_ms.max(1e-3) / 1e6,
                    run.embedding.len()
                );
                let chips = run
                    .tokens
                    .iter()
                    .enumerate()
                    .map(|(i, t)| view! { <li title=format!("token {i}")>{t.clone()}</li> })
                    .collect_view();
                view! {
                    <p
                        class="caption"
                        data-text-tokens=run.tokens.len()
                        data-forward-ms=format!("{:.1}", outcome.forward_ms)
                        data-multiply-adds=run.multiply_adds
                        data-answer=outcome.answer
                    >{summary}{cut}</p>
                    <ol class="tokens">{chips}</ol>
                }
                .into_any()
            }
            Some(Err(message)) => view! { <p class="error" role="alert">{message.clone()}</p> }.into_any(),
            None => ().into_any(),
        })
    };
    let link_note = move || {
        config.with(|c| {
            (c.attention.text.chars().count() > MAX_LINK_TEXT_CHARS).then(|| {
                format!("The link keeps the first {MAX_LINK_TEXT_CHARS} characters of this text.")
            })
        })
    };
    let causal_note = move || {
        config.with(|c| {
            (c.attention.source == HeadSource::Lm).then(|| {
                let left_out: Vec<&str> =
                    c.attention.masked_out_methods().iter().map(|m| m.label()).collect();
                let left_out = if left_out.is_empty() {
                    String::new()
                } else {
                    format!(
                        " Left out, having no causal form here: {}.",
                        left_out.join(", ")
                    )
                };
                view! {
                    <p class="caption lm-source-note" data-left-out=left_out.clone()>
                        {format!(
                            "A decoder's head: its 9 query heads per layer share 3 key and value heads, the keys and queries carry the rotary position embedding, and each query sees its own and the earlier tokens only (the causal mask: the rows below are zero right of the diagonal, and every method runs its causal form, prefix sums of its features). The heads are the model's on the first {} tokens of the text.{left_out}",
                            MODEL_MAX_TOKENS
                        )}
                    </p>
                }
            })
        })
    };
    let heading = move || {
        if lm() {
            "Your text through SmolLM2-135M (a causal language model)"
        } else {
            "Your text through all-MiniLM-L6-v2"
        }
    };
    view! {
        <section class="figure text-input" aria-label="your text">
            <h2>{heading}</h2>
            <textarea
                name="text"
                rows="4"
                aria-label="the text the model runs on"
                prop:value=move || config.with(|c| c.attention.text.clone())
                on:input=on_input
            ></textarea>
            <p class="text-presets">
                "or run the model on a stored passage: "
                {STORED_PASSAGES
                    .iter()
                    .enumerate()
                    .map(|(i, text)| view! {
                        <button type="button" class="passage-text" on:click=move |_| set_text(text)>
                            {format!("passage {}", i + 1)}
                        </button>
                        " "
                    })
                    .collect_view()}
            </p>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <p
                class="status model-status"
                data-load-ms=move || match model.state.get() {
                    ModelState::Ready { load_ms, .. } => Some(format!("{load_ms:.1}")),
                    _ => None,
                }
                data-isolated=if page_isolated() { "true" } else { "false" }
                data-model-state=move || match model.state.get() {
                ModelState::Idle => "idle",
                ModelState::Downloading { .. } => "downloading",
                ModelState::Ready { .. } => "ready",
                ModelState::Failed(_) => "failed",
            }>{status}</p>
            {causal_note}
            {tokens}
            {link_note}
        </section>
    }
}
