//! The attention matrices themselves: P, P̂ and P̂ − P as heatmaps on the first tokens, and
//! their singular values (rank).

use leptos::html::Canvas;
use leptos::prelude::*;

use super::figure::draw_when;
use super::text::sci;
use super::{Figure, chart_error};
use wasm_bindgen::JsCast;

use crate::chart_geometry::attention::HeatmapLayout;
use crate::charts::{HeatScale, Series, describe, draw_heatmap, draw_xy};
use crate::lab::attention::report::MainReport;
use crate::lab::config::ExperimentConfig;
use crate::lab::page::formulas;

/// P, P̂ and P̂ − P on the first tokens, for the chosen method.
///
/// - `compact`: the maps, their readout and error only, without the figure's section, formula
///   and notes (a figure embedded alone: its frame gives the title and caption).
#[component]
pub(super) fn Heatmaps(
    config: ReadSignal<ExperimentConfig>,
    main: RwSignal<Option<Result<MainReport, String>>, LocalStorage>,
    #[prop(optional)] compact: bool,
) -> impl IntoView {
    let exact: NodeRef<Canvas> = NodeRef::new();
    let approx: NodeRef<Canvas> = NodeRef::new();
    let diff: NodeRef<Canvas> = NodeRef::new();
    let focus = Memo::new(move |_| config.with(|c| c.attention.focus));
    let error = draw_when(main, move |report| {
        let focus = focus.get();
        let n = report.block_len;
        let shown = report
            .methods
            .iter()
            .find(|r| r.method == focus)
            .or_else(|| report.methods.first());
        let Some(shown) = shown else { return Ok(()) };
        let difference: Vec<f64> = shown
            .block
            .iter()
            .zip(&report.exact_block)
            .map(|(a, e)| a - e)
            .collect();
        if let Some(c) = exact.get() {
            describe(
                &c,
                &format!(
                    "softmax attention matrix P on the first {n} tokens, rank {}",
                    report.exact_rank
                ),
            );
            draw_heatmap(
                &c,
                "softmax P",
                &report.exact_block,
                n,
                HeatScale::Probability,
                &report.tokens,
            )
            .map_err(|e| e.to_string())?;
        }
        if let Some(c) = approx.get() {
            describe(
                &c,
                &format!(
                    "P̂ of {} on the first {n} tokens, rank {}, mean |o − ô| {}",
                    shown.method.label(),
                    shown.rank,
                    sci(shown.mean_output_error())
                ),
            );
            draw_heatmap(
                &c,
                &format!("P̂: {}", shown.method.label()),
                &shown.block,
                n,
                HeatScale::Probability,
                &report.tokens,
            )
            .map_err(|e| e.to_string())?;
        }
        if let Some(c) = diff.get() {
            describe(
                &c,
                &format!(
                    "P̂ − P for {}, largest |difference| {}",
                    shown.method.label(),
                    sci(difference.iter().fold(0.0f64, |m, d| m.max(d.abs())))
                ),
            );
            draw_heatmap(
                &c,
                "P̂ − P",
                &difference,
                n,
                HeatScale::Difference,
                &report.tokens,
            )
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    let caption = move || {
        main.with(|m| match m {
            Some(Ok(r)) => format!(
                "The first {} tokens taken as a sequence of their own (rows: queries, columns: keys).",
                r.block_len
            ),
            _ => String::new(),
        })
    };
    // The cell under the pointer, on any of the three maps (they share one layout).
    let hovered = RwSignal::new(None::<(usize, usize)>);
    let on_move = move |ev: leptos::ev::MouseEvent| {
        let Some(canvas) = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::HtmlCanvasElement>().ok())
        else {
            return;
        };
        let layout = HeatmapLayout::new(
            f64::from(canvas.client_width()),
            f64::from(canvas.client_height()),
        );
        let n = main.with_untracked(|m| {
            m.as_ref()
                .and_then(|r| r.as_ref().ok())
                .map_or(0, |r| r.block_len)
        });
        hovered.set(layout.cell_at(f64::from(ev.offset_x()), f64::from(ev.offset_y()), n));
    };
    let readout = move || {
        let (i, j) = hovered.get()?;
        main.with(|m| {
            let report = m.as_ref()?.as_ref().ok()?;
            let n = report.block_len;
            let focus = focus.get();
            let shown = report
                .methods
                .iter()
                .find(|r| r.method == focus)
                .or_else(|| report.methods.first())?;
            let exact = *report.exact_block.get(i * n + j)?;
            let approx = *shown.block.get(i * n + j)?;
            let token = |k: usize| {
                report
                    .tokens
                    .get(k)
                    .map(|t| format!(" “{t}”"))
                    .unwrap_or_default()
            };
            Some(format!(
                "query {i}{} → key {j}{}: P = {exact:.4}, P̂ ({}) = {approx:.4}, P̂ − P = {:+.4}",
                token(i),
                token(j),
                shown.method.label(),
                approx - exact
            ))
        })
    };
    let maps = view! {
        <div class="heatmap-row">
            <canvas node_ref=exact class="chart heatmap" data-chart="heatmap-exact" on:mousemove=on_move on:mouseleave=move |_| hovered.set(None)></canvas>
            <canvas node_ref=approx class="chart heatmap" data-chart="heatmap-approx" on:mousemove=on_move on:mouseleave=move |_| hovered.set(None)></canvas>
            <canvas node_ref=diff class="chart heatmap" data-chart="heatmap-diff" on:mousemove=on_move on:mouseleave=move |_| hovered.set(None)></canvas>
        </div>
        <p class="caption heatmap-readout">{move || readout().unwrap_or_else(|| "Point at a cell to read its query, key and weights.".to_string())}</p>
        {chart_error(error)}
    };
    if compact {
        return view! { <div class="heatmaps">{maps}</div> }.into_any();
    }
    view! {
        <Figure class="heatmaps" title="Attention matrices" formula=formulas::ATTENTION_MATRICES notice="positive features keep P̂ ≥ 0 but blur the sharp rows; trigonometric features and odd polynomials put negative weights where P is near 0.">
            <p class="caption">{caption}</p>
            {maps}
        </Figure>
    }
    .into_any()
}

/// Singular values of P and of each P̂ on the block.
#[component]
pub(super) fn SingularValues(
    main: RwSignal<Option<Result<MainReport, String>>, LocalStorage>,
) -> impl IntoView {
    let canvas: NodeRef<Canvas> = NodeRef::new();
    let error = draw_when(main, move |report| {
        let indexed = |values: &[f64]| -> Vec<(f64, f64)> {
            values
                .iter()
                .enumerate()
                .map(|(i, s)| ((i + 1) as f64, *s))
                .collect()
        };
        let exact = indexed(&report.exact_singular_values);
        let methods: Vec<Vec<(f64, f64)>> = report
            .methods
            .iter()
            .map(|r| indexed(&r.singular_values))
            .collect();
        let mut series = vec![Series {
            label: "softmax",
            colour: [0, 0, 0],
            points: &exact,
            dashed: true,
            markers: false,
            line: true,
        }];
        series.extend(report.methods.iter().zip(&methods).map(|(r, p)| Series {
            label: r.method.id(),
            colour: r.method.colour(),
            points: p,
            dashed: false,
            markers: false,
            line: true,
        }));
        if let Some(c) = canvas.get() {
            describe(
                &c,
                &format!(
                    "singular values on the first {} tokens; rank of P {}, of P̂: {}",
                    report.block_len,
                    report.exact_rank,
                    report
                        .methods
                        .iter()
                        .map(|m| format!("{} {}", m.method.id(), m.rank))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            draw_xy(
                &c,
                &format!("singular values on the first {} tokens", report.block_len),
                "index k",
                "σ_k",
                &series,
                false,
                true,
            )
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    view! {
        <Figure class="singular" title="Rank (seed 004)" formula=formulas::ATTENTION_RANK notice="elu + 1 and LLN have D = d features, so their singular values drop to rounding beyond index d; the random maps need D well above the block's size to follow softmax's tail.">
            <canvas node_ref=canvas class="chart" data-chart="singular-values"></canvas>
            {chart_error(error)}
        </Figure>
    }
}
