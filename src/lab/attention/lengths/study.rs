//! The study itself: each length timed, exact attention against each method, with its error;
//! all of it at once ([`length_study`], the command line's) or one [`LengthsUnit`] at a time
//! ([`measure_unit`], the page's workers'), the same measurements either way.

use super::crossover::crossovers;
use super::measure::{dense_rate, mean_row_tv, relative_error, timed_runs};
use super::report::LengthsReport;
use super::series::*;
use super::unit::{LengthsUnit, study_lengths};
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
use crate::numerics::rng::{StreamPurpose, stream_rng};
use crate::numerics::stats::median;

/// Tokens the methods are fitted on (the data-chosen A reads moments; more tokens change
/// nothing but the fit's cost).
const FIT_TOKENS: usize = 512;

/// Exact attention's forms, and the methods' (in the order of a head size's series).
const EXACT_FORMS: [LinearForm; 2] = [LinearForm::Bidirectional, LinearForm::CausalChunked];
const LINEAR_FORMS: [LinearForm; 3] = [
    LinearForm::Bidirectional,
    LinearForm::CausalPrefix,
    LinearForm::CausalChunked,
];

/// The projections m measured: a quarter of the chosen m (at least 4) and m.
pub fn study_features(m: usize) -> Vec<usize> {
    let mut features = vec![(m / 4).max(4), m.max(1)];
    features.dedup();
    features
}

/// One method's map at one head size and m, or why it has none.
struct Timed {
    kernel: Kernel,
    map: FeatureMap32,
}

/// The methods' maps at head size `d` (fitted on a prefix of `sample`), each at every m; a
/// method without one goes to `skipped` with its reason if `said_here` (the study's first
/// head size: the reason is the same at every one).
fn method_maps(
    config: &ExperimentConfig,
    sample: &SampledSequence,
    features: &[usize],
    said_here: bool,
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
        if let Some(reason) = reason
            && said_here
        {
            skipped.push(Skipped { method, reason });
        }
    }
    Ok(timed)
}

/// What every length of one head size shares: the fitted Gaussian and the methods' maps.
struct HeadSize {
    d: usize,
    model: GaussianHead,
    timed: Vec<Timed>,
}

impl HeadSize {
    /// Fits head size `d`: the chosen head's Gaussian, and unless `exact_only` each method's map
    /// on a sample of it (a method without a map is added to `skipped` if `said_here`).
    fn fit(
        config: &ExperimentConfig,
        heads: &dyn HeadSet,
        d: usize,
        features: &[usize],
        (exact_only, said_here): (bool, bool),
        skipped: &mut Vec<Skipped>,
    ) -> Result<Self, AttentionError> {
        let attention = &config.attention;
        let model = GaussianHead::fit(heads, attention.layer, attention.head, d)?;
        let mut fit_rng = stream_rng(
            config.seed,
            StreamPurpose::Attention,
            stream_index("lengths"),
            d as u64,
        );
        let timed = if exact_only {
            Vec::new()
        } else {
            let fit_sample = model.sample(FIT_TOKENS, &mut fit_rng);
            method_maps(config, &fit_sample, features, said_here, skipped)?
        };
        Ok(Self { d, model, timed })
    }

    /// Its series, empty: exact attention in both forms, then each map in three.
    fn series(&self) -> Vec<LengthSeries> {
        let empty = |kernel, form| LengthSeries {
            d: self.d,
            kernel,
            form,
            points: Vec::new(),
            stopped_at: None,
        };
        let exact = EXACT_FORMS.map(|form| empty(Kernel::Exact, form));
        let methods = self
            .timed
            .iter()
            .flat_map(|t| LINEAR_FORMS.map(|form| empty(t.kernel, form)));
        exact.into_iter().chain(methods).collect()
    }

    /// Times length `len` (all of it, or what `unit` times), one point added to each of
    /// `series` (this head size's, as [`HeadSize::series`] lists them) that has not stopped by
    /// `len`.
    fn measure(
        &self,
        seed: u64,
        len: usize,
        unit: Option<&LengthsUnit>,
        series: &mut [LengthSeries],
        dense_rate: f64,
    ) -> Result<(), AttentionError> {
        let measured = |form: LinearForm| unit.is_none_or(|u| u.measures(form));
        let time_exact = unit.is_none_or(LengthsUnit::times_exact);
        let time_methods = unit.is_none_or(LengthsUnit::times_methods);
        let (d, budget_ms) = (self.d, POINT_BUDGET_MS);
        let mut rng = stream_rng(
            seed,
            StreamPurpose::Attention,
            stream_index("lengths"),
            (d * 1_000_000 + len) as u64,
        );
        let sample = self.model.sample(len, &mut rng);
        let seq = Sequence::new(len, d, d, &sample.q, &sample.k, &sample.v)
            .ok_or_else(|| AttentionError::Data("sampled shapes".into()))?;
        let stopped = |s: &LengthSeries| s.stopped_at.is_some_and(|at| at <= len);
        // Exact attention: the reference outputs (computed untimed if its series stopped or
        // this unit times only the methods, so that the methods' errors are still measured).
        let mut exact_outputs: [Option<Vec<f32>>; 2] = [None, None];
        for (s, form) in EXACT_FORMS.iter().enumerate() {
            if !measured(*form) {
                continue;
            }
            let series = &mut series[s];
            let causal = form.is_causal();
            if stopped(series) || !time_exact {
                if time_methods {
                    exact_outputs[s] = Some(flash_attention(&seq, causal));
                }
                continue;
            }
            let (runs_ms, output) = timed_runs(budget_ms, || flash_attention(&seq, causal));
            let point = Measured {
                len,
                runs_ms,
                multiply_adds: exact_multiply_adds(len, d, d, causal),
                memory_bytes: flash_memory_bytes(len, d),
                output_error: None,
                row_tv: None,
                bad_rows: 0,
            };
            push_point(series, point, dense_rate, budget_ms);
            exact_outputs[s] = Some(output);
        }
        for (t, timed) in self.timed.iter().enumerate() {
            for (f, form) in LINEAR_FORMS.iter().enumerate() {
                let series = &mut series[EXACT_FORMS.len() + t * LINEAR_FORMS.len() + f];
                if !time_methods || !measured(*form) || stopped(series) {
                    continue;
                }
                let Some(exact) = &exact_outputs[usize::from(form.is_causal())] else {
                    continue;
                };
                let (runs_ms, run) =
                    timed_runs(budget_ms, || linear_attention_f32(&timed.map, &seq, *form));
                let point = Measured {
                    len,
                    runs_ms,
                    multiply_adds: linear_multiply_adds(&timed.map, len, d, *form),
                    memory_bytes: linear_memory_bytes(&timed.map, d, *form),
                    output_error: relative_error(&run.output, exact, d),
                    row_tv: (*form == LinearForm::Bidirectional)
                        .then(|| mean_row_tv(&timed.map, &seq))
                        .flatten(),
                    bad_rows: run.bad_rows,
                };
                push_point(series, point, dense_rate, budget_ms);
            }
        }
        Ok(())
    }
}

/// The lengths of `config`, or the error of a study too short to measure anything.
fn lengths_of(config: &ExperimentConfig) -> Result<Vec<usize>, AttentionError> {
    let lengths = study_lengths(config.attention.length_max);
    if lengths.is_empty() {
        return Err(AttentionError::Data(format!(
            "the length study needs lmax of at least {FIRST_LENGTH}"
        )));
    }
    Ok(lengths)
}

/// The report of `series` measured with `dense_rate` (the crossovers and exact attention's
/// best rate read from them).
#[allow(clippy::too_many_arguments)]
fn report_of(
    config: &ExperimentConfig,
    lengths: Vec<usize>,
    head_sizes: Vec<usize>,
    features: Vec<usize>,
    dense_rate: f64,
    series: Vec<LengthSeries>,
    skipped: Vec<Skipped>,
) -> LengthsReport {
    LengthsReport {
        layer: config.attention.layer,
        head: config.attention.head,
        lengths,
        head_sizes,
        features,
        dense_rate,
        exact_rate: exact_rate(&series),
        budget_ms: POINT_BUDGET_MS,
        crossovers: crossovers(&series),
        series,
        skipped,
    }
}

/// The best multiply-adds per second of exact attention over `series`' points.
pub(super) fn exact_rate(series: &[LengthSeries]) -> f64 {
    series
        .iter()
        .filter(|s| s.kernel == Kernel::Exact)
        .flat_map(|s| &s.points)
        .map(|p| p.multiply_adds / (p.ms / 1e3))
        .filter(|r| r.is_finite())
        .fold(0.0, f64::max)
}

/// Runs the whole study for `config` on the chosen real head's statistics, one length after
/// another on this thread (a series stops once a run exceeds the budget).
pub fn length_study(
    config: &ExperimentConfig,
    heads: &dyn HeadSet,
) -> Result<LengthsReport, AttentionError> {
    let lengths = lengths_of(config)?;
    let features = study_features(config.attention.features);
    let head_sizes = GaussianHead::head_sizes(heads.shape().head_dim);
    let dense_rate = dense_rate();
    let mut series = Vec::new();
    let mut skipped = Vec::new();
    for &d in &head_sizes {
        let said_here = head_sizes.first() == Some(&d);
        let head = HeadSize::fit(
            config,
            heads,
            d,
            &features,
            (false, said_here),
            &mut skipped,
        )?;
        let mut own = head.series();
        for &len in &lengths {
            head.measure(config.seed, len, None, &mut own, dense_rate)?;
        }
        series.extend(own);
    }
    Ok(report_of(
        config, lengths, head_sizes, features, dense_rate, series, skipped,
    ))
}

/// Measures one unit of `config`'s study: its report holds every series of the unit's head
/// size (exact attention's alone for a unit of exact attention alone), with a point at the
/// unit's length in the unit's forms and kernels (none in the others, nor in the series it
/// names as stopped), its own dense-kernel rate, and the study's lengths. An error
/// for a unit the configuration does not have (a message from elsewhere must not panic).
pub fn measure_unit(
    config: &ExperimentConfig,
    heads: &dyn HeadSet,
    unit: &LengthsUnit,
) -> Result<LengthsReport, AttentionError> {
    let lengths = lengths_of(config)?;
    let head_sizes = GaussianHead::head_sizes(heads.shape().head_dim);
    if !lengths.contains(&unit.len) || !head_sizes.contains(&unit.d) {
        return Err(AttentionError::Data(format!(
            "the length study has no L = {} at d = {}",
            unit.len, unit.d
        )));
    }
    let features = study_features(config.attention.features);
    let dense_rate = dense_rate();
    let mut skipped = Vec::new();
    let said_here = head_sizes.first() == Some(&unit.d);
    let exact_only = !unit.times_methods();
    let head = HeadSize::fit(
        config,
        heads,
        unit.d,
        &features,
        (exact_only, said_here),
        &mut skipped,
    )?;
    let mut series = head.series();
    // A stopped series stops at this length, for `measure`; its stop is the page's to keep.
    let named = |s: &LengthSeries| {
        unit.stopped
            .iter()
            .any(|k| k.kernel == s.kernel && k.form == s.form)
    };
    for s in series.iter_mut().filter(|s| named(s)) {
        s.stopped_at = Some(unit.len);
    }
    head.measure(config.seed, unit.len, Some(unit), &mut series, dense_rate)?;
    for s in series.iter_mut().filter(|s| named(s)) {
        s.stopped_at = None;
    }
    Ok(report_of(
        config, lengths, head_sizes, features, dense_rate, series, skipped,
    ))
}

/// One point's measurements, before its median and model time.
struct Measured {
    len: usize,
    runs_ms: Vec<f64>,
    multiply_adds: f64,
    memory_bytes: f64,
    output_error: Option<f64>,
    row_tv: Option<f64>,
    bad_rows: usize,
}

/// Adds `point` to `series`, which stops at the next length if a run took over `budget_ms`.
fn push_point(series: &mut LengthSeries, point: Measured, dense_rate: f64, budget_ms: f64) {
    let ms = median(&point.runs_ms).unwrap_or(f64::NAN);
    if point.runs_ms.iter().any(|&r| r > budget_ms) {
        series.stopped_at = Some(point.len * 2);
    }
    series.points.push(LengthPoint {
        len: point.len,
        ms,
        runs_ms: point.runs_ms,
        multiply_adds: point.multiply_adds,
        model_ms: model_ms(point.multiply_adds, dense_rate),
        memory_bytes: point.memory_bytes,
        output_error: point.output_error,
        row_tv: point.row_tv,
        bad_rows: point.bad_rows,
    });
}

/// The time `multiply_adds` take at the dense kernel's rate, in milliseconds.
pub(super) fn model_ms(multiply_adds: f64, dense_rate: f64) -> f64 {
    multiply_adds / dense_rate * 1e3
}

#[cfg(test)]
mod tests;
