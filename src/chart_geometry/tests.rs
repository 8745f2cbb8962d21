//! Native tests of the chart geometry: concrete ranges, pixels and labels.

use super::*;
use crate::numerics::estimators::{EstimatorId, Fit};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

macro_rules! assert_close {
    ($a:expr, $b:expr) => {{
        let (a, b): (f64, f64) = ($a, $b);
        assert!(close(a, b), "{} = {a}, expected {b}", stringify!($a));
    }};
}

fn positive(values: &[f64]) -> Vec<f64> {
    values.iter().map(|v| v.ln()).collect()
}

fn signed(values: &[f64]) -> Vec<SignedLog> {
    values.iter().map(|v| SignedLog::from_value(*v)).collect()
}

fn series(log_true: Vec<f64>, estimates: Vec<SignedLog>) -> ScatterSeries {
    ScatterSeries {
        estimates: PairEstimates {
            estimator: EstimatorId::all().next().unwrap(),
            log_theoretical_mse: vec![f64::NAN; log_true.len()],
            z_squared: (0..log_true.len()).map(|i| i as f64 + 0.5).collect(),
            log_true,
            estimates,
            fit: Fit::identity(2),
            data_radius: 1.0,
            theorem_3_3: None,
            sweep: None,
        },
        metrics: DatasetMetrics::from_logs(0.0, 0.0, 0.0),
    }
}

/// A 400 × 300 plotting area from (50, 10) to (450, 310).
const BOUNDS: PixelBounds = PixelBounds {
    left: 50.0,
    right: 450.0,
    top: 10.0,
    bottom: 310.0,
};

#[test]
fn tick_keeps_four_significant_digits_and_trims_zeros() {
    assert_eq!(tick(0.0), "0");
    assert_eq!(tick(-0.0), "0");
    assert_eq!(tick(2.5), "2.5");
    assert_eq!(tick(100.0), "100");
    assert_eq!(tick(1234.5678), "1235");
    assert_eq!(tick(0.012345), "0.01235");
    assert_eq!(tick(-3.45678), "-3.457");
    assert_eq!(tick(0.001), "0.001");
    assert_eq!(tick(9999.0), "9999");
    assert_eq!(tick(12345.0), "1.2e4");
    assert_eq!(tick(-0.0001), "-1.0e-4");
    assert_eq!(tick(1e300), "1.0e300");
}

#[test]
fn power_of_ten_labels_whole_and_fractional_decades() {
    assert_eq!(power_of_ten_label(0.0), "10⁰");
    assert_eq!(power_of_ten_label(3.0), "10³");
    assert_eq!(power_of_ten_label(-12.0), "10⁻¹²");
    assert_eq!(power_of_ten_label(2.999_999_999_9), "10³");
    assert_eq!(power_of_ten_label(0.5), "3.162");
    assert_eq!(power_of_ten_label(-0.5), "0.3162");
    assert_eq!(power_of_ten_label(1.24), "17.38");
    assert_eq!(power_of_ten_label(-2.6), "2.5×10⁻³");
    assert_eq!(power_of_ten_label(120.3), "2.0×10¹²⁰");
}

#[test]
fn scatter_axis_labels_round_to_a_tenth_of_a_decade_on_log_axes() {
    let log = ScatterPlan::new(&[0.0, 20.0], &signed(&[1.0, 2.0])).unwrap();
    assert!(log.log_axes);
    assert_eq!(log.axis_label(0.46), "3.162");
    assert_eq!(log.axis_label(0.96), "10¹");
    assert_eq!(log.axis_label(-2.04), "10⁻²");
    assert_eq!(log.axis_label(3.333), "2.0×10³");
    let linear = ScatterPlan::new(&positive(&[1.0, 2.0]), &signed(&[1.0, 2.0])).unwrap();
    assert!(!linear.log_axes);
    assert_eq!(linear.axis_label(0.46), "0.46");
    assert_eq!(linear.axis_label(1234.5678), "1235");
}

#[test]
fn padded_range_of_nothing_finite_is_none() {
    assert_eq!(padded_range(std::iter::empty(), 0.3, 1.0), None);
    assert_eq!(
        padded_range([f64::NAN, f64::NAN].into_iter(), 0.3, 1.0),
        None
    );
    assert_eq!(
        padded_range([f64::INFINITY, f64::NEG_INFINITY].into_iter(), 0.0, 0.0),
        None
    );
    assert_eq!(boxplot_range([f64::NAN].into_iter()), None);
}

#[test]
fn padded_range_pads_and_widens_to_the_minimum_span() {
    // Finite values 2 and 3 (NaN and ∞ ignored), 0.5 each side.
    assert_eq!(
        padded_range([2.0, f64::NAN, 3.0, f64::INFINITY].into_iter(), 0.5, 0.0),
        Some((1.5, 3.5))
    );
    // A single value widened to a span of 2, then padded.
    assert_eq!(
        padded_range([5.0].into_iter(), 0.25, 2.0),
        Some((3.75, 6.25))
    );
    assert_eq!(
        boxplot_range([-3.0, 1.0, f64::NEG_INFINITY].into_iter()),
        Some((-3.5, 1.5))
    );
}

#[test]
fn log_axes_switch_on_span_beyond_1e4_or_ln_beyond_300() {
    assert!(!scatter_log_axes(&positive(&[1.0, 9_000.0])));
    assert!(scatter_log_axes(&positive(&[1.0, 11_000.0])));
    assert!(scatter_log_axes(&positive(&[1e-3, 11.0])));
    // A narrow span far out: |ln SM| > 300.
    assert!(!scatter_log_axes(&[299.0, 299.5]));
    assert!(scatter_log_axes(&[300.5, 301.0]));
    assert!(scatter_log_axes(&[-301.0, -300.5]));
    assert!(!scatter_log_axes(&[-299.5]));
    // NaN is ignored by the span.
    assert!(!scatter_log_axes(&[0.0, f64::NAN, 1.0]));
}

#[test]
fn log_axes_range_is_shared_and_padded_by_a_tenth() {
    let plan = ScatterPlan::new(&positive(&[1.0, 1e6]), &signed(&[1.0, 1e6])).unwrap();
    assert!(plan.log_axes);
    assert_close!(plan.x_range.0, -0.6);
    assert_close!(plan.x_range.1, 6.6);
    assert_eq!(plan.x_range, plan.y_range);
    assert_close!(plan.points[1].0, 6.0);
    assert_eq!(plan.x_desc(), "true SM(x, y) = exp(x·y) (log scale)");
    assert_eq!(plan.y_desc(), "estimated SM (log scale)");
    assert_eq!(plan.outside, 0);
    // One true value: widened to a decade.
    let single = ScatterPlan::new(&[350.0 * std::f64::consts::LN_10], &signed(&[1.0])).unwrap();
    assert!(single.log_axes);
    assert_close!(single.x_range.0, 349.4);
    assert_close!(single.x_range.1, 350.6);
}

#[test]
fn non_positive_estimates_on_log_axes_are_nan_and_drawn_on_the_bottom_edge() {
    assert!(scatter_axis(true, SignedLog::from_value(-2.0)).is_nan());
    assert!(scatter_axis(true, SignedLog::ZERO).is_nan());
    assert_close!(scatter_axis(true, SignedLog::from_value(100.0)), 2.0);
    assert_eq!(scatter_axis(false, SignedLog::from_value(-2.0)), -2.0);
    assert_eq!(scatter_axis(false, SignedLog::ZERO), 0.0);

    let plan = ScatterPlan::new(
        &positive(&[1.0, 1e3, 1e6]),
        &[
            SignedLog::from_value(-5.0),
            SignedLog::ZERO,
            SignedLog::from_value(1e6),
        ],
    )
    .unwrap();
    assert!(plan.log_axes);
    assert_eq!(plan.negative, 1);
    assert!(plan.points[0].1.is_nan() && plan.points[1].1.is_nan());
    // Both non-positive estimates are counted on the edge and drawn on the bottom one.
    assert_eq!(plan.outside, 2);
    assert_eq!(
        plan.y_desc(),
        "estimated SM (log scale; ≤ 0 on the bottom edge)"
    );
    let dots: Vec<(f64, f64)> = plan.dots().collect();
    assert_eq!(dots.len(), 3);
    assert_close!(dots[0].1, -0.6);
    assert_close!(dots[1].1, -0.6);
    assert_close!(dots[2].1, 6.0);
    assert_eq!(plan.ring(0), Some(dots[0]));
    assert_eq!(plan.ring(3), None);
    assert!(
        plan.note(&DatasetMetrics::from_logs(0.0, 0.0, 0.0))
            .ends_with(" · 1 < 0 · 2 on the edge")
    );
}

#[test]
fn negative_estimates_on_linear_axes_extend_the_range_below_zero() {
    // SM = 1, …, 20; the first four estimates are −1, …, −4, the others exact.
    let trues: Vec<f64> = (1..=20).map(f64::from).collect();
    let estimates: Vec<f64> = trues
        .iter()
        .map(|&t| if t <= 4.0 { -t } else { t })
        .collect();
    let plan = ScatterPlan::new(&positive(&trues), &signed(&estimates)).unwrap();
    assert!(!plan.log_axes);
    assert_eq!(plan.negative, 4);
    assert_eq!(plan.outside, 0);
    // Estimates' 5 % quantile −3.05, the true values' maximum 20, 5 % padding of 23.05.
    assert_close!(plan.y_range.0, -4.2025);
    assert_close!(plan.y_range.1, 21.1525);
    // Spread well under 8× the true values': the x range is shared.
    assert_eq!(plan.x_range, plan.y_range);
    assert_eq!(plan.y_desc(), "estimated SM (negative estimates below 0)");
    assert_eq!(plan.x_desc(), "true SM(x, y) = exp(x·y)");
    assert_eq!(
        plan.note(&DatasetMetrics::from_logs(0.0, 2.0f64.ln(), 0.0)),
        "MSE 1.000e0 · max rel. err 2.000e0 · 4 < 0"
    );

    let layout = plan.layout(BOUNDS);
    let below = layout.position(4.0f64.ln(), SignedLog::from_value(-4.0));
    let zero = layout.position(4.0f64.ln(), SignedLog::ZERO);
    // x: (4 + 4.2025) / 25.355 of 400 pixels; y: 300 pixels from 310 up.
    assert_close!(below.0, 50.0 + 400.0 * 8.2025 / 25.355);
    assert_close!(zero.1, 310.0 - 300.0 * 4.2025 / 25.355);
    assert_close!(below.1, 310.0 - 300.0 * 0.2025 / 25.355);
    assert!(
        below.1 > zero.1,
        "a negative estimate sits below the zero line"
    );
}

#[test]
fn positive_estimates_keep_zero_as_the_floor() {
    let plan = ScatterPlan::new(&positive(&[1.0, 2.0, 3.0]), &signed(&[1.0, 2.0, 3.0])).unwrap();
    // lo − 5 % of 2 = 0.9, above 0; the floor only cuts when padding would cross 0.
    assert_close!(plan.y_range.0, 0.9);
    assert_close!(plan.y_range.1, 3.1);
    let near_zero = ScatterPlan::new(&positive(&[0.01, 10.0]), &signed(&[0.01, 10.0])).unwrap();
    assert_eq!(near_zero.y_range.0, 0.0);
    assert_close!(near_zero.y_range.1, 10.4995);
    assert_eq!(near_zero.negative, 0);
    assert_eq!(near_zero.y_desc(), "estimated SM");
    assert_eq!(
        near_zero.note(&DatasetMetrics::from_logs(0.0, 0.0, 0.0)),
        "MSE 1.000e0 · max rel. err 1.000e0"
    );
}

#[test]
fn estimates_spread_over_8x_the_true_span_get_a_separate_x_range() {
    // SM from 1 to 2; estimates from −100 to 100 (5 % and 95 % quantiles ∓90).
    let points: Vec<(f64, f64)> = (0..=20)
        .map(|i| (1.0 + f64::from(i) / 20.0, -100.0 + 10.0 * f64::from(i)))
        .collect();
    let x = scatter_range(&points).unwrap();
    assert_close!(x.0, 0.95);
    assert_close!(x.1, 2.05);
    let y = scatter_range_of(&points).unwrap();
    assert_close!(y.0, -99.0);
    assert_close!(y.1, 99.0);
    // Through the plan: the same ranges, and the extremes (beyond the quantiles) on the
    // edges.
    let plan = ScatterPlan::new(
        &points.iter().map(|p| p.0.ln()).collect::<Vec<_>>(),
        &signed(&points.iter().map(|p| p.1).collect::<Vec<_>>()),
    )
    .unwrap();
    assert!(!plan.log_axes);
    assert_close!(plan.x_range.0, 0.95);
    assert_close!(plan.x_range.1, 2.05);
    assert_close!(plan.y_range.0, -99.0);
    assert_eq!(plan.outside, 2);

    // Estimates spreading 9× the true values' range (−3.45 to 6.45 against 0.95 to 2.05)
    // just get a separate x range …
    let wide: Vec<(f64, f64)> = (0..=20)
        .map(|i| (1.0 + f64::from(i) / 20.0, 1.5 + 0.5 * f64::from(i - 10)))
        .collect();
    let x = scatter_range(&wide).unwrap();
    assert_close!(x.0, 0.95);
    assert_close!(x.1, 2.05);
    let y = scatter_range_of(&wide).unwrap();
    assert_close!(y.0, -3.45);
    assert_close!(y.1, 6.45);
    // … and estimates spreading about 6× keep the shared range.
    let narrow: Vec<(f64, f64)> = (0..=20)
        .map(|i| (1.0 + f64::from(i) / 20.0, 1.5 + 0.35 * f64::from(i - 10)))
        .collect();
    let shared = scatter_range(&narrow).unwrap();
    assert_eq!(Some(shared), scatter_range_of(&narrow));
    assert!(shared.0 < 0.0);
}

#[test]
fn out_of_range_points_are_clamped_to_the_edges() {
    let layout = ScatterLayout::new(BOUNDS, (0.0, 10.0), (0.0, 10.0), false, 0);
    let at = |sm: f64, estimate: f64| layout.position(sm.ln(), SignedLog::from_value(estimate));
    let assert_at = |sm: f64, estimate: f64, expected: (f64, f64)| {
        let (x, y) = at(sm, estimate);
        assert_close!(x, expected.0);
        assert_close!(y, expected.1);
    };
    assert_at(5.0, 5.0, (250.0, 160.0));
    // Above the range: on the top edge; below it: on the bottom edge.
    assert_at(5.0, 1e6, (250.0, 10.0));
    assert_at(5.0, -3.0, (250.0, 310.0));
    // True values beyond the x range: on the right and left edges.
    assert_at(1e6, 2.5, (450.0, 235.0));
    assert_at(1e-9, 10.0, (50.0 + 4e-8, 10.0));
    let (x, y) = layout.position(800.0, SignedLog::positive(900.0));
    assert_eq!((x, y), (450.0, 10.0));

    let plan = ScatterPlan {
        log_axes: false,
        points: vec![(1.0, 20.0), (2.0, -1.0), (3.0, 4.0), (f64::NAN, 1.0)],
        x_range: (0.0, 10.0),
        y_range: (0.0, 10.0),
        negative: 1,
        outside: 2,
    };
    assert_eq!(plan.shown(20.0), 10.0);
    assert_eq!(plan.shown(-1.0), 0.0);
    assert_eq!(plan.shown(f64::NAN), 0.0);
    assert_eq!(plan.shown(f64::INFINITY), 10.0);
    assert_eq!(plan.shown(4.0), 4.0);
    // The pair without a finite true value is not drawn.
    let dots: Vec<(f64, f64)> = plan.dots().collect();
    assert_eq!(dots, vec![(1.0, 10.0), (2.0, 0.0), (3.0, 4.0)]);
}

#[test]
fn pixel_bounds_are_the_device_range_over_the_pixel_ratio() {
    let bounds = PixelBounds::from_device(112..900, 16..541, 2.0);
    assert_eq!(
        bounds,
        PixelBounds {
            left: 56.0,
            right: 450.0,
            top: 8.0,
            bottom: 270.5,
        }
    );
}

#[test]
fn a_click_on_a_point_finds_its_pair_within_12_pixels() {
    let trues = [1.0, 2.0, 3.0, 4.0, 5.0];
    let estimates = [1.2, 1.7, 3.5, 3.9, 4.8];
    let series = series(positive(&trues), signed(&estimates));
    let plan = ScatterPlan::of(&series.estimates).unwrap();
    let layout = plan.layout(PixelBounds::from_device(100..900, 20..620, 2.0));
    assert_eq!(layout.outside, 0);
    assert!(!layout.log_axes);
    let e = &series.estimates;
    for i in 0..trues.len() {
        let (x, y) = layout.position(e.log_true[i], e.estimates[i]);
        assert_eq!(layout.nearest_pair(&series, x, y), Some(i));
        assert_eq!(layout.nearest_pair(&series, x + 3.0, y - 2.0), Some(i));
    }
    // Pair 0 sits alone in the bottom-left: 11.9 pixels away still hits it, 12.1 not.
    let (x, y) = layout.position(e.log_true[0], e.estimates[0]);
    assert_eq!(layout.nearest_pair(&series, x - 11.9, y), Some(0));
    assert_eq!(layout.nearest_pair(&series, x - 12.1, y), None);
    assert_eq!(layout.nearest_pair(&series, x, y + 12.1), None);
    assert_eq!(layout.nearest_pair(&series, -500.0, -500.0), None);
    // Range 0.8 to 5.2 on both axes of the area (50, 10)–(450, 310): pair 3 (SM 4,
    // ŜM 3.9) at (340.9, 98.6).
    let (x, y) = layout.position(e.log_true[3], e.estimates[3]);
    assert_close!(x, 50.0 + 400.0 * 3.2 / 4.4);
    assert_close!(y, 310.0 - 300.0 * 3.1 / 4.4);
}

#[test]
fn round_trip_positions_in_concrete_pixels() {
    // Ranges 0 to 10 on both axes of a 400 × 300 area at (50, 10).
    let layout = ScatterLayout::new(BOUNDS, (0.0, 10.0), (0.0, 10.0), false, 1);
    let log_true = positive(&[2.0, 8.0]);
    let estimates = signed(&[3.0, 8.0]);
    assert_eq!(layout.position(log_true[0], estimates[0]).0.round(), 130.0);
    assert_eq!(layout.position(log_true[0], estimates[0]).1.round(), 220.0);
    assert_eq!(layout.nearest(&log_true, &estimates, 131.0, 221.0), Some(0));
    assert_eq!(layout.nearest(&log_true, &estimates, 370.0, 70.0), Some(1));
    assert_eq!(layout.nearest(&log_true, &estimates, 250.0, 160.0), None);
}

#[test]
fn unclickable_points_on_log_axes() {
    // ŜM ≤ 0 on log axes has no position (its dot is on the bottom edge).
    let layout = ScatterLayout::new(BOUNDS, (0.0, 5.0), (0.0, 5.0), true, 1);
    let (x, y) = layout.position(10.0f64.ln(), SignedLog::from_value(-1.0));
    assert_close!(x, 130.0);
    assert!(y.is_nan());
    let (x, y) = layout.position(1000.0f64.ln(), SignedLog::from_value(100.0));
    assert_close!(x, 290.0);
    assert_close!(y, 190.0);
    assert_eq!(
        layout.nearest(
            &[10.0f64.ln()],
            &[SignedLog::from_value(-1.0)],
            130.0,
            310.0
        ),
        None
    );
}

#[test]
fn theory_markers_beyond_the_axis_become_labelled_arrows() {
    let axis = (-2.0, 3.0);
    assert_eq!(TheoryMarker::new(1.5, axis), TheoryMarker::Diamond(1.5));
    assert_eq!(TheoryMarker::new(3.0, axis), TheoryMarker::Diamond(3.0));
    assert_eq!(TheoryMarker::new(-2.0, axis), TheoryMarker::Diamond(-2.0));
    let above = TheoryMarker::new(12.345, axis);
    assert_eq!(above, TheoryMarker::Above("1e12.3".into()));
    assert_eq!(above.at(axis), 3.0);
    let below = TheoryMarker::new(-7.26, axis);
    assert_eq!(below, TheoryMarker::Below("1e-7.3".into()));
    assert_eq!(below.at(axis), -2.0);
    assert_eq!(TheoryMarker::Diamond(0.5).at(axis), 0.5);
}

#[test]
fn error_bars_are_cut_at_a_hundredth_of_the_mean() {
    let point = |mse: f64, se: f64| CurvePoint {
        m: 64,
        log_measured_mse: mse.ln(),
        log_standard_error: se.ln(),
        log_theoretical_mse: f64::NAN,
    };
    let (mid, top, bottom) = log10_error_bar(&point(100.0, 50.0));
    assert_close!(mid, 2.0);
    assert_close!(top, 150.0f64.log10());
    assert_close!(bottom, 50.0f64.log10());
    let (mid, top, bottom) = log10_error_bar(&point(100.0, 200.0));
    assert_close!(mid, 2.0);
    assert_close!(top, 300.0f64.log10());
    assert_close!(bottom, 0.0);
}

#[test]
fn probe_histogram_counts_outliers_in_the_edge_bins() {
    // 0.5, 1.5, …, 99.5 and a NaN, left out.
    let mut estimates: Vec<f64> = (0..100).map(|i| f64::from(i) + 0.5).collect();
    estimates.push(f64::NAN);
    let h = Histogram::new(&estimates, 50.0, 10).unwrap();
    // Quantiles 0.995 and 99.005, padded by 5 % of 98.01, and not below 0.
    assert_eq!(h.lo, 0.0);
    assert_close!(h.hi, 99.005 + 0.05 * 98.01);
    assert_close!(h.width, h.hi / 10.0);
    assert_eq!(h.counts, vec![10, 11, 10, 11, 10, 10, 11, 10, 11, 6]);
    assert_close!(h.top, 11.0 * 1.15);
    // The floor at 0: estimates near 0 and a true value of 0.
    let near_zero = Histogram::new(&[0.1, 0.2, 0.3, 0.4], 0.0, 4).unwrap();
    assert_eq!(near_zero.lo, 0.0);
    assert_eq!(near_zero.counts, vec![1, 1, 1, 1]);
    assert_close!(near_zero.top, 1.15);
    // 1, …, 400 and two outliers beyond the central 99 %: range 0 to 418.8445, and the
    // outliers in the edge bins (bin 0 also holds 1, …, 10; bin 39 nothing else).
    let outliers: Vec<f64> = (1..=400).map(f64::from).chain([-1e9, 1e9]).collect();
    let h = Histogram::new(&outliers, 200.0, 40).unwrap();
    assert_eq!(h.lo, 0.0);
    assert_close!(h.hi, 398.995 + 0.05 * 396.99);
    assert_eq!(h.counts[0], 11);
    assert_eq!(h.counts[39], 1);
    assert_eq!(h.counts.iter().sum::<usize>(), 402);
    assert_eq!(Histogram::new(&[f64::NAN], 1.0, 40), None);
    assert_eq!(Histogram::new(&[], 1.0, 40), None);
}

#[test]
fn a_scatter_tooltip_names_the_pair_and_its_numbers() {
    let s = series(vec![0.0, 2.0f64.ln(), 800.0], signed(&[1.5, -1.0, 1.0]));
    assert_eq!(
        scatter_tooltip(&s, 0).unwrap(),
        "pair 0 · SM = 1 · ŜM = 1.5 · relative error 0.5 · |z|² = 0.5"
    );
    // A negative estimate: |ŜM − SM| / SM = (1 + 2) / 2.
    let negative = scatter_tooltip(&s, 1).unwrap();
    assert!(
        negative.contains("ŜM = −1 ") && negative.contains("relative error 1.5"),
        "{negative}"
    );
    // Beyond f64: SM = e^800 is written from its log, and the estimate 1 is 0 % of it.
    let huge = scatter_tooltip(&s, 2).unwrap();
    assert!(huge.contains("SM = ") && huge.contains("e347"), "{huge}");
    assert!(scatter_tooltip(&s, 3).is_none());
}

#[test]
fn focus_range_keeps_the_data_and_near_theory_and_drops_far_theory() {
    // Measurements between 10⁻³ and 10⁰; one bound at 10⁴ (kept), one at 10¹⁷³³ (left out).
    let (lo, hi) =
        focus_range([-3.0, 0.0].into_iter(), [4.0, 1733.0].into_iter(), 0.5, 2.0).unwrap();
    assert_eq!((lo, hi), (-3.5, 4.5));
    // Nothing measured: the theory alone.
    assert_eq!(
        focus_range(std::iter::empty(), [1.0, 3.0].into_iter(), 0.5, 1.0),
        Some((0.5, 3.5))
    );
    assert_eq!(
        focus_range([f64::NAN].into_iter(), std::iter::empty(), 0.5, 1.0),
        None
    );
}

#[test]
fn a_highlighted_pair_is_ringed_where_its_dot_is_drawn() {
    let s = series(
        vec![10.0f64.ln(), 1000.0f64.ln(), f64::NAN],
        signed(&[-1.0, 100.0, 5.0]),
    );
    let layout = ScatterLayout::new(BOUNDS, (0.0, 5.0), (0.0, 5.0), true, 1);
    // ŜM ≤ 0 on log axes: on the bottom edge, where its dot is drawn (no click picks it).
    let (x, y) = layout.pair_position(&s, 0).unwrap();
    assert_close!(x, 130.0);
    assert_close!(y, 310.0);
    let (x, y) = layout.pair_position(&s, 1).unwrap();
    assert_close!(x, 290.0);
    assert_close!(y, 190.0);
    // A true value off the axis is not drawn; no such pair, no ring.
    assert_eq!(layout.pair_position(&s, 2), None);
    assert_eq!(layout.pair_position(&s, 3), None);
}
