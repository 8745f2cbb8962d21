//! What the attention view's charts show, decided without drawing: linear and log10 axes
//! (ranges, ticks, labels), the heatmaps' colour maps and layout, the distributions' boxes,
//! notes and labels, where a legend goes and the error bars' ends.
//!
//! Values on a log axis are carried as `log10` of the value (as in the rest of
//! [`crate::chart_geometry`]); [`Axis::on_axis`] maps a value to where it is drawn.

use crate::chart_geometry::{power_of_ten_label, superscript, tick};
use crate::numerics::stats::quantile;

/// Average width of a character of the charts' 11 px sans-serif labels, in CSS pixels.
pub const CHAR_WIDTH: f64 = 6.2;

/// Height of a legend line, in CSS pixels.
pub const LEGEND_LINE: f64 = 15.0;

/// The largest magnitude an axis end may have, so that its span `hi − lo` stays finite.
const AXIS_LIMIT: f64 = f64::MAX / 4.0;

/// One axis of a chart: linear, or log10 (then `lo` and `hi` are `log10` of the values).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Axis {
    pub log: bool,
    pub lo: f64,
    pub hi: f64,
}

impl Axis {
    /// Where `value` is drawn on a linear or log10 axis: itself, or its `log10`; `None` for
    /// non-finite values and, on a log axis, for values ≤ 0.
    pub fn on_axis(log: bool, value: f64) -> Option<f64> {
        if !value.is_finite() {
            None
        } else if log {
            (value > 0.0).then(|| value.log10())
        } else {
            Some(value)
        }
    }

    /// The axis around the finite on-axis `values`, padded by `pad` of their span on either
    /// side; an empty span is widened to half a decade either side on a log axis, and to 10 %
    /// of the value (0.5 around 0) on a linear one. Ends are kept within ±`f64::MAX / 4` so
    /// that the span is finite. `None` without a finite value.
    pub fn around(log: bool, values: impl Iterator<Item = f64>, pad: f64) -> Option<Self> {
        let (lo, hi) = values
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            });
        if !(lo.is_finite() && hi.is_finite()) {
            return None;
        }
        let (lo, hi) = (
            lo.clamp(-AXIS_LIMIT, AXIS_LIMIT),
            hi.clamp(-AXIS_LIMIT, AXIS_LIMIT),
        );
        let span = hi - lo;
        let (lo, hi) = if span > 0.0 {
            let pad = pad.max(0.0) * span;
            (lo - pad, hi + pad)
        } else if log {
            (lo - 0.5, hi + 0.5)
        } else {
            let half = if lo == 0.0 { 0.5 } else { 0.1 * lo.abs() };
            (lo - half, hi + half)
        };
        Some(Self {
            log,
            lo: lo.clamp(-AXIS_LIMIT, AXIS_LIMIT),
            hi: hi.clamp(-AXIS_LIMIT, AXIS_LIMIT),
        })
    }

    /// This axis with its lower end raised to `floor` (on the axis) if it went below it
    /// while every value was above: a linear axis of non-negative values starts at 0.
    pub fn floored(self, floor: f64, lowest_value: f64) -> Self {
        if !self.log && lowest_value >= floor && self.lo < floor && self.hi > floor {
            Self { lo: floor, ..self }
        } else {
            self
        }
    }

    /// Whether the on-axis value `v` is within the axis.
    pub fn contains(&self, v: f64) -> bool {
        v >= self.lo && v <= self.hi
    }

    /// The labelled ticks: on a log axis spanning at least two decades only whole powers of
    /// ten (every 1, 2, 5, 10, … decades, at most about eight); on a shorter log axis 1, 2
    /// and 5 times the powers of ten (1, …, 9 times if fewer than three of those fit, round
    /// values if fewer than two of these); on a linear axis round values, about six.
    pub fn ticks(&self) -> Vec<f64> {
        if self.log {
            log_ticks(self.lo, self.hi)
        } else {
            linear_ticks(self.lo, self.hi, 5.0)
        }
    }

    /// The light grid lines between the ticks: 2, …, 9 times each power of ten on a log axis
    /// of 2 to 6 decades, halfway between the ticks on a linear one.
    pub fn light_ticks(&self) -> Vec<f64> {
        let ticks = self.ticks();
        if self.log {
            let span = self.hi - self.lo;
            if !(2.0..=6.0).contains(&span) {
                return Vec::new();
            }
            let first = self.lo.floor() as i64;
            let last = self.hi.ceil() as i64;
            (first..=last)
                .flat_map(|e| (2..=9).map(move |m| e as f64 + f64::from(m).log10()))
                .filter(|v| self.contains(*v))
                .collect()
        } else {
            let step = match ticks.as_slice() {
                [a, b, ..] => b - a,
                _ => return Vec::new(),
            };
            let before = ticks.first().map(|t| t - step / 2.0);
            let after = ticks.last().map(|t| t + step / 2.0);
            before
                .into_iter()
                .chain(ticks.windows(2).map(|w| (w[0] + w[1]) / 2.0))
                .chain(after)
                .filter(|v| self.contains(*v))
                .collect()
        }
    }

    /// The label of the tick at the on-axis value `v`.
    pub fn label(&self, v: f64) -> String {
        if self.log {
            log_label(v)
        } else {
            // k × step can miss 0 by a rounding error: print it as 0.
            let step = (self.hi - self.lo).abs();
            tick(if v.abs() < step * 1e-9 { 0.0 } else { v })
        }
    }

    /// The axis description: `description`, with " (log scale)" on a log axis.
    pub fn describe(&self, description: &str) -> String {
        if self.log {
            format!("{description} (log scale)")
        } else {
            description.to_string()
        }
    }
}

/// Round linear ticks in `[lo, hi]`: steps of 1, 2 or 5 times a power of ten, about
/// `intervals` of them (at most `intervals / 0.7`); the ends alone if no step fits (an axis beyond f64's precision).
pub fn linear_ticks(lo: f64, hi: f64, intervals: f64) -> Vec<f64> {
    let span = hi - lo;
    if !(span.is_finite() && span > 0.0) {
        return if lo.is_finite() { vec![lo] } else { Vec::new() };
    }
    let raw = span / intervals.max(1.0);
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= 0.7 * raw)
        .unwrap_or(10.0 * magnitude);
    if !(step.is_finite() && step > 0.0) {
        return vec![lo, hi];
    }
    let first = (lo / step).ceil();
    let last = (hi / step).floor();
    if !(first.is_finite() && last.is_finite()) || last - first > 50.0 || last < first {
        return vec![lo, hi];
    }
    let mut ticks: Vec<f64> = (0..=(last - first) as i64)
        .map(|k| (first + k as f64) * step)
        .filter(|v| *v >= lo - step * 1e-9 && *v <= hi + step * 1e-9)
        .collect();
    ticks.dedup();
    if ticks.len() < 2 && lo < hi {
        // A span far below the values' precision (1e16 ± 1): no round step is representable.
        return vec![lo, hi];
    }
    ticks
}

/// The ticks of a log10 axis from `lo` to `hi` (see [`Axis::ticks`]).
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = hi - lo;
    if !(span.is_finite() && span > 0.0) {
        return if lo.is_finite() { vec![lo] } else { Vec::new() };
    }
    if span >= 2.0 {
        // Whole decades, every 1, 2, 5, 10, … of them.
        let raw = span / 6.0;
        let magnitude = 10f64.powf(raw.log10().floor()).max(1.0);
        let step = [1.0, 2.0, 5.0, 10.0]
            .into_iter()
            .map(|m| m * magnitude)
            .find(|s| *s >= 0.7 * raw)
            .unwrap_or(10.0 * magnitude);
        let first = (lo / step).ceil() as i64;
        let last = (hi / step).floor() as i64;
        return (first..=last).map(|k| k as f64 * step).collect();
    }
    let first = lo.floor() as i64;
    let last = hi.ceil() as i64;
    let one_to_nine = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
    for (mantissas, enough) in [(&[1.0, 2.0, 5.0][..], 3), (&one_to_nine[..], 2)] {
        let ticks: Vec<f64> = (first..=last)
            .flat_map(|e| mantissas.iter().map(move |m| e as f64 + f64::log10(*m)))
            .filter(|v| *v >= lo && *v <= hi)
            .collect();
        if ticks.len() >= enough {
            return ticks;
        }
    }
    // Less than a factor of two or so: round values, on the log axis.
    let (a, b) = (10f64.powf(lo), 10f64.powf(hi));
    linear_ticks(a, b, 4.0)
        .into_iter()
        .filter(|v| *v > 0.0)
        .map(f64::log10)
        .filter(|v| v.is_finite())
        .collect()
}

/// The label of a tick at `log10 = v`: [`power_of_ten_label`] at whole powers (`10⁻³`),
/// `2×10⁻³` at 2, …, 9 times one, else the value itself ([`tick`]).
pub fn log_label(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        return power_of_ten_label(v.round());
    }
    let exponent = v.floor();
    let mantissa = 10f64.powf(v - exponent);
    let whole = mantissa.round();
    if (mantissa - whole).abs() < 1e-6 && (2.0..=9.0).contains(&whole) {
        if (-2.0..3.0).contains(&v) {
            tick(10f64.powf(v))
        } else {
            format!("{whole:.0}×10{}", superscript(exponent as i64))
        }
    } else {
        tick(10f64.powf(v))
    }
}

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

// ---------------------------------------------------------------------------------------
// Heatmaps

/// How a heatmap maps values to colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeatScale {
    /// Sequential white → dark blue (ColorBrewer Blues, colour-blind safe) from 0 to the
    /// largest value, on a square-root scale so that small probabilities are visible.
    Probability,
    /// Diverging blue – white – red (ColorBrewer RdBu), symmetric at ±max |value|.
    Difference,
}

/// ColorBrewer Blues, 9 classes: white to dark blue.
const BLUES: [[u8; 3]; 9] = [
    [247, 251, 255],
    [222, 235, 247],
    [198, 219, 239],
    [158, 202, 225],
    [107, 174, 214],
    [66, 146, 198],
    [33, 113, 181],
    [8, 81, 156],
    [8, 48, 107],
];

/// ColorBrewer RdBu, 11 classes, from blue (negative) through white to red (positive).
const BLUE_WHITE_RED: [[u8; 3]; 11] = [
    [5, 48, 97],
    [33, 102, 172],
    [67, 147, 195],
    [146, 197, 222],
    [209, 229, 240],
    [247, 247, 247],
    [253, 219, 199],
    [244, 165, 130],
    [214, 96, 77],
    [178, 24, 43],
    [103, 0, 31],
];

/// The colour of cells without a finite value.
pub const MISSING_COLOUR: [u8; 3] = [170, 170, 170];

/// The colour at `t ∈ [0, 1]` of a palette, interpolated linearly between its stops.
fn interpolate(palette: &[[u8; 3]], t: f64) -> [u8; 3] {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let position = t * (palette.len() - 1) as f64;
    let below = (position.floor() as usize).min(palette.len() - 1);
    let above = (below + 1).min(palette.len() - 1);
    let f = position - below as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + f * (f64::from(b) - f64::from(a))).round() as u8;
    let (a, b) = (palette[below], palette[above]);
    [mix(a[0], b[0]), mix(a[1], b[1]), mix(a[2], b[2])]
}

impl HeatScale {
    /// The value at the top of the colour scale: the largest finite value (Probability) or
    /// the largest finite |value| (Difference); 0 without one.
    pub fn max_of(self, matrix: &[f64]) -> f64 {
        let finite = matrix.iter().copied().filter(|v| v.is_finite());
        match self {
            HeatScale::Probability => finite.fold(0.0, f64::max),
            HeatScale::Difference => finite.map(f64::abs).fold(0.0, f64::max),
        }
    }

    /// Where `value` sits on the colour scale, from 0 (bottom) to 1 (top), for a scale up to
    /// `max`; `None` for NaN. Infinities and values beyond the scale take its ends.
    pub fn position(self, value: f64, max: f64) -> Option<f64> {
        if value.is_nan() {
            return None;
        }
        let ratio = if max > 0.0 && max.is_finite() {
            value / max
        } else {
            // An all-zero matrix: every finite value at the scale's neutral point.
            value.signum() * f64::from(u8::from(value.is_infinite()))
        };
        Some(match self {
            HeatScale::Probability => ratio.clamp(0.0, 1.0).sqrt(),
            HeatScale::Difference => 0.5 + 0.5 * ratio.clamp(-1.0, 1.0),
        })
    }

    /// The colour at a position of the scale (see [`Self::position`]).
    pub fn colour_at(self, position: f64) -> [u8; 3] {
        match self {
            HeatScale::Probability => interpolate(&BLUES, position),
            HeatScale::Difference => interpolate(&BLUE_WHITE_RED, position),
        }
    }

    /// The colour of a cell with `value` on a scale up to `max`: grey for NaN.
    pub fn colour(self, value: f64, max: f64) -> [u8; 3] {
        self.position(value, max)
            .map_or(MISSING_COLOUR, |p| self.colour_at(p))
    }

    /// The colour bar's three labelled values, as `(position from 0 at the bottom to 1 at
    /// the top, label)`: 0, max/4 (halfway on the square-root scale) and max; or −max, 0
    /// and +max.
    pub fn bar_labels(self, max: f64) -> [(f64, String); 3] {
        let max = if max.is_finite() { max.max(0.0) } else { 0.0 };
        match self {
            HeatScale::Probability => [
                (0.0, "0".to_string()),
                (0.5, tick(max / 4.0)),
                (1.0, tick(max)),
            ],
            HeatScale::Difference => [
                (0.0, tick(-max)),
                (0.5, "0".to_string()),
                (1.0, format!("+{}", tick(max))),
            ],
        }
    }

    /// The colour bar's caption, one line each: the square-root scale of probabilities, and
    /// what grey means when some cell has no finite value.
    pub fn bar_caption(self, any_missing: bool) -> Vec<&'static str> {
        let mut lines = Vec::new();
        if self == HeatScale::Probability {
            lines.push("√ scale");
        }
        if any_missing {
            lines.push("grey: NaN");
        }
        lines
    }
}

/// Where a heatmap goes on its canvas (CSS pixels): a square plot of `side` at
/// (`left`, `top`) and the colour bar at `bar_left`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeatmapLayout {
    pub left: f64,
    pub top: f64,
    pub side: f64,
    pub bar_left: f64,
    pub bar_width: f64,
}

impl HeatmapLayout {
    /// Room for the title above, the index labels and "query i" on the left, the index
    /// labels and "key j" below, the colour bar and its labels on the right.
    pub const TITLE: f64 = 26.0;
    pub const LEFT: f64 = 52.0;
    pub const BOTTOM: f64 = 40.0;
    pub const RIGHT: f64 = 84.0;
    pub const BAR_GAP: f64 = 12.0;
    pub const BAR_WIDTH: f64 = 14.0;

    /// The layout on a `width` × `height` CSS-pixel canvas: the largest square plot that
    /// fits (at least 40 px), centred horizontally.
    pub fn new(width: f64, height: f64) -> Self {
        let room_w = width - Self::LEFT - Self::RIGHT - 8.0;
        let room_h = height - Self::TITLE - Self::BOTTOM - 6.0;
        let side = room_w.min(room_h);
        let side = if side.is_finite() {
            side.max(40.0)
        } else {
            40.0
        };
        let total = Self::LEFT + side + Self::RIGHT;
        let left = ((width - total) / 2.0).max(0.0) + Self::LEFT;
        Self {
            left,
            top: Self::TITLE,
            side,
            bar_left: left + side + Self::BAR_GAP,
            bar_width: Self::BAR_WIDTH,
        }
    }
}

/// The indices labelled on a heatmap's axes: every 1, 2, 5, 10, 20, 50, … so that at most
/// six are labelled.
pub fn index_ticks(n: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    // 1, 2, 5, 10, 20, 50, … (checked: usize has 32 bits in WebAssembly).
    let mut power = 1usize;
    loop {
        for m in [1, 2, 5] {
            let Some(step) = power.checked_mul(m) else {
                return vec![0];
            };
            if n.div_ceil(step) <= 6 {
                return (0..n).step_by(step).collect();
            }
        }
        let Some(next) = power.checked_mul(10) else {
            return vec![0];
        };
        power = next;
    }
}

// ---------------------------------------------------------------------------------------
// Distributions

/// One distribution's box: its plottable values on the axis and their quantiles.
#[derive(Clone, Debug, PartialEq)]
pub struct DistributionStats {
    /// The finite values (positive ones on a log axis), on the axis, in the given order.
    pub values: Vec<f64>,
    /// 5 %, 25 %, 50 %, 75 % and 95 % quantiles of `values`; `None` without one.
    pub quantiles: Option<[f64; 5]>,
    /// Values ≤ 0 left out of a log axis.
    pub non_positive: usize,
    /// NaN and ±inf values left out.
    pub non_finite: usize,
}

impl DistributionStats {
    pub fn new(values: &[f64], log: bool) -> Self {
        let non_finite = values.iter().filter(|v| !v.is_finite()).count();
        let non_positive = if log {
            values
                .iter()
                .filter(|v| v.is_finite() && **v <= 0.0)
                .count()
        } else {
            0
        };
        let values: Vec<f64> = values
            .iter()
            .filter_map(|v| Axis::on_axis(log, *v))
            .collect();
        let q = |p| quantile(&values, p);
        let quantiles = (|| Some([q(0.05)?, q(0.25)?, q(0.5)?, q(0.75)?, q(0.95)?]))();
        Self {
            values,
            quantiles,
            non_positive,
            non_finite,
        }
    }

    /// The values below and above the axis, drawn as arrows on its edges with their counts.
    pub fn beyond(&self, axis: &Axis) -> (usize, usize) {
        let below = self.values.iter().filter(|v| **v < axis.lo).count();
        let above = self.values.iter().filter(|v| **v > axis.hi).count();
        (below, above)
    }

    /// The text under a box's label: the caller's `note`, then the values left out.
    pub fn note(&self, note: Option<&str>) -> Option<String> {
        let mut parts: Vec<String> = note
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .into_iter()
            .collect();
        if self.non_positive > 0 {
            parts.push(format!("{} ≤ 0 left out", self.non_positive));
        }
        if self.non_finite > 0 {
            parts.push(format!("{} not finite", self.non_finite));
        }
        if self.values.is_empty() && parts.is_empty() {
            parts.push("no values".to_string());
        }
        (!parts.is_empty()).then(|| parts.join(" · "))
    }
}

/// The axis of a distributions chart: around every box's 5–95 % range (which holds the
/// central 90 % of all the values, and keeps each whisker on the axis), padded by 8 %; a
/// linear axis of non-negative values starts at 0. `None` without a plottable value.
pub fn distribution_axis(stats: &[DistributionStats], log: bool) -> Option<Axis> {
    let ends = stats
        .iter()
        .filter_map(|s| s.quantiles)
        .flat_map(|q| [q[0], q[4]]);
    let axis = Axis::around(log, ends, 0.08)?;
    let lowest = stats
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .fold(f64::INFINITY, f64::min);
    Some(axis.floored(0.0, lowest))
}

/// A deterministic horizontal offset of the `index`-th dot of a box, in `[-0.5, 0.5)` of the
/// dots' strip: the golden-ratio sequence, which spreads any number of dots evenly.
pub fn jitter(index: usize) -> f64 {
    const GOLDEN: f64 = 0.618_033_988_749_894_9;
    ((index as f64 + 0.5) * GOLDEN).fract() - 0.5
}

/// How the labels under the boxes are written.
#[derive(Clone, Debug, PartialEq)]
pub struct BoxLabels {
    /// Vertical (reading upwards) because a horizontal label does not fit its slot.
    pub rotated: bool,
    /// The labels, abbreviated to fit.
    pub labels: Vec<String>,
    /// The notes, abbreviated to fit.
    pub notes: Vec<Option<String>>,
    /// The height (CSS px) of the area under the plot that the labels need.
    pub height: f64,
}

/// The labels under `labels.len()` boxes of `slot` CSS pixels each, with their `notes`, when
/// at most `max_height` CSS pixels are available under the plot: horizontal if every label
/// and note fits its slot, else vertical, cut to fit the height.
pub fn box_labels(
    labels: &[&str],
    notes: &[Option<String>],
    slot: f64,
    max_height: f64,
) -> BoxLabels {
    let note_char = CHAR_WIDTH * 0.85;
    let width = |s: &str, w: f64| s.chars().count() as f64 * w;
    let fits = labels.iter().all(|l| width(l, CHAR_WIDTH) <= slot - 4.0)
        && notes
            .iter()
            .flatten()
            .all(|n| width(n, note_char) <= slot - 4.0);
    let any_note = notes.iter().any(Option::is_some);
    if fits {
        return BoxLabels {
            rotated: false,
            labels: labels.iter().map(|l| l.to_string()).collect(),
            notes: notes.to_vec(),
            height: 22.0 + if any_note { 13.0 } else { 0.0 },
        };
    }
    let room = (max_height - 10.0).max(6.0 * CHAR_WIDTH);
    let max_chars = ((room / CHAR_WIDTH).floor() as usize).clamp(6, 24);
    let max_note_chars = ((room / note_char).floor() as usize).clamp(6, 28);
    let labels: Vec<String> = labels.iter().map(|l| abbreviate(l, max_chars)).collect();
    let notes: Vec<Option<String>> = notes
        .iter()
        .map(|n| n.as_deref().map(|n| abbreviate(n, max_note_chars)))
        .collect();
    let longest = labels
        .iter()
        .map(|l| width(l, CHAR_WIDTH))
        .chain(notes.iter().flatten().map(|n| width(n, note_char)))
        .fold(0.0, f64::max);
    BoxLabels {
        rotated: true,
        labels,
        notes,
        height: longest + 12.0,
    }
}

// ---------------------------------------------------------------------------------------
// Line charts

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

#[cfg(test)]
mod tests;
