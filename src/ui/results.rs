//! The charts, the results table and the formulas beside them.

use std::sync::Arc;

use leptos::ev;
use leptos::html::Canvas;
use leptos::prelude::*;

use crate::charts::{BoxplotEntry, draw_boxplots, draw_scatter, estimator_css_color};
use crate::math::config::OmegaMode;
use crate::math::experiment::{DatasetMetrics, ExperimentResult};
use crate::math::heuristics::AHeuristic;

/// Text of a number for the table: scientific notation that `parseFloat` reads back.
fn number_text(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.4e}")
    } else {
        "out of range".to_string()
    }
}

fn draw_all(
    result: &ExperimentResult,
    scatter_canvases: &[NodeRef<Canvas>; 3],
    mse_canvas: NodeRef<Canvas>,
    rel_canvas: NodeRef<Canvas>,
) -> Result<(), String> {
    for series in &result.scatter {
        let slot = AHeuristic::ALL
            .iter()
            .position(|h| *h == series.estimates.estimator.heuristic)
            .unwrap_or(0);
        if let Some(canvas) = scatter_canvases[slot].get() {
            draw_scatter(&canvas, series).map_err(|e| e.to_string())?;
        }
    }
    let entries = |metric: fn(&DatasetMetrics) -> f64| -> Vec<BoxplotEntry> {
        result
            .summaries
            .iter()
            .map(|s| BoxplotEntry {
                label: s.estimator.label(),
                heuristic: s.estimator.heuristic,
                values: s.per_dataset.iter().map(metric).collect(),
            })
            .collect()
    };
    let datasets = result.config.datasets;
    if let Some(canvas) = mse_canvas.get() {
        draw_boxplots(
            &canvas,
            &format!("MSE per dataset ({datasets} datasets)"),
            "mean squared error (log scale)",
            &entries(|m| m.mse),
        )
        .map_err(|e| e.to_string())?;
    }
    if let Some(canvas) = rel_canvas.get() {
        draw_boxplots(
            &canvas,
            &format!("max relative error per dataset ({datasets} datasets)"),
            "max |ŜM − SM| / SM (log scale)",
            &entries(|m| m.max_rel_err),
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Figure 1 (one scatter panel per estimator) and Figures 2–3 (boxplots).
///
/// - `result`: the latest finished experiment.
/// - `generation`: the request that `result` answers.
/// - `on_drawn`: told `(generation, outcome)` after every chart is drawn.
#[component]
pub fn Charts(
    result: Memo<Option<Arc<ExperimentResult>>>,
    generation: Signal<Option<u64>>,
    on_drawn: Callback<(u64, Result<(), String>)>,
) -> impl IntoView {
    let scatter_canvases: [NodeRef<Canvas>; 3] = std::array::from_fn(|_| NodeRef::new());
    let mse_canvas = NodeRef::<Canvas>::new();
    let rel_canvas = NodeRef::<Canvas>::new();
    let (resized, set_resized) = signal(0u32);
    let listener = window_event_listener(ev::resize, move |_| set_resized.update(|n| *n += 1));
    on_cleanup(move || listener.remove());

    Effect::new(move |_| {
        resized.track();
        let Some(result) = result.get() else {
            return;
        };
        let Some(ticket) = generation.get_untracked() else {
            return;
        };
        let outcome = draw_all(&result, &scatter_canvases, mse_canvas, rel_canvas);
        on_drawn.run((ticket, outcome));
    });

    let panels = AHeuristic::ALL
        .into_iter()
        .zip(scatter_canvases)
        .map(|(heuristic, canvas)| {
            let shown = move || {
                result.with(|r| {
                    r.as_ref().is_some_and(|r| {
                        r.scatter
                            .iter()
                            .any(|s| s.estimates.estimator.heuristic == heuristic)
                    })
                })
            };
            view! {
                <div class="panel" style:display=move || if shown() { "block" } else { "none" }>
                    <canvas
                        node_ref=canvas
                        class="chart scatter"
                        data-chart=format!("scatter-{}", heuristic.url_name())
                    ></canvas>
                </div>
            }
        })
        .collect_view();

    let scatter_caption = move || {
        result.with(|r| {
            r.as_ref().map(|r| {
                format!(
                    "Figure 1: one dataset of n = {} pairs (d = {}, m = {}); each dot is one pair, the line is ŜM = SM.",
                    r.config.n, r.config.d, r.config.m
                )
            })
        })
    };

    view! {
        <section class="figure">
            <h2>"True against estimated softmax kernel"</h2>
            <div class="scatter-grid">{panels}</div>
            <p class="caption">{scatter_caption}</p>
        </section>
        <section class="figure">
            <h2>"Errors over many random datasets"</h2>
            <div class="box-grid">
                <div class="panel"><canvas node_ref=mse_canvas class="chart boxplot" data-chart="mse"></canvas></div>
                <div class="panel"><canvas node_ref=rel_canvas class="chart boxplot" data-chart="max-rel-err"></canvas></div>
            </div>
            <p class="caption">
                "Figures 2 and 3: each dot is one dataset's MSE (mean over its pairs of (ŜM − SM)²) or max relative error "
                "(max over its pairs of |ŜM − SM| / SM). Boxes span the quartiles with the median inside; whiskers reach "
                "the furthest value within 1.5 IQR; circles are values beyond."
            </p>
        </section>
    }
}

/// The medians behind the boxplots, one row per estimator.
///
/// - `result`: the latest finished experiment.
#[component]
pub fn ResultsTable(result: Memo<Option<Arc<ExperimentResult>>>) -> impl IntoView {
    move || {
        result.get().map(|r| {
            let c = &r.config;
            let caption = format!(
                "Medians over {} datasets of {} pairs · d = {} · m = {} · {} features · ω {}",
                c.datasets,
                c.pairs,
                c.d,
                c.m,
                if c.hyperbolic { "hyperbolic (cosh)" } else { "positive (exp)" },
                match c.omega {
                    OmegaMode::Shared => "shared by each dataset's pairs",
                    OmegaMode::Fresh => "fresh for every pair",
                }
            );
            let rows = r
                .summaries
                .iter()
                .zip(&r.scatter)
                .map(|(s, scatter)| {
                    let id = s.estimator.id();
                    let swatch = format!("background:{}", estimator_css_color(s.estimator.heuristic));
                    view! {
                        <tr data-estimator=id>
                            <td><span class="swatch" style=swatch></span>{s.estimator.label()}</td>
                            <td class="formula">{s.estimator.heuristic.formula()}</td>
                            <td class="num" data-metric="median-mse">{number_text(s.median_mse)}</td>
                            <td class="num" data-metric="median-max-rel-err">{number_text(s.median_max_rel_err)}</td>
                            <td class="num" data-metric="scatter-mse">{number_text(scatter.metrics.mse)}</td>
                            <td class="num" data-metric="clamped">{s.clamped}</td>
                        </tr>
                    }
                })
                .collect_view();
            let paired = paired_comparison(&r);
            view! {
                <section class="figure">
                    <h2>"Results"</h2>
                    <table class="results-table">
                        <caption>{caption}</caption>
                        <thead>
                            <tr>
                                <th>"estimator"</th>
                                <th>"diagonal A"</th>
                                <th>"median MSE"</th>
                                <th>"median max rel. error"</th>
                                <th>"MSE on the scatter dataset"</th>
                                <th title="diagonal entries of A clamped into [0.001, 1000], summed over the boxplot datasets">"clamped a_i"</th>
                            </tr>
                        </thead>
                        <tbody>{rows}</tbody>
                    </table>
                    {paired.map(|text| view! { <p class="caption">{text}</p> })}
                </section>
            }
        })
    }
}

/// "Variance-adjusted A has the lower MSE in k of N datasets", when both heuristics ran.
fn paired_comparison(r: &ExperimentResult) -> Option<String> {
    let find = |h: AHeuristic| r.summaries.iter().find(|s| s.estimator.heuristic == h);
    let mean = find(AHeuristic::MeanOnly)?;
    let var = find(AHeuristic::VarianceAdjusted)?;
    let wins = mean
        .per_dataset
        .iter()
        .zip(&var.per_dataset)
        .filter(|(m, v)| v.mse < m.mse)
        .count();
    Some(format!(
        "Paired by dataset (same data and ω): variance-adjusted A has the lower MSE in {wins} of {} datasets.",
        var.per_dataset.len()
    ))
}

/// The estimators' definitions, beside the charts.
#[component]
pub fn Formulas() -> impl IntoView {
    view! {
        <section class="figure formulas">
            <h2>"What is computed"</h2>
            <dl>
                <dt>"Softmax kernel"</dt>
                <dd>"SM(x, y) = exp(x·y), for queries x and keys y in ℝ^d."</dd>
                <dt>"CEXP / HCEXP with a real diagonal A"</dt>
                <dd>
                    "ŜM(x, y) = (1/m) · exp(−(|Ax|² + |A⁻ᵀy|²)/2) · Σₖ f(ωₖ·z), with z = Ax + A⁻ᵀy, "
                    "ωₖ ~ N(0, I_d), f = exp (positive, CEXP) or f = cosh (hyperbolic, HCEXP). "
                    "Since (Ax)·(A⁻ᵀy) = x·y it is unbiased for every invertible A; A = I gives PRF (Performer)."
                </dd>
                <dt>"MSE (seed paper, Lemma 3.1)"</dt>
                <dd>
                    "CEXP: (1/m) e^{|z|²} SM² (1 − e^{−|z|²}); HCEXP: (1/2m) e^{|z|²} SM² (1 − e^{−|z|²})². "
                    "A good A makes |z| small on the data."
                </dd>
                <dt>"Choosing A from sample means μ and variances σ²"</dt>
                <dd>
                    "mean-only: aᵢ = √(|μ_y,i| / |μ_x,i|); variance-adjusted (Lemma 3.4): "
                    "aᵢ = ((σ²_y,i + μ²_y,i) / (σ²_x,i + μ²_x,i))^¼, the minimiser of E|Ax|² + E|A⁻ᵀy|². "
                    "Entries are clamped into [0.001, 1000] (a zero mean would make mean-only A infinite)."
                </dd>
                <dt>"Data (seed paper, section 4)"</dt>
                <dd>
                    "μ_x,j, μ_y,j ~ Laplace(0, b); σ²_x,j ~ Gamma(k_x, 1), σ²_y,j ~ Gamma(k_y, 1); "
                    "xᵢ ~ N(μ_x, diag σ²_x), yᵢ ~ N(μ_y, diag σ²_y), rescaled so the mean norms are the targets. "
                    "Only the diagonal pairs SM(xᵢ, yᵢ) are estimated; A uses the rescaled samples' statistics."
                </dd>
            </dl>
        </section>
    }
}
