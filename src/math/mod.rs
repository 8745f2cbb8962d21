//! Pure numerics: no web dependency, tested natively with `cargo test`.

pub mod attention;
pub mod config;
pub mod data_view;
pub mod dataset;
pub mod estimators;
pub mod experiment;
pub mod heuristics;
pub mod job;
pub mod kernel;
pub mod logspace;
pub mod mathml;
#[cfg(feature = "optimised-a")]
pub mod optimise_a;
pub mod portable;
pub mod presets;
pub mod probe;
pub mod projections;
pub mod results;
pub mod rng;
pub mod scheduler;
pub mod stats;
pub mod tasks;
#[cfg(test)]
mod test_support;
pub mod theory;
