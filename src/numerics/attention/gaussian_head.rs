//! Long sequences that follow a real head's statistics: a Gaussian fitted to the head's queries,
//! another to its keys and another to its values (mean and covariance over every token of every
//! passage in the asset), sampled for any L. Used by the length study, where the stored passages
//! (32 tokens) are far too short.
//!
//! Why a Gaussian per side: what attention's cost and a feature map's error read of the data
//! are the logits `q·k` (their mean `μ_q·μ_k + tr(Σ_qΣ_k)`-driven spread) and the norms
//! `|q|², |k|²` in the maps' `e^{−|w|²/2}` factors; a full-covariance Gaussian keeps the first two
//! moments of both sides exactly, the correlation between directions included (the
//! variance-adjusted A reads only the diagonal). It loses heavy tails and the dependence between
//! a token's query and key, which only touch the diagonal `i = j` of P. With n = 64 tokens the
//! covariance of d = 32 or 64 coordinates is rank-deficient or noisy: it is shrunk towards its
//! diagonal by `λ = d/(n + d)` (positive definite, the diagonal, hence every norm's mean, kept).
//!
//! Head size 64: MiniLM's heads have 32 dimensions; a 64-dimensional head is the head and its
//! neighbour (heads 2h and 2h + 1 of the layer) side by side, scaled by `64^{-1/4}`, so its logit
//! is the two heads' logits summed over √2: the head size of BERT-base and of the published GPU
//! crossovers, with the model's own statistics.

use nalgebra::DMatrix;
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

use super::AttentionError;
use super::heads::HeadSet;

/// A Gaussian `N(μ, Σ)` in `dim` dimensions, kept as μ and the Cholesky factor of Σ.
#[derive(Clone, Debug, PartialEq)]
pub struct Gaussian {
    pub dim: usize,
    pub mean: Vec<f64>,
    /// The lower-triangular L with `L Lᵀ = Σ`, row-major.
    pub factor: Vec<f64>,
}

impl Gaussian {
    /// Fits μ and the shrunk covariance to `n` samples (row-major, `n × dim`).
    pub fn fit(samples: &[f64], n: usize, dim: usize) -> Result<Gaussian, AttentionError> {
        if n < 2 || dim == 0 || samples.len() != n * dim {
            return Err(AttentionError::Data(format!(
                "a Gaussian needs at least 2 samples of {dim} values (got {} values)",
                samples.len()
            )));
        }
        let mean: Vec<f64> = (0..dim)
            .map(|c| samples.iter().skip(c).step_by(dim).sum::<f64>() / n as f64)
            .collect();
        let mut covariance = DMatrix::<f64>::zeros(dim, dim);
        for row in samples.chunks_exact(dim) {
            for a in 0..dim {
                let da = row[a] - mean[a];
                for b in 0..=a {
                    covariance[(a, b)] += da * (row[b] - mean[b]);
                }
            }
        }
        let shrinkage = dim as f64 / (n + dim) as f64;
        for a in 0..dim {
            for b in 0..=a {
                let sample = covariance[(a, b)] / (n - 1) as f64;
                let shrunk = if a == b {
                    sample
                } else {
                    (1.0 - shrinkage) * sample
                };
                covariance[(a, b)] = shrunk;
                covariance[(b, a)] = shrunk;
            }
        }
        let cholesky = covariance.cholesky().ok_or_else(|| {
            AttentionError::Data("the head's covariance is not positive definite".into())
        })?;
        let lower = cholesky.l();
        let factor = (0..dim)
            .flat_map(|a| (0..dim).map(move |b| (a, b)))
            .map(|(a, b)| lower[(a, b)])
            .collect();
        Ok(Gaussian { dim, mean, factor })
    }

    /// Appends `count` draws `μ + L z` to `out`, as f32.
    pub fn sample_into<R: Rng + ?Sized>(&self, count: usize, rng: &mut R, out: &mut Vec<f32>) {
        let mut z = vec![0.0f64; self.dim];
        for _ in 0..count {
            z.iter_mut().for_each(|x| *x = StandardNormal.sample(rng));
            for a in 0..self.dim {
                let row = &self.factor[a * self.dim..a * self.dim + a + 1];
                let value = self.mean[a] + row.iter().zip(&z).map(|(l, z)| l * z).sum::<f64>();
                out.push(value as f32);
            }
        }
    }
}

/// A head's queries, keys and values as three Gaussians (queries and keys already scaled by
/// `d^{-1/4}`, as the model scales them).
#[derive(Clone, Debug, PartialEq)]
pub struct GaussianHead {
    pub d: usize,
    pub queries: Gaussian,
    pub keys: Gaussian,
    pub values: Gaussian,
}

/// Long sampled queries, keys (L × d) and values (L × dv), f32.
#[derive(Clone, Debug, PartialEq)]
pub struct SampledSequence {
    pub len: usize,
    pub d: usize,
    pub q: Vec<f32>,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
}

impl GaussianHead {
    /// The head sizes a real head gives: its own (32) and two neighbours side by side (64).
    pub const HEAD_SIZES: [usize; 2] = [32, 64];

    /// The sizes of [`GaussianHead::HEAD_SIZES`] a model whose heads have `head_dim` values
    /// gives (its own and, where it divides, two side by side): 32 and 64 for the encoder, 64
    /// for the language model.
    pub fn head_sizes(head_dim: usize) -> Vec<usize> {
        Self::HEAD_SIZES
            .into_iter()
            .filter(|d| head_dim > 0 && d.is_multiple_of(head_dim))
            .collect()
    }

    /// Fits head `head` of layer `layer` (d = 32), or it and its neighbour (d = 64), over every
    /// passage of `heads`.
    pub fn fit(
        heads: &dyn HeadSet,
        layer: usize,
        head: usize,
        d: usize,
    ) -> Result<GaussianHead, AttentionError> {
        let shape = heads.shape();
        let dim = shape.head_dim;
        let group = d / dim.max(1);
        if dim == 0 || !d.is_multiple_of(dim) || group == 0 || group > shape.heads {
            return Err(AttentionError::Data(format!(
                "head size {d} is not a multiple of the model's {dim} within its {} heads",
                shape.heads
            )));
        }
        let first = head / group * group;
        let tokens = shape.tokens;
        let n = tokens * shape.passages;
        let (mut q, mut k, mut v) = (vec![0.0; n * d], vec![0.0; n * d], vec![0.0; n * d]);
        for passage in 0..shape.passages {
            for member in 0..group {
                let part = heads
                    .head(passage, layer, first + member)
                    .map_err(|e| AttentionError::Data(e.to_string()))?;
                for t in 0..tokens {
                    let at = (passage * tokens + t) * d + member * dim;
                    let from = t * dim..(t + 1) * dim;
                    q[at..at + dim].copy_from_slice(&part.q[from.clone()]);
                    k[at..at + dim].copy_from_slice(&part.k[from.clone()]);
                    v[at..at + dim].copy_from_slice(&part.v[from]);
                }
            }
        }
        let scale = (d as f64).powf(-0.25);
        q.iter_mut().chain(k.iter_mut()).for_each(|x| *x *= scale);
        Ok(GaussianHead {
            d,
            queries: Gaussian::fit(&q, n, d)?,
            keys: Gaussian::fit(&k, n, d)?,
            values: Gaussian::fit(&v, n, d)?,
        })
    }

    /// L tokens drawn from the three Gaussians.
    pub fn sample<R: Rng + ?Sized>(&self, len: usize, rng: &mut R) -> SampledSequence {
        let mut q = Vec::with_capacity(len * self.d);
        let mut k = Vec::with_capacity(len * self.d);
        let mut v = Vec::with_capacity(len * self.d);
        self.queries.sample_into(len, rng, &mut q);
        self.keys.sample_into(len, rng, &mut k);
        self.values.sample_into(len, rng, &mut v);
        SampledSequence {
            len,
            d: self.d,
            q,
            k,
            v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numerics::rng::{StreamPurpose, stream_rng};

    /// Draws reproduce the fitted mean and covariance within their standard errors: over n
    /// draws, each mean within 5 standard errors `σ/√n`, each covariance entry within 5 of
    /// `√((Σ_aa Σ_bb + Σ_ab²)/n)`.
    #[test]
    fn draws_have_the_fitted_moments() {
        let (n0, dim) = (40, 3);
        let mut rng = stream_rng(1, StreamPurpose::Trial, 5, 0);
        let raw: Vec<f64> = (0..n0 * dim)
            .map(|i| {
                let z: f64 = StandardNormal.sample(&mut rng);
                z * (1.0 + (i % dim) as f64) + (i % dim) as f64 * 0.5
            })
            .collect();
        let gaussian = Gaussian::fit(&raw, n0, dim).expect("fit");
        let sigma = |a: usize, b: usize| -> f64 {
            (0..=a.min(b))
                .map(|c| gaussian.factor[a * dim + c] * gaussian.factor[b * dim + c])
                .sum()
        };
        let n = 40_000;
        let mut draws = Vec::new();
        gaussian.sample_into(n, &mut rng, &mut draws);
        for a in 0..dim {
            let mean: f64 = draws
                .iter()
                .skip(a)
                .step_by(dim)
                .map(|&x| f64::from(x))
                .sum::<f64>()
                / n as f64;
            let se = (sigma(a, a) / n as f64).sqrt();
            assert!((mean - gaussian.mean[a]).abs() < 5.0 * se, "mean {a}");
            for b in 0..=a {
                let cov: f64 = draws
                    .chunks_exact(dim)
                    .map(|r| {
                        (f64::from(r[a]) - gaussian.mean[a]) * (f64::from(r[b]) - gaussian.mean[b])
                    })
                    .sum::<f64>()
                    / n as f64;
                let se = ((sigma(a, a) * sigma(b, b) + sigma(a, b).powi(2)) / n as f64).sqrt();
                assert!((cov - sigma(a, b)).abs() < 5.0 * se, "cov ({a}, {b})");
            }
        }
        // Shrinkage keeps the diagonal: Σ_aa is the sample variance.
        for a in 0..dim {
            let column: Vec<f64> = raw.iter().skip(a).step_by(dim).copied().collect();
            let mean = column.iter().sum::<f64>() / n0 as f64;
            let var = column.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n0 - 1) as f64;
            assert!((sigma(a, a) - var).abs() < 1e-9 * var);
        }
    }

    #[test]
    fn too_few_samples_are_an_error() {
        assert!(Gaussian::fit(&[1.0, 2.0], 1, 2).is_err());
        assert!(Gaussian::fit(&[1.0, 2.0, 3.0], 2, 2).is_err());
    }
}
