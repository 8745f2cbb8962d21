//! Pure numerics: no web dependency, tested natively with `cargo test`.

pub mod config;
pub mod dataset;
pub mod estimators;
pub mod experiment;
pub mod heuristics;
pub mod kernel;
pub mod probe;
pub mod rng;
pub mod stats;
pub mod tasks;
pub mod theory;
