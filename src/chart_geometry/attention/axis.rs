//! The attention charts' axes: linear or log10 ranges around the data, their ticks (round
//! values, 1-2-5 or whole decades), light grid lines and tick labels.
//!
//! Values on a log axis are carried as `log10` of the value (as in the rest of
//! [`crate::chart_geometry`]); [`Axis::on_axis`] maps a value to where it is drawn.

use crate::chart_geometry::{power_of_ten_label, superscript, tick};

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
