//! What the browser tests share (tests/browser.rs, tests/browser_worker.rs).

use softmax_kernel_lab::lab::config::{ExperimentConfig, Param};

/// The default page made small enough to compute in a test: m = 64, 120 points, 6 datasets,
/// 60 pairs.
pub fn small_config() -> ExperimentConfig {
    let mut config = ExperimentConfig::default();
    for (param, value) in [
        (Param::M, "64"),
        (Param::N, "120"),
        (Param::Datasets, "6"),
        (Param::Pairs, "60"),
    ] {
        config.set(param, value).unwrap();
    }
    config
}
