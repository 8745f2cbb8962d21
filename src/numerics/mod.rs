//! The numerics: datasets, random streams, every estimator of the softmax kernel, the kernel that
//! sums their features, the theory, and the attention level's maps. No notion of a page, a URL, a
//! worker or a job: nothing here imports from [`crate::lab`]. Tested natively with `cargo test`.

pub mod attention;
#[cfg(feature = "text-model")]
pub mod bert;
pub mod dataset;
pub mod estimators;
pub mod heuristics;
pub mod input;
pub mod kernel;
#[cfg(feature = "text-model")]
pub mod llama;
pub mod logspace;
#[cfg(feature = "optimised-a")]
pub mod optimise_a;
pub mod packed_linear;
pub mod portable;
pub mod probe;
pub mod projections;
pub mod rng;
pub mod simd;
pub mod stats;
pub mod stored_float;
pub mod theory;
