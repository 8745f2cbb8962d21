//! The model swap's tables: the embedding's cosine for every method at every budget, and the
//! hidden states' drift through the layers.

use leptos::prelude::*;

use super::{css_colour_of, label_of};
use crate::lab::config::{ExperimentConfig, SWAP_BUDGETS};
use crate::lab::models::protocol::SwapReport;
use crate::lab::models::swap_plan::KEEPS_COSINE;
use crate::ui::attention::TableScroll;
use crate::ui::attention::model_client::SwapCell;

/// The methods of `cells` in the order they first arrived.
pub(super) fn methods_of(cells: &[SwapCell]) -> Vec<String> {
    let mut methods: Vec<String> = Vec::new();
    for cell in cells {
        if !methods.contains(&cell.job.method) {
            methods.push(cell.job.method.clone());
        }
    }
    methods
}

/// A cell's text: cosine mean ± sd (over the draws), or why there is none.
fn cosine_text(cell: &SwapCell) -> (String, &'static str, String) {
    match &cell.report {
        Ok(report) => match &report.cosine {
            Some(c) => {
                let class = if report.failed_draws == 0 && c.mean >= KEEPS_COSINE {
                    "num keeps"
                } else {
                    "num"
                };
                let failed = if report.failed_draws > 0 {
                    format!(
                        " ({} of {} draws stopped)",
                        report.failed_draws, report.draws
                    )
                } else {
                    String::new()
                };
                let spread = if report.draws > 1 {
                    format!(" ± {:.4}", c.sd)
                } else {
                    String::new()
                };
                (
                    format!("{:.4}{spread}{failed}", c.mean),
                    class,
                    format!("{} draws; min {:.4}, max {:.4}", report.draws, c.min, c.max),
                )
            }
            None => (
                "stopped".to_string(),
                "num failed",
                report.failure.clone().unwrap_or_default(),
            ),
        },
        Err(message) => ("–".to_string(), "num failed", message.clone()),
    }
}

/// The cosine of the embedding to the exact one, per method (rows) and budget m (columns); a
/// method without a budget fills its row with one value.
///
/// - `cells`: the swap's answers so far.
/// - `budgets`: the columns.
#[component]
pub(super) fn CosineTable(
    cells: RwSignal<Vec<SwapCell>, LocalStorage>,
    budgets: &'static [usize],
) -> impl IntoView {
    let rows = move || {
        cells.with(|cells| {
            methods_of(cells)
                .into_iter()
                .map(|method| {
                    let mine: Vec<&SwapCell> =
                        cells.iter().filter(|c| c.job.method == method).collect();
                    let budgeted = mine
                        .iter()
                        .any(|c| c.report.as_ref().is_ok_and(|r| r.features.is_some()));
                    let columns = if budgeted {
                        budgets
                            .iter()
                            .map(|&m| {
                                let cell = mine.iter().find(|c| {
                                    c.report.as_ref().map_or(
                                        c.job.config.attention.features == m,
                                        |r| r.features == Some(m),
                                    )
                                });
                                match cell {
                                    Some(cell) => {
                                        let (text, class, title) = cosine_text(cell);
                                        view! { <td class=class title=title data-m=m>{text}</td> }.into_any()
                                    }
                                    // Pending, or not a size of this method (the learned maps have one).
                                    None if method == super::HEDGEHOG => view! { <td class="num" data-m=m></td> }.into_any(),
                                    None => view! { <td class="num" data-m=m title="computing">"·"</td> }.into_any(),
                                }
                            })
                            .collect_view()
                            .into_any()
                    } else {
                        let (text, class, title) =
                            mine.first().map(|c| cosine_text(c)).unwrap_or_default();
                        view! { <td class=class title=title colspan=budgets.len()>{text}" (no m)"</td> }
                            .into_any()
                    };
                    view! {
                        <tr data-method=method.clone()>
                            <td><span class="swatch" style=format!("background:{}", css_colour_of(&method))></span>{label_of(&method)}</td>
                            {columns}
                        </tr>
                    }
                })
                .collect_view()
        })
    };
    view! {
        <TableScroll label="cosine to the exact model">
            <table class="leaderboard swap-table">
                <caption>{format!("cosine of the sentence embedding to the exact model's (mean ± sd over the draws); ≥ {KEEPS_COSINE} in green")}</caption>
                <thead><tr>
                    <th>"method"</th>
                    {budgets.iter().map(|m| view! { <th>{format!("m = {m}")}</th> }).collect_view()}
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </TableScroll>
    }
}

/// The budget whose per-layer numbers are shown: the one nearest the view's m.
fn shown_budget(features: usize) -> usize {
    let log = |m: usize| (m.max(1) as f64).ln();
    SWAP_BUDGETS
        .iter()
        .copied()
        .min_by(|&a, &b| {
            (log(a) - log(features))
                .abs()
                .total_cmp(&(log(b) - log(features)).abs())
        })
        .unwrap_or(64)
}

/// Hidden-state drift per layer for each method at the budget nearest the view's m.
///
/// - `cells`: the swap's answers so far.
/// - `config`: the configuration (its m chooses the budget shown).
#[component]
pub(super) fn LayerDrift(
    cells: RwSignal<Vec<SwapCell>, LocalStorage>,
    config: ReadSignal<ExperimentConfig>,
) -> impl IntoView {
    let budget = move || config.with(|c| shown_budget(c.attention.features));
    let rows = move || {
        let m = budget();
        cells.with(|cells| {
            cells
                .iter()
                .filter_map(|c| c.report.as_ref().ok())
                .filter(|r| r.features.is_none_or(|f| f == m) || r.method == super::HEDGEHOG)
                .map(|r: &SwapReport| {
                    let columns = r
                        .per_layer
                        .iter()
                        .map(|l| {
                            let class = if l.swapped { "num swapped" } else { "num" };
                            view! {
                                <td class=class title=format!("attention error {:.3e}", l.attention_error.mean)>
                                    {format!("{:.3}", l.hidden_drift.mean)}
                                </td>
                            }
                        })
                        .collect_view();
                    view! {
                        <tr data-method=r.method.clone()>
                            <td><span class="swatch" style=format!("background:{}", css_colour_of(&r.method))></span>{r.label.clone()}{super::at_m(r)}</td>
                            {columns}
                        </tr>
                    }
                })
                .collect_view()
        })
    };
    view! {
        <TableScroll label="drift of the hidden states per layer">
            <table class="leaderboard drift-table">
                <caption>{move || format!("relative drift of each layer's hidden states, ‖Ĥ − H‖/‖H‖ (mean over the draws), at m = {} for the methods with a budget; swapped layers shaded; hover for the attention error", budget())}</caption>
                <thead><tr>
                    <th>"method"</th>
                    {(0..crate::lab::config::HEAD_LAYERS).map(|l| view! { <th>{format!("layer {l}")}</th> }).collect_view()}
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </TableScroll>
    }
}
