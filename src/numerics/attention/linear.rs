//! Linear attention with feature maps φ, ψ (REFERENCE.md, "The attention level"):
//! `ô_i = φ(q_i)·(Σ_j ψ(k_j) v_jᵀ) / φ(q_i)·(Σ_l ψ(k_l))`, in O(L·D·dv), never forming P̂.
//!
//! One pass over the keys accumulates `S = Σ_j ψ(k_j) v_jᵀ` and `z = Σ_j ψ(k_j)`, and, for the
//! few rows the charts need (the total-variation rows, or every row of the matrix block), the
//! entries `φ(q_i)·ψ(k_j)`; one pass over the queries then forms every output. Memory is
//! O(D·dv + rows·L), whatever L.

use std::fmt;

use crate::numerics::estimators::Side;

use super::data::AttentionData;

/// A pair of feature maps (φ for queries, ψ for keys): what linear attention needs of a
/// method. Each method's file implements it for its own map.
pub trait FeatureMap: fmt::Debug {
    /// The features of one token.
    fn features(&self, u: &[f64], side: Side) -> Vec<f64>;
    /// Whether every feature is non-negative (then a row's denominator cannot be ≤ 0 except
    /// by underflow).
    fn is_positive(&self) -> bool;
}

/// A row's denominator `φ(q_i)·Σ_l ψ(k_l)` is treated as unusable when it is not finite, ≤ 0,
/// or (signed features) below this fraction of `|φ(q_i)|·Σ_l |ψ(k_l)|`, an upper bound of the
/// terms' absolute sum: dividing by it would amplify rounding, not estimate.
pub const NEAR_ZERO_DENOMINATOR: f64 = 1e-9;

/// What one method computed on one draw.
#[derive(Clone, Debug, PartialEq)]
pub struct ApproximateAttention {
    /// Outputs ô (L × dv); rows with an unusable denominator are NaN.
    pub output: Vec<f64>,
    /// Each row's denominator `φ(q_i)·Σ_l ψ(k_l)` (for a quadratic method `Σ_l k(q_i, k_l)`).
    pub denominators: Vec<f64>,
    /// Rows whose denominator was unusable (not finite, ≤ 0 or near 0).
    pub bad_rows: usize,
    /// The requested rows of P̂ (each of length L; NaN for an unusable row), in request order.
    pub rows: Vec<Vec<f64>>,
}

impl ApproximateAttention {
    /// Whether row i has an output.
    pub fn usable(&self, i: usize, dv: usize) -> bool {
        self.output.get(i * dv).is_some_and(|x| x.is_finite())
    }
}

/// Linear attention with `map`, in one pass over the keys and one over the queries.
/// `rows` lists the rows of P̂ to return (indices ≥ L are ignored).
pub fn linear_attention(
    map: &dyn FeatureMap,
    data: &AttentionData,
    rows: &[usize],
) -> ApproximateAttention {
    let rows: Vec<usize> = rows.iter().copied().filter(|&i| i < data.len).collect();
    let dv = data.dv;
    let row_features: Vec<Vec<f64>> = rows
        .iter()
        .map(|&i| map.features(data.query(i), Side::Query))
        .collect();
    let mut size = 0;
    let mut s: Vec<f64> = Vec::new();
    let mut z: Vec<f64> = Vec::new();
    let mut key_norm_sum = 0.0;
    let mut entries: Vec<Vec<f64>> = rows.iter().map(|_| vec![0.0; data.len]).collect();
    for j in 0..data.len {
        let psi = map.features(data.key(j), Side::Key);
        if j == 0 {
            size = psi.len();
            s = vec![0.0; size * dv];
            z = vec![0.0; size];
        }
        if psi.len() != size {
            continue;
        }
        let v = data.value(j);
        for (f, psi_f) in psi.iter().enumerate() {
            z[f] += psi_f;
            for (s, v) in s[f * dv..(f + 1) * dv].iter_mut().zip(v) {
                *s += psi_f * v;
            }
        }
        key_norm_sum += norm(&psi);
        for (entry, phi) in entries.iter_mut().zip(&row_features) {
            entry[j] = dot_checked(phi, &psi);
        }
    }
    let positive = map.is_positive();
    let mut output = vec![0.0; data.len * dv];
    let mut denominators = vec![0.0; data.len];
    let mut bad_rows = 0;
    for i in 0..data.len {
        let phi = match rows.iter().position(|&r| r == i) {
            Some(t) => row_features[t].clone(),
            None => map.features(data.query(i), Side::Query),
        };
        let den = dot_checked(&phi, &z);
        denominators[i] = den;
        let scale = norm(&phi) * key_norm_sum;
        let o = &mut output[i * dv..(i + 1) * dv];
        if !usable_denominator(den, scale, positive) || phi.len() != size {
            bad_rows += 1;
            o.fill(f64::NAN);
            continue;
        }
        for (f, phi_f) in phi.iter().enumerate() {
            for (o, s) in o.iter_mut().zip(&s[f * dv..(f + 1) * dv]) {
                *o += phi_f * s;
            }
        }
        o.iter_mut().for_each(|o| *o /= den);
    }
    let rows = rows
        .iter()
        .zip(entries)
        .map(|(&i, entry)| normalise(entry, denominators[i], output[i * dv].is_finite()))
        .collect();
    ApproximateAttention {
        output,
        denominators,
        bad_rows,
        rows,
    }
}

/// Attention with a kernel evaluated pair by pair, `k(q_i, k_j)` (O(L²·d)): the fallback of a
/// deterministic map whose features exceed the budget.
pub fn quadratic_attention(
    kernel: &dyn Fn(&[f64], &[f64]) -> f64,
    data: &AttentionData,
    rows: &[usize],
) -> ApproximateAttention {
    let dv = data.dv;
    let mut output = vec![0.0; data.len * dv];
    let mut denominators = vec![0.0; data.len];
    let mut bad_rows = 0;
    let mut kept = Vec::new();
    let mut weights = vec![0.0; data.len];
    for i in 0..data.len {
        let mut den = 0.0;
        let mut scale = 0.0;
        for (j, w) in weights.iter_mut().enumerate() {
            *w = kernel(data.query(i), data.key(j));
            den += *w;
            scale += w.abs();
        }
        denominators[i] = den;
        let o = &mut output[i * dv..(i + 1) * dv];
        let usable = usable_denominator(den, scale, false);
        if usable {
            for (j, w) in weights.iter().enumerate() {
                for (o, v) in o.iter_mut().zip(data.value(j)) {
                    *o += w * v;
                }
            }
            o.iter_mut().for_each(|o| *o /= den);
        } else {
            bad_rows += 1;
            o.fill(f64::NAN);
        }
        if rows.contains(&i) {
            kept.push((i, normalise(weights.clone(), den, usable)));
        }
    }
    let rows = rows
        .iter()
        .filter_map(|r| {
            kept.iter()
                .find(|(i, _)| i == r)
                .map(|(_, row)| row.clone())
        })
        .collect();
    ApproximateAttention {
        output,
        denominators,
        bad_rows,
        rows,
    }
}

fn usable_denominator(den: f64, scale: f64, positive: bool) -> bool {
    if !den.is_finite() || den <= 0.0 {
        return false;
    }
    positive || den > NEAR_ZERO_DENOMINATOR * scale
}

fn normalise(mut entry: Vec<f64>, den: f64, usable: bool) -> Vec<f64> {
    if usable {
        entry.iter_mut().for_each(|e| *e /= den);
    } else {
        entry.fill(f64::NAN);
    }
    entry
}

fn norm(u: &[f64]) -> f64 {
    u.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// `u·v`, NaN when the lengths differ (never a silent truncation).
fn dot_checked(u: &[f64], v: &[f64]) -> f64 {
    if u.len() != v.len() {
        return f64::NAN;
    }
    u.iter().zip(v).map(|(a, b)| a * b).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numerics::attention::deterministic::PolynomialKernel;
    use crate::numerics::attention::lln::LogNormalFeatures;
    use crate::numerics::attention::methods::elu::EluPlusOne;
    use crate::numerics::attention::methods::random_features::EstimatorFeatures;
    use crate::numerics::estimators::{EstimatorId, Fit, Projections};
    use crate::numerics::rng::{StreamPurpose, stream_rng};
    use rand_distr::{Distribution, StandardNormal};

    fn gaussian(len: usize, d: usize, dv: usize, scale: f64, seed: u64) -> AttentionData {
        let mut rng = stream_rng(seed, StreamPurpose::Trial, 77, 0);
        let mut draw = |n: usize, s: f64| -> Vec<f64> {
            (0..n)
                .map(|_| {
                    let z: f64 = StandardNormal.sample(&mut rng);
                    s * z
                })
                .collect::<Vec<f64>>()
        };
        let q = draw(len * d, scale);
        let k = draw(len * d, scale);
        let v = draw(len * dv, 1.0);
        AttentionData::new(len, d, dv, q, k, v).unwrap()
    }

    /// `P̂ V` formed explicitly from `φ(q_i)·ψ(k_j)`.
    fn explicit(map: &dyn FeatureMap, data: &AttentionData) -> Vec<f64> {
        let mut out = vec![0.0; data.len * data.dv];
        for i in 0..data.len {
            let phi = map.features(data.query(i), Side::Query);
            let w: Vec<f64> = (0..data.len)
                .map(|j| dot_checked(&phi, &map.features(data.key(j), Side::Key)))
                .collect();
            let den: f64 = w.iter().sum();
            for (j, w) in w.iter().enumerate() {
                for (c, v) in data.value(j).iter().enumerate() {
                    out[i * data.dv + c] += w * v / den;
                }
            }
        }
        out
    }

    #[test]
    fn the_linear_time_output_equals_explicit_p_hat_times_v() {
        let data = gaussian(12, 4, 3, 0.6, 1);
        let mut rng = stream_rng(5, StreamPurpose::Trial, 78, 0);
        let maps: Vec<Box<dyn FeatureMap>> = vec![
            Box::new(EstimatorFeatures {
                id: EstimatorId::from_id("prf-pos").unwrap(),
                fit: Fit::identity(4),
                omega: Projections::sample(16, 4, &mut rng).unwrap(),
            }),
            Box::new(EstimatorFeatures {
                id: EstimatorId::from_id("hcexp-var").unwrap(),
                fit: Fit::diagonal(vec![0.8, 1.2, 1.0, 0.9], 0),
                omega: Projections::sample(16, 4, &mut rng).unwrap(),
            }),
            Box::new(PolynomialKernel::taylor(2).unwrap()),
            Box::new(PolynomialKernel::power(3).unwrap()),
            Box::new(LogNormalFeatures {
                alpha: 0.7,
                beta: 0.4,
            }),
            Box::new(EluPlusOne),
        ];
        let all: Vec<usize> = (0..data.len).collect();
        for map in &maps {
            let map = map.as_ref();
            let fast = linear_attention(map, &data, &all);
            let slow = explicit(map, &data);
            assert_eq!(fast.bad_rows, 0, "{map:?}");
            for (a, b) in fast.output.iter().zip(&slow) {
                assert!(
                    (a - b).abs() <= 1e-10 * (1.0 + b.abs()),
                    "{a} vs {b} for {map:?}"
                );
            }
            // The returned rows are P̂'s rows: they sum to 1 and reproduce the output.
            for (i, row) in fast.rows.iter().enumerate() {
                assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-10);
                let o0: f64 = row
                    .iter()
                    .enumerate()
                    .map(|(j, p)| p * data.value(j)[0])
                    .sum();
                assert!((o0 - fast.output[i * data.dv]).abs() < 1e-10);
            }
        }
    }

    #[test]
    fn the_quadratic_fallback_equals_the_materialised_map() {
        let data = gaussian(10, 3, 2, 0.5, 2);
        let taylor = PolynomialKernel::taylor(3).unwrap();
        let kernel = |q: &[f64], k: &[f64]| taylor.kernel(dot_checked(q, k));
        let quadratic = quadratic_attention(&kernel, &data, &[0, 4]);
        let linear = linear_attention(&taylor, &data, &[0, 4]);
        for (a, b) in quadratic.output.iter().zip(&linear.output) {
            assert!((a - b).abs() < 1e-10);
        }
        for (a, b) in quadratic
            .rows
            .iter()
            .flatten()
            .zip(linear.rows.iter().flatten())
        {
            assert!((a - b).abs() < 1e-10);
        }
    }

    #[test]
    fn non_positive_denominators_are_counted_and_never_divided_by() {
        // (1 + q·k/1)^1 with q·k < −1 for every key: every denominator is negative.
        let data =
            AttentionData::new(2, 1, 1, vec![3.0, 2.0], vec![-1.0, -2.0], vec![1.0, 1.0]).unwrap();
        let map = PolynomialKernel::power(1).unwrap();
        let run = linear_attention(&map, &data, &[0]);
        assert_eq!(run.bad_rows, 2);
        assert!(run.output.iter().all(|x| x.is_nan()));
        assert!(run.rows[0].iter().all(|x| x.is_nan()));
        assert!(run.denominators.iter().all(|d| *d < 0.0));
    }
}
