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
    /// The same projections as `omega` (same draws, same order), packed and rounded, with
    /// their squared norms in f64. Panel by panel: its COLUMNS rows are read side by side, so
    /// each panel is written front to back and the rows' norms accumulate in COLUMNS
    /// independent sums (each row's sum in its own order, `Σ_j ω_kj²` from j = 0: the bits of
    /// [`Projections::squared_norms`], which a row at a time waited on every addition's
    /// latency).
    pub fn new(omega: &Projections) -> Self {
        let (m, d) = (omega.m(), omega.d());
        let stride = m.div_ceil(COLUMNS) * COLUMNS;
        let rows = omega.as_slice();
        let mut data = vec![0.0f32; stride * d];
        let mut squared_norms = vec![0.0f64; m];
        for (p, (panel, norms)) in data
            .chunks_exact_mut(d * COLUMNS)
            .zip(squared_norms.chunks_mut(COLUMNS))
            .enumerate()
        {
            let panel_rows = &rows[p * COLUMNS * d..(p * COLUMNS + norms.len()) * d];
            let mut sums = [0.0f64; COLUMNS];
            for (j, slots) in panel.chunks_exact_mut(COLUMNS).enumerate() {
                for (l, (slot, sum)) in slots.iter_mut().zip(&mut sums).enumerate() {
                    if let Some(&w) = panel_rows.get(l * d + j) {
                        *slot = w as f32;
                        *sum += w * w;
                    }
                }
            }
            norms.copy_from_slice(&sums[..norms.len()]);
        }
        Self {
            m,
            d,
            stride,
            data,
            squared_norms,
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
