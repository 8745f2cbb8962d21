//! What the data panel's charts show, decided without drawing: the per-component chart's
//! series (moments as markers and dashed lines, each A as a solid line, on a log y axis), the
//! histograms' axes and bars, and the words around them (legends, bin captions, the numbers
//! the canvases' `aria-label`s read out).

use super::attention::{Axis, LEGEND_LINE};
use super::tick;
use crate::lab::kernel::data_view::{BinRule, DataView, HistogramSet, KEY_COLOUR, QUERY_COLOUR};

/// One series of the per-component chart (drawn by `crate::charts::draw_xy`).
#[derive(Clone, Debug, PartialEq)]
pub struct ComponentSeries {
    pub label: String,
    pub colour: [u8; 3],
    /// `(component index, value)`, every component (values ≤ 0 are left out when drawn).
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
    pub markers: bool,
    pub line: bool,
}

fn indexed(values: impl Iterator<Item = f64>) -> Vec<(f64, f64)> {
    values.enumerate().map(|(i, v)| (i as f64, v)).collect()
}

/// The per-component chart's series: `|μ_x,i|` and `|μ_y,i|` as markers, `σ_x,i` and
/// `σ_y,i` as dashed lines (queries blue, keys red), and each A's `a_i` as a solid line in the
/// colour of its hyperbolic estimator.
pub fn component_series(view: &DataView) -> Vec<ComponentSeries> {
    let m = &view.moments;
    let moment = |label: &str, colour, values: &[f64], abs: bool, dashed: bool| ComponentSeries {
        label: label.to_string(),
        colour,
        points: indexed(values.iter().map(|v| if abs { v.abs() } else { *v })),
        dashed,
        markers: !dashed,
        line: dashed,
    };
    let mut series = vec![
        moment("|μ_x|", QUERY_COLOUR, &m.mean_x, true, false),
        moment("σ_x", QUERY_COLOUR, &view.std_x, false, true),
        moment("|μ_y|", KEY_COLOUR, &m.mean_y, true, false),
        moment("σ_y", KEY_COLOUR, &view.std_y, false, true),
    ];
    series.extend(view.diagonals.iter().map(|a| ComponentSeries {
        label: format!("a, {}", a.label),
        colour: a.colour,
        points: indexed(a.a.iter().copied()),
        dashed: false,
        markers: view.d == 1,
        line: true,
    }));
    series
}

/// Values of the per-component chart that a log axis cannot show (≤ 0 or not finite): a
/// zero variance or a zero mean.
pub fn off_log_axis(series: &[ComponentSeries]) -> usize {
    series
        .iter()
        .flat_map(|s| &s.points)
        .filter(|p| Axis::on_axis(true, p.1).is_none())
        .count()
}

fn range_of(values: &[f64]) -> Option<(f64, f64)> {
    let (lo, hi) = values
        .iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
    (lo <= hi).then_some((lo, hi))
}

/// The range of each A, for the per-component chart's label and caption:
/// `"identity 1 to 1; mean-only 0.02 to 12.5; …"`.
pub fn a_ranges(view: &DataView) -> String {
    view.diagonals
        .iter()
        .map(|a| match range_of(&a.a) {
            Some((lo, hi)) => {
                let clamped = if a.clamped > 0 {
                    format!(" ({} clamped)", a.clamped)
                } else {
                    String::new()
                };
                format!("{} {} to {}{clamped}", a.label, tick(lo), tick(hi))
            }
            None => format!("{} none", a.label),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The per-component chart's `aria-label`.
pub fn component_label(view: &DataView) -> String {
    let m = &view.moments;
    let abs_range = |v: &[f64]| {
        let abs: Vec<f64> = v.iter().map(|u| u.abs()).collect();
        range_of(&abs).map_or("none".to_string(), |(lo, hi)| {
            format!("{} to {}", tick(lo), tick(hi))
        })
    };
    format!(
        "per component over d = {}: |μ_x| {}, σ_x {}, |μ_y| {}, σ_y {}; a per component: {}",
        view.d,
        abs_range(&m.mean_x),
        abs_range(&view.std_x),
        abs_range(&m.mean_y),
        abs_range(&view.std_y),
        a_ranges(view)
    )
}

/// A histogram chart as drawn: its axes, and each series' bars `(from, to, count)` on the x
/// axis (`log10` of the edges when the bins are log-spaced), bins with count 0 left out.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramPlan {
    pub x: Axis,
    pub y: Axis,
    pub bars: Vec<Vec<(f64, f64, usize)>>,
    /// `(colour, "label  median …")` per series.
    pub legend: Vec<([u8; 3], String)>,
}

impl HistogramPlan {
    /// The plan of `set`; `None` without a series or edges.
    pub fn new(set: &HistogramSet) -> Option<Self> {
        if set.series.is_empty() || set.edges.len() < 2 {
            return None;
        }
        let on_axis = |e: f64| if set.log_bins { e.log10() } else { e };
        let edges: Vec<f64> = set.edges.iter().map(|e| on_axis(*e)).collect();
        let (lo, hi) = (edges[0], edges[edges.len() - 1]);
        if !(lo.is_finite() && hi.is_finite() && hi > lo) {
            return None;
        }
        let most = set
            .series
            .iter()
            .flat_map(|s| s.counts.iter().copied())
            .max()
            .unwrap_or(0);
        let bars = set
            .series
            .iter()
            .map(|s| {
                s.counts
                    .iter()
                    .enumerate()
                    .filter(|(k, c)| **c > 0 && k + 1 < edges.len())
                    .map(|(k, c)| (edges[k], edges[k + 1], *c))
                    .collect()
            })
            .collect();
        let legend = set
            .series
            .iter()
            .map(|s| (s.colour, format!("{}  median {}", s.label, tick(s.median))))
            .collect();
        Some(Self {
            x: Axis {
                log: set.log_bins,
                lo,
                hi,
            },
            y: Axis {
                log: false,
                lo: 0.0,
                hi: (most.max(1) as f64 * 1.15).max(1.0),
            },
            bars,
            legend,
        })
    }
}

impl HistogramPlan {
    /// This plan with its y axis raised so that a legend of its lines in the top
    /// `LEGEND_LINE · lines + 24` CSS px (the box and a margin) of a plot `plot_height` CSS px tall covers no bar
    /// (at most 60 % of the plot is given to it).
    pub fn with_legend_room(self, plot_height: f64) -> Self {
        let legend = LEGEND_LINE * self.legend.len() as f64 + 24.0;
        let fraction = if plot_height > 0.0 {
            (legend / plot_height).min(0.6)
        } else {
            0.0
        };
        let most = self.y.hi / 1.15;
        let hi = self.y.hi.max(most / (1.0 - fraction));
        Self {
            y: Axis { hi, ..self.y },
            ..self
        }
    }
}

/// How the bins of `set` were chosen, for the chart's caption.
pub fn bin_caption(set: &HistogramSet) -> String {
    let bins = set.edges.len().saturating_sub(1);
    let scale = if set.log_bins {
        "bins, log-spaced as the values span more than two decades"
    } else {
        "equal-width bins"
    };
    match set.rule {
        BinRule::FreedmanDiaconis => format!("{bins} {scale} (Freedman–Diaconis, at most 40)"),
        BinRule::Sturges => format!("{bins} {scale} (Sturges: the IQR is 0)"),
        BinRule::Single => "one bin: every value is the same".to_string(),
    }
}

/// Each series' median, for a histogram's `aria-label`: `"median |z|: prf-hyp 5.1, hcexp-var 1.8"`.
pub fn histogram_label(what: &str, set: &HistogramSet) -> String {
    let medians = set
        .series
        .iter()
        .map(|s| format!("{} {}", s.label, tick(s.median)))
        .collect::<Vec<_>>()
        .join(", ");
    format!("histogram of {what}, median: {medians}")
}

#[cfg(test)]
mod tests;
