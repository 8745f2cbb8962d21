//! Summary statistics for the boxplots and the results table.

use crate::numerics::portable::Libm;
use serde::{Deserialize, Serialize};

/// The `p`-quantile of finite `values` by linear interpolation between order statistics
/// (NumPy's default, "type 7"). Non-finite values sort last. `None` for an empty slice.
pub fn quantile(values: &[f64], p: f64) -> Option<f64> {
    let mut sorted = values.to_vec();
    sort_in_total_order(&mut sorted);
    quantile_of_sorted(&sorted, p)
}

/// Sorts `values` in [`f64::total_cmp`]'s order (the order `sort_unstable_by(f64::total_cmp)`
/// gives, bit for bit: values it calls equal have the same bits). A heapsort: a few hundred
/// bytes of WebAssembly where the standard library's unstable sort is five kilobytes in each
/// module that links it, for the few thousand values of a quantile or a boxplot.
pub fn sort_in_total_order(values: &mut [f64]) {
    fn sift_down(values: &mut [f64], mut root: usize, end: usize) {
        loop {
            let mut child = 2 * root + 1;
            if child >= end {
                return;
            }
            if child + 1 < end && values[child].total_cmp(&values[child + 1]).is_lt() {
                child += 1;
            }
            if values[root].total_cmp(&values[child]).is_ge() {
                return;
            }
            values.swap(root, child);
            root = child;
        }
    }
    let n = values.len();
    for root in (0..n / 2).rev() {
        sift_down(values, root, n);
    }
    for end in (1..n).rev() {
        values.swap(0, end);
        sift_down(values, 0, end);
    }
}

/// The indices of `keys` from the smallest key to the largest in [`f64::total_cmp`]'s order
/// (NaN last), ties by index: the leaderboards' order. One function for every such order, so
/// the page links one sort for them.
pub fn order_by_key(keys: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_unstable_by(|&i, &j| keys[i].total_cmp(&keys[j]).then(i.cmp(&j)));
    order
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

/// The sample mean of `values` and its standard error, `sd / sqrt(n)` with the unbiased
/// (n − 1) sample variance. Needs at least two values (NaN otherwise).
pub fn mean_and_standard_error(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
    (mean, (variance / n).sqrt())
}

/// `log(mean_i exp(l_i))` without overflow (a shifted log-sum-exp); `-inf` for an empty slice
/// or when every term is `-inf`.
pub fn log_mean_exp(logs: &[f64]) -> f64 {
    let max = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return max;
    }
    let sum: f64 = logs.iter().map(|l| (l - max).libm_exp()).sum();
    max + (sum / logs.len() as f64).libm_ln()
}

/// `ln |e^δ − 1|`, the log of the relative error `|ŜM/SM − 1|` for `δ = log ŜM − log SM`;
/// finite for every finite `δ ≠ 0`, so a relative error of `e^1000` is still a number.
pub fn log_relative_error(delta: f64) -> f64 {
    if delta > 0.0 {
        delta + (-(-delta).libm_exp_m1()).libm_ln()
    } else {
        (-delta.libm_exp_m1()).libm_ln()
    }
}

/// `exp(ln_value)` in scientific notation with `digits` decimals, also where the value
/// itself overflows or underflows f64 (`1.0000e1234`): `0` for `-inf`, `n/a` for NaN/`+inf`.
pub fn format_from_log(ln_value: f64, digits: usize) -> String {
    if ln_value == f64::NEG_INFINITY {
        return "0".to_string();
    }
    if !ln_value.is_finite() {
        return "n/a".to_string();
    }
    let log10 = ln_value / std::f64::consts::LN_10;
    let mut exponent = log10.floor();
    let mut mantissa = 10f64.libm_powf(log10 - exponent);
    // Rounding can carry the mantissa to 10.
    if format!("{mantissa:.digits$}").starts_with("10") {
        mantissa /= 10.0;
        exponent += 1.0;
    }
    format!("{mantissa:.digits$}e{}", exponent as i64)
}

/// `n` in superscript digits (`−3` → `⁻³`), for exponents written as text (`10⁻³`).
pub fn superscript(n: i64) -> String {
    n.to_string()
        .chars()
        .map(|c| match c {
            '-' => '⁻',
            '0' => '⁰',
            '1' => '¹',
            '2' => '²',
            '3' => '³',
            '4' => '⁴',
            '5' => '⁵',
            '6' => '⁶',
            '7' => '⁷',
            '8' => '⁸',
            _ => '⁹',
        })
        .collect()
}

/// The least-squares slope of `y` against `x` over `points`; `None` when every `x` is the same
/// (or there are none).
pub fn least_squares_slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
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
        sort_in_total_order(&mut sorted);
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
    #[test]
    fn order_by_key_sorts_ties_by_index_and_nan_last() {
        let keys = [3.0, f64::NAN, 1.0, 3.0, -2.0];
        assert_eq!(super::order_by_key(&keys), vec![4, 2, 0, 3, 1]);
        assert_eq!(super::order_by_key(&[]), Vec::<usize>::new());
    }

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
    fn log_helpers_match_direct_computation_and_survive_overflow() {
        let logs = [0.0, 1.0, 2.0];
        let direct = ((1.0 + 1f64.libm_exp() + 2f64.libm_exp()) / 3.0).libm_ln();
        assert!((log_mean_exp(&logs) - direct).abs() < 1e-12);
        assert!((log_mean_exp(&[1000.0, 1000.0]) - 1000.0).abs() < 1e-9);
        assert_eq!(log_mean_exp(&[]), f64::NEG_INFINITY);
        for delta in [-3.0f64, -1e-6, 1e-6, 0.5, 4.0] {
            let direct = (delta.libm_exp() - 1.0f64).abs().libm_ln();
            assert!((log_relative_error(delta) - direct).abs() < 1e-9, "{delta}");
        }
        assert!((log_relative_error(2000.0) - 2000.0).abs() < 1e-9);
        assert_eq!(log_relative_error(0.0), f64::NEG_INFINITY);
    }

    #[test]
    fn the_small_sort_is_the_standard_librarys_total_order() {
        use crate::numerics::rng::{StreamPurpose, stream_rng};
        use rand::RngExt;
        let mut rng = stream_rng(11, StreamPurpose::Trial, 0, 0);
        let specials = [
            f64::NAN,
            -f64::NAN,
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1.5,
        ];
        for n in [0usize, 1, 2, 3, 7, 64, 1000] {
            let values: Vec<f64> = (0..n)
                .map(|i| match rng.random_range(0..10) {
                    0 => specials[i % specials.len()],
                    // repeats, so that ties are common
                    1..=3 => f64::from(rng.random_range(0..5u8)),
                    _ => rng.random::<f64>() * 200.0 - 100.0,
                })
                .collect();
            let mut ours = values.clone();
            sort_in_total_order(&mut ours);
            let mut standard = values;
            standard.sort_unstable_by(f64::total_cmp);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&ours), bits(&standard), "n = {n}");
        }
    }

    #[test]
    fn format_from_log_goes_beyond_f64() {
        assert_eq!(
            format_from_log(1234.5f64.libm_ln(), 4),
            format!("{:.4e}", 1234.5)
        );
        assert_eq!(format_from_log(0.00123f64.libm_ln(), 3), "1.230e-3");
        assert_eq!(
            format_from_log(5000.0 * std::f64::consts::LN_10, 2),
            "1.00e5000"
        );
        assert_eq!(format_from_log(f64::NEG_INFINITY, 2), "0");
        assert_eq!(format_from_log(f64::NAN, 2), "n/a");
        assert_eq!(format_from_log(10f64.libm_ln() * 2.99999999, 2), "1.00e3");
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
