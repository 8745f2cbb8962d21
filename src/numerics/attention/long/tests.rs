//! The long-sequence kernels against the lab's f64 code: exact attention against
//! `exact::softmax_output` (and a masked quadratic loop for the causal form), linear attention
//! against `linear::linear_attention` with the same f64 feature map and the same ω, and both
//! causal linear forms against the masked quadratic `Σ_{j≤i} φ_i·ψ_j v_j / Σ_{j≤i} φ_i·ψ_j`.

use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};

use super::*;
use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::exact::{softmax_in_place, softmax_output};
use crate::numerics::attention::linear::{FeatureMap, linear_attention};
use crate::numerics::attention::method::MethodSettings;
use crate::numerics::attention::methods::elu::EluPlusOne;
use crate::numerics::attention::methods::random_features::{
    EstimatorFeatures, draw_features, fit_estimator,
};
use crate::numerics::estimators::{BatchedForm, EstimatorId, Side};
use crate::numerics::rng::{StreamPurpose, stream_rng};

/// L tokens with Gaussian queries and keys of standard deviation `spread` (logits of order
/// `spread² √d`) and a mean shared by every token (as real heads have), Gaussian values.
fn problem(len: usize, d: usize, dv: usize, spread: f64, seed: u64) -> AttentionData {
    let mut rng = stream_rng(seed, StreamPurpose::Attention, 77, 0);
    let mean: Vec<f64> = (0..d).map(|_| 0.3 * rng.random::<f64>()).collect();
    let mut gaussian = |n: usize, mean: Option<&[f64]>, spread: f64| -> Vec<f64> {
        (0..n)
            .map(|i| {
                let z: f64 = StandardNormal.sample(&mut rng);
                spread * z + mean.map_or(0.0, |m| m[i % m.len()])
            })
            .collect()
    };
    let q = gaussian(len * d, Some(&mean), spread);
    let k = gaussian(len * d, Some(&mean), spread);
    let v = gaussian(len * dv, None, 1.0);
    AttentionData::new(len, d, dv, q, k, v).expect("valid problem")
}

fn as_f32(x: &[f64]) -> Vec<f32> {
    x.iter().map(|&x| x as f32).collect()
}

/// The largest `|a − b|` over every entry, relative to the largest `|b|`.
fn relative_gap(a: &[f32], b: &[f64]) -> f64 {
    let scale = b.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    a.iter()
        .zip(b)
        .map(|(a, b)| (f64::from(*a) - b).abs())
        .fold(0.0, f64::max)
        / scale
}

fn run_flash(data: &AttentionData, causal: bool) -> Vec<f32> {
    let (q, k, v) = (as_f32(&data.q), as_f32(&data.k), as_f32(&data.v));
    let seq = Sequence::new(data.len, data.d, data.dv, &q, &k, &v).expect("shapes");
    flash_attention(&seq, causal)
}

/// Causal softmax attention, one masked row at a time in f64.
fn causal_softmax(data: &AttentionData) -> Vec<f64> {
    let mut out = vec![0.0; data.len * data.dv];
    for i in 0..data.len {
        let mut row: Vec<f64> = (0..=i)
            .map(|j| crate::numerics::estimators::dot(data.query(i), data.key(j)))
            .collect();
        softmax_in_place(&mut row);
        for (j, p) in row.iter().enumerate() {
            for (o, v) in out[i * data.dv..(i + 1) * data.dv]
                .iter_mut()
                .zip(data.value(j))
            {
                *o += p * v;
            }
        }
    }
    out
}

/// The tiled softmax equals the f64 one to f32 rounding, bidirectional and causal, at lengths
/// that leave partial tiles (L not a multiple of 32 or 64) and with logits up to about ±20
/// (where a softmax without the running maximum would overflow f32).
#[test]
fn flash_attention_matches_the_f64_softmax() {
    for (len, d, dv, spread) in [
        (1, 4, 3, 1.0),
        (37, 8, 5, 1.0),
        (200, 32, 32, 0.6),
        (130, 64, 16, 1.1),
    ] {
        let data = problem(len, d, dv, spread, len as u64);
        let gap = relative_gap(&run_flash(&data, false), &softmax_output(&data));
        assert!(gap < 2e-5, "bidirectional L = {len}: {gap}");
        let gap = relative_gap(&run_flash(&data, true), &causal_softmax(&data));
        assert!(gap < 2e-5, "causal L = {len}: {gap}");
    }
}

fn settings(m: usize) -> MethodSettings {
    MethodSettings {
        features: m,
        coupling: Default::default(),
        degree: 2,
        ra_samples: 4,
        landmarks: 16,
        window: 16,
        top_k: 8,
        estimator_params: Default::default(),
        deterministic_feature_budget: 8192,
    }
}

/// An estimator's f64 map and its f32 batched form with the same ω.
fn maps(id: &str, data: &AttentionData, m: usize) -> (EstimatorFeatures, FeatureMap32) {
    let estimator = EstimatorId::from_id(id).expect("registry estimator");
    let settings = settings(m);
    let fit = fit_estimator(estimator, data, &settings).expect("fit");
    let mut rng = stream_rng(5, StreamPurpose::Attention, 99, 0);
    let f64_map = draw_features(estimator, &fit, &settings, data.d, &mut rng).expect("draw");
    let form = estimator
        .get()
        .batched_form(&f64_map.fit, &f64_map.omega)
        .expect("a batched form");
    let f32_map = FeatureMap32::from_form(&form, &f64_map.omega);
    (f64_map, f32_map)
}

const BATCHED_ESTIMATORS: [&str; 7] = [
    "prf-pos",
    "prf-hyp",
    "cexp-var",
    "hcexp-mean",
    "hcexp-var",
    "oprf-var",
    "rff",
];

/// The f32 projections are `s·a_i·ω_k,i` and `s·ω_k,i/a_i` (ωᵀ, d × m) bit for bit, for m
/// with and without a tail of fewer than four rows.
#[test]
fn batched_projections_are_the_scaled_transpose() {
    let data = problem(12, 5, 3, 0.4, 3);
    for m in [8, 11] {
        for id in ["hcexp-var", "rff"] {
            let (f64_map, f32_map) = maps(id, &data, m);
            let omega = &f64_map.omega;
            let form = EstimatorId::from_id(id)
                .expect("registry estimator")
                .get()
                .batched_form(&f64_map.fit, omega)
                .expect("a batched form");
            let at = |k: usize, i: usize| omega.rows().nth(k).expect("row")[i];
            for k in 0..m {
                for i in 0..data.d {
                    match (&form, &f32_map) {
                        (
                            BatchedForm::Exponential {
                                a,
                                projection_scale,
                                ..
                            },
                            FeatureMap32::Exponential {
                                query_projection,
                                key_projection,
                                ..
                            },
                        ) => {
                            let q = (at(k, i) * (projection_scale * a[i])) as f32;
                            let key = (at(k, i) * (projection_scale / a[i])) as f32;
                            assert_eq!(query_projection[i * m + k].to_bits(), q.to_bits());
                            assert_eq!(key_projection[i * m + k].to_bits(), key.to_bits());
                        }
                        (
                            BatchedForm::Trigonometric,
                            FeatureMap32::Trigonometric { projection, .. },
                        ) => {
                            assert_eq!(
                                projection[i * m + k].to_bits(),
                                (at(k, i) as f32).to_bits()
                            );
                        }
                        other => panic!("{id}: unexpected forms {other:?}"),
                    }
                }
            }
        }
    }
}

/// Each batched map's features equal its f64 map's up to the factor it takes out, per token.
#[test]
fn batched_features_match_the_f64_maps() {
    let data = problem(70, 16, 8, 0.5, 3);
    for id in BATCHED_ESTIMATORS {
        let (f64_map, f32_map) = maps(id, &data, 24);
        let size = f32_map.size();
        let q = as_f32(&data.q);
        let mut out = vec![0.0f32; data.len * size];
        let mut shifts = vec![0.0f32; data.len];
        let mut scratch = vec![0.0f32; data.len * f32_map.scratch_per_token()];
        for side in [Side::Query, Side::Key] {
            let u = if side == Side::Query {
                q.clone()
            } else {
                as_f32(&data.k)
            };
            f32_map.features(&u, data.len, side, &mut out, &mut shifts, &mut scratch);
            for i in 0..data.len {
                let token = if side == Side::Query {
                    data.query(i)
                } else {
                    data.key(i)
                };
                let exact = f64_map.features(token, side);
                let got: Vec<f64> = out[i * size..(i + 1) * size]
                    .iter()
                    .map(|&x| f64::from(x) * f64::from(shifts[i]).exp())
                    .collect();
                let scale = exact.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                for (g, e) in got.iter().zip(&exact) {
                    assert!(
                        (g - e).abs() <= 2e-5 * scale,
                        "{id} {side:?} token {i}: {g} vs {e}"
                    );
                }
            }
        }
    }
}

fn run_linear(map: &FeatureMap32, data: &AttentionData, form: LinearForm) -> LinearRun {
    let (q, k, v) = (as_f32(&data.q), as_f32(&data.k), as_f32(&data.v));
    let seq = Sequence::new(data.len, data.d, data.dv, &q, &k, &v).expect("shapes");
    linear_attention_f32(map, &seq, form)
}

/// Bidirectional: the f32 kernel equals `linear_attention` with the f64 map and the same ω.
#[test]
fn bidirectional_linear_attention_matches_the_f64_one() {
    let data = problem(150, 16, 8, 0.5, 4);
    for id in BATCHED_ESTIMATORS {
        let (f64_map, f32_map) = maps(id, &data, 32);
        let reference = linear_attention(&f64_map, &data, &[]);
        let run = run_linear(&f32_map, &data, LinearForm::Bidirectional);
        assert_eq!(run.bad_rows, reference.bad_rows, "{id}");
        let gap = relative_gap(&run.output, &reference.output);
        // RFA's signed denominators amplify rounding; the positive maps stay near f32's ε.
        let tolerance = if id == "rff" { 1e-3 } else { 5e-5 };
        assert!(gap < tolerance, "{id}: {gap}");
    }
    let reference = linear_attention(&EluPlusOne, &data, &[]);
    let run = run_linear(
        &FeatureMap32::EluPlusOne { d: 16 },
        &data,
        LinearForm::Bidirectional,
    );
    assert!(relative_gap(&run.output, &reference.output) < 5e-5);
}

/// `Σ_{j≤i} φ_i·ψ_j v_j / Σ_{j≤i} φ_i·ψ_j` with the f64 map: the masked quadratic computation.
fn masked_quadratic(map: &dyn FeatureMap, data: &AttentionData) -> Vec<f64> {
    let phi: Vec<Vec<f64>> = (0..data.len)
        .map(|i| map.features(data.query(i), Side::Query))
        .collect();
    let psi: Vec<Vec<f64>> = (0..data.len)
        .map(|j| map.features(data.key(j), Side::Key))
        .collect();
    let mut out = vec![0.0; data.len * data.dv];
    for i in 0..data.len {
        let weights: Vec<f64> = (0..=i)
            .map(|j| phi[i].iter().zip(&psi[j]).map(|(a, b)| a * b).sum())
            .collect();
        let total: f64 = weights.iter().sum();
        for (j, w) in weights.iter().enumerate() {
            for (o, v) in out[i * data.dv..(i + 1) * data.dv]
                .iter_mut()
                .zip(data.value(j))
            {
                *o += w / total * v;
            }
        }
    }
    out
}

/// Both causal forms equal the masked quadratic computation to rounding, across chunk
/// boundaries (L = 150 is two full chunks and a partial one), for positive, hyperbolic and
/// deterministic maps.
#[test]
fn causal_linear_attention_matches_the_masked_quadratic_form() {
    let data = problem(150, 16, 8, 0.5, 6);
    for id in ["prf-pos", "hcexp-var", "oprf-var"] {
        let (f64_map, f32_map) = maps(id, &data, 32);
        let reference = masked_quadratic(&f64_map, &data);
        for form in [LinearForm::CausalPrefix, LinearForm::CausalChunked] {
            let run = run_linear(&f32_map, &data, form);
            assert_eq!(run.bad_rows, 0, "{id} {form:?}");
            let gap = relative_gap(&run.output, &reference);
            assert!(gap < 5e-5, "{id} {form:?}: {gap}");
        }
    }
    let reference = masked_quadratic(&EluPlusOne, &data);
    for form in [LinearForm::CausalPrefix, LinearForm::CausalChunked] {
        let run = run_linear(&FeatureMap32::EluPlusOne { d: 16 }, &data, form);
        assert!(relative_gap(&run.output, &reference) < 5e-5, "elu {form:?}");
    }
}

/// Keys whose features would overflow f32 without the running maximum (|k|² ≈ 200: e^{100}
/// factors) still give the f64 answer: the stabilisation, not luck, keeps them finite.
#[test]
fn large_norms_do_not_overflow() {
    let mut data = problem(100, 8, 4, 0.3, 8);
    for (j, x) in data.k.iter_mut().enumerate() {
        if j / 8 % 10 == 3 {
            *x *= 12.0;
        }
    }
    let (f64_map, f32_map) = maps("prf-pos", &data, 16);
    let reference = linear_attention(&f64_map, &data, &[]);
    for form in [LinearForm::Bidirectional, LinearForm::CausalChunked] {
        let run = run_linear(&f32_map, &data, form);
        assert_eq!(run.bad_rows, 0, "{form:?}");
        if form == LinearForm::Bidirectional {
            assert!(relative_gap(&run.output, &reference.output) < 1e-4);
        }
    }
}

/// Taylor of degree 2 (signed features, D = 1 + d + d²) in every form: the f64 map's linear
/// attention, and the masked quadratic form for both causal kernels.
#[test]
fn polynomial_features_in_every_form() {
    use crate::numerics::attention::deterministic::PolynomialKernel;
    let data = problem(150, 16, 8, 0.5, 9);
    let taylor = PolynomialKernel::taylor(2).expect("degree 2");
    let map = FeatureMap32::Polynomial {
        kernel: taylor,
        d: 16,
        size: 1 + 16 + 256,
    };
    let reference = linear_attention(&taylor, &data, &[]);
    let run = run_linear(&map, &data, LinearForm::Bidirectional);
    assert_eq!(run.bad_rows, reference.bad_rows);
    assert!(relative_gap(&run.output, &reference.output) < 5e-5);
    let reference = masked_quadratic(&taylor, &data);
    for form in [LinearForm::CausalPrefix, LinearForm::CausalChunked] {
        let gap = relative_gap(&run_linear(&map, &data, form).output, &reference);
        assert!(gap < 5e-5, "{form:?}: {gap}");
    }
}

/// LLN's elementwise exponentials, bidirectional and causal, against the f64 map.
#[test]
fn elementwise_exponential_features_in_every_form() {
    use crate::numerics::attention::lln::LogNormalFeatures;
    let data = problem(150, 16, 8, 0.8, 10);
    let f64_map = LogNormalFeatures {
        alpha: 1.3,
        beta: 0.9,
    };
    let map = FeatureMap32::ElementwiseExponential {
        d: 16,
        query_scale: 1.3,
        key_scale: 0.9,
    };
    let reference = linear_attention(&f64_map, &data, &[]);
    let run = run_linear(&map, &data, LinearForm::Bidirectional);
    assert!(relative_gap(&run.output, &reference.output) < 5e-5);
    let reference = masked_quadratic(&f64_map, &data);
    for form in [LinearForm::CausalPrefix, LinearForm::CausalChunked] {
        let gap = relative_gap(&run_linear(&map, &data, form).output, &reference);
        assert!(gap < 5e-5, "{form:?}: {gap}");
    }
}

/// `draw_features` keeps its last ω: drawn again from the same stream state it gives the same
/// ω and leaves the stream where the first draw did; from any other state (or at another m)
/// it draws what `Projections::sample_coupled` draws.
#[test]
fn draw_features_reuses_only_the_same_draw() {
    use crate::numerics::estimators::Projections;
    let data = problem(16, 8, 4, 0.5, 3);
    let estimator = EstimatorId::from_id("prf-pos").expect("registry estimator");
    let settings = settings(24);
    let fit = fit_estimator(estimator, &data, &settings).expect("fit");
    let start = stream_rng(5, StreamPurpose::Attention, 99, 0);
    let fresh = |m: usize, rng: &mut crate::numerics::rng::StreamRng| {
        Projections::sample_coupled(settings.coupling, m, data.d, rng).expect("draw")
    };
    let (mut first_rng, mut again_rng) = (start.clone(), start.clone());
    let first = draw_features(estimator, &fit, &settings, data.d, &mut first_rng).expect("draw");
    let again = draw_features(estimator, &fit, &settings, data.d, &mut again_rng).expect("draw");
    let mut direct_rng = start.clone();
    assert_eq!(first.omega, fresh(24, &mut direct_rng));
    assert_eq!(again.omega, first.omega);
    assert_eq!((&first_rng, &again_rng), (&direct_rng, &direct_rng));
    // The stream moved on: the next draw is a new one.
    let next = draw_features(estimator, &fit, &settings, data.d, &mut first_rng).expect("draw");
    assert_eq!(next.omega, fresh(24, &mut direct_rng));
    assert_ne!(next.omega, first.omega);
    // Another m from the first state: not the kept ω.
    let mut other = start.clone();
    let wider = settings_with_features(&settings, 40);
    let drawn = draw_features(estimator, &fit, &wider, data.d, &mut other).expect("draw");
    assert_eq!(drawn.omega, fresh(40, &mut start.clone()));
}

fn settings_with_features(settings: &MethodSettings, m: usize) -> MethodSettings {
    MethodSettings {
        features: m,
        ..settings.clone()
    }
}
