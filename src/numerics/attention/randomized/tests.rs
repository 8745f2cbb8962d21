//! Randomized attention's tests: unbiasedness, variance over samples, hostile inputs.

use super::*;
use crate::numerics::rng::{StreamPurpose, StreamRng, stream_rng};
use crate::numerics::stats::mean_and_standard_error;

/// `len` rows of dimension d with norms spread over `[lo, hi]` (fixed directions from the
/// stream, then rescaled).
fn rows(len: usize, d: usize, lo: f64, hi: f64, rng: &mut StreamRng) -> Vec<f64> {
    let mut out = Vec::with_capacity(len * d);
    for i in 0..len {
        let g: Vec<f64> = (0..d)
            .map(|_| {
                let z: f64 = StandardNormal.sample(rng);
                z
            })
            .collect();
        let norm = dot(&g, &g).sqrt();
        let target = lo + (hi - lo) * i as f64 / (len.max(2) - 1) as f64;
        out.extend(g.iter().map(|x| x * target / norm));
    }
    out
}

struct Case {
    q: Vec<f64>,
    k: Vec<f64>,
    v: Vec<f64>,
    shape: AttentionShape,
}

fn case(lo: f64, hi: f64) -> Case {
    let shape = AttentionShape {
        len: 6,
        d: 3,
        dv: 2,
    };
    let mut rng = stream_rng(3, StreamPurpose::Trial, 0, 0);
    let q = rows(6, 3, lo, hi, &mut rng);
    let k = rows(6, 3, lo, hi, &mut rng);
    let v = rows(6, 2, 1.0, 1.0, &mut rng);
    Case { q, k, v, shape }
}

/// Per coordinate: (mean over repetitions − exact) / standard error.
fn z_scores(draws: &[Vec<f64>], exact: &[f64]) -> Vec<f64> {
    (0..exact.len())
        .map(|c| {
            let column: Vec<f64> = draws.iter().map(|o| o[c]).collect();
            let (mean, se) = mean_and_standard_error(&column);
            assert!(se > 0.0, "a coordinate that does not vary tests nothing");
            (mean - exact[c]) / se
        })
        .collect()
}

#[test]
fn randomized_attention_is_unbiased() {
    // Norms 1 to 2; R = 2000 repetitions of one sample per query. Each coordinate's mean is
    // within 4 standard errors of o (12 coordinates: a false alarm has probability ≈ 8e-4).
    let c = case(1.0, 2.0);
    let exact = softmax_attention(&c.q, &c.k, &c.v, c.shape).unwrap();
    let mut rng = stream_rng(3, StreamPurpose::Trial, 1, 0);
    let draws: Vec<Vec<f64>> = (0..2000)
        .map(|_| randomized_attention(&c.q, &c.k, &c.v, c.shape, 1, &mut rng).unwrap())
        .collect();
    let z = z_scores(&draws, &exact);
    assert!(z.iter().all(|z| z.abs() < 4.0), "{z:?}");
}

#[test]
fn a_self_normalised_positive_feature_ratio_is_biased() {
    // The contrast (seed 003, "The Biasedness of RFA"): Performer/RFA with m = 4 positive
    // features φ(u) = m^{-1/2} exp(ω_r·u − |u|²/2), ω_r ~ N(0, I) shared by all queries,
    // ô_i = Σ_j φ(q_i)·φ(k_j) v_j / Σ_l φ(q_i)·φ(k_l). Each kernel estimate is unbiased, the
    // ratio is not: at norms 2 to 3 its mean over R = 2000 draws is off o by more than 6
    // standard errors in some coordinate, while RA on the same data stays within 4.
    let c = case(2.0, 3.0);
    let AttentionShape { len, d, dv } = c.shape;
    let exact = softmax_attention(&c.q, &c.k, &c.v, c.shape).unwrap();
    let m = 4;
    let mut rng = stream_rng(3, StreamPurpose::Trial, 2, 0);
    let performer = |rng: &mut StreamRng| -> Vec<f64> {
        let omegas: Vec<f64> = (0..m * d)
            .map(|_| {
                let z: f64 = StandardNormal.sample(rng);
                z
            })
            .collect();
        let phi = |u: &[f64]| -> Vec<f64> {
            let h = 0.5 * dot(u, u);
            omegas
                .chunks_exact(d)
                .map(|w| (dot(w, u) - h).exp() / (m as f64).sqrt())
                .collect()
        };
        let fk: Vec<Vec<f64>> = c.k.chunks_exact(d).map(phi).collect();
        let mut out = vec![0.0; len * dv];
        for (o, qi) in out.chunks_exact_mut(dv).zip(c.q.chunks_exact(d)) {
            let fq = phi(qi);
            let s: Vec<f64> = fk.iter().map(|f| dot(&fq, f)).collect();
            let total: f64 = s.iter().sum();
            for (sj, vj) in s.iter().zip(c.v.chunks_exact(dv)) {
                for (oc, vc) in o.iter_mut().zip(vj) {
                    *oc += sj / total * vc;
                }
            }
        }
        out
    };
    let draws: Vec<Vec<f64>> = (0..2000).map(|_| performer(&mut rng)).collect();
    let z = z_scores(&draws, &exact);
    let worst = z.iter().fold(0.0f64, |a, z| a.max(z.abs()));
    assert!(worst > 6.0, "{z:?}");

    let ra: Vec<Vec<f64>> = (0..2000)
        .map(|_| randomized_attention(&c.q, &c.k, &c.v, c.shape, 1, &mut rng).unwrap())
        .collect();
    let z_ra = z_scores(&ra, &exact);
    assert!(z_ra.iter().all(|z| z.abs() < 4.0), "{z_ra:?}");
}

/// Per coordinate: the unbiased sample variance over the repetitions and its standard
/// error, `√((m₄ − s⁴)/R)` with `m₄` the fourth central moment (the large-R variance of s²,
/// which holds whatever the distribution's shape).
fn variances_and_standard_errors(draws: &[Vec<f64>]) -> Vec<(f64, f64)> {
    let r = draws.len() as f64;
    (0..draws[0].len())
        .map(|c| {
            let mean = draws.iter().map(|o| o[c]).sum::<f64>() / r;
            let m2 = draws.iter().map(|o| (o[c] - mean).powi(2)).sum::<f64>() / r;
            let m4 = draws.iter().map(|o| (o[c] - mean).powi(4)).sum::<f64>() / r;
            let s2 = m2 * r / (r - 1.0);
            (s2, ((m4 - m2 * m2) / r).sqrt())
        })
        .collect()
}

#[test]
fn more_samples_average_the_same_estimator() {
    // S samples per query is the mean of S independent single-sample estimates, so
    // Var(S = 50) = Var(S = 1)/50 exactly. Over R = 8000 repetitions at each S, each
    // coordinate's variance ratio is 50 within 4 standard errors (the ratio's relative
    // standard error is the root sum of squares of the two variances' relative ones), and
    // the S = 50 mean is within 4 standard errors of o (12 coordinates: a false alarm has
    // probability ≈ 1e-3 per assertion).
    let c = case(1.0, 2.0);
    let exact = softmax_attention(&c.q, &c.k, &c.v, c.shape).unwrap();
    let mut rng = stream_rng(3, StreamPurpose::Trial, 3, 0);
    let repeat = |s: usize, rng: &mut StreamRng| -> Vec<Vec<f64>> {
        (0..8000)
            .map(|_| randomized_attention(&c.q, &c.k, &c.v, c.shape, s, rng).unwrap())
            .collect()
    };
    let one = repeat(1, &mut rng);
    let fifty = repeat(50, &mut rng);
    let (v1, v50) = (
        variances_and_standard_errors(&one),
        variances_and_standard_errors(&fifty),
    );
    for (c, ((s1, e1), (s50, e50))) in v1.iter().zip(&v50).enumerate() {
        let ratio = s1 / s50;
        let se = ratio * ((e1 / s1).powi(2) + (e50 / s50).powi(2)).sqrt();
        assert!(
            (ratio - 50.0).abs() < 4.0 * se,
            "coordinate {c}: Var(S = 1)/Var(S = 50) = {ratio} ± {se}, expected 50"
        );
    }
    let z = z_scores(&fifty, &exact);
    assert!(z.iter().all(|z| z.abs() < 4.0), "S = 50 mean: {z:?}");
}

#[test]
fn softmax_rows_are_stable_and_sum_to_one() {
    let q = [1000.0, 0.0, -1000.0, 0.0];
    let k = [1.0, 0.0, 2.0, 0.0];
    let p = softmax_rows(&q, &k, 2, 2).unwrap();
    assert!(p.iter().all(|x| x.is_finite()));
    assert!((p[0] + p[1] - 1.0).abs() < 1e-15 && (p[2] + p[3] - 1.0).abs() < 1e-15);
    assert!(p[1] > 0.999 && p[2] > 0.999);
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let shape = AttentionShape {
        len: 2,
        d: 2,
        dv: 1,
    };
    let q = [0.1, 0.2, 0.3, 0.4];
    let v = [1.0, 2.0];
    let mut rng = stream_rng(3, StreamPurpose::Trial, 4, 0);
    let mut run = |q: &[f64], k: &[f64], v: &[f64], shape, s| {
        randomized_attention(q, k, v, shape, s, &mut rng)
    };
    assert!(matches!(
        run(&q, &q[..3], &v, shape, 1),
        Err(RandomizedError::Input(InputError::LengthMismatch {
            what: "k",
            ..
        }))
    ));
    assert!(matches!(
        run(&q, &[0.1, f64::NAN, 0.0, 0.0], &v, shape, 1),
        Err(RandomizedError::Input(InputError::NonFinite {
            what: "k",
            index: 1
        }))
    ));
    assert!(matches!(
        run(&q, &q, &v, shape, 0),
        Err(RandomizedError::Input(InputError::InvalidShape { .. }))
    ));
    assert!(matches!(
        run(
            &[],
            &[],
            &[],
            AttentionShape {
                len: 0,
                d: 2,
                dv: 1
            },
            1
        ),
        Err(RandomizedError::Input(InputError::InvalidShape { .. }))
    ));
    let huge = [1e200, 1e200, 1e200, 1e200];
    assert!(matches!(
        run(&huge, &huge, &v, shape, 1),
        Err(RandomizedError::Overflow { .. })
    ));
    assert!(softmax_rows(&q, &q, usize::MAX, 2).is_err());
    // Large but representable inputs: each output is a convex combination of the values,
    // so it lies in [min v, max v] (up to the rounding of the weighted sum, a few ulp).
    let big = [30.0, 0.0, 0.0, 30.0];
    let out = run(&big, &big, &v, shape, 3).unwrap();
    let ulps = 4.0 * f64::EPSILON * 2.0;
    assert!(
        out.iter().all(|o| (1.0 - ulps..=2.0 + ulps).contains(o)),
        "{out:?} should lie in [1, 2]"
    );
}

#[test]
fn values_at_the_edge_of_f64_give_the_implied_matrix_times_v() {
    // v = (f64::MAX, −f64::MAX): ô_i = Σ_j P̂_ij v_j with P̂ the rows that
    // `randomized_attention_rows` returns from the same stream (the same draws). Each row
    // of P̂ is a probability vector; the sum's rounding is at most a few ulp of Σ_j P̂_ij |v_j|.
    let shape = AttentionShape {
        len: 2,
        d: 2,
        dv: 1,
    };
    let q = [0.1, 0.2, 0.3, 0.4];
    let v = [f64::MAX, -f64::MAX];
    let stream = || stream_rng(3, StreamPurpose::Trial, 5, 0);
    let edge = randomized_attention(&q, &q, &v, shape, 1, &mut stream()).unwrap();
    let data =
        super::super::AttentionData::new(2, 2, 1, q.to_vec(), q.to_vec(), v.to_vec()).unwrap();
    let (same, p_hat) = randomized_attention_rows(&data, 1, &[0, 1], &mut stream()).unwrap();
    assert_eq!(same, edge, "the same stream gives the same output");
    for (i, row) in p_hat.iter().enumerate() {
        assert!(row.iter().all(|p| (0.0..=1.0).contains(p)), "{row:?}");
        assert!((row.iter().sum::<f64>() - 1.0).abs() <= 4.0 * f64::EPSILON);
        let expected: f64 = row.iter().zip(&v).map(|(p, v)| p * v).sum();
        // Σ_j P̂_ij |v_j| = f64::MAX · Σ_j P̂_ij, written so that it cannot overflow.
        let scale = row.iter().sum::<f64>() * f64::EPSILON * f64::MAX;
        assert!(
            (edge[i] - expected).abs() <= 4.0 * scale,
            "row {i}: {} vs Σ_j P̂_ij v_j = {expected} (P̂ = {row:?})",
            edge[i]
        );
    }
}

#[test]
fn value_stability() {
    // Pins what stream (3, Trial, 9, 0) produces: a change here changes every shared figure.
    let c = case(1.0, 2.0);
    let mut rng = stream_rng(3, StreamPurpose::Trial, 9, 0);
    let est = randomized_attention(&c.q, &c.k, &c.v, c.shape, 2, &mut rng).unwrap();
    let pinned: [f64; 12] = [
        0.46900617403439393,
        0.49357338260716316,
        0.25500820060859525,
        0.2783258529618314,
        0.2534566554949614,
        0.4850246555703832,
        -0.6860140770620523,
        0.30475383164659714,
        0.4584677763468308,
        0.5409240289658998,
        -0.820790413630793,
        -0.12476962888890883,
    ];
    for (e, p) in est.iter().zip(pinned) {
        assert!((e - p).abs() <= 1e-12 * p.abs().max(1.0), "{est:?}");
    }
}

/// The weights' exponential against libm's over [−708, 0]: within 4·10⁻¹⁶ relative (a few
/// ulp: the degree-12 polynomial truncates below 2·10⁻¹⁶); exactly 1 at 0; e^{−708} below.
#[test]
fn weights_exponential_is_libm_to_a_few_ulp() {
    let mut worst = 0.0f64;
    let mut x = 0.0f64;
    while x >= -708.0 {
        let (got, exact) = (super::exp_of_non_positive(x), x.exp());
        worst = worst.max((got - exact).abs() / exact);
        x -= 0.000_731;
    }
    assert!(worst < 4e-16, "worst relative error {worst:e}");
    assert_eq!(super::exp_of_non_positive(0.0), 1.0);
    assert_eq!(
        super::exp_of_non_positive(-1e6),
        super::exp_of_non_positive(-708.0)
    );
    assert!(super::exp_of_non_positive(-708.0) > 0.0);
}

/// The f32 draw takes the f64 draw's samples from the same stream and gives its output to f32
/// rounding: within 2·10⁻⁵ (values of size 1, 32 samples' weights each a ratio of sums of
/// exponentials) at a model head's size (L = 37, d = 16, dv = 8, 4 samples) and at the small
/// pinned case; the stream is left where the f64 draw leaves it; bad input refused.
#[test]
fn the_f32_draw_is_the_f64_draw_to_f32_rounding() {
    let shape = AttentionShape {
        len: 37,
        d: 16,
        dv: 8,
    };
    let mut rng = stream_rng(5, StreamPurpose::Trial, 1, 0);
    let q = rows(37, 16, 0.5, 3.0, &mut rng);
    let k = rows(37, 16, 0.5, 3.0, &mut rng);
    let v = rows(37, 8, 1.0, 1.0, &mut rng);
    let c = case(1.0, 2.0);
    for (q, k, v, shape, samples) in [(&q, &k, &v, shape, 4), (&c.q, &c.k, &c.v, c.shape, 2)] {
        let mut a = stream_rng(3, StreamPurpose::Trial, 9, 0);
        let mut b = a.clone();
        let want = randomized_attention(q, k, v, shape, samples, &mut a).unwrap();
        let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        let got = randomized_attention_f32(q, k, &v32, shape, samples, &mut b).unwrap();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert!((f64::from(*g) - w).abs() <= 2e-5, "{g} vs {w}");
        }
        assert_eq!(a, b, "the same draws, the stream left in the same place");
    }
    let mut rng = stream_rng(3, StreamPurpose::Trial, 9, 0);
    let v32 = vec![0.0f32; 12];
    assert!(randomized_attention_f32(&c.q, &c.k, &v32, c.shape, 0, &mut rng).is_err());
    assert!(randomized_attention_f32(&c.q, &c.k, &v32[..11], c.shape, 2, &mut rng).is_err());
    let mut nan = v32.clone();
    nan[3] = f32::NAN;
    assert!(randomized_attention_f32(&c.q, &c.k, &nan, c.shape, 2, &mut rng).is_err());
}
