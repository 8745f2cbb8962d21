//! The data panel's numbers as plain data: the scatter dataset's (dataset 0) per-component
//! sample moments, the diagonal of A that each heuristic (and the optimiser, when `hcexp-opt`
//! is chosen) picks from them, and histograms of what the estimators see: `|x|`, `|y|`, `x·y`,
//! and per chosen estimator `|Ax|`, `|A⁻¹y|` and `|z| = |Ax + A⁻ᵀy|` (the estimators' MSE grows
//! like `e^{|z|²}`; for a complex A or GERF with the magnitudes [`Fit::a`]).
//!
//! **Bins.** The series of one chart share their bin edges, chosen from all their finite
//! values: when every value is positive and they span more than two decades
//! ([`LOG_BINS_SPAN`]), the bins are equal in `log10` of the value, otherwise in the value;
//! their number is Freedman–Diaconis' (width `2·IQR·n^{-1/3}` on the binned scale), Sturges'
//! (`⌈log2 n⌉ + 1`) when the IQR is 0, at most [`MAX_BINS`]. Every finite value is counted
//! (the edges span them all); non-finite ones are counted apart ([`HistogramSeries::left_out`]).
//!
//! The histograms use the first [`MAX_HISTOGRAM_PAIRS`] pairs; moments and fits use all of them.
//!
//! **Computed in a worker** ([`crate::lab::pool::WorkerRequest::DataView`]): it fits every chosen
//! estimator (the optimised A by L-BFGS), which the page's module does not link; the page
//! only draws the [`DataView`] it gets back.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::lab::config::ExperimentConfig;
use crate::lab::kernel::tasks::generate_dataset;
use crate::numerics::dataset::{Dataset, DatasetError, SampleMoments};
use crate::numerics::estimators::{EstimatorId, EstimatorParams, FitInput};
use crate::numerics::heuristics::{AHeuristic, diagonal_a};
use crate::numerics::stats::quantile;

/// The histograms use at most this many pairs (the first ones) of the scatter dataset.
pub const MAX_HISTOGRAM_PAIRS: usize = 5000;
/// The most bins a histogram has.
pub const MAX_BINS: usize = 40;
/// Positive values spanning more than this factor are binned on a log scale.
pub const LOG_BINS_SPAN: f64 = 100.0;

/// The colour of the queries' moments in the per-component chart.
pub const QUERY_COLOUR: [u8; 3] = [0, 90, 181];
/// The colour of the keys' moments in the per-component chart.
pub const KEY_COLOUR: [u8; 3] = [220, 50, 32];

/// Why the data panel has nothing to show.
#[derive(Clone, Debug, PartialEq)]
pub enum DataViewError {
    /// The scatter dataset could not be generated.
    Dataset(DatasetError),
}

impl fmt::Display for DataViewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataViewError::Dataset(e) => write!(f, "the scatter dataset: {e}"),
        }
    }
}

impl std::error::Error for DataViewError {}

/// How a histogram's bins were chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BinRule {
    /// Freedman–Diaconis: width `2·IQR·n^{-1/3}`.
    FreedmanDiaconis,
    /// Sturges (the IQR is 0): `⌈log2 n⌉ + 1` bins.
    Sturges,
    /// Every value equal (or none finite): one bin around them.
    Single,
}

/// One series of a histogram: counts per bin of the set's edges.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistogramSeries {
    pub label: String,
    pub colour: [u8; 3],
    /// Finite values per bin (`counts.len() = edges.len() − 1`).
    pub counts: Vec<usize>,
    /// Values that are not finite (not in any bin).
    pub left_out: usize,
    /// The median of the finite values (NaN without one).
    pub median: f64,
}

/// Histograms drawn on one chart: shared bin edges, one series each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistogramSet {
    /// Increasing bin edges, in the values' units (log-spaced when `log_bins`).
    pub edges: Vec<f64>,
    /// Whether the bins are equal in `log10` of the value.
    pub log_bins: bool,
    pub rule: BinRule,
    pub series: Vec<HistogramSeries>,
}

/// One diagonal of A for the per-component chart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ADiagonal {
    /// "identity", "mean-only", "variance-adjusted", "optimised".
    pub label: String,
    pub colour: [u8; 3],
    pub a: Vec<f64>,
    /// Entries clamped into `[A_MIN, A_MAX]`.
    pub clamped: usize,
}

/// A dense P a chosen DERF member fitted (`derf-dense`, `derf-fit`, …), for the heat maps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DenseMatrix {
    /// The estimator's id.
    pub label: String,
    pub d: usize,
    /// `p[i * d + j] = P_ij`.
    pub p: Vec<f64>,
}

/// Everything the data panel shows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DataView {
    pub d: usize,
    /// Pairs of the scatter dataset.
    pub n: usize,
    /// Pairs the histograms use (the first ones).
    pub histogram_pairs: usize,
    /// Component-wise sample means and variances of all n pairs ([`Dataset::moments`]).
    pub moments: SampleMoments,
    /// Square roots of the variances.
    pub std_x: Vec<f64>,
    pub std_y: Vec<f64>,
    /// The heuristics' A (identity, mean-only, variance-adjusted) and the optimised one when
    /// `hcexp-opt` is chosen.
    pub diagonals: Vec<ADiagonal>,
    /// `|x|` and `|y|`.
    pub norms: HistogramSet,
    /// `x·y` (`ln SM`).
    pub dots: HistogramSet,
    /// Per chosen estimator: `|Ax|`, `|A⁻¹y|`, `|z|`.
    pub ax: HistogramSet,
    pub ay: HistogramSet,
    pub z: HistogramSet,
    /// Estimators whose fit failed (they are missing from the per-estimator histograms).
    pub notes: Vec<String>,
    /// The dense P of every chosen DERF member, in the registry's order.
    #[serde(default)]
    pub dense: Vec<DenseMatrix>,
}

/// `(|a∘x|, |y/a|, |a∘x + y/a|)`: the norms of `Ax`, `A⁻¹y` and `z` for `A = diag(a)`.
pub fn transformed_norms(x: &[f64], y: &[f64], a: &[f64]) -> (f64, f64, f64) {
    let (mut ax, mut ay, mut z) = (0.0, 0.0, 0.0);
    for ((xi, yi), ai) in x.iter().zip(y).zip(a) {
        let (p, q) = (ai * xi, yi / ai);
        ax += p * p;
        ay += q * q;
        z += (p + q) * (p + q);
    }
    (ax.sqrt(), ay.sqrt(), z.sqrt())
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|u| u * u).sum::<f64>().sqrt()
}

/// The shared edges of a histogram of `values` (see the module's description of the bins).
pub fn bin_edges(values: &[f64]) -> (Vec<f64>, bool, BinRule) {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let (lo, hi) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
    if !(lo.is_finite() && hi.is_finite()) {
        return (vec![0.0, 1.0], false, BinRule::Single);
    }
    let log = lo > 0.0 && hi / lo > LOG_BINS_SPAN;
    let scale = |v: f64| if log { v.log10() } else { v };
    let unscale = |v: f64| if log { 10f64.powf(v) } else { v };
    let (t_lo, t_hi) = (scale(lo), scale(hi));
    let span = t_hi - t_lo;
    if !(span > 0.0 && span.is_finite()) {
        let half = if lo == 0.0 { 0.5 } else { 0.1 * lo.abs() };
        return (vec![lo - half, hi + half], false, BinRule::Single);
    }
    let scaled: Vec<f64> = finite.iter().map(|v| scale(*v)).collect();
    let n = scaled.len() as f64;
    let iqr = match (quantile(&scaled, 0.75), quantile(&scaled, 0.25)) {
        (Some(q75), Some(q25)) => q75 - q25,
        _ => 0.0,
    };
    let width = 2.0 * iqr * n.powf(-1.0 / 3.0);
    let (bins, rule) = if width > 0.0 && width.is_finite() {
        ((span / width).ceil(), BinRule::FreedmanDiaconis)
    } else {
        (n.log2().ceil() + 1.0, BinRule::Sturges)
    };
    let bins = (bins as usize).clamp(1, MAX_BINS);
    let mut edges: Vec<f64> = (0..=bins)
        .map(|k| unscale(t_lo + span * k as f64 / bins as f64))
        .collect();
    // Exact ends, whatever the rounding of 10^log10.
    edges[0] = lo;
    edges[bins] = hi;
    (edges, log, rule)
}

/// Counts of the finite `values` in the bins of `edges` (a value on an inner edge goes to
/// the bin above it, the largest value to the last bin; values beyond the ends to the end
/// bins), and how many were not finite.
pub fn count_bins(values: &[f64], edges: &[f64]) -> (Vec<usize>, usize) {
    let bins = edges.len().saturating_sub(1).max(1);
    let mut counts = vec![0; bins];
    let mut left_out = 0;
    for &v in values {
        if !v.is_finite() {
            left_out += 1;
            continue;
        }
        let above = edges.partition_point(|e| *e <= v);
        counts[above.saturating_sub(1).min(bins - 1)] += 1;
    }
    (counts, left_out)
}

/// One chart's histograms of `(label, colour, values)`, on shared edges.
pub fn histogram_set(series: Vec<(String, [u8; 3], Vec<f64>)>) -> HistogramSet {
    let all: Vec<f64> = series.iter().flat_map(|s| s.2.iter().copied()).collect();
    let (edges, log_bins, rule) = bin_edges(&all);
    let series = series
        .into_iter()
        .map(|(label, colour, values)| {
            let (counts, left_out) = count_bins(&values, &edges);
            let finite: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
            HistogramSeries {
                label,
                colour,
                counts,
                left_out,
                median: quantile(&finite, 0.5).unwrap_or(f64::NAN),
            }
        })
        .collect();
    HistogramSet {
        edges,
        log_bins,
        rule,
        series,
    }
}

/// The colour of the page's hyperbolic estimator with this A.
fn heuristic_colour(id: &str) -> [u8; 3] {
    EstimatorId::from_id(id).map_or([120, 120, 120], |e| e.info().colour())
}

/// The data panel of `config`: its scatter dataset (dataset 0) and chosen estimators.
pub fn data_view(config: &ExperimentConfig) -> Result<DataView, DataViewError> {
    let data = generate_dataset(config, 0).map_err(DataViewError::Dataset)?;
    Ok(data_view_of(
        &data,
        &config.estimators,
        &config.estimator_params(),
    ))
}

/// [`data_view`] of any dataset and estimators. An estimator whose fit fails is left out of
/// the per-estimator histograms and named in [`DataView::notes`].
pub fn data_view_of(
    data: &Dataset,
    estimators: &[EstimatorId],
    params: &EstimatorParams,
) -> DataView {
    let d = data.d;
    let moments = data.moments();
    let sqrt = |v: &[f64]| v.iter().map(|s| s.max(0.0).sqrt()).collect::<Vec<f64>>();
    let mut notes = Vec::new();
    let fits: Vec<_> = estimators
        .iter()
        .filter_map(|&estimator| {
            match estimator.get().fit(
                FitInput {
                    data,
                    moments: &moments,
                },
                params,
            ) {
                Ok(fit) if fit.a.len() == d => Some((estimator, fit)),
                Ok(fit) => {
                    notes.push(format!(
                        "{}: its A has {} entries for d = {d}",
                        estimator.id(),
                        fit.a.len()
                    ));
                    None
                }
                Err(e) => {
                    notes.push(format!("{}: {e}", estimator.id()));
                    None
                }
            }
        })
        .collect();
    let mut diagonals: Vec<ADiagonal> = [
        (AHeuristic::Identity, "prf-hyp"),
        (AHeuristic::MeanOnly, "hcexp-mean"),
        (AHeuristic::VarianceAdjusted, "hcexp-var"),
    ]
    .into_iter()
    .map(|(heuristic, colour_of)| {
        let a = diagonal_a(heuristic, &moments);
        ADiagonal {
            label: heuristic.cli_name().to_string(),
            colour: heuristic_colour(colour_of),
            a: a.a,
            clamped: a.clamped,
        }
    })
    .collect();
    if let Some((estimator, fit)) = fits.iter().find(|(e, _)| e.id() == "hcexp-opt") {
        diagonals.push(ADiagonal {
            label: "optimised".to_string(),
            colour: estimator.info().colour(),
            a: fit.a.clone(),
            clamped: fit.clamped,
        });
    }
    let pairs = data
        .n
        .min(MAX_HISTOGRAM_PAIRS)
        .min(data.x.len() / d.max(1))
        .min(data.y.len() / d.max(1));
    let pair = |i: usize| (data.query(i), data.key(i));
    let norms_x: Vec<f64> = (0..pairs).map(|i| norm(pair(i).0)).collect();
    let norms_y: Vec<f64> = (0..pairs).map(|i| norm(pair(i).1)).collect();
    let dots: Vec<f64> = (0..pairs)
        .map(|i| {
            let (x, y) = pair(i);
            crate::numerics::estimators::dot(x, y)
        })
        .collect();
    let mut ax = Vec::new();
    let mut ay = Vec::new();
    let mut z = Vec::new();
    for (estimator, fit) in &fits {
        let norms: Vec<(f64, f64, f64)> = (0..pairs)
            .map(|i| {
                let (x, y) = pair(i);
                match &fit.dense {
                    // A dense P (the DERF members): |Px|, |P^{−T}y|, |z|.
                    Some(dense) => {
                        let (px, qy) = (dense.apply(x, true), dense.apply(y, false));
                        let z: Vec<f64> = px.iter().zip(&qy).map(|(p, q)| p + q).collect();
                        (norm(&px), norm(&qy), norm(&z))
                    }
                    None => transformed_norms(x, y, &fit.a),
                }
            })
            .collect();
        let label = estimator.id().to_string();
        let colour = estimator.info().colour();
        ax.push((label.clone(), colour, norms.iter().map(|n| n.0).collect()));
        ay.push((label.clone(), colour, norms.iter().map(|n| n.1).collect()));
        z.push((label, colour, norms.iter().map(|n| n.2).collect()));
    }
    DataView {
        d,
        n: data.n,
        histogram_pairs: pairs,
        std_x: sqrt(&moments.var_x),
        std_y: sqrt(&moments.var_y),
        moments,
        diagonals,
        norms: histogram_set(vec![
            ("|x|".to_string(), QUERY_COLOUR, norms_x),
            ("|y|".to_string(), KEY_COLOUR, norms_y),
        ]),
        dots: histogram_set(vec![("x·y".to_string(), [80, 80, 80], dots)]),
        ax: histogram_set(ax),
        ay: histogram_set(ay),
        z: histogram_set(z),
        notes,
        dense: fits
            .iter()
            .filter_map(|(estimator, fit)| {
                let dense = fit.dense.as_ref()?;
                Some(DenseMatrix {
                    label: estimator.id().to_string(),
                    d: dense.d,
                    p: dense.p.clone(),
                })
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests;
