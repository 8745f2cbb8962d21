//! Native tests of the data panel's chart geometry.

use super::*;
use crate::lab::kernel::data_view::{HistogramSeries, data_view_of, histogram_set};
use crate::numerics::dataset::Dataset;
use crate::numerics::estimators::{EstimatorId, EstimatorParams};

fn view(d: usize, x: Vec<f64>, y: Vec<f64>) -> DataView {
    let n = x.len() / d;
    let estimators: Vec<EstimatorId> = ["prf-hyp", "hcexp-var"]
        .iter()
        .filter_map(|id| EstimatorId::from_id(id))
        .collect();
    data_view_of(
        &Dataset { d, n, x, y },
        &estimators,
        &EstimatorParams::default(),
    )
}

#[test]
fn component_series_put_every_component_at_its_index() {
    let v = view(
        3,
        vec![1.0, -2.0, 0.5, 3.0, -2.0, 0.5],
        vec![0.1, 0.2, 0.0, 0.3, 0.2, 0.0],
    );
    let series = component_series(&v);
    let labels: Vec<&str> = series.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "|μ_x|",
            "σ_x",
            "|μ_y|",
            "σ_y",
            "a, identity",
            "a, mean-only",
            "a, variance-adjusted"
        ]
    );
    assert_eq!(series[0].points, vec![(0.0, 2.0), (1.0, 2.0), (2.0, 0.5)]);
    assert!(series[0].markers && !series[0].line);
    assert!(series[1].dashed && series[1].line);
    // σ_x of components 1 and 2, |μ_y| and σ_y of component 2 (and σ_y of 1) are 0.
    assert_eq!(off_log_axis(&series), 5);
    assert!(a_ranges(&v).starts_with("identity 1 to 1; mean-only"));
    assert!(component_label(&v).contains("d = 3"));
}

#[test]
fn one_component_draws_the_a_as_markers() {
    let v = view(1, vec![1.0, 2.0], vec![0.5, 0.25]);
    let series = component_series(&v);
    assert!(series[4..].iter().all(|s| s.markers && s.points.len() == 1));
}

#[test]
fn histogram_plan_bars_follow_the_edges_and_leave_out_empty_bins() {
    let set = histogram_set(vec![
        ("a".into(), [1, 2, 3], vec![1.0, 1.1, 1.2, 1.9, 2.0]),
        ("b".into(), [4, 5, 6], vec![2.0, 2.0]),
    ]);
    let plan = HistogramPlan::new(&set).unwrap();
    assert!(!plan.x.log);
    assert_eq!((plan.x.lo, plan.x.hi), (1.0, 2.0));
    let counted: usize = plan.bars[0].iter().map(|b| b.2).sum();
    assert_eq!(counted, 5);
    assert_eq!(plan.bars[1].len(), 1, "b fills one bin: the last");
    assert_eq!(plan.bars[1][0].1, 2.0);
    let most = set
        .series
        .iter()
        .flat_map(|s| s.counts.iter())
        .max()
        .copied()
        .unwrap();
    assert!(plan.y.hi > most as f64 && plan.y.lo == 0.0);
    assert_eq!(plan.legend[1].0, [4, 5, 6]);
    assert!(plan.legend[0].1.starts_with("a  median 1.2"));
}

#[test]
fn log_bins_become_a_log_axis() {
    let values: Vec<f64> = (0..200).map(|i| 10f64.powf(f64::from(i) / 50.0)).collect();
    let set = histogram_set(vec![("v".into(), [0, 0, 0], values)]);
    assert!(set.log_bins);
    let plan = HistogramPlan::new(&set).unwrap();
    assert!(plan.x.log);
    assert!((plan.x.lo - 0.0).abs() < 1e-12 && (plan.x.hi - 199.0 / 50.0).abs() < 1e-12);
    assert!(bin_caption(&set).contains("log-spaced"));
}

#[test]
fn degenerate_sets_have_a_plan_or_none_but_never_panic() {
    let empty = HistogramSet {
        edges: vec![0.0, 1.0],
        log_bins: false,
        rule: BinRule::Single,
        series: Vec::new(),
    };
    assert!(HistogramPlan::new(&empty).is_none());
    let constant = histogram_set(vec![("c".into(), [0, 0, 0], vec![3.0; 10])]);
    let plan = HistogramPlan::new(&constant).unwrap();
    assert_eq!(
        plan.bars[0],
        vec![(constant.edges[0], constant.edges[1], 10)]
    );
    assert_eq!(bin_caption(&constant), "one bin: every value is the same");
    let nothing = histogram_set(vec![("n".into(), [0, 0, 0], vec![f64::NAN])]);
    let plan = HistogramPlan::new(&nothing).unwrap();
    assert!(plan.bars[0].is_empty());
    assert_eq!(plan.y.hi, 1.15);
    let series = HistogramSeries {
        label: "z".into(),
        colour: [0, 0, 0],
        counts: vec![1],
        left_out: 0,
        median: 2.5,
    };
    let set = HistogramSet {
        series: vec![series],
        ..empty
    };
    assert_eq!(
        histogram_label("|z|", &set),
        "histogram of |z|, median: z 2.5"
    );
}

#[test]
fn the_legend_gets_room_above_the_bars() {
    let set = histogram_set(vec![
        ("a".into(), [1, 2, 3], vec![1.0, 1.1, 1.2, 1.9, 2.0]),
        ("b".into(), [4, 5, 6], vec![2.0, 2.0]),
    ]);
    let plan = HistogramPlan::new(&set).unwrap();
    let most = plan.y.hi / 1.15;
    // Legend 2 · 15 + 24 = 54 px of a 270 px plot: the bars stay below 80 % of the axis.
    let roomy = plan.clone().with_legend_room(270.0);
    assert!((most / roomy.y.hi - 0.8).abs() < 1e-12);
    // A tall plot keeps the 15 % headroom; a tiny one gives the legend at most 60 %.
    assert_eq!(plan.clone().with_legend_room(1e6).y.hi, plan.y.hi);
    assert!((most / plan.with_legend_room(10.0).y.hi - 0.4).abs() < 1e-12);
}
