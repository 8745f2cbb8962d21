//! The attention view's kernel-against-attention chart: for every method that estimates the
//! kernel itself and every problem (each real head, or synthetic datasets), the kernel's mean
//! relative MSE against the attention rows' mean total variation, at one feature budget.

use leptos::html::Canvas;
use leptos::prelude::*;

use super::figure::draw_when;
use super::text::sci;
use super::{Figure, TableScroll, chart_error};
use crate::charts::{Series, describe, draw_xy};
use crate::lab::attention::kernel_vs_attention::{BUDGET_TOLERANCE, planned_rows};
use crate::lab::attention::report::KernelVsAttention;
use crate::lab::config::ExperimentConfig;
use crate::lab::page::formulas;
use crate::numerics::attention::methods::MethodId;
use crate::numerics::stats::median;

/// Kernel error against attention error, one point per method and problem.
///
/// `config` gives the table's rows while the part computes (each method at its size, its
/// numbers to come), so that the table does not push the view's later parts down as it lands;
/// `report` is the part's latest outcome.
#[component]
pub(super) fn KernelVsAttentionChart(
    config: ReadSignal<ExperimentConfig>,
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
                    ids(&report.methods)
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
        report.with(|r| match r {
            Some(Ok(r)) => Some(computed_table(r)),
            Some(Err(_)) => None,
            None => Some(config.with(planned_table)),
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

/// The table's head and its frame, around `rows` and above `caption`.
fn table_frame(rows: AnyView, caption: Option<String>) -> AnyView {
    view! {
        <TableScroll label="kernel error against row error">
            <table class="small-table kernel-vs-attention-table">
                <thead><tr>
                    <th>"method"</th><th>"D"</th><th>"median kernel MSE"</th><th>"median row TV"</th>
                    <th>"lowest kernel MSE on"</th><th>"lowest row TV on"</th><th>"bad rows"</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </TableScroll>
        <p class="caption">{caption}</p>
    }
    .into_any()
}

/// The caption's sentence on the methods left out for the budget, if any.
fn off_budget_note(budget: usize, off_budget: &[MethodId]) -> Option<String> {
    (!off_budget.is_empty()).then(|| {
        format!(
            "Left out: they cannot be set near D = {budget} (their smallest size is beyond \
             {BUDGET_TOLERANCE}×): {}.",
            ids(off_budget)
        )
    })
}

/// The methods' ids, comma-separated.
fn ids(methods: &[MethodId]) -> String {
    methods
        .iter()
        .map(|m| m.id())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The table of a computed part: each method's medians and wins.
fn computed_table(r: &KernelVsAttention) -> AnyView {
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
        .collect_view()
        .into_any();
    let left_out = (!r.without_kernel.is_empty()).then(|| {
        format!(
            "Not on the chart, only in the attention columns (they do not estimate exp(q·k) \
             itself): {}.",
            ids(&r.without_kernel)
        )
    });
    let caption = [left_out, off_budget_note(r.budget, &r.off_budget)]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    table_frame(rows, (!caption.is_empty()).then(|| caption.join(" ")))
}

/// The table while the part computes: the rows it will have (`planned_rows`), each method at
/// its size, its numbers to come (`data-planned`, not `data-method`: no result yet).
fn planned_table(config: &ExperimentConfig) -> AnyView {
    let (rows, off_budget) = planned_rows(config);
    let rows = rows
        .into_iter()
        .map(|(method, size)| {
            let pending = || view! { <td class="num pending">"…"</td> };
            view! {
                <tr data-planned=method.id()>
                    <td>{method.id()}</td>
                    <td class="num">{size}</td>
                    {pending()}{pending()}{pending()}{pending()}{pending()}
                </tr>
            }
        })
        .collect_view()
        .into_any();
    table_frame(
        rows,
        off_budget_note(config.attention.features, &off_budget),
    )
}
