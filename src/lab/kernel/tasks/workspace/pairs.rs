//! One estimator on a range of pairs: each pair collapsed to its vectors z, the sums over ω from
//! the f32 kernel in blocks of pairs, the true value and the MSE formula in f64.

use crate::lab::kernel::results::ExperimentError;
use crate::numerics::dataset::Dataset;
use crate::numerics::estimators::{Estimator, Fit, Projections, log_softmax_kernel};
use crate::numerics::kernel::{Block, KernelScratch, ROWS, TransposedOmega, prefix_block_sums};
use crate::numerics::logspace::SignedLog;
use crate::numerics::portable::Libm;
use crate::numerics::projections::couplings::Coupling;
use crate::numerics::rng::{StreamPurpose, stream_rng};

/// Where the ω of each pair come from.
pub(super) enum OmegaSource<'a> {
    /// One set for every pair (linear attention's way, the default).
    Shared(&'a TransposedOmega),
    /// Drawn afresh for pair i from stream `(seed, PairOmega, index, i)`.
    Fresh {
        seed: u64,
        index: usize,
        m: usize,
        coupling: Coupling,
    },
}

/// Estimates for a range of pairs, in logs.
pub(super) struct RangeEstimates {
    pub(super) log_true: Vec<f64>,
    pub(super) estimates: Vec<SignedLog>,
    pub(super) log_theoretical_mse: Vec<f64>,
    pub(super) z_squared: Vec<f64>,
    pub(super) data_radius: f64,
}

/// An estimator with its fit to the dataset at hand.
#[derive(Clone, Copy)]
pub(super) struct Fitted<'a> {
    pub(super) estimator: &'a dyn Estimator,
    pub(super) fit: &'a Fit,
}

/// The estimator on `pairs` of `data`: each pair collapsed to its prefactor and one or two
/// vectors z ([`Estimator::collapse`]), the sums `Σ_k g(ω_k·z)` from the f32 kernel in
/// blocks of pairs that share ω (one pair at a time when ω is fresh per pair), the true value
/// and the MSE formula in f64.
pub(super) fn estimate_pairs(
    data: &Dataset,
    pairs: std::ops::Range<usize>,
    fitted: Fitted<'_>,
    omega: OmegaSource<'_>,
    scratch: &mut KernelScratch,
) -> Result<RangeEstimates, ExperimentError> {
    let m = match omega {
        OmegaSource::Shared(shared) => shared.m(),
        OmegaSource::Fresh { m, .. } => m,
    };
    estimate_pairs_at(data, pairs, fitted, omega, &[m], scratch)?
        .pop()
        .ok_or_else(|| ExperimentError::InvalidTask("no estimates".into()))
}

/// [`estimate_pairs`] at every m of `lengths` at once, each estimate from the first m of the
/// shared ω (the MSE-against-m curve: one projection of each pair on its largest m, the sums
/// over the prefixes, bit for bit the estimates from ω's prefixes one m at a time). Each
/// length is between 1 and ω's m (the caller checks); fresh ω are drawn at one m: `lengths`
/// must then be that m alone. Never inlined: its callers
/// (the scatter, the boxplots, the curve) share one copy of the kernel loop in the worker.
#[inline(never)]
pub(super) fn estimate_pairs_at(
    data: &Dataset,
    pairs: std::ops::Range<usize>,
    fitted: Fitted<'_>,
    omega: OmegaSource<'_>,
    lengths: &[usize],
    scratch: &mut KernelScratch,
) -> Result<Vec<RangeEstimates>, ExperimentError> {
    let Fitted { estimator, fit } = fitted;
    let d = data.d;
    let count = pairs.len();
    let per_pair = estimator.projections_per_pair().clamp(1, ROWS);
    let sum = estimator.fast_sum(fit);
    let (block_pairs, m, coupling) = match omega {
        OmegaSource::Shared(shared) => (ROWS / per_pair, shared.m(), Coupling::Iid),
        OmegaSource::Fresh { m, coupling, .. } => (1, m, coupling),
    };
    let mut fresh = match omega {
        OmegaSource::Fresh { .. } => Some(Projections::zeroed(m, d)?),
        OmegaSource::Shared(_) => None,
    };
    let log_ms: Vec<f64> = lengths.iter().map(|&l| (l as f64).libm_ln()).collect();
    let mut out: Vec<RangeEstimates> = lengths
        .iter()
        .map(|_| RangeEstimates {
            log_true: Vec::with_capacity(count),
            estimates: Vec::with_capacity(count),
            log_theoretical_mse: Vec::with_capacity(count),
            z_squared: Vec::with_capacity(count),
            data_radius: 0.0,
        })
        .collect();
    let mut z64 = vec![0.0f64; per_pair * d];
    let mut z = vec![0.0f32; ROWS * d];
    let mut prefactor = [0.0f64; ROWS];
    let mut phases = [0.0f64; ROWS];
    let mut sums = vec![[SignedLog::ZERO; ROWS]; lengths.len()];
    let mut block_start = pairs.start;
    while block_start < pairs.end {
        let rows = block_pairs.min(pairs.end - block_start);
        for r in 0..rows {
            let i = block_start + r;
            let (x, y) = (data.query(i), data.key(i));
            let collapsed = estimator.collapse(fit, x, y, &mut z64);
            for (target, source) in z[r * per_pair * d..(r + 1) * per_pair * d]
                .iter_mut()
                .zip(&z64)
            {
                *target = *source as f32;
            }
            let log_true = log_softmax_kernel(x, y);
            prefactor[r] = collapsed.log_prefactor;
            phases[r] = collapsed.phase;
            let z_squared = z64[..d].iter().map(|v| v * v).sum();
            let (ax2, by2) = fit.transformed_squared_norms(x, y);
            let radius = ax2.max(by2).sqrt();
            for (range, &length) in out.iter_mut().zip(lengths) {
                range.log_true.push(log_true);
                range.log_theoretical_mse.push(
                    estimator
                        .log_mse_collapsed(fit, (x, y), (&z64, log_true), length)
                        .unwrap_or(f64::NAN),
                );
                range.z_squared.push(z_squared);
                range.data_radius = range.data_radius.max(radius);
            }
        }
        let drawn;
        let projections = match (&omega, fresh.as_mut()) {
            (OmegaSource::Shared(shared), _) => *shared,
            (OmegaSource::Fresh { seed, index, .. }, Some(buffer)) => {
                let mut rng = stream_rng(
                    *seed,
                    StreamPurpose::PairOmega,
                    *index as u64,
                    block_start as u64,
                );
                buffer.resample_coupled(coupling, &mut rng)?;
                drawn = TransposedOmega::new(buffer);
                &drawn
            }
            (OmegaSource::Fresh { .. }, None) => {
                return Err(ExperimentError::InvalidTask("no ω buffer".into()));
            }
        };
        let block = Block {
            omega: projections,
            z: &z,
            pairs: rows,
            per_pair,
            sum,
            phases: &phases,
        };
        prefix_block_sums(block, lengths, scratch, |i, p, value| sums[i][p] = value);
        for ((range, sums), log_m) in out.iter_mut().zip(&sums).zip(&log_ms) {
            range.estimates.extend(
                prefactor
                    .iter()
                    .zip(sums)
                    .take(rows)
                    .map(|(p, s)| s.scaled(p - log_m)),
            );
        }
        block_start += rows;
    }
    Ok(out)
}
