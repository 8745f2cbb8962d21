//! The distributions charts' geometry: each box's quantiles and left-out values, the axis
//! around the boxes, the dots' jitter and the labels under the boxes.

use super::{Axis, CHAR_WIDTH, abbreviate};
use crate::numerics::stats::quantile;

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
