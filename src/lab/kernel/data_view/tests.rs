use super::*;
use crate::lab::test_support::{config_with, id};

fn total(series: &HistogramSeries) -> usize {
    series.counts.iter().sum::<usize>() + series.left_out
}

#[test]
fn moments_and_heuristic_diagonals_are_the_library_s() {
    let config = config_with(&[("n", "300"), ("d", "12"), ("est", "prf-hyp,hcexp-var")]);
    let view = data_view(&config).unwrap();
    let data = generate_dataset(&config, 0).unwrap();
    let moments = data.moments();
    assert_eq!(view.moments, moments);
    for (s, v) in view.std_x.iter().zip(&moments.var_x) {
        assert_eq!(*s, v.sqrt());
    }
    let labels: Vec<&str> = view.diagonals.iter().map(|a| a.label.as_str()).collect();
    assert_eq!(labels, ["identity", "mean-only", "variance-adjusted"]);
    for (diagonal, heuristic) in view.diagonals.iter().zip(AHeuristic::ALL) {
        let expected = diagonal_a(heuristic, &moments);
        assert_eq!(diagonal.a, expected.a);
        assert_eq!(diagonal.clamped, expected.clamped);
    }
}

#[test]
fn a_derf_members_dense_p_is_shown_and_is_its_fit() {
    let config = config_with(&[("n", "200"), ("d", "5"), ("est", "hcexp-var,derf-dense")]);
    let view = data_view(&config).unwrap();
    assert_eq!(view.dense.len(), 1, "only the DERF member has a dense P");
    let shown = &view.dense[0];
    assert_eq!((shown.label.as_str(), shown.d), ("derf-dense", 5));
    let data = generate_dataset(&config, 0).unwrap();
    let moments = data.moments();
    let fit = id("derf-dense")
        .get()
        .fit(
            FitInput {
                data: &data,
                moments: &moments,
            },
            &config.estimator_params(),
        )
        .unwrap();
    assert_eq!(shown.p, fit.dense.unwrap().p);
}

#[test]
fn the_optimised_a_is_shown_when_chosen_and_is_its_fit() {
    let config = config_with(&[("n", "200"), ("d", "6"), ("est", "hcexp-opt")]);
    let view = data_view(&config).unwrap();
    let data = generate_dataset(&config, 0).unwrap();
    let moments = data.moments();
    let fit = id("hcexp-opt")
        .get()
        .fit(
            FitInput {
                data: &data,
                moments: &moments,
            },
            &config.estimator_params(),
        )
        .unwrap();
    assert_eq!(view.diagonals.len(), 4);
    assert_eq!(view.diagonals[3].label, "optimised");
    assert_eq!(view.diagonals[3].a, fit.a);
}

#[test]
fn every_histogram_counts_every_pair() {
    let config = config_with(&[
        ("n", "500"),
        ("d", "20"),
        ("est", "prf-hyp,hcexp-mean,hcexp-var,cplx,oprf"),
    ]);
    let view = data_view(&config).unwrap();
    assert_eq!(view.histogram_pairs, 500);
    for set in [&view.norms, &view.dots, &view.ax, &view.ay, &view.z] {
        assert!(set.edges.len() >= 2 && set.edges.len() <= MAX_BINS + 1);
        assert!(set.edges.windows(2).all(|w| w[0] < w[1]), "{:?}", set.edges);
        for series in &set.series {
            assert_eq!(series.counts.len(), set.edges.len() - 1);
            assert_eq!(total(series), 500, "{}", series.label);
        }
    }
    assert_eq!(view.z.series.len(), 5);
    assert!(view.notes.is_empty(), "{:?}", view.notes);
}

#[test]
fn the_histograms_cap_their_pairs() {
    let config = config_with(&[("n", "6000"), ("d", "2"), ("est", "prf-hyp")]);
    let view = data_view(&config).unwrap();
    assert_eq!(view.n, 6000);
    assert_eq!(view.histogram_pairs, MAX_HISTOGRAM_PAIRS);
    assert_eq!(total(&view.z.series[0]), MAX_HISTOGRAM_PAIRS);
}

#[test]
fn transformed_norms_by_hand() {
    // a = (2, 1/2), x = (1, 3), y = (4, -1): Ax = (2, 3/2), A⁻¹y = (2, -2), z = (4, -1/2).
    let (ax, ay, z) = transformed_norms(&[1.0, 3.0], &[4.0, -1.0], &[2.0, 0.5]);
    assert!((ax - 2.5).abs() < 1e-12);
    assert!((ay - 8f64.sqrt()).abs() < 1e-12);
    assert!((z - 16.25f64.sqrt()).abs() < 1e-12);
    // Through the panel: a one-pair dataset, the identity A (PRF).
    let data = Dataset {
        d: 2,
        n: 2,
        x: vec![1.0, 3.0, 1.0, 3.0],
        y: vec![4.0, -1.0, 4.0, -1.0],
    };
    let view = data_view_of(&data, &[id("prf-hyp")], &EstimatorParams::default());
    assert!((view.ax.series[0].median - 10f64.sqrt()).abs() < 1e-12);
    assert!((view.z.series[0].median - 29f64.sqrt()).abs() < 1e-12);
    assert_eq!(view.ax.rule, BinRule::Single);
    assert_eq!(view.ax.series[0].counts.iter().sum::<usize>(), 2);
}

#[test]
fn one_dimension_works() {
    let config = config_with(&[("n", "100"), ("d", "1")]);
    let view = data_view(&config).unwrap();
    assert_eq!(view.d, 1);
    assert!(view.diagonals.iter().all(|a| a.a.len() == 1));
    for set in [&view.norms, &view.dots, &view.ax, &view.ay, &view.z] {
        for series in &set.series {
            assert_eq!(total(series), 100);
        }
    }
}

#[test]
fn zero_variance_components_give_no_nan_and_no_panic() {
    // Component 1 is constant in queries and keys; component 0 of the keys is 0.
    let data = Dataset {
        d: 2,
        n: 4,
        x: vec![1.0, 2.0, 2.0, 2.0, 3.0, 2.0, 4.0, 2.0],
        y: vec![0.0, 0.5, 0.0, 0.5, 0.0, 0.5, 0.0, 0.5],
    };
    let estimators: Vec<EstimatorId> = EstimatorId::all().collect();
    let view = data_view_of(&data, &estimators, &EstimatorParams::default());
    assert_eq!(view.std_x[1], 0.0);
    assert_eq!(view.std_y, vec![0.0, 0.0]);
    // Moments: μ_x = (2.5, 2), σ²_x = (5/3, 0), μ_y = (0, 0.5), σ²_y = (0, 0).
    // Component 1 (constant): mean-only √(0.5/2) = 1/2, variance-adjusted
    // ((0 + 0.25)/(0 + 4))^¼ = 1/2, and the optimum of (2a + 0.5/a)² is a² = 0.5/2, 1/2
    // again (to the optimiser's 1e-6, as in its one-dimensional test). Component 0 (keys all
    // 0): both heuristics give 0, clamped up to A_MIN, and (a x_0)² is smallest at A_MIN.
    let by_label = |label: &str| {
        view.diagonals
            .iter()
            .find(|a| a.label == label)
            .unwrap_or_else(|| panic!("no {label} diagonal"))
    };
    assert_eq!(by_label("identity").a, vec![1.0, 1.0]);
    assert_eq!(by_label("identity").clamped, 0);
    for (label, tolerance) in [
        ("mean-only", 1e-15),
        ("variance-adjusted", 1e-15),
        ("optimised", 1e-6),
    ] {
        let diagonal = by_label(label);
        assert_eq!(diagonal.a[0], crate::numerics::heuristics::A_MIN, "{label}");
        assert_eq!(diagonal.clamped, 1, "{label}");
        assert!(
            (diagonal.a[1] - 0.5).abs() <= tolerance,
            "{label}: a_1 = {} (expected 1/2)",
            diagonal.a[1]
        );
    }
    // Every x·y is 0·x_0 + 2·0.5 = 1: one bin, 0.1 of the value either side.
    assert_eq!(view.dots.rule, BinRule::Single);
    assert_eq!(view.dots.edges, vec![0.9, 1.1]);
    // Norms: |y| = 0.5 four times, |x| = √5, √8, √13, √20 (span below two decades: linear).
    // Sorted 8 values: q25 = 0.5, q75 = √8 + (√13 − √8)/4, width 2·IQR·8^{-1/3} = IQR,
    // span √20 − 0.5 ≈ 1.57 widths: two Freedman–Diaconis bins, split at the middle.
    let iqr = 8f64.sqrt() + (13f64.sqrt() - 8f64.sqrt()) / 4.0 - 0.5;
    assert!(((20f64.sqrt() - 0.5) / iqr).ceil() == 2.0);
    assert_eq!(view.norms.rule, BinRule::FreedmanDiaconis);
    let want = [0.5, (0.5 + 20f64.sqrt()) / 2.0, 20f64.sqrt()];
    assert_eq!(view.norms.edges.len(), 3, "{:?}", view.norms.edges);
    for (got, want) in view.norms.edges.iter().zip(want) {
        assert!((got - want).abs() <= 1e-15 * want, "{:?}", view.norms.edges);
    }
    // √5 ≈ 2.24 lies below the middle edge ≈ 2.49, the other |x| above it.
    assert_eq!(view.norms.series[0].counts, vec![1, 3]);
    assert_eq!(view.norms.series[1].counts, vec![4, 0]);
    for set in [&view.norms, &view.dots, &view.ax, &view.ay, &view.z] {
        assert!(set.edges.iter().all(|e| e.is_finite()));
        for series in &set.series {
            assert_eq!(total(series), 4, "{}", series.label);
        }
    }
    // All |y| equal: one bin.
    let (edges, _, rule) = bin_edges(&[0.5; 4]);
    assert_eq!(rule, BinRule::Single);
    assert_eq!(count_bins(&[0.5; 4], &edges).0, vec![4]);
}

#[test]
fn bins_go_logarithmic_beyond_two_decades_and_cap_at_forty() {
    let wide: Vec<f64> = (0..1000).map(|i| 10f64.powf(i as f64 / 250.0)).collect();
    let (edges, log, rule) = bin_edges(&wide);
    assert!(log);
    assert_eq!(rule, BinRule::FreedmanDiaconis);
    // Uniform in log10 over 4 decades: IQR 2, width 2 · 2 / 1000^(1/3) = 0.4: 10 bins.
    assert_eq!(edges.len(), 11);
    assert_eq!((edges[0], edges[10]), (1.0, wide[999]));
    let ratio = edges[1] / edges[0];
    assert!((edges[6] / edges[5] - ratio).abs() < 1e-9);
    // 10⁵ values would want 47 bins: capped.
    let many: Vec<f64> = (0..100_000)
        .map(|i| 10f64.powf(f64::from(i) / 25_000.0))
        .collect();
    assert_eq!(bin_edges(&many).0.len(), MAX_BINS + 1);
    let narrow: Vec<f64> = (0..100).map(|i| 1.0 + f64::from(i) / 100.0).collect();
    let (edges, log, _) = bin_edges(&narrow);
    assert!(!log);
    // Uniform on [1, 2): IQR ≈ 0.5, width ≈ 2 · 0.5 / 100^(1/3) ≈ 0.215: 5 bins.
    assert_eq!(edges.len(), 6);
    let (counts, left_out) = count_bins(&[1.0, 1.5, 1.99, f64::NAN, f64::INFINITY], &edges);
    assert_eq!(counts.iter().sum::<usize>(), 3);
    assert_eq!(left_out, 2);
    // Mostly equal values: zero IQR, Sturges.
    let mut spiky = vec![1.0; 99];
    spiky.push(3.0);
    assert_eq!(bin_edges(&spiky).2, BinRule::Sturges);
}
