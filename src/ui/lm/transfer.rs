//! "Win it back": attention transfer in the page. The reader picks layers (`lmtrain`; one
//! click takes the two whose lone swap costs most in the per-layer chart), their Hedgehog maps
//! train on the lab's transfer text on every worker, the curves drawn step by step, stoppable;
//! then the reader's text is scored exact, with those layers' untrained maps (zero-shot) and
//! with the trained ones. The trained maps can be downloaded (JSON).

use leptos::html::Canvas;
use leptos::prelude::*;

use super::client::{LmChart, LmClient, LmTransfer};
use super::where_swapped;
use crate::charts::{Series, describe, draw_xy};
use crate::lab::config::{ExperimentConfig, Param, lm_layers_text};
use crate::lab::page::formulas;
use crate::ui::attention::{Figure, chart_error, paced_chart};
use crate::ui::controls::NumberControl;
use crate::ui::export::{download, text_url};

/// One colour per trained layer (the Okabe–Ito palette, readable with every colour vision).
const COLOURS: [[u8; 3]; 6] = [
    [0, 114, 178],
    [213, 94, 0],
    [0, 158, 115],
    [204, 121, 167],
    [86, 180, 233],
    [230, 159, 0],
];

/// The two layers whose lone swap costs most in a complete chart, in order.
fn costliest_two(chart: &LmChart) -> Option<Vec<usize>> {
    if !chart.done || chart.error.is_some() {
        return None;
    }
    let mut bars: Vec<(usize, f64)> = chart
        .bars
        .iter()
        .filter_map(|b| Some((b.layer, b.perplexity.as_ref()?.mean)))
        .collect();
    bars.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut layers: Vec<usize> = bars.iter().take(2).map(|b| b.0).collect();
    layers.sort_unstable();
    (layers.len() == 2).then_some(layers)
}

/// The points of a transfer's curves: the steps done so far, over the steps asked.
fn progress(t: &LmTransfer) -> (usize, usize) {
    let steps = t.job.config.attention.lm_train_steps + 1;
    let done = t.curves.iter().map(|(_, c)| c.len()).sum();
    (done, steps * t.curves.len())
}

fn status(t: &LmTransfer) -> String {
    let (done, all) = progress(t);
    let layers = where_swapped(&t.job.config.attention.lm_train);
    if let Some(failure) = &t.failure {
        return format!("The transfer of {layers} stopped: {failure}");
    }
    if t.stopped {
        return format!("Stopped after {done} of {all} steps (press Train again to start over).");
    }
    match &t.verdict {
        Some(Err(e)) => format!("The trained maps could not be judged: {e}"),
        Some(Ok(_)) if t.judged_again => format!(
            "The maps of {layers}, trained before, judged on this text (their curves' held-out KL \
             is the text they were trained with)."
        ),
        Some(Ok(_)) => {
            let seconds: Vec<f64> = t.trained.iter().map(|l| l.ms / 1e3).collect();
            let (least, most) = seconds
                .iter()
                .fold((f64::INFINITY, 0.0f64), |(a, b), &s| (a.min(s), b.max(s)));
            format!(
                "Trained {layers} on the page's workers ({least:.1} to {most:.1} s a layer, \
                 {:.1} s of work in all), {:.1} s from the request to the verdict.",
                seconds.iter().sum::<f64>(),
                t.wall_ms.unwrap_or(f64::NAN) / 1e3
            )
        }
        None if done < all => format!("Training {layers}: {done} of {all} steps…"),
        None => "Judging the trained maps on your text…".to_string(),
    }
}

/// The verdict's table: the text's perplexity exact, zero-shot and transferred.
fn verdict_view(t: &LmTransfer) -> Option<impl IntoView + use<>> {
    let v = t.verdict.as_ref()?.as_ref().ok()?;
    let layers = where_swapped(&v.layers);
    let row = |name: String, p: f64| {
        view! {
            <tr>
                <th scope="row">{name}</th>
                <td>{format!("{p:.2}")}</td>
                <td>{format!("×{:.2}", p / v.exact)}</td>
            </tr>
        }
    };
    let won = if v.zero_shot > v.exact {
        100.0 * (v.zero_shot - v.transferred) / (v.zero_shot - v.exact)
    } else {
        f64::NAN
    };
    Some(view! {
        <table class="lm-transfer-verdict">
            <caption>{format!("Your text's perplexity with {layers} linear")}</caption>
            <thead><tr><th scope="col">"attention"</th><th scope="col">"perplexity"</th><th scope="col">"against exact"</th></tr></thead>
            <tbody>
                {row("exact (softmax everywhere)".into(), v.exact)}
                {row("zero-shot (untrained maps)".into(), v.zero_shot)}
                {row("after transfer (trained maps)".into(), v.transferred)}
            </tbody>
        </table>
        <p class="caption">{format!(
            "Transfer wins back {won:.0} % of what the zero-shot swap lost. Only the maps were \
             trained: every other weight of the model is as it was (LoLCATs goes on to fine-tune \
             the model with low-rank adapters, which the lab does not do)."
        )}</p>
    })
}

/// The trained maps as JSON, the verdict with them.
fn maps_json(t: &LmTransfer) -> Option<String> {
    #[derive(serde::Serialize)]
    struct Download<'a> {
        model: &'a str,
        seed: u64,
        steps: usize,
        layers: &'a [crate::lab::models::smollm::TrainedLayer],
        verdict: Option<&'a crate::lab::models::smollm::TransferVerdict>,
    }
    let verdict = t.verdict.as_ref()?.as_ref().ok();
    serde_json::to_string(&Download {
        model: "SmolLM2-135M-Instruct Q4_1",
        seed: t.job.config.seed,
        steps: t.job.config.attention.lm_train_steps,
        layers: &t.trained,
        verdict,
    })
    .ok()
}

/// Attention transfer.
///
/// - `config`, `set_config`: the configuration (this writes `lmtrain` and `lmsteps`).
/// - `client`: the language model's workers; its `transfer` signal carries the curves and the
///   verdict, its `chart` the per-layer chart the costliest layers come from.
#[component]
pub(super) fn TransferPanel(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    client: LmClient,
) -> impl IntoView {
    let (layers_error, set_layers_error) = signal(None::<String>);
    let set_layers = move |text: &str| {
        let mut next = config.get_untracked();
        match next.set(Param::LmTrain, text) {
            Ok(()) => {
                set_layers_error.set(None);
                set_config.set(next);
            }
            Err(e) => set_layers_error.set(Some(e.to_string())),
        }
    };
    let costliest = move || client.chart.with(|c| c.as_ref().and_then(costliest_two));
    let canvas: NodeRef<Canvas> = NodeRef::new();
    // Redrawn about fifty times over a training, not at every point: the page's drawing would
    // otherwise take a core from the workers that train. Read in place, never cloned: the
    // transfer carries every layer's maps.
    let revision = Memo::new(move |_| {
        client.transfer.with(|t| {
            t.as_ref().map(|t| {
                let (done, all) = progress(t);
                (t.started.to_bits(), done * 50 / all.max(1), t.is_running())
            })
        })
    });
    let error = paced_chart(move || {
        let canvas = canvas.get()?;
        revision.track();
        client
            .transfer
            .with_untracked(|t| t.as_ref().map(|t| draw(&canvas, t)))
    });
    let running = move || {
        client
            .transfer
            .with(|t| t.as_ref().is_some_and(LmTransfer::is_running))
    };
    let finished = move || {
        client
            .transfer
            .with(|t| t.as_ref().is_some_and(|t| !t.is_running()))
    };
    let attributes = move |f: &dyn Fn(&LmTransfer) -> Option<String>| {
        client.transfer.with(|t| t.as_ref().and_then(f))
    };
    let on_download = move |_| {
        if let Some(json) = client
            .transfer
            .with_untracked(|t| t.as_ref().and_then(maps_json))
        {
            let _ = download(
                "hedgehog-maps-smollm2.json",
                &text_url("application/json", &json),
            );
        }
    };
    view! {
        <Figure
            class="lm-transfer-figure"
            title="Win it back: attention transfer"
            formula=formulas::LM_TRANSFER
            notice="how far the zero-shot swap of a layer moves the perplexity, and how much of it comes back once that layer's feature maps are trained to imitate its softmax attention (Hedgehog; the first stage of LoLCATs)."
        >
            <p class="caption">
                "Each head of the chosen layers gets a pair of learned maps φ_q, φ_k (64 features), "
                "trained by Adam to give the same attention rows as softmax, under the causal mask, on "
                "a 256-token text that ships with the lab (never yours). Your text is held out: the "
                "dots are the KL on it, and the table scores it."
            </p>
            <div class="lm-transfer-controls">
                <label for="lm-control-lmtrain">"layers to transfer: none, 0, 0,1 or 0-3"</label>
                <input
                    id="lm-control-lmtrain"
                    name="lmtrain"
                    type="text"
                    prop:value=move || config.with(|c| match c.attention.lm_train.is_empty() {
                        true => "none".to_string(),
                        false => lm_layers_text(&c.attention.lm_train),
                    })
                    on:change=move |ev| set_layers(&event_target_value(&ev))
                />
                <button
                    type="button"
                    class="lm-transfer-costliest"
                    disabled=move || costliest().is_none()
                    title="the two layers whose lone swap raises the perplexity most in the per-layer chart"
                    on:click=move |_| {
                        if let Some(layers) = costliest() {
                            set_layers(&lm_layers_text(&layers));
                        }
                    }
                >{move || match costliest() {
                    Some(l) => format!("the costliest two ({})", lm_layers_text(&l)),
                    None => "the costliest two (once the per-layer chart is complete)".to_string(),
                }}</button>
                <NumberControl param=Param::LmSteps config set_config id_prefix="lm-"/>
                <Show when=running>
                    <button type="button" class="lm-transfer-stop" on:click=move |_| client.stop_transfer()>"Stop"</button>
                </Show>
                <Show when=finished>
                    <button type="button" class="lm-transfer-again" on:click=move |_| client.train_again()>"Train again"</button>
                </Show>
            </div>
            {move || layers_error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <Show
                when=move || client.transfer.with(Option::is_some)
                fallback=|| view! { <p class="caption">"Choose layers to transfer (layer 0 and 1 cost most on most texts)."</p> }
            >
                <div
                    class="lm-transfer"
                    data-layers=move || attributes(&|t| Some(lm_layers_text(&t.job.config.attention.lm_train)))
                    data-points=move || attributes(&|t| Some(progress(t).0.to_string()))
                    data-done=move || attributes(&|t| Some(matches!(t.verdict, Some(Ok(_))).to_string()))
                    data-stopped=move || attributes(&|t| Some(t.stopped.to_string()))
                    data-failed=move || attributes(&|t| Some(t.failure.is_some().to_string()))
                    data-train-kl=move || attributes(&|t| t.verdict.is_some().then(|| curve_text(t)))
                    data-exact=move || attributes(&|t| Some(t.verdict.as_ref()?.as_ref().ok()?.exact.to_string()))
                    data-zero-shot=move || attributes(&|t| Some(t.verdict.as_ref()?.as_ref().ok()?.zero_shot.to_string()))
                    data-transferred=move || attributes(&|t| Some(t.verdict.as_ref()?.as_ref().ok()?.transferred.to_string()))
                    data-wall-ms=move || attributes(&|t| t.wall_ms.map(|ms| format!("{ms:.0}")))
                    data-train-ms=move || attributes(&|t| Some(t.trained.iter().map(|l| format!("{}:{:.0}", l.layer, l.ms)).collect::<Vec<_>>().join(",")))
                >
                    <p class="caption lm-transfer-status" aria-live="polite">{move || attributes(&|t| Some(status(t)))}</p>
                    <canvas node_ref=canvas class="chart" data-chart="lm-transfer"></canvas>
                    {chart_error(error)}
                    {move || client.transfer.with(|t| t.as_ref().and_then(verdict_view))}
                    <Show when=move || client.transfer.with(|t| t.as_ref().is_some_and(|t| matches!(t.verdict, Some(Ok(_)))))>
                        <button type="button" class="lm-transfer-download" on:click=on_download>"Download the trained maps (JSON)"</button>
                    </Show>
                </div>
            </Show>
        </Figure>
    }
}

/// Every layer's training KL per step, `layer:kl kl …;…` (the test compares it with the
/// command line's curve).
fn curve_text(t: &LmTransfer) -> String {
    t.curves
        .iter()
        .map(|(layer, curve)| {
            let kl: Vec<String> = curve
                .iter()
                .map(|p| format!("{:.9e}", p.train_kl))
                .collect();
            format!("{layer}:{}", kl.join(" "))
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// A layer, its training KL and its held-out KL against the step.
type LayerLines = (usize, Vec<(f64, f64)>, Vec<(f64, f64)>);

/// Draws each layer's KL per row against the step: on the training text (line) and on the
/// reader's held-out text (points).
fn draw(canvas: &web_sys::HtmlCanvasElement, t: &LmTransfer) -> Result<(), String> {
    let lines: Vec<LayerLines> = t
        .curves
        .iter()
        .map(|(layer, curve)| {
            let train = curve.iter().map(|p| (p.step as f64, p.train_kl)).collect();
            let held_out = curve
                .iter()
                .filter_map(|p| Some((p.step as f64, p.eval_kl?)))
                .collect();
            (*layer, train, held_out)
        })
        .collect();
    let labels: Vec<(String, String)> = lines
        .iter()
        .map(|(layer, _, _)| (format!("{layer}: training"), format!("{layer}: your text")))
        .collect();
    let mut series = Vec::new();
    for (i, ((_, train, held_out), (train_label, held_label))) in
        lines.iter().zip(&labels).enumerate()
    {
        let colour = COLOURS[i % COLOURS.len()];
        series.push(Series {
            label: train_label,
            colour,
            points: train,
            dashed: false,
            markers: false,
            line: true,
        });
        series.push(Series {
            label: held_label,
            colour,
            points: held_out,
            dashed: true,
            markers: true,
            line: true,
        });
    }
    let ends: Vec<String> = lines
        .iter()
        .map(|(layer, train, held)| {
            let last = |p: &[(f64, f64)]| p.last().map_or(f64::NAN, |p| p.1);
            let first = |p: &[(f64, f64)]| p.first().map_or(f64::NAN, |p| p.1);
            format!(
                "layer {layer}: training {:.3} → {:.3}, your text {:.3} → {:.3}",
                first(train),
                last(train),
                first(held),
                last(held)
            )
        })
        .collect();
    describe(
        canvas,
        &format!("attention transfer, KL per row: {}", ends.join("; ")),
    );
    if lines.iter().all(|(_, train, _)| train.is_empty()) {
        return Ok(());
    }
    draw_xy(
        canvas,
        "the maps' rows against softmax's, by layer",
        "Adam step",
        "KL(P ‖ P̂) per row",
        &series,
        false,
        true,
    )
    .map_err(|e| e.to_string())
}
