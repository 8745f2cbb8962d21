//! "Continue the text": the model adds `lmgen` tokens to the reader's text, exactly (every
//! layer softmax, its keys and values cached) and with the swap's layers linear (and, once an
//! attention transfer is judged, with its layers linear and their trained maps), decoded as
//! recurrent networks; side by side as the tokens come, with each one's speed, and a chart of
//! what one layer of each kind keeps against the position (the cache grows, the state does
//! not) and what its next step costs.

use leptos::html::Canvas;
use leptos::prelude::*;

use super::client::{LmClient, LmContinuations};
use super::where_swapped;
use crate::charts::{Series, describe, draw_xy_mixed};
use crate::lab::config::{ExperimentConfig, Param};
use crate::lab::models::smollm::{Continuation, ContinuationEnd};
use crate::lab::page::formulas;
use crate::ui::attention::{Figure, chart_error, paced_chart};
use crate::ui::controls::NumberControl;

const CACHE_COLOUR: [u8; 3] = [0, 0, 0];
const STATE_COLOUR: [u8; 3] = [0, 114, 178];

/// One continuation's column: its heading, the text it adds, its speed and how it ended.
fn column(c: &Continuation, heading: String) -> impl IntoView + use<> {
    let speed = match (c.tokens_per_second(), &c.start) {
        (Some(rate), Some(start)) => format!(
            "{} tokens, {rate:.1} a second ({:.0} ms a token); the prompt's {} tokens read in {:.0} ms.",
            c.tokens.len(),
            1000.0 / rate,
            start.prompt_tokens,
            start.prefill_ms
        ),
        (None, Some(start)) => format!(
            "The prompt's {} tokens read in {:.0} ms; the tokens follow.",
            start.prompt_tokens, start.prefill_ms
        ),
        _ => "Reading the prompt…".to_string(),
    };
    let end = match &c.end {
        None => String::new(),
        Some(ContinuationEnd::Complete) => "Complete.".to_string(),
        Some(ContinuationEnd::EndOfText) => "The model ended its text.".to_string(),
        Some(ContinuationEnd::Failed(reason)) => format!("Stopped: {reason}"),
    };
    let failed = matches!(c.end, Some(ContinuationEnd::Failed(_)));
    let ids = c
        .tokens
        .iter()
        .map(|t| t.id.to_string())
        .collect::<Vec<_>>()
        .join(",");
    view! {
        <div
            class="lm-continue"
            data-decoding=c.decoding.key()
            data-tokens=c.tokens.len()
            data-ids=ids
            data-done=c.end.is_some().to_string()
            data-failed=failed.to_string()
            data-tokens-per-second=c.tokens_per_second().map(|r| format!("{r:.2}"))
            data-prefill-ms=c.start.as_ref().map(|s| format!("{:.0}", s.prefill_ms))
        >
            <h3>{heading}</h3>
            <p class="lm-continue-text">
                <span class="lm-continue-prompt">"… "</span>
                // Line breaks as ⏎: a continuation of blank lines stays one line, not a page.
                {super::visible(&c.text)}
            </p>
            <p class="caption">{speed}" "{end}</p>
        </div>
    }
}

/// The continuations of the newest text.
///
/// - `config`, `set_config`: the configuration (this writes `lmgen` and `lmtemp`).
/// - `client`: the language model's workers; its `continuations` signal streams the tokens.
#[component]
pub(super) fn ContinuationPanel(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    client: LmClient,
) -> impl IntoView {
    let canvas: NodeRef<Canvas> = NodeRef::new();
    let error = paced_chart(move || {
        let canvas = canvas.get()?;
        let continuations = client.continuations.get()?;
        Some(draw(&canvas, &continuations))
    });
    let columns = move || {
        let c = client.continuations.get()?;
        let exact = column(
            &c.exact,
            "exact: every layer softmax, a key/value cache".into(),
        );
        let linear = c.linear.as_ref().map(|linear| {
            let label = c.job.method().map_or("the method", |m| m.label());
            let layers = where_swapped(&c.job.config.attention.lm_layers);
            column(
                linear,
                format!("{label} in {layers}, each head a recurrent network"),
            )
        });
        let transferred = c.transferred.as_ref().map(|t| {
            let layers = t.start.as_ref().map_or_else(
                || "the transferred layers".to_string(),
                |s| where_swapped(&s.linear_layers),
            );
            column(
                t,
                format!("Hedgehog's trained maps in {layers}, each head a recurrent network"),
            )
        });
        Some(view! { <div class="lm-continue-columns">{exact}{linear}{transferred}</div> })
    };
    let crossover = move || {
        client
            .continuations
            .with(|c| c.as_ref().and_then(crossover_text))
    };
    view! {
        <Figure
            class="lm-continuations"
            title="Continue the text"
            formula=formulas::LM_RECURRENT
            notice="where the two continuations part, and in the chart how a softmax layer's cache grows with every token while a linear layer's state stays the size it was: past the crossover, the linear layer needs less memory and fewer multiply-adds a token."
        >
            <div class="lm-continue-controls">
                <NumberControl param=Param::LmGenerate config set_config id_prefix="lm-"/>
                <NumberControl param=Param::LmTemperature config set_config id_prefix="lm-"/>
            </div>
            <p class="caption">
                "The model adds the tokens one at a time. Exactly, each layer keeps every earlier "
                "token's keys and values and reads them all at each step. With the swap, each "
                "linear layer's heads keep only S and z: the feature map is fitted on your text "
                "(the prompt) and then fixed, and the state is updated once a token. Once an "
                "attention transfer is judged, a third column decodes with its layers linear and "
                "their trained maps. All draw from the same seed, so at a temperature above 0 "
                "they part only where the models' probabilities do."
            </p>
            <Show
                when=move || config.with(|c| c.attention.lm_generate > 0)
                fallback=|| view! { <p class="caption">"Set the tokens to continue above 0 to start."</p> }
            >
                {columns}
                <canvas node_ref=canvas class="chart" data-chart="lm-memory"></canvas>
                <p class="caption lm-crossover" aria-live="polite">{crossover}</p>
                {chart_error(error)}
            </Show>
        </Figure>
    }
}

/// `(position, kilobytes)` of layer `layer`'s memory in `c`: after the prompt, then after each
/// token.
fn memory_points(c: &Continuation, layer: usize) -> Vec<(f64, f64)> {
    let Some(start) = &c.start else {
        return Vec::new();
    };
    let first = start
        .memory
        .get(layer)
        .map(|&b| (start.prompt_tokens as f64, b as f64 / 1e3));
    first
        .into_iter()
        .chain(c.tokens.iter().enumerate().filter_map(|(i, t)| {
            let bytes = *t.memory.get(layer)?;
            Some(((start.prompt_tokens + i + 1) as f64, bytes as f64 / 1e3))
        }))
        .collect()
}

/// The first linear layer of the linear continuation, if it has started.
fn first_linear(c: &LmContinuations) -> Option<(&Continuation, usize)> {
    let linear = c.linear.as_ref()?;
    let layer = *linear.start.as_ref()?.linear_layers.first()?;
    Some((linear, layer))
}

/// Where a softmax layer's cache and its step's multiply-adds pass a linear layer's, from the
/// bytes and multiply-adds the decoders report.
fn crossover_text(c: &LmContinuations) -> Option<String> {
    let start = c.exact.start.as_ref()?;
    let (linear, layer) = first_linear(c)?;
    let linear_start = linear.start.as_ref()?;
    let state = *linear_start.memory.get(layer)? as f64;
    let cache = *start.memory.first()? as f64;
    let per_token = cache / start.prompt_tokens.max(1) as f64;
    let step = *linear_start.step_multiply_adds.get(layer)?;
    let softmax_step = *start.step_multiply_adds.first()?;
    let softmax_per_position = softmax_step / (start.prompt_tokens + 1) as f64;
    Some(format!(
        "Solid lines are measured, dashed ones carried on at the measured bytes a token. One \
         linear layer keeps {:.0} KB whatever the position; a softmax layer's cache grows by \
         {:.2} KB a token, so it is larger from position {:.0} on. A linear layer's step costs \
         {:.3e} multiply-adds; a softmax layer's {:.3e} at position {} and {:.0} more each token, \
         so the linear step is cheaper from position {:.0} on.",
        state / 1e3,
        per_token / 1e3,
        (state / per_token).ceil(),
        step,
        softmax_step,
        start.prompt_tokens + 1,
        softmax_per_position,
        (step / softmax_per_position).ceil(),
    ))
}

/// The position the chart runs to: past the crossover of the cache and the state (projected
/// from the measured bytes a token), at most the model's context.
fn chart_end(cache: &[(f64, f64)], state: &[(f64, f64)]) -> f64 {
    let last = cache.last().map_or(0.0, |p| p.0);
    let per_token = match (cache.first(), cache.last()) {
        (Some(a), Some(b)) if b.0 > a.0 => (b.1 - a.1) / (b.0 - a.0),
        _ => return last,
    };
    let crossing = state.first().map_or(last, |s| s.1 / per_token);
    last.max((1.5 * crossing).min(CONTEXT))
}

/// The model's context: the chart's projection stops there.
const CONTEXT: f64 = 8192.0;

/// `points` carried on in a straight line (its slope from its ends) from its last point to `end`.
fn projected(points: &[(f64, f64)], end: f64) -> Vec<(f64, f64)> {
    let (Some(&a), Some(&b)) = (points.first(), points.last()) else {
        return Vec::new();
    };
    if end <= b.0 {
        return Vec::new();
    }
    let slope = if b.0 > a.0 {
        (b.1 - a.1) / (b.0 - a.0)
    } else {
        0.0
    };
    vec![b, (end, b.1 + slope * (end - b.0))]
}

/// Draws what a softmax layer (layer 0 of the exact continuation) and a linear layer keep,
/// against the position: measured (solid), and carried on to past their crossover (dashed).
fn draw(canvas: &web_sys::HtmlCanvasElement, c: &LmContinuations) -> Result<(), String> {
    let cache = memory_points(&c.exact, 0);
    let linear = first_linear(c);
    let state = linear.map_or_else(Vec::new, |(l, layer)| memory_points(l, layer));
    let state_label = linear.map_or(String::new(), |(_, layer)| {
        format!("linear layer {layer}: state")
    });
    let end = chart_end(&cache, &state);
    let (cache_on, state_on) = (projected(&cache, end), projected(&state, end));
    let mut lines = vec![Series {
        label: "softmax layer: cache",
        colour: CACHE_COLOUR,
        points: &cache,
        dashed: false,
        markers: false,
        line: true,
    }];
    if !cache_on.is_empty() {
        lines.push(Series {
            label: "cache, carried on",
            colour: CACHE_COLOUR,
            points: &cache_on,
            dashed: true,
            markers: false,
            line: true,
        });
    }
    if !state.is_empty() {
        lines.push(Series {
            label: &state_label,
            colour: STATE_COLOUR,
            points: &state,
            dashed: false,
            markers: false,
            line: true,
        });
    }
    if !state_on.is_empty() {
        lines.push(Series {
            label: "state, carried on",
            colour: STATE_COLOUR,
            points: &state_on,
            dashed: true,
            markers: false,
            line: true,
        });
    }
    let last = |points: &[(f64, f64)]| points.last().map_or(0.0, |p| p.1);
    describe(
        canvas,
        &format!(
            "memory of one layer against the position: the softmax layer's cache {:.1} KB, the \
             linear layer's state {:.1} KB at the last token",
            last(&cache),
            last(&state)
        ),
    );
    draw_xy_mixed(
        canvas,
        "what one layer keeps between tokens",
        ("position (tokens read)", "kilobytes"),
        &lines,
        &[],
        false,
        false,
    )
    .map_err(|e| e.to_string())
}
