//! The single-pair probe: one histogram panel per estimator.

use crate::charts::backend::LabCanvas;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use web_sys::HtmlCanvasElement;

use super::{ChartError, backend, estimator_color, prepare};
use crate::chart_geometry::{Histogram, tick};
use crate::numerics::estimators::EstimatorId;
use crate::numerics::probe::ProbeResult;

/// One estimator's panel in the probe chart.
pub struct ProbeEntry<'a> {
    pub estimator: EstimatorId,
    pub label: &'static str,
    pub result: &'a ProbeResult,
}

/// The narrowest a probe panel is drawn, in CSS pixels (its header lines need up to about 230): a
/// narrower canvas (a phone) puts the panels in rows.
pub const PROBE_PANEL_MIN_WIDTH: f64 = 250.0;

/// The height of one row of probe panels, in CSS pixels.
pub const PROBE_ROW_HEIGHT: f64 = 300.0;

/// The rows and columns of `panels` probe panels on a canvas `css_width` CSS pixels wide: as
/// many columns as fit [`PROBE_PANEL_MIN_WIDTH`] (at least one), the panels in reading order.
/// The canvas must be `rows` × [`PROBE_ROW_HEIGHT`] high (the page sets it before drawing).
pub fn probe_grid(css_width: f64, panels: usize) -> (usize, usize) {
    let panels = panels.max(1);
    let fit = (css_width / PROBE_PANEL_MIN_WIDTH).floor();
    let columns = if fit.is_finite() && fit >= 1.0 {
        (fit as usize).min(panels)
    } else {
        1
    };
    (panels.div_ceil(columns), columns)
}

/// The single-pair probe: per estimator, the histogram of the independent estimates, the true
/// value (black), their mean (dashed, the estimator's colour) and the band SM ± √MSE of
/// Lemma 3.1 (grey). Estimates beyond the central 99 % are counted on the edge bins. The
/// panels are laid out by [`probe_grid`].
pub fn draw_probe(
    canvas: &HtmlCanvasElement,
    entries: &[ProbeEntry<'_>],
) -> Result<(), ChartError> {
    let dpr = prepare(canvas, 300);
    let px = |v: f64| (v * dpr).round() as i32;
    let root = backend(canvas)?.into_drawing_area();
    root.fill(&WHITE)?;
    if entries.is_empty() {
        return Err(ChartError::NoFiniteData("the probe"));
    }
    let panels = root.split_evenly(probe_grid(f64::from(canvas.client_width()), entries.len()));
    for (entry, panel) in entries.iter().zip(panels.iter()) {
        draw_probe_panel(panel, entry, &px)?;
    }
    root.present()?;
    Ok(())
}

fn draw_probe_panel(
    panel: &DrawingArea<LabCanvas, plotters::coord::Shift>,
    entry: &ProbeEntry<'_>,
    px: &impl Fn(f64) -> i32,
) -> Result<(), ChartError> {
    let r = entry.result;
    let Histogram {
        lo,
        hi,
        width,
        counts,
        top,
    } = Histogram::new(&r.estimates, r.true_value, 40)
        .ok_or(ChartError::NoFiniteData("the probe"))?;
    let color = estimator_color(entry.estimator);
    let (header, body) = panel.split_vertically(px(44.0));
    let mut chart = ChartBuilder::on(&body)
        .margin(px(6.0))
        .x_label_area_size(px(36.0))
        .y_label_area_size(px(44.0))
        .build_cartesian_2d(lo..hi, 0.0..top)?;
    chart
        .configure_mesh()
        .x_desc("estimate of SM(x, y)")
        .y_desc("count")
        .x_labels(5)
        .y_labels(4)
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style(("sans-serif", px(10.0)))
        .axis_desc_style(("sans-serif", px(11.0)))
        .light_line_style(RGBColor(242, 242, 242))
        .bold_line_style(RGBColor(222, 222, 222))
        .draw()?;
    let rmse = r.theoretical_mse.sqrt();
    if rmse.is_finite() {
        let band = ((r.true_value - rmse).max(lo), (r.true_value + rmse).min(hi));
        if band.0 < band.1 {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(band.0, 0.0), (band.1, top)],
                RGBColor(120, 120, 120).mix(0.15).filled(),
            )))?;
        }
    }
    chart.draw_series(counts.iter().enumerate().map(|(i, c)| {
        let x0 = lo + i as f64 * width;
        Rectangle::new(
            [(x0, 0.0), (x0 + width, *c as f64)],
            color.mix(0.6).filled(),
        )
    }))?;
    let stroke = px(2.0).max(1) as u32;
    chart.draw_series(LineSeries::new(
        [(r.true_value, 0.0), (r.true_value, top)],
        ShapeStyle::from(&BLACK).stroke_width(stroke),
    ))?;
    if r.mean_estimate.is_finite() && r.mean_estimate >= lo && r.mean_estimate <= hi {
        chart.draw_series(DashedLineSeries::new(
            [(r.mean_estimate, 0.0), (r.mean_estimate, top)],
            px(5.0) as u32,
            px(4.0) as u32,
            ShapeStyle::from(&color).stroke_width(stroke),
        ))?;
    }
    let (w, _) = header.dim_in_pixel();
    let lines = [
        (entry.label.to_string(), px(13.0), BLACK),
        (
            format!(
                "SM {} · mean {} ± {} (SE)",
                tick(r.true_value),
                tick(r.mean_estimate),
                tick(r.standard_error)
            ),
            px(10.5),
            RGBColor(50, 50, 50),
        ),
        (
            format!(
                "√MSE: Lemma 3.1 {} · measured {}",
                tick(rmse),
                tick(r.empirical_mse.sqrt())
            ),
            px(10.5),
            RGBColor(50, 50, 50),
        ),
    ];
    let mut y = px(2.0);
    for (text, size, text_color) in lines {
        header.draw(&Text::new(
            text,
            (w as i32 / 2, y),
            ("sans-serif", size)
                .into_font()
                .color(&text_color)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
        y += size + px(2.0);
    }
    Ok(())
}
