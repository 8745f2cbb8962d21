//! Native tests of hover hit-testing and tooltips: exact indices on constructed layouts, and
//! the edge cases (empty series, NaN and infinite values, values beyond the axis).

use super::*;

/// A 100 × 100 px plotting area at (50, 20), x from 0 to 10, y from 0 to 10: one unit is 10 px.
fn frame() -> PlotFrame {
    PlotFrame {
        bounds: PixelBounds {
            left: 50.0,
            right: 150.0,
            top: 20.0,
            bottom: 120.0,
        },
        x_range: (0.0, 10.0),
        y_range: (0.0, 10.0),
        log_x: false,
    }
}

fn curves(series: Vec<HoverSeries>) -> CurveLayout {
    CurveLayout {
        frame: frame(),
        x_name: "r",
        x_format: AxisFormat::Tick,
        y_name: "bound",
        y_format: AxisFormat::PowerOfTen,
        series,
    }
}

#[test]
fn a_frame_maps_data_to_pixels_and_refuses_what_is_off_the_plot() {
    let f = frame();
    assert_eq!(f.pixel(0.0, 0.0), Some((50.0, 120.0)));
    assert_eq!(f.pixel(10.0, 10.0), Some((150.0, 20.0)));
    assert_eq!(f.pixel(2.5, 5.0), Some((75.0, 70.0)));
    assert_eq!(f.pixel(11.0, 5.0), None);
    assert_eq!(f.pixel(5.0, 10.5), None);
    assert_eq!(f.pixel(f64::NAN, 5.0), None);
    assert_eq!(f.pixel(5.0, f64::INFINITY), None);
    // On the edge: beyond the y range (±∞ too) on the nearer edge, NaN still nowhere.
    assert_eq!(f.pixel_on_edge(5.0, 1e9), Some((100.0, 20.0)));
    assert_eq!(
        f.pixel_on_edge(5.0, f64::NEG_INFINITY),
        Some((100.0, 120.0))
    );
    assert_eq!(f.pixel_on_edge(5.0, f64::NAN), None);
    assert_eq!(f.pixel_on_edge(-1.0, 5.0), None);
    // A log x axis: 16 … 1600 over 100 px, 100 at the middle; non-positive x is off it.
    let log = PlotFrame {
        x_range: (16.0, 1600.0),
        log_x: true,
        ..f
    };
    let (x, y) = log.pixel(160.0, 0.0).unwrap();
    assert!((x - 100.0).abs() < 1e-9 && y == 120.0, "{x}, {y}");
    assert_eq!(log.pixel(0.0, 0.0), None);
    assert_eq!(log.pixel(-5.0, 0.0), None);
    // A degenerate range maps nothing.
    let flat = PlotFrame {
        y_range: (3.0, 3.0),
        ..f
    };
    assert_eq!(flat.pixel(5.0, 3.0), None);
    assert_eq!(flat.pixel_on_edge(5.0, 3.0), None);
}

#[test]
fn the_nearest_point_of_the_nearest_curve_within_the_radius_is_hit() {
    let layout = curves(vec![
        HoverSeries::new("a", vec![(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)]),
        HoverSeries::new("b", vec![(2.0, 2.3), (4.0, 4.0)]),
    ]);
    // (2, 2) is at (70, 100); (2, 2.3) at (70, 97).
    let hit = layout.hit(70.0, 101.0).unwrap();
    assert_eq!((hit.series, hit.point), (0, 1));
    assert_eq!(hit.at, (70.0, 100.0));
    let hit = layout.hit(70.0, 96.0).unwrap();
    assert_eq!((hit.series, hit.point), (1, 0));
    // (4, 4) at (90, 80): 7 px away is within the radius, 9 px is not.
    assert_eq!(
        layout.hit(97.0, 80.0).map(|h| (h.series, h.point)),
        Some((1, 1))
    );
    assert_eq!(layout.hit(99.0, 80.0), None);
    // A tie goes to the earlier series.
    let tie = curves(vec![
        HoverSeries::new("a", vec![(5.0, 5.0)]),
        HoverSeries::new("b", vec![(5.0, 5.0)]),
    ]);
    assert_eq!(tie.hit(100.0, 70.0).map(|h| h.series), Some(0));
}

#[test]
fn empty_series_and_non_finite_points_are_never_hit() {
    assert_eq!(curves(vec![]).hit(100.0, 70.0), None);
    let layout = curves(vec![
        HoverSeries::new("empty", vec![]),
        HoverSeries::new(
            "odd",
            vec![
                (f64::NAN, 5.0),
                (5.0, f64::NAN),
                (5.0, f64::INFINITY),
                (f64::INFINITY, 5.0),
                (5.0, 5.0),
            ],
        ),
    ]);
    let hit = layout.hit(100.0, 70.0).unwrap();
    assert_eq!((hit.series, hit.point), (1, 4));
    assert_eq!(layout.targets(), vec![(1, (100.0, 70.0))]);
    assert_eq!(layout.position(0, 0), None);
    assert_eq!(layout.position(7, 0), None);
}

#[test]
fn a_value_beyond_the_axis_is_hit_on_the_edge_only_where_an_arrow_marks_it() {
    let layout = curves(vec![
        HoverSeries::new("line", vec![(5.0, 40.0)]),
        HoverSeries::on_edge("arrow", vec![(3.0, 1733.0)]),
    ]);
    // The line's point above the axis is not drawn: nothing at the top edge above x = 5.
    assert_eq!(layout.hit(100.0, 20.0), None);
    // The arrow's tip is at the top edge above x = 3.
    let hit = layout.hit(80.0, 22.0).unwrap();
    assert_eq!((hit.series, hit.at), (1, (80.0, 20.0)));
    assert_eq!(
        layout.tooltip(&hit).unwrap(),
        "arrow · r = 3 · bound = 10¹⁷³³ (above the axis)"
    );
}

#[test]
fn a_curve_tooltip_writes_x_and_y_as_the_axes_do() {
    let mut layout = curves(vec![HoverSeries::new(
        "W(r)/√(2m)",
        vec![(1.25, -3.6), (2.0, 0.5), (0.3333, 4.0)],
    )]);
    layout.frame.y_range = (-5.0, 5.0);
    let text = |point| {
        layout
            .tooltip(&CurveHit {
                series: 0,
                point,
                at: (0.0, 0.0),
            })
            .unwrap()
    };
    assert_eq!(text(0), "W(r)/√(2m) · r = 1.25 · bound = 2.51×10⁻⁴");
    assert_eq!(text(1), "W(r)/√(2m) · r = 2 · bound = 3.162");
    assert_eq!(text(2), "W(r)/√(2m) · r = 0.3333 · bound = 10⁴");
    assert_eq!(
        layout.tooltip(&CurveHit {
            series: 0,
            point: 9,
            at: (0.0, 0.0)
        }),
        None
    );
    assert_eq!(AxisFormat::Whole.format(64.0), "64");
    assert_eq!(AxisFormat::TwoDecimals.format(0.785), "0.79");
    assert_eq!(AxisFormat::Tick.format(f64::NAN), "n/a");
    assert_eq!(power_of_ten_value(f64::NEG_INFINITY), "0");
    assert_eq!(power_of_ten_value(f64::NAN), "n/a");
    // Rounding that carries the mantissa to 10 moves to the next power.
    assert_eq!(power_of_ten_value(-3.0001), "1.00×10⁻³");
    assert_eq!(power_of_ten_value(-3.9999999), "1.00×10⁻⁴");
}

/// Two boxes on x from −0.5 to 1.5 (100 px: 50 px per box) and y (log10) from −4 to 0
/// (100 px: 25 px per decade).
fn boxes(values: [Vec<f64>; 2], theory: [Option<f64>; 2]) -> BoxplotLayout {
    BoxplotLayout {
        frame: PlotFrame {
            x_range: (-0.5, 1.5),
            y_range: (-4.0, 0.0),
            ..frame()
        },
        metric: "MSE",
        boxes: values
            .into_iter()
            .zip(theory)
            .enumerate()
            .map(|(i, (values, theory))| BoxHover {
                label: format!("box {i}"),
                values,
                log_median: None,
                theory,
            })
            .collect(),
    }
}

#[test]
fn box_dots_spread_over_the_box_in_dataset_order_without_the_non_finite() {
    let dots = box_dots(&[-1.0, f64::NEG_INFINITY, -2.0, f64::NAN, -3.0]);
    let datasets: Vec<usize> = dots.iter().map(|d| d.0).collect();
    assert_eq!(datasets, vec![0, 2, 4]);
    let width = BOX_HALF_WIDTH * 0.8;
    assert!((dots[0].1 + width / 3.0).abs() < 1e-12);
    assert!(dots[1].1.abs() < 1e-12);
    assert!((dots[2].1 - width / 3.0).abs() < 1e-12);
    assert!(box_dots(&[]).is_empty());
    assert!(box_dots(&[f64::NAN]).is_empty());
}

#[test]
fn hovering_a_dot_names_its_dataset_and_value() {
    // Box 1 is centred at x = 125 px; its three dots at offsets −0.0747, 0, 0.0747 (±3.7 px).
    let layout = boxes(
        [vec![-2.0, -2.0, -2.0], vec![-1.0, f64::NAN, -2.0, -3.0]],
        [None, None],
    );
    // Dataset 3 (index 3) of box 1: the last finite value, at log10 −3 → y = 45 px from the
    // top... y = 120 − (−3 + 4) · 25 = 95.
    let (_, off, _) = box_dots(&layout.boxes[1].values)[2];
    let x = 125.0 + off * 50.0;
    let hit = layout.hit(x, 95.0).unwrap();
    assert_eq!(
        hit,
        BoxHit::Dataset {
            index: 1,
            dataset: 3
        }
    );
    assert_eq!(
        layout.tooltip(hit).unwrap(),
        "box 1: dataset 4 of 4 · MSE 1.0000e-3"
    );
    // Dataset 0 of box 1 at −1 → y = 45.
    assert_eq!(
        layout.hit(125.0 - 3.7, 45.0),
        Some(BoxHit::Dataset {
            index: 1,
            dataset: 0
        })
    );
    // The NaN dataset has no dot, and a pointer in empty space hits nothing.
    assert_eq!(layout.hit(140.0, 25.0), None);
}

#[test]
fn hovering_a_box_gives_its_median_quartiles_and_whiskers() {
    // Ten values from −3.0 to −2.1 in box 0, and one outlier at −0.2.
    let mut values: Vec<f64> = (0..10).map(|i| -3.0 + 0.1 * i as f64).collect();
    values.push(-0.2);
    let layout = boxes([values, vec![]], [None, None]);
    let s = layout.summary(0).unwrap();
    assert_eq!(s.outliers, vec![-0.2]);
    // Inside the box, left of the dots, at the median: box 0 (centre x = 75 px).
    let (x, y) = layout.frame.pixel(-0.2, s.median).unwrap();
    let hit = layout.hit(x, y).unwrap();
    assert_eq!(hit, BoxHit::Box { index: 0 });
    let text = layout.tooltip(hit).unwrap();
    assert!(
        text.starts_with("box 0: median MSE 3.1623e-3 · quartiles "),
        "{text}"
    );
    assert!(text.ends_with(" · 1 outlier · 11 of 11 datasets"), "{text}");
    // Above the upper whisker but below the outlier, in the box's column: nothing.
    let (_, above) = layout.frame.pixel(0.0, -1.2).unwrap();
    assert_eq!(layout.hit(x, above), None);
    // The outlier circle at the centre of the box names the dataset.
    let (cx, cy) = layout.frame.pixel(0.0, -0.2).unwrap();
    let hit = layout.hit(cx, cy).unwrap();
    assert_eq!(
        hit,
        BoxHit::Dataset {
            index: 0,
            dataset: 10
        }
    );
    assert!(layout.tooltip(hit).unwrap().ends_with("(outlier)"));
    // The empty box has nothing to hover.
    assert_eq!(layout.summary(1), None);
    assert_eq!(layout.hit(125.0, 70.0), None);
    assert_eq!(layout.tooltip(BoxHit::Box { index: 1 }), None);
    // The table's median (the mean of the two middle values) replaces the box's.
    let mut with_table = layout.clone();
    with_table.boxes[0].log_median = Some((2.5e-3f64).ln());
    let text = with_table.tooltip(BoxHit::Box { index: 0 }).unwrap();
    assert!(text.starts_with("box 0: median MSE 2.5000e-3 · "), "{text}");
}

#[test]
fn a_box_with_non_finite_values_counts_what_it_left_out() {
    let layout = boxes(
        [vec![-2.0, f64::NEG_INFINITY, -2.5, f64::NAN], vec![]],
        [None, None],
    );
    let text = layout.tooltip(BoxHit::Box { index: 0 }).unwrap();
    assert!(
        text.ends_with("2 of 4 datasets (the others are 0 or not finite)"),
        "{text}"
    );
}

#[test]
fn the_theory_marker_is_hit_as_a_diamond_or_as_an_arrow_on_the_edge() {
    let layout = boxes(
        [vec![-2.0, -2.5], vec![-1.0, -1.5]],
        [Some(-3.0), Some(12.0)],
    );
    // Box 0's diamond at x = 0 + 0.34 → 75 + 17 = 92 px, y = 120 − 25 = 95 px.
    let hit = layout.hit(92.0, 96.0).unwrap();
    assert_eq!(hit, BoxHit::Theory { index: 0 });
    assert_eq!(
        layout.tooltip(hit).unwrap(),
        "box 0: MSE formula (Lemma 3.1 for HCEXP), median of the datasets' expected MSE 1.0000e-3"
    );
    // Box 1's value 10¹² is above the axis: an arrow at the top edge (y = 20 px).
    assert_eq!(layout.theory_position(1), Some((142.0, 20.0)));
    let hit = layout.hit(142.0, 23.0).unwrap();
    assert_eq!(hit, BoxHit::Theory { index: 1 });
    assert!(
        layout
            .tooltip(hit)
            .unwrap()
            .ends_with("1.0000e12 (above the axis)")
    );
    // A NaN theory has no marker.
    let none = boxes([vec![-2.0], vec![]], [Some(f64::NAN), None]);
    assert_eq!(none.theory_position(0), None);
}

#[test]
fn targets_point_at_what_hover_finds() {
    let layout = boxes(
        [vec![-3.0, -2.5, -2.0, -1.5, -1.0], vec![f64::NAN]],
        [None, None],
    );
    let hover = HoverLayout::Boxes(layout.clone());
    let targets = layout.targets();
    assert_eq!(targets.len(), 2);
    let BoxTarget { inside, dot, .. } = targets[0];
    let (x, y) = inside.unwrap();
    assert_eq!(layout.hit(x, y), Some(BoxHit::Box { index: 0 }));
    let (dataset, (x, y)) = dot.unwrap();
    assert_eq!(dataset, 0);
    assert_eq!(
        layout.hit(x, y),
        Some(BoxHit::Dataset {
            index: 0,
            dataset: 0
        })
    );
    assert_eq!(
        targets[1],
        BoxTarget {
            index: 1,
            inside: None,
            dot: None
        }
    );
    let json = hover.targets_json();
    assert!(
        json.starts_with(r#"[{"kind":"box","box":"box 0","x":"#),
        "{json}"
    );
    assert!(
        json.contains(r#"{"kind":"dataset","box":"box 0","dataset":1,"#),
        "{json}"
    );
    let text = hover.tooltip_at(x, y).unwrap();
    assert_eq!(text, "box 0: dataset 1 of 5 · MSE 1.0000e-3");
    let curves = HoverLayout::Curves(curves(vec![HoverSeries::new(
        "say \"hi\"",
        vec![(5.0, 5.0)],
    )]));
    assert_eq!(
        curves.targets_json(),
        r#"[{"kind":"point","series":"say \"hi\"","x":100,"y":70}]"#
    );
}

#[test]
fn hover_marks_the_point_it_is_about_and_not_a_whole_box() {
    // A curve's point: marked where it is drawn, however close the pointer is.
    let line = HoverLayout::Curves(curves(vec![HoverSeries::new("a", vec![(5.0, 5.0)])]));
    let hovered = line.hover_at(103.0, 68.0).unwrap();
    assert_eq!(hovered.marker, Some((100.0, 70.0)));
    assert_eq!(Some(hovered.text), line.tooltip_at(103.0, 68.0));
    assert_eq!(line.hover_at(150.0, 20.0), None);
    // A dataset's dot: marked at the dot, also when the pointer is a few pixels off; a whole
    // box has no mark.
    let layout = boxes(
        [vec![-3.0, -2.5, -2.0, -1.5, -1.0], vec![-2.0]],
        [None, Some(-1.0)],
    );
    let (dataset, (x, y)) = layout.targets()[0].dot.unwrap();
    let hit = layout.hit(x + 1.0, y - 1.0).unwrap();
    assert_eq!(hit, BoxHit::Dataset { index: 0, dataset });
    assert_eq!(layout.marker(hit), Some((x, y)));
    let (x, y) = layout.targets()[0].inside.unwrap();
    let hovered = HoverLayout::Boxes(layout.clone()).hover_at(x, y).unwrap();
    assert_eq!(hovered.marker, None);
    // The theory marker: marked where it is drawn.
    let at = layout.theory_position(1).unwrap();
    assert_eq!(layout.hit(at.0, at.1), Some(BoxHit::Theory { index: 1 }));
    assert_eq!(layout.marker(BoxHit::Theory { index: 1 }), Some(at));
}
