//! The length study: where linear attention pays on this device. For head sizes 32 and 64 and
//! lengths L = 128, 256, … up to the configuration's `lmax`, it times exact softmax attention
//! (tiled, `numerics::attention::long::flash`) and each chosen method's linear attention with
//! the same f32 kernels, bidirectional and causal, median of a few runs, on sequences drawn from
//! the chosen real head's Gaussian (`numerics::attention::gaussian_head`); beside each time it
//! puts the multiply-add model (the count over the rate of the model forward's dense kernel,
//! measured in the same run), the working memory, and the method's error against exact
//! attention at that L. [`crossover`] reads where each method's time meets exact attention's.
//!
//! The page runs it in pieces ([`LengthsUnit`]: one length at one head size, bidirectional or
//! causal) over every worker, shortest length first, and merges the pieces' reports as they
//! arrive ([`LengthsReport::merge_unit`]); the command line runs it whole ([`length_study`]).
//! Both measure the same points the same way.
//!
//! Timing is wall time (`web_time::Instant`: `performance.now()` in a worker), so it is only
//! ever printed and charted, never asserted.

pub mod crossover;
mod csv;
mod measure;
mod merge;
mod report;
mod series;
mod study;
mod unit;

pub use crossover::{Crossover, CrossoverLength, crossovers};
pub use csv::{LENGTHS_CSV_HEADER, form_name, lengths_csv};
pub use measure::{MIN_BATCH_MS, dense_rate};
pub use report::LengthsReport;
pub use series::{
    FIRST_LENGTH, Kernel, LengthPoint, LengthSeries, MAX_LENGTH, POINT_BUDGET_MS, RUNS, Skipped,
    TV_ROWS,
};
pub use study::{length_study, measure_unit, study_features};
pub use unit::{LengthsUnit, SeriesKey, UnitKernels, study_head_sizes, study_lengths, study_units};
