//! The study itself: each length timed, exact attention against each method, with its error.

use web_time::Instant;

use super::crossover::crossovers;
use super::report::LengthsReport;
use super::series::*;
use crate::lab::attention::methods::{draw_rng, lln_constants, method_settings, prepare_with};
use crate::lab::config::ExperimentConfig;
use crate::numerics::attention::AttentionError;
use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::gaussian_head::{GaussianHead, SampledSequence};
use crate::numerics::attention::heads::HeadSet;
use crate::numerics::attention::long::{
    FeatureMap32, LinearForm, Sequence, exact_multiply_adds, flash_attention, flash_memory_bytes,
    linear_attention_f32, linear_memory_bytes, linear_multiply_adds,
};
use crate::numerics::attention::methods::stream_index;
use crate::numerics::estimators::Side;
use crate::numerics::packed_linear::PackedLinear;
use crate::numerics::rng::{StreamPurpose, stream_rng};
use crate::numerics::stats::median;

/// Tokens the methods are fitted on (the data-chosen A reads moments; more tokens change
/// nothing but the fit's cost).
const FIT_TOKENS: usize = 512;

/// The lengths a configuration measures: 128, 256, … up to `lmax`.
pub fn study_lengths(length_max: usize) -> Vec<usize> {
    std::iter::successors(Some(FIRST_LENGTH), |l| Some(l * 2))
        .take_while(|&l| l <= length_max.min(MAX_LENGTH))
        .collect()
}

/// The projections m measured: a quarter of the chosen m (at least 4) and m.
pub fn study_features(m: usize) -> Vec<usize> {
    let mut features = vec![(m / 4).max(4), m.max(1)];
    features.dedup();
    features
}

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
fn timed_runs<T>(budget_ms: f64, mut work: impl FnMut() -> T) -> (Vec<f64>, T) {
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
fn relative_error(a: &[f32], b: &[f32], dv: usize) -> Option<f64> {
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
fn mean_row_tv(map: &FeatureMap32, seq: &Sequence<'_>) -> Option<f64> {
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

/// One method's map at one head size and m, or why it has none.
struct Timed {
    kernel: Kernel,
    map: FeatureMap32,
}

/// The methods' maps at head size `d` (fitted on a prefix of `sample`), each at every m.
fn method_maps(
    config: &ExperimentConfig,
    sample: &SampledSequence,
    features: &[usize],
    skipped: &mut Vec<Skipped>,
) -> Result<Vec<Timed>, AttentionError> {
    let d = sample.d;
    let n = sample.len.min(FIT_TOKENS);
    let widen = |x: &[f32]| x.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
    let data = AttentionData::new(
        n,
        d,
        d,
        widen(&sample.q[..n * d]),
        widen(&sample.k[..n * d]),
        widen(&sample.v[..n * d]),
    )?;
    let lln = lln_constants(config, d)?;
    let mut timed = Vec::new();
    for &method in &config.attention.methods {
        let mut reason = None;
        for &m in features {
            let mut settings = method_settings(config);
            settings.features = m;
            let fitted = match prepare_with(method, &data, &settings, lln.as_ref()) {
                Ok(fitted) => fitted,
                Err(e) => {
                    reason = Some(e.to_string());
                    break;
                }
            };
            match fitted.batched_map(d, &settings, &mut draw_rng(config.seed, method, 0)) {
                Some(Ok(map)) => {
                    let features = map.size();
                    timed.push(Timed {
                        kernel: Kernel::Method {
                            method,
                            m: if method.is_random() { m } else { 0 },
                            features,
                        },
                        map,
                    });
                    // A deterministic map does not depend on m: one series.
                    if !method.is_random() {
                        break;
                    }
                }
                Some(Err(e)) => {
                    reason = Some(e.to_string());
                    break;
                }
                None => {
                    reason = Some(if method.is_quadratic() {
                        "quadratic by construction: not a linear-time method".into()
                    } else {
                        "no batched f32 form of its map (complex A, a dense P, a learned or \
                         sampled scheme)"
                            .into()
                    });
                    break;
                }
            }
        }
        // Said once, at the first head size (the reason is the same at both).
        if let Some(reason) = reason
            && d == GaussianHead::HEAD_SIZES[0]
        {
            skipped.push(Skipped { method, reason });
        }
    }
    Ok(timed)
}

/// Runs the study for `config` on the chosen real head's statistics.
pub fn length_study(
    config: &ExperimentConfig,
    heads: &dyn HeadSet,
) -> Result<LengthsReport, AttentionError> {
    let attention = &config.attention;
    let lengths = study_lengths(attention.length_max);
    if lengths.is_empty() {
        return Err(AttentionError::Data(format!(
            "the length study needs lmax of at least {FIRST_LENGTH}"
        )));
    }
    let features = study_features(attention.features);
    let head_sizes = GaussianHead::head_sizes(heads.shape().head_dim);
    let dense_rate = dense_rate();
    let budget_ms = POINT_BUDGET_MS;
    let mut series = Vec::new();
    let mut skipped = Vec::new();
    for &d in &head_sizes {
        let model = GaussianHead::fit(heads, attention.layer, attention.head, d)?;
        let mut fit_rng = stream_rng(
            config.seed,
            StreamPurpose::Attention,
            stream_index("lengths"),
            d as u64,
        );
        let fit_sample = model.sample(FIT_TOKENS, &mut fit_rng);
        let timed = method_maps(config, &fit_sample, &features, &mut skipped)?;
        let exact_forms = [LinearForm::Bidirectional, LinearForm::CausalChunked];
        let linear_forms = [
            LinearForm::Bidirectional,
            LinearForm::CausalPrefix,
            LinearForm::CausalChunked,
        ];
        let first = series.len();
        for form in exact_forms {
            series.push(LengthSeries {
                d,
                kernel: Kernel::Exact,
                form,
                points: Vec::new(),
                stopped_at: None,
            });
        }
        for t in &timed {
            for form in linear_forms {
                series.push(LengthSeries {
                    d,
                    kernel: t.kernel,
                    form,
                    points: Vec::new(),
                    stopped_at: None,
                });
            }
        }
        for &len in &lengths {
            let mut rng = stream_rng(
                config.seed,
                StreamPurpose::Attention,
                stream_index("lengths"),
                (d * 1_000_000 + len) as u64,
            );
            let sample = model.sample(len, &mut rng);
            let seq = Sequence::new(len, d, d, &sample.q, &sample.k, &sample.v)
                .ok_or_else(|| AttentionError::Data("sampled shapes".into()))?;
            // Exact attention in both forms: the reference outputs (computed untimed if its
            // series stopped, so that the methods' errors are still measured).
            let mut exact_outputs = Vec::new();
            for (s, form) in exact_forms.iter().enumerate() {
                let series = &mut series[first + s];
                let causal = form.is_causal();
                if series.stopped_at.is_some() {
                    exact_outputs.push(flash_attention(&seq, causal));
                    continue;
                }
                let (runs_ms, output) = timed_runs(budget_ms, || flash_attention(&seq, causal));
                let multiply_adds = exact_multiply_adds(len, d, d, causal);
                push_point(
                    series,
                    len,
                    runs_ms,
                    multiply_adds,
                    dense_rate,
                    budget_ms,
                    flash_memory_bytes(len, d),
                    None,
                    None,
                    0,
                );
                exact_outputs.push(output);
            }
            for (t, timed) in timed.iter().enumerate() {
                for (f, form) in linear_forms.iter().enumerate() {
                    let series =
                        &mut series[first + exact_forms.len() + t * linear_forms.len() + f];
                    if series.stopped_at.is_some() {
                        continue;
                    }
                    let (runs_ms, run) =
                        timed_runs(budget_ms, || linear_attention_f32(&timed.map, &seq, *form));
                    let exact = &exact_outputs[usize::from(form.is_causal())];
                    let error = relative_error(&run.output, exact, d);
                    let tv = (*form == LinearForm::Bidirectional)
                        .then(|| mean_row_tv(&timed.map, &seq))
                        .flatten();
                    let multiply_adds = linear_multiply_adds(&timed.map, len, d, *form);
                    let memory = linear_memory_bytes(&timed.map, d, *form);
                    push_point(
                        series,
                        len,
                        runs_ms,
                        multiply_adds,
                        dense_rate,
                        budget_ms,
                        memory,
                        error,
                        tv,
                        run.bad_rows,
                    );
                }
            }
        }
    }
    let exact_rate = series
        .iter()
        .filter(|s| s.kernel == Kernel::Exact)
        .flat_map(|s| &s.points)
        .map(|p| p.multiply_adds / (p.ms / 1e3))
        .filter(|r| r.is_finite())
        .fold(0.0, f64::max);
    let crossovers = crossovers(&series);
    Ok(LengthsReport {
        layer: attention.layer,
        head: attention.head,
        lengths,
        head_sizes,
        features,
        dense_rate,
        exact_rate,
        budget_ms,
        series,
        crossovers,
        skipped,
    })
}

#[allow(clippy::too_many_arguments)]
fn push_point(
    series: &mut LengthSeries,
    len: usize,
    runs_ms: Vec<f64>,
    multiply_adds: f64,
    dense_rate: f64,
    budget_ms: f64,
    memory_bytes: f64,
    output_error: Option<f64>,
    row_tv: Option<f64>,
    bad_rows: usize,
) {
    let ms = median(&runs_ms).unwrap_or(f64::NAN);
    if runs_ms.iter().any(|&r| r > budget_ms) {
        series.stopped_at = Some(len * 2);
    }
    series.points.push(LengthPoint {
        len,
        ms,
        runs_ms,
        multiply_adds,
        model_ms: multiply_adds / dense_rate * 1e3,
        memory_bytes,
        output_error,
        row_tv,
        bad_rows,
    });
}

#[cfg(test)]
mod tests;
