//! The registry's tests: unique, round-tripping ids, descriptions that match what the
//! estimators compute, twins that point back, and [`super::reduce`] against direct sums.

use super::*;
use crate::numerics::portable::Libm;

#[test]
fn ids_are_unique_and_round_trip() {
    let mut ids: Vec<&str> = REGISTRY.iter().map(|e| e.id()).collect();
    for id in EstimatorId::all() {
        assert_eq!(EstimatorId::from_id(id.id()), Some(id));
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(serde_json::from_str::<EstimatorId>(&json).unwrap(), id);
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), REGISTRY.len());
    assert!(EstimatorId::from_id("nope").is_none());
}

#[test]
fn descriptions_match_what_the_estimators_compute() {
    assert_eq!(DESCRIPTIONS.len(), REGISTRY.len());
    let omega = Projections::zeroed(3, 2).unwrap();
    for (info, estimator) in DESCRIPTIONS.iter().zip(REGISTRY) {
        assert_eq!(info.id(), estimator.id());
        let fit = Fit::identity(2);
        let features = estimator.features(&fit, &[0.1, 0.2], Side::Query, &omega);
        assert_eq!(
            features.len(),
            3 * info.features_per_projection(),
            "{}",
            info.id()
        );
        let one_gaussian = estimator.projections_per_pair() == 1
            && matches!(
                estimator.fast_sum(&fit),
                FastSum::Exp | FastSum::Cosh | FastSum::Cos
            );
        assert_eq!(info.draws_full_omega(), !one_gaussian, "{}", info.id());
    }
}

#[test]
fn twins_point_back() {
    for e in REGISTRY {
        if let Some(twin) = e.twin() {
            let other = EstimatorId::from_id(twin)
                .expect("twin is registered")
                .get();
            assert_eq!(other.twin(), Some(e.id()));
        }
    }
}

#[test]
fn reduce_matches_direct_sums() {
    let t: [f64; 3] = [0.3, -1.2, 2.0];
    let v: [f64; 3] = [0.7, 0.1, -0.4];
    let n: [f64; 3] = [1.5, 0.5, 2.5];
    let direct = |f: &dyn Fn(usize) -> f64| (0..3).map(f).sum::<f64>();
    let cases: Vec<(FastSum, f64)> = vec![
        (FastSum::Exp, direct(&|k| t[k].libm_exp())),
        (FastSum::Cosh, direct(&|k| t[k].libm_cosh())),
        (FastSum::Cos, direct(&|k| t[k].libm_cos())),
        (
            FastSum::ScaledExp {
                scale: 0.8,
                norm_weight: -0.1,
            },
            direct(&|k| (0.8 * t[k] - 0.1 * n[k]).libm_exp()),
        ),
        (
            FastSum::ScaledCosh {
                scale: 0.8,
                norm_weight: -0.1,
            },
            direct(&|k| (-0.1 * n[k]).libm_exp() * (0.8 * t[k]).libm_cosh()),
        ),
        (
            FastSum::Complex {
                cos_theta: 0.6,
                sin_theta: 0.8,
                hyperbolic: false,
            },
            direct(&|k| (0.6 * t[k]).libm_exp() * (0.8 * v[k] - 0.3).libm_cos()),
        ),
        (
            FastSum::Complex {
                cos_theta: 0.6,
                sin_theta: 0.8,
                hyperbolic: true,
            },
            direct(&|k| {
                0.5 * ((0.6 * t[k]).libm_exp() * (0.8 * v[k] - 0.3).libm_cos()
                    + (-0.6 * t[k]).libm_exp() * (-0.8 * v[k] - 0.3).libm_cos())
            }),
        ),
    ];
    for (sum, expected) in cases {
        let got = reduce(sum, &t, &v, &n, 0.3).value();
        assert!(
            (got - expected).abs() < 1e-12 * expected.abs().max(1.0),
            "{sum:?}"
        );
    }
}
