//! Hedgehog under the causal mask (a decoder's heads): the gradient, the attention, training.

use super::tests::{gaussian, perturbed_map, synthetic_head, worst_gradient_error};
use super::*;
use crate::numerics::rng::stream_rng;

/// Under the causal mask (a decoder's head) the analytic gradient still matches central
/// differences: the prefix and suffix sums stand for the rank-one part.
#[test]
fn the_causal_gradient_matches_central_differences() {
    let sample = synthetic_head(11, 4, 0).causal();
    assert!(sample.is_causal());
    for half_features in [3, 4] {
        let map = perturbed_map(4, half_features);
        let worst = worst_gradient_error(&map, &sample);
        eprintln!("causal, n = {half_features}: worst relative error {worst:e}");
        assert!(worst <= 1e-5, "n = {half_features}: {worst:e}");
    }
    // The causal loss is another loss: row 0 sees one key, so its cross-entropy is 0.
    let map = perturbed_map(4, 3);
    let whole = synthetic_head(11, 4, 0);
    let (causal, bidirectional) = (map.loss(&sample).unwrap(), map.loss(&whole).unwrap());
    assert!(
        (causal.kl - bidirectional.kl).abs() > 1e-3,
        "{causal:?} {bidirectional:?}"
    );
    let one = HeadSample::new(
        1,
        4,
        whole.queries()[..4].to_vec(),
        whole.keys()[..4].to_vec(),
    )
    .unwrap()
    .causal();
    assert!(map.loss(&one).unwrap().cross_entropy.abs() < 1e-12);
}

/// The causal attention is the masked quadratic formula `Σ_{j≤i} s_ij v_j / Σ_{j≤i} s_ij`.
#[test]
fn causal_attention_equals_the_masked_quadratic_formula() {
    let (len, dim, dv) = (9, 5, 3);
    let sample = synthetic_head(len, dim, 1);
    let mut rng = stream_rng(17, StreamPurpose::Trial, 302, 0);
    let v = gaussian(len * dv, 1.0, &mut rng);
    let map = perturbed_map(dim, 5);
    let out = map
        .causal_attention(sample.queries(), sample.keys(), &v, len, dim, dv)
        .unwrap();
    for i in 0..len {
        let phi = map
            .features_q(&sample.queries()[i * dim..(i + 1) * dim])
            .unwrap();
        let (mut numerator, mut denominator) = (vec![0.0; dv], 0.0);
        for j in 0..=i {
            let psi = map
                .features_k(&sample.keys()[j * dim..(j + 1) * dim])
                .unwrap();
            let s: f64 = phi.iter().zip(&psi).map(|(a, b)| a * b).sum();
            denominator += s;
            for (o, x) in numerator.iter_mut().zip(&v[j * dv..(j + 1) * dv]) {
                *o += s * x;
            }
        }
        for (t, n) in numerator.iter().enumerate() {
            let expected = n / denominator;
            assert!(
                (out[i * dv + t] - expected).abs() <= 1e-12,
                "row {i}: {} against {expected}",
                out[i * dv + t]
            );
        }
    }
}

/// Training under the causal mask lowers the causal divergence on the training heads and on
/// held-out heads of the same distribution.
#[test]
fn causal_training_lowers_the_causal_divergence() {
    let (len, dim, heads) = (64, 8, 2);
    let train_heads: Vec<HeadSample> = (0..heads)
        .map(|h| synthetic_head(len, dim, 10 + h).causal())
        .collect();
    let eval_heads: Vec<HeadSample> = (0..heads)
        .map(|h| synthetic_head(len, dim, 20 + h).causal())
        .collect();
    let settings = HedgehogSettings {
        half_features: 16,
        steps: 100,
        learning_rate: 0.02,
        seed: 5,
    };
    let mut curve = Vec::new();
    train(&settings, &train_heads, &eval_heads, 50, &mut |p| {
        curve.push(*p)
    })
    .unwrap();
    let (first, last) = (curve[0], curve[100]);
    eprintln!(
        "causal: train KL {} → {}, eval KL {:?} → {:?}",
        first.train_kl, last.train_kl, first.eval_kl, last.eval_kl
    );
    assert!(last.train_kl < first.train_kl / 2.0, "{first:?} {last:?}");
    assert!(
        last.eval_kl.unwrap() < 0.9 * first.eval_kl.unwrap(),
        "{first:?} {last:?}"
    );
}

/// The f32 form the decoder runs (`CompactMap::feature_map_32`, the input scale folded into
/// Wᵀ) gives the f64 map's features to f32 rounding, for queries and keys.
#[test]
fn the_f32_map_gives_the_f64_features() {
    use crate::numerics::estimators::Side;
    let (dim, n, rows) = (8, 5, 6);
    let map = perturbed_map(dim, n);
    let f32_map = map.to_compact().feature_map_32();
    assert_eq!((f32_map.size(), f32_map.dim()), (2 * n, dim));
    let narrowed = HedgehogMap::from_compact(&map.to_compact()).unwrap();
    let tokens = gaussian(
        rows * dim,
        1.0,
        &mut stream_rng(5, StreamPurpose::Trial, 0, 0),
    );
    let tokens32: Vec<f32> = tokens.iter().map(|&x| x as f32).collect();
    for side in [Side::Query, Side::Key] {
        let mut out = vec![0.0f32; rows * 2 * n];
        let (mut shifts, mut scratch) = (vec![0.0f32; rows], vec![0.0f32; rows * n]);
        f32_map.features(&tokens32, rows, side, &mut out, &mut shifts, &mut scratch);
        assert!(shifts.iter().all(|&s| s == 0.0));
        for (r, row) in out.chunks_exact(2 * n).enumerate() {
            let x = &tokens[r * dim..(r + 1) * dim];
            let want = match side {
                Side::Query => narrowed.features_q(x).unwrap(),
                Side::Key => narrowed.features_k(x).unwrap(),
            };
            for (got, want) in row.iter().zip(&want) {
                let error = (f64::from(*got) - want).abs() / want.abs().max(1e-6);
                assert!(error < 1e-4, "{side:?} row {r}: {got} against {want}");
            }
        }
    }
}
