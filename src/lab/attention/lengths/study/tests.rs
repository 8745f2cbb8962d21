//! The length study on a small configuration: its shape (series, points, skipped methods,
//! crossovers), the errors it reports against an independent f64 computation on the same
//! sampled sequence, the budget's stop, and a value pin of what the default seed gives.

use super::*;
use crate::lab::test_support::config_with;
use crate::numerics::attention::exact::{softmax_output, softmax_rows, total_variation};
use crate::numerics::attention::heads::{HEADS_ASSET_PATH, RealHeads};
use crate::numerics::attention::linear::linear_attention;
use crate::numerics::attention::methods::MethodId;
use crate::numerics::attention::methods::elu::EluPlusOne;
use crate::numerics::attention::methods::random_features::{draw_features, fit_estimator};
use crate::numerics::estimators::EstimatorId;

fn stored_heads() -> RealHeads {
    let path = format!("{}/{HEADS_ASSET_PATH}", env!("CARGO_MANIFEST_DIR"));
    RealHeads::parse(&std::fs::read(path).expect("the committed asset")).expect("valid asset")
}

/// The small study, run once for every test that reads it (it times dozens of batches).
fn small_study() -> (ExperimentConfig, LengthsReport) {
    static STUDY: std::sync::OnceLock<(ExperimentConfig, LengthsReport)> =
        std::sync::OnceLock::new();
    STUDY
        .get_or_init(|| {
            let config = config_with(&[
                ("view", "attention"),
                ("lmax", "256"),
                ("methods", "prf-pos,taylor,elu,ra"),
                ("features", "16"),
                ("layer", "2"),
                ("head", "5"),
            ]);
            let report = length_study(&config, &stored_heads()).expect("the study runs");
            (config, report)
        })
        .clone()
}

/// Two head sizes × (2 exact forms + 3 forms × (Performer at m = 4 and 16, Taylor-2 and elu
/// once)); randomized attention (quadratic) skipped with its reason once; every point has a time, a model time and memory;
/// exact attention carries no error, every method an error at every point.
#[test]
fn the_study_has_every_series_and_point() {
    let (_, report) = small_study();
    assert_eq!(report.lengths, vec![128, 256]);
    assert_eq!(report.features, vec![4, 16]);
    assert_eq!(report.series.len(), 2 * (2 + 3 * 4));
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].method.id(), "ra");
    assert_eq!(report.crossovers.len(), 2 * 3 * 4);
    for series in &report.series {
        assert_eq!(series.points.len(), 2, "{:?}", series.kernel);
        for p in &series.points {
            assert!(p.ms > 0.0 && p.model_ms > 0.0 && p.memory_bytes > 0.0);
            assert!(!p.runs_ms.is_empty() && p.runs_ms.len() <= RUNS);
            match series.kernel {
                Kernel::Exact => {
                    assert!(p.output_error.is_none());
                    let pairs = if series.form.is_causal() {
                        p.len * (p.len + 1) / 2
                    } else {
                        p.len * p.len
                    };
                    assert_eq!(p.multiply_adds, (pairs * 2 * series.d) as f64);
                }
                Kernel::Method { .. } => {
                    let error = p.output_error.expect("an error");
                    assert!(error > 0.0 && error.is_finite());
                    assert_eq!(p.row_tv.is_some(), series.form == LinearForm::Bidirectional);
                }
            }
        }
    }
    assert!(report.dense_rate > 0.0 && report.exact_rate > 0.0);
}

/// The errors the study reports are those of an independent f64 computation on the same
/// sequence (the head's Gaussian drawn from the same stream): `linear::linear_attention` with
/// the f64 map and the same ω against `exact::softmax_output`, to f32 rounding.
#[test]
fn reported_errors_match_an_f64_computation() {
    let (config, report) = small_study();
    let heads = stored_heads();
    let d = 32;
    let model = GaussianHead::fit(&heads, 2, 5, d).expect("fit");
    let len = 256;
    let mut rng = stream_rng(
        config.seed,
        StreamPurpose::Attention,
        stream_index("lengths"),
        (d * 1_000_000 + len) as u64,
    );
    let sample = model.sample(len, &mut rng);
    let widen = |x: &[f32]| x.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
    let data = AttentionData::new(
        len,
        d,
        d,
        widen(&sample.q),
        widen(&sample.k),
        widen(&sample.v),
    )
    .expect("data");
    let exact = softmax_output(&data);
    let relative = |approx: &[f64]| {
        let (mut diff, mut norm) = (0.0, 0.0);
        for (a, e) in approx.iter().zip(&exact) {
            diff += (a - e).powi(2);
            norm += e * e;
        }
        (diff / norm).sqrt()
    };
    let reported = |id: &str, m: usize| {
        report
            .series
            .iter()
            .find(|s| {
                s.d == d
                    && s.form == LinearForm::Bidirectional
                    && matches!(s.kernel, Kernel::Method { method, m: sm, .. } if method.id() == id && sm == m)
            })
            .and_then(|s| s.points.iter().find(|p| p.len == len))
            .and_then(|p| p.output_error)
            .expect("a reported error")
    };
    let tv_rows: Vec<usize> = (0..TV_ROWS).map(|r| r * len / TV_ROWS).collect();
    let elu_run = linear_attention(&EluPlusOne, &data, &tv_rows);
    let elu = relative(&elu_run.output);
    let exact_rows = softmax_rows(&data, &tv_rows);
    let elu_tv = elu_run
        .rows
        .iter()
        .zip(&exact_rows)
        .map(|(a, e)| total_variation(a, e))
        .sum::<f64>()
        / TV_ROWS as f64;
    let reported_tv = report
        .series
        .iter()
        .find(|s| {
            s.d == d
                && s.form == LinearForm::Bidirectional
                && matches!(s.kernel, Kernel::Method { method, .. } if method.id() == "elu")
        })
        .and_then(|s| s.points.iter().find(|p| p.len == len))
        .and_then(|p| p.row_tv)
        .expect("a row TV");
    assert!(
        (reported_tv - elu_tv).abs() < 1e-4 * elu_tv,
        "row TV {reported_tv} vs {elu_tv}"
    );
    assert!(
        (reported("elu", 0) - elu).abs() < 1e-4 * elu.max(1e-3),
        "elu {elu}"
    );

    // Performer: fitted on the study's fit sample, ω from the method's draw-0 stream.
    let mut fit_rng = stream_rng(
        config.seed,
        StreamPurpose::Attention,
        stream_index("lengths"),
        d as u64,
    );
    let fit_sample = model.sample(FIT_TOKENS, &mut fit_rng);
    let fit_data = AttentionData::new(
        FIT_TOKENS,
        d,
        d,
        widen(&fit_sample.q),
        widen(&fit_sample.k),
        widen(&fit_sample.v),
    )
    .expect("fit data");
    let method = MethodId::from_id("prf-pos").expect("registered");
    let estimator = EstimatorId::from_id("prf-pos").expect("registered");
    let mut settings = method_settings(&config);
    settings.features = 16;
    let fit = fit_estimator(estimator, &fit_data, &settings).expect("fit");
    let map = draw_features(
        estimator,
        &fit,
        &settings,
        d,
        &mut draw_rng(config.seed, method, 0),
    )
    .expect("draw");
    let performer = relative(&linear_attention(&map, &data, &[]).output);
    assert!(
        (reported("prf-pos", 16) - performer).abs() < 1e-3 * performer,
        "Performer {performer} vs {}",
        reported("prf-pos", 16)
    );
}

/// A run over the budget stops its series at the next length.
#[test]
fn a_slow_run_stops_its_series() {
    let mut series = LengthSeries {
        d: 32,
        kernel: Kernel::Exact,
        form: LinearForm::Bidirectional,
        points: Vec::new(),
        stopped_at: None,
    };
    let point = |len: usize, runs_ms: Vec<f64>| Measured {
        len,
        runs_ms,
        multiply_adds: 10.0,
        memory_bytes: 0.0,
        output_error: None,
        row_tv: None,
        bad_rows: 0,
    };
    push_point(&mut series, point(128, vec![1.0, 2.0, 3.0]), 1e9, 100.0);
    assert_eq!(series.stopped_at, None);
    assert_eq!(series.points[0].ms, 2.0);
    push_point(&mut series, point(256, vec![150.0]), 1e9, 100.0);
    assert_eq!(series.stopped_at, Some(512));
}

/// What the default seed gives (errors only: times are the machine's): a change here means the
/// study's sequences, fits or kernels changed.
#[test]
fn value_stability() {
    let (_, report) = small_study();
    let error = |id: &str, d: usize, len: usize| {
        report
            .series
            .iter()
            .find(|s| {
                s.d == d
                    && s.form == LinearForm::CausalChunked
                    && matches!(s.kernel, Kernel::Method { method, m, .. } if method.id() == id && (m == 16 || m == 0))
            })
            .and_then(|s| s.points.iter().find(|p| p.len == len))
            .and_then(|p| p.output_error)
            .expect("an error")
    };
    let pinned = [
        (error("elu", 32, 128), 0.643_262_18),
        (error("prf-pos", 64, 256), 0.881_766_15),
    ];
    for (got, want) in pinned {
        assert!((got - want).abs() < 1e-5 * want, "{got} vs {want}");
    }
}

#[test]
fn lengths_and_features_of_a_configuration() {
    assert_eq!(study_lengths(0), Vec::<usize>::new());
    assert_eq!(study_lengths(100), Vec::<usize>::new());
    assert_eq!(study_lengths(1000), vec![128, 256, 512]);
    assert_eq!(study_lengths(1 << 20).last(), Some(&MAX_LENGTH));
    assert_eq!(study_features(256), vec![64, 256]);
    assert_eq!(study_features(4), vec![4]);
}
