//! The kernel view's leaderboard: one row per estimator, sorted by median MSE, with what
//! each fitted and the paired comparison of the two heuristics.

use std::sync::Arc;

use leptos::prelude::*;

use super::number_text;
use crate::charts::estimator_css_color;
use crate::lab::config::OmegaMode;
use crate::lab::kernel::experiment::{ExperimentResult, ScatterSeries};
use crate::numerics::stats::order_by_key;
use crate::ui::attention::TableScroll;

/// What an estimator fitted on the scatter dataset, in words: the range of A's diagonal,
/// θ, α, and the optimiser's iterations and gain.
fn fitted_text(series: &ScatterSeries) -> String {
    let fit = &series.estimates.fit;
    let mut parts = Vec::new();
    let (lo, hi) = fit
        .a
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), a| {
            (lo.min(*a), hi.max(*a))
        });
    if let Some(dense) = &fit.dense {
        parts.push(format!(
            "dense P, {:.0} % of Σ|P_ij| off the diagonal",
            100.0 * dense.off_diagonal_share()
        ));
    } else if lo.is_finite() && (lo != 1.0 || hi != 1.0) {
        parts.push(format!("a ∈ [{lo:.3}, {hi:.3}]"));
    } else {
        parts.push("A = I".to_string());
    }
    if fit.theta != 0.0 {
        parts.push(format!("θ = {:.3}", fit.theta));
    }
    if fit.alpha != 0.0 {
        parts.push(format!("α = {:.4}", fit.alpha));
    }
    if let Some(report) = fit.optimiser {
        let ratio = (report.log_objective_end - report.log_objective_start).exp();
        parts.push(format!(
            "{} iterations, objective × {:.3} of its start",
            report.iterations, ratio
        ));
    }
    parts.join(", ")
}

/// The leaderboard: one row per estimator, sorted by median MSE, with what each fitted.
///
/// - `result`: the latest finished experiment.
#[component]
pub fn ResultsTable(result: Signal<Option<Arc<ExperimentResult>>>) -> impl IntoView {
    move || {
        result.get().map(|r| {
            let c = &r.config;
            let preview = c
                .preview_of
                .map(|whole| {
                    format!(
                        "A preview while the slider moves ({} of {} datasets; the whole answer follows). ",
                        c.datasets, whole.datasets
                    )
                })
                .unwrap_or_default();
            let caption = format!(
                "{preview}Sorted by median MSE over {} datasets of {} pairs · d = {} · m = {} · {} ω {}",
                c.datasets,
                c.pairs,
                c.d,
                c.m,
                c.coupling.label(),
                match c.omega {
                    OmegaMode::Shared => "shared by each dataset's pairs",
                    OmegaMode::Fresh => "fresh for every pair",
                }
            );
            let medians: Vec<f64> = r.summaries.iter().map(|s| s.log_median_mse).collect();
            let order = order_by_key(&medians);
            let rows = order
                .into_iter()
                .enumerate()
                .filter_map(|(rank, i)| {
                    let (s, scatter) = (r.summaries.get(i)?, r.scatter.get(i)?);
                    let id = s.estimator.id();
                    let swatch = format!("background:{}", estimator_css_color(s.estimator));
                    Some(view! {
                        <tr data-estimator=id>
                            <td class="num">{rank + 1}</td>
                            <td><span class="swatch" style=swatch></span>{s.estimator.label()}</td>
                            <td class="fitted" title=s.estimator.info().docs().formula>{fitted_text(scatter)}</td>
                            <td class="num" data-metric="median-mse">{number_text(s.log_median_mse)}</td>
                            <td class="num" data-metric="median-max-rel-err">{number_text(s.log_median_max_rel_err)}</td>
                            <td class="num" data-metric="scatter-mse">{number_text(scatter.metrics.log_mse)}</td>
                            <td class="num" data-metric="clamped">{s.clamped}</td>
                        </tr>
                    })
                })
                .collect_view();
            let paired = paired_comparison(&r);
            view! {
                <section class="figure">
                    <h2>"Results: the leaderboard"</h2>
                    <TableScroll label="the leaderboard">
                        <table class="results-table">
                            <caption>{caption}</caption>
                            <thead>
                                <tr>
                                    <th>"#"</th>
                                    <th>"estimator"</th>
                                    <th>"fitted on the scatter dataset"</th>
                                    <th>"median MSE"</th>
                                    <th>"median max rel. error"</th>
                                    <th>"MSE on the scatter dataset"</th>
                                    <th title="diagonal entries of A clamped into [0.001, 1000], summed over the boxplot datasets">"clamped a_i"</th>
                                </tr>
                            </thead>
                            <tbody>{rows}</tbody>
                        </table>
                    </TableScroll>
                    {paired.map(|text| view! { <p class="caption">{text}</p> })}
                </section>
            }
        })
    }
}

/// "Variance-adjusted A has the lower MSE in k of N datasets", when both heuristics ran.
fn paired_comparison(r: &ExperimentResult) -> Option<String> {
    let paired = crate::lab::kernel::export::paired_comparison(r)?;
    Some(format!(
        "Paired by dataset (same data and ω): variance-adjusted A has the lower MSE in {} of {} datasets.",
        paired.variance_adjusted_lower_mse, paired.datasets
    ))
}
