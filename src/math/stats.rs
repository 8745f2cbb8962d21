//! Summary statistics for the boxplots and the results table.

use serde::{Deserialize, Serialize};

/// The `p`-quantile of finite `values` by linear interpolation between order statistics
/// (NumPy's default, "type 7"). Non-finite values sort last. `None` for an empty slice.
pub fn quantile(values: &[f64], p: f64) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    quantile_of_sorted(&sorted, p)
}

fn quantile_of_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let position = p.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = position.ceil() as usize;
    let weight = position - below as f64;
    if below == above {
        Some(sorted[below])
    } else {
        Some(sorted[below] + weight * (sorted[above] - sorted[below]))
    }
}

/// The median (the 0.5-quantile).
pub fn median(values: &[f64]) -> Option<f64> {
    quantile(values, 0.5)
}

/// Tukey's boxplot summary: quartiles, whiskers at the most extreme values within 1.5 IQR of
/// the box, and the values beyond them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoxSummary {
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub whisker_low: f64,
    pub whisker_high: f64,
    pub outliers: Vec<f64>,
}

impl BoxSummary {
    /// The summary of `values`; `None` for an empty slice.
    pub fn of(values: &[f64]) -> Option<Self> {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let q1 = quantile_of_sorted(&sorted, 0.25)?;
        let median = quantile_of_sorted(&sorted, 0.5)?;
        let q3 = quantile_of_sorted(&sorted, 0.75)?;
        let reach = 1.5 * (q3 - q1);
        let (low_fence, high_fence) = (q1 - reach, q3 + reach);
        let inside = || {
            sorted
                .iter()
                .copied()
                .filter(|v| *v >= low_fence && *v <= high_fence)
        };
        Some(Self {
            q1,
            median,
            q3,
            whisker_low: inside().fold(f64::INFINITY, f64::min).min(q1),
            whisker_high: inside().fold(f64::NEG_INFINITY, f64::max).max(q3),
            outliers: sorted
                .iter()
                .copied()
                .filter(|v| *v < low_fence || *v > high_fence)
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_numpy() {
        let v = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];
        // numpy.quantile(v, [0.25, 0.5, 0.75]) = [1.75, 3.5, 5.25]
        assert_eq!(quantile(&v, 0.25), Some(1.75));
        assert_eq!(median(&v), Some(3.5));
        assert_eq!(quantile(&v, 0.75), Some(5.25));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn box_summary_separates_outliers() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0, 100.0];
        let b = BoxSummary::of(&v).unwrap();
        assert_eq!(b.q1, 2.25);
        assert_eq!(b.q3, 4.75);
        assert_eq!(b.outliers, vec![100.0]);
        assert_eq!(b.whisker_high, 5.0);
        assert_eq!(b.whisker_low, 1.0);
    }
}
