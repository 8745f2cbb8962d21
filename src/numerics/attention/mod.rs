//! The attention level (seeds 001 to 004): whole attention rows and outputs, softmax against
//! every linear approximation, on synthetic data and on real heads of all-MiniLM-L6-v2.
//!
//! - [`method`]: what a method is ([`method::AttentionMethod`]);
//!   [`methods`]: the registry, one file per method (every registry estimator as a feature
//!   map, Taylor, `(1 + x/n)^n`, LLN, `elu + 1`, randomized attention);
//! - [`data`]: the queries, keys and values; [`heads`]: the real heads' asset;
//! - [`exact`]: softmax attention, row entropy, spectral gap, singular values;
//! - [`linear`]: linear attention in O(L·D·dv), never forming P̂;
//! - [`deterministic`], [`lln`], [`randomized`]: the seeds' own maps and estimator;
//! - [`tensorised`]: seed 002's tensorised-attention claim, as a worked example;

pub mod data;
pub mod deterministic;
pub mod dots;
pub mod exact;
pub mod gaussian_head;
pub mod heads;
pub mod hedgehog;
pub mod linear;
pub mod lln;
pub mod long;
pub mod method;
pub mod methods;
pub mod randomized;
pub mod tensorised;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::numerics::estimators::EstimatorId;

pub use data::AttentionData;
pub use methods::MethodId;

/// How a method's output was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Evaluation {
    /// Features, in O(L·D·dv).
    Linear,
    /// A deterministic map beyond the feature budget, evaluated as its kernel pair by pair.
    QuadraticFallback,
    /// Quadratic by construction (randomized attention samples from P's rows).
    Quadratic,
}

impl Evaluation {
    /// How the page and the CSV name it.
    pub fn label(self) -> &'static str {
        match self {
            Evaluation::Linear => "linear",
            Evaluation::QuadraticFallback => "quadratic (over budget)",
            Evaluation::Quadratic => "quadratic",
        }
    }
}

/// Why an attention part could not be computed.
#[derive(Clone, Debug, PartialEq)]
pub enum AttentionError {
    /// The data could not be formed (bad shapes, real heads missing or corrupt).
    Data(String),
    /// One method could not be fitted or drawn.
    Method { method: String, message: String },
}

impl fmt::Display for AttentionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttentionError::Data(message) => write!(f, "attention data: {message}"),
            AttentionError::Method { method, message } => write!(f, "method {method}: {message}"),
        }
    }
}

impl std::error::Error for AttentionError {}

/// Features per projection ω of a registry estimator: 1 (positive), 2 (hyperbolic `±ω`, or the
/// cos and sin of RFA), 4 (a complex A's hyperbolic features, real and imaginary parts).
pub fn features_per_projection(id: EstimatorId) -> usize {
    id.info().features_per_projection()
}
