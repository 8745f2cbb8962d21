//! Canvas charts (WebAssembly only): Figure 1's scatter panels and Figures 2–3's boxplots.
//!
//! Each function sizes the canvas backing store to its CSS size × `devicePixelRatio` (sharp
//! on HiDPI screens), draws with plotters, and returns `Result`: nothing here panics on data
//! the user can influence.

use std::fmt;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_canvas::CanvasBackend;
use web_sys::HtmlCanvasElement;

use crate::math::experiment::ScatterSeries;
use crate::math::heuristics::AHeuristic;
use crate::math::stats::{BoxSummary, quantile};

/// Why a chart could not be drawn.
#[derive(Clone, Debug, PartialEq)]
pub enum ChartError {
    /// The canvas has no 2D context (or is not in the document).
    NoContext,
    /// Nothing finite to plot.
    NoFiniteData(&'static str),
    /// plotters reported a drawing error.
    Draw(String),
}

impl fmt::Display for ChartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChartError::NoContext => write!(f, "the canvas has no 2D drawing context"),
            ChartError::NoFiniteData(what) => write!(f, "no finite values to plot for {what}"),
            ChartError::Draw(e) => write!(f, "drawing failed: {e}"),
        }
    }
}

impl std::error::Error for ChartError {}

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for ChartError {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        ChartError::Draw(e.to_string())
    }
}

/// The colour of an estimator, the same in every chart and in the table.
pub fn estimator_color(heuristic: AHeuristic) -> RGBColor {
    match heuristic {
        AHeuristic::Identity => RGBColor(214, 96, 77),
        AHeuristic::MeanOnly => RGBColor(230, 159, 0),
        AHeuristic::VarianceAdjusted => RGBColor(33, 102, 172),
    }
}

/// CSS hex of [`estimator_color`], for the table's swatches.
pub fn estimator_css_color(heuristic: AHeuristic) -> String {
    let RGBColor(r, g, b) = estimator_color(heuristic);
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// Sizes the backing store to CSS size × device pixel ratio; returns the ratio.
fn prepare(canvas: &HtmlCanvasElement, fallback_height: u32) -> f64 {
    let dpr = web_sys::window()
        .map(|w| w.device_pixel_ratio())
        .filter(|r| r.is_finite() && *r > 0.0)
        .unwrap_or(1.0)
        .min(4.0);
    let css_width = match canvas.client_width() {
        w if w > 0 => w as f64,
        _ => 480.0,
    };
    let css_height = match canvas.client_height() {
        h if h > 0 => h as f64,
        _ => fallback_height as f64,
    };
    canvas.set_width((css_width * dpr).round() as u32);
    canvas.set_height((css_height * dpr).round() as u32);
    dpr
}

fn backend(canvas: &HtmlCanvasElement) -> Result<CanvasBackend, ChartError> {
    CanvasBackend::with_canvas_object(canvas.clone()).ok_or(ChartError::NoContext)
}

/// Compact number formatting for axis labels: four significant digits, trailing zeros
/// trimmed, scientific notation outside [0.001, 10⁴).
fn tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if (1e-3..1e4).contains(&a) {
        let decimals = (3 - a.log10().floor() as i32).clamp(0, 6) as usize;
        let s = format!("{v:.decimals$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    } else {
        format!("{v:.1e}")
    }
}

/// What a scatter panel left out, for its caption.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScatterClipping {
    /// Estimates outside the plotted range, drawn on its edge (the paper's "some outliers
    /// don't appear").
    pub outside: usize,
}

/// The shared range of both scatter axes: every true value, and the central 90 % of the
/// estimates, with 5 % padding. Sharing it keeps ŜM = SM on the diagonal.
fn scatter_range(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let finite = |v: &f64| v.is_finite();
    let trues: Vec<f64> = points.iter().map(|p| p.0).filter(finite).collect();
    let estimates: Vec<f64> = points.iter().map(|p| p.1).filter(finite).collect();
    let mut lo = trues.iter().copied().fold(f64::INFINITY, f64::min);
    let mut hi = trues.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if let (Some(q05), Some(q95)) = (quantile(&estimates, 0.05), quantile(&estimates, 0.95)) {
        lo = lo.min(q05);
        hi = hi.max(q95);
    }
    if !(lo.is_finite() && hi.is_finite()) {
        return None;
    }
    let span = (hi - lo).max(hi.abs() * 1e-3).max(1e-300);
    Some(((lo - 0.05 * span).max(0.0), hi + 0.05 * span))
}

/// Figure 1, one panel: true SM against estimated SM, with the line ŜM = SM. Estimates
/// outside the range are drawn on its edge, counted and reported in the panel.
pub fn draw_scatter(
    canvas: &HtmlCanvasElement,
    series: &ScatterSeries,
) -> Result<ScatterClipping, ChartError> {
    let dpr = prepare(canvas, 300);
    let px = |v: f64| (v * dpr).round() as i32;
    let root = backend(canvas)?.into_drawing_area();
    root.fill(&WHITE)?;
    let estimator = series.estimates.estimator;
    let points: Vec<(f64, f64)> = series
        .estimates
        .log_true
        .iter()
        .zip(&series.estimates.log_estimates)
        .map(|(t, e)| (t.exp(), e.exp()))
        .filter(|(t, _)| t.is_finite())
        .collect();
    let (lo, hi) = scatter_range(&points).ok_or(ChartError::NoFiniteData("the scatter plot"))?;
    let color = estimator_color(estimator.heuristic);
    // A header with the title and the panel's numbers, above the plotting area.
    let (header, body) = root.split_vertically(px(42.0));
    let mut chart = ChartBuilder::on(&body)
        .margin(px(8.0))
        .margin_top(px(4.0))
        .x_label_area_size(px(40.0))
        .y_label_area_size(px(56.0))
        .build_cartesian_2d(lo..hi, lo..hi)?;
    chart
        .configure_mesh()
        .x_desc("true SM(x, y) = exp(x·y)")
        .y_desc("estimated SM")
        .x_labels(6)
        .y_labels(6)
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .label_style(("sans-serif", px(11.0)))
        .axis_desc_style(("sans-serif", px(12.0)))
        .light_line_style(RGBColor(240, 240, 240))
        .bold_line_style(RGBColor(218, 218, 218))
        .draw()?;
    chart.draw_series(LineSeries::new(
        [(lo, lo), (hi, hi)],
        ShapeStyle::from(&RGBColor(90, 90, 90)).stroke_width(px(1.0).max(1) as u32),
    ))?;
    let radius = px(2.2).max(1);
    let outside = points.iter().filter(|p| !(p.1 >= lo && p.1 <= hi)).count();
    chart.draw_series(points.iter().map(|&(t, e)| {
        // NaN never arises from the log domain; if it did, it would sit on the bottom edge.
        let shown = if e > hi {
            hi
        } else if e >= lo {
            e
        } else {
            lo
        };
        Circle::new((t, shown), radius, color.mix(0.5).filled())
    }))?;
    let metrics = series.metrics;
    let note = format!(
        "MSE {:.3e} · max rel. err {:.3}{}",
        metrics.mse,
        metrics.max_rel_err,
        if outside > 0 {
            format!(" · {outside} outside (on the edge)")
        } else {
            String::new()
        }
    );
    let (w, _) = header.dim_in_pixel();
    header.draw(&Text::new(
        estimator.label(),
        (w as i32 / 2, px(4.0)),
        ("sans-serif", px(15.0))
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    header.draw(&Text::new(
        note,
        (w as i32 / 2, px(24.0)),
        ("sans-serif", px(11.0))
            .into_font()
            .color(&RGBColor(60, 60, 60))
            .pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    root.present()?;
    Ok(ScatterClipping { outside })
}

/// One box of a boxplot chart.
pub struct BoxplotEntry {
    pub label: &'static str,
    pub heuristic: AHeuristic,
    pub values: Vec<f64>,
}

/// Figures 2 and 3: one box per estimator on a log axis (Tukey whiskers at 1.5 IQR, outliers
/// as circles, every dataset's value as a faint dot). Non-positive or non-finite values cannot
/// sit on a log axis and are left out of the range (a value 0 only arises from an exact
/// estimate).
pub fn draw_boxplots(
    canvas: &HtmlCanvasElement,
    title: &str,
    y_label: &str,
    entries: &[BoxplotEntry],
) -> Result<(), ChartError> {
    let dpr = prepare(canvas, 320);
    let px = |v: f64| (v * dpr).round() as i32;
    let root = backend(canvas)?.into_drawing_area();
    root.fill(&WHITE)?;
    let plottable = |v: &f64| v.is_finite() && *v > 0.0;
    let all: Vec<f64> = entries
        .iter()
        .flat_map(|e| e.values.iter().copied().filter(plottable))
        .collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !(lo.is_finite() && hi.is_finite()) {
        return Err(ChartError::NoFiniteData("the boxplot"));
    }
    let (lo, hi) = (lo / 3.0, hi * 3.0);
    let k = entries.len();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", px(15.0)).into_font())
        .margin(px(8.0))
        .x_label_area_size(px(34.0))
        .y_label_area_size(px(64.0))
        .build_cartesian_2d(-0.5..k as f64 - 0.5, (lo..hi).log_scale())?;
    // Estimator names are drawn under each box below; the numeric x ticks stay blank.
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(y_label)
        .x_label_formatter(&|_| String::new())
        .y_label_formatter(&|v| format!("{v:.0e}"))
        .label_style(("sans-serif", px(11.0)))
        .axis_desc_style(("sans-serif", px(12.0)))
        .light_line_style(RGBColor(240, 240, 240))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()?;
    let stroke = px(1.5).max(1) as u32;
    for (i, entry) in entries.iter().enumerate() {
        let values: Vec<f64> = entry.values.iter().copied().filter(plottable).collect();
        let Some(summary) = BoxSummary::of(&values) else {
            continue;
        };
        let x = i as f64;
        let color = estimator_color(entry.heuristic);
        let line = ShapeStyle::from(&color).stroke_width(stroke);
        let half = 0.28;
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
        // Every dataset's value, spread horizontally so that equal values stay visible.
        let count = values.len().max(1) as f64;
        chart.draw_series(values.iter().enumerate().map(|(j, v)| {
            let offset = half * 0.8 * ((j as f64 + 0.5) / count - 0.5);
            Circle::new((x + offset, *v), px(2.0).max(1), color.mix(0.45).filled())
        }))?;
        let (label_x, label_y) = chart.backend_coord(&(x, lo));
        root.draw(&Text::new(
            entry.label,
            (label_x, label_y + px(8.0)),
            ("sans-serif", px(11.0))
                .into_font()
                .color(&RGBColor(40, 40, 40))
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
        chart.draw_series(
            summary
                .outliers
                .iter()
                .map(|v| Circle::new((x, *v), px(3.5).max(2), line)),
        )?;
    }
    root.present()?;
    Ok(())
}
