//! The theory charts: MSE against m (Lemma 3.1 and measurement), MSE against an estimator's
//! parameter, Lemma 3.2's bound against r and Theorem 3.3's bound against p.
//!
//! - this file: the marks above a chart's top edge and the hover layout the charts share;
//! - `against_m`: [`draw_mse_curves`];
//! - `against_parameter`: [`draw_parameter_sweep`];
//! - `bounds`: [`draw_lemma_3_2`] and [`draw_theorem_3_3`].

use plotters::prelude::*;

use crate::chart_geometry::PixelBounds;
use crate::chart_geometry::hover::{AxisFormat, CurveLayout, HoverSeries, PlotFrame};

mod against_m;
mod against_parameter;
mod bounds;

pub use against_m::draw_mse_curves;
pub use against_parameter::{SweepEntry, draw_parameter_sweep};
pub use bounds::{TheoremEntry, draw_lemma_3_2, draw_theorem_3_3};

/// Marks at the top edge of a chart for curves whose values lie above its axis: a small
/// triangle at `x` in the curve's colour and its text (`id ↑ 10¹⁷³³`) beside it.
fn mark_above<DB: DrawingBackend, X: Ranged<ValueType = f64>>(
    chart: &ChartContext<'_, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    root: &DrawingArea<DB, plotters::coord::Shift>,
    hi: f64,
    marks: &[(f64, RGBColor, String)],
    px: &impl Fn(f64) -> i32,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    for (k, (x, color, text)) in marks.iter().enumerate() {
        let (bx, by) = chart.backend_coord(&(*x, hi));
        let size = px(5.0);
        root.draw(&Polygon::new(
            vec![
                (bx, by),
                (bx - size, by + size + px(2.0)),
                (bx + size, by + size + px(2.0)),
            ],
            color.filled(),
        ))?;
        root.draw(&Text::new(
            text.clone(),
            (bx + px(8.0), by + px(2.0) + k as i32 * px(13.0)),
            ("sans-serif", px(11.0)).into_font().color(color),
        ))?;
    }
    Ok(())
}

/// The hover layout of a chart drawn into `chart`'s plotting area at `dpr` backing pixels per
/// CSS pixel.
fn curve_layout<DB: DrawingBackend, X: Ranged<ValueType = f64>>(
    chart: &ChartContext<'_, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    dpr: f64,
    ranges: ((f64, f64), (f64, f64), bool),
    x: (&'static str, AxisFormat),
    y: (&'static str, AxisFormat),
    series: Vec<HoverSeries>,
) -> CurveLayout {
    let (x_pixels, y_pixels) = chart.plotting_area().get_pixel_range();
    let (x_range, y_range, log_x) = ranges;
    CurveLayout {
        frame: PlotFrame {
            bounds: PixelBounds::from_device(x_pixels, y_pixels, dpr),
            x_range,
            y_range,
            log_x,
        },
        x_name: x.0,
        x_format: x.1,
        y_name: y.0,
        y_format: y.1,
        series,
    }
}
