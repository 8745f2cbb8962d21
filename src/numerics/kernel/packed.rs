//! ω packed for the kernel: f32 panels of [`COLUMNS`] projections, with the rows' f64 norms.

use super::COLUMNS;
use crate::numerics::estimators::Projections;

/// `ω` in `f32`, packed in panels of [`COLUMNS`] projections: panel `p` holds, for each
/// coordinate `j`, the `j`-th components of projections `p·COLUMNS .. p·COLUMNS + COLUMNS`
/// side by side. The kernel then reads each panel front to back (d × 32 bytes), instead of
/// striding through a `d × m` matrix whose rows, 4 KB apart at m = 1024, fall into the same
/// cache sets.
#[derive(Clone, Debug, PartialEq)]
pub struct TransposedOmega {
    pub(super) m: usize,
    pub(super) d: usize,
    /// `m` rounded up to a multiple of COLUMNS.
    pub(super) stride: usize,
    /// `data[(p * d + j) * COLUMNS + l] = ω_{p·COLUMNS + l}[j]`; padding projections are zero
    /// and never summed.
    pub(super) data: Vec<f32>,
    /// `|ω_k|²` in f64 (GERF weighs each feature by it).
    pub(super) squared_norms: Vec<f64>,
}

impl TransposedOmega {
    /// The same projections as `omega` (same draws, same order), packed and rounded.
    pub fn new(omega: &Projections) -> Self {
        let (m, d) = (omega.m(), omega.d());
        let stride = m.div_ceil(COLUMNS) * COLUMNS;
        let mut data = vec![0.0f32; stride * d];
        for (k, row) in omega.rows().enumerate() {
            let (panel, lane) = (k / COLUMNS, k % COLUMNS);
            for (j, w) in row.iter().enumerate() {
                data[(panel * d + j) * COLUMNS + lane] = *w as f32;
            }
        }
        Self {
            m,
            d,
            stride,
            data,
            squared_norms: omega.squared_norms(),
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

    /// The first `m` projections (all of them if `m` is larger): a copy of the leading
    /// panels, since a prefix of the projections is a prefix of the packed data.
    pub fn prefix(&self, m: usize) -> Self {
        let m = m.clamp(1, self.m);
        let stride = m.div_ceil(COLUMNS) * COLUMNS;
        Self {
            m,
            d: self.d,
            stride,
            data: self.data[..stride * self.d].to_vec(),
            squared_norms: self.squared_norms[..m].to_vec(),
        }
    }
}
