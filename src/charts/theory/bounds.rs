//! The theory's bounds: Lemma 3.2's bound against r with each estimator's data radius, and
//! Theorem 3.3's high-probability bound against p beside the predicted and observed errors.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use web_sys::HtmlCanvasElement;

use super::{curve_layout, mark_above};
use crate::chart_geometry::hover::{AxisFormat, CurveLayout, HoverSeries};
use crate::chart_geometry::{focus_range, power_of_ten_label, tick};
use crate::charts::{
    ChartError, backend, estimator_color, fitted_title, legend, prepare, right_margin_for,
    styled_mesh, text_width, y_label_area,
};
use crate::numerics::estimators::EstimatorId;
use crate::numerics::theory::{Theorem33Inputs, log_lemma_3_2_bound};

/// Lemma 3.2 (corrected): `W(r)/sqrt(2m)` against r, with a vertical mark at each
/// estimator's data radius `max_i max(|Ax_i|, |A^-T y_i|)`. Returns where they went, for hover.
pub fn draw_lemma_3_2(
    canvas: &HtmlCanvasElement,
    m: usize,
    radii: &[(EstimatorId, &'static str, f64)],
) -> Result<CurveLayout, ChartError> {
    let dpr = prepare(canvas, 340);
    let px = |v: f64| (v * dpr).round() as i32;
    let root = backend(canvas)?.into_drawing_area();
    root.fill(&WHITE)?;
    let r_max = radii
        .iter()
        .map(|r| r.2)
        .filter(|r| r.is_finite())
        .fold(1.0f64, f64::max)
        * 1.15;
    let samples = 200;
    let curve: Vec<(f64, f64)> = (1..=samples)
        .map(|i| {
            let r = r_max * i as f64 / samples as f64;
            (r, log_lemma_3_2_bound(r, m) / std::f64::consts::LN_10)
        })
        .filter(|(_, v)| v.is_finite())
        .collect();
    // Around relative RMSE 1 and the smallest radius's bound; larger bounds leave the axis.
    let at_radii: Vec<f64> = radii
        .iter()
        .filter(|r| r.2.is_finite())
        .map(|r| log_lemma_3_2_bound(r.2, m) / std::f64::consts::LN_10)
        .collect();
    let smallest = at_radii.iter().copied().fold(f64::INFINITY, f64::min);
    let (lo, hi) = focus_range(
        [0.0, smallest, 1.0].into_iter(),
        at_radii.iter().copied(),
        0.5,
        2.0,
    )
    .ok_or(ChartError::NoFiniteData("Lemma 3.2"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            fitted_title(
                &root,
                &px,
                &[
                    format!("Lemma 3.2: bound W(r)/√(2m) on HCEXP's relative RMSE, m = {m}"),
                    format!("Lemma 3.2: bound on HCEXP's relative RMSE, m = {m}"),
                    format!("Lemma 3.2: bound W(r)/√(2m), m = {m}"),
                ],
            ),
            ("sans-serif", px(15.0)).into_font(),
        )
        .margin(px(8.0))
        .margin_right(right_margin_for(&root, &px, &tick(r_max)))
        .x_label_area_size(px(40.0))
        .y_label_area_size(y_label_area(&root, &px, (lo, hi), power_of_ten_label, 56.0))
        .build_cartesian_2d(0.0..r_max, lo..hi)?;
    styled_mesh(
        &mut chart,
        "r, with |Ax| ≤ r and |A⁻ᵀy| ≤ r",
        "bound on √MSE / SM (log scale)",
        &px,
    )
    .x_label_formatter(&|v| tick(*v))
    .y_label_formatter(&|v| power_of_ten_label(*v))
    .draw()?;
    let stroke = px(1.5).max(1) as u32;
    chart.draw_series(LineSeries::new(
        [(0.0, 0.0), (r_max, 0.0)],
        ShapeStyle::from(&RGBColor(178, 24, 43)).stroke_width(px(1.0).max(1) as u32),
    ))?;
    chart.draw_series(LineSeries::new(
        curve.iter().copied(),
        ShapeStyle::from(&BLACK).stroke_width(stroke),
    ))?;
    let mut series = Vec::new();
    let mut lines = vec![(RGBColor(0, 0, 0), "W(r)/√(2m)".to_string())];
    for (estimator, label, r) in radii {
        if !r.is_finite() {
            continue;
        }
        let color = estimator_color(*estimator);
        chart.draw_series(LineSeries::new(
            [(*r, lo), (*r, hi)],
            ShapeStyle::from(&color).stroke_width(stroke),
        ))?;
        let at = log_lemma_3_2_bound(*r, m) / std::f64::consts::LN_10;
        // Where its vertical line meets the bound (an arrow on the top edge above the axis).
        series.push(HoverSeries::on_edge(
            format!("{label}: the data's radius, and the bound there"),
            vec![(*r, at)],
        ));
        lines.push((
            color,
            format!(
                "{label}: r = {} → bound {}",
                tick(*r),
                power_of_ten_label((at * 10.0).round() / 10.0)
            ),
        ));
    }
    lines.push((
        RGBColor(178, 24, 43),
        "relative RMSE = 1 (above: vacuous)".to_string(),
    ));
    let above: Vec<(f64, RGBColor, String)> = radii
        .iter()
        .filter(|r| r.2.is_finite())
        .filter_map(|(estimator, _, r)| {
            let v = log_lemma_3_2_bound(*r, m) / std::f64::consts::LN_10;
            (v > hi).then(|| {
                (
                    *r,
                    estimator_color(*estimator),
                    format!("↑ {}", power_of_ten_label(v.round())),
                )
            })
        })
        .collect();
    mark_above(&chart, &root, hi, &above, &px)?;
    legend(
        &root,
        chart.plotting_area().get_pixel_range(),
        0,
        &lines,
        px,
    )?;
    series.push(HoverSeries::new("W(r)/√(2m)", curve));
    let layout = curve_layout(
        &chart,
        dpr,
        ((0.0, r_max), (lo, hi), false),
        ("r", AxisFormat::Tick),
        ("bound on √MSE/SM", AxisFormat::PowerOfTen),
        series,
    );
    root.present()?;
    Ok(layout)
}

/// One estimator's line in the Theorem 3.3 chart.
pub struct TheoremEntry {
    pub estimator: EstimatorId,
    pub label: &'static str,
    pub inputs: Theorem33Inputs,
    /// The largest relative error observed on the scatter dataset.
    pub observed_max_rel_err: f64,
    /// `log` of the largest relative RMSE Lemma 3.1 predicts on the scatter dataset.
    pub log_predicted_max_rel_rmse: f64,
}

/// Theorem 3.3: the high-probability bound against p (solid), the largest relative RMSE that
/// Lemma 3.1 predicts (dashed) and the largest relative error observed (dotted), per
/// estimator. Above 1 the bound says nothing; the chart shades that region and says so.
/// Returns where the lines went, for hover.
pub fn draw_theorem_3_3(
    canvas: &HtmlCanvasElement,
    m: usize,
    entries: &[TheoremEntry],
) -> Result<CurveLayout, ChartError> {
    let dpr = prepare(canvas, 340);
    let px = |v: f64| (v * dpr).round() as i32;
    let root = backend(canvas)?.into_drawing_area();
    root.fill(&WHITE)?;
    let ln10 = std::f64::consts::LN_10;
    let ps: Vec<f64> = (0..=60).map(|i| 0.5 + 0.499 * i as f64 / 60.0).collect();
    let bounds: Vec<Vec<(f64, f64)>> = entries
        .iter()
        .map(|e| {
            ps.iter()
                .filter_map(|&p| e.inputs.log_bound(p, m).ok().map(|b| (p, b / ln10)))
                .filter(|(_, v)| v.is_finite())
                .collect()
        })
        .collect();
    let levels = entries.iter().flat_map(|e| {
        [
            e.observed_max_rel_err.log10(),
            e.log_predicted_max_rel_rmse / ln10,
        ]
    });
    // The observed and predicted errors and the level 1 set the range; bounds far above them
    // leave the axis with a mark.
    let (lo, hi) = focus_range(
        levels.chain([0.0, 1.0]),
        bounds.iter().flatten().map(|p| p.1),
        0.5,
        2.0,
    )
    .ok_or(ChartError::NoFiniteData("Theorem 3.3"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            fitted_title(
                &root,
                &px,
                &[
                    format!("Theorem 3.3: bound on every pair's relative RMSE, m = {m}"),
                    format!("Theorem 3.3: every pair's relative RMSE, m = {m}"),
                    format!("Theorem 3.3: bound, m = {m}"),
                ],
            ),
            ("sans-serif", px(15.0)).into_font(),
        )
        .margin(px(8.0))
        .x_label_area_size(px(40.0))
        .y_label_area_size(y_label_area(&root, &px, (lo, hi), power_of_ten_label, 56.0))
        .build_cartesian_2d(0.5..1.0, lo..hi)?;
    styled_mesh(
        &mut chart,
        "probability p",
        "relative error (log scale)",
        &px,
    )
    .x_label_formatter(&|v| tick(*v))
    .y_label_formatter(&|v| power_of_ten_label(*v))
    .draw()?;
    if hi > 0.0 {
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.5, 0.0), (1.0, hi)],
            RGBColor(178, 24, 43).mix(0.07).filled(),
        )))?;
    }
    let stroke = px(1.5).max(1) as u32;
    let mut lines = Vec::new();
    let mut series = Vec::new();
    let lowest: Vec<f64> = bounds
        .iter()
        .map(|b| b.iter().map(|p| p.1).fold(f64::INFINITY, f64::min))
        .collect();
    for (entry, bound) in entries.iter().zip(bounds) {
        let color = estimator_color(entry.estimator);
        let style = ShapeStyle::from(&color).stroke_width(stroke);
        let at_95 = bound
            .iter()
            .min_by(|a, b| (a.0 - 0.95).abs().total_cmp(&(b.0 - 0.95).abs()))
            .map(|p| p.1);
        chart.draw_series(LineSeries::new(bound.iter().copied(), style))?;
        let label = entry.label;
        // The mark of a bound entirely above the axis: its point nearest p = 0.74.
        if let Some(&low) = bound
            .iter()
            .filter(|p| p.1 > hi)
            .min_by(|a, b| (a.0 - 0.74).abs().total_cmp(&(b.0 - 0.74).abs()))
            .filter(|_| bound.iter().all(|p| p.1 > hi))
        {
            series.push(HoverSeries::on_edge(format!("{label}: bound"), vec![low]));
        }
        series.push(HoverSeries::new(format!("{label}: bound"), bound.clone()));
        let predicted = entry.log_predicted_max_rel_rmse / ln10;
        series.push(HoverSeries::new(
            format!("{label}: largest √MSE/SM (Lemma 3.1)"),
            ps.iter().map(|&p| (p, predicted)).collect(),
        ));
        if predicted.is_finite() {
            chart.draw_series(DashedLineSeries::new(
                [(0.5, predicted), (1.0, predicted)],
                px(6.0) as u32,
                px(4.0) as u32,
                style,
            ))?;
        }
        let observed = entry.observed_max_rel_err.log10();
        series.push(HoverSeries::new(
            format!("{label}: largest relative error observed"),
            (0..=25)
                .map(|i| (0.5 + 0.5 * i as f64 / 25.0, observed))
                .collect(),
        ));
        if observed.is_finite() {
            chart.draw_series((0..=25).map(|i| {
                Circle::new(
                    (0.5 + 0.5 * i as f64 / 25.0, observed),
                    px(1.8),
                    color.filled(),
                )
            }))?;
        }
        let vacuous = at_95.is_some_and(|v| v > 0.0);
        let off_axis = at_95.is_some_and(|v| v > hi);
        lines.push((
            color,
            format!(
                "{}: bound at p = 0.95 {}{}{}",
                entry.label,
                at_95
                    .map(|v| power_of_ten_label((v * 10.0).round() / 10.0))
                    .unwrap_or_else(|| "n/a".into()),
                if vacuous { " (vacuous)" } else { "" },
                if off_axis { " ↑ above the axis" } else { "" }
            ),
        ));
    }
    lines.push((
        RGBColor(90, 90, 90),
        "solid: bound · dashed: max √MSE/SM (Lemma 3.1) · dots: max observed error".to_string(),
    ));
    let above: Vec<(f64, RGBColor, String)> = entries
        .iter()
        .zip(&lowest)
        .filter(|(_, low)| **low > hi)
        // The legend gives the value ("↑ above the axis"); the mark only shows where.
        .map(|(e, _)| (0.74, estimator_color(e.estimator), String::new()))
        .collect();
    mark_above(&chart, &root, hi, &above, &px)?;
    if hi > 0.0 {
        // The shaded region's label: at its lower edge (relative error 1), since its top is
        // under the legend, on a light backing and after the curves, so none runs through it.
        let (x, y) = chart.backend_coord(&(0.995, 0.0));
        let font = ("sans-serif", px(11.0)).into_font();
        let label = "bound > 1: vacuous";
        let width = text_width(&root, &font, label).ceil() as i32;
        root.draw(&Rectangle::new(
            [
                (x - width - px(2.0), y - px(16.0)),
                (x + px(2.0), y - px(2.0)),
            ],
            WHITE.mix(0.85).filled(),
        ))?;
        root.draw(&Text::new(
            label,
            (x, y - px(3.0)),
            font.color(&RGBColor(178, 24, 43))
                .pos(Pos::new(HPos::Right, VPos::Bottom)),
        ))?;
    }
    // Its entries carry long numbers and notes: wrapped inside the plot, not cut at its edge.
    legend(
        &root,
        chart.plotting_area().get_pixel_range(),
        0,
        &lines,
        px,
    )?;
    let layout = curve_layout(
        &chart,
        dpr,
        ((0.5, 1.0), (lo, hi), false),
        ("p", AxisFormat::Tick),
        ("relative error", AxisFormat::PowerOfTen),
        series,
    );
    root.present()?;
    Ok(layout)
}
