//! How the study measures: wall time per run in batches, the dense kernel's rate, and a
//! method's errors against exact attention (its output and its rows).

use web_time::Instant;

use super::series::{RUNS, TV_ROWS};
use crate::numerics::attention::long::{FeatureMap32, Sequence};
use crate::numerics::estimators::Side;
use crate::numerics::packed_linear::PackedLinear;

/// Milliseconds of `work`.
fn time_ms<T>(work: impl FnOnce() -> T) -> (f64, T) {
    let start = Instant::now();
    let out = work();
    (start.elapsed().as_secs_f64() * 1e3, out)
}

/// A batch of runs lasts at least this long: Firefox's `performance.now()` ticks in whole
/// milliseconds, so a 0.1 ms run timed alone reads 0 or 1.
pub const MIN_BATCH_MS: f64 = 10.0;

/// Milliseconds per run of `work`, repeated until a batch lasts [`MIN_BATCH_MS`] (at most 1,000
/// runs), and the last run's result.
fn time_batch<T>(mut work: impl FnMut() -> T) -> (f64, T) {
    let start = Instant::now();
    let mut count = 1u32;
    let mut out = work();
    while start.elapsed().as_secs_f64() * 1e3 < MIN_BATCH_MS && count < 1_000 {
        out = work();
        count += 1;
    }
    (start.elapsed().as_secs_f64() * 1e3 / f64::from(count), out)
}

/// Time per run in up to [`RUNS`] batches (one when the first run takes over half the budget),
/// after one untimed warm-up run when a run is short (the first call of a kernel pays for its
/// allocations and, in a worker, the compiler's tier-up), and the last run's result.
pub(super) fn timed_runs<T>(budget_ms: f64, mut work: impl FnMut() -> T) -> (Vec<f64>, T) {
    let (warm_up, mut out) = time_ms(&mut work);
    if warm_up > budget_ms / 2.0 {
        return (vec![warm_up], out);
    }
    let mut runs = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let (ms, result) = time_batch(&mut work);
        runs.push(ms);
        out = result;
    }
    (runs, out)
}

/// The dense kernel's multiply-adds per second: MiniLM's feed-forward layer (384 → 1536) on
/// 128 rows, the fastest of seven runs after two warm-ups (one run is 75 M multiply-adds, a few
/// milliseconds: a median still caught the CPU's clock ramping up or another process).
pub fn dense_rate() -> f64 {
    let (inputs, outputs, rows) = (384, 1536, 128);
    let weight: Vec<f32> = (0..inputs * outputs)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 500.0)
        .collect();
    let layer = PackedLinear::new(&weight, &vec![0.0; outputs], inputs, outputs);
    let x: Vec<f32> = (0..rows * inputs).map(|i| (i % 13) as f32 / 13.0).collect();
    let mut y = vec![0.0f32; rows * outputs];
    let fastest = (0..9)
        .map(|_| time_ms(|| layer.apply(&x, rows, &mut y)).0)
        .skip(2)
        .fold(f64::INFINITY, f64::min)
        .max(1e-3);
    layer.multiply_adds(rows) as f64 / (fastest / 1e3)
}

/// `‖a − b‖_F / ‖b‖_F` over the rows where `a` is finite.
pub(super) fn relative_error(a: &[f32], b: &[f32], dv: usize) -> Option<f64> {
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (ra, rb) in a.chunks_exact(dv).zip(b.chunks_exact(dv)) {
        if ra.iter().all(|x| x.is_finite()) {
            for (x, y) in ra.iter().zip(rb) {
                diff += (f64::from(*x) - f64::from(*y)).powi(2);
                norm += f64::from(*y).powi(2);
            }
        }
    }
    (norm > 0.0).then(|| (diff / norm).sqrt())
}

/// The mean total variation of [`TV_ROWS`] evenly spaced rows of P̂ (from `map`) against P.
/// Keys' features are made a chunk at a time (Taylor-2 at d = 64 has 4,161 per token: all of
/// them at L = 16,384 would take 270 MB).
pub(super) fn mean_row_tv(map: &FeatureMap32, seq: &Sequence<'_>) -> Option<f64> {
    const CHUNK: usize = 64;
    let (len, d, size) = (seq.len, seq.d, map.size());
    let rows: Vec<usize> = (0..TV_ROWS).map(|r| r * len / TV_ROWS).collect();
    let mut scratch = vec![0.0f32; CHUNK * map.scratch_per_token().max(1)];
    let mut query_features = vec![0.0f32; rows.len() * size];
    let mut query_shifts = vec![0.0f32; rows.len()];
    for (r, &i) in rows.iter().enumerate() {
        map.features(
            &seq.q[i * d..(i + 1) * d],
            1,
            Side::Query,
            &mut query_features[r * size..(r + 1) * size],
            &mut query_shifts[r..r + 1],
            &mut scratch,
        );
    }
    // φ(q_i)·ψ(k_j) without the keys' factors, and those factors' logs.
    let mut dots = vec![0.0f64; rows.len() * len];
    let mut key_shifts = vec![0.0f32; len];
    let mut chunk = vec![0.0f32; CHUNK * size];
    for j0 in (0..len).step_by(CHUNK) {
        let count = CHUNK.min(len - j0);
        map.features(
            &seq.k[j0 * d..(j0 + count) * d],
            count,
            Side::Key,
            &mut chunk,
            &mut key_shifts[j0..j0 + count],
            &mut scratch,
        );
        for (r, phi) in query_features.chunks_exact(size).enumerate() {
            for c in 0..count {
                let psi = &chunk[c * size..(c + 1) * size];
                let dot: f32 = phi.iter().zip(psi).map(|(a, b)| a * b).sum();
                dots[r * len + j0 + c] = f64::from(dot);
            }
        }
    }
    let key_max = key_shifts.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    let mut total = 0.0;
    let mut counted = 0;
    for (r, &i) in rows.iter().enumerate() {
        let q = &seq.q[i * d..(i + 1) * d];
        let approx: Vec<f64> = (0..len)
            .map(|j| dots[r * len + j] * f64::from(key_shifts[j] - key_max).exp())
            .collect();
        let den: f64 = approx.iter().sum();
        if !(den.is_finite() && den > 0.0) {
            continue;
        }
        let logits: Vec<f64> = (0..len)
            .map(|j| {
                q.iter()
                    .zip(&seq.k[j * d..(j + 1) * d])
                    .map(|(a, b)| f64::from(*a) * f64::from(*b))
                    .sum()
            })
            .collect();
        let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let exact: Vec<f64> = logits.iter().map(|s| (s - max).exp()).collect();
        let exact_total: f64 = exact.iter().sum();
        total += 0.5
            * approx
                .iter()
                .zip(&exact)
                .map(|(a, e)| (a / den - e / exact_total).abs())
                .sum::<f64>();
        counted += 1;
    }
    (counted > 0).then(|| total / counted as f64)
}
