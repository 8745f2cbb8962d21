//! Small seeded problems for the methods' tests.

use rand_distr::{Distribution, StandardNormal};

use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::method::MethodSettings;
use crate::numerics::rng::{StreamPurpose, stream_rng};

/// L tokens with Gaussian queries and keys of standard deviation `scale` per coordinate and
/// standard Gaussian values, from `seed`.
pub(super) fn gaussian(len: usize, d: usize, dv: usize, scale: f64, seed: u64) -> AttentionData {
    let mut rng = stream_rng(seed, StreamPurpose::Trial, 91, 0);
    let mut draw = |n: usize, s: f64| -> Vec<f64> {
        (0..n)
            .map(|_| {
                let z: f64 = StandardNormal.sample(&mut rng);
                s * z
            })
            .collect()
    };
    let q = draw(len * d, scale);
    let k = draw(len * d, scale);
    let v = draw(len * dv, 1.0);
    AttentionData::new(len, d, dv, q, k, v).expect("finite data of matching shapes")
}

/// The settings every test starts from (the page's defaults for the three sizes).
pub(super) fn settings() -> MethodSettings {
    MethodSettings {
        features: 16,
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

/// The largest `|a − b|` over two outputs of the same shape.
pub(super) fn max_difference(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}
