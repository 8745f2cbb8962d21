//! MSE against m on log-log axes: Lemma 3.1's formula beside the measured MSE with its
//! standard errors.

use plotters::prelude::*;
use web_sys::HtmlCanvasElement;

use super::{curve_layout, mark_above};
use crate::chart_geometry::hover::{AxisFormat, CurveLayout, HoverSeries};
use crate::chart_geometry::{focus_range, log10_error_bar, power_of_ten_label};
use crate::charts::{
    ChartError, backend, estimator_color, legend, prepare, right_margin_for, styled_mesh,
    y_label_area,
};
use crate::lab::kernel::experiment::MseCurve;

/// MSE against m on log-log axes: Lemma 3.1's mean over the pairs (line) and the measured
/// MSE with ±1 standard error over repeated draws of ω (points with bars). Returns where the
/// lines and points went, for hover.
pub fn draw_mse_curves(
    canvas: &HtmlCanvasElement,
    curves: &[MseCurve],
) -> Result<CurveLayout, ChartError> {
    let dpr = prepare(canvas, 340);
    let px = |v: f64| (v * dpr).round() as i32;
    let root = backend(canvas)?.into_drawing_area();
    root.fill(&WHITE)?;
    let ln10 = std::f64::consts::LN_10;
    // The measurements set the range; a formula line far above them (a few pairs with huge
    // |z|² rule its mean) leaves the axis with a mark instead of flattening the points.
    let measured = curves.iter().flat_map(|c| {
        c.points.iter().flat_map(|p| {
            let (_, top, bottom) = log10_error_bar(p);
            [top, bottom]
        })
    });
    let theory = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.log_theoretical_mse / ln10));
    let (lo, hi) =
        focus_range(measured, theory, 0.3, 1.0).ok_or(ChartError::NoFiniteData("MSE against m"))?;
    let (m_lo, m_hi) = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.m as f64))
        .fold((f64::INFINITY, 0.0f64), |(a, b), m| (a.min(m), b.max(m)));
    if !(m_lo.is_finite() && m_hi > m_lo) {
        return Err(ChartError::NoFiniteData("MSE against m"));
    }
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "MSE against m: Lemma 3.1 and measurement",
            ("sans-serif", px(15.0)).into_font(),
        )
        .margin(px(8.0))
        // The last power of ten on the axis sits near its right edge.
        .margin_right(right_margin_for(
            &root,
            &px,
            &format!("{:.0}", 10f64.powf((m_hi * 1.3).log10().floor())),
        ))
        .x_label_area_size(px(40.0))
        .y_label_area_size(y_label_area(&root, &px, (lo, hi), power_of_ten_label, 56.0))
        .build_cartesian_2d((m_lo / 1.3..m_hi * 1.3).log_scale(), lo..hi)?;
    styled_mesh(
        &mut chart,
        "random features m (log scale)",
        "MSE (log scale)",
        &px,
    )
    .x_label_formatter(&|v| format!("{v:.0}"))
    .y_label_formatter(&|v| power_of_ten_label(*v))
    .draw()?;
    let stroke = px(1.5).max(1) as u32;
    for curve in curves {
        let color = estimator_color(curve.estimator);
        chart.draw_series(LineSeries::new(
            curve
                .points
                .iter()
                .map(|p| (p.m as f64, p.log_theoretical_mse / ln10))
                .filter(|(_, v)| v.is_finite()),
            ShapeStyle::from(&color).stroke_width(stroke),
        ))?;
        chart.draw_series(curve.points.iter().filter_map(|p| {
            let (mid, top, bottom) = log10_error_bar(p);
            (mid.is_finite() && top.is_finite() && bottom.is_finite()).then(|| {
                ErrorBar::new_vertical(
                    p.m as f64,
                    bottom,
                    mid,
                    top,
                    ShapeStyle::from(&color).stroke_width(stroke),
                    px(8.0) as u32,
                )
            })
        }))?;
        chart.draw_series(curve.points.iter().filter_map(|p| {
            let mid = p.log_measured_mse / ln10;
            mid.is_finite()
                .then(|| Circle::new((p.m as f64, mid), px(3.0), color.filled()))
        }))?;
    }
    let above: Vec<(f64, RGBColor, String)> = curves
        .iter()
        .filter_map(|c| {
            let first = c.points.first()?;
            let v = first.log_theoretical_mse / ln10;
            (v > hi).then(|| {
                (
                    first.m as f64,
                    estimator_color(c.estimator),
                    format!(
                        "{} formula ↑ {}",
                        c.estimator.id(),
                        power_of_ten_label(v.round())
                    ),
                )
            })
        })
        .collect();
    mark_above(&chart, &root, hi, &above, &px)?;
    let lines: Vec<(RGBColor, String)> = curves
        .iter()
        .map(|c| {
            (
                estimator_color(c.estimator),
                c.estimator.label().to_string(),
            )
        })
        .collect();
    legend(
        &root,
        chart.plotting_area().get_pixel_range(),
        above.len() as i32 * px(13.0),
        &lines,
        px,
    )?;
    let mut series = Vec::new();
    for c in curves {
        let label = c.estimator.label();
        let formula: Vec<(f64, f64)> = c
            .points
            .iter()
            .map(|p| (p.m as f64, p.log_theoretical_mse / ln10))
            .collect();
        // The formula's arrow (its first point, above the axis) is hovered on the edge.
        if let Some(&(m, v)) = formula.first().filter(|p| p.1 > hi) {
            series.push(HoverSeries::on_edge(
                format!("{label}, formula (mean over the pairs)"),
                vec![(m, v)],
            ));
        }
        series.push(HoverSeries::new(
            format!("{label}, formula (mean over the pairs)"),
            formula,
        ));
        series.push(HoverSeries::new(
            format!("{label}, measured (mean of 4 draws of ω)"),
            c.points
                .iter()
                .map(|p| (p.m as f64, p.log_measured_mse / ln10))
                .collect(),
        ));
    }
    let layout = curve_layout(
        &chart,
        dpr,
        ((m_lo / 1.3, m_hi * 1.3), (lo, hi), true),
        ("m", AxisFormat::Whole),
        ("MSE", AxisFormat::PowerOfTen),
        series,
    );
    root.present()?;
    Ok(layout)
}
