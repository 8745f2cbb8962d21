//! The attention view's budget chart: output error against the feature budget D.

use leptos::html::Canvas;
use leptos::prelude::*;

use super::figure::draw_when;
use super::{Figure, chart_error};
use crate::charts::{ErrorBarSeries, describe, draw_xy_with_errors};
use crate::lab::attention::report::BudgetReport;
use crate::lab::attention::trend::budget_notice;
use crate::lab::page::formulas;

/// Output error against the feature budget D.
#[component]
pub(super) fn BudgetChart(
    budget: RwSignal<Option<Result<BudgetReport, String>>, LocalStorage>,
) -> impl IntoView {
    let canvas: NodeRef<Canvas> = NodeRef::new();
    let error = draw_when(budget, move |report| {
        let points: Vec<Vec<(f64, f64, f64)>> = report
            .curves
            .iter()
            .map(|c| {
                c.points
                    .iter()
                    .map(|&(d, e, se)| (d as f64, e, se))
                    .collect()
            })
            .collect();
        let series: Vec<ErrorBarSeries> = report
            .curves
            .iter()
            .zip(&points)
            .map(|(c, p)| ErrorBarSeries {
                label: c.method.id(),
                colour: c.method.colour(),
                points: p,
            })
            .collect();
        if let Some(c) = canvas.get() {
            describe(
                &c,
                &format!(
                    "mean output error against features D for {}",
                    report
                        .curves
                        .iter()
                        .map(|c| c.method.id())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            draw_xy_with_errors(
                &c,
                &format!(
                    "mean output error against features D ({} tokens)",
                    report.len
                ),
                "features per token D",
                "mean |o_i − ô_i|",
                &series,
                true,
                true,
            )
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    // Read from the numbers drawn, not fixed: a random map falls like 1/√D only once D is large
    // against its MSE's e^(|z|²), and on many data it stays flat across the whole axis.
    let trend = move || {
        budget.with(|b| match b {
            Some(Ok(report)) => budget_notice(report),
            _ => String::new(),
        })
    };
    view! {
        <Figure class="budget" title="Error at equal feature budget" formula=formulas::ATTENTION_BUDGET notice="read the fitted slopes under the chart: a random map falls like 1/√D only once D is large against its MSE's e^(|z|²) factor; deterministic maps jump with their degree and their size explodes with d (seed 004).">
            <canvas node_ref=canvas class="chart" data-chart="budget"></canvas>
            <p class="trend-note" data-note="budget">{trend}</p>
            {chart_error(error)}
        </Figure>
    }
}
