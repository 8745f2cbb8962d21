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
/// `rows` lists the rows of P̂ to return (indices ≥ L are ignored). Under the causal mask
/// (`data.causal`) the sums are prefix sums, `S_i = Σ_{j≤i} ψ(k_j) v_jᵀ`, `z_i = Σ_{j≤i} ψ(k_j)`
/// (Katharopoulos et al. 2020, eq. 9): query i is answered as soon as key i is added, in the
/// same single pass, and `P̂_ij = 0` for j > i.
pub fn linear_attention(
    map: &dyn FeatureMap,
    data: &AttentionData,
    rows: &[usize],
) -> ApproximateAttention {
    let rows: Vec<usize> = rows.iter().copied().filter(|&i| i < data.len).collect();
    let row_features: Vec<Vec<f64>> = rows
        .iter()
        .map(|&i| map.features(data.query(i), Side::Query))
        .collect();
    let mut sums = KeySums {
        size: 0,
        s: Vec::new(),
        z: Vec::new(),
        key_norm_sum: 0.0,
        positive: map.is_positive(),
    };
    let mut entries: Vec<Vec<f64>> = rows.iter().map(|_| vec![0.0; data.len]).collect();
    let mut output = vec![0.0; data.len * data.dv];
    let mut denominators = vec![0.0; data.len];
    let mut bad_rows = 0;
    let mut answer = |i: usize, sums: &KeySums| {
        let phi = match rows.iter().position(|&r| r == i) {
            Some(t) => row_features[t].clone(),
            None => map.features(data.query(i), Side::Query),
        };
        let o = &mut output[i * data.dv..(i + 1) * data.dv];
        match sums.answer(&phi, o) {
            Some(den) => denominators[i] = den,
            None => {
                denominators[i] = dot_checked(&phi, &sums.z);
                bad_rows += 1;
            }
        }
    };
    for j in 0..data.len {
        let psi = map.features(data.key(j), Side::Key);
        sums.add(&psi, data.value(j), data.dv);
        let wanted = (0..rows.len()).filter(|&t| !data.causal || j <= rows[t]);
        entries_at(&mut entries, &row_features, wanted, j, &psi);
        if data.causal {
            answer(j, &sums);
        }
    }
    if !data.causal {
        for i in 0..data.len {
            answer(i, &sums);
        }
    }
    let rows = rows
        .iter()
        .zip(entries)
        .map(|(&i, entry)| normalise(entry, denominators[i], output[i * data.dv].is_finite()))
        .collect();
    ApproximateAttention {
        output,
        denominators,
        bad_rows,
        rows,
    }
}

/// The running sums of linear attention over the keys added so far: `S = Σ ψ(k_j) v_jᵀ`,
/// `z = Σ ψ(k_j)` and `Σ |ψ(k_j)|` (the scale a signed denominator is judged against).
struct KeySums {
    size: usize,
    s: Vec<f64>,
    z: Vec<f64>,
    key_norm_sum: f64,
    positive: bool,
}

impl KeySums {
    /// Adds key features `psi` with value `v`; features of another size than the first
    /// key's are skipped (the rows that would read them come out unusable).
    fn add(&mut self, psi: &[f64], v: &[f64], dv: usize) {
        if self.z.is_empty() && self.size == 0 {
            self.size = psi.len();
            self.s = vec![0.0; self.size * dv];
            self.z = vec![0.0; self.size];
        }
        if psi.len() != self.size {
            return;
        }
        for (f, psi_f) in psi.iter().enumerate() {
            self.z[f] += psi_f;
            for (s, v) in self.s[f * dv..(f + 1) * dv].iter_mut().zip(v) {
                *s += psi_f * v;
            }
        }
        self.key_norm_sum += norm(psi);
    }

    /// Writes `φ·S / φ·z` into `o` and returns the denominator, or fills `o` with NaN and
    /// returns `None` when the denominator is unusable.
    fn answer(&self, phi: &[f64], o: &mut [f64]) -> Option<f64> {
        let dv = o.len();
        let den = dot_checked(phi, &self.z);
        let scale = norm(phi) * self.key_norm_sum;
        if !usable_denominator(den, scale, self.positive) || phi.len() != self.size {
            o.fill(f64::NAN);
            return None;
        }
        o.fill(0.0);
        for (f, phi_f) in phi.iter().enumerate() {
            for (o, s) in o.iter_mut().zip(&self.s[f * dv..(f + 1) * dv]) {
                *o += phi_f * s;
            }
        }
        o.iter_mut().for_each(|o| *o /= den);
        Some(den)
    }
}

/// Attention with a kernel evaluated pair by pair, `k(q_i, k_j)` (O(L²·d)): the fallback of a
/// deterministic map whose features exceed the budget. Under the causal mask row i sums over
/// j ≤ i only.
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
        let seen = data.keys_seen_by(i);
        for (j, w) in weights.iter_mut().enumerate() {
            *w = if j < seen {
                kernel(data.query(i), data.key(j))
            } else {
                0.0
            };
            den += *w;
            scale += w.abs();
        }
        denominators[i] = den;
        let o = &mut output[i * dv..(i + 1) * dv];
        let usable = usable_denominator(den, scale, false);
        if usable {
            for (j, w) in weights.iter().enumerate().take(seen) {
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

/// Column `j` of the requested rows of P̂ before normalising: `entries[t][j] = φ_t·ψ` for
/// each row `t` of `wanted`. Four rows at a time, each sum in [`dot_checked`]'s order (so
/// bit for bit), four independent chains of additions instead of one (each add of a single
/// chain waits for the last; a block of 96 rows at m = 256 spent half the temperature part
/// here).
fn entries_at(
    entries: &mut [Vec<f64>],
    row_features: &[Vec<f64>],
    wanted: impl Iterator<Item = usize>,
    j: usize,
    psi: &[f64],
) {
    let n = psi.len();
    let mut group = [0usize; 4];
    let mut filled = 0;
    for t in wanted {
        if row_features[t].len() != n {
            entries[t][j] = f64::NAN;
            continue;
        }
        group[filled] = t;
        filled += 1;
        if filled == 4 {
            let dots = four_dots(group.map(|t| &row_features[t][..n]), psi);
            for (&t, dot) in group.iter().zip(dots) {
                entries[t][j] = dot;
            }
            filled = 0;
        }
    }
    for &t in &group[..filled] {
        entries[t][j] = dot_checked(&row_features[t], psi);
    }
}

/// `φ_r·ψ` for four rows of ψ's length, each summed from −0 in order as `Iterator::sum` does.
fn four_dots(phis: [&[f64]; 4], psi: &[f64]) -> [f64; 4] {
    let n = psi.len();
    let [a, b, c, d] = phis.map(|p| &p[..n]);
    let mut acc = [-0.0f64; 4];
    for f in 0..n {
        let p = psi[f];
        acc[0] += a[f] * p;
        acc[1] += b[f] * p;
        acc[2] += c[f] * p;
        acc[3] += d[f] * p;
    }
    acc
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

    /// Performer's positive map and the variance-adjusted hyperbolic one (signed features),
    /// m = 16 on d = 4, their ω from `rng`.
    fn random_maps(rng: &mut crate::numerics::rng::StreamRng) -> Vec<Box<dyn FeatureMap>> {
        vec![
            Box::new(EstimatorFeatures {
                id: EstimatorId::from_id("prf-pos").unwrap(),
                fit: Fit::identity(4),
                omega: Projections::sample(16, 4, rng).unwrap(),
            }),
            Box::new(EstimatorFeatures {
                id: EstimatorId::from_id("hcexp-var").unwrap(),
                fit: Fit::diagonal(vec![0.8, 1.2, 1.0, 0.9], 0),
                omega: Projections::sample(16, 4, rng).unwrap(),
            }),
        ]
    }

    /// The causal form answers query i from the prefix sums over keys 0..=i: the same numbers
    /// as the bidirectional form run on the first i + 1 tokens alone (an independent path:
    /// full sums over a shorter sequence), for a random map (signed features too), a
    /// positive one and a polynomial evaluated pair by pair.
    /// The entries go four rows at a time, each a sum in `dot_checked`'s order: bit for bit
    /// the one-row dot (signed zeros included), whatever the rows' count modulo four, and a
    /// row of another length than the key's features is NaN.
    #[test]
    fn entries_four_rows_at_a_time_are_the_one_row_dots_bit_for_bit() {
        let mut rng = stream_rng(5, StreamPurpose::Trial, 3, 0);
        for (rows, n) in [(1, 7), (4, 33), (7, 256), (9, 1)] {
            let mut draw = |n: usize| -> Vec<f64> {
                (0..n)
                    .map(|_| {
                        let x: f64 = StandardNormal.sample(&mut rng);
                        x * 1e3f64.powf(StandardNormal.sample(&mut rng))
                    })
                    .collect()
            };
            let psi = draw(n);
            let mut features: Vec<Vec<f64>> = (0..rows).map(|_| draw(n)).collect();
            // A row of negative zeros against positive features sums to −0.
            features[0] = vec![-0.0; n];
            let mut short = features.clone();
            short.push(draw(n + 1));
            let mut entries = vec![vec![0.0; 3]; short.len()];
            entries_at(&mut entries, &short, 0..short.len(), 2, &psi);
            for (t, phi) in features.iter().enumerate() {
                let one: f64 = phi.iter().zip(&psi).map(|(a, b)| a * b).sum();
                assert_eq!(
                    entries[t][2].to_bits(),
                    one.to_bits(),
                    "rows {rows}, n {n}, row {t}"
                );
            }
            assert!(entries[rows][2].is_nan());
        }
    }

    #[test]
    fn causal_rows_equal_the_bidirectional_rows_of_each_prefix() {
        let data = gaussian(10, 4, 3, 0.6, 2).with_causal_mask(true);
        let mut rng = stream_rng(6, StreamPurpose::Trial, 79, 0);
        let mut maps = random_maps(&mut rng);
        maps.push(Box::new(EluPlusOne));
        let all: Vec<usize> = (0..data.len).collect();
        for map in &maps {
            let causal = linear_attention(map.as_ref(), &data, &all);
            for i in 0..data.len {
                let prefix = data.prefix(i + 1).with_causal_mask(false);
                let alone = linear_attention(map.as_ref(), &prefix, &[i]);
                for c in 0..data.dv {
                    let (a, b) = (
                        causal.output[i * data.dv + c],
                        alone.output[i * data.dv + c],
                    );
                    assert!(
                        (a - b).abs() < 1e-12 * (1.0 + b.abs()),
                        "{map:?} row {i}: {a} vs {b}"
                    );
                }
                let row = &causal.rows[i];
                for (j, (a, b)) in row.iter().zip(&alone.rows[0]).enumerate() {
                    assert!((a - b).abs() < 1e-12, "{map:?} P̂[{i}][{j}]: {a} vs {b}");
                }
                assert!(
                    row[i + 1..].iter().all(|&p| p == 0.0),
                    "{map:?} row {i} sees the future"
                );
            }
        }
        let taylor = |q: &[f64], k: &[f64]| {
            let x: f64 = q.iter().zip(k).map(|(a, b)| a * b).sum();
            1.0 + x + x * x / 2.0
        };
        let causal = quadratic_attention(&taylor, &data, &all);
        for i in 0..data.len {
            let prefix = data.prefix(i + 1).with_causal_mask(false);
            let alone = quadratic_attention(&taylor, &prefix, &[i]);
            for c in 0..data.dv {
                let (a, b) = (
                    causal.output[i * data.dv + c],
                    alone.output[i * data.dv + c],
                );
                assert!(
                    (a - b).abs() < 1e-12 * (1.0 + b.abs()),
                    "Taylor row {i}: {a} vs {b}"
                );
            }
            assert!(causal.rows[i][i + 1..].iter().all(|&p| p == 0.0));
        }
    }

    #[test]
    fn the_linear_time_output_equals_explicit_p_hat_times_v() {
        let data = gaussian(12, 4, 3, 0.6, 1);
        let mut rng = stream_rng(5, StreamPurpose::Trial, 78, 0);
        let mut maps = random_maps(&mut rng);
        maps.extend::<[Box<dyn FeatureMap>; 4]>([
            Box::new(PolynomialKernel::taylor(2).unwrap()),
            Box::new(PolynomialKernel::power(3).unwrap()),
            Box::new(LogNormalFeatures {
                alpha: 0.7,
                beta: 0.4,
            }),
            Box::new(EluPlusOne),
        ]);
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
