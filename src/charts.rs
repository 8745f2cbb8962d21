//! Canvas charts (WebAssembly only): Figure 1's scatter panels and Figures 2–3's boxplots.
//!
//! Each function sizes the canvas backing store to its CSS size × `devicePixelRatio` (sharp
//! on HiDPI screens), draws with plotters, and returns `Result`: nothing here panics on data
//! the user can influence.

use std::fmt;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_canvas::CanvasBackend;
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

use crate::math::estimators::EstimatorId;
use crate::math::experiment::{CurvePoint, MseCurve, ScatterSeries};
use crate::math::logspace::SignedLog;
use crate::math::probe::ProbeResult;
use crate::math::stats::{BoxSummary, format_from_log, quantile};
use crate::math::theory::{Theorem33Inputs, log_lemma_3_2_bound};

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
pub fn estimator_color(estimator: EstimatorId) -> RGBColor {
    let [r, g, b] = estimator.get().colour();
    RGBColor(r, g, b)
}

/// CSS hex of [`estimator_color`], for the table's swatches.
pub fn estimator_css_color(estimator: EstimatorId) -> String {
    let RGBColor(r, g, b) = estimator_color(estimator);
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

fn backend(canvas: &HtmlCanvasElement) -> Result<CanvasBackend, ChartError> {
    CanvasBackend::with_canvas_object(canvas.clone()).ok_or(ChartError::NoContext)
}

/// The mesh every chart shares: light grid, labels and axis descriptions at the page's sizes.
fn styled_mesh<'a, 'b, X, Y, XT, YT>(
    chart: &'b mut ChartContext<'a, CanvasBackend, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
    px: &impl Fn(f64) -> i32,
) -> plotters::chart::MeshStyle<'a, 'b, X, Y, CanvasBackend>
where
    X: Ranged<ValueType = XT> + plotters::coord::ranged1d::ValueFormatter<XT>,
    Y: Ranged<ValueType = YT> + plotters::coord::ranged1d::ValueFormatter<YT>,
{
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(x_desc)
        .y_desc(y_desc)
        .label_style(("sans-serif", px(11.0)))
        .axis_desc_style(("sans-serif", px(12.0)))
        .light_line_style(RGBColor(240, 240, 240))
        .bold_line_style(RGBColor(218, 218, 218));
    mesh
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

/// Where a scatter panel put its points (CSS pixels of the canvas), so that a click can be
/// mapped back to a pair, and what it left out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScatterLayout {
    /// Estimates outside the plotted range, drawn on its edge (the paper's "some outliers
    /// don't appear").
    pub outside: usize,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    /// The x (true SM) range.
    lo: f64,
    hi: f64,
    /// The y (estimate) range: the x range unless the estimates spread far wider.
    y_lo: f64,
    y_hi: f64,
    /// Whether the axes show log10 SM (when SM spans many orders of magnitude or overflows).
    pub log_axes: bool,
}

/// A value on a scatter axis: `log10 v` on log axes (NaN, drawn on the bottom edge, for
/// `v ≤ 0`), `v` itself on linear ones.
fn scatter_axis(log_axes: bool, value: SignedLog) -> f64 {
    if !log_axes {
        value.value()
    } else if value.negative || value.ln_abs == f64::NEG_INFINITY {
        f64::NAN
    } else {
        value.ln_abs / std::f64::consts::LN_10
    }
}

/// SM spanning more than this factor on the scatter dataset switches the panels to log axes.
const LOG_AXES_SPAN: f64 = 1e4;

impl ScatterLayout {
    /// The CSS-pixel position of the point of a pair given `ln SM` and `ŜM`, clamped to the
    /// plot as drawn.
    pub fn position(&self, log_true: f64, estimate: SignedLog) -> (f64, f64) {
        let true_value = scatter_axis(self.log_axes, SignedLog::positive(log_true));
        let estimate = scatter_axis(self.log_axes, estimate);
        let fraction = |v: f64, lo: f64, hi: f64| ((v - lo) / (hi - lo)).clamp(0.0, 1.0);
        (
            self.left + fraction(true_value, self.lo, self.hi) * (self.right - self.left),
            self.bottom - fraction(estimate, self.y_lo, self.y_hi) * (self.bottom - self.top),
        )
    }

    /// The pair whose point is nearest to a click at `(x, y)` CSS pixels, within 12 pixels.
    pub fn nearest_pair(&self, series: &ScatterSeries, x: f64, y: f64) -> Option<usize> {
        let e = &series.estimates;
        e.log_true
            .iter()
            .zip(&e.estimates)
            .enumerate()
            .map(|(i, (t, est))| {
                let (px, py) = self.position(*t, *est);
                (i, (px - x).powi(2) + (py - y).powi(2))
            })
            .filter(|(_, d2)| d2.is_finite() && *d2 <= 144.0)
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i)
    }
}

/// The shared range of both scatter axes: every true value, and the central 90 % of the
/// estimates, with 5 % padding. Sharing it keeps ŜM = SM on the diagonal.
fn scatter_range(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let trues: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.0)).collect();
    let (true_lo, true_hi) = scatter_range_of(&trues)?;
    let shared = scatter_range_of(points)?;
    // Estimates spread over far more than the true values (a signed estimator at large
    // norms): give the x axis the true values alone, so they do not collapse onto one line.
    if shared.1 - shared.0 > 8.0 * (true_hi - true_lo) {
        Some((true_lo, true_hi))
    } else {
        Some(shared)
    }
}

/// [`scatter_range`] before the choice between a shared and a separate x range.
fn scatter_range_of(points: &[(f64, f64)]) -> Option<(f64, f64)> {
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
    // Keep 0 as the floor unless estimates go negative (trigonometric features, a complex A):
    // then the axis extends below 0 to show them.
    let floor = if lo < 0.0 { f64::NEG_INFINITY } else { 0.0 };
    Some(((lo - 0.05 * span).max(floor), hi + 0.05 * span))
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
    let log_true = &series.estimates.log_true;
    let (min_log, max_log) = log_true
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), l| {
            (a.min(*l), b.max(*l))
        });
    // exp overflows near 709; far before that a linear axis shows one dot per decade.
    let log_axes =
        max_log - min_log > LOG_AXES_SPAN.ln() || max_log.abs().max(min_log.abs()) > 300.0;
    let points: Vec<(f64, f64)> = log_true
        .iter()
        .zip(&series.estimates.estimates)
        .map(|(t, e)| {
            (
                scatter_axis(log_axes, SignedLog::positive(*t)),
                scatter_axis(log_axes, *e),
            )
        })
        .collect();
    let negative = series
        .estimates
        .estimates
        .iter()
        .filter(|e| e.negative)
        .count();
    let ((lo, hi), (y_lo, y_hi)) = if log_axes {
        let (lo, hi) = padded_range(points.iter().map(|p| p.0), 0.0, 1.0)
            .ok_or(ChartError::NoFiniteData("the scatter plot"))?;
        let span = hi - lo;
        let range = (lo - 0.1 * span, hi + 0.1 * span);
        (range, range)
    } else {
        let x = scatter_range(&points).ok_or(ChartError::NoFiniteData("the scatter plot"))?;
        let y = scatter_range_of(&points).ok_or(ChartError::NoFiniteData("the scatter plot"))?;
        (x, y)
    };
    let color = estimator_color(estimator);
    let label = |v: f64| {
        if log_axes {
            power_of_ten_label((v * 10.0).round() / 10.0)
        } else {
            tick(v)
        }
    };
    // A header with the title and the panel's numbers, above the plotting area.
    let (header, body) = root.split_vertically(px(42.0));
    let mut chart = ChartBuilder::on(&body)
        .margin(px(8.0))
        .margin_top(px(4.0))
        .x_label_area_size(px(40.0))
        .y_label_area_size(px(56.0))
        .build_cartesian_2d(lo..hi, y_lo..y_hi)?;
    styled_mesh(
        &mut chart,
        if log_axes {
            "true SM(x, y) = exp(x·y) (log scale)"
        } else {
            "true SM(x, y) = exp(x·y)"
        },
        match (log_axes, negative > 0) {
            (true, true) => "estimated SM (log scale; ≤ 0 on the bottom edge)",
            (true, false) => "estimated SM (log scale)",
            (false, true) => "estimated SM (negative estimates below 0)",
            (false, false) => "estimated SM",
        },
        &px,
    )
    .x_labels(6)
    .y_labels(6)
    .x_label_formatter(&|v| label(*v))
    .y_label_formatter(&|v| label(*v))
    .draw()?;
    chart.draw_series(LineSeries::new(
        [(lo, lo), (hi, hi)],
        ShapeStyle::from(&RGBColor(90, 90, 90)).stroke_width(px(1.0).max(1) as u32),
    ))?;
    let radius = px(2.2).max(1);
    let outside = points
        .iter()
        .filter(|p| !(p.1 >= y_lo && p.1 <= y_hi))
        .count();
    // Thousands of dots: one canvas path filled once, instead of one plotters element (and
    // one path and fill) per dot, which took most of the main thread's drawing time.
    let centres: Vec<(i32, i32)> = points
        .iter()
        .filter(|p| p.0.is_finite())
        .map(|&(t, e)| {
            // NaN never arises from the log domain; if it did, it would sit on the bottom edge.
            let shown = if e > y_hi {
                y_hi
            } else if e >= y_lo {
                e
            } else {
                y_lo
            };
            chart.backend_coord(&(t, shown))
        })
        .collect();
    fill_dots(canvas, &centres, f64::from(radius), color.mix(0.5))?;
    let metrics = series.metrics;
    let note = format!(
        "MSE {} · max rel. err {}{}{}",
        format_from_log(metrics.log_mse, 3),
        format_from_log(metrics.log_max_rel_err, 3),
        if negative > 0 {
            format!(" · {negative} < 0")
        } else {
            String::new()
        },
        if outside > 0 {
            format!(" · {outside} on the edge")
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
    if let Some(&(t, e)) = highlight.and_then(|i| points.get(i)) {
        let shown = e.clamp(y_lo, y_hi);
        chart.draw_series(std::iter::once(Circle::new(
            (t, shown),
            px(7.0),
            ShapeStyle::from(&BLACK).stroke_width(px(2.0).max(1) as u32),
        )))?;
    }
    let (x_range, y_range) = chart.plotting_area().get_pixel_range();
    root.present()?;
    Ok(ScatterLayout {
        outside,
        left: x_range.start as f64 / dpr,
        right: x_range.end as f64 / dpr,
        top: y_range.start as f64 / dpr,
        bottom: y_range.end as f64 / dpr,
        lo,
        hi,
        y_lo,
        y_hi,
        log_axes,
    })
}

/// One box of a boxplot chart.
pub struct BoxplotEntry {
    pub label: &'static str,
    pub estimator: EstimatorId,
    /// `log10` of each dataset's value.
    pub values: Vec<f64>,
    /// `log10` of a theoretical value to mark on the box (Lemma 3.1's median expected MSE).
    pub theory: Option<f64>,
}

/// Figures 2 and 3: one box per estimator on a log axis (Tukey whiskers at 1.5 IQR, outliers
/// as circles, every dataset's value as a faint dot). Entries carry `log10` of the values
/// (the quartiles are those of the logs), so values far beyond f64's range are still drawn;
/// non-finite logs (an exact estimate gives −inf) are left out.
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
    // Values are log10s, so huge or tiny errors stay plottable; only NaN/±inf are left out
    // (−inf is an exact estimate).
    let plottable = |v: &f64| v.is_finite();
    let all: Vec<f64> = entries
        .iter()
        .flat_map(|e| e.values.iter().copied().filter(plottable))
        .collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !(lo.is_finite() && hi.is_finite()) {
        return Err(ChartError::NoFiniteData("the boxplot"));
    }
    let (lo, hi) = (lo - 0.5, hi + 0.5);
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
        .y_label_area_size(px(64.0))
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
    for (i, entry) in entries.iter().enumerate() {
        let values: Vec<f64> = entry.values.iter().copied().filter(plottable).collect();
        let Some(summary) = BoxSummary::of(&values) else {
            continue;
        };
        let x = i as f64;
        let color = estimator_color(entry.estimator);
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
        if let Some(theory) = entry.theory.filter(|t| t.is_finite()) {
            draw_theory_marker(&root, &chart, x + half + 0.06, theory, (lo, hi), &px)?;
        }
    }
    if with_theory {
        let (plot_x, plot_y) = chart.plotting_area().get_base_pixel();
        root.draw(&Text::new(
            "◆ MSE formula (Lemma 3.1 for HCEXP): median of each dataset's expected MSE",
            (plot_x + px(8.0), plot_y - px(15.0)),
            ("sans-serif", px(11.0)).into_font().color(&BLACK),
        ))?;
    }
    root.present()?;
    Ok(())
}

type LogChart<'a> = ChartContext<
    'a,
    CanvasBackend,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// A black diamond at the theoretical value beside a box; a value beyond the axis is drawn
/// as an arrow on the edge with its number, so a huge theory does not squash the boxes.
fn draw_theory_marker(
    root: &DrawingArea<CanvasBackend, plotters::coord::Shift>,
    chart: &LogChart<'_>,
    x: f64,
    theory: f64,
    (lo, hi): (f64, f64),
    px: &impl Fn(f64) -> i32,
) -> Result<(), ChartError> {
    let size = px(5.0).max(3);
    let clamped = theory.clamp(lo, hi);
    let (cx, cy) = chart.backend_coord(&(x, clamped));
    if theory == clamped {
        root.draw(&Polygon::new(
            vec![
                (cx, cy - size),
                (cx + size, cy),
                (cx, cy + size),
                (cx - size, cy),
            ],
            BLACK.filled(),
        ))?;
    } else {
        let (tip, base) = if theory > hi {
            (cy, cy + 2 * size)
        } else {
            (cy, cy - 2 * size)
        };
        root.draw(&Polygon::new(
            vec![(cx, tip), (cx + size, base), (cx - size, base)],
            BLACK.filled(),
        ))?;
        let label_y = if theory > hi {
            base + px(2.0)
        } else {
            base - px(14.0)
        };
        root.draw(&Text::new(
            format!("1e{theory:.1}"),
            (cx + size + px(2.0), label_y),
            ("sans-serif", px(10.0)).into_font().color(&BLACK),
        ))?;
    }
    Ok(())
}

/// Labels of an axis that carries `log10` of a quantity: `1e-3`, `1e0`, `1e12`, …
fn power_of_ten_label(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("1e{}", v.round() as i64)
    } else {
        format!("10^{v:.1}")
    }
}

/// The range `[lo, hi]` of finite `values`, widened by `pad` on both sides and to at least
/// `min_span`.
fn padded_range(values: impl Iterator<Item = f64>, pad: f64, min_span: f64) -> Option<(f64, f64)> {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !(lo.is_finite() && hi.is_finite()) {
        return None;
    }
    let widen = ((min_span - (hi - lo)) / 2.0).max(0.0);
    Some((lo - pad - widen, hi + pad + widen))
}

/// A small legend in the top-left corner of `area`: one line per `(colour, text)`.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    origin: (i32, i32),
    lines: &[(RGBColor, String)],
    px: impl Fn(f64) -> i32,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    for (i, (color, text)) in lines.iter().enumerate() {
        let y = origin.1 + i as i32 * px(15.0);
        area.draw(&Rectangle::new(
            [(origin.0, y + px(3.0)), (origin.0 + px(14.0), y + px(6.0))],
            color.filled(),
        ))?;
        area.draw(&Text::new(
            text.clone(),
            (origin.0 + px(20.0), y),
            ("sans-serif", px(11.0))
                .into_font()
                .color(&RGBColor(40, 40, 40)),
        ))?;
    }
    Ok(())
}

/// MSE against m on log-log axes: Lemma 3.1's mean over the pairs (line) and the measured
/// MSE with ±1 standard error over repeated draws of ω (points with bars).
pub fn draw_mse_curves(canvas: &HtmlCanvasElement, curves: &[MseCurve]) -> Result<(), ChartError> {
    let dpr = prepare(canvas, 340);
    let px = |v: f64| (v * dpr).round() as i32;
    let root = backend(canvas)?.into_drawing_area();
    root.fill(&WHITE)?;
    let ln10 = std::f64::consts::LN_10;
    // log10 of mean, mean + SE and mean − SE (cut at mean/100: a log axis has no zero).
    let bar = |p: &CurvePoint| {
        let ratio = (p.log_standard_error - p.log_measured_mse).exp();
        let mid = p.log_measured_mse;
        (
            mid / ln10,
            (mid + ratio.ln_1p()) / ln10,
            (mid + (1.0 - ratio).max(0.01).ln()) / ln10,
        )
    };
    let values = curves.iter().flat_map(|c| {
        c.points
            .iter()
            .flat_map(|p| [p.log_theoretical_mse / ln10, bar(p).1, bar(p).2])
    });
    let (lo, hi) =
        padded_range(values, 0.3, 1.0).ok_or(ChartError::NoFiniteData("MSE against m"))?;
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
        .x_label_area_size(px(40.0))
        .y_label_area_size(px(56.0))
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
            let (mid, top, bottom) = bar(p);
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
    let lines: Vec<(RGBColor, String)> = curves
        .iter()
        .map(|c| {
            (
                estimator_color(c.estimator),
                c.estimator.label().to_string(),
            )
        })
        .collect();
    let (plot_x, plot_y) = chart.plotting_area().get_base_pixel();
    legend(&root, (plot_x + px(10.0), plot_y + px(6.0)), &lines, px)?;
    root.present()?;
    Ok(())
}

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
/// for each measurement at the current value.
pub fn draw_parameter_sweep(
    canvas: &HtmlCanvasElement,
    parameter: &str,
    entries: &[SweepEntry],
) -> Result<(), ChartError> {
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
        .x_label_area_size(px(40.0))
        .y_label_area_size(px(56.0))
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
    let (plot_x, plot_y) = chart.plotting_area().get_base_pixel();
    legend(&root, (plot_x + px(10.0), plot_y + px(6.0)), &lines, px)?;
    root.present()?;
    Ok(())
}

/// Lemma 3.2 (corrected): `W(r)/sqrt(2m)` against r, with a vertical mark at each
/// estimator's data radius `max_i max(|Ax_i|, |A^-T y_i|)`.
pub fn draw_lemma_3_2(
    canvas: &HtmlCanvasElement,
    m: usize,
    radii: &[(EstimatorId, &'static str, f64)],
) -> Result<(), ChartError> {
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
    let (lo, hi) = padded_range(curve.iter().map(|p| p.1).chain([0.0]), 0.5, 2.0)
        .ok_or(ChartError::NoFiniteData("Lemma 3.2"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Lemma 3.2: bound W(r)/√(2m) on HCEXP's relative RMSE, m = {m}"),
            ("sans-serif", px(15.0)).into_font(),
        )
        .margin(px(8.0))
        .x_label_area_size(px(40.0))
        .y_label_area_size(px(56.0))
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
        curve,
        ShapeStyle::from(&BLACK).stroke_width(stroke),
    ))?;
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
    let (plot_x, plot_y) = chart.plotting_area().get_base_pixel();
    legend(&root, (plot_x + px(10.0), plot_y + px(6.0)), &lines, px)?;
    root.present()?;
    Ok(())
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
pub fn draw_theorem_3_3(
    canvas: &HtmlCanvasElement,
    m: usize,
    entries: &[TheoremEntry],
) -> Result<(), ChartError> {
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
    let values = bounds
        .iter()
        .flatten()
        .map(|p| p.1)
        .chain(levels)
        .chain([0.0]);
    let (lo, hi) = padded_range(values, 0.5, 2.0).ok_or(ChartError::NoFiniteData("Theorem 3.3"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Theorem 3.3: bound on every pair's relative RMSE, m = {m}"),
            ("sans-serif", px(15.0)).into_font(),
        )
        .margin(px(8.0))
        .x_label_area_size(px(40.0))
        .y_label_area_size(px(56.0))
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
        let (x, y) = chart.backend_coord(&(0.995, hi));
        root.draw(&Text::new(
            "bound > 1: vacuous",
            (x, y + px(4.0)),
            ("sans-serif", px(11.0))
                .into_font()
                .color(&RGBColor(178, 24, 43))
                .pos(Pos::new(HPos::Right, VPos::Top)),
        ))?;
    }
    let stroke = px(1.5).max(1) as u32;
    let mut lines = Vec::new();
    for (entry, bound) in entries.iter().zip(bounds) {
        let color = estimator_color(entry.estimator);
        let style = ShapeStyle::from(&color).stroke_width(stroke);
        let at_95 = bound
            .iter()
            .min_by(|a, b| (a.0 - 0.95).abs().total_cmp(&(b.0 - 0.95).abs()))
            .map(|p| p.1);
        chart.draw_series(LineSeries::new(bound, style))?;
        let predicted = entry.log_predicted_max_rel_rmse / ln10;
        if predicted.is_finite() {
            chart.draw_series(DashedLineSeries::new(
                [(0.5, predicted), (1.0, predicted)],
                px(6.0) as u32,
                px(4.0) as u32,
                style,
            ))?;
        }
        let observed = entry.observed_max_rel_err.log10();
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
        lines.push((
            color,
            format!(
                "{}: bound at p = 0.95 {}{}",
                entry.label,
                at_95
                    .map(power_of_ten_label)
                    .unwrap_or_else(|| "n/a".into()),
                if vacuous { " (vacuous)" } else { "" }
            ),
        ));
    }
    lines.push((
        RGBColor(90, 90, 90),
        "solid: bound · dashed: max √MSE/SM (Lemma 3.1) · dots: max observed error".to_string(),
    ));
    let (plot_x, plot_y) = chart.plotting_area().get_base_pixel();
    legend(&root, (plot_x + px(10.0), plot_y + px(6.0)), &lines, px)?;
    root.present()?;
    Ok(())
}

/// One estimator's panel in the probe chart.
pub struct ProbeEntry<'a> {
    pub estimator: EstimatorId,
    pub label: &'static str,
    pub result: &'a ProbeResult,
}

/// The single-pair probe: per estimator, the histogram of the independent estimates, the true
/// value (black), their mean (dashed, the estimator's colour) and the band SM ± √MSE of
/// Lemma 3.1 (grey). Estimates beyond the central 99 % are counted on the edge bins.
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
    let panels = root.split_evenly((1, entries.len()));
    for (entry, panel) in entries.iter().zip(panels.iter()) {
        draw_probe_panel(panel, entry, &px)?;
    }
    root.present()?;
    Ok(())
}

fn draw_probe_panel(
    panel: &DrawingArea<CanvasBackend, plotters::coord::Shift>,
    entry: &ProbeEntry<'_>,
    px: &impl Fn(f64) -> i32,
) -> Result<(), ChartError> {
    let r = entry.result;
    let finite: Vec<f64> = r
        .estimates
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    let (Some(q_lo), Some(q_hi)) = (quantile(&finite, 0.005), quantile(&finite, 0.995)) else {
        return Err(ChartError::NoFiniteData("the probe"));
    };
    let (lo, hi) = padded_range([q_lo, q_hi, r.true_value].into_iter(), 0.0, 1e-12)
        .ok_or(ChartError::NoFiniteData("the probe"))?;
    let span = hi - lo;
    let (lo, hi) = ((lo - 0.05 * span).max(0.0), hi + 0.05 * span);
    let bins = 40usize;
    let width = (hi - lo) / bins as f64;
    let mut counts = vec![0usize; bins];
    for v in &finite {
        let bin = ((v - lo) / width).floor().clamp(0.0, (bins - 1) as f64) as usize;
        counts[bin] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(1).max(1) as f64 * 1.15;
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
