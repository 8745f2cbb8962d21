//! The per-layer chart: the text's perplexity when each layer alone runs the chosen method (the
//! others softmax), its bars drawn as the worker sends them (deepest layer first, the cheapest),
//! against the exact perplexity and the perplexity of the swap in the layers the reader chose.

use leptos::html::Canvas;
use leptos::prelude::*;

use super::client::{LmChart, LmClient};
use super::where_swapped;
use crate::charts::{ErrorBarSeries, Series, describe, draw_xy_mixed};
use crate::lab::config::LM_LAYERS;
use crate::lab::models::smollm::LmReport;
use crate::lab::page::formulas;
use crate::ui::attention::{Figure, chart_error, paced_chart};

/// The swap's colour in this chart (the exact line is black).
const BAR_COLOUR: [u8; 3] = [0, 114, 178];
const CHOSEN_COLOUR: [u8; 3] = [213, 94, 0];

/// What the chart draws: the chart, and the answer of the same text and settings if it is in.
fn drawn(client: LmClient) -> Option<(LmChart, Option<std::rc::Rc<LmReport>>)> {
    let chart = client.chart.get()?;
    let report = client.answer.with(|a| {
        a.as_ref()
            .filter(|a| a.job.text == chart.job.text)
            .and_then(|a| a.report.clone().ok())
    });
    Some((chart, report))
}

/// The chart of `client`'s newest text (the page asks for it once the text's answer is in).
///
/// - `client`: the language model's worker, whose `chart` signal streams the bars.
#[component]
pub(super) fn LayerChart(client: LmClient) -> impl IntoView {
    let canvas: NodeRef<Canvas> = NodeRef::new();
    let error = paced_chart(move || {
        let canvas = canvas.get()?;
        let (chart, report) = drawn(client)?;
        Some(draw(&canvas, &chart, report.as_deref()))
    });
    let status = move || {
        let (chart, _) = drawn(client)?;
        let seconds = |ms: f64| format!("{:.1} s", ms / 1000.0);
        let first = chart
            .first_bar_ms
            .map(|ms| format!("; the first bar after {}", seconds(ms)))
            .unwrap_or_default();
        let draws = if chart.job.method().is_some_and(|m| m.is_random()) {
            format!(", {} draws each", chart.job.config.attention.swap_draws)
        } else {
            String::new()
        };
        let complete = chart.bars.iter().filter(|b| b.complete).count();
        Some(match (&chart.error, chart.done, chart.total_ms) {
            (Some(e), _, _) => format!("The chart stopped: {e}"),
            _ if chart.parts == 0 => {
                "The chart starts once the swap's draws are in (the workers compute them first)."
                    .to_string()
            }
            (None, true, Some(ms)) => {
                format!(
                    "All {} layers in {}{first}{draws}.",
                    chart.bars.len(),
                    seconds(ms)
                )
            }
            // Draws go round by round: every bar has its first draw before any its second.
            _ if chart.bars.len() == LM_LAYERS => format!(
                "Every layer's first draw in after {}{first}; the other draws refine the bars \
                 ({complete} of {LM_LAYERS} complete{draws}).",
                chart.all_bars_ms.map_or_else(String::new, seconds)
            ),
            _ => format!(
                "{} of {LM_LAYERS} layers in{first}{draws}; the rest follow.",
                chart.bars.len()
            ),
        })
    };
    let table = move || {
        let (chart, report) = drawn(client)?;
        let exact = report.map(|r| r.perplexity);
        let mut bars = chart.bars.clone();
        bars.sort_by_key(|b| b.layer);
        let rows = bars
            .into_iter()
            .map(|bar| {
                let (mean, sd) = bar
                    .perplexity
                    .as_ref()
                    .map_or((None, None), |p| (Some(p.mean), Some(p.sd)));
                let cell = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.2}"));
                let ratio = mean
                    .zip(exact)
                    .map_or("–".to_string(), |(m, e)| format!("×{:.3}", m / e));
                view! {
                    <tr data-layer=bar.layer data-perplexity=mean.map(|m| format!("{m:.4}"))>
                        <td>{bar.layer}</td>
                        <td>{cell(mean)}</td>
                        <td>{cell(sd)}</td>
                        <td>{ratio}</td>
                        <td>{bar.failure.clone().unwrap_or_default()}</td>
                    </tr>
                }
            })
            .collect_view();
        Some(view! {
            <details class="lm-layer-numbers">
                <summary>"The numbers"</summary>
                <table>
                    <thead><tr>
                        <th scope="col">"layer"</th>
                        <th scope="col">"perplexity"</th>
                        <th scope="col">"sd over draws"</th>
                        <th scope="col">"against exact"</th>
                        <th scope="col">"failed draws"</th>
                    </tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </details>
        })
    };
    view! {
        <Show when=move || client.chart.with(Option::is_some)>
            <Figure
                class="lm-layers"
                title="Which layers can go linear"
                formula=formulas::LM_PER_LAYER
                notice="which bars stand far above the exact line (the layers the model cannot run without softmax), and how the swap of your chosen layers (the orange line) compares with those layers alone."
            >
                <div
                    class="lm-layer-chart"
                    data-bars=move || client.chart.with(|c| c.as_ref().map_or(0, |c| c.bars.len()))
                    data-parts=move || client.chart.with(|c| c.as_ref().map_or(0, |c| c.parts))
                    data-done=move || client.chart.with(|c| c.as_ref().is_some_and(|c| c.done).to_string())
                    data-first-bar-ms=move || client.chart.with(|c| c.as_ref().and_then(|c| c.first_bar_ms).map(|ms| format!("{ms:.0}")))
                    data-all-bars-ms=move || client.chart.with(|c| c.as_ref().and_then(|c| c.all_bars_ms).map(|ms| format!("{ms:.0}")))
                    data-total-ms=move || client.chart.with(|c| c.as_ref().and_then(|c| c.total_ms).map(|ms| format!("{ms:.0}")))
                >
                    <canvas node_ref=canvas class="chart" data-chart="lm-layers"></canvas>
                </div>
                <p class="caption" aria-live="polite">{status}</p>
                {chart_error(error)}
                {table}
            </Figure>
        </Show>
    }
}

/// Draws the bars in, the exact perplexity and the reader's swap as lines across every layer.
fn draw(
    canvas: &web_sys::HtmlCanvasElement,
    chart: &LmChart,
    report: Option<&LmReport>,
) -> Result<(), String> {
    let label = chart
        .job
        .method()
        .map_or("the method", |m| m.label())
        .to_string();
    let points: Vec<(f64, f64, f64)> = chart
        .bars
        .iter()
        .filter_map(|b| {
            b.perplexity
                .as_ref()
                .map(|p| (b.layer as f64, p.mean, p.sd))
        })
        .collect();
    let across = |y: f64| vec![(0.0, y), ((LM_LAYERS - 1) as f64, y)];
    let exact = report.map(|r| across(r.perplexity)).unwrap_or_default();
    let swap = report.and_then(|r| r.swap.as_ref());
    let chosen = swap
        .and_then(|s| s.perplexity.as_ref())
        .map(|p| across(p.mean))
        .unwrap_or_default();
    let chosen_label = swap.map_or(String::new(), |s| {
        format!("{} in {}", s.label, where_swapped(&s.layers))
    });
    let mut lines = vec![Series {
        label: "exact",
        colour: [0, 0, 0],
        points: &exact,
        dashed: true,
        markers: false,
        line: true,
    }];
    if !chosen.is_empty() {
        lines.push(Series {
            label: &chosen_label,
            colour: CHOSEN_COLOUR,
            points: &chosen,
            dashed: true,
            markers: false,
            line: true,
        });
    }
    let bar_label = format!("{label}, one layer (± sd)");
    let errors = [ErrorBarSeries {
        label: &bar_label,
        colour: BAR_COLOUR,
        points: &points,
    }];
    describe(
        canvas,
        &format!(
            "perplexity with {label} in one layer alone, layer by layer: {}",
            points
                .iter()
                .map(|(l, p, _)| format!("layer {l}: {p:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    draw_xy_mixed(
        canvas,
        "perplexity, one layer swapped",
        ("layer swapped alone", "perplexity"),
        &lines,
        &errors,
        false,
        true,
    )
    .map_err(|e| e.to_string())
}
