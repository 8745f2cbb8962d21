//! The attention view's charts: heatmaps of attention matrices, distributions per method, and
//! line charts (with or without error bars) on linear or log axes. Their data are plain
//! slices; ranges, ticks, colour maps and layouts come from
//! [`crate::chart_geometry::attention`]. With nothing plottable a chart draws its title and
//! "no finite values" and returns `Ok`.
//!
//! - this file: the helpers the attention charts share (colours, the canvas's CSS size, an
//!   [`Axis`] as a plotters coordinate, the "nothing to plot" message);
//! - `heatmap`: [`draw_heatmap`];
//! - `distributions`: [`draw_distributions`];
//! - `xy`: [`draw_xy`] and [`draw_xy_with_errors`];
//! - `timings`: [`draw_timings`], the length study's log–log time charts.

use std::ops::Range;

use crate::charts::backend::LabCanvas;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use web_sys::HtmlCanvasElement;

use super::ChartError;
use crate::chart_geometry::attention::Axis;
pub use crate::chart_geometry::attention::HeatScale;

mod distributions;
mod heatmap;
mod timings;
mod xy;

pub use distributions::{Distribution, draw_distributions};
pub use heatmap::draw_heatmap;
pub use timings::draw_timings;
pub use xy::{ErrorBarSeries, Series, draw_xy, draw_xy_mixed, draw_xy_with_errors};

type Root = DrawingArea<LabCanvas, plotters::coord::Shift>;

pub(super) const INK: RGBColor = RGBColor(40, 40, 40);
const MUTED: RGBColor = RGBColor(100, 100, 100);

fn rgb([r, g, b]: [u8; 3]) -> RGBColor {
    RGBColor(r, g, b)
}

/// The canvas's size in CSS pixels after [`prepare`](super::prepare).
pub(super) fn css_size(canvas: &HtmlCanvasElement, dpr: f64) -> (f64, f64) {
    (
        f64::from(canvas.width()) / dpr,
        f64::from(canvas.height()) / dpr,
    )
}

/// A plotters coordinate for an [`Axis`]: its range, with its ticks and light grid lines.
/// (plotters' `WithKeyPoints` does the same but takes no label formatter.)
pub(super) struct KeyAxis {
    range: RangedCoordf64,
    ticks: Vec<f64>,
    light: Vec<f64>,
}

impl KeyAxis {
    pub(super) fn new(axis: &Axis) -> Self {
        Self {
            range: (axis.lo..axis.hi).into(),
            ticks: axis.ticks(),
            light: axis.light_ticks(),
        }
    }

    /// The axis with these labelled ticks instead of its own (and no light lines).
    pub(super) fn with_ticks(axis: &Axis, ticks: Vec<f64>) -> Self {
        Self {
            range: (axis.lo..axis.hi).into(),
            ticks,
            light: Vec::new(),
        }
    }
}

impl Ranged for KeyAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.range.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.range()
    }
}

/// The title centred at the top and `message` centred on the canvas: what a chart shows
/// when it has nothing to plot.
pub(super) fn draw_message(
    root: &Root,
    title: &str,
    message: &str,
    px: &impl Fn(f64) -> i32,
) -> Result<(), ChartError> {
    let (w, h) = root.dim_in_pixel();
    root.draw(&Text::new(
        title.to_string(),
        (w as i32 / 2, px(6.0)),
        ("sans-serif", px(15.0))
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    root.draw(&Text::new(
        message.to_string(),
        (w as i32 / 2, h as i32 / 2),
        ("sans-serif", px(13.0))
            .into_font()
            .color(&MUTED)
            .pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    root.present()?;
    Ok(())
}
