//! The length study's charts: milliseconds against L on log–log axes, the lines and marks
//! decided by [`crate::chart_geometry::timings`]. The legend is the page's (HTML, shared by
//! the two head sizes' charts), so the plot keeps the canvas's whole width on a phone.

use plotters::prelude::*;

use super::{KeyAxis, draw_message, rgb};
use crate::chart_geometry::attention::Axis;
use crate::chart_geometry::timings::{Stroke, TimingChart, length_tick_label};
use crate::charts::{ChartError, backend, prepare, styled_mesh};

/// Draws `chart` on `canvas` under `title`; with nothing plottable, the title and "no finite
/// values".
pub fn draw_timings(
    canvas: &web_sys::HtmlCanvasElement,
    title: &str,
    chart: &TimingChart,
) -> Result<(), ChartError> {
    let dpr = prepare(canvas, 340);
    let px = |v: f64| (v * dpr).round() as i32;
    let root = backend(canvas)?.into_drawing_area();
    root.fill(&WHITE)?;
    let Some((x_axis, y_axis)) = chart.axes() else {
        return draw_message(&root, title, "no finite values", &px);
    };
    let mut plot = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", px(15.0)).into_font())
        .margin(px(8.0))
        .margin_right(px(16.0))
        .x_label_area_size(px(40.0))
        .y_label_area_size(px(58.0))
        .build_cartesian_2d(
            KeyAxis::with_ticks(&x_axis, chart.x_ticks()),
            KeyAxis::new(&y_axis),
        )?;
    styled_mesh(
        &mut plot,
        "sequence length L (log scale)",
        &y_axis.describe("time (ms)"),
        &px,
    )
    .x_label_formatter(&|v| length_tick_label(*v))
    .y_label_formatter(&|v| y_axis.label(*v))
    .draw()?;
    let on = |&(x, y): &(f64, f64)| Some((Axis::on_axis(true, x)?, Axis::on_axis(true, y)?));
    for line in &chart.lines {
        let colour = rgb(line.colour);
        let style = ShapeStyle::from(&colour).stroke_width(px(line.width).max(1) as u32);
        // A point off the axes (not finite, or ≤ 0) breaks the line.
        let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for point in &line.points {
            match on(point) {
                Some(p) => {
                    if let Some(run) = runs.last_mut() {
                        run.push(p);
                    }
                }
                None => runs.push(Vec::new()),
            }
        }
        for run in runs.iter().filter(|r| r.len() > 1) {
            match line.stroke {
                Stroke::Solid => {
                    plot.draw_series(LineSeries::new(run.iter().copied(), style))?;
                }
                Stroke::Dashed => {
                    plot.draw_series(DashedLineSeries::new(
                        run.iter().copied(),
                        px(7.0).max(2) as u32,
                        px(4.0).max(2) as u32,
                        style,
                    ))?;
                }
                Stroke::Dotted => {
                    plot.draw_series(DashedLineSeries::new(
                        run.iter().copied(),
                        px(2.0).max(1) as u32,
                        px(3.0).max(2) as u32,
                        style,
                    ))?;
                }
            }
        }
        let lone = |r: &&Vec<(f64, f64)>| r.len() == 1;
        plot.draw_series(
            runs.iter()
                .filter(|r| line.markers || lone(r))
                .flatten()
                .map(|p| Circle::new(*p, px(2.5).max(2), colour.filled())),
        )?;
    }
    // The crossovers: a ring on exact attention's line (filled for the larger m), with a white
    // halo so that it stands out from the lines through it.
    for mark in &chart.marks {
        let (Some(x), Some(y)) = (Axis::on_axis(true, mark.len), Axis::on_axis(true, mark.ms))
        else {
            continue;
        };
        if !(x_axis.contains(x) && y_axis.contains(y)) {
            continue;
        }
        let colour = rgb(mark.colour);
        plot.draw_series(std::iter::once(Circle::new(
            (x, y),
            px(7.0),
            WHITE.filled(),
        )))?;
        let ring = if mark.filled {
            colour.filled()
        } else {
            ShapeStyle::from(&colour).stroke_width(px(2.5).max(2) as u32)
        };
        plot.draw_series(std::iter::once(Circle::new((x, y), px(5.0), ring)))?;
    }
    root.present()?;
    Ok(())
}
