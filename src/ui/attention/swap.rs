//! The model swap under the text view: each chosen method (and the Hedgehog maps) replaces
//! softmax in every head of the chosen layers of all-MiniLM-L6-v2 on the user's text, in the
//! model worker, one job at a time ([`crate::lab::models::swap_plan`]); the figures fill in as the
//! answers arrive. The answer line says which method, at which m, keeps the sentence embedding
//! within cosine 0.99 and at what cost, and whether the retrieval ranking survives.
//!
//! The files: this one (the plan's effect, the controls and the answer), `summary` (the cosine
//! table and the drift through the layers), `charts` (cosine against m, cost against quality,
//! the Hedgehog curve) and `retrieval`.

mod charts;
mod retrieval;
mod summary;

use leptos::prelude::*;

use super::Figure;
use super::model_client::{ModelClient, SwapCell};
use crate::lab::config::{ExperimentConfig, HEAD_LAYERS, Param, SWAP_BUDGETS};
use crate::lab::models::protocol::{HEDGEHOG, SwapReport};
use crate::lab::models::swap_plan::{
    KEEPS_COSINE, learned_against_random, retrieval_summary, swap_plan, verdict,
};
use crate::lab::page::formulas;
use crate::numerics::attention::methods::MethodId;
use crate::ui::controls::{NumberControl, commit};
use charts::{CosineChart, CostChart, HedgehogCurve};
use retrieval::RetrievalView;
use summary::{CosineTable, LayerDrift};

/// The Hedgehog maps' colour in the charts (no registry method uses it).
const HEDGEHOG_COLOUR: [u8; 3] = [20, 20, 20];

/// A method's colour by id (the Hedgehog maps' own).
fn colour_of(id: &str) -> [u8; 3] {
    MethodId::from_id(id).map_or(HEDGEHOG_COLOUR, MethodId::colour)
}

fn css_colour_of(id: &str) -> String {
    let [r, g, b] = colour_of(id);
    format!("rgb({r},{g},{b})")
}

/// A method's label by id.
fn label_of(id: &str) -> &'static str {
    if id == HEDGEHOG {
        "Hedgehog (learned map)"
    } else {
        MethodId::from_id(id).map_or("?", MethodId::label)
    }
}

/// The reports that went through, in the order they arrived.
fn reports(cells: &[SwapCell]) -> Vec<SwapReport> {
    cells
        .iter()
        .filter_map(|c| c.report.as_ref().ok().cloned())
        .collect()
}

/// "m = 64" for a method with a budget, nothing for one without.
fn at_m(report: &SwapReport) -> String {
    report
        .features
        .map(|m| format!(" at m = {m}"))
        .unwrap_or_default()
}

/// The view's answer: which method keeps the embedding, at which m and cost (or the closest).
fn answer(config: &ExperimentConfig, cells: &[SwapCell], done: bool) -> String {
    if config.attention.swap_layers.is_empty() {
        return "No layer is swapped: tick one to put the methods inside the model.".to_string();
    }
    let all = reports(cells);
    let Some(first) = all.first() else {
        return if done {
            "no swap went through (see the table)".to_string()
        } else {
            "swapping the methods into the model…".to_string()
        };
    };
    let layers = if config.attention.swap_layers.len() == HEAD_LAYERS {
        "every layer".to_string()
    } else {
        format!(
            "layer{} {}",
            if config.attention.swap_layers.len() > 1 {
                "s"
            } else {
                ""
            },
            config
                .attention
                .swap_layers
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let v = verdict(&all);
    let context = format!(
        "At L = {} tokens, softmax replaced in {layers}",
        first.tokens
    );
    let so_far = if done { "" } else { " (so far)" };
    match (v.keeping.first(), v.closest) {
        (Some(best), _) => {
            let methods: Vec<String> = v
                .keeping
                .iter()
                .map(|r| format!("{}{}", r.method, at_m(r)))
                .collect();
            format!(
                "{context}: {} of {} runs keep the sentence embedding within cosine {KEEPS_COSINE}{so_far}: {}. The cheapest is {}{} (cosine {:.4}): {:.2e} multiply-adds in attention per forward against softmax's {:.2e}, forward {:.0} ms against the exact {:.0} ms.",
                v.keeping.len(),
                all.len(),
                methods.join(", "),
                best.label,
                at_m(best),
                best.cosine.as_ref().map_or(f64::NAN, |c| c.mean),
                best.cost.attention_multiply_adds,
                best.cost.softmax_multiply_adds,
                best.cost.forward_ms,
                best.cost.exact_forward_ms
            )
        }
        (None, Some(closest)) => format!(
            "{context}: no method keeps the sentence embedding within cosine {KEEPS_COSINE}{so_far}. The closest is {}{} (cosine {:.4}, {:.2e} multiply-adds in attention against softmax's {:.2e}).",
            closest.label,
            at_m(&closest),
            closest.cosine.as_ref().map_or(f64::NAN, |c| c.mean),
            closest.cost.attention_multiply_adds,
            closest.cost.softmax_multiply_adds
        ),
        (None, None) => format!("{context}: every draw stopped (see the table)."),
    }
}

/// The swap's controls: the layers swapped, the draws, the Hedgehog maps' steps.
///
/// - `config`, `set_config`: the configuration (this writes `swap`, `swapdraws`, `hhsteps`, `reuse`).
#[component]
fn SwapControls(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
) -> impl IntoView {
    let (error, set_error) = signal(None::<String>);
    let set_layers = move |layers: Vec<usize>| {
        let text = layers
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let text = if layers.is_empty() {
            "none".to_string()
        } else {
            text
        };
        set_error.set(commit(config, set_config, Param::SwapLayers, &text).map(|e| e.to_string()));
    };
    let layer_box = move |layer: usize| {
        let checked = move || config.with(|c| c.attention.swap_layers.contains(&layer));
        let toggle = move |on: bool| {
            let mut layers = config.with_untracked(|c| c.attention.swap_layers.clone());
            layers.retain(|&l| l != layer);
            if on {
                layers.push(layer);
            }
            layers.sort_unstable();
            set_layers(layers);
        };
        view! {
            <label class="check">
                <input
                    type="checkbox"
                    name=format!("swap-layer-{layer}")
                    prop:checked=checked
                    on:change=move |ev| toggle(event_target_checked(&ev))
                />
                <span>{layer.to_string()}</span>
            </label>
        }
    };
    view! {
        <div class="swap-controls">
            <fieldset class="group">
                <legend>"layers swapped " <code class="param-key">"swap"</code></legend>
                {(0..HEAD_LAYERS).map(layer_box).collect_view()}
                <button type="button" class="swap-all" on:click=move |_| set_layers((0..HEAD_LAYERS).collect())>"all"</button>
            </fieldset>
            <NumberControl param=Param::SwapDraws config set_config/>
            <NumberControl param=Param::HedgehogSteps config set_config/>
            <label class="check" title="The Hedgehog maps and the retrieval reports do not depend on your text: the lab's build computed the defaults' with the same code, and each is checked here before it is used. Untick to compute them here.">
                <input
                    type="checkbox"
                    name="reuse"
                    prop:checked=move || config.with(|c| c.attention.reuse_answers)
                    on:change=move |ev| {
                        let on = event_target_checked(&ev);
                        set_config.update(|c| c.attention.reuse_answers = on);
                    }
                />
                " reuse answers " <code class="param-key">"reuse"</code>
            </label>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        </div>
    }
}

/// Approximate attention inside the model, on the user's text.
///
/// - `config`, `set_config`: the configuration (the swap's settings, the methods, m, the text).
/// - `model`: the model worker's handle (its swap results and its queue).
#[component]
pub(super) fn ModelSwap(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    model: ModelClient,
) -> impl IntoView {
    // The plan without the trained maps: equal plans (another control moved) change nothing.
    let plan = Memo::new(move |_| config.with(|c| swap_plan(c, None)));
    Effect::new(move |_| {
        // Read, not only tracked: a memo nobody read never computes, so never notifies.
        plan.with(|_| ());
        // Empty unless the data are the user's text.
        let jobs = config.with_untracked(|c| {
            swap_plan(
                c,
                model.trained().as_ref().map(|(job, origin)| (job, *origin)),
            )
        });
        model.plan(jobs);
    });
    let swap = model.swap;
    let done = move || {
        let (done, total) = swap.progress.get();
        total > 0 && done >= total
    };
    let progress = move || {
        let (done, total) = swap.progress.get();
        let draws = config.with(|c| c.attention.swap_draws);
        let each = format!(
            "; each random method drawn {draws} time{} (a method without randomness once)",
            if draws == 1 { "" } else { "s" }
        );
        if total == 0 {
            String::new()
        } else if done >= total {
            format!("all {total} jobs of the model swap computed{each}")
        } else {
            format!("{done} of {total} jobs of the model swap computed…{each}")
        }
    };
    let answer_line = move || {
        swap.cells
            .with(|cells| config.with(|c| answer(c, cells, done())))
    };
    let retrieval_line = move || {
        swap.retrieval.with(|cells| {
            let reports: Vec<_> = cells
                .iter()
                .filter_map(|c| c.report.as_ref().ok().cloned())
                .collect();
            retrieval_summary(&reports)
        })
    };
    let learned_line = move || {
        swap.cells.with(|cells| {
            learned_against_random(&reports(cells)).map(|c| {
                let (cosine, m) = c.learned;
                let same = c.best_at_same_m.as_ref().map_or(String::new(), |(id, b)| {
                    format!(" against the best random map's {b:.3} at m = {m} ({id})")
                });
                let any = c
                    .best_at_any_m
                    .as_ref()
                    .map_or(String::new(), |(id, mm, b)| {
                        format!(" and {b:.3} at any m ({id}, m = {mm})")
                    });
                let verdict = match (c.beats_same_m(), c.beats_any_m()) {
                    (true, true) => "they beat every random map here",
                    (true, false) => "they beat every random map of the same size, not the largest",
                    _ => "a random map keeps more here",
                };
                format!(
                    "Hedgehog, trained on another text: cosine {cosine:.3}{same}{any}: {verdict}."
                )
            })
        })
    };
    let keeping = move || {
        swap.cells
            .with(|cells| verdict(&reports(cells)).keeping.len())
    };
    view! {
        <Figure class="model-swap" title="Approximate attention inside the model" formula=formulas::MODEL_SWAP notice="errors compound: a method that looks close on one head moves the embedding much more when all six layers use it; the sparse + low-rank and randomized methods pay for their accuracy with O(L²) work; the linear maps pay off only at long texts.">
            <SwapControls config set_config/>
            <p
                class="swap-answer"
                data-swap-done=move || swap.progress.get().0
                data-swap-total=move || swap.progress.get().1
                data-swap-keeping=keeping
                aria-live="polite"
            >{answer_line}" "{retrieval_line}" "<span class="learned-line">{learned_line}</span></p>
            <p class="caption swap-progress">{progress}</p>
            <CosineTable cells=swap.cells budgets=&SWAP_BUDGETS/>
            <CosineChart cells=swap.cells/>
        </Figure>
        <Figure class="swap-cost" title="Cost against quality" formula=formulas::MODEL_SWAP_COST notice="multiply-adds of attention in the swapped heads against the embedding's distance; softmax's cost is the dashed line: a linear map is cheaper only where L is larger than its features, so paste a long text to see it pay.">
            <CostChart cells=swap.cells/>
        </Figure>
        <Figure class="swap-layers" title="Drift through the layers" formula=formulas::MODEL_SWAP notice="a swapped layer's error is carried by the residual stream into every later layer; an unswapped layer after a swapped one still moves, as its inputs moved.">
            <LayerDrift cells=swap.cells config/>
        </Figure>
        <Figure class="swap-retrieval" title="Retrieval: does the ranking survive?" formula=formulas::RETRIEVAL_AGREEMENT notice="the best candidate usually survives where the order below it does not; the query and the candidates all pass through the swapped model.">
            <RetrievalView retrieval=swap.retrieval config set_config/>
        </Figure>
        <Figure class="swap-hedgehog" title="A learned map: Hedgehog" formula=formulas::HEDGEHOG_MAP notice="the maps learn each head's softmax on one text and are scored on another; compare their row in the table above with the random maps at the same m = 64.">
            <HedgehogCurve curve=swap.curve training=swap.training/>
        </Figure>
    }
}
