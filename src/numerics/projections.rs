//! The random projections `ω_1 … ω_m` that every random-feature estimator draws: i.i.d.
//! `N(0, I_d)` rows, or orthogonal blocks (Performer's ORF); simplex blocks and randomised
//! quasi-Monte Carlo in [`couplings`].

pub mod couplings;
pub use couplings::Coupling;

use std::fmt;

use super::portable::StandardNormal;
use rand::Rng;

/// Why projections could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EstimatorError {
    /// `m` or `d` is zero.
    EmptyProjection { m: usize, d: usize },
    /// Vectors of different lengths were combined.
    DimensionMismatch { expected: usize, got: usize },
    /// An estimator could not fit its parameters to the data.
    Fit(String),
}

impl fmt::Display for EstimatorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EstimatorError::EmptyProjection { m, d } => {
                write!(f, "projections need m ≥ 1 and d ≥ 1 (got m = {m}, d = {d})")
            }
            EstimatorError::DimensionMismatch { expected, got } => {
                write!(f, "expected vectors of dimension {expected}, got {got}")
            }
            EstimatorError::Fit(message) => write!(f, "fitting the estimator failed: {message}"),
        }
    }
}

impl std::error::Error for EstimatorError {}

/// `m` Gaussian projections `ω_k ~ N(0, I_d)`, stored row-major (`omega[k * d + j]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Projections {
    m: usize,
    d: usize,
    omega: Vec<f64>,
}

impl Projections {
    /// Draws `m` i.i.d. standard Gaussian vectors in `R^d`.
    pub fn sample<R: Rng + ?Sized>(
        m: usize,
        d: usize,
        rng: &mut R,
    ) -> Result<Self, EstimatorError> {
        let mut projections = Self::zeroed(m, d)?;
        projections.resample(rng);
        Ok(projections)
    }

    /// Storage for `m × d` projections, all zero until [`Projections::resample`].
    pub fn zeroed(m: usize, d: usize) -> Result<Self, EstimatorError> {
        if m == 0 || d == 0 {
            return Err(EstimatorError::EmptyProjection { m, d });
        }
        Ok(Self {
            m,
            d,
            omega: vec![0.0; m * d],
        })
    }

    /// Redraws every ω in place (fresh ω per pair reuses one allocation).
    pub fn resample<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        for w in &mut self.omega {
            *w = StandardNormal.sample(rng);
        }
    }

    /// Draws `m` orthogonal random features (Performer's ORF; REFERENCE.md, "Orthogonal
    /// random features"): blocks of `d` rows, each block the Gram–Schmidt orthonormalisation
    /// of a Gaussian `d × d` matrix (what a QR decomposition gives), each row then rescaled
    /// by an independent `chi(d)` length, the norm of another Gaussian vector. Every row is
    /// still `N(0, I_d)`, so each estimator stays unbiased; rows of a block are exactly
    /// orthogonal. Whole blocks are always drawn, so the first rows of a stream do not depend
    /// on `m` (a prefix of a longer draw is a shorter draw).
    pub fn sample_orthogonal<R: Rng + ?Sized>(
        m: usize,
        d: usize,
        rng: &mut R,
    ) -> Result<Self, EstimatorError> {
        let mut projections = Self::zeroed(m, d)?;
        projections.resample_orthogonal(rng);
        Ok(projections)
    }

    /// Redraws every ω in place as orthogonal blocks (see [`Projections::sample_orthogonal`]).
    pub fn resample_orthogonal<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        let d = self.d;
        let mut block = vec![0.0f64; d * d];
        for rows in self.omega.chunks_mut(d * d) {
            couplings::haar_frame(&mut block, d, rng);
            for (row, target) in block.chunks_exact(d).zip(rows.chunks_mut(d)) {
                let length = couplings::chi_length(d, rng);
                for (t, w) in target.iter_mut().zip(row) {
                    *t = w * length;
                }
            }
        }
    }

    /// `|ω_k|²` for every k (the GERF estimators weigh each feature by it).
    pub fn squared_norms(&self) -> Vec<f64> {
        self.omega
            .chunks_exact(self.d)
            .map(|row| row.iter().map(|w| w * w).sum())
            .collect()
    }

    /// The projections `−ω_k` (the antithetic set: the hyperbolic estimator with ω is the
    /// mean of the positive ones with ω and with −ω).
    pub fn negated(&self) -> Self {
        Self {
            m: self.m,
            d: self.d,
            omega: self.omega.iter().map(|w| -w).collect(),
        }
    }

    /// The number of projections m.
    pub fn m(&self) -> usize {
        self.m
    }

    /// The dimension d.
    pub fn d(&self) -> usize {
        self.d
    }

    /// Every `ω_k` one after the other (`[k * d + j]`).
    pub fn as_slice(&self) -> &[f64] {
        &self.omega
    }

    /// The vectors `ω_k`, in order.
    pub fn rows(&self) -> impl Iterator<Item = &[f64]> {
        self.omega.chunks_exact(self.d)
    }

    /// `out[k] = ω_k · z`. Four lane accumulators per row, because an ordered float sum does
    /// not vectorise.
    pub fn project(&self, z: &[f64], out: &mut [f64]) {
        for (row, t) in self.omega.chunks_exact(self.d).zip(out.iter_mut()) {
            let mut lanes = [0.0f64; 4];
            let row_chunks = row.chunks_exact(4);
            let z_chunks = z.chunks_exact(4);
            let mut tail = 0.0;
            for (w, v) in row_chunks.remainder().iter().zip(z_chunks.remainder()) {
                tail += w * v;
            }
            for (w, v) in row_chunks.zip(z_chunks) {
                for lane in 0..4 {
                    lanes[lane] += w[lane] * v[lane];
                }
            }
            *t = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail;
        }
    }
}

/// Modified Gram–Schmidt on the rows of a row-major `d × d` matrix, in place. Returns false
/// if a row is (numerically) dependent on the ones before it.
fn orthonormalise(block: &mut [f64], d: usize) -> bool {
    for i in 0..d {
        for j in 0..i {
            let (done, rest) = block.split_at_mut(i * d);
            let previous = &done[j * d..(j + 1) * d];
            let row = &mut rest[..d];
            let projection: f64 = row.iter().zip(previous).map(|(a, b)| a * b).sum();
            for (r, p) in row.iter_mut().zip(previous) {
                *r -= projection * p;
            }
        }
        let row = &mut block[i * d..(i + 1) * d];
        let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm.is_nan() || norm <= 1e-10 {
            return false;
        }
        row.iter_mut().for_each(|v| *v /= norm);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numerics::rng::{StreamPurpose, stream_rng};

    #[test]
    fn orthogonal_blocks_are_orthogonal_and_rows_have_gaussian_lengths() {
        let d = 6;
        let mut rng = stream_rng(5, StreamPurpose::Trial, 0, 0);
        let mut squared = Vec::new();
        for _ in 0..400 {
            let p = Projections::sample_orthogonal(2 * d + 1, d, &mut rng).unwrap();
            let rows: Vec<&[f64]> = p.rows().collect();
            for block in rows.chunks(d) {
                for (i, u) in block.iter().enumerate() {
                    for v in &block[..i] {
                        let dot: f64 = u.iter().zip(v.iter()).map(|(a, b)| a * b).sum();
                        assert!(dot.abs() < 1e-9, "rows of a block are orthogonal: {dot}");
                    }
                }
            }
            squared.extend(p.squared_norms());
        }
        // |ω|² ~ χ²_d: mean d, variance 2d; 5200 rows give a standard error of sqrt(2d/5200).
        let (mean, se) = crate::numerics::stats::mean_and_standard_error(&squared);
        assert!((mean - d as f64).abs() < 4.0 * se, "{mean} ± {se}");
        let variance = squared.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>()
            / (squared.len() - 1) as f64;
        assert!(
            (variance / (2.0 * d as f64) - 1.0).abs() < 0.15,
            "{variance}"
        );
    }

    #[test]
    fn an_orthogonal_prefix_is_a_shorter_draw() {
        let long =
            Projections::sample_orthogonal(20, 4, &mut stream_rng(1, StreamPurpose::Trial, 0, 0))
                .unwrap();
        let short =
            Projections::sample_orthogonal(7, 4, &mut stream_rng(1, StreamPurpose::Trial, 0, 0))
                .unwrap();
        assert_eq!(
            long.rows().take(7).collect::<Vec<_>>(),
            short.rows().collect::<Vec<_>>()
        );
    }
}
