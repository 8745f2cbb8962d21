//! The tour's steps in the attention view: from one kernel value to whole rows, then the real
//! heads of all-MiniLM-L6-v2.

use super::numbers::{percent, plain};
use super::step::{Evidence, EvidenceKind, TourError, TourStep, Verdict};
use crate::lab::attention::report::MethodReport;
use crate::lab::page::formulas;
use crate::numerics::attention::methods::MethodId;

/// The report of the method `id` in the attention view's main part.
fn method<'a>(reports: &'a [MethodReport], id: &str) -> Result<&'a MethodReport, TourError> {
    let wanted =
        MethodId::from_id(id).ok_or_else(|| TourError::Missing(format!("the method `{id}`")))?;
    reports
        .iter()
        .find(|r| r.method == wanted)
        .ok_or_else(|| TourError::Missing(wanted.label().to_string()))
}

fn rows(evidence: &Evidence<'_>) -> Result<Verdict, TourError> {
    let Evidence::Attention(report) = evidence else {
        return Err(TourError::WrongEvidence);
    };
    let performer = method(&report.methods, "prf-pos")?;
    let rfa = method(&report.methods, "rff")?;
    let (tv_performer, tv_rfa) = (performer.median_tv(), rfa.median_tv());
    if !tv_performer.is_finite() || !tv_rfa.is_finite() {
        return Err(TourError::NotEnoughData("row".into()));
    }
    let ratio = tv_rfa / tv_performer;
    let answer = if ratio > 1.25 {
        0
    } else if ratio < 0.8 {
        1
    } else {
        2
    };
    Ok(Verdict {
        answer,
        measured: format!(
            "Median total variation between a row and softmax's, at m = {m} on {len} tokens: Performer {a}, RFA {b}. Rows whose estimated sum was unusable: Performer {bad_a}, RFA {bad_b}.",
            m = report_features(report),
            len = report.len,
            a = plain(tv_performer),
            b = plain(tv_rfa),
            bad_a = performer.bad_rows,
            bad_b = rfa.bad_rows,
        ),
    })
}

/// The m of the attention view's state, as the main part ran it (Performer's feature size).
fn report_features(report: &crate::lab::attention::report::MainReport) -> usize {
    report
        .methods
        .iter()
        .find(|r| r.method.id() == "prf-pos")
        .map_or(0, |r| r.feature_size)
}

/// Step 8: from the kernel to attention rows.
pub const ROWS: TourStep = TourStep {
    id: "rows",
    title: "From the kernel to attention rows",
    query: "view=attention",
    control: "features",
    try_this: "Drag the number of features m and compare the heatmaps of Performer and RFA with softmax's.",
    question: "Performer's positive features and RFA's trigonometric features both estimate exp(q·k) without bias. Which gives attention rows closer to softmax's?",
    options: &["Performer", "RFA", "about the same"],
    notice: "Attention divides each row by its sum, so a row is a ratio of estimates, and a ratio of unbiased estimates is biased. Trigonometric features can be negative: a row's estimated sum can come near zero and the whole row blows up. Positive features keep every weight positive, so the sum never vanishes.",
    formula: formulas::ATTENTION_MATRICES,
    evidence: EvidenceKind::Attention,
    verdict: rows,
};

fn real_heads(evidence: &Evidence<'_>) -> Result<Verdict, TourError> {
    let Evidence::KernelVsAttention(report) = evidence else {
        return Err(TourError::WrongEvidence);
    };
    let problems = report.problems.len();
    if problems == 0 || report.methods.len() < 2 {
        return Err(TourError::NotEnoughData("heads".into()));
    }
    let agreement = report.agreement();
    let share = agreement as f64 / problems as f64;
    let answer = if share > 0.7 {
        0
    } else if share >= 0.3 {
        1
    } else {
        2
    };
    let rho = report
        .mean_spearman()
        .map_or("not computable".to_string(), plain);
    Ok(Verdict {
        answer,
        measured: format!(
            "The method with the lowest kernel MSE also has the lowest row error on {agreement} of the {problems} heads ({share}); over the heads, the two orders correlate at ρ = {rho} (mean Spearman), with D = {budget} features.",
            share = percent(share),
            budget = report.budget,
        ),
    })
}

/// Step 9: the real heads.
pub const REAL_HEADS: TourStep = TourStep {
    id: "real-heads",
    title: "Real heads: does a lower kernel MSE give better rows?",
    query: "view=attention&src=minilm&features=16&methods=prf-pos,hderf-fit,taylor,sparse",
    control: "features",
    try_this: "Scroll to the chart of kernel error against row error: one point per head and method.",
    question: "On every head of the real model, four methods are ranked twice, by kernel MSE and by row error: Performer, the fitted dense DERF, Taylor, and sparse plus low-rank (each row's top keys exactly, Performer's features for the rest). How often does the kernel's winner also win the rows?",
    options: &["almost always", "on about half the heads", "rarely"],
    notice: "A row's error is set by its few largest weights, and the kernel MSE averages over every pair, most of which carry no weight. So a method can cut the kernel MSE by orders of magnitude and barely move the rows. What makes rows good is getting each row's top keys right.",
    formula: formulas::KERNEL_VS_ATTENTION,
    evidence: EvidenceKind::KernelVsAttention,
    verdict: real_heads,
};
