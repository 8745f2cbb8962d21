//! The units' reports merged into one, as they arrive in any order: every series' points by
//! length, each series cut at its stop (a unit sent before a shorter length's run went over the
//! budget measured it anyway: the whole study would not have), and what is read from the points
//! (the model times, exact attention's best rate, the crossovers) read again. A complete run's
//! merged report is the whole study's ([`super::length_study`]) but for what the clock gives.

use super::crossover::crossovers;
use super::report::LengthsReport;
use super::series::LengthSeries;
use super::study::{exact_rate, model_ms};

impl LengthsReport {
    /// The merged report of one unit's report ([`super::measure_unit`]).
    pub fn from_unit(unit: LengthsReport) -> Self {
        let planned = unit.lengths.clone();
        let mut merged = unit;
        merged.settle(&planned);
        merged
    }

    /// Folds another unit's report into this merged one.
    pub fn merge_unit(&mut self, unit: LengthsReport) {
        let planned = unit.lengths.clone();
        let position = |d: usize| unit.head_sizes.iter().position(|&h| h == d);
        for series in unit.series {
            let same = self
                .series
                .iter_mut()
                .find(|s| s.d == series.d && s.kernel == series.kernel && s.form == series.form);
            match same {
                Some(same) => merge_series(same, series),
                None => {
                    // A head size's series stay together, head sizes in the study's order.
                    let at = self
                        .series
                        .iter()
                        .rposition(|s| s.d == series.d)
                        .map(|i| i + 1)
                        .unwrap_or_else(|| {
                            self.series
                                .iter()
                                .take_while(|s| position(s.d) < position(series.d))
                                .count()
                        });
                    self.series.insert(at, series);
                }
            }
        }
        for skipped in unit.skipped {
            if !self.skipped.iter().any(|s| s.method == skipped.method) {
                self.skipped.push(skipped);
            }
        }
        // The fastest the dense kernel ran in any unit (each measures it beside its points).
        if unit.dense_rate > self.dense_rate || !self.dense_rate.is_finite() {
            self.dense_rate = unit.dense_rate;
        }
        self.settle(&planned);
    }

    /// Cuts each series at its stop and reads again what the points give; the lengths are the
    /// planned ones up to the longest measured (all of them once the run is complete).
    fn settle(&mut self, planned: &[usize]) {
        let dense_rate = self.dense_rate;
        for series in &mut self.series {
            if let Some(at) = series.stopped_at {
                series.points.retain(|p| p.len < at);
            }
            for p in &mut series.points {
                p.model_ms = model_ms(p.multiply_adds, dense_rate);
            }
        }
        let longest = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.len))
            .max()
            .unwrap_or(0);
        self.lengths = planned.iter().copied().filter(|&l| l <= longest).collect();
        self.exact_rate = exact_rate(&self.series);
        self.crossovers = crossovers(&self.series);
    }
}

/// `from`'s points added to `into`'s in order of length (a length measured twice keeps the
/// newer point); the earlier stop of the two.
fn merge_series(into: &mut LengthSeries, from: LengthSeries) {
    for point in from.points {
        match into.points.binary_search_by_key(&point.len, |p| p.len) {
            Ok(i) => into.points[i] = point,
            Err(i) => into.points.insert(i, point),
        }
    }
    into.stopped_at = match (into.stopped_at, from.stopped_at) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
}

#[cfg(test)]
mod tests;
