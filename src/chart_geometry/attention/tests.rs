//! Native tests of the attention charts' geometry: axes, colour maps, layouts and labels.

use super::*;
use crate::chart_geometry::power_of_ten_label;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

fn all_close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| close(*x, *y))
}

#[test]
fn on_axis_leaves_out_non_finite_and_non_positive_on_log() {
    assert_eq!(Axis::on_axis(false, -2.0), Some(-2.0));
    assert_eq!(Axis::on_axis(true, 100.0), Some(2.0));
    assert_eq!(Axis::on_axis(true, 0.0), None);
    assert_eq!(Axis::on_axis(true, -1.0), None);
    for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(Axis::on_axis(false, v), None);
        assert_eq!(Axis::on_axis(true, v), None);
    }
}

#[test]
fn axis_around_pads_and_widens_empty_spans() {
    let a = Axis::around(false, [0.0, 10.0, f64::NAN].into_iter(), 0.05).unwrap();
    assert!(close(a.lo, -0.5) && close(a.hi, 10.5), "{a:?}");
    // All equal: 10 % of the value, 0.5 around 0, half a decade on a log axis.
    let a = Axis::around(false, [4.0, 4.0].into_iter(), 0.05).unwrap();
    assert!(close(a.lo, 3.6) && close(a.hi, 4.4), "{a:?}");
    let a = Axis::around(false, [0.0].into_iter(), 0.05).unwrap();
    assert_eq!((a.lo, a.hi), (-0.5, 0.5));
    let a = Axis::around(true, [-3.0].into_iter(), 0.05).unwrap();
    assert_eq!((a.lo, a.hi), (-3.5, -2.5));
    assert_eq!(
        Axis::around(false, [f64::NAN, f64::INFINITY].into_iter(), 0.1),
        None
    );
    assert_eq!(Axis::around(true, std::iter::empty(), 0.1), None);
    // A huge range keeps a finite span and finite ticks.
    let a = Axis::around(false, [-f64::MAX, f64::MAX].into_iter(), 0.05).unwrap();
    assert!(
        (a.hi - a.lo).is_finite() && a.lo < 0.0 && a.hi > 0.0,
        "{a:?}"
    );
    let ticks = a.ticks();
    assert!(
        !ticks.is_empty() && ticks.iter().all(|t| t.is_finite()),
        "{ticks:?}"
    );
    // A span below the values' precision: the ends alone, no endless loop.
    let a = Axis {
        log: false,
        lo: 1e16,
        hi: 1e16 + 4.0,
    };
    assert!(!a.ticks().is_empty());
}

#[test]
fn a_linear_axis_of_non_negative_values_starts_at_zero() {
    let a = Axis::around(false, [0.01, 0.4].into_iter(), 0.08)
        .unwrap()
        .floored(0.0, 0.01);
    assert_eq!(a.lo, 0.0);
    let signed = Axis::around(false, [-0.01, 0.4].into_iter(), 0.08)
        .unwrap()
        .floored(0.0, -0.01);
    assert!(signed.lo < -0.01);
}

#[test]
fn linear_ticks_are_round() {
    assert!(all_close(
        &linear_ticks(0.0, 1.0, 5.0),
        &[0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    ));
    assert!(all_close(
        &linear_ticks(-0.33, 0.71, 5.0),
        &[-0.2, 0.0, 0.2, 0.4, 0.6]
    ));
    assert!(all_close(
        &linear_ticks(0.0, 16.0, 5.0),
        &[0.0, 5.0, 10.0, 15.0]
    ));
    assert_eq!(linear_ticks(1.0, 1.0, 5.0), vec![1.0]);
    assert!(linear_ticks(f64::NAN, 1.0, 5.0).is_empty());
    let a = Axis {
        log: false,
        lo: -0.33,
        hi: 0.71,
    };
    let labels: Vec<String> = a.ticks().iter().map(|t| a.label(*t)).collect();
    assert_eq!(labels, ["-0.2", "0", "0.2", "0.4", "0.6"]);
    // Light lines halfway between the ticks, inside the axis.
    assert!(all_close(
        &Axis {
            log: false,
            lo: 0.0,
            hi: 1.0
        }
        .light_ticks(),
        &[0.1, 0.3, 0.5, 0.7, 0.9]
    ));
}

#[test]
fn log_axes_of_two_decades_or_more_label_whole_powers_only() {
    let a = Axis {
        log: true,
        lo: -6.3,
        hi: 0.2,
    };
    let ticks = a.ticks();
    assert!(all_close(
        &ticks,
        &[-6.0, -5.0, -4.0, -3.0, -2.0, -1.0, 0.0]
    ));
    let labels: Vec<String> = ticks.iter().map(|t| a.label(*t)).collect();
    assert_eq!(
        labels,
        ["10⁻⁶", "10⁻⁵", "10⁻⁴", "10⁻³", "10⁻²", "10⁻¹", "10⁰"]
    );
    // Exactly two decades: whole powers.
    assert!(all_close(&log_ticks(-1.0, 1.0), &[-1.0, 0.0, 1.0]));
    // Many decades: every 2, 5, 10, … decades, at most about seven ticks.
    let wide = log_ticks(-300.0, 300.0);
    assert!(wide.len() <= 8 && wide.len() >= 3, "{wide:?}");
    assert!(wide.iter().all(|t| t.fract() == 0.0));
    assert!(all_close(
        &log_ticks(-0.5, 13.5),
        &[0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0]
    ));
    assert!(all_close(
        &log_ticks(-0.5, 30.5),
        &[0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0]
    ));
    // No light lines beyond six decades.
    assert!(
        Axis {
            log: true,
            lo: -300.0,
            hi: 300.0
        }
        .light_ticks()
        .is_empty()
    );
    let light = Axis {
        log: true,
        lo: -2.0,
        hi: 0.0,
    }
    .light_ticks();
    assert_eq!(light.len(), 16);
    assert!(close(light[0], 2f64.log10() - 2.0));
}

#[test]
fn short_log_axes_use_one_two_five() {
    // τ from 0.25 to 16: 1.8 decades.
    let ticks = log_ticks(0.25f64.log10(), 16f64.log10());
    let labels: Vec<String> = ticks.iter().map(|t| log_label(*t)).collect();
    assert_eq!(labels, ["0.5", "10⁰", "2", "5", "10¹"]);
    // Less than a factor of two: 1, …, 9 times the powers, then round values.
    let ticks = log_ticks(0.1f64.log10(), 0.35f64.log10());
    let labels: Vec<String> = ticks.iter().map(|t| log_label(*t)).collect();
    assert_eq!(labels, ["10⁻¹", "0.2", "0.3"]);
    let ticks = log_ticks(1.02f64.log10(), 1.09f64.log10());
    assert!(ticks.len() >= 2, "{ticks:?}");
    let labels: Vec<String> = ticks.iter().map(|t| log_label(*t)).collect();
    assert_eq!(labels[0], "1.02");
    assert_eq!(log_label(-3.0), power_of_ten_label(-3.0));
}

#[test]
fn axis_descriptions_say_log_scale() {
    let log = Axis {
        log: true,
        lo: 0.0,
        hi: 1.0,
    };
    assert_eq!(log.describe("error"), "error (log scale)");
    let linear = Axis { log: false, ..log };
    assert_eq!(linear.describe("error"), "error");
}

#[test]
fn abbreviate_cuts_with_an_ellipsis() {
    assert_eq!(abbreviate("softmax", 10), "softmax");
    assert_eq!(abbreviate("positive random features", 10), "positive…");
    assert_eq!(abbreviate("αβγδεζηθ", 4), "αβγ…");
    assert_eq!(abbreviate("abc", 0), "");
}

#[test]
fn probability_colours_go_from_white_to_dark_blue_on_a_square_root_scale() {
    let s = HeatScale::Probability;
    let matrix = [0.0, 0.04, 0.25, 1.0, f64::NAN, f64::INFINITY];
    assert_eq!(s.max_of(&matrix), 1.0);
    assert_eq!(s.colour(0.0, 1.0), [247, 251, 255]);
    assert_eq!(s.colour(1.0, 1.0), [8, 48, 107]);
    // A quarter of the maximum is halfway up the scale.
    assert_eq!(s.position(0.25, 1.0), Some(0.5));
    assert_eq!(s.colour(0.25, 1.0), s.colour_at(0.5));
    // A small probability is visibly coloured.
    let small = s.colour(0.01, 1.0);
    assert!(small[0] <= 230, "{small:?}");
    assert_eq!(s.colour(f64::NAN, 1.0), MISSING_COLOUR);
    assert_eq!(s.colour(f64::INFINITY, 1.0), s.colour_at(1.0));
    assert_eq!(s.colour(-0.5, 1.0), s.colour_at(0.0));
    // All zero: white, and labels of zeros.
    assert_eq!(s.max_of(&[0.0, 0.0]), 0.0);
    assert_eq!(s.colour(0.0, 0.0), s.colour_at(0.0));
    let labels = s.bar_labels(0.8);
    assert_eq!(labels[1], (0.5, "0.2".to_string()));
    assert_eq!(labels[2], (1.0, "0.8".to_string()));
    assert_eq!(s.bar_caption(false), ["√ scale"]);
    assert_eq!(s.bar_caption(true), ["√ scale", "grey: NaN"]);
}

#[test]
fn difference_colours_are_symmetric_around_white() {
    let s = HeatScale::Difference;
    let matrix = [-0.02, 0.01, f64::NAN, f64::NEG_INFINITY];
    assert_eq!(s.max_of(&matrix), 0.02);
    assert_eq!(s.colour(0.0, 0.02), [247, 247, 247]);
    let (neg, pos) = (s.colour(-0.02, 0.02), s.colour(0.02, 0.02));
    assert!(neg[2] > neg[0], "negative is blue: {neg:?}");
    assert!(pos[0] > pos[2], "positive is red: {pos:?}");
    assert_eq!(s.position(-0.01, 0.02), Some(0.25));
    assert_eq!(s.colour(f64::NAN, 0.02), MISSING_COLOUR);
    assert_eq!(s.colour(f64::NEG_INFINITY, 0.02), neg);
    assert_eq!(s.colour(f64::NEG_INFINITY, 0.0), neg);
    assert_eq!(s.colour(5.0, 0.0), s.colour_at(0.5));
    let labels = s.bar_labels(0.02);
    assert_eq!(
        labels.map(|l| l.1),
        ["-0.02".to_string(), "0".to_string(), "+0.02".to_string()]
    );
    assert_eq!(s.bar_labels(f64::NAN)[2].1, "+0");
    assert!(s.bar_caption(false).is_empty());
}

#[test]
fn heatmap_layout_is_square_and_fits() {
    let l = HeatmapLayout::new(600.0, 400.0);
    assert!(close(l.side, 400.0 - 26.0 - 40.0 - 6.0));
    assert!(l.left >= HeatmapLayout::LEFT);
    assert!(l.bar_left + l.bar_width + 60.0 <= 600.0);
    assert!(l.top + l.side + HeatmapLayout::BOTTOM <= 400.0);
    // Narrow: the width decides; tiny or NaN: at least 40 px.
    let narrow = HeatmapLayout::new(300.0, 400.0);
    assert!(close(narrow.side, 300.0 - 52.0 - 84.0 - 8.0));
    assert_eq!(HeatmapLayout::new(10.0, 10.0).side, 40.0);
    let unknown = HeatmapLayout::new(f64::NAN, 300.0);
    assert!(unknown.side.is_finite() && unknown.side >= 40.0 && unknown.left.is_finite());
}

#[test]
fn heatmap_index_ticks_are_few_and_round() {
    assert_eq!(index_ticks(0), Vec::<usize>::new());
    assert_eq!(index_ticks(1), vec![0]);
    assert_eq!(index_ticks(6), vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(index_ticks(8), vec![0, 2, 4, 6]);
    assert_eq!(index_ticks(96), vec![0, 20, 40, 60, 80]);
    assert_eq!(index_ticks(1000).len(), 5);
    let huge = index_ticks(usize::MAX);
    assert!(huge[0] == 0 && huge.len() <= 6, "{huge:?}");
}

#[test]
fn distribution_stats_leave_out_what_the_axis_cannot_show() {
    let values = [0.1, 1.0, 10.0, 0.0, -1.0, f64::NAN, f64::INFINITY];
    let log = DistributionStats::new(&values, true);
    assert_eq!(log.values, vec![-1.0, 0.0, 1.0]);
    assert_eq!(log.non_positive, 2);
    assert_eq!(log.non_finite, 2);
    assert_eq!(log.quantiles.unwrap()[2], 0.0);
    assert_eq!(
        log.note(Some("12 bad rows")).as_deref(),
        Some("12 bad rows · 2 ≤ 0 left out · 2 not finite")
    );
    let linear = DistributionStats::new(&values, false);
    assert_eq!(linear.values.len(), 5);
    assert_eq!(linear.non_positive, 0);
    assert_eq!(linear.note(None).as_deref(), Some("2 not finite"));
    let empty = DistributionStats::new(&[], true);
    assert_eq!(empty.quantiles, None);
    assert_eq!(empty.note(Some("")).as_deref(), Some("no values"));
    let fine = DistributionStats::new(&[1.0], true);
    assert_eq!(fine.note(None), None);
}

#[test]
fn distribution_axis_holds_every_box_and_counts_the_rest() {
    // Values 1..=100 and one far outlier: the axis ends near the 5 % and 95 % quantiles.
    let mut values: Vec<f64> = (1..=100).map(f64::from).collect();
    values.push(1e6);
    let a = DistributionStats::new(&values, false);
    let b = DistributionStats::new(&[40.0, 41.0, f64::NAN], false);
    let c = DistributionStats::new(&[f64::NAN], false);
    let axis = distribution_axis(&[a.clone(), b, c.clone()], false).unwrap();
    let [q05, _, _, _, q95] = a.quantiles.unwrap();
    assert!(
        axis.lo <= q05 && axis.hi >= q95 && axis.hi < 200.0,
        "{axis:?}"
    );
    let (below, above) = a.beyond(&axis);
    assert!(above >= 1 && below <= 5, "{below} {above}");
    assert_eq!(distribution_axis(&[c], false), None);
    // Total variations in [0, 1]: the axis starts at 0.
    let tv = DistributionStats::new(&[0.001, 0.05, 0.1, 0.3], false);
    assert_eq!(distribution_axis(&[tv], false).unwrap().lo, 0.0);
    // All equal on a log axis: half a decade either side.
    let same = DistributionStats::new(&[1e-3; 5], true);
    let axis = distribution_axis(&[same], true).unwrap();
    assert!(close(axis.lo, -3.5) && close(axis.hi, -2.5), "{axis:?}");
}

#[test]
fn jitter_is_deterministic_and_spread() {
    let offsets: Vec<f64> = (0..100).map(jitter).collect();
    assert_eq!(offsets, (0..100).map(jitter).collect::<Vec<_>>());
    assert!(offsets.iter().all(|o| (-0.5..0.5).contains(o)));
    let left = offsets.iter().filter(|o| **o < 0.0).count();
    assert!((40..=60).contains(&left), "{left}");
}

#[test]
fn box_labels_turn_vertical_when_they_do_not_fit() {
    let short = ["exact", "PRF"];
    let layout = box_labels(&short, &[None, None], 100.0, 120.0);
    assert!(!layout.rotated);
    assert_eq!(layout.labels, ["exact", "PRF"]);
    // Fourteen methods at 600 CSS px: about 37 px per box.
    let names = [
        "positive random features (PRF)",
        "trigonometric RFF",
        "orthogonal PRF",
        "hyperbolic PRF",
        "Nyström",
        "Performer FAVOR+",
        "linear (elu + 1)",
        "cosFormer",
        "random Maclaurin",
        "tensor sketch",
        "quasi-Monte Carlo PRF",
        "learned A",
        "optimal A",
        "softmax (exact)",
    ];
    let notes: Vec<Option<String>> = (0..14)
        .map(|i| (i == 3).then(|| "12 bad rows".to_string()))
        .collect();
    let layout = box_labels(&names, &notes, 37.0, 120.0);
    assert!(layout.rotated);
    assert!(
        layout
            .labels
            .iter()
            .all(|l| l.chars().count() as f64 * CHAR_WIDTH <= 110.0)
    );
    assert_eq!(layout.labels[4], "Nyström");
    assert!(layout.labels[0].ends_with('…'));
    assert_eq!(layout.notes[3].as_deref(), Some("12 bad rows"));
    assert!(layout.height <= 122.0, "{}", layout.height);
}

#[test]
fn legend_goes_right_when_there_is_room_else_in_the_emptiest_corner() {
    let width = legend_width(&["softmax", "positive random features"]);
    assert!(close(width, 32.0 + 24.0 * CHAR_WIDTH));
    assert!(legend_fits_right(800.0, width));
    assert!(!legend_fits_right(400.0, width));
    // Points crowding the top left: the legend goes elsewhere.
    let points: Vec<(f64, f64)> = (0..20).map(|i| (0.01 * f64::from(i), 0.9)).collect();
    assert_eq!(legend_corner(&points, (0.4, 0.3)), Corner::TopRight);
    assert_eq!(legend_corner(&[], (0.4, 0.3)), Corner::TopLeft);
    let everywhere = [(0.1, 0.9), (0.9, 0.9), (0.1, 0.1), (0.9, 0.1), (0.95, 0.05)];
    assert_eq!(legend_corner(&everywhere, (0.3, 0.3)), Corner::TopLeft);
}

#[test]
fn error_bars_are_cut_on_a_log_axis() {
    assert_eq!(error_bar(1.0, 0.5, false), Some((0.5, 1.5)));
    assert_eq!(error_bar(1.0, -0.5, false), Some((0.5, 1.5)));
    let (lo, hi) = error_bar(100.0, 50.0, true).unwrap();
    assert!(close(lo, 50f64.log10()) && close(hi, 150f64.log10()));
    // y − se ≤ 0: the bar stops at y/100.
    let (lo, _) = error_bar(100.0, 200.0, true).unwrap();
    assert!(close(lo, 0.0));
    assert_eq!(error_bar(-1.0, 0.5, true), None);
    assert_eq!(error_bar(1.0, f64::NAN, false), None);
    assert_eq!(error_bar(f64::NAN, 0.1, false), None);
    assert_eq!(error_bar(f64::MAX, f64::MAX, false), None);
}

#[test]
fn heatmap_cells_under_the_pointer_and_token_labels() {
    let layout = HeatmapLayout::new(400.0, 400.0);
    let n = 10;
    let centre = |k: usize| layout.left + (k as f64 + 0.5) * layout.side / n as f64;
    assert_eq!(
        layout.cell_at(centre(3), layout.top + (7.5) * layout.side / 10.0, n),
        Some((7, 3))
    );
    assert_eq!(layout.cell_at(layout.left - 1.0, centre(2), n), None);
    assert_eq!(
        layout.cell_at(layout.left + layout.side, layout.top, n),
        None
    );
    assert_eq!(layout.cell_at(centre(0), layout.top, 0), None);
    let tokens: Vec<String> = ["[CLS]", "transformers", "fox"].map(String::from).to_vec();
    assert_eq!(tick_label(0, &tokens), "[CLS]");
    assert_eq!(tick_label(1, &tokens), "transf…");
    assert_eq!(tick_label(5, &tokens), "5");
    assert_eq!(tick_label(4, &[]), "4");
}
