//! Sliding window + linear attention (Based, Arora et al., 2024; REFERENCE.md,
//! "Attention-level approximations that are not one kernel estimator").
//!
//! Each query i gives the w keys of its window `W_i` their exact weight `exp(q_i·k_j)` and
//! every other key the Taylor-2 kernel `1 + x + x²/2` of `x = q_i·k_j` (Based's feature map,
//! the lab's [`PolynomialKernel::taylor`] of degree 2, features `[1, u, vec(u⊗u)/√2]` of size
//! `D = 1 + d + d²`), with one normaliser over both:
//!
//! `ô_i = (Σ_{j∈W_i} e^{q_i·k_j} v_j + Σ_{j∉W_i} t(q_i·k_j) v_j) / (Σ_{j∈W_i} e^{q_i·k_j} + Σ_{j∉W_i} t(q_i·k_j))`.
//!
//! **The window.** Based's window is causal (the w previous tokens); the lab's attention is not
//! causal, so here `W_i` is the w keys `s_i .. s_i + w − 1`, `s_i = min(max(i − ⌊w/2⌋, 0), L − w)`:
//! centred on i (⌊w/2⌋ keys before it, the rest after), shifted inward at the sequence's ends
//! so that every query has exactly w exact keys. w > L is clamped to L (the fit's note says
//! so), and then every key is in every window: exact softmax. w = 0 is Taylor-2 linear
//! attention alone.
//!
//! **Cost.** The keys outside the window are the linear-attention sums over every key minus
//! the window's own keys: `φ(q_i)·Σ_j ψ(k_j) v_jᵀ − Σ_{j∈W_i} t(q_i·k_j) v_j` (the same
//! `q_i·k_j` gives both the window's exact weight and the Taylor term it removes), in
//! O(L·(w·(d + dv) + D·dv)). When D exceeds the deterministic feature budget the Taylor part
//! is evaluated pair by pair instead (O(L²·d), "quadratic (over budget)"). The subtraction
//! loses about `ε·Σ_j t(q_i·k_j)` to rounding, small next to the outside's own sum unless the
//! window holds nearly every key; with every key in the window nothing is subtracted.
//!
//! **Rows.** `1 + x + x²/2 = ½(1 + x)² + ½ ≥ ½`, so every weight is positive and every row of
//! P̂ is a distribution. Still, a denominator that is not finite or ≤ 0 (every exact weight
//! underflowing with no key outside) is counted as a bad row, never divided by. Each row is
//! computed shifted by `c_i = max(max_{j∈W_i} q_i·k_j, ln Σ_{j∉W_i} t(q_i·k_j))`, as softmax is by
//! its maximum, so that large scores do not overflow; the reported denominator is the unshifted
//! sum (∞ where it exceeds f64, while the output stays usable).

use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::deterministic::PolynomialKernel;
use crate::numerics::attention::linear::{ApproximateAttention, FeatureMap};
use crate::numerics::attention::method::{
    AttentionMethod, FitMethod, FittedMethod, MethodFamily, MethodInfo, MethodRun, MethodSettings,
    SharedFits, method_error,
};
use crate::numerics::attention::{AttentionError, Evaluation};
use crate::numerics::estimators::{Side, dot};
use crate::numerics::rng::StreamRng;

/// Based's feature map: Taylor of degree 2.
const TAYLOR_DEGREE: usize = 2;

/// The Taylor-2 map, or the method's error.
fn taylor_two() -> Result<PolynomialKernel, AttentionError> {
    PolynomialKernel::taylor(TAYLOR_DEGREE).map_err(|e| method_error(WINDOW_INFO.id, e))
}

/// Taylor-2's features per token at dimension d, `1 + d + d²`.
fn taylor_size(d: usize) -> Option<usize> {
    PolynomialKernel::taylor(TAYLOR_DEGREE)
        .ok()?
        .feature_size(d)
}

/// The first key of query i's window of w keys (w ≤ L).
pub fn window_start(i: usize, window: usize, len: usize) -> usize {
    i.saturating_sub(window / 2).min(len - window.min(len))
}

/// The method.
#[derive(Clone, Copy, Debug)]
pub struct Window;

/// The registry's entry.
pub const WINDOW: Window = Window;

/// Its description: what the page, the command line and the view's plan read of it.
pub const WINDOW_INFO: MethodInfo = MethodInfo {
    id: "window",
    label: "window + Taylor-2 (Based)",
    family: MethodFamily::SparseOrLowRank,
    // Tol's medium blue: apart from rff's wine, which it meets on the same charts.
    colour: [102, 153, 204],
    formula: r"\hat{o}_i = \frac{\sum_{j \in W_i} e^{q_i \cdot k_j} v_j + \sum_{j \notin W_i} t(q_i \cdot k_j)\, v_j}{\sum_{j \in W_i} e^{q_i \cdot k_j} + \sum_{j \notin W_i} t(q_i \cdot k_j)},\ t(x) = 1 + x + \frac{x^2}{2},\ |W_i| = w",
    source: "Based (Arora et al., 2024), REFERENCE.md",
    parameters: &["window"],
    is_random: false,
    is_quadratic: false,
    exact_at_full_length: false,
    needs_lln_constants: false,
    sweeps_budget: true,
};

impl AttentionMethod for Window {
    fn info(&self) -> &MethodInfo {
        &WINDOW_INFO
    }

    /// w exact keys plus Taylor-2's `1 + d + d²` features.
    fn feature_size(&self, settings: &MethodSettings, d: usize) -> Option<usize> {
        settings.window.checked_add(taylor_size(d)?)
    }

    /// The window's scores, exact weights, Taylor terms and values; the Taylor features'
    /// sums and each query's products with them (or the Taylor kernel pair by pair over the
    /// budget); the formed rows.
    fn work(
        &self,
        settings: &MethodSettings,
        (len, d, dv): (usize, usize, usize),
        tv_rows: usize,
    ) -> f64 {
        let w = settings.window.min(len) as f64;
        let (l, df, dvf) = (len as f64, d as f64, dv as f64);
        let window = l * w * (df + 2.0 * dvf + 2.0);
        let outside = match taylor_size(d) {
            Some(size) if size <= settings.deterministic_feature_budget => {
                l * size as f64 * (2.0 * dvf + 2.0)
            }
            _ => l * l * (df + dvf),
        };
        window + outside + tv_rows as f64 * l * df
    }

    /// w = D − (1 + d + d²) at every budget D that leaves w ≥ 0.
    fn budget_points(
        &self,
        settings: &MethodSettings,
        d: usize,
        budgets: &[usize],
        _max_samples: usize,
    ) -> Vec<(usize, MethodSettings)> {
        let Some(taylor) = taylor_size(d) else {
            return Vec::new();
        };
        budgets
            .iter()
            .filter_map(|&budget| {
                let window = budget.checked_sub(taylor)?;
                let mut at = settings.clone();
                at.window = window;
                Some((budget, at))
            })
            .collect()
    }
}

impl FitMethod for Window {
    fn fit(
        &self,
        data: &AttentionData,
        settings: &MethodSettings,
        _shared: SharedFits<'_>,
    ) -> Result<Box<dyn FittedMethod>, AttentionError> {
        let window = settings.window.min(data.len);
        let kernel = taylor_two()?;
        let size = kernel.feature_size(data.d);
        let pair_by_pair = !matches!(size, Some(s) if s <= settings.deterministic_feature_budget);
        let mut note = format!("window of {window} keys, Taylor-2 outside");
        if window != settings.window {
            note.push_str(&format!(
                " ({} asked, clamped to L = {})",
                settings.window, data.len
            ));
        }
        if pair_by_pair {
            note.push_str(&format!(
                "; Taylor-2's {} features exceed {}, so it is evaluated pair by pair (O(L²))",
                size.map_or_else(|| "overflowing".to_string(), |s| s.to_string()),
                settings.deterministic_feature_budget
            ));
        }
        Ok(Box::new(FittedWindow {
            window,
            kernel,
            pair_by_pair,
            note,
        }))
    }
}

struct FittedWindow {
    /// w, at most L.
    window: usize,
    kernel: PolynomialKernel,
    /// Taylor-2 over the feature budget: its kernel pair by pair.
    pair_by_pair: bool,
    note: String,
}

/// `Σ_j ψ(k_j) v_jᵀ` (D × dv, row-major) and `Σ_j ψ(k_j)` over every key.
fn key_sums(map: &PolynomialKernel, data: &AttentionData) -> (Vec<f64>, Vec<f64>) {
    let dv = data.dv;
    let mut s: Vec<f64> = Vec::new();
    let mut z: Vec<f64> = Vec::new();
    for j in 0..data.len {
        let psi = FeatureMap::features(map, data.key(j), Side::Key);
        if j == 0 {
            s = vec![0.0; psi.len() * dv];
            z = vec![0.0; psi.len()];
        }
        for (f, psi_f) in psi.iter().enumerate().take(z.len()) {
            z[f] += psi_f;
            for (s, v) in s[f * dv..(f + 1) * dv].iter_mut().zip(data.value(j)) {
                *s += psi_f * v;
            }
        }
    }
    (s, z)
}

impl FittedWindow {
    /// The Taylor-2 part over the keys outside query i's window `[start, end)`:
    /// `(Σ_{j∉W} t(q_i·k_j), Σ_{j∉W} t(q_i·k_j) v_j)`.
    fn outside(
        &self,
        data: &AttentionData,
        sums: Option<&(Vec<f64>, Vec<f64>)>,
        i: usize,
        (start, end): (usize, usize),
    ) -> (f64, Vec<f64>) {
        let dv = data.dv;
        let q = data.query(i);
        let mut weighted = vec![0.0; dv];
        if end - start == data.len {
            return (0.0, weighted);
        }
        let mut total = 0.0;
        let add = |j: usize, sign: f64, total: &mut f64, weighted: &mut [f64]| {
            let t = sign * self.kernel.kernel(dot(q, data.key(j)));
            *total += t;
            weighted
                .iter_mut()
                .zip(data.value(j))
                .for_each(|(u, v)| *u += t * v);
        };
        match sums {
            Some((s, z)) => {
                // Every key's features, minus the window's own keys.
                let phi = FeatureMap::features(&self.kernel, q, Side::Query);
                for (f, phi_f) in phi.iter().enumerate().take(z.len()) {
                    total += phi_f * z[f];
                    for (u, s) in weighted.iter_mut().zip(&s[f * dv..(f + 1) * dv]) {
                        *u += phi_f * s;
                    }
                }
                (start..end).for_each(|j| add(j, -1.0, &mut total, &mut weighted));
            }
            None => (0..start)
                .chain(end..data.len)
                .for_each(|j| add(j, 1.0, &mut total, &mut weighted)),
        }
        (total, weighted)
    }
}

impl FittedMethod for FittedWindow {
    fn draw(
        &self,
        data: &AttentionData,
        _settings: &MethodSettings,
        _rng: &mut StreamRng,
        rows: &[usize],
    ) -> Result<MethodRun, AttentionError> {
        let (len, dv) = (data.len, data.dv);
        let window = self.window.min(len);
        let covers_all = window == len;
        let sums = (!self.pair_by_pair && !covers_all).then(|| key_sums(&self.kernel, data));
        let mut output = vec![0.0; len * dv];
        let mut denominators = vec![0.0; len];
        let mut bad_rows = 0;
        let mut formed = Vec::new();
        let mut scores = Vec::with_capacity(window);
        for i in 0..len {
            let start = window_start(i, window, len);
            let end = start + window;
            let q = data.query(i);
            scores.clear();
            scores.extend((start..end).map(|j| dot(q, data.key(j))));
            let (taylor, taylor_values) = self.outside(data, sums.as_ref(), i, (start, end));
            let mut shift = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if taylor > 0.0 {
                shift = shift.max(taylor.ln());
            }
            if !shift.is_finite() {
                shift = 0.0;
            }
            let outside_scale = (-shift).exp();
            let mut den = taylor * outside_scale;
            let o = &mut output[i * dv..(i + 1) * dv];
            o.iter_mut()
                .zip(&taylor_values)
                .for_each(|(o, u)| *o = u * outside_scale);
            for (j, s) in (start..end).zip(&scores) {
                let weight = (s - shift).exp();
                den += weight;
                o.iter_mut()
                    .zip(data.value(j))
                    .for_each(|(o, v)| *o += weight * v);
            }
            denominators[i] = den * shift.exp();
            let usable = den.is_finite() && den > 0.0;
            if usable {
                o.iter_mut().for_each(|o| *o /= den);
            } else {
                bad_rows += 1;
                o.fill(f64::NAN);
            }
            if rows.contains(&i) {
                let row: Vec<f64> = (0..len)
                    .map(|j| {
                        if !usable {
                            f64::NAN
                        } else if (start..end).contains(&j) {
                            (scores[j - start] - shift).exp() / den
                        } else {
                            self.kernel.kernel(dot(q, data.key(j))) * outside_scale / den
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
            feature_size: self
                .kernel
                .feature_size(data.d)
                .map_or(usize::MAX, |size| size.saturating_add(window)),
            attention: ApproximateAttention {
                output,
                denominators,
                bad_rows,
                rows,
            },
            evaluation: if self.pair_by_pair {
                Evaluation::QuadraticFallback
            } else {
                Evaluation::Linear
            },
            note: self.note.clone(),
        })
    }
}

#[cfg(test)]
mod tests;
