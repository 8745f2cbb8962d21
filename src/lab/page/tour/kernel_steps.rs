//! The tour's steps in the kernel view: the seed paper's story (Performer's features, the
//! choice of A, Lemma 3.1) and the estimators after it.

use super::numbers::{
    estimator, from_log, log_relative_errors, percent, plain, series_of, summary_of,
};
use super::step::{Evidence, EvidenceKind, TourError, TourStep, Verdict};
use crate::lab::attention::kernel_vs_attention::spearman;
use crate::lab::kernel::experiment::{ExperimentResult, MseCurve};
use crate::lab::page::formulas;
use crate::numerics::stats::{least_squares_slope, median, order_by_key};

/// The kernel view's experiment, or why a step cannot read it.
fn kernel<'a>(evidence: &Evidence<'a>) -> Result<&'a ExperimentResult, TourError> {
    match evidence {
        Evidence::Kernel { result, .. } => Ok(result),
        _ => Err(TourError::WrongEvidence),
    }
}

/// The MSE-against-m curves, or why a step cannot read them.
fn curves<'a>(evidence: &Evidence<'a>) -> Result<&'a [MseCurve], TourError> {
    match evidence {
        Evidence::Kernel {
            curves: Some(curves),
            ..
        } => Ok(curves),
        _ => Err(TourError::WrongEvidence),
    }
}

/// The option whose bounds contain `value`: `bounds` are increasing, and option `i` is
/// `bounds[i - 1] ≤ value < bounds[i]`.
fn bracket(value: f64, bounds: &[f64]) -> usize {
    bounds.iter().take_while(|&&b| value >= b).count()
}

/// The share of relative errors `ln |ŜM/SM − 1|` below `ln tolerance`.
fn share_within(log_errors: &[f64], tolerance: f64) -> f64 {
    let within = log_errors.iter().filter(|&&e| e < tolerance.ln()).count();
    within as f64 / log_errors.len().max(1) as f64
}

/// The median of the finite values.
fn finite_median(values: impl Iterator<Item = f64>) -> Option<f64> {
    median(&values.filter(|v| v.is_finite()).collect::<Vec<_>>())
}

/// Step 1's relative error "close to the truth".
pub const CLOSE: f64 = 0.1;

fn one_pair(evidence: &Evidence<'_>) -> Result<Verdict, TourError> {
    let result = kernel(evidence)?;
    let series = series_of(result, estimator("prf-pos")?)?;
    let errors = log_relative_errors(series);
    let n = errors.len();
    if n == 0 {
        return Err(TourError::NotEnoughData("pair".into()));
    }
    let share = share_within(&errors, CLOSE);
    let ratios = series
        .estimates
        .log_true
        .iter()
        .zip(&series.estimates.estimates)
        .map(|(t, e)| if e.negative { f64::NAN } else { e.ln_abs - t });
    let median_ratio =
        finite_median(ratios).ok_or_else(|| TourError::NotEnoughData("estimate".into()))?;
    let largest = series
        .estimates
        .log_true
        .iter()
        .zip(&series.estimates.estimates)
        .map(|(t, e)| e.ln_abs - t)
        .filter(|v| v.is_finite())
        .fold(f64::NEG_INFINITY, f64::max);
    Ok(Verdict {
        answer: 2 - bracket(share, &[0.25, 0.6]),
        measured: format!(
            "With m = {m}, {within} of the {n} pairs ({share}) are within {close} of exp(x·y). The typical (median) estimate is {median} times the truth, the largest {largest} times it.",
            m = result.config.m,
            within = (share * n as f64).round(),
            share = percent(share),
            close = percent(CLOSE),
            median = from_log(median_ratio),
            largest = from_log(largest),
        ),
    })
}

/// Step 1: one estimate of exp(x·y) by Performer's positive features.
pub const ONE_PAIR: TourStep = TourStep {
    id: "one-pair",
    title: "One number, estimated",
    query: "est=prf-pos&m=64",
    control: "m",
    try_this: "Drag m, the number of random features, to the right and watch the cloud close in on the diagonal.",
    question: "Performer's positive random features are unbiased: averaged over draws of ω they give exp(x·y) exactly. On the paper's data, what share of the pairs does one estimate get within a tenth of the truth?",
    options: &[
        "most of them",
        "between a quarter and most",
        "fewer than a quarter",
    ],
    notice: "Each dot is one pair (x, y): the true kernel across, its estimate up. Unbiased does not mean close: each estimate is an average of products of exponentials of Gaussians, and such an average is usually below its mean and now and then far above it. More features help only slowly, as the next steps show.",
    formula: formulas::PRF_ESTIMATOR,
    evidence: EvidenceKind::Kernel,
    verdict: one_pair,
};

fn heavy_tails(evidence: &Evidence<'_>) -> Result<Verdict, TourError> {
    let result = kernel(evidence)?;
    let series = series_of(result, estimator("prf-pos")?)?;
    let errors = log_relative_errors(series);
    let (z, errors_z): (Vec<f64>, Vec<f64>) = series
        .estimates
        .z_squared
        .iter()
        .zip(&errors)
        .filter(|(z, e)| z.is_finite() && e.is_finite())
        .map(|(z, e)| (*z, *e))
        .unzip();
    let (dot, errors_dot): (Vec<f64>, Vec<f64>) = series
        .estimates
        .log_true
        .iter()
        .zip(&errors)
        .filter(|(t, e)| t.is_finite() && e.is_finite())
        .map(|(t, e)| (*t, *e))
        .unzip();
    let not_enough = || TourError::NotEnoughData("pairs to correlate".into());
    let rho_z = spearman(&errors_z, &z).ok_or_else(not_enough)?;
    let rho_dot = spearman(&errors_dot, &dot).ok_or_else(not_enough)?;
    let answer = if rho_z >= 0.3 && rho_z > rho_dot {
        1
    } else if rho_dot >= 0.3 {
        0
    } else {
        2
    };
    Ok(Verdict {
        answer,
        measured: format!(
            "Over the {n} pairs, the rank correlation of the relative error with |x + y|² is {rho_z}, with x·y {rho_dot}.",
            n = z.len(),
            rho_z = plain(rho_z),
            rho_dot = plain(rho_dot),
        ),
    })
}

/// Step 2: what makes Performer's estimate bad.
pub const HEAVY_TAILS: TourStep = TourStep {
    id: "heavy-tails",
    title: "Heavy tails as |x + y| grows",
    query: "est=prf-pos&m=256&d=8&scale=0.5&xshape=0.5&yshape=0.5&xnorm=2&ynorm=1",
    control: "xnorm",
    try_this: "Drag the query norm |x| to the right: every pair's |x + y| grows, and the cloud spreads.",
    question: "Which pairs does Performer's estimator get most wrong?",
    options: &[
        "those with the largest exp(x·y)",
        "those with the largest |x + y|",
        "no pattern: the errors are random",
    ],
    notice: "The relative MSE of positive features depends on a pair only through |x + y|, not on the kernel's value: it grows like the exponential of |x + y|². Point at a dot to see its |z|² = |x + y|². This is the whole story of the paper: make |z| small.",
    formula: formulas::PRF_RELATIVE_MSE,
    evidence: EvidenceKind::Kernel,
    verdict: heavy_tails,
};

/// Median MSEs of `ids`, in order, as logs.
fn log_medians(result: &ExperimentResult, ids: &[&str]) -> Result<Vec<f64>, TourError> {
    ids.iter()
        .map(|id| Ok(summary_of(result, estimator(id)?)?.log_median_mse))
        .collect()
}

/// The index of the smallest value (the first of equals).
fn argmin(values: &[f64]) -> usize {
    order_by_key(values).first().copied().unwrap_or(0)
}

const PAPER_ESTIMATORS: [&str; 3] = ["prf-hyp", "hcexp-mean", "hcexp-var"];

fn choosing_a(evidence: &Evidence<'_>) -> Result<Verdict, TourError> {
    let result = kernel(evidence)?;
    let logs = log_medians(result, &PAPER_ESTIMATORS)?;
    let best = argmin(&logs);
    Ok(Verdict {
        answer: best,
        measured: format!(
            "Median MSE over the {datasets} datasets: A = I {a}, mean-only A {b}, variance-adjusted A {c}. The best is {factor} times below A = I's.",
            datasets = result.config.datasets,
            a = from_log(logs[0]),
            b = from_log(logs[1]),
            c = from_log(logs[2]),
            factor = from_log(logs[0] - logs[best]),
        ),
    })
}

/// Step 3: the seed paper's figure, the choice of A.
pub const CHOOSING_A: TourStep = TourStep {
    id: "choosing-a",
    title: "Choosing A: the paper's figure",
    query: "",
    control: "est",
    try_this: "Look at the boxplots below the scatter; untick an estimator to see the others' scale.",
    question: "The paper's three estimators differ only in A: A = I (Performer's hyperbolic PRF), the mean-only A and the variance-adjusted A. Which has the lowest median MSE?",
    options: &["A = I", "the mean-only A", "the variance-adjusted A"],
    notice: "Any invertible A leaves the kernel alone, since Ax · A⁻ᵀy = x · y, but the MSE grows like the exponential of |z|² with z = Ax + A⁻ᵀy. Here the queries are long and the keys short: a diagonal A that shrinks x and stretches y, coordinate by coordinate, makes |z| small. The variance-adjusted A counts each coordinate's spread as well as its mean.",
    formula: formulas::DATA_MOMENTS,
    evidence: EvidenceKind::Kernel,
    verdict: choosing_a,
};

fn mean_only_fails(evidence: &Evidence<'_>) -> Result<Verdict, TourError> {
    let result = kernel(evidence)?;
    let logs = log_medians(result, &PAPER_ESTIMATORS)?;
    let ratio = logs[1] - logs[0];
    Ok(Verdict {
        answer: bracket(ratio, &[0.5f64.ln(), 2f64.ln()]),
        measured: format!(
            "Median MSE: A = I {a}, mean-only A {b} ({ratio} times A = I's), variance-adjusted A {c}.",
            a = from_log(logs[0]),
            b = from_log(logs[1]),
            ratio = from_log(ratio),
            c = from_log(logs[2]),
        ),
    })
}

/// Step 4: where the mean-only A goes wrong.
pub const MEAN_ONLY_FAILS: TourStep = TourStep {
    id: "mean-only-fails",
    title: "When the mean-only A fails",
    query: "scale=0.001&xshape=1&yshape=1&xnorm=1.5&ynorm=1.5",
    control: "scale",
    try_this: "Drag the Laplace scale of the means back up and watch the mean-only A recover.",
    question: "Now the means are nearly zero next to unit spreads, and queries and keys have equal norms. Does the mean-only A still beat A = I?",
    options: &[
        "yes, by far",
        "they are about equal",
        "no: it is worse than A = I",
    ],
    notice: "The mean-only A sets each a_i from the ratio of the keys' and the queries' mean: where both means are near zero that ratio is noise, and the a_i scatter over decades. The variance-adjusted A adds each spread to its mean, so it stays near one where A = I is already balanced.",
    formula: formulas::DATA_MOMENTS,
    evidence: EvidenceKind::Kernel,
    verdict: mean_only_fails,
};

fn lemma_3_1(evidence: &Evidence<'_>) -> Result<Verdict, TourError> {
    let result = kernel(evidence)?;
    let id = estimator("hcexp-var")?;
    let curve = curves(evidence)?
        .iter()
        .find(|c| c.estimator == id)
        .ok_or_else(|| TourError::Missing(id.label().to_string()))?;
    let points: Vec<(f64, f64)> = curve
        .points
        .iter()
        .filter(|p| p.log_measured_mse.is_finite())
        .map(|p| ((p.m as f64).ln(), p.log_measured_mse))
        .collect();
    let slope = least_squares_slope(&points)
        .ok_or_else(|| TourError::NotEnoughData("curve point".into()))?;
    // The options are slopes −1, −½ and −2 (halves, √2, a quarter per doubling of m).
    let candidates = [-1.0, -0.5, -2.0];
    let answer = argmin(&candidates.map(|c: f64| (slope - c).abs()));
    let at = curve
        .points
        .iter()
        .find(|p| p.m == result.config.m)
        .or_else(|| curve.points.last())
        .ok_or_else(|| TourError::NotEnoughData("curve point".into()))?;
    Ok(Verdict {
        answer,
        measured: format!(
            "For the variance-adjusted A, the measured MSE falls with slope {slope} on the log–log chart (m from {first} to {last}): each doubling of m multiplies it by {factor}. At m = {m} it is {measured} against Lemma 3.1's {theory}.",
            slope = plain(slope),
            first = curve.points.first().map_or(0, |p| p.m),
            last = curve.points.last().map_or(0, |p| p.m),
            factor = plain(2f64.powf(slope)),
            m = at.m,
            measured = from_log(at.log_measured_mse),
            theory = from_log(at.log_theoretical_mse),
        ),
    })
}

/// Step 5: Lemma 3.1 beside the measurement.
pub const LEMMA_3_1: TourStep = TourStep {
    id: "lemma-3-1",
    title: "Lemma 3.1 beside the measurement",
    query: "",
    control: "m",
    try_this: "Scroll to \"Theory beside the measurement\": the line is Lemma 3.1 and the points are measured, at every m.",
    question: "Double the number of features m. What happens to the measured MSE?",
    options: &[
        "it halves",
        "it falls by the square root of two",
        "it falls to a quarter",
    ],
    notice: "The estimate is an average of m independent terms, so its variance is one term's divided by m, and the error itself shrinks only like one over the square root of m. Lemma 3.1 gives the whole MSE, not only its order: compare the points with the line. Where |z|² is large the measured points fall below the line: the MSE is then made by draws too rare to be seen in a few repeats.",
    formula: formulas::LEMMA_3_1_HCEXP_MSE,
    evidence: EvidenceKind::KernelCurves,
    verdict: lemma_3_1,
};

fn couplings(evidence: &Evidence<'_>) -> Result<Verdict, TourError> {
    let result = kernel(evidence)?;
    let summary = summary_of(result, estimator("hcexp-var")?)?;
    // The boxes' median against the diamonds' (Lemma 3.1 for i.i.d. ω, on the same pairs).
    let ratio = summary.log_median_mse - summary.log_median_theoretical_mse;
    Ok(Verdict {
        answer: 2 - bracket(ratio, &[0.8f64.ln(), 1.25f64.ln()]),
        measured: format!(
            "With {coupling} ω, the variance-adjusted HCEXP's median MSE over the datasets is {measured}, against {theory} from Lemma 3.1 for independent ω: {ratio} times it.",
            coupling = result.config.coupling.label(),
            measured = from_log(summary.log_median_mse),
            theory = from_log(summary.log_median_theoretical_mse),
            ratio = from_log(ratio),
        ),
    })
}

/// Step 6: the same features, drawn together.
pub const COUPLINGS: TourStep = TourStep {
    id: "couplings",
    title: "Better couplings of ω",
    query: "est=hcexp-var&omega=fresh&m=64&coupling=orthogonal",
    control: "coupling",
    try_this: "Switch the coupling between i.i.d., orthogonal, simplex and randomised QMC, and watch the box against its black diamond.",
    question: "The ω are now drawn in orthogonal blocks instead of independently; each row is still Gaussian, so the estimator stays unbiased. Where will the box of the MSE land against the black diamond, Lemma 3.1's prediction for independent ω?",
    options: &["above the diamond", "on the diamond", "below the diamond"],
    notice: "Orthogonal rows cannot point the same way, so the features cover the directions more evenly than independent draws and their errors partly cancel. The gain is largest while m is not much larger than d, and for small |z|: there it is free accuracy. Simplex blocks and randomised quasi-Monte Carlo push the same idea further.",
    formula: formulas::LEMMA_3_1_HCEXP_MSE,
    evidence: EvidenceKind::Kernel,
    verdict: couplings,
};

const LATER_ESTIMATORS: [&str; 3] = ["hcexp-var", "oprf-var", "hderf-fit"];

fn beyond_the_paper(evidence: &Evidence<'_>) -> Result<Verdict, TourError> {
    let result = kernel(evidence)?;
    let logs = log_medians(result, &LATER_ESTIMATORS)?;
    let best = argmin(&logs);
    Ok(Verdict {
        answer: match best {
            0 => 2,
            1 => 0,
            _ => 1,
        },
        measured: format!(
            "Median MSE: the paper's variance-adjusted HCEXP {a}, OPRF with that A {b}, the fitted dense DERF {c}: the best is {factor} times below the paper's.",
            a = from_log(logs[0]),
            b = from_log(logs[1]),
            c = from_log(logs[2]),
            factor = from_log(logs[0] - logs[best]),
        ),
    })
}

/// Step 7: the estimators that came after the paper.
pub const BEYOND_THE_PAPER: TourStep = TourStep {
    id: "beyond-the-paper",
    title: "Beyond the paper: OPRF and DERF",
    query: "est=hcexp-var,oprf-var,hderf-fit",
    control: "est",
    try_this: "Add Performer's PRF back among the estimators to see how far everything has come.",
    question: "The seed paper stops at the variance-adjusted HCEXP. Does an estimator from later papers beat it on the same data?",
    options: &[
        "yes: OPRF (optimal positive features) with the same A",
        "yes: the dense exponential features (DERF) fitted to the data",
        "no: the paper's is still the best",
    ],
    notice: "OPRF changes the features' shape, not A: its parameter is chosen to minimise the variance. DERF replaces the diagonal A by a dense matrix fitted to the queries' and keys' statistics, so it can undo correlations between coordinates too. All are unbiased; they differ only in how large |z| stays.",
    formula: formulas::DATA_DENSE_P,
    evidence: EvidenceKind::Kernel,
    verdict: beyond_the_paper,
};
