//! The length study's legend (shared by the two charts) and its crossover table: one row per
//! head size, method, m and form, with the crossover measured and modelled, the errors there
//! and the working memory against exact attention's and a dense L × L matrix's.

use leptos::prelude::*;

use super::TableScroll;
use super::text::css_colour;
use crate::chart_geometry::timings::{EXACT_COLOUR, MODEL, THICK, THIN};
use crate::lab::attention::lengths::{Kernel, LengthsReport};
use crate::lab::attention::timing_notes::{
    CrossoverRow, crossover_rows, form_key, form_label, grouped,
};
use crate::numerics::attention::methods::MethodId;

type Report = RwSignal<Option<Result<LengthsReport, String>>, LocalStorage>;

/// A short line as drawn: its CSS colour, width (CSS px) and style (solid, dashed, dotted).
fn sample(colour: String, width: f64, style: &'static str) -> impl IntoView {
    view! {
        <span class="line-sample" aria-hidden="true" style=format!("border-top: {width}px {style} {colour}")></span>
    }
}

fn rgb([r, g, b]: [u8; 3]) -> String {
    format!("rgb({r},{g},{b})")
}

/// The charts' legend: exact attention's two lines, each method's colour, which width is
/// which m, the model's dotted lines and the crossover markers.
#[component]
pub(super) fn LengthsLegend(report: Report) -> impl IntoView {
    let entries = Memo::new(move |_| {
        report.with(|r| {
            let Some(Ok(r)) = r else {
                return (Vec::new(), None);
            };
            let mut methods: Vec<MethodId> = Vec::new();
            for s in &r.series {
                if let Kernel::Method { method, .. } = s.kernel
                    && !methods.contains(&method)
                {
                    methods.push(method);
                }
            }
            let sizes = match r.features.as_slice() {
                [small, .., large] if small != large => Some((*small, *large)),
                _ => None,
            };
            let deterministic = methods.iter().any(|m| !m.is_random());
            (
                methods,
                sizes.map(|(small, large)| (small, large, deterministic)),
            )
        })
    });
    let dark = rgb(EXACT_COLOUR);
    view! {
        <ul class="lengths-legend" aria-label="legend of the two charts">
            <li>{sample(dark.clone(), 2.0, "solid")}"exact attention, bidirectional"</li>
            <li>{sample(dark.clone(), 2.0, "dashed")}"exact attention, causal"</li>
            {move || entries.get().0.into_iter().map(|m| view! {
                <li data-method=m.id()>{sample(css_colour(m), THICK, "solid")}{m.label()}</li>
            }).collect_view()}
            {move || entries.get().1.map(|(small, large, deterministic)| view! {
                <li>{sample(rgb([90, 90, 90]), THIN, "solid")}{format!("thin, hollow ring: m = {small}")}</li>
                <li>{sample(rgb([90, 90, 90]), THICK, "solid")}{format!("thick, filled ring: m = {large}{}", if deterministic { " (and maps without random features, one size)" } else { "" })}</li>
            })}
            <li>{sample(dark, MODEL, "dotted")}"dotted: the multiply-add model (multiply-adds ÷ the dense kernel's rate)"</li>
            <li><span class="ring-sample" aria-hidden="true"></span>"ring on exact attention's line: where the method becomes faster"</li>
        </ul>
    }
}

/// One row of the table.
fn row_view(row: &CrossoverRow) -> impl IntoView + use<> {
    let [r, g, b] = row.method.colour();
    let length = |l: Option<usize>| l.map_or_else(|| "–".to_string(), |l| grouped(l as u64));
    view! {
        <tr data-method=row.method.id() data-m=row.m.clone() data-form=form_key(row.form) data-d=row.d data-kind=row.kind>
            <td><span class="swatch" style=format!("background:rgb({r},{g},{b})")></span>{row.method.id()}</td>
            <td class="num">{row.m.clone()}</td>
            <td class="num">{row.features}</td>
            <td>{form_label(row.form)}</td>
            <td class="num crossover">{row.crossover.clone()}</td>
            <td class="num model-crossover">{row.model.clone()}</td>
            <td class="num">{length(row.error_len)}</td>
            <td class="num">{row.output_error.clone()}</td>
            <td class="num">{row.row_tv.clone()}</td>
            <td class="num">{length(row.longest)}</td>
            <td class="num">{row.memory.clone()}</td>
            <td class="num">{row.exact_memory.clone()}</td>
            <td class="num">{row.dense_memory.clone()}</td>
        </tr>
    }
}

/// The crossover table.
///
/// - `report`: the study's outcome.
/// - `longest`: the longest length asked for, as text (the memory columns' caption).
#[component]
pub(super) fn CrossoverTable(report: Report, longest: Signal<Option<String>>) -> impl IntoView {
    let rows = Memo::new(move |_| {
        report.with(|r| match r {
            Some(Ok(r)) => crossover_rows(r),
            _ => Vec::new(),
        })
    });
    // One group of rows per head size, in the report's order.
    let body = move || {
        let rows = rows.get();
        let mut sizes: Vec<usize> = rows.iter().map(|r| r.d).collect();
        sizes.dedup();
        sizes
            .into_iter()
            .map(|d| {
                let group = rows
                    .iter()
                    .filter(|r| r.d == d)
                    .map(row_view)
                    .collect_view();
                view! {
                    <tbody data-d=d>
                        <tr class="group"><th scope="rowgroup" colspan="13">{format!("head size d = {d}")}</th></tr>
                        {group}
                    </tbody>
                }
            })
            .collect_view()
    };
    let caption = move || {
        format!(
            "Faster from L: where the method's measured time falls below exact attention's of the same form and head size, interpolated on the log–log chart (\"≤ L\": already at the shortest length compared; \"> L\": not up to the longest); the model's: where their multiply-adds are equal. Errors at the first length where it is faster (output ‖Ô − O‖/‖O‖ against exact attention of the same form; row TV on bidirectional rows only). Working memory beyond the inputs and output, at the longest length each series reached{}, against exact attention's (tiled) and a dense L × L matrix of f32.",
            longest
                .get()
                .map(|l| format!(" (L = {l} unless it stopped)"))
                .unwrap_or_default()
        )
    };
    view! {
        <p class="caption">{caption}</p>
        <TableScroll label="crossovers with exact attention">
            <table class="small-table lengths-table">
                <caption class="visually-hidden">"each method's crossover with exact attention"</caption>
                <thead>
                    <tr>
                        <th scope="col" rowspan="2">"method"</th>
                        <th scope="col" rowspan="2">"m"</th>
                        <th scope="col" rowspan="2">"D"</th>
                        <th scope="col" rowspan="2">"form"</th>
                        <th scope="colgroup" colspan="2">"faster from L"</th>
                        <th scope="colgroup" colspan="3">"errors where it becomes faster"</th>
                        <th scope="colgroup" colspan="4">"working memory at the longest L"</th>
                    </tr>
                    <tr>
                        <th scope="col">"measured"</th>
                        <th scope="col">"model"</th>
                        <th scope="col">"L"</th>
                        <th scope="col">"output"</th>
                        <th scope="col">"row TV"</th>
                        <th scope="col">"L"</th>
                        <th scope="col">"method"</th>
                        <th scope="col">"exact"</th>
                        <th scope="col">"dense L×L"</th>
                    </tr>
                </thead>
                {body}
            </table>
        </TableScroll>
    }
}
