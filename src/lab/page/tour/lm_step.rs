//! The tour's last step: softmax replaced in every layer of a causal language model, what that
//! does to the perplexity of a paragraph, and what attention transfer wins back.

use super::numbers::plain;
use super::step::{Evidence, EvidenceKind, TourError, TourStep, Verdict};
use crate::lab::config::LM_LAYERS;
use crate::lab::page::formulas;

/// `value` as a multiple of `exact`: "×12.3".
fn times(value: f64, exact: f64) -> String {
    format!("×{}", plain(value / exact))
}

fn win_it_back(evidence: &Evidence<'_>) -> Result<Verdict, TourError> {
    let Evidence::LanguageModel(lm) = evidence else {
        return Err(TourError::WrongEvidence);
    };
    let Some((label, layers, swapped)) = lm.swap.as_ref().filter(|s| s.1.len() == LM_LAYERS) else {
        return Err(TourError::Missing(
            "a method in every layer of the model (layers: all)".into(),
        ));
    };
    let Some((steps, transfer)) = lm.transfer.as_ref() else {
        return Err(TourError::Missing(
            "the attention transfer (layers to transfer)".into(),
        ));
    };
    if !(lm.exact.is_finite() && swapped.is_finite() && lm.exact > 0.0) {
        return Err(TourError::NotEnoughData("perplexity".into()));
    }
    let ratio = swapped / lm.exact;
    let answer = match ratio {
        r if r < 1.1 => 0,
        r if r < 10.0 => 1,
        _ => 2,
    };
    let transferred = match transfer.layers.len() {
        n if n == LM_LAYERS => "all 30 layers".to_string(),
        1 => format!("layer {}", transfer.layers[0]),
        n => format!("{n} layers"),
    };
    let measured = format!(
        "Perplexity of the {tokens}-token text: {exact} exactly; {swapped} ({ratio}) with {label} in all {count} layers. Hedgehog's maps in {transferred}, untrained: {zero_shot} ({zero_ratio}); trained {steps} Adam steps a layer on another text: {after} ({after_ratio}).",
        tokens = lm.tokens,
        exact = plain(lm.exact),
        swapped = plain(*swapped),
        ratio = times(*swapped, lm.exact),
        count = layers.len(),
        zero_shot = plain(transfer.zero_shot),
        zero_ratio = times(transfer.zero_shot, transfer.exact),
        after = plain(transfer.transferred),
        after_ratio = times(transfer.transferred, transfer.exact),
    );
    Ok(Verdict { answer, measured })
}

/// Step 11: a causal language model with linear attention in every layer, and attention
/// transfer.
pub const WIN_IT_BACK: TourStep = TourStep {
    id: "win-it-back",
    title: "Linear attention in every layer, and winning it back",
    query: "view=lm&lmmethod=elu&lmlayers=all&lmchart=off&lmtrain=all&lmsteps=20&text=Every%20spring%20the%20river%20floods%20the%20low%20meadows%2C%20and%20the%20farmers%20move%20their%20sheep%20to%20the%20hills%20until%20the%20water%20falls.%20Children%20count%20the%20days%20on%20the%20school%20calendar%2C%20and%20the%20old%20mill%2C%20silent%20for%20a%20century%2C%20turns%20again%20for%20the%20festival.",
    control: "lmlayers",
    try_this: "Swap only the last few layers and see how little they cost; or, below the charts, transfer fewer layers or train longer.",
    question: "A small causal language model reads the paragraph below. Replace softmax by the linear transformer's map (elu plus one) in every head of every layer, with no training. What happens to the perplexity, how surprised the model is by each next token?",
    options: &[
        "it barely moves (less than a tenth more)",
        "it rises, but less than tenfold",
        "it rises more than tenfold",
    ],
    notice: "Each layer's error passes through every layer after it, and a layer's heads put their weight on a few tokens, which a fixed map spreads over all of them. Attention transfer (Hedgehog, the first stage of LoLCATs) trains a small map per head to give the same attention rows as softmax, on another text, and nothing else of the model: most of what the swap lost comes back, and each linear layer then decodes with a state of fixed size instead of a growing cache.",
    formula: formulas::LM_TRANSFER,
    evidence: EvidenceKind::LanguageModel,
    verdict: win_it_back,
};
