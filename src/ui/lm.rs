//! The language model's view (`view=lm`): "what the model expects". The reader's text through
//! SmolLM2-135M-Instruct, each token coloured by how surprised the model was by it (its loss in
//! nats, `−log p(token | the tokens before)`), the perplexity `exp(mean loss)`, and the same
//! with a method of the lab replacing softmax, causally, in the layers the reader picks. A token
//! chosen (hover, focus or tap) shows what the model expected there, exactly and swapped.

mod client;
mod continuation;
mod layers;
mod spawn;
mod transfer;

use std::rc::Rc;

use leptos::prelude::*;

pub use client::LmClient;
use client::LmState;

use crate::lab::config::{
    ExperimentConfig, LM_LAYERS, MAX_TEXT_BYTES, Param, lm_layers_text, parse_layers,
};
use crate::lab::models::smollm::{LM_MAX_TOKENS, LmJob, LmReport, NextToken};
use crate::lab::page::tour::LanguageModelEvidence;
use crate::numerics::attention::method::MethodFamily;
use crate::numerics::attention::methods::MethodId;
use crate::ui::controls::NumberControl;
use crate::ui::megabytes;
use crate::ui::tour::TourAttentionEvidence;

/// Methods whose families are feature maps, so they have a causal form (a random map whose
/// fit has no batched form, such as a complex A, is refused by the worker with its reason).
fn causal_methods() -> Vec<MethodId> {
    MethodId::all()
        .filter(|m| {
            matches!(
                m.get().info().family,
                MethodFamily::RandomFeatures | MethodFamily::Deterministic
            )
        })
        .collect()
}

/// A loss's colour: white at 0 nats to red at 10 and beyond, never darker than the dark text
/// on it can be read against (contrast ≥ 4.5, WCAG AA).
fn loss_colour(loss: f64) -> String {
    let t = (loss / 10.0).clamp(0.0, 1.0);
    format!("hsl(4, 85%, {:.0}%)", 97.0 - 28.0 * t)
}

/// Which losses colour the tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Colouring {
    Exact,
    Swapped,
}

/// The view.
///
/// - `config`, `set_config`: the configuration (this reads and writes `text`, `lmmethod`,
///   `lmlayers`, `lmchart`, `features`, `swapdraws`, `lmgen`, `lmtemp`, `lmtrain`, `lmsteps`).
/// - `client`: the language model's worker, kept by the page across views.
#[component]
pub fn LmView(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    client: LmClient,
) -> impl IntoView {
    client.start();
    let job = Memo::new(move |_| config.with(LmJob::scoring));
    Effect::new(move |_| client.ask(job.get()));
    let continuation = Memo::new(move |_| config.with(LmJob::continuation));
    Effect::new(move |_| client.ask_continuation(continuation.get()));
    let transfer = Memo::new(move |_| config.with(LmJob::transfer));
    Effect::new(move |_| client.ask_transfer(transfer.get()));
    // A tour step on screen reads the swap and the transfer once both are in.
    if let Some(tour) = use_context::<TourAttentionEvidence>() {
        // A memo: the step hears of a change only, not of every training step.
        let evidence = Memo::new(move |_| {
            let asked = config.with(|c| !c.attention.lm_train.is_empty());
            tour_evidence(client, asked)
        });
        Effect::new(move |_| tour.language_model.set(evidence.get()));
    }

    let (text_error, set_text_error) = signal(None::<String>);
    let on_text = move |ev: leptos::ev::Event| {
        let value = event_target_value(&ev);
        if value.len() > MAX_TEXT_BYTES {
            set_text_error.set(Some(format!(
                "That text is {}; the lab reads at most {} KB. Paste a shorter part.",
                megabytes(value.len() as u64),
                MAX_TEXT_BYTES / 1000
            )));
            return;
        }
        set_text_error.set(None);
        set_config.update(|c| c.attention.text = value);
    };
    let on_method = move |ev: leptos::ev::Event| {
        let value = event_target_value(&ev);
        set_config.update(|c| c.attention.lm_method = MethodId::from_id(&value));
    };
    let (layers_error, set_layers_error) = signal(None::<String>);
    let on_layers =
        move |ev: leptos::ev::Event| match parse_layers(&event_target_value(&ev), LM_LAYERS) {
            Ok(layers) => {
                set_layers_error.set(None);
                set_config.update(|c| c.attention.lm_layers = layers);
            }
            Err(e) => set_layers_error.set(Some(e)),
        };
    let (colouring, set_colouring) = signal(Colouring::Exact);
    let (chosen, set_chosen) = signal(None::<usize>);

    let status = move || match client.state.get() {
        LmState::Idle => "the model starts with this view".to_string(),
        LmState::Downloading { loaded, total } => format!(
            "downloading SmolLM2-135M-Instruct (Q4_1 GGUF): {}{}",
            megabytes(loaded),
            total
                .map(|t| format!(" of {}", megabytes(t)))
                .unwrap_or_default()
        ),
        LmState::Ready { bytes, load_ms } => format!(
            "SmolLM2-135M-Instruct ready: {} of 4-bit blocks, checked and read in {load_ms:.0} ms; \
             it computes from the blocks",
            megabytes(bytes)
        ),
        LmState::Failed(message) => format!("The language model is not available: {message}"),
    };
    let report = move || {
        client.answer.with(|a| {
            a.as_ref()
                .map(|a| (a.report.clone(), a.count, a.exact_kept))
        })
    };
    let summary = move || {
        report().map(|(result, count, exact_kept)| match result {
            Ok(r) => summary_view(&r, count, exact_kept).into_any(),
            Err(message) => view! { <p class="error" role="alert">{message}</p> }.into_any(),
        })
    };
    let tokens = move || {
        report().and_then(|(result, _, _)| result.ok()).map(|r| {
            let swapped = r.swap.as_ref().filter(|s| !s.losses.is_empty()).cloned();
            let by = if swapped.is_some() {
                colouring.get()
            } else {
                Colouring::Exact
            };
            let spans = r
                .pieces
                .iter()
                .enumerate()
                .map(|(i, piece)| {
                    let loss = i.checked_sub(1).and_then(|t| match by {
                        Colouring::Exact => r.losses.get(t).copied(),
                        Colouring::Swapped => {
                            swapped.as_ref().and_then(|s| s.losses.get(t).copied())
                        }
                    });
                    let style = loss.map_or_else(
                        || "background: #eee".to_string(),
                        |l| format!("background: {}", loss_colour(l)),
                    );
                    let label = match loss {
                        Some(l) => format!("token {i}: {piece:?}, loss {l:.2} nats"),
                        None => format!("token {i}: {piece:?}, the first: not scored"),
                    };
                    view! {
                        <span
                            class="lm-token"
                            data-id=r.ids.get(i).copied()
                            data-next-id=r.top.get(i).and_then(|top| top.first()).map(|t| t.id)
                            tabindex="0"
                            style=style
                            aria-label=label
                            class:chosen=move || chosen.get() == Some(i)
                            on:mouseenter=move |_| set_chosen.set(Some(i))
                            on:focus=move |_| set_chosen.set(Some(i))
                            on:click=move |_| set_chosen.set(Some(i))
                        >{visible(piece)}</span>
                    }
                })
                .collect_view();
            view! { <p class="lm-text" data-tokens=r.ids.len()>{spans}</p> }
        })
    };
    let detail = move || {
        let i = chosen.get()?;
        let (result, _, _) = report()?;
        let r = result.ok()?;
        Some(token_detail(&r, i))
    };
    view! {
        <div class="layout lm-view">
            <aside class="controls">
                <h2>"Your text"</h2>
                <textarea
                    name="lm-text"
                    rows="6"
                    aria-label="the text the language model reads"
                    prop:value=move || config.with(|c| c.attention.text.clone())
                    on:input=on_text
                ></textarea>
                {move || text_error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
                <h2>"Swap"</h2>
                <label for="control-lmmethod">"method in place of softmax"</label>
                <select
                    id="control-lmmethod"
                    name="lmmethod"
                    on:change=on_method
                    prop:value=move || config.with(|c| c.attention.lm_method.map_or("none", MethodId::id).to_string())
                >
                    <option value="none" prop:selected=move || config.with(|c| c.attention.lm_method.is_none())>
                        "none (exact only)"
                    </option>
                    {causal_methods()
                        .into_iter()
                        .map(|m| view! {
                            <option
                                value=m.id()
                                prop:selected=move || config.with(|c| c.attention.lm_method == Some(m))
                            >{format!("{} ({})", m.label(), m.id())}</option>
                        })
                        .collect_view()}
                </select>
                <label for="control-lmlayers">
                    {format!("layers (0 to {}): all, 5, 1,4 or 10-12 ", LM_LAYERS - 1)}
                    <code class="param-key">"lmlayers"</code>
                </label>
                <input
                    id="control-lmlayers"
                    name="lmlayers"
                    type="text"
                    prop:value=move || config.with(|c| lm_layers_text(&c.attention.lm_layers))
                    on:change=on_layers
                />
                {move || layers_error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
                <label class="check">
                    <input
                        type="checkbox"
                        name="lmchart"
                        prop:checked=move || config.with(|c| c.attention.lm_chart)
                        on:change=move |ev| {
                            let on = event_target_checked(&ev);
                            set_config.update(|c| c.attention.lm_chart = on);
                        }
                    />
                    " chart each layer alone (both cores, seconds per text)"
                </label>
                <NumberControl param=Param::Features config set_config id_prefix="lm-"/>
                <NumberControl param=Param::SwapDraws config set_config id_prefix="lm-"/>
            </aside>
            <section class="results">
                <p
                    class="status lm-status"
                    aria-live="polite"
                    data-load-ms=move || match client.state.get() {
                        LmState::Ready { load_ms, .. } => Some(format!("{load_ms:.0}")),
                        _ => None,
                    }
                    data-lm-state=move || match client.state.get() {
                        LmState::Idle => "idle",
                        LmState::Downloading { .. } => "downloading",
                        LmState::Ready { .. } => "ready",
                        LmState::Failed(_) => "failed",
                    }
                    data-busy=move || client.busy.get().to_string()
                >
                    {move || matches!(client.state.get(), LmState::Downloading { .. }).then(|| {
                        let (loaded, total) = match client.state.get() {
                            LmState::Downloading { loaded, total } => (loaded, total),
                            _ => (0, None),
                        };
                        view! {
                            <progress
                                max=total.unwrap_or(crate::lab::models::smollm::LM_FILE_BYTES) as f64
                                value=loaded as f64
                                aria-label="the language model's download"
                            ></progress>
                        }
                    })}
                    " "{status}
                    {move || client.busy.get().then_some(" Computing…")}
                </p>
                <section
                    class="figure lm-figure"
                    aria-label="what the model expects"
                    data-answer=move || client.answer.with(|a| a.as_ref().map(|a| a.count))
                    data-workers=move || client.workers.get()
                >
                    <h2>"What the model expects"</h2>
                    <p class="caption">
                        "Each token is coloured by its loss, −log p(token | the tokens before it), in nats: "
                        "white is expected, red is a surprise. The perplexity is exp of the mean loss. "
                        {format!("At most {LM_MAX_TOKENS} tokens; the first token has nothing before it and is not scored.")}
                    </p>
                    {summary}
                    <p class="lm-colouring" role="group" aria-label="colour the tokens by">
                        "colour by: "
                        <button type="button" aria-pressed=move || (colouring.get() == Colouring::Exact).to_string()
                            on:click=move |_| set_colouring.set(Colouring::Exact)>"exact attention"</button>
                        " "
                        <button type="button" aria-pressed=move || (colouring.get() == Colouring::Swapped).to_string()
                            on:click=move |_| set_colouring.set(Colouring::Swapped)>"with the swap"</button>
                    </p>
                    {legend()}
                    {tokens}
                    <div class="lm-detail" aria-live="polite">{detail}</div>
                </section>
                <continuation::ContinuationPanel config set_config client/>
                <layers::LayerChart client/>
                <transfer::TransferPanel config set_config client/>
            </section>
        </div>
    }
}

/// The text's exact and swapped perplexities and the transfer's verdict on it, once every draw
/// and (when a transfer is `asked`) the verdict are in.
fn tour_evidence(client: LmClient, asked: bool) -> Option<LanguageModelEvidence> {
    let answer = client.answer.get()?;
    let report = answer.report.ok()?;
    let swap = match &report.swap {
        Some(s) if s.pending_draws > 0 => return None,
        Some(s) => Some((
            s.label.clone(),
            s.layers.clone(),
            s.perplexity.as_ref()?.mean,
        )),
        None => None,
    };
    let transfer = client.transfer.with(|t| {
        let t = t.as_ref().filter(|t| t.job.text == answer.job.text)?;
        let verdict = t.verdict.as_ref()?.as_ref().ok()?;
        Some((t.job.config.attention.lm_train_steps, verdict.clone()))
    });
    if asked && transfer.is_none() {
        return None;
    }
    Some(LanguageModelEvidence {
        tokens: report.ids.len(),
        exact: report.perplexity,
        swap,
        transfer,
    })
}

/// Where a swap runs, in words: "every layer", "layer 5", "layers 10-12".
fn where_swapped(layers: &[usize]) -> String {
    match layers {
        [one] => format!("layer {one}"),
        _ if layers.len() == LM_LAYERS => "every layer".to_string(),
        _ => format!("layers {}", lm_layers_text(layers)),
    }
}

/// The colour scale of the losses, as a strip from 0 to 10 nats.
fn legend() -> impl IntoView {
    let stops = (0..=10)
        .map(|nats| {
            view! {
                <span class="lm-legend-stop" style=format!("background: {}", loss_colour(f64::from(nats)))>
                    {if nats % 5 == 0 { nats.to_string() } else { String::new() }}
                </span>
            }
        })
        .collect_view();
    view! {
        <p class="lm-legend" aria-hidden="true">"loss in nats: "{stops}"+"</p>
    }
}

/// A token as text, its whitespace shown (a newline as ⏎) so that every token has width.
pub(super) fn visible(piece: &str) -> String {
    piece.replace('\n', "⏎").replace('\t', "⇥")
}

/// The perplexities, exact and swapped; `exact_kept` when the exact score is the same text's
/// from before (only the swap ran for this answer).
fn summary_view(r: &Rc<LmReport>, count: u32, exact_kept: bool) -> impl IntoView + use<> {
    // Where the swap's forward started when the exact run was kept: its first swapped layer.
    let kept = match r.swap.as_ref().and_then(|s| s.layers.iter().min()) {
        _ if !exact_kept => String::new(),
        Some(&first) if first > 0 => {
            format!("; kept from before, so only the swap ran, from layer {first} on")
        }
        _ => "; kept from before, so only the swap ran".to_string(),
    };
    let exact = format!(
        "Perplexity {:.2} over {} scored tokens (mean loss {:.3} nats); forward {:.0} ms for {:.2e} multiply-adds{kept}.",
        r.perplexity,
        r.losses.len(),
        r.losses.iter().sum::<f64>() / r.losses.len().max(1) as f64,
        r.forward_ms,
        r.multiply_adds,
    );
    let swapped = r.swap.as_ref().map(|s| {
        let layers = where_swapped(&s.layers);
        let ran = s.draws - s.failed_draws - s.pending_draws;
        // The forward's time reads differently when both workers computed it.
        let per_forward = match s.split_draws {
            0 => format!("{:.0} ms a forward", s.forward_ms),
            n if n == ran => format!("{:.0} ms a forward on both workers", s.forward_ms),
            n => format!("{:.0} ms a forward ({n} of {ran} on both workers)", s.forward_ms),
        };
        let coming = match s.pending_draws {
            0 => String::new(),
            1 => " One more draw is coming.".to_string(),
            n => format!(" {n} more draws are coming."),
        };
        let text = match &s.perplexity {
            Some(p) if ran == 1 && s.draws > 1 => format!(
                "With {} in {layers}: perplexity {:.2} after its first draw, ×{:.2} the exact one; {per_forward}.{coming}",
                s.label, p.mean, p.mean / r.perplexity
            ),
            Some(p) if s.draws > 1 => format!(
                "With {} in {layers}: perplexity {:.2} (sd {:.2}, {:.2} to {:.2} over {ran} draws), ×{:.2} the exact one; {per_forward}.{coming}",
                s.label, p.mean, p.sd, p.min, p.max, p.mean / r.perplexity
            ),
            Some(p) => format!(
                "With {} in {layers}: perplexity {:.2}, ×{:.2} the exact one; {per_forward}.",
                s.label, p.mean, p.mean / r.perplexity
            ),
            None if ran == 0 && s.failed_draws == 0 => {
                format!("With {} in {layers}: its first draw is being computed…", s.label)
            }
            None => format!(
                "With {} in {layers}: no draw could run ({}).{coming}",
                s.label,
                s.failure.clone().unwrap_or_default()
            ),
        };
        view! {
            <p
                class="lm-swapped"
                data-swapped-perplexity=s.perplexity.as_ref().map(|p| format!("{:.4}", p.mean))
                data-swap-forward-ms=format!("{:.1}", s.forward_ms)
                data-pending-draws=s.pending_draws
                data-split-draws=s.split_draws
            >{text}</p>
        }
    });
    view! {
        <p
            class="lm-exact"
            data-perplexity=format!("{:.4}", r.perplexity)
            data-forward-ms=format!("{:.1}", r.forward_ms)
            data-answer=count
            data-exact-kept=exact_kept.to_string()
        >{exact}</p>
        {swapped}
    }
}

fn next_list(tokens: &[NextToken]) -> impl IntoView + use<> {
    let items = tokens
        .iter()
        .map(|t| {
            view! { <li><code>{format!("{:?}", t.piece)}</code>{format!(" {:.1} %", 100.0 * t.logprob.exp())}</li> }
        })
        .collect_view();
    view! { <ol class="lm-next">{items}</ol> }
}

/// What the model expected at token `i`: the predictions of position `i − 1`.
fn token_detail(r: &Rc<LmReport>, i: usize) -> impl IntoView + use<> {
    let piece = r.pieces.get(i).cloned().unwrap_or_default();
    let before = i.checked_sub(1);
    let exact_loss = before.and_then(|t| r.losses.get(t).copied());
    let swapped = r.swap.as_ref();
    let swapped_loss = before.and_then(|t| swapped?.losses.get(t).copied());
    let heading = match (exact_loss, swapped_loss) {
        (Some(e), Some(s)) => {
            format!("Token {i}, {piece:?}: loss {e:.2} nats exact, {s:.2} with the swap.")
        }
        (Some(e), None) => format!("Token {i}, {piece:?}: loss {e:.2} nats."),
        _ => format!("Token {i}, {piece:?}: the first token, not scored."),
    };
    let exact_top = before.and_then(|t| r.top.get(t)).map(|top| next_list(top));
    let swapped_top = before
        .and_then(|t| swapped?.top.get(t))
        .map(|top| next_list(top));
    view! {
        <p>{heading}</p>
        {exact_top.map(|list| view! { <div><h3>"The model expected (exact)"</h3>{list}</div> })}
        {swapped_top.map(|list| view! { <div><h3>"With the swap"</h3>{list}</div> })}
    }
}
