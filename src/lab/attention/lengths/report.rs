//! Everything the length part shows, with each method's crossover.

use serde::{Deserialize, Serialize};

use super::crossover::Crossover;
use super::series::{Kernel, LengthSeries, Skipped};

/// Everything the length part shows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LengthsReport {
    /// The real head whose statistics the sequences follow.
    pub layer: usize,
    pub head: usize,
    pub lengths: Vec<usize>,
    pub head_sizes: Vec<usize>,
    /// The projections m measured (a quarter of the chosen m, and m).
    pub features: Vec<usize>,
    /// Multiply-adds per second of the model forward's dense kernel (a 128 × 384 → 1536 layer,
    /// MiniLM's feed-forward), the fastest of seven runs, measured in this run.
    pub dense_rate: f64,
    /// The best multiply-adds per second of exact attention over the measured lengths.
    pub exact_rate: f64,
    pub budget_ms: f64,
    pub series: Vec<LengthSeries>,
    pub crossovers: Vec<Crossover>,
    pub skipped: Vec<Skipped>,
}

impl LengthsReport {
    /// A method series' crossover (`None` for exact attention).
    pub fn crossover_of(&self, series: &LengthSeries) -> Option<&Crossover> {
        let Kernel::Method { method, m, .. } = series.kernel else {
            return None;
        };
        self.crossovers
            .iter()
            .find(|c| c.d == series.d && c.method == method && c.m == m && c.form == series.form)
    }
}
