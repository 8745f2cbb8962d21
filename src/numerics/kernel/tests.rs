//! The kernel's tests: the f32 `exp`, the block sums and the padded projections against f64.

use super::*;
use crate::numerics::estimators::Projections;
use crate::numerics::logspace::{log_sum_cosh, log_sum_exp};
use crate::numerics::rng::{StreamPurpose, stream_rng};

#[test]
fn polynomial_exp_is_within_three_ulp_of_the_library_exp() {
    let mut worst = 0.0f64;
    for i in 0..=100_000 {
        let x = -87.0 * i as f32 / 100_000.0;
        let exact = f64::from(x).libm_exp();
        let relative = (f64::from(exp_nonpositive(x)) - exact).abs() / exact;
        worst = worst.max(relative);
    }
    // 3 ulp of f32 is 3 · 2^-23 ≈ 3.6e-7.
    assert!(worst < 3.6e-7, "worst relative error {worst:e}");
    assert_eq!(exp_nonpositive(0.0), 1.0);
    assert!(exp_nonpositive(-1000.0) > 0.0);
}

#[test]
fn log_sum_cosh_matches_f64_on_both_sides_of_the_shared_reduction_limit() {
    use rand::RngExt;
    let mut rng = stream_rng(5, StreamPurpose::Trial, 0, 0);
    for scale in [1e-3f32, 0.5, 3.0, 40.0, 300.0, 5000.0, 8000.0, 9000.0, 1e6] {
        for m in [1usize, 9, 64, 1027] {
            let t: Vec<f32> = (0..m)
                .map(|_| scale * (2.0 * rng.random::<f32>() - 1.0))
                .collect();
            let t64: Vec<f64> = t.iter().map(|v| f64::from(*v)).collect();
            let (got, want) = (log_sum_cosh_f32(&t, false), log_sum_cosh(&t64));
            // f32 sums of m terms: a relative error near m · 2^-24 in the sum, plus the
            // rounding of the shift at large magnitudes.
            let tolerance = 1e-6 * (1.0 + (m as f64).sqrt()) + 1e-7 * want.abs();
            assert!(
                (got - want).abs() < tolerance,
                "scale {scale} m {m}: {got} vs {want}"
            );
        }
    }
    // The even/odd split keeps e^{±r} within 2 ulp where one term dominates.
    for t in [0.0f32, 0.3, -0.3, 1.0, -17.5, 86.0, 100.0, -2000.0] {
        let want = log_sum_cosh(&[f64::from(t)]);
        assert!(
            (log_sum_cosh_f32(&[t], false) - want).abs() < 3e-7 * (1.0 + want.abs()),
            "{t}"
        );
    }
}

#[test]
fn every_prefix_sum_is_bit_for_bit_the_sum_of_that_prefix_alone() {
    use rand::RngExt;
    // The lane sums run on from one length to the next where they can (shifts up to 63) and
    // start again where they cannot (larger shifts, a shorter length): each length must get
    // its own sum, bit for bit, in either mode. `log_sum_cosh_f32` is the same function at
    // one length, so the whole-row sums are checked against the f64 ones above.
    let mut rng = stream_rng(9, StreamPurpose::Trial, 0, 0);
    let running = [16usize, 32, 64, 128, 256, 512, 1024];
    let cases: [(&[usize], f32); 8] = [
        (&running, 0.3),
        (&running, 8.0),
        // a shift past 63 at the larger lengths: those are summed alone
        (&running, 40.0),
        (&running, 300.0),
        // lengths that are not whole chunks, one repeated, a shorter one, one past the end
        (&[16, 21, 64, 64, 1024], 3.0),
        (&[5, 13, 1000, 1023], 8.0),
        (&[64, 32, 2000], 3.0),
        (&[0, 8, 1024], 1.0),
    ];
    for (lengths, scale) in cases {
        // Magnitudes that grow along the row, so that later prefixes need larger shifts.
        let t: Vec<f32> = (0..1024)
            .map(|i| scale * (1.0 + i as f32 / 256.0) * (2.0 * rng.random::<f32>() - 1.0))
            .collect();
        for fused in [false, true] {
            let mut got = vec![f64::NAN; lengths.len()];
            log_sum_cosh_prefixes(&t, lengths, fused, &mut |i, value| got[i] = value);
            for (&m, value) in lengths.iter().zip(&got) {
                let alone = log_sum_cosh_f32(&t[..m.min(t.len())], fused);
                assert_eq!(
                    value.to_bits(),
                    alone.to_bits(),
                    "scale {scale}, lengths {lengths:?}, m {m}, fused {fused}: {value} vs {alone}"
                );
            }
        }
    }
}

#[test]
fn log_sums_match_the_f64_sums_including_odd_lengths() {
    let mut rng = stream_rng(3, StreamPurpose::Trial, 0, 0);
    for (m, d) in [(1, 1), (7, 3), (16, 50), (1000, 17), (37, 64)] {
        let omega = Projections::sample(m, d, &mut rng).unwrap();
        let transposed = TransposedOmega::new(&omega);
        let z64: Vec<f64> = (0..3 * d)
            .map(|i| ((i * 7 % 11) as f64 - 5.0) / 9.0)
            .collect();
        let z32: Vec<f32> = z64.iter().map(|v| *v as f32).collect();
        for form in [FeatureForm::Positive, FeatureForm::Hyperbolic] {
            let mut out = [0.0; ROWS];
            log_sums(
                &transposed,
                &z32,
                3,
                form,
                &mut KernelScratch::default(),
                &mut out,
            );
            for (r, got) in out.iter().take(3).enumerate() {
                let t: Vec<f64> = omega
                    .rows()
                    .map(|w| {
                        w.iter()
                            .zip(&z64[r * d..(r + 1) * d])
                            .map(|(a, b)| a * b)
                            .sum()
                    })
                    .collect();
                let want = match form {
                    FeatureForm::Positive => log_sum_exp(&t),
                    FeatureForm::Hyperbolic => log_sum_cosh(&t),
                };
                assert!(
                    (got - want).abs() < 2e-5,
                    "m {m} d {d} {form:?}: {got} vs {want}"
                );
            }
        }
    }
}

#[test]
fn a_prefix_holds_the_first_projections() {
    let omega = Projections::sample(40, 5, &mut stream_rng(4, StreamPurpose::Trial, 0, 0)).unwrap();
    let first: Vec<f64> = omega.rows().take(13).flatten().copied().collect();
    let head = Projections::sample(13, 5, &mut stream_rng(4, StreamPurpose::Trial, 0, 0)).unwrap();
    // A stream's first rows do not depend on how many rows are drawn after them.
    assert_eq!(head.rows().flatten().copied().collect::<Vec<_>>(), first);
    assert_eq!(TransposedOmega::new(&omega).prefix(13).m(), 13);
    let z: Vec<f32> = (0..5).map(|i| i as f32 * 0.1 - 0.2).collect();
    let (mut a, mut b) = ([0.0; ROWS], [0.0; ROWS]);
    let form = FeatureForm::Hyperbolic;
    log_sums(
        &TransposedOmega::new(&omega).prefix(13),
        &z,
        1,
        form,
        &mut KernelScratch::default(),
        &mut a,
    );
    log_sums(
        &TransposedOmega::new(&head),
        &z,
        1,
        form,
        &mut KernelScratch::default(),
        &mut b,
    );
    assert_eq!(a[0], b[0]);
}

#[test]
fn huge_projections_stay_finite() {
    let omega = Projections::sample(64, 3, &mut stream_rng(2, StreamPurpose::Trial, 0, 0)).unwrap();
    let transposed = TransposedOmega::new(&omega);
    // z is exact in f32; exp(ω·z) overflows f32 (and f64) for most k.
    let z = [900.0f32, -700.0, 500.0];
    let z64: Vec<f64> = z.iter().map(|v| f64::from(*v)).collect();
    let t: Vec<f64> = omega
        .rows()
        .map(|w| w.iter().zip(&z64).map(|(a, b)| a * b).sum())
        .collect();
    // The f32 tolerance of the log-sum tests above, 1e-6 (1 + √m) + 1e-7 |want|, plus what the
    // f32 projection adds: ω rounded to f32, d products and d − 1 sums, each a relative 2^-24,
    // so |Δt_k| ≤ (d + 1) 2^-24 Σ_i |ω_ki z_i|; a log-sum moves by at most max_k |Δt_k|.
    let d = 3.0;
    let projection = omega
        .rows()
        .map(|w| w.iter().zip(&z64).map(|(a, b)| (a * b).abs()).sum::<f64>())
        .fold(0.0, f64::max)
        * (d + 1.0)
        * 2f64.powi(-24);
    for form in [FeatureForm::Positive, FeatureForm::Hyperbolic] {
        let mut out = [0.0; ROWS];
        log_sums(
            &transposed,
            &z,
            1,
            form,
            &mut KernelScratch::default(),
            &mut out,
        );
        let want = match form {
            FeatureForm::Positive => log_sum_exp(&t),
            FeatureForm::Hyperbolic => log_sum_cosh(&t),
        };
        let tolerance = 1e-6 * (1.0 + 64f64.sqrt()) + 1e-7 * want.abs() + projection;
        assert!(
            want > 88.0 && (out[0] - want).abs() < tolerance,
            "{form:?}: {} vs f64 {want} (tolerance {tolerance:e})",
            out[0]
        );
    }
}

#[test]
fn the_weighted_block_sums_match_reduce_in_f64() {
    // GERF's weighted sums (`ScaledExp`, and `ScaledCosh` of the hyperbolic DERF members) take
    // the f32 projections into `reduce`: against the f64 projections they differ only by the
    // f32 rounding of ω and z (a relative 2^-24 per product, d + 1 of them per projection).
    let mut rng = stream_rng(6, StreamPurpose::Trial, 0, 0);
    let (m, d) = (37, 5);
    let omega = Projections::sample(m, d, &mut rng).unwrap();
    let transposed = TransposedOmega::new(&omega);
    let norms = omega.squared_norms();
    let z64: Vec<f64> = (0..3 * d)
        .map(|i| ((i * 5 % 13) as f64 - 6.0) / 7.0)
        .collect();
    let z32: Vec<f32> = z64.iter().map(|v| *v as f32).collect();
    for sum in [
        FastSum::ScaledExp {
            scale: 0.9,
            norm_weight: -0.07,
        },
        FastSum::ScaledCosh {
            scale: 0.9,
            norm_weight: -0.07,
        },
    ] {
        let mut out = [SignedLog::positive(0.0); ROWS];
        let block = Block {
            omega: &transposed,
            z: &z32,
            pairs: 3,
            per_pair: 1,
            sum,
            phases: &[0.0; ROWS],
        };
        prefix_block_sums(block, &[m], &mut KernelScratch::default(), |_, p, value| {
            out[p] = value
        });
        for (r, got) in out.iter().take(3).enumerate() {
            let mut t = vec![0.0; m];
            omega.project(&z64[r * d..(r + 1) * d], &mut t);
            let want = reduce(sum, &t, &[], &norms, 0.0);
            assert!(!got.negative);
            assert!(
                (got.ln_abs - want.ln_abs).abs() < 2e-5,
                "{sum:?} row {r}: {got:?} vs {want:?}"
            );
        }
    }
}

#[test]
fn packing_writes_each_projection_and_its_norm_where_the_kernel_reads_them() {
    // Panel p, coordinate j, lane l holds ω_{8p+l}[j] rounded to f32, zero past m; the norms
    // are the f64 rows' own, bit for bit (whole panels and a partial last one).
    for (m, d) in [(1, 1), (8, 3), (13, 50), (37, 5), (1024, 50)] {
        let mut rng = stream_rng(3, StreamPurpose::Trial, m as u64, d as u64);
        let omega = Projections::sample(m, d, &mut rng).unwrap();
        let packed = TransposedOmega::new(&omega);
        assert_eq!(packed.stride, m.div_ceil(COLUMNS) * COLUMNS);
        assert_eq!(packed.data.len(), packed.stride * d);
        for p in 0..packed.stride / COLUMNS {
            for j in 0..d {
                for l in 0..COLUMNS {
                    let k = p * COLUMNS + l;
                    let want = if k < m {
                        omega.as_slice()[k * d + j] as f32
                    } else {
                        0.0
                    };
                    let got = packed.data[(p * d + j) * COLUMNS + l];
                    assert_eq!(got.to_bits(), want.to_bits(), "m {m} d {d} k {k} j {j}");
                }
            }
        }
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&packed.squared_norms), bits(&omega.squared_norms()));
    }
}
