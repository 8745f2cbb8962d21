//! What the equal-budget chart shows, read from its own numbers: the least-squares slope of
//! `ln error` against `ln D` for every method with enough points ([`budget_slopes`]) and the
//! sentence the page prints beside the chart ([`budget_notice`]).
//!
//! Why not a fixed "random maps improve like 1/√D": a random map's MSE carries the factor
//! `e^{|z|²}` (Lemma 3.1), so its typical error falls like `1/√D` only once D is large against
//! it. On the default synthetic data Performer's mean output error stays near 0.05 from D = 16
//! to 2048, and on some real heads every random map stays near 1 across the whole axis: the flat
//! lines are the lesson, and the note says what the data shows.

use serde::{Deserialize, Serialize};

use crate::lab::attention::outputs::BudgetReport;
use crate::numerics::attention::methods::MethodId;
use crate::numerics::stats::least_squares_slope;

/// A slope at or below this is read as "falls like 1/√D" (−0.5 within the noise of two draws
/// per point over a decade or more of D).
pub const ROOT_D_SLOPE: f64 = -0.35;
/// A slope above this is read as "flat".
pub const FLAT_SLOPE: f64 = -0.1;

/// How one method's error moves along the budget axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Trend {
    /// Slope ≤ [`ROOT_D_SLOPE`]: about `1/√D` or faster.
    RootD,
    /// Between the two: it falls, slower than `1/√D`.
    Slow,
    /// Slope > [`FLAT_SLOPE`] (or rising).
    Flat,
}

impl Trend {
    /// The trend of a fitted slope.
    pub fn of(slope: f64) -> Trend {
        if slope <= ROOT_D_SLOPE {
            Trend::RootD
        } else if slope <= FLAT_SLOPE {
            Trend::Slow
        } else {
            Trend::Flat
        }
    }
}

/// One method's fitted slope.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slope {
    pub method: MethodId,
    /// Least-squares slope of `ln error` against `ln D`.
    pub slope: f64,
    /// The D range it was fitted over.
    pub from: usize,
    pub to: usize,
}

impl Slope {
    pub fn trend(&self) -> Trend {
        Trend::of(self.slope)
    }
}

/// The least-squares slope of `ln e` against `ln D` over the points with a positive, finite
/// error; `None` with fewer than three such points or a single D.
pub fn log_log_slope(points: &[(usize, f64, f64)]) -> Option<f64> {
    let logs: Vec<(f64, f64)> = points
        .iter()
        .filter(|(d, e, _)| *d > 0 && e.is_finite() && *e > 0.0)
        .map(|&(d, e, _)| ((d as f64).ln(), e.ln()))
        .collect();
    if logs.len() < 3 {
        return None;
    }
    least_squares_slope(&logs)
}

/// The slope of every method of the report that has at least three budget points, in the
/// report's order.
pub fn budget_slopes(report: &BudgetReport) -> Vec<Slope> {
    report
        .curves
        .iter()
        .filter_map(|curve| {
            let slope = log_log_slope(&curve.points)?;
            Some(Slope {
                method: curve.method,
                slope,
                from: curve.points.first()?.0,
                to: curve.points.last()?.0,
            })
        })
        .collect()
}

/// `+0.04`, `−0.44`: two decimals with a typographic minus, as the page writes numbers.
fn signed(value: f64) -> String {
    format!("{value:+.2}").replace('-', "−")
}

fn listed(slopes: &[Slope], trend: Trend) -> Option<String> {
    let ids: Vec<String> = slopes
        .iter()
        .filter(|s| s.trend() == trend)
        .map(|s| format!("{} ({})", s.method.id(), signed(s.slope)))
        .collect();
    (!ids.is_empty()).then(|| ids.join(", "))
}

/// The sentence beside the budget chart: which methods fall like `1/√D`, which fall slower,
/// which stay flat (each with its fitted slope), and why a flat line is not a bug.
pub fn budget_notice(report: &BudgetReport) -> String {
    let slopes = budget_slopes(report);
    if slopes.is_empty() {
        return "No method has three budget points: nothing to fit.".to_string();
    }
    let mut parts = vec!["Fitted slope of ln error against ln D (1/√D is −0.5).".to_string()];
    if let Some(ids) = listed(&slopes, Trend::RootD) {
        parts.push(format!("Falls like 1/√D or faster: {ids}."));
    }
    if let Some(ids) = listed(&slopes, Trend::Slow) {
        parts.push(format!("Falls, slower than 1/√D: {ids}."));
    }
    if let Some(ids) = listed(&slopes, Trend::Flat) {
        parts.push(format!(
            "Flat across the axis: {ids}. Not a bug: a random map's MSE carries the factor \
             e^(|z|²), so its typical error falls only once D is large against it."
        ));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::attention::outputs::BudgetCurve;

    #[test]
    fn slopes_of_power_laws_are_their_exponents() {
        let power = |exponent: f64| -> Vec<(usize, f64, f64)> {
            [16usize, 64, 256, 1024]
                .iter()
                .map(|&d| (d, 3.0 * (d as f64).powf(exponent), 0.0))
                .collect()
        };
        for exponent in [-0.5, -0.2, 0.0, 0.3] {
            let slope = log_log_slope(&power(exponent)).unwrap();
            assert!((slope - exponent).abs() < 1e-12, "{exponent}: {slope}");
        }
        // Too few usable points: no slope.
        assert_eq!(log_log_slope(&[(16, 1.0, 0.0), (32, 0.5, 0.0)]), None);
        assert_eq!(
            log_log_slope(&[(16, 1.0, 0.0), (32, f64::NAN, 0.0), (64, 0.0, 0.0)]),
            None
        );
        assert_eq!(log_log_slope(&[(16, 1.0, 0.0); 4]), None);
    }

    #[test]
    fn the_notice_sorts_methods_by_their_slopes() {
        let curve = |id: &str, exponent: f64| BudgetCurve {
            method: MethodId::from_id(id).unwrap(),
            points: [16usize, 128, 1024]
                .iter()
                .map(|&d| (d, (d as f64).powf(exponent), 0.0))
                .collect(),
        };
        let report = BudgetReport {
            len: 64,
            curves: vec![
                curve("prf-pos", -0.02),
                curve("hcexp-var", -0.5),
                curve("oprf", -0.2),
            ],
        };
        let notice = budget_notice(&report);
        assert!(
            notice.contains("Falls like 1/√D or faster: hcexp-var (−0.50)."),
            "{notice}"
        );
        assert!(
            notice.contains("slower than 1/√D: oprf (−0.20)."),
            "{notice}"
        );
        assert!(
            notice.contains("Flat across the axis: prf-pos (−0.02)."),
            "{notice}"
        );
    }
}
