//! Canvas charts (WebAssembly only): Figure 1's scatter panels, Figures 2–3's boxplots, the
//! theory charts, the probe and the attention view's charts.
//!
//! Each function sizes the canvas backing store to its CSS size × `devicePixelRatio` (sharp
//! on HiDPI screens), draws with plotters, and returns `Result`: nothing here panics on data
//! the user can influence. What a chart shows (ranges, log axes, where a point sits, labels)
//! is decided in [`crate::chart_geometry`], which builds and is tested natively; this module
//! and its submodules only draw it.
//!
//! - this file: the errors, the estimators' colours and the helpers every chart shares;
//! - `scatter`: Figure 1's panels;
//! - `boxplot`: Figures 2 and 3;
//! - `theory`: MSE against m, MSE against a parameter, Lemma 3.2 and Theorem 3.3;
//! - `probe`: the single-pair probe's histograms;
//! - `attention`: the attention view's heatmaps, distributions and line charts;
//! - `data`: the data panel's per-component chart and overlaid histograms.

use std::fmt;

use backend::LabCanvas;
use plotters::prelude::*;
use web_sys::HtmlCanvasElement;

use crate::numerics::estimators::EstimatorId;

mod attention;
mod backend;
mod boxplot;
mod data;
mod probe;
mod scatter;
mod theory;

pub use crate::chart_geometry::ScatterLayout;
pub use attention::*;
pub use boxplot::{BoxplotEntry, draw_boxplots};
pub use data::{draw_components, draw_histogram};
pub use probe::{PROBE_ROW_HEIGHT, ProbeEntry, draw_probe, probe_grid};
pub use scatter::{draw_highlight, draw_scatter};
pub use theory::{
    SweepEntry, TheoremEntry, draw_lemma_3_2, draw_mse_curves, draw_parameter_sweep,
    draw_theorem_3_3,
};

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

/// Gives a canvas its text alternative: `role="img"` and an `aria-label` holding its key
/// numbers, so a screen reader hears what the chart shows.
pub fn describe(canvas: &HtmlCanvasElement, text: &str) {
    let _ = canvas.set_attribute("role", "img");
    let _ = canvas.set_attribute("aria-label", text);
}

/// The colour of an estimator, the same in every chart and in the table.
pub fn estimator_color(estimator: EstimatorId) -> RGBColor {
    let [r, g, b] = estimator.info().colour();
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

fn backend(canvas: &HtmlCanvasElement) -> Result<LabCanvas, ChartError> {
    LabCanvas::new(canvas).ok_or(ChartError::NoContext)
}

/// The mesh every chart shares: light grid, labels and axis descriptions at the page's sizes.
fn styled_mesh<'a, 'b, X, Y, XT, YT>(
    chart: &'b mut ChartContext<'a, LabCanvas, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
    px: &impl Fn(f64) -> i32,
) -> plotters::chart::MeshStyle<'a, 'b, X, Y, LabCanvas>
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

/// A legend at the top left of the plot whose pixel ranges are `plot` (plotters'
/// `get_pixel_range`), `skip` pixels lower: a swatch and a label per entry, each label wrapped
/// at its spaces inside the plot (continuation lines indented under its text), on a light
/// backing so that curves and edge labels do not run through the text.
fn legend(
    root: &Root,
    plot: (std::ops::Range<i32>, std::ops::Range<i32>),
    skip: i32,
    lines: &[(RGBColor, String)],
    px: impl Fn(f64) -> i32,
) -> Result<(), DrawingAreaErrorKind<<LabCanvas as DrawingBackend>::ErrorType>> {
    let origin = (plot.0.start + px(10.0), plot.1.start + px(6.0) + skip);
    let width = f64::from(plot.0.end - plot.0.start - px(20.0));
    let font = ("sans-serif", px(11.0)).into_font();
    let text_room = width - f64::from(px(20.0));
    let wrapped: Vec<Vec<String>> = lines
        .iter()
        .map(|(_, text)| wrap_at(root, &font, text_room, text, " "))
        .collect();
    // A light backing, so that labels drawn at the plot's top edge do not run through it.
    let rows = wrapped.iter().map(Vec::len).sum::<usize>() as i32;
    let widest = wrapped
        .iter()
        .flatten()
        .map(|line| text_width(root, &font, line))
        .fold(0.0f64, f64::max);
    root.draw(&Rectangle::new(
        [
            (origin.0 - px(4.0), origin.1 - px(2.0)),
            (
                origin.0 + px(24.0) + widest.ceil() as i32,
                origin.1 + rows * px(15.0) + px(2.0),
            ),
        ],
        WHITE.mix(0.85).filled(),
    ))?;
    let mut row = 0;
    for ((color, _), parts) in lines.iter().zip(wrapped) {
        let y = origin.1 + row * px(15.0);
        root.draw(&Rectangle::new(
            [(origin.0, y + px(3.0)), (origin.0 + px(14.0), y + px(6.0))],
            color.filled(),
        ))?;
        for part in parts {
            root.draw(&Text::new(
                part,
                (origin.0 + px(20.0), origin.1 + row * px(15.0)),
                font.clone().color(&RGBColor(40, 40, 40)),
            ))?;
            row += 1;
        }
    }
    Ok(())
}

/// The root drawing area of a chart.
type Root = DrawingArea<LabCanvas, plotters::coord::Shift>;

/// The width in pixels of `text` drawn in `font` (0 if the backend cannot tell).
fn text_width(root: &Root, font: &FontDesc<'_>, text: &str) -> f64 {
    root.estimate_text_size(text, &TextStyle::from(font.clone()))
        .map_or(0.0, |(w, _)| f64::from(w))
}

/// The first of `candidates` (longest first) whose width in `font` is at most `width` pixels.
fn widest_fitting<'t>(
    root: &Root,
    font: &FontDesc<'_>,
    width: f64,
    candidates: &[&'t str],
) -> Option<&'t str> {
    candidates
        .iter()
        .copied()
        .find(|text| text_width(root, font, text) <= width)
}

/// The first of `candidates` (longest first) that fits `width` pixels in `font`, else the
/// last: a chart's title on a phone is shortened instead of being cut at both ends.
fn fitted(root: &Root, font: &FontDesc<'_>, width: f64, candidates: &[String]) -> String {
    candidates
        .iter()
        .find(|text| text_width(root, font, text) <= width)
        .or(candidates.last())
        .cloned()
        .unwrap_or_default()
}

/// A chart's title (15 CSS px, as plotters' caption draws it): the first of `candidates`
/// that fits the canvas inside its 8 px margins, else the shortest.
fn fitted_title(root: &Root, px: &impl Fn(f64) -> i32, candidates: &[String]) -> String {
    let font = ("sans-serif", px(15.0)).into_font();
    let width = f64::from(root.dim_in_pixel().0) - f64::from(px(16.0));
    fitted(root, &font, width, candidates)
}

/// `text` broken into lines of at most `width` pixels at its `separator`s (a part wider than
/// `width` alone keeps its own line): long panel notes wrap instead of being cut at both ends.
fn wrap_at(
    root: &Root,
    font: &FontDesc<'_>,
    width: f64,
    text: &str,
    separator: &str,
) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for part in text.split(separator) {
        match lines.last_mut() {
            Some(line) if text_width(root, font, &format!("{line}{separator}{part}")) <= width => {
                line.push_str(separator);
                line.push_str(part);
            }
            _ => lines.push(part.to_string()),
        }
    }
    lines
}

/// A right margin that keeps an x tick label at the plot's right edge inside the canvas:
/// plotters centres a label on its tick, so such a tick needs half of `last_label`'s width
/// (never less than the usual 8 CSS pixels). "0.968" was cut in half at 1280 px.
fn right_margin_for(root: &Root, px: &impl Fn(f64) -> i32, last_label: &str) -> i32 {
    let font = ("sans-serif", px(11.0)).into_font();
    let half = (text_width(root, &font, last_label) / 2.0).ceil() as i32;
    (half + px(2.0)).max(px(8.0))
}

/// Room for a y axis's tick labels and its title: the widest of `label` over `samples`
/// values spread across `lo..hi` (plotters picks its ticks among such values), plus the
/// title's line, and never less than `minimum` CSS pixels. Labels such as 1.6×10²⁴⁴ are wider
/// than a fixed area and ran into the axis title.
fn y_label_area(
    root: &Root,
    px: &impl Fn(f64) -> i32,
    (lo, hi): (f64, f64),
    label: impl Fn(f64) -> String,
    minimum: f64,
) -> i32 {
    let font = ("sans-serif", px(11.0)).into_font();
    let samples = 24;
    let widest = (0..=samples)
        .map(|i| lo + (hi - lo) * f64::from(i) / f64::from(samples))
        .filter(|v| v.is_finite())
        .map(|v| text_width(root, &font, &label(v)))
        .fold(0.0f64, f64::max);
    // Tick marks, a gap, then the rotated axis title (about 12 px tall) and its margin.
    (widest.ceil() as i32 + px(28.0)).max(px(minimum))
}
