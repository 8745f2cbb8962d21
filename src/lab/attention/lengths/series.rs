//! What the length study measures: its lengths' limits, what is timed ([`Kernel`]) and one
//! series of points.

use serde::{Deserialize, Serialize};

use crate::numerics::attention::long::LinearForm;
use crate::numerics::attention::methods::MethodId;

/// The shortest length measured.
pub const FIRST_LENGTH: usize = 128;
/// The longest length a configuration may ask for.
pub const MAX_LENGTH: usize = 16_384;
/// Timed batches per point (the median is reported), each of runs repeated for at least
/// [`MIN_BATCH_MS`]; a point whose first run exceeds half the budget is run once.
pub const RUNS: usize = 3;
/// A series stops growing once one run takes longer than this (the page's time budget).
pub const POINT_BUDGET_MS: f64 = 2_500.0;
/// Rows whose total variation against the exact row is measured at each length.
pub const TV_ROWS: usize = 8;
/// What is timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kernel {
    /// Exact softmax attention, tiled.
    Exact,
    /// A method's linear attention with `m` projections (`features` per token); m is 0 for a
    /// deterministic map, which has no projections (one series, whatever the m studied).
    Method {
        method: MethodId,
        m: usize,
        features: usize,
    },
}

/// One length of one series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LengthPoint {
    pub len: usize,
    /// Median wall time of the runs, in milliseconds.
    pub ms: f64,
    pub runs_ms: Vec<f64>,
    /// Multiply-adds of one run, and the time they take at the dense kernel's rate.
    pub multiply_adds: f64,
    pub model_ms: f64,
    /// Working memory beyond the inputs and the output, bytes.
    pub memory_bytes: f64,
    /// `‖Ô − O‖_F / ‖O‖_F` over the usable rows against exact attention of the same form
    /// (`None` for exact attention itself).
    pub output_error: Option<f64>,
    /// Mean total variation of [`TV_ROWS`] rows of P̂ against P (bidirectional only).
    pub row_tv: Option<f64>,
    /// Rows with an unusable denominator.
    pub bad_rows: usize,
}

/// One kernel in one form at one head size, along L.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LengthSeries {
    pub d: usize,
    pub kernel: Kernel,
    /// Exact attention: `Bidirectional` or `CausalChunked` (the causal tiles).
    pub form: LinearForm,
    pub points: Vec<LengthPoint>,
    /// The first length not measured because a run exceeded the budget.
    pub stopped_at: Option<usize>,
}

/// A chosen method the study does not time, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    pub method: MethodId,
    pub reason: String,
}
