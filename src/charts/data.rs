//! The data panel's charts: the per-component chart (moments and each A against the
//! component index, log y; drawn by [`draw_xy`]) and overlaid histograms. What they show comes
//! from [`crate::chart_geometry::data`].

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use web_sys::HtmlCanvasElement;

use super::attention::{INK, KeyAxis, Series, css_size, draw_message, draw_xy};
use super::{ChartError, backend, prepare, styled_mesh};
use crate::chart_geometry::attention::{LEGEND_LINE, legend_width};
use crate::chart_geometry::data::{ComponentSeries, HistogramPlan};
use crate::lab::kernel::data_view::HistogramSet;

/// The per-component chart: each series against the component index on a log y axis (values
/// ≤ 0 left out).
pub fn draw_components(
    canvas: &HtmlCanvasElement,
    title: &str,
    series: &[ComponentSeries],
) -> Result<(), ChartError> {
    let series: Vec<Series<'_>> = series
        .iter()
        .map(|s| Series {
            label: &s.label,
            colour: s.colour,
            points: &s.points,
            dashed: s.dashed,
            markers: s.markers,
            line: s.line,
        })
        .collect();
    draw_xy(
        canvas,
        title,
        "component i",
        "|μ|, σ and a",
        &series,
        false,
        true,
    )
}

/// Overlaid histograms of `set` (translucent bars with an outline, one colour per series) and
/// a legend with each series' median in the top-right corner of the plot.
pub fn draw_histogram(
    canvas: &HtmlCanvasElement,
    title: &str,
    x_label: &str,
    set: &HistogramSet,
) -> Result<(), ChartError> {
    let dpr = prepare(canvas, 280);
    let px = |v: f64| (v * dpr).round() as i32;
    let root = backend(canvas)?.into_drawing_area();
    root.fill(&WHITE)?;
    let Some(plan) = HistogramPlan::new(set) else {
        return draw_message(&root, title, "no values", &px);
    };
    // The plot's height: the canvas less the caption, the margins and the x labels.
    let (w, h) = css_size(canvas, dpr);
    let plan = plan.with_legend_room(h - 24.0 - 16.0 - 40.0);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", px(15.0)).into_font())
        .margin(px(8.0))
        .x_label_area_size(px(40.0))
        .y_label_area_size(px(52.0))
        .build_cartesian_2d(KeyAxis::new(&plan.x), KeyAxis::new(&plan.y))?;
    styled_mesh(&mut chart, &plan.x.describe(x_label), "pairs", &px)
        .x_label_formatter(&|v| plan.x.label(*v))
        .y_label_formatter(&|v| plan.y.label(*v))
        .draw()?;
    let outline = px(1.0).max(1) as u32;
    for (bars, (colour, _)) in plan.bars.iter().zip(&plan.legend) {
        let [r, g, b] = *colour;
        let colour = RGBColor(r, g, b);
        chart.draw_series(bars.iter().map(|&(x0, x1, count)| {
            Rectangle::new([(x0, 0.0), (x1, count as f64)], colour.mix(0.35).filled())
        }))?;
        chart.draw_series(bars.iter().map(|&(x0, x1, count)| {
            Rectangle::new(
                [(x0, 0.0), (x1, count as f64)],
                ShapeStyle::from(&colour).stroke_width(outline),
            )
        }))?;
    }
    // The legend: inside the plot's top-right corner, on translucent white.
    let (x_range, y_range) = chart.plotting_area().get_pixel_range();
    let labels: Vec<&str> = plan.legend.iter().map(|l| l.1.as_str()).collect();
    let legend_w = legend_width(&labels).min(w * 0.6);
    let height = plan.legend.len() as f64 * LEGEND_LINE + 8.0;
    let lx = x_range.end - px(6.0) - px(legend_w);
    let ly = y_range.start + px(6.0);
    root.draw(&Rectangle::new(
        [(lx, ly), (lx + px(legend_w), ly + px(height))],
        WHITE.mix(0.8).filled(),
    ))?;
    root.draw(&Rectangle::new(
        [(lx, ly), (lx + px(legend_w), ly + px(height))],
        ShapeStyle::from(&RGBColor(210, 210, 210)).stroke_width(1),
    ))?;
    for (i, ([r, g, b], text)) in plan.legend.iter().enumerate() {
        let colour = RGBColor(*r, *g, *b);
        let y = ly + px(4.0 + LEGEND_LINE * i as f64 + LEGEND_LINE / 2.0);
        root.draw(&Rectangle::new(
            [(lx + px(4.0), y - px(4.0)), (lx + px(20.0), y + px(4.0))],
            colour.mix(0.5).filled(),
        ))?;
        root.draw(&Text::new(
            text.clone(),
            (lx + px(26.0), y),
            ("sans-serif", px(11.0))
                .into_font()
                .color(&INK)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    root.present()?;
    Ok(())
}
