//! The workspace's native tests: the f32 kernel against the f64 path, ω from a longer cached
//! draw, chunked error sums, malformed tasks.

use super::*;
use crate::lab::kernel::tasks::check_kernel_against_f64;
use crate::lab::test_support::{config_with, id};

use crate::lab::kernel::tasks::{Piece, Task, TaskOutput};

/// Every registered estimator's id, as the `est` parameter lists them.
fn every_estimator() -> String {
    crate::numerics::estimators::REGISTRY
        .iter()
        .map(|e| e.id())
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
fn f32_kernel_matches_the_f64_path_far_below_the_monte_carlo_error() {
    // Same data, same ω: the only difference is f32 arithmetic. Lemma 3.1 gives each
    // pair's relative RMSE √MSE/SM; the f32 error must be below 1 % of it (and it is
    // measured near 1e-6 in log, while the relative RMSE is 1e-2 or more at m ≤ 1024).
    let every = every_estimator();
    for orf in ["0", "1"] {
        let config = config_with(&[("n", "64"), ("m", "256"), ("est", &every), ("orf", orf)]);
        let checks = check_kernel_against_f64(&config, 64).unwrap();
        assert_eq!(checks.len(), config.estimators.len() * 64);
        for check in checks {
            assert!(
                check.is_far_below_the_monte_carlo_error(),
                "orf={orf}: {check:?}"
            );
        }
    }
}

#[test]
fn omega_from_a_longer_cached_draw_equals_a_fresh_draw() {
    // A worker that computed m = 8192 (or an earlier, larger m) reuses its leading rows;
    // the outputs must be bit for bit those of a worker that drew only what it needed.
    let config = config_with(&[("n", "40"), ("pairs", "20"), ("datasets", "1")]);
    let hcexp_var = id("hcexp-var");
    let mut warm = Workspace::new();
    warm.curve_points(&config, hcexp_var, &[8192]).unwrap();
    assert_eq!(
        warm.curve_points(&config, hcexp_var, &[16]).unwrap(),
        Workspace::new()
            .curve_points(&config, hcexp_var, &[16])
            .unwrap()
    );
    let mut longer = Task {
        estimator: hcexp_var,
        piece: Piece::Curve,
    };
    warm.run(&config, &longer).unwrap();
    let boxplot = Task {
        estimator: id("hcexp-mean"),
        piece: Piece::BoxplotPairs {
            index: 1,
            start: 0,
            end: 20,
        },
    };
    let m_512 = ExperimentConfig {
        m: 512,
        ..config.clone()
    };
    longer.piece = boxplot.piece;
    warm.run(
        &ExperimentConfig {
            m: 1000,
            ..config.clone()
        },
        &longer,
    )
    .unwrap();
    assert_eq!(
        warm.run(&m_512, &boxplot).unwrap(),
        Workspace::new().run(&m_512, &boxplot).unwrap()
    );
}

#[test]
fn the_curve_from_one_projection_is_the_curve_one_m_at_a_time() {
    // Every m's point from the prefixes of one projection on the largest m must be the
    // point a fresh workspace computes at that m alone (its own draw of m rows), bit for
    // bit: for every registered estimator (the simd128 sums and the f64 ones) and coupling.
    let every = every_estimator();
    let bits = |points: &[CurvePoint]| -> Vec<[u64; 4]> {
        points
            .iter()
            .map(|p| {
                [
                    p.m as u64,
                    p.log_measured_mse.to_bits(),
                    p.log_standard_error.to_bits(),
                    p.log_theoretical_mse.to_bits(),
                ]
            })
            .collect()
    };
    for coupling in ["iid", "orthogonal"] {
        let config = config_with(&[("n", "40"), ("est", &every), ("coupling", coupling)]);
        for &estimator in &config.estimators {
            let all = Workspace::new()
                .curve_points(&config, estimator, &CURVE_MS)
                .unwrap();
            assert_eq!(all.len(), CURVE_MS.len());
            for (point, &m) in all.iter().zip(&CURVE_MS) {
                let alone = Workspace::new()
                    .curve_points(&config, estimator, &[m])
                    .unwrap();
                assert_eq!(
                    bits(&alone),
                    bits(std::slice::from_ref(point)),
                    "{estimator:?} at m = {m}, {coupling}"
                );
            }
        }
    }
}

#[test]
fn chunked_error_sums_equal_the_whole_dataset_metrics() {
    let config = config_with(&[("pairs", "50"), ("datasets", "1"), ("m", "64")]);
    let mut workspace = Workspace::new();
    let run = |workspace: &mut Workspace, start, end| match workspace.run(
        &config,
        &Task {
            estimator: id("hcexp-var"),
            piece: Piece::BoxplotPairs {
                index: 1,
                start,
                end,
            },
        },
    ) {
        Ok(TaskOutput::BoxplotPairs(sums)) => sums,
        other => panic!("{other:?}"),
    };
    let whole = run(&mut workspace, 0, 50).metrics();
    let parts = run(&mut workspace, 0, 17)
        .merge(run(&mut workspace, 17, 40))
        .merge(run(&mut workspace, 40, 50))
        .metrics();
    for (a, b) in [
        (whole.log_mse, parts.log_mse),
        (whole.log_max_rel_err, parts.log_max_rel_err),
        (whole.log_theoretical_mse, parts.log_theoretical_mse),
    ] {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
}

#[test]
fn malformed_tasks_are_errors() {
    let config = config_with(&[("n", "20"), ("datasets", "2"), ("pairs", "20")]);
    let mut workspace = Workspace::new();
    for piece in [
        Piece::ScatterPairs { start: 10, end: 30 },
        Piece::ScatterPairs { start: 5, end: 5 },
        Piece::BoxplotPairs {
            index: 3,
            start: 0,
            end: 4,
        },
        Piece::BoxplotPairs {
            index: 0,
            start: 0,
            end: 4,
        },
    ] {
        let task = Task {
            estimator: id("prf-hyp"),
            piece,
        };
        assert!(workspace.run(&config, &task).is_err(), "{piece:?}");
    }
}
