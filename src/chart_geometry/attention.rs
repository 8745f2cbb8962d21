//! What the attention view's charts show, decided without drawing: linear and log10 axes
//! (ranges, ticks, labels), the heatmaps' colour maps and layout, the distributions' boxes,
//! notes and labels, where a legend goes and the error bars' ends.
//!
//! - this file: the label metrics every chart shares, and the re-exports;
//! - `axis`: [`Axis`], its ticks and labels;
//! - `heatmap`: [`HeatScale`], [`HeatmapLayout`] and the index ticks;
//! - `distributions`: the boxes' statistics, axis and labels;
//! - `xy`: the line charts' legend placement and error bars.
//!
//! Values on a log axis are carried as `log10` of the value (as in the rest of
//! [`crate::chart_geometry`]); [`Axis::on_axis`] maps a value to where it is drawn.

mod axis;
mod distributions;
mod heatmap;
mod xy;

pub use axis::{Axis, linear_ticks, log_label, log_ticks};
pub use distributions::{BoxLabels, DistributionStats, box_labels, distribution_axis, jitter};
pub use heatmap::{
    HeatScale, HeatmapLayout, MISSING_COLOUR, TOKEN_LABEL_CHARS, index_ticks, tick_label,
};
pub use xy::{
    Corner, LegendPlace, MIN_PLOT_WIDTH, error_bar, legend_corner, legend_fits_right, legend_width,
};

/// Average width of a character of the charts' 11 px sans-serif labels, in CSS pixels.
pub const CHAR_WIDTH: f64 = 6.2;

/// Height of a legend line, in CSS pixels.
pub const LEGEND_LINE: f64 = 15.0;

/// `label` cut to at most `max_chars` characters, with "…" if it was longer.
pub fn abbreviate(label: &str, max_chars: usize) -> String {
    let count = label.chars().count();
    if count <= max_chars {
        label.to_string()
    } else if max_chars == 0 {
        String::new()
    } else {
        let kept: String = label.chars().take(max_chars - 1).collect();
        format!("{}…", kept.trim_end())
    }
}

#[cfg(test)]
mod tests;
