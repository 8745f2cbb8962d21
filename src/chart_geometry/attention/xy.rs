//! The line charts' geometry: where the legend goes (right of the plot or in the emptiest
//! corner) and the ends of the error bars.

use super::{Axis, CHAR_WIDTH};

/// Where a line chart's legend goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LegendPlace {
    /// In a column right of the plot.
    Right,
    /// Inside the plot, in this corner, on a translucent white background.
    Inside(Corner),
}

/// A corner of the plot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Corner {
    TopLeft,
    TopRight,
    BottomLeft,
    BottomRight,
}

/// The width (CSS px) of a legend with these labels: a sample, a gap and the longest label.
pub fn legend_width(labels: &[&str]) -> f64 {
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    32.0 + longest as f64 * CHAR_WIDTH
}

/// The plot needs at least this width (CSS px) beside a legend on its right.
pub const MIN_PLOT_WIDTH: f64 = 300.0;

/// Whether a legend of `legend_width` fits right of the plot on a canvas `width` CSS px
/// wide, leaving the plot (with its y labels) at least [`MIN_PLOT_WIDTH`].
pub fn legend_fits_right(width: f64, legend_width: f64) -> bool {
    width - legend_width - 70.0 >= MIN_PLOT_WIDTH
}

/// The corner of the plot where a legend box of `size` (fractions of the plot's width and
/// height) covers the fewest `points` (fractions of the plot, from its bottom-left corner);
/// top-left on a tie.
pub fn legend_corner(points: &[(f64, f64)], size: (f64, f64)) -> Corner {
    let (w, h) = size;
    let covered = |corner: Corner| {
        let (x0, y0) = match corner {
            Corner::TopLeft => (0.0, 1.0 - h),
            Corner::TopRight => (1.0 - w, 1.0 - h),
            Corner::BottomLeft => (0.0, 0.0),
            Corner::BottomRight => (1.0 - w, 0.0),
        };
        points
            .iter()
            .filter(|(x, y)| *x >= x0 && *x <= x0 + w && *y >= y0 && *y <= y0 + h)
            .count()
    };
    [
        Corner::TopLeft,
        Corner::TopRight,
        Corner::BottomLeft,
        Corner::BottomRight,
    ]
    .into_iter()
    .min_by_key(|c| covered(*c))
    .unwrap_or(Corner::TopLeft)
}

/// The ends of the error bar `y ± se` on the axis; on a log axis the lower end is cut at
/// `y/100` (a log axis has no zero). `None` if `y` is not on the axis or `se` is not finite.
pub fn error_bar(y: f64, se: f64, log: bool) -> Option<(f64, f64)> {
    Axis::on_axis(log, y)?;
    if !se.is_finite() {
        return None;
    }
    let se = se.abs();
    let low = if log { (y - se).max(y / 100.0) } else { y - se };
    Some((Axis::on_axis(log, low)?, Axis::on_axis(log, y + se)?))
}
