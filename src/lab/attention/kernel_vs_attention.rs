//! Does a lower kernel MSE give a lower attention error? ([`kernel_vs_attention`], the part
//! [`crate::lab::attention::report::AttentionPart::KernelVsAttention`].)
//!
//! For every chosen method and every problem (each of the 72 real heads, both passages averaged; or, on synthetic data,
//! [`SYNTHETIC_PROBLEMS`] datasets of [`SYNTHETIC_TOKENS`] tokens from the configured
//! distributions), at the equal budget of `features` features per token:
//! - the **kernel error**: the mean over the problem's query-key pairs of the relative MSE
//!   `E[(k̂ − SM)²]/SM²` ([`crate::numerics::attention::method::FittedMethod::kernel_relative_mse`]:
//!   a random map's formula for i.i.d. ω, a deterministic map's squared error; NaN for a method
//!   that does not estimate SM itself: Nyström, the window, LLN, elu + 1, randomized attention);
//! - the **attention error**: the mean over rows of the total variation `½ Σ_j |P̂_ij − P_ij|`,
//!   averaged over [`KVA_DRAWS`] draws of a random map (an unusable row counts as 1).
//!
//! The two orders can disagree: the ratio's normaliser couples a row's errors, and the mean
//! relative MSE is ruled by the rare pairs with the largest `|z|`, while a row's TV is ruled by
//! its largest weights. [`KernelVsAttention::agreement`] counts the problems where the method
//! with the lowest kernel error also has the lowest attention error; [`KernelVsAttention::mean_spearman`]
//! is the mean rank correlation of the two orders.

use serde::{Deserialize, Serialize};

use crate::lab::attention::data::attention_data;
use crate::lab::attention::methods::{lln_constants, method_settings, prepare_with, run_with};
use crate::lab::attention::share::ProblemShare;
use crate::lab::config::{BUDGETS, ExperimentConfig, HeadSource};
use crate::numerics::attention::AttentionError;
use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::exact::{softmax_rows, total_variation};
use crate::numerics::attention::heads::HeadSet;
use crate::numerics::attention::method::MethodSettings;
use crate::numerics::attention::methods::MethodId;

/// Draws of a random method per problem.
pub const KVA_DRAWS: u64 = 2;
/// Synthetic problems (data streams `seed`, `seed + 1`, …).
pub const SYNTHETIC_PROBLEMS: usize = 12;
/// Tokens of a synthetic problem, at most (a real passage has 32): as many as the budget chart.
pub const SYNTHETIC_TOKENS: usize = 256;
/// The most samples randomized attention may take to reach the budget.
const MAX_SAMPLES: usize = 64;

/// The part's answer: per method and problem, the two errors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelVsAttention {
    /// Features per token D every method was set to (as close as it can get).
    pub budget: usize,
    /// Tokens L of the shortest problem.
    #[serde(default)]
    pub tokens: usize,
    /// The problems: `L2 H5` for a real head, `seed 3` for synthetic data.
    pub problems: Vec<String>,
    /// The chosen methods, in the configuration's order.
    pub methods: Vec<MethodId>,
    /// The feature size each method ran at.
    pub feature_sizes: Vec<usize>,
    /// `kernel[method][problem]`: mean relative MSE of the kernel (NaN: no kernel estimate).
    pub kernel: Vec<Vec<f64>>,
    /// `attention[method][problem]`: mean row total variation.
    pub attention: Vec<Vec<f64>>,
    /// Rows with an unusable denominator, over every problem and draw (each counted as TV 1).
    pub bad_rows: Vec<usize>,
    /// Chosen methods that do not estimate SM itself (no kernel error): not on the chart, but
    /// in the attention columns.
    pub without_kernel: Vec<MethodId>,
    /// Chosen methods that cannot be set near the budget: in neither.
    #[serde(default)]
    pub off_budget: Vec<MethodId>,
}

/// The index of the smallest finite value, if any.
fn argmin(values: impl Iterator<Item = f64>) -> Option<usize> {
    values
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

/// Ranks (0 = smallest; ties share their mean rank).
fn ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        let mean = (start + end - 1) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = mean;
        }
        start = end;
    }
    ranks
}

/// Spearman's rank correlation of two equally long lists (`None` below three entries or for a
/// constant list).
pub fn spearman(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() != b.len() || a.len() < 3 {
        return None;
    }
    let (ra, rb) = (ranks(a), ranks(b));
    let n = a.len() as f64;
    let mean = (n - 1.0) / 2.0;
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in ra.iter().zip(&rb) {
        sab += (x - mean) * (y - mean);
        saa += (x - mean) * (x - mean);
        sbb += (y - mean) * (y - mean);
    }
    (saa > 0.0 && sbb > 0.0).then(|| sab / (saa * sbb).sqrt())
}

impl KernelVsAttention {
    fn column(values: &[Vec<f64>], problem: usize) -> impl Iterator<Item = f64> + '_ {
        values.iter().map(move |row| row[problem])
    }

    /// The attention errors of the methods with a kernel error (NaN for the others).
    fn attention_of_kernel_methods(&self, problem: usize) -> Vec<f64> {
        self.kernel
            .iter()
            .zip(&self.attention)
            .map(|(k, a)| {
                if k[problem].is_finite() {
                    a[problem]
                } else {
                    f64::NAN
                }
            })
            .collect()
    }

    /// Per method: on how many problems its value in `values` (`[method][problem]`) is the
    /// lowest finite one.
    fn wins(&self, values: &[Vec<f64>]) -> Vec<usize> {
        let mut wins = vec![0; self.methods.len()];
        for p in 0..self.problems.len() {
            if let Some(best) = argmin(Self::column(values, p)) {
                wins[best] += 1;
            }
        }
        wins
    }

    /// Per method: on how many problems it has the lowest attention error of all methods.
    pub fn attention_wins(&self) -> Vec<usize> {
        self.wins(&self.attention)
    }

    /// Per method: on how many problems it has the lowest kernel error (of the methods with one).
    pub fn kernel_wins(&self) -> Vec<usize> {
        self.wins(&self.kernel)
    }

    /// On how many problems the lowest kernel error and the lowest attention error among the
    /// methods with a kernel error belong to the same method.
    pub fn agreement(&self) -> usize {
        (0..self.problems.len())
            .filter(|&p| {
                let kernel = argmin(Self::column(&self.kernel, p));
                kernel.is_some()
                    && kernel == argmin(self.attention_of_kernel_methods(p).into_iter())
            })
            .count()
    }

    /// The mean over problems of Spearman's correlation between the methods' two orders
    /// (`None` with fewer than three methods).
    pub fn mean_spearman(&self) -> Option<f64> {
        let values: Vec<f64> = (0..self.problems.len())
            .filter_map(|p| {
                let (kernel, attention): (Vec<f64>, Vec<f64>) = Self::column(&self.kernel, p)
                    .zip(Self::column(&self.attention, p))
                    .filter(|(k, a)| k.is_finite() && a.is_finite())
                    .unzip();
                spearman(&kernel, &attention)
            })
            .collect();
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    }

    /// The shares' reports of one request, in share order, as the whole request's report:
    /// the problems' columns side by side, the unusable rows summed, a method without a kernel
    /// error from the first problem where one had none (as the whole run marks it). An error if
    /// the shares do not belong together.
    pub fn merge(shares: Vec<KernelVsAttention>) -> Result<KernelVsAttention, AttentionError> {
        // A share without problems (more workers than problems) knows nothing of their d, so
        // its settings may differ: it adds nothing.
        let any = shares.iter().any(|s| !s.problems.is_empty());
        let mut shares = shares
            .into_iter()
            .filter(|s| !any || !s.problems.is_empty());
        let mut whole = shares
            .next()
            .ok_or_else(|| AttentionError::Data("no share of the problems".into()))?;
        for share in shares {
            let same = share.budget == whole.budget
                && share.methods == whole.methods
                && share.feature_sizes == whole.feature_sizes
                && share.off_budget == whole.off_budget;
            if !same {
                return Err(AttentionError::Data(
                    "the shares of the problems were computed with other settings".into(),
                ));
            }
            whole.tokens = match (whole.tokens, share.tokens) {
                (0, t) | (t, 0) => t,
                (a, b) => a.min(b),
            };
            whole.problems.extend(share.problems);
            for (i, method) in whole.methods.iter().enumerate() {
                // The whole run stops reading a method's kernel error at its first problem
                // without one: every later problem's is NaN.
                let kernel = if whole.without_kernel.contains(method) {
                    vec![f64::NAN; share.kernel[i].len()]
                } else {
                    share.kernel[i].clone()
                };
                whole.kernel[i].extend(kernel);
                whole.attention[i].extend(&share.attention[i]);
                whole.bad_rows[i] += share.bad_rows[i];
            }
            whole.without_kernel.extend(share.without_kernel);
        }
        // Once each, in the methods' order, as one run lists them.
        let without = std::mem::take(&mut whole.without_kernel);
        whole.without_kernel = whole
            .methods
            .iter()
            .copied()
            .filter(|m| without.contains(m))
            .collect();
        Ok(whole)
    }

    /// The sentence under the chart: who wins on attention, whether the kernel's winner is the
    /// same, and the rank correlation, from the numbers.
    pub fn summary(&self) -> String {
        let problems = self.problems.len();
        if self.methods.is_empty() || problems == 0 {
            return "No method chosen: nothing to compare.".into();
        }
        let wins = self.attention_wins();
        let best = argmin(wins.iter().map(|w| -(*w as f64))).unwrap_or(0);
        let exact_at_length: Vec<&str> = self
            .methods
            .iter()
            .filter(|m| m.get().exact_at_full_length())
            .map(|m| m.id())
            .collect();
        let verb = if exact_at_length.len() > 1 {
            "are"
        } else {
            "is"
        };
        let mut text =
            if self.budget >= self.tokens && self.tokens > 0 && !exact_at_length.is_empty() {
                format!(
                    "At D = {} ≥ L = {} tokens, {} {verb} exact (every token a landmark or an \
                     exact key): set features below {} to compare the methods at a budget that \
                     saves work. ",
                    self.budget,
                    self.tokens,
                    exact_at_length.join(" and "),
                    self.tokens
                )
            } else {
                String::new()
            };
        text.push_str(&format!(
            "Lowest attention error: {} on {} of {problems} problems.",
            self.methods[best].id(),
            wins[best],
        ));
        let kernel_wins = self.kernel_wins();
        if kernel_wins.iter().all(|w| *w == 0) {
            text.push_str(
                " No chosen method estimates exp(q·k) itself: no kernel order to compare.",
            );
            return text;
        }
        let kernel_best = argmin(kernel_wins.iter().map(|w| -(*w as f64))).unwrap_or(0);
        text.push_str(&format!(
            " Among the methods that estimate the kernel, the lowest kernel MSE is {}'s on {} of \
             {problems}, and the lowest kernel MSE and the lowest attention error are the same \
             method's on {} of {problems}",
            self.methods[kernel_best].id(),
            kernel_wins[kernel_best],
            self.agreement(),
        ));
        match self.mean_spearman() {
            Some(rho) => text.push_str(&format!(
                "; mean rank correlation of the two orders ρ = {}.",
                format!("{rho:.2}").replace('-', "−")
            )),
            None => text.push('.'),
        }
        text
    }
}

/// How far from the budget a method whose sizes are its own (a polynomial map's degrees) may
/// land and still count as "at equal budget".
pub const BUDGET_TOLERANCE: f64 = 2.5;

/// The settings that put `method` at the budget (or, for a method whose sizes are its own,
/// at the size nearest it on a log scale, if within [`BUDGET_TOLERANCE`] of it) and the
/// feature size they give. `None`: it cannot be set near the budget (the window's Taylor-2
/// part alone has `1 + d + d²` features).
fn at_budget(
    method: MethodId,
    settings: &MethodSettings,
    d: usize,
    budget: usize,
) -> Option<(usize, MethodSettings)> {
    let exact = method
        .get()
        .budget_points(settings, d, &[budget], MAX_SAMPLES);
    let candidates = if exact.is_empty() {
        method
            .get()
            .budget_points(settings, d, &BUDGETS, MAX_SAMPLES)
    } else {
        exact
    };
    let target = (budget.max(1) as f64).ln();
    let distance = |size: usize| ((size.max(1) as f64).ln() - target).abs();
    candidates
        .into_iter()
        .min_by(|a, b| distance(a.0).total_cmp(&distance(b.0)))
        .filter(|(size, _)| distance(*size) <= BUDGET_TOLERANCE.ln())
}

/// The table's rows before the part is computed: each chosen method that can be set near the
/// budget with its feature size there, in the part's order, and the methods that cannot (the
/// caption's), by the part's own rule on the source's query/key dimension. The page draws these
/// rows while the part computes, so that its table does not push what is below it down when
/// the answer lands.
pub fn planned_rows(config: &ExperimentConfig) -> (Vec<(MethodId, usize)>, Vec<MethodId>) {
    let settings = method_settings(config);
    let d = config.attention.shape(config.d).1;
    let budget = config.attention.features;
    let (mut rows, mut off_budget) = (Vec::new(), Vec::new());
    for &method in &config.attention.methods {
        match at_budget(method, &settings, d, budget) {
            Some((size, _)) => rows.push((method, size)),
            None => off_budget.push(method),
        }
    }
    (rows, off_budget)
}

/// The problems of a configuration: every real head (both passages) or the synthetic datasets.
/// One passage of a problem with every row of its exact `P`, computed once for all methods.
struct Passage {
    data: AttentionData,
    exact_rows: Vec<Vec<f64>>,
}

impl Passage {
    fn new(data: AttentionData) -> Self {
        let rows: Vec<usize> = (0..data.len).collect();
        let exact_rows = softmax_rows(&data, &rows);
        Self { data, exact_rows }
    }
}

fn problems(
    config: &ExperimentConfig,
    heads: Option<&dyn HeadSet>,
    share: ProblemShare,
) -> Result<Vec<(String, Vec<Passage>)>, AttentionError> {
    match config.attention.source {
        HeadSource::Minilm | HeadSource::Text | HeadSource::Lm => {
            let heads = heads
                .ok_or_else(|| AttentionError::Data("the real heads are not loaded yet".into()))?;
            let shape = heads.shape();
            let mut out = Vec::new();
            for (layer, head) in share.heads(shape.layers, shape.heads)? {
                let mut passages = Vec::new();
                for passage in 0..shape.passages {
                    let qkv = heads
                        .head(passage, layer, head)
                        .map_err(|e| AttentionError::Data(e.to_string()))?;
                    passages.push(Passage::new(qkv.model_scaled().into_data()?));
                }
                out.push((format!("L{layer} H{head}"), passages));
            }
            Ok(out)
        }
        HeadSource::Synthetic => share
            .range(SYNTHETIC_PROBLEMS)?
            .map(|s| {
                let mut c = config.clone();
                c.seed = config.seed.wrapping_add(s as u64);
                let data = attention_data(&c, None)?.prefix(SYNTHETIC_TOKENS);
                Ok((format!("seed {}", c.seed), vec![Passage::new(data)]))
            })
            .collect(),
    }
}

/// The summed row TV of one draw against the exact rows, and the unusable rows. An unusable
/// row (its denominator ≤ 0, near 0 or not finite: no output at all) counts as TV 1, as far
/// apart as two distributions can be, so that a method cannot win a problem by dropping its
/// worst rows.
fn summed_row_tv(rows: &[Vec<f64>], exact: &[Vec<f64>]) -> (f64, usize) {
    let mut total = 0.0;
    let mut bad = 0;
    for (approx, exact) in rows.iter().zip(exact) {
        if approx.iter().all(|x| x.is_finite()) {
            total += total_variation(approx, exact);
        } else {
            total += 1.0;
            bad += 1;
        }
    }
    (total, bad)
}

/// The part: both errors of every chosen method with a kernel error, on every problem.
pub fn kernel_vs_attention(
    config: &ExperimentConfig,
    heads: Option<&dyn HeadSet>,
) -> Result<KernelVsAttention, AttentionError> {
    kernel_vs_attention_share(config, heads, ProblemShare::WHOLE)
}

/// [`kernel_vs_attention`] on one share of the problems (a worker's, when the page splits the
/// part over its workers).
pub fn kernel_vs_attention_share(
    config: &ExperimentConfig,
    heads: Option<&dyn HeadSet>,
    share: ProblemShare,
) -> Result<KernelVsAttention, AttentionError> {
    let problems = problems(config, heads, share)?;
    let budget = config.attention.features;
    let settings = method_settings(config);
    let d = problems
        .first()
        .and_then(|(_, passages)| passages.first())
        .map_or(config.d, |passage| passage.data.d);
    let mut report = KernelVsAttention {
        budget,
        tokens: problems
            .iter()
            .flat_map(|(_, passages)| passages.iter().map(|passage| passage.data.len))
            .min()
            .unwrap_or(0),
        problems: problems.iter().map(|(name, _)| name.clone()).collect(),
        methods: Vec::new(),
        feature_sizes: Vec::new(),
        kernel: Vec::new(),
        attention: Vec::new(),
        bad_rows: Vec::new(),
        without_kernel: Vec::new(),
        off_budget: Vec::new(),
    };
    let lln = lln_constants(config, d)?;
    for &method in &config.attention.methods {
        let Some((size, at)) = at_budget(method, &settings, d, budget) else {
            report.off_budget.push(method);
            continue;
        };
        let mut kernel = Vec::with_capacity(problems.len());
        let mut attention = Vec::with_capacity(problems.len());
        let mut bad_rows = 0;
        let mut estimates_kernel = true;
        for (_, passages) in &problems {
            let (mut kernel_sum, mut tv_sum, mut tv_rows) = (0.0, 0.0, 0usize);
            for Passage { data, exact_rows } in passages {
                let prepared = prepare_with(method, data, &at, lln.as_ref())?;
                match prepared.kernel_relative_mse(data, &at) {
                    Some(k) => kernel_sum += k,
                    None => estimates_kernel = false,
                }
                let rows: Vec<usize> = (0..data.len).collect();
                let draws = if method.is_random() { KVA_DRAWS } else { 1 };
                for r in 0..draws {
                    let run = run_with(method, &prepared, data, &at, config.seed, 500 + r, &rows)?;
                    let (total, bad) = summed_row_tv(&run.attention.rows, exact_rows);
                    tv_sum += total;
                    tv_rows += rows.len();
                    bad_rows += bad;
                }
            }
            kernel.push(if estimates_kernel {
                kernel_sum / passages.len().max(1) as f64
            } else {
                f64::NAN
            });
            attention.push(if tv_rows > 0 {
                tv_sum / tv_rows as f64
            } else {
                f64::NAN
            });
        }
        if !estimates_kernel {
            report.without_kernel.push(method);
        }
        report.methods.push(method);
        report.feature_sizes.push(size);
        report.kernel.push(kernel);
        report.attention.push(attention);
        report.bad_rows.push(bad_rows);
    }
    Ok(report)
}

#[cfg(test)]
mod tests;
