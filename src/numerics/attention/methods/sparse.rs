//! Sparse + low-rank attention (Scatterbrain, Chen et al., NeurIPS 2021; REFERENCE.md,
//! "Attention-level approximations that are not one kernel estimator").
//!
//! The low-rank part is Performer's positive random features (the registry estimator
//! `prf-pos`, fitted and drawn exactly as its own attention method does: m = `features`
//! projections, orthogonal blocks when `orf`), `φ(q_i)·ψ(k_j)` with `E φ(q)·ψ(k) = e^{q·k}`.
//! The sparse part is a set `S_i` of k keys per query on which the correction
//! `e^{q_i·k_j} − φ(q_i)·ψ(k_j)` is added, so that the unnormalised entry is
//!
//! `Â_ij = e^{q_i·k_j}` on `S_i` (exact) and `φ(q_i)·ψ(k_j)` off it (unbiased),
//!
//! and each row is normalised by its own sum, `ô_i = Σ_j Â_ij v_j / Σ_l Â_il`: the low-rank
//! sums `φ(q_i)·Σ_j ψ(k_j) v_jᵀ`, `φ(q_i)·Σ_j ψ(k_j)` plus the k corrections. Every entry is
//! positive, so every row of P̂ is a distribution; a row whose sum is not finite (a score above
//! ln(f64::MAX) ≈ 709 overflows `e^{q·k}`) or ≤ 0 is a bad row, never divided by. With k = L
//! every key is exact and nothing is left to the features: exact softmax for every draw.
//!
//! **S_i.** Scatterbrain finds the large entries by locality-sensitive hashing; here `S_i` is
//! the k keys of largest score `q_i·k_j` (ties to the lower index): the oracle that LSH
//! approximates. Finding it costs O(L²·d), every score, so this version is quadratic in L
//! (`is_quadratic`, `Evaluation::Quadratic`) even though its draw, given the sets, is
//! O(L·(m·(d + dv) + k·(m + d + dv))). The sets depend only on the data: the fit finds them
//! once. k > L is clamped to L (the fit's note says so).
//!
//! **What the correction costs.** The exact part does not share the features' noise, so the
//! ratio no longer cancels their common scale error (why Performer's ratio is accurate where
//! its single kernel estimates are not): measured with `kernel-lab attention` at L = 64, d = 8,
//! m = 256, norms 0.5, Performer's mean output error is 1.5e-5 and this method's, with k = 8,
//! 1.6e-3 (REFERENCE.md: a better kernel estimate is not always a better attention output).

use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::linear::{ApproximateAttention, FeatureMap};
use crate::numerics::attention::method::{
    AttentionMethod, FitMethod, FittedMethod, MethodFamily, MethodInfo, MethodRun, MethodSettings,
    SharedFits, method_error,
};
use crate::numerics::attention::{AttentionError, Evaluation};
use crate::numerics::estimators::{EstimatorId, Fit, Side, dot};
use crate::numerics::rng::StreamRng;

use super::random_features::{draw_features, fit_estimator, mean_relative_mse_formula};

/// The registry estimator of the low-rank part: Performer's positive random features.
const LOW_RANK_ESTIMATOR: &str = "prf-pos";

fn low_rank_estimator() -> Result<EstimatorId, AttentionError> {
    EstimatorId::from_id(LOW_RANK_ESTIMATOR).ok_or_else(|| {
        method_error(
            SPARSE_INFO.id,
            format!("the estimator {LOW_RANK_ESTIMATOR} is not registered"),
        )
    })
}

/// The k keys of largest score `q_i·k_j` for each query i (ties to the lower index), each
/// list in increasing key order. O(L²·d) for the scores, O(L²) for the selections.
pub fn top_k_keys(data: &AttentionData, k: usize) -> Vec<Vec<usize>> {
    let k = k.min(data.len);
    let mut order: Vec<(f64, usize)> = Vec::with_capacity(data.len);
    (0..data.len)
        .map(|i| {
            if k == 0 {
                return Vec::new();
            }
            let q = data.query(i);
            order.clear();
            order.extend((0..data.len).map(|j| (dot(q, data.key(j)), j)));
            // Largest score first, then the lower index.
            let before =
                |a: &(f64, usize), b: &(f64, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
            if k < data.len {
                order.select_nth_unstable_by(k - 1, before);
            }
            let mut keys: Vec<usize> = order[..k].iter().map(|&(_, j)| j).collect();
            keys.sort_unstable();
            keys
        })
        .collect()
}

/// The method.
#[derive(Clone, Copy, Debug)]
pub struct Sparse;

/// The registry's entry.
pub const SPARSE: Sparse = Sparse;

/// Its description: what the page, the command line and the view's plan read of it.
pub const SPARSE_INFO: MethodInfo = MethodInfo {
    id: "sparse",
    label: "sparse + low-rank (Scatterbrain, top-k)",
    family: MethodFamily::SparseOrLowRank,
    // Tol's pear: apart from oprf's olive, which it meets on the same charts.
    colour: [187, 204, 51],
    formula: r"\hat{A}_{ij} = {\phi(q_i)}^\top \psi(k_j) + \mathbb{1}[j \in S_i] \big(e^{q_i \cdot k_j} - {\phi(q_i)}^\top \psi(k_j)\big),\ S_i \text{ the top } k \text{ scores},\ \hat{o}_i = \frac{\sum_j \hat{A}_{ij} v_j}{\sum_l \hat{A}_{il}}",
    source: "Scatterbrain (Chen et al., NeurIPS 2021), REFERENCE.md",
    parameters: &["topk", "features", "coupling"],
    is_random: true,
    // Finding the top-k keys needs every score.
    is_quadratic: true,
    // k = L exact keys are every key: exact softmax.
    exact_at_full_length: true,
    needs_lln_constants: false,
    sweeps_budget: true,
};

impl AttentionMethod for Sparse {
    fn info(&self) -> &MethodInfo {
        &SPARSE_INFO
    }

    /// k exact keys plus m positive random features.
    fn feature_size(&self, settings: &MethodSettings, _d: usize) -> Option<usize> {
        settings.top_k.checked_add(settings.features)
    }

    /// Every score and the selections (the fit, counted in each draw's cost as the page's work
    /// limit counts a method once per draw), the projections `ω·u` and the positive features'
    /// sums, each query's products with them, the k corrections per query, the formed rows.
    fn work(
        &self,
        settings: &MethodSettings,
        (len, d, dv): (usize, usize, usize),
        tv_rows: usize,
    ) -> f64 {
        let (l, df, dvf) = (len as f64, d as f64, dv as f64);
        let (k, m) = (settings.top_k.min(len) as f64, settings.features as f64);
        let top_k = l * l * (df + 1.0);
        let projections = 2.0 * l * m * df;
        let low_rank = l * m * (2.0 * dvf + 1.0) + l * m * (dvf + 1.0);
        let corrections = l * k * (m + df + dvf + 2.0);
        top_k + projections + low_rank + corrections + tv_rows as f64 * l * m
    }

    /// k = ⌊D/2⌋ exact keys and m = D − k features at every budget D ≥ 2: the split that
    /// spends the budget equally on the two parts.
    fn budget_points(
        &self,
        settings: &MethodSettings,
        _d: usize,
        budgets: &[usize],
        _max_samples: usize,
    ) -> Vec<(usize, MethodSettings)> {
        budgets
            .iter()
            .filter(|&&budget| budget >= 2)
            .map(|&budget| {
                let mut at = settings.clone();
                at.top_k = budget / 2;
                at.features = budget - budget / 2;
                (budget, at)
            })
            .collect()
    }
}

impl FitMethod for Sparse {
    fn fit(
        &self,
        data: &AttentionData,
        settings: &MethodSettings,
        _shared: SharedFits<'_>,
    ) -> Result<Box<dyn FittedMethod>, AttentionError> {
        let estimator = low_rank_estimator()?;
        let fit = fit_estimator(estimator, data, settings)?;
        let k = settings.top_k.min(data.len);
        let mut note = format!("top {k} keys exact, Performer's features elsewhere");
        if k != settings.top_k {
            note.push_str(&format!(
                " ({} asked, clamped to L = {})",
                settings.top_k, data.len
            ));
        }
        Ok(Box::new(FittedSparse {
            estimator,
            fit,
            len: data.len,
            exact_keys: top_k_keys(data, k),
            top_k: k,
            note,
        }))
    }
}

struct FittedSparse {
    estimator: EstimatorId,
    fit: Fit,
    len: usize,
    /// `S_i`, in increasing key order.
    exact_keys: Vec<Vec<usize>>,
    top_k: usize,
    note: String,
}

impl FittedMethod for FittedSparse {
    fn draw(
        &self,
        data: &AttentionData,
        settings: &MethodSettings,
        rng: &mut StreamRng,
        rows: &[usize],
    ) -> Result<MethodRun, AttentionError> {
        if data.len != self.len {
            return Err(method_error(
                SPARSE_INFO.id,
                format!("fitted to L = {}, drawn on L = {}", self.len, data.len),
            ));
        }
        let (len, dv) = (data.len, data.dv);
        let map = draw_features(self.estimator, &self.fit, settings, data.d, rng)?;
        // With every key exact there is nothing off S_i: the features are not needed.
        let all_exact = self.top_k == len;
        let psi: Vec<Vec<f64>> = if all_exact {
            Vec::new()
        } else {
            (0..len)
                .map(|j| map.features(data.key(j), Side::Key))
                .collect()
        };
        let size = psi.first().map_or(0, Vec::len);
        let mut s = vec![0.0; size * dv];
        let mut z = vec![0.0; size];
        for (j, psi_j) in psi.iter().enumerate() {
            for (f, psi_f) in psi_j.iter().enumerate().take(size) {
                z[f] += psi_f;
                for (s, v) in s[f * dv..(f + 1) * dv].iter_mut().zip(data.value(j)) {
                    *s += psi_f * v;
                }
            }
        }
        let mut output = vec![0.0; len * dv];
        let mut denominators = vec![0.0; len];
        let mut bad_rows = 0;
        let mut formed = Vec::new();
        for i in 0..len {
            let q = data.query(i);
            let phi = if all_exact {
                Vec::new()
            } else {
                map.features(q, Side::Query)
            };
            let pair = |j: usize| psi.get(j).map_or(f64::NAN, |p| dot_same_length(&phi, p));
            let o = &mut output[i * dv..(i + 1) * dv];
            let mut den = 0.0;
            for (f, phi_f) in phi.iter().enumerate().take(size) {
                den += phi_f * z[f];
                for (o, s) in o.iter_mut().zip(&s[f * dv..(f + 1) * dv]) {
                    *o += phi_f * s;
                }
            }
            for &j in &self.exact_keys[i] {
                let exact = dot(q, data.key(j)).exp();
                let correction = if all_exact { exact } else { exact - pair(j) };
                den += correction;
                o.iter_mut()
                    .zip(data.value(j))
                    .for_each(|(o, v)| *o += correction * v);
            }
            denominators[i] = den;
            let usable = den.is_finite() && den > 0.0;
            if usable {
                o.iter_mut().for_each(|o| *o /= den);
            } else {
                bad_rows += 1;
                o.fill(f64::NAN);
            }
            if rows.contains(&i) {
                let exact_keys = &self.exact_keys[i];
                let row: Vec<f64> = (0..len)
                    .map(|j| {
                        if !usable {
                            f64::NAN
                        } else if exact_keys.binary_search(&j).is_ok() {
                            dot(q, data.key(j)).exp() / den
                        } else {
                            pair(j) / den
                        }
                    })
                    .collect();
                formed.push((i, row));
            }
        }
        let rows = rows
            .iter()
            .filter_map(|r| {
                formed
                    .iter()
                    .find(|(i, _)| i == r)
                    .map(|(_, row)| row.clone())
            })
            .collect();
        Ok(MethodRun {
            feature_size: self.top_k.saturating_add(settings.features),
            attention: ApproximateAttention {
                output,
                denominators,
                bad_rows,
                rows,
            },
            evaluation: Evaluation::Quadratic,
            note: self.note.clone(),
        })
    }

    /// Exact on `S_i` (relative MSE 0), Performer's positive features off it: there the
    /// estimator's MSE formula at m = `settings.features`. Averaged over every pair.
    fn kernel_relative_mse(&self, data: &AttentionData, settings: &MethodSettings) -> Option<f64> {
        if data.len != self.len {
            return None;
        }
        mean_relative_mse_formula(
            self.estimator,
            &self.fit,
            data,
            settings.features,
            |i, j| {
                self.exact_keys
                    .get(i)
                    .is_some_and(|keys| keys.binary_search(&j).is_ok())
            },
        )
    }
}

/// `u·v`, NaN when the lengths differ (never a silent truncation).
fn dot_same_length(u: &[f64], v: &[f64]) -> f64 {
    if u.len() != v.len() {
        return f64::NAN;
    }
    u.iter().zip(v).map(|(a, b)| a * b).sum()
}

#[cfg(test)]
mod tests;
