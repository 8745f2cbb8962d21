//! Browser tests of the computations whose code differs between the page's build (`simd128`)
//! and the workers' (`+relaxed-simd`, whose interactive kernel fuses multiply-adds): the test
//! command runs this file in both builds and both browsers. It needs no UI (no feature `page`),
//! so the workers' build of it shares every dependency with `full-worker`'s.
#![cfg(target_arch = "wasm32")]

use softmax_kernel_lab::lab::config::{ExperimentConfig, Param};
use softmax_kernel_lab::lab::kernel::tasks::Workspace;
use softmax_kernel_lab::lab::pool::handle_request;
use softmax_kernel_lab::numerics::estimators::REGISTRY;
use wasm_bindgen_test::*;

mod support;

use support::small_config;

wasm_bindgen_test_configure!(run_in_browser);

/// The f32 kernel as WebAssembly runs it (as the page is built, and with `+relaxed-simd` as
/// the workers are) against the f64 reference on the same data and ω: the difference must stay
/// far below the Monte Carlo error, which Lemma 3.1 gives per pair as the relative RMSE
/// √MSE/SM.
#[wasm_bindgen_test]
fn kernel_in_webassembly_matches_the_f64_path_far_below_the_monte_carlo_error() {
    use softmax_kernel_lab::lab::kernel::tasks::check_kernel_against_f64;

    let mut config = small_config();
    let every: Vec<&str> = REGISTRY.iter().map(|e| e.id()).collect();
    config.set(Param::Estimators, &every.join(",")).unwrap();
    let checks = check_kernel_against_f64(&config, 40).unwrap();
    assert_eq!(checks.len(), REGISTRY.len() * 40);
    let mut worst = 0.0f64;
    for check in checks {
        worst = worst.max(check.difference());
        assert!(check.is_far_below_the_monte_carlo_error(), "{check:?}");
    }
    web_sys::console::log_1(&format!("largest |ΔŜM|/SM between f32 and f64: {worst:e}").into());
}

/// The MSE-against-m curve from one projection (the hyperbolic sums running on from one m to
/// the next, rescaled between shifts) against one m at a time, bit for bit, for the page's
/// hyperbolic estimators (the sums this build's simd128 code runs; the native test covers
/// every estimator): at the default data, and at queries long enough that the larger m's
/// shifts pass the running sums' limit. `fused`: the page's kernel, else the export's.
fn curve_from_one_projection_is_the_curve_one_m_at_a_time(fused: bool) {
    use softmax_kernel_lab::lab::config::{CURVE_MS, DEFAULT_ESTIMATORS};
    use softmax_kernel_lab::lab::kernel::results::CurvePoint;
    let bits = |p: &CurvePoint| {
        [
            p.log_measured_mse.to_bits(),
            p.log_standard_error.to_bits(),
            p.log_theoretical_mse.to_bits(),
        ]
    };
    for x_norm in ["5", "12"] {
        let mut config = small_config();
        config
            .set(Param::Estimators, &DEFAULT_ESTIMATORS.join(","))
            .unwrap();
        config.set(Param::XNorm, x_norm).unwrap();
        for &estimator in &config.estimators {
            let mut workspace = Workspace::new();
            workspace.set_fused(fused);
            let all = workspace
                .curve_points(&config, estimator, &CURVE_MS)
                .unwrap();
            for (point, &m) in all.iter().zip(&CURVE_MS) {
                let mut alone = Workspace::new();
                alone.set_fused(fused);
                let alone = alone.curve_points(&config, estimator, &[m]).unwrap();
                assert_eq!(
                    bits(&alone[0]),
                    bits(point),
                    "{estimator:?} at m = {m}, xnorm {x_norm}, fused {fused}"
                );
            }
        }
    }
}

#[wasm_bindgen_test]
fn the_curve_from_one_projection_is_the_curve_one_m_at_a_time_in_the_pages_kernel() {
    curve_from_one_projection_is_the_curve_one_m_at_a_time(true);
}

#[wasm_bindgen_test]
fn the_curve_from_one_projection_is_the_curve_one_m_at_a_time_in_the_exports_kernel() {
    curve_from_one_projection_is_the_curve_one_m_at_a_time(false);
}

include!("export/pinned.rs");

/// The page's export path (the tasks of `ExportRun` as worker messages, answered by
/// `handle_request`, assembled, and printed by `lab::experiment_export`, which `kernel-lab
/// experiment` prints with too) in this WebAssembly build gives the files `kernel-lab experiment` prints natively (tests/export.rs
/// pins them), byte for byte, in both builds: the export's tasks ask for unfused arithmetic,
/// so the worker-like build (`+relaxed-simd`), whose interactive kernel fuses multiply-adds,
/// runs the portable kernel for them, as the page's pool does.
#[wasm_bindgen_test]
fn export_path_prints_what_the_command_line_prints() {
    use softmax_kernel_lab::lab::kernel::export::{experiment_csv, experiment_json};
    use softmax_kernel_lab::lab::page::ExportRun;
    for (query, csv, json) in PINNED {
        let (config, notices) = ExperimentConfig::from_query(query);
        assert!(notices.is_empty(), "{query}: {notices:?}");
        let mut run = ExportRun::new(&config).unwrap();
        let mut workspaces = [Workspace::new(), Workspace::new()];
        // A workspace that ran the page's fused tasks before must not leak that into these.
        workspaces[0].set_fused(true);
        for index in 0..run.len() {
            let worker = run.worker_for(index, 2);
            let answer = handle_request(&mut workspaces[worker], &run.request(index).unwrap());
            run.answer(&answer).unwrap();
        }
        let result = run.result().expect("every task answered");
        let (got_csv, got_json) = (experiment_csv(&result), experiment_json(&result).unwrap());
        assert_eq!(got_csv, csv, "?{query}");
        assert_eq!(got_json, json, "?{query}");
    }
}
