//! The attention view's error charts: the distributions over rows of the total variation and
//! the output error, and squared bias against variance over repeated draws.

use leptos::html::Canvas;
use leptos::prelude::*;

use super::figure::draw_when;
use super::text::{css_colour, mean_of, sci, summary};
use super::{Figure, TableScroll, chart_error};
use crate::charts::{Distribution, Series, describe, draw_distributions, draw_xy};
use crate::lab::attention::report::{BiasVarianceReport, MainReport};
use crate::lab::page::formulas;

/// Distributions over rows of the total variation and the output error.
#[component]
pub(super) fn RowErrors(
    main: RwSignal<Option<Result<MainReport, String>>, LocalStorage>,
) -> impl IntoView {
    let tv: NodeRef<Canvas> = NodeRef::new();
    let out: NodeRef<Canvas> = NodeRef::new();
    let error = draw_when(main, move |report| {
        let notes: Vec<String> = report
            .methods
            .iter()
            .map(|r| format!("{} bad rows", r.bad_rows))
            .collect();
        let entries = |values: fn(&crate::lab::attention::report::MethodReport) -> &[f64]| {
            report
                .methods
                .iter()
                .zip(&notes)
                .map(|(r, note)| Distribution {
                    label: r.method.id(),
                    colour: r.method.colour(),
                    values: values(r),
                    note: (r.bad_rows > 0).then_some(note.as_str()),
                })
                .collect::<Vec<_>>()
        };
        if let Some(c) = tv.get() {
            describe(
                &c,
                &format!(
                    "median row total variation per method: {}",
                    summary(report, |m| m.median_tv())
                ),
            );
            draw_distributions(
                &c,
                &format!("row total variation ({} rows)", report.tv_rows.len()),
                "½ Σ_j |P̂_ij − P_ij|",
                &entries(|r| &r.row_tv),
                false,
            )
            .map_err(|e| e.to_string())?;
        }
        if let Some(c) = out.get() {
            describe(
                &c,
                &format!(
                    "mean output error per method: {}",
                    summary(report, |m| m.mean_output_error())
                ),
            );
            draw_distributions(
                &c,
                &format!("output error per row ({} rows)", report.len),
                "|o_i − ô_i|",
                &entries(|r| &r.output_error),
                true,
            )
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    view! {
        <Figure class="row-errors" title="Errors per row" formula=formulas::ATTENTION_ROW_ERRORS notice="where queries and keys differ in scale (the default synthetic data: long queries, short keys), a data-chosen A or OPRF narrows the spread of the random maps at the same m; where they do not (the real heads at the model's scaling) the gain is a few per cent at most. Deterministic maps have no spread over draws but a fixed error.">
            <div class="pair">
                <canvas node_ref=tv class="chart" data-chart="row-tv"></canvas>
                <canvas node_ref=out class="chart" data-chart="output-error"></canvas>
            </div>
            {chart_error(error)}
        </Figure>
    }
}

/// Squared bias against variance of ô over R draws, one point per method.
#[component]
pub(super) fn BiasVarianceChart(
    bias: RwSignal<Option<Result<BiasVarianceReport, String>>, LocalStorage>,
) -> impl IntoView {
    let canvas: NodeRef<Canvas> = NodeRef::new();
    let rows = move || {
        bias.with(|b| match b {
            Some(Ok(report)) => report
                .methods
                .iter()
                .map(|m| {
                    let mean = |v: &[f64]| mean_of(v);
                    view! {
                        <tr data-method=m.method.id()>
                            <td><span class="swatch" style=format!("background:{}", css_colour(m.method))></span>{m.method.label()}</td>
                            <td class="num">{m.draws}</td>
                            <td class="num squared-bias">{sci(mean(&m.squared_bias))}</td>
                            <td class="num variance">{sci(mean(&m.variance))}</td>
                            <td class="num">{m.bad_rows}</td>
                        </tr>
                    }
                })
                .collect_view()
                .into_any(),
            Some(Err(e)) => view! { <tr><td colspan="5" class="error">{e.clone()}</td></tr> }.into_any(),
            None => view! { <tr><td colspan="5">"computing…"</td></tr> }.into_any(),
        })
    };
    let error = draw_when(bias, move |report| {
        let means: Vec<(f64, f64)> = report
            .methods
            .iter()
            .map(|m| (mean_of(&m.variance), mean_of(&m.squared_bias)))
            .collect();
        // Deterministic maps (variance 0) have no place on a log axis: the table lists
        // them. A squared bias ≤ 0 (unbiased within noise) sits at a floor a decade
        // under the smallest positive one.
        let floor = means
            .iter()
            .map(|(_, b)| *b)
            .filter(|b| *b > 0.0)
            .fold(f64::INFINITY, f64::min)
            / 10.0;
        let floor = if floor.is_finite() { floor } else { 1e-6 };
        let points: Vec<[(f64, f64); 1]> = means
            .iter()
            .map(|&(v, b)| [(if v > 0.0 { v } else { f64::NAN }, b.max(floor))])
            .collect();
        let series: Vec<Series> = report
            .methods
            .iter()
            .zip(&points)
            .map(|(m, p)| Series {
                label: m.method.id(),
                colour: m.method.colour(),
                points: p,
                dashed: false,
                markers: true,
                line: false,
            })
            .collect();
        if let Some(c) = canvas.get() {
            describe(
                &c,
                &format!(
                    "squared bias against variance per method: {}",
                    report
                        .methods
                        .iter()
                        .map(|m| format!(
                            "{} bias² {} variance {}",
                            m.method.id(),
                            sci(mean_of(&m.squared_bias)),
                            sci(mean_of(&m.variance))
                        ))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            );
            draw_xy(
                &c,
                "squared bias against variance of ô (mean over rows)",
                "variance over draws",
                "squared bias",
                &series,
                true,
                true,
            )
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    view! {
        <Figure class="bias-variance" title="Bias and variance over repeated draws" formula=formulas::ATTENTION_BIAS_VARIANCE notice="RFA and Performer are ratios of unbiased estimates, so they are biased (seed 003: self-normalised importance sampling); randomized attention's bias² stays at 0 within noise (it is unbiased for o_i), at O(L²) cost. Points at the bottom edge have bias² ≤ 0 within noise; deterministic maps (variance 0) are only in the table.">
            <canvas node_ref=canvas class="chart" data-chart="bias-variance"></canvas>
            {chart_error(error)}
            <TableScroll label="bias and variance">
                <table class="small-table">
                    <thead><tr><th>"method"</th><th>"draws R"</th><th>"mean bias²"</th><th>"mean variance"</th><th>"rows left out"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </TableScroll>
        </Figure>
    }
}
