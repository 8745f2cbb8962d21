//! What the charts show, decided without drawing: axis ranges, the scatter panels' log-axes
//! switch, where a pair's point sits and which pair a click hits, axis labels and panel text.
//!
//! Nothing here depends on the browser or on plotters, so it builds and is tested natively;
//! `crate::charts` (WebAssembly only) draws what these functions decide. [`attention`] holds
//! the attention view's charts' geometry, [`timings`] the length study's.

pub mod attention;
pub mod data;
pub mod hover;
pub mod timings;

use std::ops::Range;

use crate::lab::kernel::experiment::{CurvePoint, DatasetMetrics, PairEstimates, ScatterSeries};
use crate::numerics::logspace::SignedLog;
use crate::numerics::stats::{format_from_log, quantile};

/// The hover text of scatter pair `index`: its index, SM, the estimate, the relative error and
/// `|z|²` (numbers beyond f64's range written from their logs).
pub fn scatter_tooltip(series: &ScatterSeries, index: usize) -> Option<String> {
    let e = &series.estimates;
    let log_true = *e.log_true.get(index)?;
    let estimate = *e.estimates.get(index)?;
    let ratio = (estimate.ln_abs - log_true).exp();
    let relative_error = if estimate.negative {
        ratio + 1.0
    } else {
        (ratio - 1.0).abs()
    };
    let sign = if estimate.negative { "−" } else { "" };
    // Within f64's range as a plain number, beyond it from the log.
    let value = |ln: f64| {
        if ln.abs() < 700.0 {
            tick(ln.exp())
        } else {
            format_from_log(ln, 4)
        }
    };
    let mut text = format!(
        "pair {index} · SM = {} · ŜM = {sign}{} · relative error {}",
        value(log_true),
        value(estimate.ln_abs),
        tick(relative_error)
    );
    if let Some(z2) = e.z_squared.get(index).filter(|z| z.is_finite()) {
        text.push_str(&format!(" · |z|² = {}", tick(*z2)));
    }
    Some(text)
}

/// Compact number formatting for axis labels: four significant digits, trailing zeros
/// trimmed, scientific notation outside [0.001, 10⁴).
pub fn tick(v: f64) -> String {
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

pub use crate::numerics::stats::superscript;

/// Labels of an axis that carries `log10` of a quantity: `10⁻³`, `10⁰`, `10¹²` at whole
/// powers; between them the value itself (`3.2`, `0.25`) where it is short, else a mantissa
/// times a power (`2.5×10⁻⁴`).
pub fn power_of_ten_label(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        return format!("10{}", superscript(v.round() as i64));
    }
    if (-2.0..3.0).contains(&v) {
        return tick(10f64.powf(v));
    }
    let exponent = v.floor();
    let mantissa = 10f64.powf(v - exponent);
    format!("{mantissa:.1}×10{}", superscript(exponent as i64))
}

/// The range `[lo, hi]` of finite `values`, widened by `pad` on both sides and to at least
/// `min_span`; `None` without a finite value.
pub fn padded_range(
    values: impl Iterator<Item = f64>,
    pad: f64,
    min_span: f64,
) -> Option<(f64, f64)> {
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

/// Decades above the measurements within which a theory curve still sets a chart's range;
/// a curve beyond them leaves the axis (an arrow and its value mark where).
pub const FOCUS_DECADES: f64 = 6.0;

/// A `log10` axis range around what must be seen (`must`: measurements, the level 1), widened
/// to include the `optional` values (theory) that lie within [`FOCUS_DECADES`] above the
/// highest `must` value, then padded by `pad` decades and to at least `min_span`. Theory
/// curves spanning 10⁰ to 10¹⁸⁰⁰ no longer flatten the data into a line at the bottom.
pub fn focus_range(
    must: impl Iterator<Item = f64>,
    optional: impl Iterator<Item = f64>,
    pad: f64,
    min_span: f64,
) -> Option<(f64, f64)> {
    let must: Vec<f64> = must.filter(|v| v.is_finite()).collect();
    let top = must.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !top.is_finite() {
        return padded_range(optional, pad, min_span);
    }
    let kept = optional.filter(|v| v.is_finite() && *v <= top + FOCUS_DECADES);
    padded_range(must.into_iter().chain(kept), pad, min_span)
}

/// SM spanning more than this factor on the scatter dataset switches the panels to log axes.
pub const LOG_AXES_SPAN: f64 = 1e4;

/// `|ln SM|` beyond which the scatter panels use log axes whatever the span: `exp` overflows
/// near 709, and far before that a linear axis shows one dot per decade.
pub const LOG_AXES_MAX_LN: f64 = 300.0;

/// Whether the scatter panels of a dataset with these `ln SM` use log axes: SM spans more
/// than [`LOG_AXES_SPAN`], or some `|ln SM|` exceeds [`LOG_AXES_MAX_LN`].
pub fn scatter_log_axes(log_true: &[f64]) -> bool {
    let (min_log, max_log) = log_true
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), l| {
            (a.min(*l), b.max(*l))
        });
    max_log - min_log > LOG_AXES_SPAN.ln() || max_log.abs().max(min_log.abs()) > LOG_AXES_MAX_LN
}

/// A value on a scatter axis: `log10 v` on log axes (NaN, drawn on the bottom edge, for
/// `v ≤ 0`), `v` itself on linear ones.
pub fn scatter_axis(log_axes: bool, value: SignedLog) -> f64 {
    if !log_axes {
        value.value()
    } else if value.negative || value.ln_abs == f64::NEG_INFINITY {
        f64::NAN
    } else {
        value.ln_abs / std::f64::consts::LN_10
    }
}

/// The shared range of both scatter axes: every true value, and the central 90 % of the
/// estimates, with 5 % padding. Sharing it keeps ŜM = SM on the diagonal; but when the
/// estimates spread more than 8× wider than the true values alone, the x range is the true
/// values' own. `points` are `(true, estimate)` on linear axes.
pub fn scatter_range(points: &[(f64, f64)]) -> Option<(f64, f64)> {
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

/// [`scatter_range`] before the choice between a shared and a separate x range: the linear
/// y range of the scatter panels.
pub fn scatter_range_of(points: &[(f64, f64)]) -> Option<(f64, f64)> {
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

/// The x and y ranges of a scatter panel whose `points` are on the axes of [`scatter_axis`]:
/// on log axes one shared range (the true values with 10 % padding, at least one decade), on
/// linear ones [`scatter_range`] and [`scatter_range_of`].
pub fn scatter_ranges(log_axes: bool, points: &[(f64, f64)]) -> Option<((f64, f64), (f64, f64))> {
    if log_axes {
        let (lo, hi) = padded_range(points.iter().map(|p| p.0), 0.0, 1.0)?;
        let span = hi - lo;
        let range = (lo - 0.1 * span, hi + 0.1 * span);
        Some((range, range))
    } else {
        Some((scatter_range(points)?, scatter_range_of(points)?))
    }
}

/// Everything a scatter panel shows, decided from the pairs' `ln SM` and estimates.
#[derive(Clone, Debug, PartialEq)]
pub struct ScatterPlan {
    /// Whether the axes show log10 SM ([`scatter_log_axes`]).
    pub log_axes: bool,
    /// Each pair's `(true SM, ŜM)` on the axes ([`scatter_axis`]).
    pub points: Vec<(f64, f64)>,
    /// The x (true SM) range.
    pub x_range: (f64, f64),
    /// The y (estimate) range.
    pub y_range: (f64, f64),
    /// Negative estimates.
    pub negative: usize,
    /// Estimates outside the y range (or not on the axis at all), drawn on its edge.
    pub outside: usize,
}

impl ScatterPlan {
    /// The plan for the pairs with `ln SM = log_true[i]` and `ŜM = estimates[i]`; `None`
    /// when nothing finite is left to plot.
    pub fn new(log_true: &[f64], estimates: &[SignedLog]) -> Option<Self> {
        let log_axes = scatter_log_axes(log_true);
        let points: Vec<(f64, f64)> = log_true
            .iter()
            .zip(estimates)
            .map(|(t, e)| {
                (
                    scatter_axis(log_axes, SignedLog::positive(*t)),
                    scatter_axis(log_axes, *e),
                )
            })
            .collect();
        let (x_range, y_range) = scatter_ranges(log_axes, &points)?;
        let negative = estimates.iter().filter(|e| e.negative).count();
        let outside = points
            .iter()
            .filter(|p| !(p.1 >= y_range.0 && p.1 <= y_range.1))
            .count();
        Some(Self {
            log_axes,
            points,
            x_range,
            y_range,
            negative,
            outside,
        })
    }

    /// The plan for one estimator's estimates on the scatter dataset.
    pub fn of(estimates: &PairEstimates) -> Option<Self> {
        Self::new(&estimates.log_true, &estimates.estimates)
    }

    /// Where an estimate (on the axis) is drawn: itself inside the y range, else on the
    /// nearer edge; NaN (`ŜM ≤ 0` on log axes) on the bottom edge.
    pub fn shown(&self, estimate: f64) -> f64 {
        let (y_lo, y_hi) = self.y_range;
        if estimate > y_hi {
            y_hi
        } else if estimate >= y_lo {
            estimate
        } else {
            y_lo
        }
    }

    /// The dots as drawn: every pair with a finite true value, its estimate [`Self::shown`].
    pub fn dots(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.points
            .iter()
            .filter(|p| p.0.is_finite())
            .map(|&(t, e)| (t, self.shown(e)))
    }

    /// Where the ring around pair `index` goes, if there is such a pair.
    pub fn ring(&self, index: usize) -> Option<(f64, f64)> {
        self.points.get(index).map(|&(t, e)| (t, self.shown(e)))
    }

    /// The x axis' description.
    pub fn x_desc(&self) -> &'static str {
        if self.log_axes {
            "true SM(x, y) = exp(x·y) (log scale)"
        } else {
            "true SM(x, y) = exp(x·y)"
        }
    }

    /// The y axis' description, which says where non-positive estimates are.
    pub fn y_desc(&self) -> &'static str {
        match (self.log_axes, self.negative > 0) {
            (true, true) => "estimated SM (log scale; ≤ 0 on the bottom edge)",
            (true, false) => "estimated SM (log scale)",
            (false, true) => "estimated SM (negative estimates below 0)",
            (false, false) => "estimated SM",
        }
    }

    /// The label of the tick at `v` on either axis: a power of ten to a tenth of a decade on
    /// log axes, [`tick`] on linear ones.
    pub fn axis_label(&self, v: f64) -> String {
        if self.log_axes {
            power_of_ten_label((v * 10.0).round() / 10.0)
        } else {
            tick(v)
        }
    }

    /// The panel's line of numbers under its title.
    pub fn note(&self, metrics: &DatasetMetrics) -> String {
        let (negative, outside) = (self.negative, self.outside);
        format!(
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
        )
    }

    /// The layout of this plan drawn into the plotting area `bounds`.
    pub fn layout(&self, bounds: PixelBounds) -> ScatterLayout {
        ScatterLayout::new(
            bounds,
            self.x_range,
            self.y_range,
            self.log_axes,
            self.outside,
        )
    }
}

/// The plotting area of a chart, in CSS pixels of its canvas.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PixelBounds {
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
}

impl PixelBounds {
    /// The bounds of a plotting area whose pixel ranges on the canvas' backing store are `x`
    /// and `y`, with `device_pixel_ratio` backing pixels per CSS pixel.
    pub fn from_device(x: Range<i32>, y: Range<i32>, device_pixel_ratio: f64) -> Self {
        Self {
            left: f64::from(x.start) / device_pixel_ratio,
            right: f64::from(x.end) / device_pixel_ratio,
            top: f64::from(y.start) / device_pixel_ratio,
            bottom: f64::from(y.end) / device_pixel_ratio,
        }
    }
}

/// A click farther than this (CSS pixels) from every point selects no pair.
pub const HIT_RADIUS: f64 = 12.0;

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

impl ScatterLayout {
    /// A panel whose plotting area is `bounds`, showing `x_range` (true SM) and `y_range`
    /// (estimates) on the axes of [`scatter_axis`], with `outside` estimates on its edge.
    pub fn new(
        bounds: PixelBounds,
        x_range: (f64, f64),
        y_range: (f64, f64),
        log_axes: bool,
        outside: usize,
    ) -> Self {
        Self {
            outside,
            left: bounds.left,
            right: bounds.right,
            top: bounds.top,
            bottom: bounds.bottom,
            lo: x_range.0,
            hi: x_range.1,
            y_lo: y_range.0,
            y_hi: y_range.1,
            log_axes,
        }
    }

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

    /// Where pair `index` of `series` is drawn, so where the ring of a highlighted pair goes:
    /// [`Self::position`], with an estimate off a log axis (`ŜM ≤ 0`, which no click picks)
    /// on the bottom edge as [`ScatterPlan::shown`] draws it. `None` for no such pair or a
    /// true value off the axis (not drawn).
    pub fn pair_position(&self, series: &ScatterSeries, index: usize) -> Option<(f64, f64)> {
        let e = &series.estimates;
        let (x, y) = self.position(*e.log_true.get(index)?, *e.estimates.get(index)?);
        x.is_finite()
            .then_some((x, if y.is_nan() { self.bottom } else { y }))
    }

    /// The pair whose point is nearest to a click at `(x, y)` CSS pixels, within
    /// [`HIT_RADIUS`].
    pub fn nearest_pair(&self, series: &ScatterSeries, x: f64, y: f64) -> Option<usize> {
        let e = &series.estimates;
        self.nearest(&e.log_true, &e.estimates, x, y)
    }

    /// [`Self::nearest_pair`] among the pairs with `ln SM = log_true[i]` and
    /// `ŜM = estimates[i]`.
    pub fn nearest(
        &self,
        log_true: &[f64],
        estimates: &[SignedLog],
        x: f64,
        y: f64,
    ) -> Option<usize> {
        log_true
            .iter()
            .zip(estimates)
            .enumerate()
            .map(|(i, (t, est))| {
                let (px, py) = self.position(*t, *est);
                (i, (px - x).powi(2) + (py - y).powi(2))
            })
            .filter(|(_, d2)| d2.is_finite() && *d2 <= HIT_RADIUS * HIT_RADIUS)
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i)
    }
}

/// The y range of a boxplot chart whose values are `log10`s: every finite value, with half
/// a decade on either side; `None` without a finite value.
pub fn boxplot_range(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    padded_range(values, 0.5, 0.0)
}

/// How a theoretical value is marked beside a box.
#[derive(Clone, Debug, PartialEq)]
pub enum TheoryMarker {
    /// A diamond at the value, which is on the axis.
    Diamond(f64),
    /// The value is above the axis: an arrow at its top edge pointing up, with this label.
    Above(String),
    /// The value is below the axis: an arrow at its bottom edge pointing down, with this
    /// label.
    Below(String),
}

impl TheoryMarker {
    /// The marker of the `log10` value `theory` on an axis from `lo` to `hi`: a value beyond
    /// the axis is an arrow on its edge, labelled with the value, so that a huge theory does
    /// not squash the boxes.
    pub fn new(theory: f64, (lo, hi): (f64, f64)) -> Self {
        let clamped = theory.clamp(lo, hi);
        if theory == clamped {
            TheoryMarker::Diamond(theory)
        } else if theory > hi {
            TheoryMarker::Above(format!("1e{theory:.1}"))
        } else {
            TheoryMarker::Below(format!("1e{theory:.1}"))
        }
    }

    /// Where on the axis the marker is drawn.
    pub fn at(&self, (lo, hi): (f64, f64)) -> f64 {
        match self {
            TheoryMarker::Diamond(v) => *v,
            TheoryMarker::Above(_) => hi,
            TheoryMarker::Below(_) => lo,
        }
    }
}

/// A point of the MSE-against-m chart as `log10` of the measured MSE, of MSE + SE and of
/// MSE − SE (cut at MSE/100: a log axis has no zero).
pub fn log10_error_bar(p: &CurvePoint) -> (f64, f64, f64) {
    let ln10 = std::f64::consts::LN_10;
    let ratio = (p.log_standard_error - p.log_measured_mse).exp();
    let mid = p.log_measured_mse;
    (
        mid / ln10,
        (mid + ratio.ln_1p()) / ln10,
        (mid + (1.0 - ratio).max(0.01).ln()) / ln10,
    )
}

/// The probe's histogram of one estimator's estimates.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    /// The x range: the central 99 % of the estimates and the true value, 5 % padding, not
    /// below 0.
    pub lo: f64,
    pub hi: f64,
    /// The width of a bin.
    pub width: f64,
    /// Estimates per bin; those beyond the range are counted in the edge bins.
    pub counts: Vec<usize>,
    /// The y range's top: 15 % above the largest count.
    pub top: f64,
}

impl Histogram {
    /// The histogram of the finite `estimates` in `bins` bins, its range also showing
    /// `true_value`; `None` without a finite estimate.
    pub fn new(estimates: &[f64], true_value: f64, bins: usize) -> Option<Self> {
        let finite: Vec<f64> = estimates
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        let (q_lo, q_hi) = (quantile(&finite, 0.005)?, quantile(&finite, 0.995)?);
        let (lo, hi) = padded_range([q_lo, q_hi, true_value].into_iter(), 0.0, 1e-12)?;
        let span = hi - lo;
        let (lo, hi) = ((lo - 0.05 * span).max(0.0), hi + 0.05 * span);
        let bins = bins.max(1);
        let width = (hi - lo) / bins as f64;
        let mut counts = vec![0usize; bins];
        for v in &finite {
            let bin = ((v - lo) / width).floor().clamp(0.0, (bins - 1) as f64) as usize;
            counts[bin] += 1;
        }
        let top = counts.iter().copied().max().unwrap_or(1).max(1) as f64 * 1.15;
        Some(Self {
            lo,
            hi,
            width,
            counts,
            top,
        })
    }
}

#[cfg(test)]
mod tests;
