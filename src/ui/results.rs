//! The charts, the results table and the formulas beside them.

use std::sync::Arc;

use leptos::ev;
use leptos::html::Canvas;
use leptos::prelude::*;

use crate::charts::{
    BoxplotEntry, ScatterLayout, TheoremEntry, draw_boxplots, draw_lemma_3_2, draw_mse_curves,
    draw_scatter, draw_theorem_3_3, estimator_css_color,
};
use crate::math::config::OmegaMode;
use crate::math::experiment::{DatasetMetrics, ExperimentResult, MseCurve};
use crate::math::tasks::Part;

use super::{ScatterView, Shown};
use crate::math::heuristics::AHeuristic;
use crate::math::stats::format_from_log;

/// Text of a number given as its natural log, for the table: scientific notation that
/// `parseFloat` reads back, with the exponent beyond f64's range when needed.
fn number_text(ln_value: f64) -> String {
    format_from_log(ln_value, 4)
}

/// The canvases of the page.
#[derive(Clone, Copy)]
struct Canvases {
    scatter: [NodeRef<Canvas>; 3],
    mse: NodeRef<Canvas>,
    rel: NodeRef<Canvas>,
    curves: NodeRef<Canvas>,
    lemma: NodeRef<Canvas>,
    theorem: NodeRef<Canvas>,
}

/// Which of the three scatter canvases shows `heuristic`.
fn scatter_slot(heuristic: AHeuristic) -> usize {
    AHeuristic::ALL
        .iter()
        .position(|h| *h == heuristic)
        .unwrap_or(0)
}

/// Figure 1's panels and the two bounds drawn from the scatter dataset.
fn draw_scatter_part(
    view: &ScatterView,
    canvases: Canvases,
    probe: Option<usize>,
    layouts: StoredValue<[Option<ScatterLayout>; 3]>,
) -> Result<(), String> {
    let mut drawn = [None; 3];
    for series in &view.series {
        let slot = scatter_slot(series.estimates.estimator.heuristic);
        if let Some(canvas) = canvases.scatter[slot].get() {
            drawn[slot] = Some(draw_scatter(&canvas, series, probe).map_err(|e| e.to_string())?);
        }
    }
    layouts.set_value(drawn);
    let m = view.config.m;
    if let Some(canvas) = canvases.lemma.get() {
        let radii: Vec<_> = view
            .series
            .iter()
            .map(|s| {
                (
                    s.estimates.estimator.heuristic,
                    s.estimates.estimator.label(),
                    s.estimates.data_radius,
                )
            })
            .collect();
        draw_lemma_3_2(&canvas, m, &radii).map_err(|e| e.to_string())?;
    }
    if let Some(canvas) = canvases.theorem.get() {
        let entries: Vec<TheoremEntry> = view
            .series
            .iter()
            .map(|s| TheoremEntry {
                heuristic: s.estimates.estimator.heuristic,
                label: s.estimates.estimator.label(),
                inputs: s.estimates.theorem_3_3.clone(),
                observed_max_rel_err: s.metrics.max_rel_err,
                log_predicted_max_rel_rmse: s.estimates.max_log_relative_rmse(),
            })
            .collect();
        draw_theorem_3_3(&canvas, m, &entries).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Figures 2 and 3.
fn draw_boxplot_part(result: &ExperimentResult, canvases: Canvases) -> Result<(), String> {
    let entries = |metric: fn(&DatasetMetrics) -> f64, with_theory: bool| -> Vec<BoxplotEntry> {
        result
            .summaries
            .iter()
            .map(|s| BoxplotEntry {
                label: s.estimator.label(),
                heuristic: s.estimator.heuristic,
                values: s
                    .per_dataset
                    .iter()
                    .map(|d| metric(d) / std::f64::consts::LN_10)
                    .collect(),
                theory: with_theory
                    .then_some(s.log_median_theoretical_mse / std::f64::consts::LN_10),
            })
            .collect()
    };
    let datasets = result.config.datasets;
    if let Some(canvas) = canvases.mse.get() {
        draw_boxplots(
            &canvas,
            &format!("MSE per dataset ({datasets} datasets)"),
            "mean squared error (log scale)",
            &entries(|m| m.log_mse, true),
        )
        .map_err(|e| e.to_string())?;
    }
    if let Some(canvas) = canvases.rel.get() {
        draw_boxplots(
            &canvas,
            &format!("max relative error per dataset ({datasets} datasets)"),
            "max |ŜM − SM| / SM (log scale)",
            &entries(|m| m.log_max_rel_err, false),
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Figure 1 (one scatter panel per estimator), Figures 2–3 (boxplots) and the theory charts.
/// Each part is drawn as soon as its data arrives, in its own effect (so in its own browser
/// task), and the last results stay on screen until newer ones replace them.
///
/// - `scatter`: the scatter dataset's estimates (arrive first).
/// - `summaries`: the whole experiment, once the boxplot datasets are in.
/// - `curves`: MSE against m for the same configuration.
/// - `on_drawn`: told `(generation, part, outcome)` after each part is drawn.
/// - `probe`: the pair to ring on the scatter panels.
/// - `on_pick`: told the index of a scatter point the user clicked.
#[component]
pub fn Charts(
    scatter: ReadSignal<Option<Shown<ScatterView>>>,
    summaries: ReadSignal<Option<Shown<ExperimentResult>>>,
    curves: ReadSignal<Option<Shown<Vec<MseCurve>>>>,
    on_drawn: Callback<(u64, Part, Result<(), String>)>,
    probe: Signal<Option<usize>>,
    on_pick: Callback<usize>,
) -> impl IntoView {
    let layouts = StoredValue::new([None::<ScatterLayout>; 3]);
    let canvases = Canvases {
        scatter: std::array::from_fn(|_| NodeRef::new()),
        mse: NodeRef::new(),
        rel: NodeRef::new(),
        curves: NodeRef::new(),
        lemma: NodeRef::new(),
        theorem: NodeRef::new(),
    };
    let Canvases {
        scatter: scatter_canvases,
        mse: mse_canvas,
        rel: rel_canvas,
        ..
    } = canvases;
    let (resized, set_resized) = signal(0u32);
    let listener = window_event_listener(ev::resize, move |_| set_resized.update(|n| *n += 1));
    on_cleanup(move || listener.remove());

    Effect::new(move |_| {
        resized.track();
        let Some(shown) = scatter.get() else {
            return;
        };
        let outcome = draw_scatter_part(&shown.value, canvases, probe.get(), layouts);
        on_drawn.run((shown.generation, Part::Scatter, outcome));
    });
    Effect::new(move |_| {
        resized.track();
        let Some(shown) = summaries.get() else {
            return;
        };
        let outcome = draw_boxplot_part(&shown.value, canvases);
        on_drawn.run((shown.generation, Part::Boxplots, outcome));
    });
    Effect::new(move |_| {
        resized.track();
        let Some(shown) = curves.get() else {
            return;
        };
        let outcome = match canvases.curves.get() {
            Some(canvas) => draw_mse_curves(&canvas, &shown.value).map_err(|e| e.to_string()),
            None => Ok(()),
        };
        on_drawn.run((shown.generation, Part::Curves, outcome));
    });

    let panels = AHeuristic::ALL
        .into_iter()
        .zip(scatter_canvases)
        .map(|(heuristic, canvas)| {
            let pick = move |ev: ev::MouseEvent| {
                let slot = scatter_slot(heuristic);
                let picked = scatter.with_untracked(|r| {
                    let series = r
                        .as_ref()?
                        .value
                        .series
                        .iter()
                        .find(|s| s.estimates.estimator.heuristic == heuristic)?;
                    layouts.with_value(|l| l[slot])?.nearest_pair(
                        series,
                        ev.offset_x() as f64,
                        ev.offset_y() as f64,
                    )
                });
                if let Some(index) = picked {
                    on_pick.run(index);
                }
            };
            let shown = move || {
                scatter.with(|r| {
                    r.as_ref().is_some_and(|r| {
                        r.value
                            .series
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
                        title="click a point to probe that pair"
                        data-chart=format!("scatter-{}", heuristic.url_name())
                        on:click=pick
                    ></canvas>
                </div>
            }
        })
        .collect_view();

    let scatter_caption = move || {
        scatter.with(|r| {
            r.as_ref().map(|r| {
                let c = &r.value.config;
                format!(
                    "Figure 1: one dataset of n = {} pairs (d = {}, m = {}); each dot is one pair, the line is ŜM = SM. Click a dot to probe that pair below.",
                    c.n, c.d, c.m
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
                "the furthest value within 1.5 IQR; circles are values beyond. The black diamond is Lemma 3.1's "
                "prediction: the median over the datasets of each dataset's expected MSE (an arrow with its value "
                "when it lies beyond the axis)."
            </p>
        </section>
        <section class="figure theory">
            <h2>"Theory beside the measurement"</h2>
            <div class="theory-row">
                <div class="panel"><canvas node_ref=canvases.curves class="chart theory-chart" data-chart="mse-vs-m"></canvas></div>
                <div class="explain">
                    <h3>"MSE falls as 1/m"</h3>
                    <p class="formula-block">"MSE(x, y) = (1/2m) · e^{|z|²} · SM(x, y)² · (1 − e^{−|z|²})²,  z = Ax + A⁻ᵀy"</p>
                    <p>
                        "Lemma 3.1 (hyperbolic form; the positive form has 1/m and the first power). The line is its mean over the "
                        "first 32 pairs of the scatter dataset; the points are the measured MSE on the same pairs, the mean of 4 "
                        "independent draws of ω with ±1 standard error. Where |z|² is large, the MSE is dominated by draws too rare "
                        "to appear in a few repeats, and the points fall far below the line: the formula is right, the sample is not "
                        "big enough to see it."
                    </p>
                </div>
            </div>
            <div class="theory-row">
                <div class="panel"><canvas node_ref=canvases.lemma class="chart theory-chart" data-chart="lemma-3-2"></canvas></div>
                <div class="explain">
                    <h3>"A bound from the size of the data"</h3>
                    <p class="formula-block">"√MSE / SM ≤ W(r) / √(2m),  W(r) = e^{2r²} (1 − e^{−4r²})"</p>
                    <p>
                        "Lemma 3.2, corrected: the seed paper prints 1 − e^{4r²}, which would make the bound negative. It holds for "
                        "HCEXP on any region where |Ax| ≤ r and |A⁻ᵀy| ≤ r, because the relative RMSE grows with |z|² ≤ (2r)². "
                        "The vertical lines mark each estimator's r on the scatter dataset: a good A keeps r small, and the bound "
                        "grows like e^{2r²}."
                    </p>
                </div>
            </div>
            <div class="theory-row">
                <div class="panel"><canvas node_ref=canvases.theorem class="chart theory-chart" data-chart="theorem-3-3"></canvas></div>
                <div class="explain">
                    <h3>"A bound that holds with probability p"</h3>
                    <p class="formula-block">"r = max(√(λ_Ax χ²_d(q)) + |Aμ_x|, √(λ_A⁻ᵀy χ²_d(q)) + |A⁻ᵀμ_y|),  q = p^{1/(2s)}"</p>
                    <p>
                        "Theorem 3.3: if queries and keys are Gaussian, then with probability at least p every one of the s pairs has "
                        "relative RMSE at most W(r)/√(2m). λ_Ax = maxᵢ aᵢ² σ²_x,i and λ_A⁻ᵀy = maxᵢ σ²_y,i / aᵢ²; the χ² quantile "
                        "comes from statrs. Computed from the scatter dataset's sample statistics it is an approximation. Dashed: the "
                        "largest √MSE/SM that Lemma 3.1 predicts on the data; dots: the largest relative error actually observed. "
                        "Above 1 (shaded) the bound says nothing."
                    </p>
                </div>
            </div>
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
                            <td class="num" data-metric="median-mse">{number_text(s.log_median_mse)}</td>
                            <td class="num" data-metric="median-max-rel-err">{number_text(s.log_median_max_rel_err)}</td>
                            <td class="num" data-metric="scatter-mse">{number_text(scatter.metrics.log_mse)}</td>
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
