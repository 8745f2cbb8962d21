//! Couplings of the rows of ω beyond i.i.d. and orthogonal blocks (REFERENCE.md, "Simplex
//! random features" and "Randomised quasi-Monte Carlo ω"):
//! - **simplex blocks** (Reid et al., ICML 2023): d rows of a block point to the vertices of a
//!   regular simplex, `ω_i = ρ_i R s_i` with `s_i = √(d/(d−1)) (e_i − 𝟙/d)` (pairwise dot
//!   products −1/(d−1)), R a Haar-random rotation and `ρ_i ~ χ_d` independent;
//! - **randomised quasi-Monte Carlo**: the Halton sequence (prime bases 2, 3, 5, … per
//!   coordinate, points 0 … m − 1), shifted at random modulo 1 (Cranley–Patterson) and mapped
//!   through Φ⁻¹ coordinate by coordinate.
//!
//! Each keeps every ω_k marginally N(0, I_d) (a uniform direction times a χ_d length; a
//! uniformly shifted point is uniform on the cube), so every estimator that averages a feature
//! over the ω_k stays unbiased; what changes is how the rows vary together, hence the MSE.

use rand::Rng;
#[cfg(feature = "optimised-a")]
use rand::RngExt;
#[cfg(feature = "optimised-a")]
use rand::distr::Open01;
use serde::{Deserialize, Serialize};
#[cfg(feature = "optimised-a")]
use statrs::distribution::{ContinuousCDF, Normal};

use super::{EstimatorError, Projections, orthonormalise};
use crate::numerics::portable::StandardNormal;

/// How the rows of ω are drawn together (URL `coupling`, `--coupling`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Coupling {
    #[default]
    /// Independent rows.
    Iid,
    /// Blocks of d mutually orthogonal rows with χ_d lengths (Performer's ORF).
    Orthogonal,
    /// Blocks of d rows towards a regular simplex's vertices with χ_d lengths.
    Simplex,
    /// A randomly shifted Halton sequence through Φ⁻¹.
    Rqmc,
}

impl Coupling {
    /// Every coupling, in the order the page lists them.
    pub const ALL: [Coupling; 4] = [
        Coupling::Iid,
        Coupling::Orthogonal,
        Coupling::Simplex,
        Coupling::Rqmc,
    ];

    /// Its stable id.
    pub fn id(self) -> &'static str {
        match self {
            Coupling::Iid => "iid",
            Coupling::Orthogonal => "orthogonal",
            Coupling::Simplex => "simplex",
            Coupling::Rqmc => "rqmc",
        }
    }

    /// How the page names it.
    pub fn label(self) -> &'static str {
        match self {
            Coupling::Iid => "i.i.d.",
            Coupling::Orthogonal => "orthogonal-block",
            Coupling::Simplex => "simplex-block",
            Coupling::Rqmc => "randomised quasi-Monte Carlo",
        }
    }

    /// Whether only `full-worker` draws it: the first view's `kernel-worker` is built without
    /// the simplex and RQMC samplers (feature `optimised-a`), to keep the first download small.
    pub fn needs_full_worker(self) -> bool {
        matches!(self, Coupling::Simplex | Coupling::Rqmc)
    }

    /// The coupling with this id.
    pub fn from_id(id: &str) -> Option<Coupling> {
        Coupling::ALL.into_iter().find(|c| c.id() == id)
    }
}

impl Projections {
    /// Draws `m` projections in `R^d` coupled as `coupling` says.
    pub fn sample_coupled<R: Rng + ?Sized>(
        coupling: Coupling,
        m: usize,
        d: usize,
        rng: &mut R,
    ) -> Result<Self, EstimatorError> {
        let mut projections = Self::zeroed(m, d)?;
        projections.resample_coupled(coupling, rng)?;
        Ok(projections)
    }

    /// Redraws every ω in place, coupled as `coupling` says. Each coupling draws whole blocks
    /// (or, for RQMC, its shift first), so the first rows of a draw are a shorter draw.
    /// In a build without the feature `optimised-a` (`kernel-worker`) simplex and RQMC are an
    /// error: the page sends such a configuration to `full-worker`.
    pub fn resample_coupled<R: Rng + ?Sized>(
        &mut self,
        coupling: Coupling,
        rng: &mut R,
    ) -> Result<(), EstimatorError> {
        match coupling {
            Coupling::Iid => self.resample(rng),
            Coupling::Orthogonal => self.resample_orthogonal(rng),
            #[cfg(feature = "optimised-a")]
            Coupling::Simplex => self.resample_simplex(rng),
            #[cfg(feature = "optimised-a")]
            Coupling::Rqmc => self.resample_rqmc(rng),
            #[cfg(not(feature = "optimised-a"))]
            Coupling::Simplex | Coupling::Rqmc => {
                return Err(EstimatorError::Fit(format!(
                    "the {} coupling is not in this build (feature `optimised-a`): it runs in full-worker",
                    coupling.id()
                )));
            }
        }
        Ok(())
    }

    /// Redraws every ω in place as simplex blocks: for each block a Haar-random orthonormal
    /// frame `b_1 … b_d` (rows of a Gram–Schmidt-orthonormalised Gaussian matrix), directions
    /// `√(d/(d−1)) (b_i − b̄)` (unit vectors, pairwise dot products −1/(d−1): `R s_i` with `R`
    /// the frame), each scaled by an independent χ_d length. A last partial block takes the
    /// first rows of a full one. In d = 1 a simplex has one vertex: the row is `ρ b_1`, Gaussian.
    #[cfg(feature = "optimised-a")]
    pub fn resample_simplex<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        let d = self.d;
        let mut block = vec![0.0f64; d * d];
        let mut mean = vec![0.0f64; d];
        let spread = if d > 1 {
            (d as f64 / (d as f64 - 1.0)).sqrt()
        } else {
            0.0
        };
        for rows in self.omega.chunks_mut(d * d) {
            haar_frame(&mut block, d, rng);
            mean.iter_mut().for_each(|m| *m = 0.0);
            for frame_row in block.chunks_exact(d) {
                for (m, b) in mean.iter_mut().zip(frame_row) {
                    *m += b / d as f64;
                }
            }
            for (frame_row, target) in block.chunks_exact(d).zip(rows.chunks_mut(d)) {
                let length = chi_length(d, rng);
                for ((t, b), m) in target.iter_mut().zip(frame_row).zip(&mean) {
                    let direction = if d > 1 { spread * (b - m) } else { *b };
                    *t = direction * length;
                }
            }
        }
    }

    /// Redraws every ω in place as randomised quasi-Monte Carlo points: row k (from 0) is
    /// `Φ⁻¹(frac(h_j(k) + u_j))` in coordinate j, with `h_j` the radical inverse in the j-th
    /// prime base with its digits scrambled by a random permutation `π_j` of `1 … b − 1`
    /// (0 kept, so a finite k has finitely many digits), and one uniform shift `u_j` per
    /// coordinate for the whole set (the point 0 included: shifted, it is as good as any, and
    /// the first `b^n` points of base b still fall one in each of the `b^n` strata of their
    /// coordinate, as a digit permutation maps strata to strata).
    ///
    /// Why scramble: the plain Halton sequence's coordinates in large prime bases move in
    /// lock-step for the first points (in d = 50 the last bases exceed 200, more than the m of a
    /// typical draw), which made the plain shifted sequence worse than i.i.d. ω at d = 50,
    /// m = 64 on the page's default data; random digit permutations break that correlation
    /// (Braaten and Weller 1979; Owen 2017). The shift alone keeps every row N(0, I).
    #[cfg(feature = "optimised-a")]
    pub fn resample_rqmc<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        let d = self.d;
        let bases = first_primes(d);
        let shifts: Vec<f64> = (0..d).map(|_| rng.sample(Open01)).collect();
        let permutations: Vec<Vec<u64>> = bases
            .iter()
            .map(|&base| digit_permutation(base, rng))
            .collect();
        let normal = Normal::standard();
        for (k, row) in self.omega.chunks_mut(d).enumerate() {
            for (((w, &base), shift), permutation) in
                row.iter_mut().zip(&bases).zip(&shifts).zip(&permutations)
            {
                let point =
                    (scrambled_radical_inverse(k as u64, base, permutation) + shift).fract();
                // Keep Φ⁻¹ finite: a point on the cube's edge has probability zero.
                let point = point.clamp(f64::MIN_POSITIVE, 1.0 - f64::EPSILON);
                *w = normal.inverse_cdf(point);
            }
        }
    }
}

/// A Haar-random orthonormal frame in the rows of `block` (`d × d`): a Gaussian matrix
/// orthonormalised row by row, redrawn in the probability-zero case of a dependent row.
pub(super) fn haar_frame<R: Rng + ?Sized>(block: &mut [f64], d: usize, rng: &mut R) {
    loop {
        for w in block.iter_mut() {
            *w = StandardNormal.sample(rng);
        }
        if orthonormalise(block, d) {
            return;
        }
    }
}

/// A χ_d length: the norm of a fresh d-dimensional Gaussian vector.
pub(super) fn chi_length<R: Rng + ?Sized>(d: usize, rng: &mut R) -> f64 {
    (0..d)
        .map(|_| {
            let g = StandardNormal.sample(rng);
            g * g
        })
        .sum::<f64>()
        .sqrt()
}

#[cfg(feature = "optimised-a")]
/// `k` written in base `base`, its digits mirrored after the point (van der Corput).
fn scrambled_radical_inverse(mut k: u64, base: u64, permutation: &[u64]) -> f64 {
    let (mut value, mut scale) = (0.0, 1.0 / base as f64);
    while k > 0 {
        let digit = (k % base) as usize;
        value += permutation.get(digit).copied().unwrap_or(digit as u64) as f64 * scale;
        k /= base;
        scale /= base as f64;
    }
    value
}

#[cfg(feature = "optimised-a")]
/// A uniformly random permutation of the digits `0 … base − 1` that keeps 0 (Fisher–Yates on
/// `1 … base − 1`).
fn digit_permutation<R: Rng + ?Sized>(base: u64, rng: &mut R) -> Vec<u64> {
    let mut digits: Vec<u64> = (0..base).collect();
    for i in (2..digits.len()).rev() {
        let j = rng.random_range(1..=i);
        digits.swap(i, j);
    }
    digits
}

#[cfg(feature = "optimised-a")]
/// The first `count` primes (a Halton sequence's bases).
fn first_primes(count: usize) -> Vec<u64> {
    let mut primes: Vec<u64> = Vec::with_capacity(count);
    let mut candidate = 2u64;
    while primes.len() < count {
        if primes
            .iter()
            .take_while(|p| *p * *p <= candidate)
            .all(|p| !candidate.is_multiple_of(*p))
        {
            primes.push(candidate);
        }
        candidate += 1;
    }
    primes
}

#[cfg(test)]
mod tests;
