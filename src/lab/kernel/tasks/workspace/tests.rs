//! The workspace's native tests: the f32 kernel against the f64 path, ω from a longer cached
//! draw, chunked error sums, malformed tasks.

use super::*;
use crate::lab::kernel::tasks::check_kernel_against_f64;
use crate::lab::test_support::{config_with, id};

use crate::lab::kernel::tasks::{Piece, Task, TaskOutput};

#[test]
fn f32_kernel_matches_the_f64_path_far_below_the_monte_carlo_error() {
    // Same data, same ω: the only difference is f32 arithmetic. Lemma 3.1 gives each
    // pair's relative RMSE √MSE/SM; the f32 error must be below 1 % of it (and it is
    // measured near 1e-6 in log, while the relative RMSE is 1e-2 or more at m ≤ 1024).
    let every = crate::numerics::estimators::REGISTRY
        .iter()
        .map(|e| e.id())
        .collect::<Vec<_>>()
        .join(",");
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
    let curve_16 = Task {
        estimator: id("hcexp-var"),
        piece: Piece::Curve { m: 16 },
    };
    let mut warm = Workspace::new();
    let mut longer = Task {
        piece: Piece::Curve { m: 8192 },
        ..curve_16
    };
    warm.run(&config, &longer).unwrap();
    assert_eq!(
        warm.run(&config, &curve_16).unwrap(),
        Workspace::new().run(&config, &curve_16).unwrap()
    );
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
