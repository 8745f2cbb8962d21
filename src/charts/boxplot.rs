//! Figures 2 and 3: one box per estimator on a log axis, with the theory's marker beside it.

use crate::charts::backend::LabCanvas;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use web_sys::HtmlCanvasElement;

use super::{
    ChartError, backend, estimator_color, prepare, text_width, widest_fitting, y_label_area,
};
use crate::chart_geometry::hover::{
    BOX_HALF_WIDTH, BoxHover, BoxplotLayout, PlotFrame, THEORY_OFFSET, box_dots,
};
use crate::chart_geometry::{PixelBounds, TheoryMarker, boxplot_range, power_of_ten_label};
use crate::numerics::estimators::EstimatorId;
use crate::numerics::stats::BoxSummary;

/// One box of a boxplot chart.
pub struct BoxplotEntry {
    pub label: &'static str,
    pub estimator: EstimatorId,
    /// `log10` of each dataset's value.
    pub values: Vec<f64>,
    /// `log10` of a theoretical value to mark on the box (Lemma 3.1's median expected MSE).
    pub theory: Option<f64>,
    /// `ln` of the median the results table shows, which the box's tooltip repeats.
    pub log_median: Option<f64>,
}

/// Figures 2 and 3: one box per estimator on a log axis (Tukey whiskers at 1.5 IQR, outliers
/// as circles, every dataset's value as a faint dot). Entries carry `log10` of the values
/// (the quartiles are those of the logs), so values far beyond f64's range are still drawn;
/// non-finite logs (an exact estimate gives −inf) are left out. Returns where everything went,
/// for hover; `metric` names the values in its tooltips.
pub fn draw_boxplots(
    canvas: &HtmlCanvasElement,
    title: &str,
    y_label: &str,
    metric: &'static str,
    entries: &[BoxplotEntry],
) -> Result<BoxplotLayout, ChartError> {
    let dpr = prepare(canvas, 320);
    let px = |v: f64| (v * dpr).round() as i32;
    let root = backend(canvas)?.into_drawing_area();
    root.fill(&WHITE)?;
    // Values are log10s, so huge or tiny errors stay plottable; only NaN/±inf are left out
    // (−inf is an exact estimate).
    let plottable = |v: &f64| v.is_finite();
    let (lo, hi) = boxplot_range(entries.iter().flat_map(|e| e.values.iter().copied()))
        .ok_or(ChartError::NoFiniteData("the boxplot"))?;
    let k = entries.len();
    let with_theory = entries.iter().any(|e| e.theory.is_some());
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", px(15.0)).into_font())
        .margin(px(8.0))
        // A strip between the title and the plot for the theory marker's legend, clear of
        // the arrows and their values at the plot's top edge.
        .set_label_area_size(
            LabelAreaPosition::Top,
            px(if with_theory { 18.0 } else { 0.0 }),
        )
        .x_label_area_size(px(34.0))
        .y_label_area_size(y_label_area(&root, &px, (lo, hi), power_of_ten_label, 64.0))
        .build_cartesian_2d(-0.5..k as f64 - 0.5, lo..hi)?;
    // Estimator names are drawn under each box below; the numeric x ticks stay blank.
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(y_label)
        .x_label_formatter(&|_| String::new())
        .y_label_formatter(&|v| power_of_ten_label(*v))
        .label_style(("sans-serif", px(11.0)))
        .axis_desc_style(("sans-serif", px(12.0)))
        .light_line_style(RGBColor(240, 240, 240))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()?;
    let stroke = px(1.5).max(1) as u32;
    let plot_width = {
        let (x_range, _) = chart.plotting_area().get_pixel_range();
        f64::from(x_range.end - x_range.start)
    };
    let slot_width = plot_width / k.max(1) as f64 - px(4.0) as f64;
    let label_font = ("sans-serif", px(11.0)).into_font();
    // Every box by its estimator's name where all names fit under their boxes, else all by
    // their ids (names ran into each other at 1280 px).
    let names_fit = entries
        .iter()
        .all(|e| text_width(&root, &label_font, e.label) <= slot_width);
    for (i, entry) in entries.iter().enumerate() {
        let values: Vec<f64> = entry.values.iter().copied().filter(plottable).collect();
        let dots = box_dots(&entry.values);
        let Some(summary) = BoxSummary::of(&values) else {
            continue;
        };
        let x = i as f64;
        let color = estimator_color(entry.estimator);
        let line = ShapeStyle::from(&color).stroke_width(stroke);
        let half = BOX_HALF_WIDTH;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(x - half, summary.q1), (x + half, summary.q3)],
            color.mix(0.25).filled(),
        )))?;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(x - half, summary.q1), (x + half, summary.q3)],
            line,
        )))?;
        let segments = [
            [(x - half, summary.median), (x + half, summary.median)],
            [(x, summary.q3), (x, summary.whisker_high)],
            [(x, summary.q1), (x, summary.whisker_low)],
            [
                (x - half / 2.0, summary.whisker_high),
                (x + half / 2.0, summary.whisker_high),
            ],
            [
                (x - half / 2.0, summary.whisker_low),
                (x + half / 2.0, summary.whisker_low),
            ],
        ];
        chart.draw_series(
            segments
                .into_iter()
                .map(|s| PathElement::new(s.to_vec(), line)),
        )?;
        // Every dataset's value, spread horizontally so that equal values stay visible; in a
        // darker shade of the colour, since a light one vanished on its own box (orange and
        // yellow on their 25 % fill).
        let dot = RGBColor(
            (f64::from(color.0) * 0.6) as u8,
            (f64::from(color.1) * 0.6) as u8,
            (f64::from(color.2) * 0.6) as u8,
        );
        chart.draw_series(dots.iter().map(|&(_, offset, v)| {
            Circle::new((x + offset, v), px(2.0).max(1), dot.mix(0.7).filled())
        }))?;
        let (label_x, label_y) = chart.backend_coord(&(x, lo));
        let label = if names_fit {
            entry.label
        } else {
            entry.estimator.id()
        };
        root.draw(&Text::new(
            label,
            (label_x, label_y + px(8.0)),
            label_font
                .clone()
                .color(&RGBColor(40, 40, 40))
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
        chart.draw_series(
            summary
                .outliers
                .iter()
                .map(|v| Circle::new((x, *v), px(3.5).max(2), line)),
        )?;
        if let Some(theory) = entry.theory.filter(|t| t.is_finite()) {
            draw_theory_marker(&root, &chart, x + THEORY_OFFSET, theory, (lo, hi), &px)?;
        }
    }
    if with_theory {
        let (plot_x, plot_y) = chart.plotting_area().get_base_pixel();
        let font = ("sans-serif", px(11.0)).into_font();
        let legend = widest_fitting(
            &root,
            &font,
            plot_width - px(16.0) as f64,
            &[
                "◆ MSE formula (Lemma 3.1 for HCEXP): median of each dataset's expected MSE",
                "◆ Lemma 3.1: median of each dataset's expected MSE",
                "◆ Lemma 3.1: median expected MSE",
            ],
        )
        .unwrap_or("◆ Lemma 3.1");
        root.draw(&Text::new(
            legend,
            (plot_x + px(8.0), plot_y - px(15.0)),
            font.color(&BLACK),
        ))?;
    }
    let (x_range, y_range) = chart.plotting_area().get_pixel_range();
    root.present()?;
    Ok(BoxplotLayout {
        frame: PlotFrame {
            bounds: PixelBounds::from_device(x_range, y_range, dpr),
            x_range: (-0.5, k as f64 - 0.5),
            y_range: (lo, hi),
            log_x: false,
        },
        metric,
        boxes: entries
            .iter()
            .map(|e| BoxHover {
                label: e.estimator.label().to_string(),
                values: e.values.clone(),
                log_median: e.log_median,
                theory: e.theory,
            })
            .collect(),
    })
}

type LogChart<'a> = ChartContext<
    'a,
    LabCanvas,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// A black diamond at the theoretical value beside a box; a value beyond the axis is drawn
/// as an arrow on the edge with its number, so a huge theory does not squash the boxes.
fn draw_theory_marker(
    root: &DrawingArea<LabCanvas, plotters::coord::Shift>,
    chart: &LogChart<'_>,
    x: f64,
    theory: f64,
    axis: (f64, f64),
    px: &impl Fn(f64) -> i32,
) -> Result<(), ChartError> {
    let size = px(5.0).max(3);
    let marker = TheoryMarker::new(theory, axis);
    let (cx, cy) = chart.backend_coord(&(x, marker.at(axis)));
    // An arrow's base, away from its tip on the edge, and where its label goes.
    let arrow = match marker {
        TheoryMarker::Diamond(_) => None,
        TheoryMarker::Above(label) => Some((label, cy + 2 * size, cy + 2 * size + px(2.0))),
        TheoryMarker::Below(label) => Some((label, cy - 2 * size, cy - 2 * size - px(14.0))),
    };
    if let Some((label, base, label_y)) = arrow {
        root.draw(&Polygon::new(
            vec![(cx, cy), (cx + size, base), (cx - size, base)],
            BLACK.filled(),
        ))?;
        root.draw(&Text::new(
            label,
            (cx + size + px(2.0), label_y),
            ("sans-serif", px(10.0)).into_font().color(&BLACK),
        ))?;
    } else {
        root.draw(&Polygon::new(
            vec![
                (cx, cy - size),
                (cx + size, cy),
                (cx, cy + size),
                (cx - size, cy),
            ],
            BLACK.filled(),
        ))?;
    }
    Ok(())
}
