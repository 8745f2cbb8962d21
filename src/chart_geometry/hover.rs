//! Hover: which box, dataset or curve point lies under the pointer, and the tooltip text that
//! says its numbers. Pure geometry on CSS pixels, tested natively; the page
//! (`crate::ui::results`) only asks [`HoverLayout::tooltip_at`] on each mouse move.
//!
//! - [`PlotFrame`]: a chart's plotting area and the ranges it shows (data → pixels).
//! - [`CurveLayout`]: the theory charts' lines and points (MSE against m and θ, Lemma 3.2,
//!   Theorem 3.3): the nearest point of the nearest line within [`CURVE_HIT_RADIUS`].
//! - [`BoxplotLayout`]: Figures 2–3: a dataset's dot or outlier circle, the theory marker, or
//!   the box itself (its column between the whiskers).

use super::{PixelBounds, TheoryMarker, power_of_ten_label, tick};
use crate::numerics::stats::{BoxSummary, format_from_log};

/// A pointer farther than this (CSS pixels) from every point of every line shows no tooltip.
pub const CURVE_HIT_RADIUS: f64 = 8.0;

/// A pointer within this (CSS pixels) of a dataset's dot (or outlier circle, or the theory
/// marker) on a boxplot shows that dataset (or the theory).
pub const DOT_HIT_RADIUS: f64 = 5.0;

/// Half the width of a box, in units of the boxplot's x axis (one box per unit).
pub const BOX_HALF_WIDTH: f64 = 0.28;

/// How far right of its box's centre the theory marker sits, in x-axis units.
pub const THEORY_OFFSET: f64 = BOX_HALF_WIDTH + 0.06;

/// A chart's plotting area (CSS pixels) and the ranges of its axes. `x_range` is in the
/// x values' own units; with `log_x` the axis is logarithmic in them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlotFrame {
    pub bounds: PixelBounds,
    pub x_range: (f64, f64),
    pub y_range: (f64, f64),
    pub log_x: bool,
}

impl PlotFrame {
    /// Where `x` falls along the axis, as a fraction of its length (NaN if it is not on it:
    /// non-finite, or not positive on a log axis, or a degenerate range).
    fn x_fraction(&self, x: f64) -> f64 {
        let (lo, hi) = self.x_range;
        let f = if self.log_x {
            (x.log10() - lo.log10()) / (hi.log10() - lo.log10())
        } else {
            (x - lo) / (hi - lo)
        };
        if f.is_finite() { f } else { f64::NAN }
    }

    fn y_fraction(&self, y: f64) -> f64 {
        let (lo, hi) = self.y_range;
        let f = (y - lo) / (hi - lo);
        if f.is_finite() { f } else { f64::NAN }
    }

    fn pixel_of(&self, fx: f64, fy: f64) -> (f64, f64) {
        let b = self.bounds;
        (
            b.left + fx * (b.right - b.left),
            b.bottom - fy * (b.bottom - b.top),
        )
    }

    /// The CSS-pixel position of `(x, y)`, `None` when it is off the plot (beyond either
    /// range, or not a finite number on the axis).
    pub fn pixel(&self, x: f64, y: f64) -> Option<(f64, f64)> {
        let (fx, fy) = (self.x_fraction(x), self.y_fraction(y));
        let on = |f: f64| (-1e-9..=1.0 + 1e-9).contains(&f);
        (on(fx) && on(fy)).then(|| self.pixel_of(fx, fy))
    }

    /// [`Self::pixel`], except that a `y` beyond its range (±∞ included) is put on the nearer
    /// edge: where an arrow marks a value beyond the axis. NaN is still off the plot.
    pub fn pixel_on_edge(&self, x: f64, y: f64) -> Option<(f64, f64)> {
        let fx = self.x_fraction(x);
        let (lo, hi) = self.y_range;
        if !(-1e-9..=1.0 + 1e-9).contains(&fx)
            || y.is_nan()
            || hi.is_nan()
            || lo.is_nan()
            || hi <= lo
        {
            return None;
        }
        let fy = if y >= hi {
            1.0
        } else if y <= lo {
            0.0
        } else {
            self.y_fraction(y)
        };
        Some(self.pixel_of(fx, fy))
    }
}

/// How an axis writes its numbers; a tooltip writes a value the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxisFormat {
    /// A whole number (`64`).
    Whole,
    /// Two decimals (`0.79`).
    TwoDecimals,
    /// [`tick`]: four significant digits, scientific notation outside [0.001, 10⁴).
    Tick,
    /// The value is `log10` of the quantity: [`power_of_ten_label`]'s notation (`10⁻³`,
    /// `0.25`, `2.5×10⁻⁴`), with two decimals in the mantissa.
    PowerOfTen,
}

impl AxisFormat {
    /// `value` written as this axis writes it.
    pub fn format(self, value: f64) -> String {
        if !value.is_finite() && self != AxisFormat::PowerOfTen {
            return "n/a".into();
        }
        match self {
            AxisFormat::Whole => format!("{value:.0}"),
            AxisFormat::TwoDecimals => format!("{value:.2}"),
            AxisFormat::Tick => tick(value),
            AxisFormat::PowerOfTen => power_of_ten_value(value),
        }
    }
}

/// `10^v` in the notation of [`power_of_ten_label`] but with three significant digits
/// (`2.46×10⁻⁴`; `0.2512` and `10⁰` as on the axis); `0` for `−∞`, `n/a` for NaN and `+∞`.
pub fn power_of_ten_value(v: f64) -> String {
    if v == f64::NEG_INFINITY {
        return "0".into();
    }
    if !v.is_finite() {
        return "n/a".into();
    }
    if (v - v.round()).abs() < 1e-9 || (-2.0..3.0).contains(&v) {
        return power_of_ten_label(v);
    }
    let mut exponent = v.floor();
    let mut mantissa = 10f64.powf(v - exponent);
    if format!("{mantissa:.2}").starts_with("10") {
        mantissa /= 10.0;
        exponent += 1.0;
    }
    format!("{mantissa:.2}×10{}", super::superscript(exponent as i64))
}

/// One line (or set of points) of a curve chart, as hover sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct HoverSeries {
    /// What the tooltip calls it (`HCEXP var measured`).
    pub name: String,
    /// `(x, y)` in the axes' units (on a log-y chart, `y` is `log10` of the value).
    pub points: Vec<(f64, f64)>,
    /// Whether a point beyond the y range is drawn on its edge (an arrow) and can be hovered
    /// there; otherwise such a point is not drawn and cannot be hovered.
    pub edge: bool,
}

impl HoverSeries {
    /// A line whose points beyond the y range are not drawn.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            name: name.into(),
            points,
            edge: false,
        }
    }

    /// A mark drawn on the edge when its value lies beyond the axis (an arrow).
    pub fn on_edge(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            name: name.into(),
            points,
            edge: true,
        }
    }
}

/// The point of a curve chart under the pointer: `points[point]` of `series[series]`, drawn
/// at `at` (CSS pixels).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CurveHit {
    pub series: usize,
    pub point: usize,
    pub at: (f64, f64),
}

/// A curve chart as hover sees it: its frame, its series and how its axes write numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct CurveLayout {
    pub frame: PlotFrame,
    /// The x quantity's name in a tooltip (`m`, `θ`, `r`, `p`).
    pub x_name: &'static str,
    pub x_format: AxisFormat,
    /// The y quantity's name in a tooltip (`MSE`, `bound`).
    pub y_name: &'static str,
    pub y_format: AxisFormat,
    pub series: Vec<HoverSeries>,
}

impl CurveLayout {
    /// Where point `point` of series `series` is drawn, if it is.
    pub fn position(&self, series: usize, point: usize) -> Option<(f64, f64)> {
        let s = self.series.get(series)?;
        let &(x, y) = s.points.get(point)?;
        if s.edge {
            self.frame.pixel_on_edge(x, y)
        } else {
            self.frame.pixel(x, y)
        }
    }

    /// The nearest drawn point to `(x, y)` CSS pixels within [`CURVE_HIT_RADIUS`]; on a tie
    /// the earlier series (then the earlier point).
    pub fn hit(&self, x: f64, y: f64) -> Option<CurveHit> {
        let mut best: Option<(f64, CurveHit)> = None;
        for (si, s) in self.series.iter().enumerate() {
            for pi in 0..s.points.len() {
                let Some(at) = self.position(si, pi) else {
                    continue;
                };
                let d2 = (at.0 - x).powi(2) + (at.1 - y).powi(2);
                if d2 <= CURVE_HIT_RADIUS * CURVE_HIT_RADIUS
                    && best.as_ref().is_none_or(|(b, _)| d2 < *b)
                {
                    let hit = CurveHit {
                        series: si,
                        point: pi,
                        at,
                    };
                    best = Some((d2, hit));
                }
            }
        }
        best.map(|(_, hit)| hit)
    }

    /// The tooltip of `hit`: the series' name, then x and y as the axes write them, and
    /// whether the value lies beyond the axis.
    pub fn tooltip(&self, hit: &CurveHit) -> Option<String> {
        let s = self.series.get(hit.series)?;
        let &(x, y) = s.points.get(hit.point)?;
        let (lo, hi) = self.frame.y_range;
        let beyond = if y > hi {
            " (above the axis)"
        } else if y < lo {
            " (below the axis)"
        } else {
            ""
        };
        Some(format!(
            "{} · {} = {} · {} = {}{beyond}",
            s.name,
            self.x_name,
            self.x_format.format(x),
            self.y_name,
            self.y_format.format(y)
        ))
    }

    /// A point of each series that hover can reach (its middle drawn point), in CSS pixels:
    /// what the end-to-end tests move the mouse to.
    pub fn targets(&self) -> Vec<(usize, (f64, f64))> {
        (0..self.series.len())
            .filter_map(|si| {
                let drawn: Vec<(f64, f64)> = (0..self.series[si].points.len())
                    .filter_map(|pi| self.position(si, pi))
                    .collect();
                drawn.get(drawn.len() / 2).map(|at| (si, *at))
            })
            .collect()
    }
}

/// One box of a boxplot chart as hover sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct BoxHover {
    /// The estimator's name.
    pub label: String,
    /// `log10` of each dataset's value, in dataset order (non-finite ones are not drawn).
    pub values: Vec<f64>,
    /// `ln` of the median the results table gives (for an even count the mean of the two
    /// middle values), shown instead of the box's median of the logs when present.
    pub log_median: Option<f64>,
    /// `log10` of the theory marker's value (Lemma 3.1's median expected MSE).
    pub theory: Option<f64>,
}

/// The dots of one box as drawn: `(dataset, x offset from the box's centre, log10 value)`
/// for every finite value, spread evenly over the middle 80 % of the box so that equal values
/// stay visible.
pub fn box_dots(values: &[f64]) -> Vec<(usize, f64, f64)> {
    let finite: Vec<(usize, f64)> = values
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .collect();
    let count = finite.len().max(1) as f64;
    finite
        .into_iter()
        .enumerate()
        .map(|(j, (dataset, v))| {
            let offset = BOX_HALF_WIDTH * 0.8 * ((j as f64 + 0.5) / count - 0.5);
            (dataset, offset, v)
        })
        .collect()
}

/// What lies under the pointer on a boxplot chart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BoxHit {
    /// Box `index`: its column between the whiskers.
    Box { index: usize },
    /// Dataset `dataset` (0-based) of box `index`, by its dot or its outlier circle.
    Dataset { index: usize, dataset: usize },
    /// The theory marker of box `index` (a diamond, or an arrow on the edge).
    Theory { index: usize },
}

/// A boxplot chart (Figures 2–3) as hover sees it. The x axis runs from −0.5 to `k − 0.5`
/// with box `i` centred at `i`; the y axis carries `log10` of the values.
#[derive(Clone, Debug, PartialEq)]
pub struct BoxplotLayout {
    pub frame: PlotFrame,
    /// What the values are (`MSE`, `max relative error`).
    pub metric: &'static str,
    pub boxes: Vec<BoxHover>,
}

impl BoxplotLayout {
    /// The summary of box `index`'s finite values.
    pub fn summary(&self, index: usize) -> Option<BoxSummary> {
        let values: Vec<f64> = self
            .boxes
            .get(index)?
            .values
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        BoxSummary::of(&values)
    }

    /// Where the theory marker of box `index` is drawn (an arrow's tip on the edge when the
    /// value lies beyond the axis).
    pub fn theory_position(&self, index: usize) -> Option<(f64, f64)> {
        let theory = self.boxes.get(index)?.theory.filter(|t| t.is_finite())?;
        let at = TheoryMarker::new(theory, self.frame.y_range).at(self.frame.y_range);
        self.frame.pixel(index as f64 + THEORY_OFFSET, at)
    }

    /// What is under `(x, y)` CSS pixels: the nearest dataset dot or outlier circle within
    /// [`DOT_HIT_RADIUS`], else the theory marker within it, else the box whose column
    /// (half-width [`BOX_HALF_WIDTH`]) and whisker span (with [`DOT_HIT_RADIUS`] to spare)
    /// hold the pointer.
    pub fn hit(&self, x: f64, y: f64) -> Option<BoxHit> {
        let near = |at: (f64, f64)| (at.0 - x).powi(2) + (at.1 - y).powi(2);
        let r2 = DOT_HIT_RADIUS * DOT_HIT_RADIUS;
        let mut best: Option<(f64, BoxHit)> = None;
        for (index, b) in self.boxes.iter().enumerate() {
            let centre = index as f64;
            let outliers = self.summary(index).map(|s| s.outliers).unwrap_or_default();
            for (dataset, offset, v) in box_dots(&b.values) {
                let mut spots = vec![self.frame.pixel(centre + offset, v)];
                if outliers.contains(&v) {
                    spots.push(self.frame.pixel(centre, v));
                }
                for at in spots.into_iter().flatten() {
                    let d2 = near(at);
                    if d2 <= r2 && best.as_ref().is_none_or(|(b, _)| d2 < *b) {
                        best = Some((d2, BoxHit::Dataset { index, dataset }));
                    }
                }
            }
        }
        if let Some((_, hit)) = best {
            return Some(hit);
        }
        for index in 0..self.boxes.len() {
            if self
                .theory_position(index)
                .is_some_and(|at| near(at) <= (1.5 * DOT_HIT_RADIUS).powi(2))
            {
                return Some(BoxHit::Theory { index });
            }
        }
        (0..self.boxes.len()).find_map(|index| {
            let s = self.summary(index)?;
            let c = index as f64;
            let (left, top) = self
                .frame
                .pixel_on_edge(c - BOX_HALF_WIDTH, s.whisker_high)?;
            let (right, bottom) = self
                .frame
                .pixel_on_edge(c + BOX_HALF_WIDTH, s.whisker_low)?;
            (x >= left && x <= right && y >= top - DOT_HIT_RADIUS && y <= bottom + DOT_HIT_RADIUS)
                .then_some(BoxHit::Box { index })
        })
    }

    /// The tooltip of `hit`: for a box its estimator, median, quartiles, whiskers, outliers and
    /// count; for a dataset its number (1-based, as in the CSV export) and value; for the
    /// theory marker its value.
    pub fn tooltip(&self, hit: BoxHit) -> Option<String> {
        let value = |log10: f64| format_from_log(log10 * std::f64::consts::LN_10, 4);
        match hit {
            BoxHit::Box { index } => {
                let b = self.boxes.get(index)?;
                let s = self.summary(index)?;
                let median = b
                    .log_median
                    .map(|l| format_from_log(l, 4))
                    .unwrap_or_else(|| value(s.median));
                let count = b.values.iter().filter(|v| v.is_finite()).count();
                let left_out = b.values.len() - count;
                Some(format!(
                    "{}: median {} {} · quartiles {} to {} · whiskers {} to {} · {} outlier{} · {count} of {} datasets{}",
                    b.label,
                    self.metric,
                    median,
                    value(s.q1),
                    value(s.q3),
                    value(s.whisker_low),
                    value(s.whisker_high),
                    s.outliers.len(),
                    if s.outliers.len() == 1 { "" } else { "s" },
                    b.values.len(),
                    if left_out > 0 {
                        " (the others are 0 or not finite)"
                    } else {
                        ""
                    }
                ))
            }
            BoxHit::Dataset { index, dataset } => {
                let b = self.boxes.get(index)?;
                let v = *b.values.get(dataset)?;
                let outlier = self.summary(index).is_some_and(|s| s.outliers.contains(&v));
                Some(format!(
                    "{}: dataset {} of {} · {} {}{}",
                    b.label,
                    dataset + 1,
                    b.values.len(),
                    self.metric,
                    value(v),
                    if outlier { " (outlier)" } else { "" }
                ))
            }
            BoxHit::Theory { index } => {
                let b = self.boxes.get(index)?;
                let t = b.theory?;
                let (lo, hi) = self.frame.y_range;
                Some(format!(
                    "{}: MSE formula (Lemma 3.1 for HCEXP), median of the datasets' expected MSE {}{}",
                    b.label,
                    value(t),
                    if t > hi {
                        " (above the axis)"
                    } else if t < lo {
                        " (below the axis)"
                    } else {
                        ""
                    }
                ))
            }
        }
    }

    /// Where `hit`'s mark is drawn (CSS pixels): a dataset's dot, the theory marker; `None`
    /// for a whole box (its tooltip names it).
    pub fn marker(&self, hit: BoxHit) -> Option<(f64, f64)> {
        match hit {
            BoxHit::Box { .. } => None,
            BoxHit::Theory { index } => self.theory_position(index),
            BoxHit::Dataset { index, dataset } => {
                let (_, offset, v) = box_dots(&self.boxes.get(index)?.values)
                    .into_iter()
                    .find(|(d, _, _)| *d == dataset)?;
                self.frame.pixel(index as f64 + offset, v)
            }
        }
    }

    /// Where the end-to-end tests can point, per box.
    pub fn targets(&self) -> Vec<BoxTarget> {
        (0..self.boxes.len())
            .map(|index| {
                let c = index as f64;
                let inside = self
                    .summary(index)
                    .and_then(|s| self.frame.pixel(c - 0.75 * BOX_HALF_WIDTH, s.median));
                let dot = box_dots(&self.boxes[index].values)
                    .into_iter()
                    .find_map(|(d, off, v)| self.frame.pixel(c + off, v).map(|at| (d, at)));
                BoxTarget { index, inside, dot }
            })
            .collect()
    }
}

/// Where hover finds a box of a boxplot chart (CSS pixels).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxTarget {
    /// The box.
    pub index: usize,
    /// A spot inside the box clear of the dots (left of them, at the median).
    pub inside: Option<(f64, f64)>,
    /// The first drawn dataset (0-based) and its dot.
    pub dot: Option<(usize, (f64, f64))>,
}

/// A chart's hover: a curve chart or a boxplot chart.
#[derive(Clone, Debug, PartialEq)]
pub enum HoverLayout {
    Curves(CurveLayout),
    Boxes(BoxplotLayout),
}

/// What hover shows for the pointer: a tooltip, and where to mark the point it is about.
#[derive(Clone, Debug, PartialEq)]
pub struct Hovered {
    pub text: String,
    /// The hovered point's centre in CSS pixels of the canvas (a curve's point, a dataset's
    /// dot, a theory marker); `None` for a whole box.
    pub marker: Option<(f64, f64)>,
}

impl HoverLayout {
    /// What is under the pointer at `(x, y)` CSS pixels of the canvas, if anything.
    pub fn hover_at(&self, x: f64, y: f64) -> Option<Hovered> {
        match self {
            HoverLayout::Curves(c) => {
                let hit = c.hit(x, y)?;
                Some(Hovered {
                    text: c.tooltip(&hit)?,
                    marker: Some(hit.at),
                })
            }
            HoverLayout::Boxes(b) => {
                let hit = b.hit(x, y)?;
                Some(Hovered {
                    text: b.tooltip(hit)?,
                    marker: b.marker(hit),
                })
            }
        }
    }

    /// The tooltip for the pointer at `(x, y)` CSS pixels of the canvas, if something is
    /// under it.
    pub fn tooltip_at(&self, x: f64, y: f64) -> Option<String> {
        self.hover_at(x, y).map(|h| h.text)
    }

    /// Points the end-to-end tests can move the mouse to, as JSON:
    /// `[{"kind":"point","series":"…","x":…,"y":…}, {"kind":"box"|"dataset",…}]`.
    pub fn targets_json(&self) -> String {
        let round = |v: f64| (v * 10.0).round() / 10.0;
        let quote = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
        let mut items = Vec::new();
        match self {
            HoverLayout::Curves(c) => {
                for (si, (x, y)) in c.targets() {
                    items.push(format!(
                        r#"{{"kind":"point","series":"{}","x":{},"y":{}}}"#,
                        quote(&c.series[si].name),
                        round(x),
                        round(y)
                    ));
                }
            }
            HoverLayout::Boxes(b) => {
                for BoxTarget { index, inside, dot } in b.targets() {
                    let label = quote(&b.boxes[index].label);
                    if let Some((x, y)) = inside {
                        items.push(format!(
                            r#"{{"kind":"box","box":"{label}","x":{},"y":{}}}"#,
                            round(x),
                            round(y)
                        ));
                    }
                    if let Some((dataset, (x, y))) = dot {
                        items.push(format!(
                            r#"{{"kind":"dataset","box":"{label}","dataset":{},"x":{},"y":{}}}"#,
                            dataset + 1,
                            round(x),
                            round(y)
                        ));
                    }
                }
            }
        }
        format!("[{}]", items.join(","))
    }
}

#[cfg(test)]
mod tests;
