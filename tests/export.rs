//! The page's CSV and JSON export pinned, byte for byte: `kernel-lab experiment` (the binary,
//! and the library functions it prints with) for two small links must print exactly the files
//! in `tests/export/`. `tests/browser.rs` computes the same links through the page's export
//! path (`ExportRun`, the worker messages, `handle_request`) in WebAssembly and asserts the
//! same files; `tests/e2e/export.test.mjs` clicks the buttons and compares with the binary.
//! Together: the native build, the simd128 WebAssembly build and the page agree to the bit.
//!
//! An intended change of the numbers (a new sampler, a kernel change) regenerates the files
//! with `kernel-lab experiment --query '<query>' [--csv] > tests/export/<name>.<ext>`.

#![cfg(not(target_arch = "wasm32"))]

use std::process::Command;

use softmax_kernel_lab::lab::config::ExperimentConfig;
use softmax_kernel_lab::lab::kernel::experiment::run_experiment;
use softmax_kernel_lab::lab::kernel::export::{experiment_csv, experiment_json};
use softmax_kernel_lab::lab::kernel::tasks::Workspace;
use softmax_kernel_lab::lab::page::ExportRun;
use softmax_kernel_lab::lab::pool::handle_request;

include!("export/pinned.rs");

fn config(query: &str) -> ExperimentConfig {
    let (config, notices) = ExperimentConfig::from_query(query);
    assert!(notices.is_empty(), "{query}: {notices:?}");
    config
}

#[test]
fn the_library_prints_the_pinned_files() {
    for (query, csv, json) in PINNED {
        let result = run_experiment(&config(query)).unwrap();
        assert_eq!(experiment_csv(&result), csv, "?{query}");
        assert_eq!(experiment_json(&result).unwrap(), json, "?{query}");
    }
}

#[test]
fn the_export_path_gives_the_pinned_files() {
    for (query, csv, json) in PINNED {
        let mut run = ExportRun::new(&config(query)).unwrap();
        // One workspace per "worker", as the page splits the tasks between two.
        let mut workspaces = [Workspace::new(), Workspace::new()];
        for index in 0..run.len() {
            let worker = run.worker_for(index, 2);
            let answer = handle_request(&mut workspaces[worker], &run.request(index).unwrap());
            run.answer(&answer).unwrap();
        }
        let result = run.result().expect("every task answered");
        assert_eq!(experiment_csv(&result), csv, "?{query}");
        assert_eq!(experiment_json(&result).unwrap(), json, "?{query}");
    }
}

#[test]
fn the_binary_prints_the_pinned_files() {
    for (query, csv, json) in PINNED {
        for (extra, expected) in [(Some("--csv"), csv), (None, json)] {
            let output = Command::new(env!("CARGO_BIN_EXE_kernel-lab"))
                .args(["experiment", "--query", query])
                .args(extra)
                .output()
                .expect("the kernel-lab binary runs");
            assert!(output.status.success(), "?{query} {extra:?}");
            assert_eq!(
                String::from_utf8(output.stdout).unwrap(),
                expected,
                "?{query} {extra:?}"
            );
        }
    }
}
