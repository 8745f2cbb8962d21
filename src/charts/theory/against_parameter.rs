//! MSE against an estimator's parameter (θ of the complex A): the formula's mean and median
//! over the pairs, and the measurement at the value in use.

use plotters::prelude::*;
use web_sys::HtmlCanvasElement;

use super::curve_layout;
use crate::chart_geometry::hover::{AxisFormat, CurveLayout, HoverSeries};
use crate::chart_geometry::{padded_range, power_of_ten_label};
use crate::charts::{
    ChartError, backend, estimator_color, legend, prepare, right_margin_for, styled_mesh,
    y_label_area,
};
use crate::numerics::estimators::EstimatorId;

/// One estimator's line of the MSE-against-parameter chart: its formula's mean over the
/// scatter dataset at every value, and the MSE measured at the value in use.
#[derive(Clone, Debug)]
pub struct SweepEntry {
    pub estimator: EstimatorId,
    pub values: Vec<f64>,
    /// `log10` of the formula's mean MSE at each value (for the page's m).
    pub log10_mse: Vec<f64>,
    /// `log10` of the formula's median over the pairs (the typical pair), dashed.
    pub log10_median_mse: Vec<f64>,
    /// The value in use and `log10` of the measured MSE there.
    pub measured: (f64, f64),
}

/// MSE against an estimator parameter (θ of the complex A): lines from the formula, a dot
/// for each measurement at the current value. Returns where they went, for hover.
pub fn draw_parameter_sweep(
    canvas: &HtmlCanvasElement,
    parameter: &'static str,
    entries: &[SweepEntry],
) -> Result<CurveLayout, ChartError> {
    let dpr = prepare(canvas, 340);
    let px = |v: f64| (v * dpr).round() as i32;
    let root = backend(canvas)?.into_drawing_area();
    root.fill(&WHITE)?;
    let values = entries.iter().flat_map(|e| {
        e.log10_mse
            .iter()
            .chain(&e.log10_median_mse)
            .copied()
            .chain([e.measured.1])
    });
    let (lo, hi) = padded_range(values, 0.3, 1.0)
        .ok_or(ChartError::NoFiniteData("MSE against the parameter"))?;
    let x_hi = entries
        .iter()
        .flat_map(|e| e.values.iter().copied())
        .fold(0.0f64, f64::max)
        .max(1e-6);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("MSE against {parameter}: formula and measurement"),
            ("sans-serif", px(15.0)).into_font(),
        )
        .margin(px(8.0))
        .margin_right(right_margin_for(&root, &px, &format!("{x_hi:.2}")))
        .x_label_area_size(px(40.0))
        .y_label_area_size(y_label_area(&root, &px, (lo, hi), power_of_ten_label, 56.0))
        .build_cartesian_2d(0.0..x_hi, lo..hi)?;
    styled_mesh(
        &mut chart,
        &format!("{parameter} (0: real A; π/2 with a = 1: random Fourier features)"),
        "MSE on the scatter dataset (log scale)",
        &px,
    )
    .x_label_formatter(&|v| format!("{v:.2}"))
    .y_label_formatter(&|v| power_of_ten_label(*v))
    .draw()?;
    let stroke = px(1.5).max(1) as u32;
    for entry in entries {
        let color = estimator_color(entry.estimator);
        chart.draw_series(LineSeries::new(
            entry
                .values
                .iter()
                .zip(&entry.log10_mse)
                .map(|(x, y)| (*x, *y))
                .filter(|(_, y)| y.is_finite()),
            ShapeStyle::from(&color).stroke_width(stroke),
        ))?;
        chart.draw_series(DashedLineSeries::new(
            entry
                .values
                .iter()
                .zip(&entry.log10_median_mse)
                .map(|(x, y)| (*x, *y))
                .filter(|(_, y)| y.is_finite()),
            px(6.0),
            px(4.0),
            ShapeStyle::from(&color).stroke_width(stroke),
        ))?;
        let (x, y) = entry.measured;
        if x.is_finite() && y.is_finite() {
            chart.draw_series(std::iter::once(Circle::new(
                (x, y.clamp(lo, hi)),
                px(4.5),
                color.filled(),
            )))?;
        }
    }
    let lines: Vec<(RGBColor, String)> = entries
        .iter()
        .map(|e| {
            (
                estimator_color(e.estimator),
                e.estimator.label().to_string(),
            )
        })
        .collect();
    legend(
        &root,
        chart.plotting_area().get_pixel_range(),
        0,
        &lines,
        px,
    )?;
    let mut series = Vec::new();
    for e in entries {
        let label = e.estimator.label();
        let line = |ys: &[f64]| e.values.iter().copied().zip(ys.iter().copied()).collect();
        series.push(HoverSeries::on_edge(
            format!("{label}, measured at the {parameter} in use"),
            vec![e.measured],
        ));
        series.push(HoverSeries::new(
            format!("{label}, formula (mean over the pairs)"),
            line(&e.log10_mse),
        ));
        series.push(HoverSeries::new(
            format!("{label}, formula (median over the pairs)"),
            line(&e.log10_median_mse),
        ));
    }
    let layout = curve_layout(
        &chart,
        dpr,
        ((0.0, x_hi), (lo, hi), false),
        (parameter, AxisFormat::TwoDecimals),
        ("MSE", AxisFormat::PowerOfTen),
        series,
    );
    root.present()?;
    Ok(layout)
}
