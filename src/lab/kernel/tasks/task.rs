//! What a task is: one heuristic on one piece of the experiment ([`Task`], [`Piece`]), the part
//! of the page it feeds ([`Part`]) and what it returns ([`TaskOutput`], [`ErrorSums`]).

use crate::lab::kernel::results::{CurvePoint, DatasetMetrics};
use crate::numerics::estimators::{EstimatorId, Fit, ParameterSweep};
use crate::numerics::logspace::{SignedLog, log_add};
use crate::numerics::portable::Libm;
use crate::numerics::theory::Theorem33Inputs;
use serde::{Deserialize, Serialize};

/// The three parts of the page, delivered in this order as their tasks finish.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// Figure 1 and the bounds drawn from it.
    Scatter,
    /// Figures 2 and 3 and the table.
    Boxplots,
    /// The MSE-against-m chart.
    Curves,
}

impl Piece {
    /// The part of the page this piece belongs to.
    pub fn part(self) -> Part {
        match self {
            Piece::ScatterSetup | Piece::ScatterPairs { .. } => Part::Scatter,
            Piece::BoxplotPairs { .. } => Part::Boxplots,
            Piece::Curve => Part::Curves,
        }
    }

    /// The dataset the piece reads: 0 (the scatter dataset) or a boxplot dataset's index.
    pub(super) fn dataset(self) -> usize {
        match self {
            Piece::BoxplotPairs { index, .. } => index,
            _ => 0,
        }
    }

    /// Which worker (of `workers`) should run this piece because it probably holds the
    /// inputs already: boxplot dataset i goes to worker i mod the pool, the whole curve to
    /// the last worker (its ω are drawn once, for every m and heuristic). `None`: any worker
    /// (the scatter, so that every worker helps with what is shown first).
    pub fn affinity(self, workers: usize) -> Option<usize> {
        let workers = workers.max(1);
        match self {
            Piece::ScatterSetup | Piece::ScatterPairs { .. } => None,
            Piece::BoxplotPairs { index, .. } => Some(index % workers),
            Piece::Curve => Some(workers - 1),
        }
    }
}

/// Which part of the experiment a task computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Piece {
    /// The scatter dataset's A, its clamping and Theorem 3.3's sample quantities.
    ScatterSetup,
    /// Estimates for pairs `start..end` of the scatter dataset (Figure 1).
    ScatterPairs { start: usize, end: usize },
    /// Error sums for pairs `start..end` of boxplot dataset `index` (Figures 2 and 3).
    BoxplotPairs {
        index: usize,
        start: usize,
        end: usize,
    },
    /// The MSE-against-m curve: a point at every m of [`crate::lab::config::CURVE_MS`].
    Curve,
}

/// One estimator on one piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Task {
    pub estimator: EstimatorId,
    pub piece: Piece,
}

/// What a task computes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskOutput {
    ScatterSetup {
        fit: Fit,
        /// Theorem 3.3's sample quantities, for the estimators it holds for.
        theorem_3_3: Option<Theorem33Inputs>,
        /// The MSE formula against the estimator's parameter (θ), where it has one.
        sweep: Option<ParameterSweep>,
    },
    ScatterPairs {
        log_true: Vec<f64>,
        estimates: Vec<SignedLog>,
        log_theoretical_mse: Vec<f64>,
        /// `|z|²` of each pair's projected vector (the first of a complex A's two).
        z_squared: Vec<f64>,
        data_radius: f64,
    },
    /// Log-sum-exp partial sums, combined over a dataset's chunks by [`ErrorSums::merge`].
    BoxplotPairs(ErrorSums),
    /// The curve's points, in the order of [`crate::lab::config::CURVE_MS`].
    Curve(Vec<CurvePoint>),
}

/// Sums over some pairs of a dataset, in logs, from which its metrics follow.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorSums {
    /// `ln Σ_i (ŜM_i − SM_i)²`.
    pub log_sum_squared: f64,
    /// `ln max_i |ŜM_i − SM_i| / SM_i`.
    pub log_max_rel_err: f64,
    /// `ln Σ_i MSE_i` (Lemma 3.1).
    pub log_sum_theoretical: f64,
    pub pairs: usize,
    /// Clamped entries of the dataset's A (the same in every chunk).
    pub clamped: usize,
}

impl ErrorSums {
    /// The sums of two disjoint sets of pairs of one dataset.
    pub fn merge(self, other: ErrorSums) -> ErrorSums {
        ErrorSums {
            log_sum_squared: log_add(self.log_sum_squared, other.log_sum_squared),
            log_max_rel_err: self.log_max_rel_err.max(other.log_max_rel_err),
            log_sum_theoretical: log_add(self.log_sum_theoretical, other.log_sum_theoretical),
            pairs: self.pairs + other.pairs,
            clamped: self.clamped.max(other.clamped),
        }
    }

    /// The dataset's metrics (means from sums).
    pub fn metrics(&self) -> DatasetMetrics {
        let log_n = (self.pairs.max(1) as f64).libm_ln();
        DatasetMetrics::from_logs(
            self.log_sum_squared - log_n,
            self.log_max_rel_err,
            self.log_sum_theoretical - log_n,
        )
    }
}
