//! The tour's last step: softmax replaced inside the real model, on the page's text, and what
//! the sentence embedding keeps.

use super::numbers::plain;
use super::step::{Evidence, EvidenceKind, TourError, TourStep, Verdict};
use crate::lab::models::protocol::SwapReport;
use crate::lab::models::swap_plan::KEEPS_COSINE;
use crate::lab::page::formulas;

/// The swaps of `method` that went through, by their number of features.
fn by_features<'a>(reports: &'a [SwapReport], method: &str) -> Vec<(usize, f64, &'a SwapReport)> {
    let mut found: Vec<_> = reports
        .iter()
        .filter(|r| r.method == method)
        .filter_map(|r| Some((r.features?, r.cosine.as_ref()?.mean, r)))
        .collect();
    found.sort_by_key(|(m, _, _)| *m);
    found
}

fn embedding(evidence: &Evidence<'_>) -> Result<Verdict, TourError> {
    let Evidence::Swap(reports) = evidence else {
        return Err(TourError::WrongEvidence);
    };
    let performer = by_features(reports, "prf-pos");
    let sparse = by_features(reports, "sparse");
    if performer.is_empty() {
        return Err(TourError::Missing(
            "Performer (prf-pos) in the model swap".into(),
        ));
    }
    let keeps = performer
        .iter()
        .position(|(_, cosine, _)| *cosine >= KEEPS_COSINE);
    let answer = match keeps {
        Some(0) => 0,
        Some(_) => 1,
        None => 2,
    };
    let list = |found: &[(usize, f64, &SwapReport)]| {
        found
            .iter()
            .map(|(m, cosine, _)| format!("{} at m = {m}", plain(*cosine)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let first = performer[0].2;
    let mut measured = format!(
        "Cosine of the sentence embedding to the exact model's, with every head of layers {layers} swapped, mean over {draws} draws on the {tokens}-token text: Performer {performer}.",
        layers = first
            .layers
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        draws = first.draws,
        tokens = first.tokens,
        performer = list(&performer),
    );
    if !sparse.is_empty() {
        measured.push_str(&format!(
            " Sparse plus low-rank (each row's top keys exactly): {}.",
            list(&sparse)
        ));
    }
    Ok(Verdict { answer, measured })
}

/// Step 10: what a sentence embedding keeps when softmax is replaced.
pub const EMBEDDING: TourStep = TourStep {
    id: "embedding",
    title: "What a sentence embedding keeps",
    query: "view=attention&src=text&methods=prf-pos,sparse&hhsteps=0&swapdraws=2",
    control: "swap",
    try_this: "Swap one layer at a time (the layer boxes under the model swap) and see which layers the embedding minds most; or type your own sentence.",
    question: "The real model runs on the text in the view below. Replace softmax by Performer's random features in every head of every layer, with more and more features. Does the sentence embedding stay as it was, within a cosine of one hundredth?",
    options: &[
        "yes, even with few features",
        "only with the most features",
        "not with any number of features the page tries",
    ],
    notice: "The embedding is the mean of the last layer's states, so every swapped layer's error flows into it and is carried through the layers after it. Random features blur each row's few large weights, which are what a head passes on; the exact top keys of sparse plus low-rank keep them, at quadratic cost. On a short text every linear map also costs more than softmax: it pays only on long sequences.",
    formula: formulas::MODEL_SWAP,
    evidence: EvidenceKind::Swap,
    verdict: embedding,
};
