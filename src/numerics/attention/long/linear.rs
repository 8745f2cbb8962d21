//! Linear attention for long sequences, in f32: `ô_i = φ(q_i)·S / φ(q_i)·z` with
//! `S = Σ_j ψ(k_j) v_jᵀ` and `z = Σ_j ψ(k_j)` (REFERENCE.md, "The attention level"), over every
//! key ([`LinearForm::Bidirectional`]) or over `j ≤ i` (causal): Performer's prefix sums, one
//! token at a time ([`LinearForm::CausalPrefix`], Choromanski et al. 2021, eq. 11), or the
//! chunked form that does each chunk's own pairs as a small masked quadratic product and the
//! earlier chunks through S ([`LinearForm::CausalChunked`], as FLASH and the linear
//! transformers' training code do). Features are made [`CHUNK`] tokens at a time, so memory is
//! O(D·dv + CHUNK·D) whatever L.
//!
//! Keys' features carry a common factor `e^{−M}` (M the largest key shift so far, the running
//! maximum rescaling S and z when it grows, as the online softmax does), which cancels in the
//! ratio; a query's own factor cancels between its numerator and denominator.

use serde::{Deserialize, Serialize};

use crate::numerics::estimators::Side;

use super::Sequence;
use super::features::FeatureMap32;
use super::flash::{lane_dot, lane_max};
use super::gemm::{MatRef, exp_approx, gemm};
use crate::numerics::attention::linear::NEAR_ZERO_DENOMINATOR;
use crate::numerics::simd::{F4, transpose4};

/// Tokens whose features are made at once, and the causal chunk.
pub const CHUNK: usize = 64;

/// Which linear attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LinearForm {
    /// Every query against every key.
    Bidirectional,
    /// Causal, by prefix sums: S and z updated token by token.
    CausalPrefix,
    /// Causal, by chunks: within a chunk the masked product `(Φ Ψᵀ ∘ M) V`, across chunks S.
    CausalChunked,
}

impl LinearForm {
    pub fn is_causal(self) -> bool {
        self != LinearForm::Bidirectional
    }
}

/// What one run computed.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearRun {
    /// Outputs (L × dv); a row whose denominator is not usable is NaN.
    pub output: Vec<f32>,
    /// Rows with an unusable denominator: not finite, ≤ 0, or (signed features) below
    /// `NEAR_ZERO_DENOMINATOR · |φ_i| Σ_j |ψ_j|`, as the f64 code decides.
    pub bad_rows: usize,
}

/// Multiply-adds of a run: both sides' features (the projection), S and the outputs
/// (`2 L D dv`), the denominators (`2 L D`), and for the chunked form each chunk's own pairs
/// (`L · CHUNK/2 · (D + dv)` on average).
pub fn linear_multiply_adds(map: &FeatureMap32, len: usize, dv: usize, form: LinearForm) -> f64 {
    let (l, size) = (len as f64, map.size() as f64);
    let base = 2.0 * l * map.multiply_adds_per_token() + 2.0 * l * size * (dv as f64 + 1.0);
    match form {
        LinearForm::CausalChunked => base + l * (CHUNK as f64 / 2.0) * (size + dv as f64),
        _ => base,
    }
}

/// Working memory beyond the inputs and the output, in bytes: S, z, and the chunk's features,
/// their transpose, shifts and scratch (the chunked form also a CHUNK × CHUNK block).
pub fn linear_memory_bytes(map: &FeatureMap32, dv: usize, form: LinearForm) -> f64 {
    let size = map.size();
    let chunk = CHUNK * (3 * size + 2 + map.scratch_per_token());
    let block = if form == LinearForm::CausalChunked {
        CHUNK * CHUNK
    } else {
        0
    };
    4.0 * (size * dv + size + chunk + block) as f64
}

/// Buffers for one chunk of features.
pub(super) struct ChunkFeatures {
    size: usize,
    values: Vec<f32>,
    transposed: Vec<f32>,
    shifts: Vec<f32>,
    scratch: Vec<f32>,
}

impl ChunkFeatures {
    pub(super) fn new(map: &FeatureMap32) -> Self {
        Self::of_rows(map, CHUNK)
    }

    /// Buffers for at most `rows` (≤ [`CHUNK`]) tokens: a recurrent step makes one token's.
    pub(super) fn of_rows(map: &FeatureMap32, rows: usize) -> Self {
        let size = map.size();
        Self {
            size,
            values: vec![0.0; rows * size],
            transposed: Vec::new(),
            shifts: vec![0.0; rows],
            scratch: vec![0.0; rows * map.scratch_per_token().max(1)],
        }
    }

    pub(super) fn compute(&mut self, map: &FeatureMap32, u: &[f32], rows: usize, side: Side) {
        map.features(
            u,
            rows,
            side,
            &mut self.values,
            &mut self.shifts,
            &mut self.scratch,
        );
    }

    /// Ψᵀ of the first `rows` tokens (D × rows, stride [`CHUNK`]): four by four with
    /// [`transpose4`] (a scalar copy writes a row of Ψᵀ a stride apart per value), the edges
    /// plainly.
    fn transpose(&mut self, rows: usize) {
        let size = self.size;
        self.transposed.resize(size * CHUNK, 0.0);
        let (full_rows, full_features) = (rows - rows % 4, size - size % 4);
        for r in (0..full_rows).step_by(4) {
            for f in (0..full_features).step_by(4) {
                let block: [F4; 4] =
                    std::array::from_fn(|i| F4::load(&self.values[(r + i) * size + f..]));
                for (j, column) in transpose4(block).into_iter().enumerate() {
                    column.store(&mut self.transposed[(f + j) * CHUNK + r..]);
                }
            }
        }
        for r in 0..rows {
            let first = if r < full_rows { full_features } else { 0 };
            for f in first..size {
                self.transposed[f * CHUNK + r] = self.values[r * size + f];
            }
        }
    }
}

/// S, z and the running key maximum M.
#[derive(Clone, Debug)]
pub(super) struct KeyState {
    dv: usize,
    s: Vec<f32>,
    z: Vec<f32>,
    /// `Σ_j |ψ_j|` (Euclidean norms), for the signed maps' near-zero test.
    norm_sum: f32,
    key_max: f32,
}

impl KeyState {
    /// Bytes of S, z, the norm sum and M: what a recurrent head carries from token to token.
    pub(super) fn bytes(&self) -> usize {
        4 * (self.s.len() + self.z.len() + 2)
    }

    pub(super) fn new(size: usize, dv: usize) -> Self {
        Self {
            dv,
            s: vec![0.0; size * dv],
            z: vec![0.0; size],
            norm_sum: 0.0,
            key_max: f32::NEG_INFINITY,
        }
    }

    /// Makes M at least `shift` (rescaling S and z), then returns the weight `e^{shift − M}`.
    fn admit(&mut self, shift: f32) {
        if shift > self.key_max {
            let factor = exp_approx(self.key_max - shift);
            self.s.iter_mut().for_each(|x| *x *= factor);
            self.z.iter_mut().for_each(|x| *x *= factor);
            self.norm_sum *= factor;
            self.key_max = shift;
        }
    }

    /// Weighs each key row of `keys` by `e^{shift − M}` after admitting the chunk's largest.
    fn weigh(&mut self, keys: &mut ChunkFeatures, rows: usize) {
        let largest = lane_max(&keys.shifts[..rows]);
        self.admit(largest);
        for r in 0..rows {
            let w = exp_approx(keys.shifts[r] - self.key_max);
            keys.values[r * keys.size..(r + 1) * keys.size]
                .iter_mut()
                .for_each(|x| *x *= w);
        }
    }

    /// `S += Ψᵀ V`, `z += Σ ψ` for a weighed chunk whose transpose is made (and, for a signed
    /// map, the keys' norms: a positive map's denominators never read them).
    fn absorb(&mut self, keys: &ChunkFeatures, values: &[f32], rows: usize, positive: bool) {
        gemm(
            keys.size,
            self.dv,
            rows,
            MatRef {
                values: &keys.transposed,
                stride: CHUNK,
            },
            MatRef {
                values,
                stride: self.dv,
            },
            &mut self.s,
            self.dv,
            true,
        );
        for r in 0..rows {
            let psi = &keys.values[r * keys.size..(r + 1) * keys.size];
            for (z, x) in self.z.iter_mut().zip(psi) {
                *z += x;
            }
            if !positive {
                self.norm_sum += lane_dot(psi, psi).sqrt();
            }
        }
    }
}

/// Whether a row's denominator can be divided by: `scale` is `|φ_i| Σ_j |ψ_j|` (only read for a
/// signed map), as `linear::usable_denominator` decides in f64.
fn usable(den: f32, scale: f32, positive: bool) -> bool {
    den.is_finite() && den > 0.0 && (positive || den > NEAR_ZERO_DENOMINATOR as f32 * scale)
}

/// A row's denominator `φ_i·z + extra` and whether it is usable; `norm_sum` is `Σ_j |ψ_j|`
/// over the keys it covers (read only for a signed map: the scale `|φ_i| Σ_j |ψ_j|`).
pub(super) fn denominator(
    phi: &[f32],
    z: &[f32],
    extra: f32,
    norm_sum: f32,
    positive: bool,
) -> (f32, bool) {
    let den = lane_dot(phi, z) + extra;
    let scale = if positive {
        0.0
    } else {
        lane_dot(phi, phi).sqrt() * norm_sum
    };
    (den, usable(den, scale, positive))
}

/// Divides each output row by its denominator; marks unusable rows NaN. Returns their count.
pub(super) fn normalise(out: &mut [f32], dens: &[(f32, bool)], dv: usize) -> usize {
    let mut bad = 0;
    for (o, &(den, usable)) in out.chunks_exact_mut(dv).zip(dens) {
        if usable {
            let inverse = 1.0 / den;
            o.iter_mut().for_each(|x| *x *= inverse);
            if o.iter().any(|x| !x.is_finite()) {
                o.fill(f32::NAN);
                bad += 1;
            }
        } else {
            o.fill(f32::NAN);
            bad += 1;
        }
    }
    bad
}

/// Linear attention with `map` on `seq`, in the given form.
pub fn linear_attention_f32(map: &FeatureMap32, seq: &Sequence<'_>, form: LinearForm) -> LinearRun {
    match form {
        LinearForm::Bidirectional => bidirectional(map, seq),
        LinearForm::CausalPrefix => causal_prefix(map, seq),
        LinearForm::CausalChunked => causal_chunked(map, seq),
    }
}

fn bidirectional(map: &FeatureMap32, seq: &Sequence<'_>) -> LinearRun {
    let (len, d, dv, size) = (seq.len, seq.d, seq.dv, map.size());
    let mut state = KeyState::new(size, dv);
    let mut chunk = ChunkFeatures::new(map);
    let positive = map.is_positive();
    for j0 in (0..len).step_by(CHUNK) {
        let rows = CHUNK.min(len - j0);
        chunk.compute(map, &seq.k[j0 * d..(j0 + rows) * d], rows, Side::Key);
        state.weigh(&mut chunk, rows);
        chunk.transpose(rows);
        state.absorb(&chunk, &seq.v[j0 * dv..(j0 + rows) * dv], rows, positive);
    }
    let mut output = vec![0.0f32; len * dv];
    let mut dens = vec![(0.0f32, false); len];
    for i0 in (0..len).step_by(CHUNK) {
        let rows = CHUNK.min(len - i0);
        chunk.compute(map, &seq.q[i0 * d..(i0 + rows) * d], rows, Side::Query);
        gemm(
            rows,
            dv,
            size,
            MatRef {
                values: &chunk.values,
                stride: size,
            },
            MatRef {
                values: &state.s,
                stride: dv,
            },
            &mut output[i0 * dv..(i0 + rows) * dv],
            dv,
            false,
        );
        for r in 0..rows {
            let phi = &chunk.values[r * size..(r + 1) * size];
            dens[i0 + r] = denominator(phi, &state.z, 0.0, state.norm_sum, positive);
        }
    }
    let bad_rows = normalise(&mut output, &dens, dv);
    LinearRun { output, bad_rows }
}

fn causal_prefix(map: &FeatureMap32, seq: &Sequence<'_>) -> LinearRun {
    let mut state = KeyState::new(map.size(), seq.dv);
    let mut output = vec![0.0f32; seq.len * seq.dv];
    let dens = prefix_into(map, seq, &mut state, &mut output);
    let bad_rows = normalise(&mut output, &dens, seq.dv);
    LinearRun { output, bad_rows }
}

/// Performer's prefix sums over `seq`, continuing `state` (S, z and M after the keys before
/// it): each token's key admitted, then its query read against every key up to it. `output`
/// (len × dv, zeros) gets the numerators; the denominators are returned. A recurrent network's
/// step is this with one token ([`super::recurrent::RecurrentHead`]).
pub(super) fn prefix_into(
    map: &FeatureMap32,
    seq: &Sequence<'_>,
    state: &mut KeyState,
    output: &mut [f32],
) -> Vec<(f32, bool)> {
    let (len, d, dv, size) = (seq.len, seq.d, seq.dv, map.size());
    let mut keys = ChunkFeatures::of_rows(map, CHUNK.min(len));
    let mut queries = ChunkFeatures::of_rows(map, CHUNK.min(len));
    let mut dens = vec![(0.0f32, false); len];
    let positive = map.is_positive();
    for i0 in (0..len).step_by(CHUNK) {
        let rows = CHUNK.min(len - i0);
        keys.compute(map, &seq.k[i0 * d..(i0 + rows) * d], rows, Side::Key);
        queries.compute(map, &seq.q[i0 * d..(i0 + rows) * d], rows, Side::Query);
        for r in 0..rows {
            let i = i0 + r;
            state.admit(keys.shifts[r]);
            let w = exp_approx(keys.shifts[r] - state.key_max);
            let psi = &keys.values[r * size..(r + 1) * size];
            if !positive {
                state.norm_sum += w * lane_dot(psi, psi).sqrt();
            }
            let v = &seq.v[i * dv..(i + 1) * dv];
            for (f, &p) in psi.iter().enumerate() {
                let p = p * w;
                state.z[f] += p;
                for (s, x) in state.s[f * dv..(f + 1) * dv].iter_mut().zip(v) {
                    *s += p * x;
                }
            }
            let phi = &queries.values[r * size..(r + 1) * size];
            let o = &mut output[i * dv..(i + 1) * dv];
            for (f, &p) in phi.iter().enumerate() {
                for (o, s) in o.iter_mut().zip(&state.s[f * dv..(f + 1) * dv]) {
                    *o += p * s;
                }
            }
            dens[i] = denominator(phi, &state.z, 0.0, state.norm_sum, positive);
        }
    }
    dens
}

fn causal_chunked(map: &FeatureMap32, seq: &Sequence<'_>) -> LinearRun {
    let (len, d, dv, size) = (seq.len, seq.d, seq.dv, map.size());
    let mut state = KeyState::new(size, dv);
    let mut keys = ChunkFeatures::new(map);
    let mut queries = ChunkFeatures::new(map);
    let mut block = vec![0.0f32; CHUNK * CHUNK];
    let mut output = vec![0.0f32; len * dv];
    let mut dens = vec![(0.0f32, false); len];
    let positive = map.is_positive();
    for i0 in (0..len).step_by(CHUNK) {
        let rows = CHUNK.min(len - i0);
        keys.compute(map, &seq.k[i0 * d..(i0 + rows) * d], rows, Side::Key);
        queries.compute(map, &seq.q[i0 * d..(i0 + rows) * d], rows, Side::Query);
        // The chunk's keys may raise M: S and z are rescaled before the earlier chunks are read.
        state.weigh(&mut keys, rows);
        let out = &mut output[i0 * dv..(i0 + rows) * dv];
        let phi = MatRef {
            values: &queries.values,
            stride: size,
        };
        gemm(
            rows,
            dv,
            size,
            phi,
            MatRef {
                values: &state.s,
                stride: dv,
            },
            out,
            dv,
            false,
        );
        keys.transpose(rows);
        gemm(
            rows,
            rows,
            size,
            phi,
            MatRef {
                values: &keys.transposed,
                stride: CHUNK,
            },
            &mut block,
            CHUNK,
            false,
        );
        // The chunk's own keys up to each row count in its norm sum.
        let norms: Vec<f32> = (0..rows)
            .map(|r| {
                let psi = &keys.values[r * size..(r + 1) * size];
                if positive {
                    0.0
                } else {
                    lane_dot(psi, psi).sqrt()
                }
            })
            .collect();
        let mut running = state.norm_sum;
        for r in 0..rows {
            let row = &mut block[r * CHUNK..r * CHUNK + rows];
            row[r + 1..].fill(0.0);
            running += norms[r];
            let phi = &queries.values[r * size..(r + 1) * size];
            dens[i0 + r] = denominator(phi, &state.z, row.iter().sum::<f32>(), running, positive);
        }
        gemm(
            rows,
            dv,
            rows,
            MatRef {
                values: &block,
                stride: CHUNK,
            },
            MatRef {
                values: &seq.v[i0 * dv..],
                stride: dv,
            },
            out,
            dv,
            true,
        );
        // Ψᵀ was made for the chunk's own block above.
        state.absorb(&keys, &seq.v[i0 * dv..(i0 + rows) * dv], rows, positive);
    }
    let bad_rows = normalise(&mut output, &dens, dv);
    LinearRun { output, bad_rows }
}
