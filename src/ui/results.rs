//! The charts, the results table and the formulas beside them.
//!
//! The files: this one (the numbers' text), `charts` (the figures and their effects), `draw`
//! (drawing each part into its canvases), `hover` (tooltips and hover layouts), `table` (the
//! leaderboard) and `formulas` (what is computed).

mod charts;
mod draw;
mod formulas;
mod hover;
mod table;

use crate::numerics::stats::format_from_log;

pub use charts::Charts;
pub use formulas::Formulas;
pub use table::ResultsTable;

/// Text of a number given as its natural log, for the table: scientific notation that
/// `parseFloat` reads back, with the exponent beyond f64's range when needed.
fn number_text(ln_value: f64) -> String {
    format_from_log(ln_value, 4)
}
