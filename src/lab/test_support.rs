//! Helpers shared by the unit tests of `src/numerics` and `src/lab` (compiled for tests only).

use crate::lab::config::{ExperimentConfig, Param};
use crate::numerics::estimators::EstimatorId;

/// The default configuration with the given URL keys set (panics on a bad one: a test's typo).
pub fn config_with(pairs: &[(&str, &str)]) -> ExperimentConfig {
    let mut config = ExperimentConfig::default();
    for (key, value) in pairs {
        let param = Param::from_key(key).unwrap_or_else(|| panic!("no parameter {key}"));
        config
            .set(param, value)
            .unwrap_or_else(|e| panic!("{key}={value}: {e}"));
    }
    config
}

/// A small experiment (40 scatter pairs, 2 datasets of 24) with `m` features.
pub fn small(m: &str) -> ExperimentConfig {
    config_with(&[("n", "40"), ("datasets", "2"), ("pairs", "24"), ("m", m)])
}

/// The registry entry with this id.
pub fn id(name: &str) -> EstimatorId {
    EstimatorId::from_id(name).unwrap_or_else(|| panic!("no estimator {name}"))
}
