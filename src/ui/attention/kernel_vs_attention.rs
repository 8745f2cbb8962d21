//! The attention view's kernel-against-attention chart: for every method that estimates the
//! kernel itself and every problem (each real head, or synthetic datasets), the kernel's mean
//! relative MSE against the attention rows' mean total variation, at one feature budget.

use leptos::html::Canvas;
use leptos::prelude::*;

use super::figure::draw_when;
use super::text::sci;
use super::{Figure, TableScroll, chart_error};
use crate::charts::{Series, describe, draw_xy};
use crate::lab::attention::report::KernelVsAttention;
use crate::lab::page::formulas;
use crate::numerics::stats::median;

/// Kernel error against attention error, one point per method and problem.
#[component]
pub(super) fn KernelVsAttentionChart(
    report: RwSignal<Option<Result<KernelVsAttention, String>>, LocalStorage>,
) -> impl IntoView {
    let canvas: NodeRef<Canvas> = NodeRef::new();
    let error = draw_when(report, move |report| {
        let points: Vec<Vec<(f64, f64)>> = report
            .kernel
            .iter()
            .zip(&report.attention)
            .map(|(kernel, attention)| {
                kernel
                    .iter()
                    .copied()
                    .zip(attention.iter().copied())
                    .collect()
            })
            .collect();
        let series: Vec<Series> = report
            .methods
            .iter()
            .zip(&points)
            .map(|(method, p)| Series {
                label: method.id(),
                colour: method.colour(),
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
                    "kernel relative MSE against mean row total variation, one point per problem, for {}",
                    report
                        .methods
                        .iter()
                        .map(|m| m.id())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            draw_xy(
                &c,
                &format!(
                    "kernel error against attention error ({} problems, D ≈ {})",
                    report.problems.len(),
                    report.budget
                ),
                "kernel: mean relative MSE over the pairs",
                "attention: mean row total variation",
                &series,
                true,
                true,
            )
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    let summary = move || {
        report.with(|r| match r {
            Some(Ok(r)) => r.summary(),
            Some(Err(e)) => e.clone(),
            None => "computing every problem…".to_string(),
        })
    };
    let table = move || {
        report.with(|r| {
            let r = r.as_ref()?.as_ref().ok()?;
            let attention_wins = r.attention_wins();
            let kernel_wins = r.kernel_wins();
            let rows = r
                .methods
                .iter()
                .enumerate()
                .map(|(k, method)| {
                    let kernel = median(&r.kernel[k])
                        .filter(|v| v.is_finite())
                        .map_or_else(|| "no kernel estimate".to_string(), sci);
                    let attention = median(&r.attention[k]).unwrap_or(f64::NAN);
                    view! {
                        <tr data-method=method.id()>
                            <td>{method.id()}</td>
                            <td class="num">{r.feature_sizes[k]}</td>
                            <td class="num">{kernel}</td>
                            <td class="num">{sci(attention)}</td>
                            <td class="num">{kernel_wins[k]}</td>
                            <td class="num">{attention_wins[k]}</td>
                            <td class="num">{r.bad_rows[k]}</td>
                        </tr>
                    }
                })
                .collect_view();
            let left_out = (!r.without_kernel.is_empty()).then(|| {
                format!(
                    "Not on the chart, only in the attention columns (they do not estimate exp(q·k) itself): {}.",
                    r.without_kernel
                        .iter()
                        .map(|m| m.id())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            });
            let off_budget = (!r.off_budget.is_empty()).then(|| {
                format!(
                    "Left out: they cannot be set near D = {} (their smallest size is beyond {}×): {}.",
                    r.budget,
                    crate::lab::attention::kernel_vs_attention::BUDGET_TOLERANCE,
                    r.off_budget
                        .iter()
                        .map(|m| m.id())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            });
            Some(view! {
                <TableScroll label="kernel error against row error">
                    <table class="small-table kernel-vs-attention-table">
                        <thead><tr>
                            <th>"method"</th><th>"D"</th><th>"median kernel MSE"</th><th>"median row TV"</th>
                            <th>"lowest kernel MSE on"</th><th>"lowest row TV on"</th><th>"bad rows"</th>
                        </tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                </TableScroll>
                <p class="caption">{left_out} " " {off_budget}</p>
            })
        })
    };
    view! {
        <Figure class="kernel-vs-attention" title="Does a lower kernel MSE give better attention?" formula=formulas::KERNEL_VS_ATTENTION notice="a method to the left of another estimates exp(q·k) better; one below it gives rows closer to softmax. Where the two orders disagree (the summary counts it), the normaliser of each row and its largest weights matter more than the mean kernel error, which the rare pairs with the largest |z| rule.">
            <canvas node_ref=canvas class="chart" data-chart="kernel-vs-attention"></canvas>
            <p class="trend-note" data-note="kernel-vs-attention">{summary}</p>
            {chart_error(error)}
            {table}
        </Figure>
    }
}
