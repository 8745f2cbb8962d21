//! Nyström attention (Nyströmformer, Xiong et al., AAAI 2021; REFERENCE.md, "Attention-level
//! approximations that are not one kernel estimator").
//!
//! c landmarks `Q̃`, `K̃` (c × d): the means of c contiguous segments of the queries and of the
//! keys, segment t being tokens `⌊tL/c⌋ .. ⌊(t+1)L/c⌋` (as equal as possible when c does not
//! divide L). With the three row-wise softmaxes `F = softmax(Q K̃ᵀ)` (L × c),
//! `A = softmax(Q̃ K̃ᵀ)` (c × c) and `B = softmax(Q̃ Kᵀ)` (c × L),
//!
//! `P̂ = F · A⁺ · B`, `ô = P̂ V = (F A⁺) · (B V)`,
//!
//! in O(L·c·(d + dv) + c³), never forming P̂ except for the rows the charts ask for. The data
//! are already scaled (`AttentionData`: `P_ij = softmax_j(q_i·k_j)`), so no `1/√d` here.
//!
//! `A⁺` is the exact Moore–Penrose pseudo-inverse, from nalgebra's SVD with singular values
//! below `c·ε·σ₁` treated as zero (NumPy's and MATLAB's default relative tolerance, ε the f64
//! machine epsilon). The paper approximates `A⁺` by Newton–Schulz iterations
//! `Z ← ¼ Z (13I − AZ(15I − AZ(7I − AZ)))` (six of them); the exact pseudo-inverse is the
//! limit those iterations approximate, so this is the method without that second
//! approximation.
//!
//! What the rows are: F and B are row-stochastic, so `B·1 = 1`; when A is invertible,
//! `A·1 = 1` gives `A⁻¹·1 = 1` and every row of P̂ sums to exactly 1 (to rounding). Entries
//! may be negative (`A⁺` is signed). The output is `P̂ V` as in the paper, not renormalised;
//! each row's sum `F A⁺ B 1` is reported as its denominator, and a row whose sum is not finite
//! or ≤ 0 is a bad row (its output left out, as for every method: no row of attention has
//! mass ≤ 0). Rows with negative entries are counted among the rows formed and said in the
//! note. With c = L each segment is one token, `F = A = B = P` and `P P⁺ P = P`: exact
//! softmax to rounding.

use nalgebra::{DMatrix, SVD};

use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::exact::softmax_in_place;
use crate::numerics::attention::linear::ApproximateAttention;
use crate::numerics::attention::method::{
    AttentionMethod, FitMethod, FittedMethod, MethodFamily, MethodInfo, MethodRun, MethodSettings,
    SharedFits, method_error,
};
use crate::numerics::attention::{AttentionError, Evaluation};
use crate::numerics::estimators::dot;
use crate::numerics::rng::StreamRng;

/// The method.
#[derive(Clone, Copy, Debug)]
pub struct Nystrom;

/// The registry's entry.
pub const NYSTROM: Nystrom = Nystrom;

/// Its description: what the page, the command line and the view's plan read of it.
pub const NYSTROM_INFO: MethodInfo = MethodInfo {
    id: "nystrom",
    label: "Nyström (Nyströmformer)",
    family: MethodFamily::SparseOrLowRank,
    colour: [0, 153, 136],
    formula: r"\hat{P} = \mathrm{softmax}(Q{\tilde{K}}^\top)\, A^{+}\, \mathrm{softmax}(\tilde{Q}K^\top),\ A = \mathrm{softmax}(\tilde{Q}{\tilde{K}}^\top),\ \tilde{Q}, \tilde{K} \text{ the means of } c \text{ segments},\ \hat{o} = \hat{P} V",
    source: "Nyströmformer (Xiong et al., AAAI 2021), REFERENCE.md",
    parameters: &["landmarks"],
    is_random: false,
    is_quadratic: false,
    // c = L landmarks are every token: exact softmax.
    exact_at_full_length: true,
    needs_lln_constants: false,
    sweeps_budget: true,
};

impl AttentionMethod for Nystrom {
    fn info(&self) -> &MethodInfo {
        &NYSTROM_INFO
    }

    /// c landmarks per token: each query meets c landmark keys, each key c landmark queries.
    fn feature_size(&self, settings: &MethodSettings, _d: usize) -> Option<usize> {
        Some(settings.landmarks)
    }

    /// The landmarks' means, the three score matrices, the SVD (counted as 12c³, the usual
    /// count for a c × c SVD with both singular bases), `F A⁺`, `B V`, the outputs, the row
    /// sums and the formed rows.
    fn work(
        &self,
        settings: &MethodSettings,
        (len, d, dv): (usize, usize, usize),
        tv_rows: usize,
    ) -> f64 {
        let c = settings.landmarks.clamp(1, len.max(1)) as f64;
        let (l, d, dv) = (len as f64, d as f64, dv as f64);
        let means = 2.0 * l * d;
        let scores = 2.0 * l * c * d + c * c * d;
        let pinv = 12.0 * c * c * c + c * c * c;
        let products = l * c * c + c * l * dv + l * c * dv;
        let sums = 2.0 * l * c;
        means + scores + pinv + products + sums + tv_rows as f64 * l * c
    }

    /// c = D at every budget D.
    fn budget_points(
        &self,
        settings: &MethodSettings,
        _d: usize,
        budgets: &[usize],
        _max_samples: usize,
    ) -> Vec<(usize, MethodSettings)> {
        budgets
            .iter()
            .map(|&budget| {
                let mut at = settings.clone();
                at.landmarks = budget;
                (budget, at)
            })
            .collect()
    }
}

impl FitMethod for Nystrom {
    fn fit(
        &self,
        data: &AttentionData,
        settings: &MethodSettings,
        _shared: SharedFits<'_>,
    ) -> Result<Box<dyn FittedMethod>, AttentionError> {
        let c = settings.landmarks.clamp(1, data.len);
        let mut note = format!("{c} landmarks");
        if c != settings.landmarks {
            note = format!(
                "{c} landmarks ({} asked, clamped to 1 ..= L = {})",
                settings.landmarks, data.len
            );
        }
        let query_landmarks = segment_means(&data.q, data.len, data.d, c);
        let key_landmarks = segment_means(&data.k, data.len, data.d, c);
        let landmark_rows = |i: usize| &query_landmarks[i * data.d..(i + 1) * data.d];
        let landmark_keys = |t: usize| &key_landmarks[t * data.d..(t + 1) * data.d];
        let f = softmax_rows(data.len, c, |i, t| dot(data.query(i), landmark_keys(t)));
        let a = softmax_rows(c, c, |s, t| dot(landmark_rows(s), landmark_keys(t)));
        let b = softmax_rows(c, data.len, |s, j| dot(landmark_rows(s), data.key(j)));
        let (a_pinv, kept) = pseudo_inverse(a).map_err(|e| method_error(self.id(), e))?;
        if kept < c {
            note.push_str(&format!(
                "; softmax(Q̃K̃ᵀ) has numerical rank {kept} of {c}: its pseudo-inverse drops {} singular values",
                c - kept
            ));
        }
        Ok(Box::new(FittedNystrom {
            len: data.len,
            landmarks: c,
            left: f * a_pinv,
            right: b,
            note,
        }))
    }
}

/// The means of c contiguous segments of the L rows (each of length `width`) of `rows`,
/// segment t holding rows `⌊tL/c⌋ .. ⌊(t+1)L/c⌋` (c ≤ L, so none is empty).
pub fn segment_means(rows: &[f64], len: usize, width: usize, c: usize) -> Vec<f64> {
    let mut means = vec![0.0; c * width];
    for (t, mean) in means.chunks_exact_mut(width).enumerate() {
        let (start, end) = (t * len / c, (t + 1) * len / c);
        for row in rows[start * width..end * width].chunks_exact(width) {
            mean.iter_mut().zip(row).for_each(|(m, x)| *m += x);
        }
        let count = (end - start).max(1) as f64;
        mean.iter_mut().for_each(|m| *m /= count);
    }
    means
}

/// The `rows × cols` matrix whose row r is the softmax of `score(r, 0..cols)`.
fn softmax_rows(rows: usize, cols: usize, score: impl Fn(usize, usize) -> f64) -> DMatrix<f64> {
    let mut matrix = DMatrix::zeros(rows, cols);
    let mut row = vec![0.0; cols];
    for r in 0..rows {
        row.iter_mut()
            .enumerate()
            .for_each(|(col, s)| *s = score(r, col));
        softmax_in_place(&mut row);
        for (col, p) in row.iter().enumerate() {
            matrix[(r, col)] = *p;
        }
    }
    matrix
}

/// The relative tolerance of the pseudo-inverse: singular values at most `n·ε·σ₁` are zero.
pub fn pinv_tolerance(n: usize, largest_singular_value: f64) -> f64 {
    n as f64 * f64::EPSILON * largest_singular_value
}

/// The Moore–Penrose pseudo-inverse of a square non-empty matrix and how many singular values
/// it kept (above [`pinv_tolerance`]).
fn pseudo_inverse(matrix: DMatrix<f64>) -> Result<(DMatrix<f64>, usize), String> {
    let n = matrix.nrows().max(matrix.ncols());
    if n == 0 || matrix.iter().any(|x| !x.is_finite()) {
        return Err("softmax(Q̃K̃ᵀ) is empty or not finite".to_string());
    }
    let svd = SVD::try_new(matrix, true, true, f64::EPSILON, 1_000 * n.max(16))
        .ok_or_else(|| "the SVD of softmax(Q̃K̃ᵀ) did not converge".to_string())?;
    let largest = svd.singular_values.iter().copied().fold(0.0, f64::max);
    let tolerance = pinv_tolerance(n, largest);
    let kept = svd.rank(tolerance);
    let pinv = svd.pseudo_inverse(tolerance).map_err(str::to_string)?;
    Ok((pinv, kept))
}

/// `F A⁺` (L × c) and B (c × L) on one problem: the method is deterministic, so every draw
/// gives the same numbers.
struct FittedNystrom {
    len: usize,
    landmarks: usize,
    left: DMatrix<f64>,
    right: DMatrix<f64>,
    note: String,
}

impl FittedMethod for FittedNystrom {
    fn draw(
        &self,
        data: &AttentionData,
        _settings: &MethodSettings,
        _rng: &mut StreamRng,
        rows: &[usize],
    ) -> Result<MethodRun, AttentionError> {
        if data.len != self.len {
            return Err(method_error(
                NYSTROM_INFO.id,
                format!("fitted to L = {}, drawn on L = {}", self.len, data.len),
            ));
        }
        let (len, dv) = (data.len, data.dv);
        let values = DMatrix::from_row_slice(len, dv, &data.v);
        let ones = DMatrix::from_element(len, 1, 1.0);
        // O(L·c·dv): (F A⁺)(B V), never the L × L product.
        let outputs = &self.left * (&self.right * values);
        let sums = &self.left * (&self.right * ones);
        let mut output = vec![0.0; len * dv];
        let mut denominators = vec![0.0; len];
        let mut bad_rows = 0;
        for i in 0..len {
            let sum = sums[(i, 0)];
            denominators[i] = sum;
            let o = &mut output[i * dv..(i + 1) * dv];
            if sum.is_finite() && sum > 0.0 {
                o.iter_mut()
                    .enumerate()
                    .for_each(|(c, x)| *x = outputs[(i, c)]);
            } else {
                bad_rows += 1;
                o.fill(f64::NAN);
            }
        }
        let rows: Vec<usize> = rows.iter().copied().filter(|&i| i < len).collect();
        let formed: Vec<Vec<f64>> = rows
            .iter()
            .map(|&i| {
                if !output[i * dv].is_finite() {
                    return vec![f64::NAN; len];
                }
                let row = self.left.row(i) * &self.right;
                row.iter().copied().collect()
            })
            .collect();
        let negative = formed
            .iter()
            .filter(|row| row.iter().any(|p| *p < 0.0))
            .count();
        let note = format!(
            "{}; {negative} of the {} rows formed have negative entries",
            self.note,
            formed.len()
        );
        Ok(MethodRun {
            feature_size: self.landmarks,
            attention: ApproximateAttention {
                output,
                denominators,
                bad_rows,
                rows: formed,
            },
            evaluation: Evaluation::Linear,
            note,
        })
    }
}

#[cfg(test)]
mod tests;
