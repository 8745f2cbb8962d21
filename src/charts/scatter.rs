//! Figure 1, one panel per estimator: true SM against estimated SM. The ranges, the log-axes
//! switch, the labels and where each dot goes come from [`ScatterPlan`].

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

use super::{
    ChartError, backend, estimator_color, prepare, right_margin_for, styled_mesh, wrap_at,
};
use crate::chart_geometry::{PixelBounds, ScatterLayout, ScatterPlan};
use crate::lab::kernel::experiment::ScatterSeries;

/// Fills a dot of `radius` pixels at each of `centres` (canvas pixels) in one path.
fn fill_dots(
    canvas: &HtmlCanvasElement,
    centres: &[(i32, i32)],
    radius: f64,
    color: RGBAColor,
) -> Result<(), ChartError> {
    let context = canvas
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
        .ok_or(ChartError::NoContext)?;
    let RGBAColor(r, g, b, alpha) = color;
    context.set_fill_style_str(&format!("rgba({r}, {g}, {b}, {alpha})"));
    context.begin_path();
    for &(x, y) in centres {
        let (x, y) = (f64::from(x), f64::from(y));
        context.move_to(x + radius, y);
        context
            .arc(x, y, radius, 0.0, std::f64::consts::TAU)
            .map_err(|_| ChartError::Draw("a scatter dot could not be drawn".into()))?;
    }
    context.fill();
    Ok(())
}

/// Figure 1, one panel: true SM against estimated SM, with the line ŜM = SM. Estimates
/// outside the range are drawn on its edge, counted and reported in the panel; the pair
/// `highlight` (the probe's) is ringed.
pub fn draw_scatter(
    canvas: &HtmlCanvasElement,
    series: &ScatterSeries,
    highlight: Option<usize>,
) -> Result<ScatterLayout, ChartError> {
    let dpr = prepare(canvas, 300);
    let px = |v: f64| (v * dpr).round() as i32;
    let root = backend(canvas)?.into_drawing_area();
    root.fill(&WHITE)?;
    let estimator = series.estimates.estimator;
    let plan =
        ScatterPlan::of(&series.estimates).ok_or(ChartError::NoFiniteData("the scatter plot"))?;
    let ((lo, hi), (y_lo, y_hi)) = (plan.x_range, plan.y_range);
    let color = estimator_color(estimator);
    // A header with the title and the panel's numbers, above the plotting area; the numbers
    // wrap at their separators where they do not fit on one line.
    let note_font = ("sans-serif", px(11.0)).into_font();
    let (width, _) = root.dim_in_pixel();
    let note_lines = wrap_at(
        &root,
        &note_font,
        f64::from(width) - f64::from(px(8.0)),
        &plan.note(&series.metrics),
        " · ",
    );
    let extra_lines = note_lines.len().saturating_sub(1) as i32;
    let (header, body) = root.split_vertically(px(42.0) + extra_lines * px(13.0));
    let right = right_margin_for(&root, &px, &plan.axis_label(hi));
    let mut chart = ChartBuilder::on(&body)
        .margin(px(8.0))
        .margin_top(px(4.0))
        .margin_right(right)
        .x_label_area_size(px(40.0))
        .y_label_area_size(px(56.0))
        .build_cartesian_2d(lo..hi, y_lo..y_hi)?;
    styled_mesh(&mut chart, plan.x_desc(), plan.y_desc(), &px)
        .x_labels(6)
        .y_labels(6)
        .x_label_formatter(&|v| plan.axis_label(*v))
        .y_label_formatter(&|v| plan.axis_label(*v))
        .draw()?;
    chart.draw_series(LineSeries::new(
        [(lo, lo), (hi, hi)],
        ShapeStyle::from(&RGBColor(90, 90, 90)).stroke_width(px(1.0).max(1) as u32),
    ))?;
    let radius = px(2.2).max(1);
    // Thousands of dots: one canvas path filled once, instead of one plotters element (and
    // one path and fill) per dot, which took most of the main thread's drawing time.
    let centres: Vec<(i32, i32)> = plan.dots().map(|d| chart.backend_coord(&d)).collect();
    fill_dots(canvas, &centres, f64::from(radius), color.mix(0.5))?;
    let (w, _) = header.dim_in_pixel();
    header.draw(&Text::new(
        estimator.label(),
        (w as i32 / 2, px(4.0)),
        ("sans-serif", px(15.0))
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    for (i, line) in note_lines.iter().enumerate() {
        header.draw(&Text::new(
            line.as_str(),
            (w as i32 / 2, px(24.0) + i as i32 * px(13.0)),
            note_font
                .clone()
                .color(&RGBColor(60, 60, 60))
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    if let Some(ring) = highlight.and_then(|i| plan.ring(i)) {
        chart.draw_series(std::iter::once(Circle::new(
            ring,
            px(7.0),
            ShapeStyle::from(&BLACK).stroke_width(px(2.0).max(1) as u32),
        )))?;
    }
    let (x_range, y_range) = chart.plotting_area().get_pixel_range();
    root.present()?;
    Ok(plan.layout(PixelBounds::from_device(x_range, y_range, dpr)))
}

/// Draws the ring of a highlighted pair at `at` (CSS pixels) on `overlay`, a transparent
/// canvas laid over a scatter panel; `None` clears it. Redrawing only this layer keeps hover
/// cheap: the panel itself, with its thousands of dots, is not redrawn.
pub fn draw_highlight(
    overlay: &HtmlCanvasElement,
    at: Option<(f64, f64)>,
) -> Result<(), ChartError> {
    let dpr = web_sys::window()
        .map(|w| w.device_pixel_ratio())
        .filter(|r| r.is_finite() && *r > 0.0)
        .unwrap_or(1.0)
        .min(4.0);
    let (width, height) = (
        (f64::from(overlay.client_width()) * dpr).round() as u32,
        (f64::from(overlay.client_height()) * dpr).round() as u32,
    );
    // Resizing clears the canvas; otherwise clear it by hand.
    if overlay.width() != width || overlay.height() != height {
        overlay.set_width(width);
        overlay.set_height(height);
    }
    let context = overlay
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
        .ok_or(ChartError::NoContext)?;
    context.clear_rect(0.0, 0.0, f64::from(width), f64::from(height));
    let Some((x, y)) = at.filter(|(x, y)| x.is_finite() && y.is_finite()) else {
        return Ok(());
    };
    let (x, y) = (x * dpr, y * dpr);
    let ring = |radius: f64, width: f64, color: &str| -> Result<(), ChartError> {
        context.begin_path();
        context
            .arc(x, y, radius * dpr, 0.0, std::f64::consts::TAU)
            .map_err(|_| ChartError::Draw("the highlight could not be drawn".into()))?;
        context.set_line_width(width * dpr);
        context.set_stroke_style_str(color);
        context.stroke();
        Ok(())
    };
    // Orange (Okabe–Ito) on a white halo, visible on the dots and on the probe's black ring.
    ring(9.0, 5.0, "rgba(255, 255, 255, 0.9)")?;
    ring(9.0, 2.5, "#d55e00")?;
    Ok(())
}
