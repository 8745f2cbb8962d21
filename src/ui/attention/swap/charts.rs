//! The model swap's charts: the embedding's distance against the budget m, against the cost in
//! multiply-adds, and the Hedgehog maps' training curve.

use leptos::html::Canvas;
use leptos::prelude::*;

use super::summary::methods_of;
use super::{colour_of, label_of};
use crate::charts::{Series, describe, draw_xy};
use crate::lab::config::SWAP_BUDGETS;
use crate::lab::models::protocol::{HedgehogPoint, HedgehogTraining, Origin, SwapReport};
use crate::lab::models::swap_plan::KEEPS_COSINE;
use crate::ui::attention::model_client::SwapCell;
use crate::ui::attention::{TableScroll, paced_chart};

/// Redraws `canvas` with `draw` when anything it reads changes or the window is resized
/// ([`paced_chart`]); the error to show under the chart.
fn redraw(
    canvas: NodeRef<Canvas>,
    draw: impl Fn(&web_sys::HtmlCanvasElement) -> Result<(), String> + 'static,
) -> RwSignal<Option<String>> {
    paced_chart(move || canvas.get().map(|c| draw(&c)))
}

/// `1 − cos` of a report that went through.
fn distance(report: &SwapReport) -> Option<f64> {
    report
        .cosine
        .as_ref()
        .filter(|_| report.failed_draws < report.draws)
        .map(|c| 1.0 - c.mean)
}

/// One method's points: `(x, 1 − cos)` with `x` read from its report.
fn points_of(cells: &[SwapCell], method: &str, x: impl Fn(&SwapReport) -> f64) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = cells
        .iter()
        .filter(|c| c.job.method == method)
        .filter_map(|c| c.report.as_ref().ok())
        .filter_map(|r| Some((x(r), distance(r)?)))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// A line at `1 − cos = 0.01` across `xs`.
fn keeps_line(xs: (f64, f64)) -> Vec<(f64, f64)> {
    vec![(xs.0, 1.0 - KEEPS_COSINE), (xs.1, 1.0 - KEEPS_COSINE)]
}

fn chart_error(error: RwSignal<Option<String>>) -> impl IntoView {
    move || {
        error
            .get()
            .map(|e| view! { <p class="error" role="alert">{e}</p> })
    }
}

/// `1 − cos` against the budget m for every method (a method without m as a dashed level).
///
/// - `cells`: the swap's answers so far.
#[component]
pub(super) fn CosineChart(cells: RwSignal<Vec<SwapCell>, LocalStorage>) -> impl IntoView {
    let canvas: NodeRef<Canvas> = NodeRef::new();
    let span = (
        SWAP_BUDGETS[0] as f64,
        SWAP_BUDGETS[SWAP_BUDGETS.len() - 1] as f64,
    );
    let error = redraw(canvas, move |c| {
        cells.with(|cells| {
            let methods = methods_of(cells);
            let mut tokens = None;
            // (method, drawn as a level, points)
            type Line = (String, bool, Vec<(f64, f64)>);
            let lines: Vec<Line> = methods
                .iter()
                .map(|method| {
                    let points =
                        points_of(cells, method, |r| r.features.map_or(f64::NAN, |m| m as f64));
                    if let Some(r) = cells.iter().find_map(|c| c.report.as_ref().ok()) {
                        tokens = Some(r.tokens);
                    }
                    match points.as_slice() {
                        // No budget: its one value across the axis.
                        [(x, y)] if x.is_nan() => {
                            (method.clone(), true, vec![(span.0, *y), (span.1, *y)])
                        }
                        _ => (method.clone(), false, points),
                    }
                })
                .collect();
            let keeps = keeps_line(span);
            let mut series: Vec<Series> = lines
                .iter()
                .map(|(method, dashed, points)| Series {
                    label: label_of(method),
                    colour: colour_of(method),
                    points,
                    dashed: *dashed,
                    markers: !*dashed,
                    line: true,
                })
                .collect();
            series.push(Series {
                label: "cosine 0.99",
                colour: [150, 150, 150],
                points: &keeps,
                dashed: true,
                markers: false,
                line: true,
            });
            let summary = lines
                .iter()
                .map(|(m, _, p)| {
                    format!(
                        "{m}: {}",
                        p.iter()
                            .map(|(x, y)| format!("{x:.0} → {y:.2e}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            describe(
                c,
                &format!("1 − cosine of the sentence embedding against m: {summary}"),
            );
            draw_xy(
                c,
                &format!(
                    "embedding distance against m (L = {} tokens)",
                    tokens.map_or("?".to_string(), |t| t.to_string())
                ),
                "random features m",
                "1 − cos(e, ê)",
                &series,
                true,
                true,
            )
            .map_err(|e| e.to_string())
        })
    });
    view! {
        <canvas node_ref=canvas class="chart" data-chart="swap-cosine"></canvas>
        {chart_error(error)}
    }
}

/// `1 − cos` against the multiply-adds of attention in the swapped heads, every method at every
/// budget, with softmax's cost as a vertical dashed line.
///
/// - `cells`: the swap's answers so far.
#[component]
pub(super) fn CostChart(cells: RwSignal<Vec<SwapCell>, LocalStorage>) -> impl IntoView {
    let canvas: NodeRef<Canvas> = NodeRef::new();
    let error = redraw(canvas, move |c| {
        cells.with(|cells| {
            let methods = methods_of(cells);
            let lines: Vec<(String, Vec<(f64, f64)>)> = methods
                .iter()
                .map(|m| (m.clone(), points_of(cells, m, |r| r.cost.attention_multiply_adds)))
                .collect();
            let reports: Vec<&SwapReport> =
                cells.iter().filter_map(|c| c.report.as_ref().ok()).collect();
            let softmax = reports.first().map_or(f64::NAN, |r| r.cost.softmax_multiply_adds);
            let ys: Vec<f64> = lines.iter().flat_map(|(_, p)| p.iter().map(|p| p.1)).filter(|y| *y > 0.0).collect();
            let (low, high) = ys.iter().fold((1.0 - KEEPS_COSINE, 1.0 - KEEPS_COSINE), |(l, h), &y| (l.min(y), h.max(y)));
            let softmax_line = vec![(softmax, low), (softmax, high)];
            let mut series: Vec<Series> = lines
                .iter()
                .map(|(method, points)| Series {
                    label: label_of(method),
                    colour: colour_of(method),
                    points,
                    dashed: false,
                    markers: true,
                    line: true,
                })
                .collect();
            series.push(Series {
                label: "softmax's cost",
                colour: [90, 90, 90],
                points: &softmax_line,
                dashed: true,
                markers: false,
                line: true,
            });
            let tokens = reports.first().map_or(0, |r| r.tokens);
            let timing = reports
                .iter()
                .map(|r| format!("{}{}: {:.0} ms", r.method, super::at_m(r), r.cost.forward_ms))
                .collect::<Vec<_>>()
                .join(", ");
            describe(
                c,
                &format!("1 − cosine against attention multiply-adds per forward; softmax {softmax:.2e}; forward times {timing}"),
            );
            draw_xy(
                c,
                &format!("distance against cost (L = {tokens} tokens)"),
                "multiply-adds of attention per forward",
                "1 − cos(e, ê)",
                &series,
                true,
                true,
            )
            .map_err(|e| e.to_string())
        })
    });
    let times = move || {
        cells.with(|cells| {
            let reports: Vec<&SwapReport> =
                cells.iter().filter_map(|c| c.report.as_ref().ok()).collect();
            reports.first().map(|first| {
                let rows = reports
                    .iter()
                    .map(|r| {
                        view! {
                            <tr data-method=r.method.clone()>
                                <td>{r.label.clone()}{super::at_m(r)}</td>
                                <td class="num">{format!("{:.2e}", r.cost.attention_multiply_adds)}</td>
                                <td class="num">{format!("{:.0}", r.cost.forward_ms)}</td>
                                <td class="num">{r.cosine.as_ref().map_or("–".to_string(), |c| format!("{:.4}", c.mean))}</td>
                            </tr>
                        }
                    })
                    .collect_view();
                let caption = format!(
                    "measured in the model worker at L = {} tokens: the exact forward {:.0} ms, softmax in the swapped heads {:.2e} multiply-adds, the whole exact forward {:.2e}",
                    first.tokens, first.cost.exact_forward_ms, first.cost.softmax_multiply_adds, first.cost.model_multiply_adds
                );
                view! {
                    <TableScroll label="every run's cost and time">
                        <table class="leaderboard swap-times">
                            <caption>{caption}</caption>
                            <thead><tr><th>"method"</th><th>"attention multiply-adds"</th><th>"forward (ms)"</th><th>"cosine"</th></tr></thead>
                            <tbody>{rows}</tbody>
                        </table>
                    </TableScroll>
                }
            })
        })
    };
    view! {
        <canvas node_ref=canvas class="chart" data-chart="swap-cost"></canvas>
        {chart_error(error)}
        <details class="swap-times-details">
            <summary>"every run's cost and time"</summary>
            {times}
        </details>
    }
}

/// The Hedgehog maps' training curve: KL(P ‖ P̂) on the training text and on the held-out one.
///
/// - `curve`: the points so far; `training`: the finished training, or why it failed.
#[component]
pub(super) fn HedgehogCurve(
    curve: RwSignal<Vec<HedgehogPoint>, LocalStorage>,
    training: RwSignal<Option<Result<HedgehogTraining, String>>, LocalStorage>,
) -> impl IntoView {
    let canvas: NodeRef<Canvas> = NodeRef::new();
    let error = redraw(canvas, move |c| {
        curve.with(|curve| {
            let train: Vec<(f64, f64)> = curve.iter().map(|p| (p.step as f64, p.train_kl)).collect();
            let eval: Vec<(f64, f64)> = curve
                .iter()
                .filter_map(|p| Some((p.step as f64, p.eval_kl?)))
                .collect();
            let series = [
                Series { label: "training text", colour: [20, 20, 20], points: &train, dashed: false, markers: false, line: true },
                Series { label: "held-out text", colour: [200, 80, 0], points: &eval, dashed: false, markers: true, line: true },
            ];
            describe(
                c,
                &format!(
                    "Hedgehog training: KL on the training text {} → {}, on the held-out text {} → {}",
                    train.first().map_or(f64::NAN, |p| p.1),
                    train.last().map_or(f64::NAN, |p| p.1),
                    eval.first().map_or(f64::NAN, |p| p.1),
                    eval.last().map_or(f64::NAN, |p| p.1)
                ),
            );
            if train.is_empty() {
                return Ok(());
            }
            draw_xy(c, "Hedgehog maps' training (mean over the 72 heads)", "Adam step", "KL(P ‖ P̂) per row", &series, false, true)
                .map_err(|e| e.to_string())
        })
    });
    let caption = move || {
        training.with(|t| match t {
            Some(Ok(t)) => {
                let first = t.curve.first();
                let last = t.curve.last();
                let seconds = t.train_ms / 1e3;
                let when = match t.origin {
                    Origin::Kept => format!(
                        "kept from an earlier visit (trained in {seconds:.1} s then; checked against this build and model)"
                    ),
                    Origin::Shipped => format!(
                        "shipped with the lab (trained by its build in {seconds:.1} s on the same text and seed; every head's loss checked here against this model)"
                    ),
                    Origin::Computed => format!("trained in the model worker in {seconds:.1} s"),
                };
                format!(
                    "{when}: {} Adam steps on a {}-token text, every head's pair of maps (n = {}, so {} features); KL per row on the held-out {}-token text {:.3} → {:.3}.",
                    t.job.steps,
                    t.train_tokens,
                    t.job.half_features,
                    2 * t.job.half_features,
                    t.eval_tokens,
                    first.and_then(|p| p.eval_kl).unwrap_or(f64::NAN),
                    last.and_then(|p| p.eval_kl).unwrap_or(f64::NAN),
                )
            }
            Some(Err(e)) => format!("the training failed: {e}"),
            None => {
                let steps = curve.with(|c| c.last().map(|p| p.step));
                match steps {
                    Some(s) => format!("training… step {s}"),
                    None => "the maps train after the random methods' swaps (set the steps to 0 to leave Hedgehog out)".to_string(),
                }
            }
        })
    };
    view! {
        <canvas node_ref=canvas class="chart" data-chart="hedgehog"></canvas>
        <p class="caption hedgehog-caption" data-trained=move || training.with(|t| matches!(t, Some(Ok(_))).to_string())
            data-train-kept=move || training.with(|t| matches!(t, Some(Ok(t)) if t.origin == Origin::Kept).to_string())
            data-train-origin=move || training.with(|t| t.as_ref().and_then(|t| t.as_ref().ok()).map(|t| t.origin.key()))
            data-train-ms=move || training.with(|t| match t {
                Some(Ok(t)) => Some(format!("{:.0}", t.train_ms)),
                _ => None,
            })>{caption}</p>
        {chart_error(error)}
    }
}
