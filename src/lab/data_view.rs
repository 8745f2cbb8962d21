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
//! **Computed in a worker** ([`super::tasks::WorkerRequest::DataView`]): it fits every chosen
//! estimator (the optimised A by L-BFGS), which the page's module does not link; the page
//! only draws the [`DataView`] it gets back.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::config::ExperimentConfig;
use super::tasks::generate_dataset;
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
mod tests {
    use super::*;
    use crate::lab::test_support::{config_with, id};

    fn total(series: &HistogramSeries) -> usize {
        series.counts.iter().sum::<usize>() + series.left_out
    }

    #[test]
    fn moments_and_heuristic_diagonals_are_the_library_s() {
        let config = config_with(&[("n", "300"), ("d", "12"), ("est", "prf-hyp,hcexp-var")]);
        let view = data_view(&config).unwrap();
        let data = generate_dataset(&config, 0).unwrap();
        let moments = data.moments();
        assert_eq!(view.moments, moments);
        for (s, v) in view.std_x.iter().zip(&moments.var_x) {
            assert_eq!(*s, v.sqrt());
        }
        let labels: Vec<&str> = view.diagonals.iter().map(|a| a.label.as_str()).collect();
        assert_eq!(labels, ["identity", "mean-only", "variance-adjusted"]);
        for (diagonal, heuristic) in view.diagonals.iter().zip(AHeuristic::ALL) {
            let expected = diagonal_a(heuristic, &moments);
            assert_eq!(diagonal.a, expected.a);
            assert_eq!(diagonal.clamped, expected.clamped);
        }
    }

    #[test]
    fn a_derf_members_dense_p_is_shown_and_is_its_fit() {
        let config = config_with(&[("n", "200"), ("d", "5"), ("est", "hcexp-var,derf-dense")]);
        let view = data_view(&config).unwrap();
        assert_eq!(view.dense.len(), 1, "only the DERF member has a dense P");
        let shown = &view.dense[0];
        assert_eq!((shown.label.as_str(), shown.d), ("derf-dense", 5));
        let data = generate_dataset(&config, 0).unwrap();
        let moments = data.moments();
        let fit = id("derf-dense")
            .get()
            .fit(
                FitInput {
                    data: &data,
                    moments: &moments,
                },
                &config.estimator_params(),
            )
            .unwrap();
        assert_eq!(shown.p, fit.dense.unwrap().p);
    }

    #[test]
    fn the_optimised_a_is_shown_when_chosen_and_is_its_fit() {
        let config = config_with(&[("n", "200"), ("d", "6"), ("est", "hcexp-opt")]);
        let view = data_view(&config).unwrap();
        let data = generate_dataset(&config, 0).unwrap();
        let moments = data.moments();
        let fit = id("hcexp-opt")
            .get()
            .fit(
                FitInput {
                    data: &data,
                    moments: &moments,
                },
                &config.estimator_params(),
            )
            .unwrap();
        assert_eq!(view.diagonals.len(), 4);
        assert_eq!(view.diagonals[3].label, "optimised");
        assert_eq!(view.diagonals[3].a, fit.a);
    }

    #[test]
    fn every_histogram_counts_every_pair() {
        let config = config_with(&[
            ("n", "500"),
            ("d", "20"),
            ("est", "prf-hyp,hcexp-mean,hcexp-var,cplx,oprf"),
        ]);
        let view = data_view(&config).unwrap();
        assert_eq!(view.histogram_pairs, 500);
        for set in [&view.norms, &view.dots, &view.ax, &view.ay, &view.z] {
            assert!(set.edges.len() >= 2 && set.edges.len() <= MAX_BINS + 1);
            assert!(set.edges.windows(2).all(|w| w[0] < w[1]), "{:?}", set.edges);
            for series in &set.series {
                assert_eq!(series.counts.len(), set.edges.len() - 1);
                assert_eq!(total(series), 500, "{}", series.label);
            }
        }
        assert_eq!(view.z.series.len(), 5);
        assert!(view.notes.is_empty(), "{:?}", view.notes);
    }

    #[test]
    fn the_histograms_cap_their_pairs() {
        let config = config_with(&[("n", "6000"), ("d", "2"), ("est", "prf-hyp")]);
        let view = data_view(&config).unwrap();
        assert_eq!(view.n, 6000);
        assert_eq!(view.histogram_pairs, MAX_HISTOGRAM_PAIRS);
        assert_eq!(total(&view.z.series[0]), MAX_HISTOGRAM_PAIRS);
    }

    #[test]
    fn transformed_norms_by_hand() {
        // a = (2, 1/2), x = (1, 3), y = (4, -1): Ax = (2, 3/2), A⁻¹y = (2, -2), z = (4, -1/2).
        let (ax, ay, z) = transformed_norms(&[1.0, 3.0], &[4.0, -1.0], &[2.0, 0.5]);
        assert!((ax - 2.5).abs() < 1e-12);
        assert!((ay - 8f64.sqrt()).abs() < 1e-12);
        assert!((z - 16.25f64.sqrt()).abs() < 1e-12);
        // Through the panel: a one-pair dataset, the identity A (PRF).
        let data = Dataset {
            d: 2,
            n: 2,
            x: vec![1.0, 3.0, 1.0, 3.0],
            y: vec![4.0, -1.0, 4.0, -1.0],
        };
        let view = data_view_of(&data, &[id("prf-hyp")], &EstimatorParams::default());
        assert!((view.ax.series[0].median - 10f64.sqrt()).abs() < 1e-12);
        assert!((view.z.series[0].median - 29f64.sqrt()).abs() < 1e-12);
        assert_eq!(view.ax.rule, BinRule::Single);
        assert_eq!(view.ax.series[0].counts.iter().sum::<usize>(), 2);
    }

    #[test]
    fn one_dimension_works() {
        let config = config_with(&[("n", "100"), ("d", "1")]);
        let view = data_view(&config).unwrap();
        assert_eq!(view.d, 1);
        assert!(view.diagonals.iter().all(|a| a.a.len() == 1));
        for set in [&view.norms, &view.dots, &view.ax, &view.ay, &view.z] {
            for series in &set.series {
                assert_eq!(total(series), 100);
            }
        }
    }

    #[test]
    fn zero_variance_components_give_no_nan_and_no_panic() {
        // Component 1 is constant in queries and keys; component 0 of the keys is 0.
        let data = Dataset {
            d: 2,
            n: 4,
            x: vec![1.0, 2.0, 2.0, 2.0, 3.0, 2.0, 4.0, 2.0],
            y: vec![0.0, 0.5, 0.0, 0.5, 0.0, 0.5, 0.0, 0.5],
        };
        let estimators: Vec<EstimatorId> = EstimatorId::all().collect();
        let view = data_view_of(&data, &estimators, &EstimatorParams::default());
        assert_eq!(view.std_x[1], 0.0);
        assert_eq!(view.std_y, vec![0.0, 0.0]);
        // Moments: μ_x = (2.5, 2), σ²_x = (5/3, 0), μ_y = (0, 0.5), σ²_y = (0, 0).
        // Component 1 (constant): mean-only √(0.5/2) = 1/2, variance-adjusted
        // ((0 + 0.25)/(0 + 4))^¼ = 1/2, and the optimum of (2a + 0.5/a)² is a² = 0.5/2, 1/2
        // again (to the optimiser's 1e-6, as in its one-dimensional test). Component 0 (keys all
        // 0): both heuristics give 0, clamped up to A_MIN, and (a x_0)² is smallest at A_MIN.
        let by_label = |label: &str| {
            view.diagonals
                .iter()
                .find(|a| a.label == label)
                .unwrap_or_else(|| panic!("no {label} diagonal"))
        };
        assert_eq!(by_label("identity").a, vec![1.0, 1.0]);
        assert_eq!(by_label("identity").clamped, 0);
        for (label, tolerance) in [
            ("mean-only", 1e-15),
            ("variance-adjusted", 1e-15),
            ("optimised", 1e-6),
        ] {
            let diagonal = by_label(label);
            assert_eq!(diagonal.a[0], crate::numerics::heuristics::A_MIN, "{label}");
            assert_eq!(diagonal.clamped, 1, "{label}");
            assert!(
                (diagonal.a[1] - 0.5).abs() <= tolerance,
                "{label}: a_1 = {} (expected 1/2)",
                diagonal.a[1]
            );
        }
        // Every x·y is 0·x_0 + 2·0.5 = 1: one bin, 0.1 of the value either side.
        assert_eq!(view.dots.rule, BinRule::Single);
        assert_eq!(view.dots.edges, vec![0.9, 1.1]);
        // Norms: |y| = 0.5 four times, |x| = √5, √8, √13, √20 (span below two decades: linear).
        // Sorted 8 values: q25 = 0.5, q75 = √8 + (√13 − √8)/4, width 2·IQR·8^{-1/3} = IQR,
        // span √20 − 0.5 ≈ 1.57 widths: two Freedman–Diaconis bins, split at the middle.
        let iqr = 8f64.sqrt() + (13f64.sqrt() - 8f64.sqrt()) / 4.0 - 0.5;
        assert!(((20f64.sqrt() - 0.5) / iqr).ceil() == 2.0);
        assert_eq!(view.norms.rule, BinRule::FreedmanDiaconis);
        let want = [0.5, (0.5 + 20f64.sqrt()) / 2.0, 20f64.sqrt()];
        assert_eq!(view.norms.edges.len(), 3, "{:?}", view.norms.edges);
        for (got, want) in view.norms.edges.iter().zip(want) {
            assert!((got - want).abs() <= 1e-15 * want, "{:?}", view.norms.edges);
        }
        // √5 ≈ 2.24 lies below the middle edge ≈ 2.49, the other |x| above it.
        assert_eq!(view.norms.series[0].counts, vec![1, 3]);
        assert_eq!(view.norms.series[1].counts, vec![4, 0]);
        for set in [&view.norms, &view.dots, &view.ax, &view.ay, &view.z] {
            assert!(set.edges.iter().all(|e| e.is_finite()));
            for series in &set.series {
                assert_eq!(total(series), 4, "{}", series.label);
            }
        }
        // All |y| equal: one bin.
        let (edges, _, rule) = bin_edges(&[0.5; 4]);
        assert_eq!(rule, BinRule::Single);
        assert_eq!(count_bins(&[0.5; 4], &edges).0, vec![4]);
    }

    #[test]
    fn bins_go_logarithmic_beyond_two_decades_and_cap_at_forty() {
        let wide: Vec<f64> = (0..1000).map(|i| 10f64.powf(i as f64 / 250.0)).collect();
        let (edges, log, rule) = bin_edges(&wide);
        assert!(log);
        assert_eq!(rule, BinRule::FreedmanDiaconis);
        // Uniform in log10 over 4 decades: IQR 2, width 2 · 2 / 1000^(1/3) = 0.4: 10 bins.
        assert_eq!(edges.len(), 11);
        assert_eq!((edges[0], edges[10]), (1.0, wide[999]));
        let ratio = edges[1] / edges[0];
        assert!((edges[6] / edges[5] - ratio).abs() < 1e-9);
        // 10⁵ values would want 47 bins: capped.
        let many: Vec<f64> = (0..100_000)
            .map(|i| 10f64.powf(f64::from(i) / 25_000.0))
            .collect();
        assert_eq!(bin_edges(&many).0.len(), MAX_BINS + 1);
        let narrow: Vec<f64> = (0..100).map(|i| 1.0 + f64::from(i) / 100.0).collect();
        let (edges, log, _) = bin_edges(&narrow);
        assert!(!log);
        // Uniform on [1, 2): IQR ≈ 0.5, width ≈ 2 · 0.5 / 100^(1/3) ≈ 0.215: 5 bins.
        assert_eq!(edges.len(), 6);
        let (counts, left_out) = count_bins(&[1.0, 1.5, 1.99, f64::NAN, f64::INFINITY], &edges);
        assert_eq!(counts.iter().sum::<usize>(), 3);
        assert_eq!(left_out, 2);
        // Mostly equal values: zero IQR, Sturges.
        let mut spiky = vec![1.0; 99];
        spiky.push(3.0);
        assert_eq!(bin_edges(&spiky).2, BinRule::Sturges);
    }
}
