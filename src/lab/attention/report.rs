//! One request of the attention view run ([`run_attention`]): the data, LLN's constants when
//! a method needs them, then the part's computation ([`crate::lab::attention::parts`]). The parts' results are
//! in [`crate::lab::attention::outputs`] (re-exported here).

use crate::lab::attention::data::attention_data;
use crate::lab::attention::kernel_vs_attention::kernel_vs_attention_share;
use crate::lab::attention::lengths::{length_study, measure_unit};
use crate::lab::attention::methods::lln_constants;
pub use crate::lab::attention::outputs::*;
pub use crate::lab::attention::parts::BUDGET_TOKENS;
use crate::lab::attention::parts::{bias_variance, budget, heads_table, main_report, temperature};
use crate::lab::attention::stored_heads::StoredHeads;
use crate::numerics::attention::AttentionError;
use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::heads::HeadSet;
use crate::numerics::attention::lln::LlnConstants;

/// Runs one part on synthetic data or the stored heads, read from `stored` (once) when the
/// part reads them: the real heads as data, or the length study's fitted head.
pub fn run_attention(
    request: &AttentionRequest,
    stored: &mut StoredHeads,
) -> Result<AttentionOutput, AttentionError> {
    request
        .config
        .validate()
        .map_err(|e| AttentionError::Data(e.to_string()))?;
    let heads = if request.reads_stored_heads() {
        Some(stored.get().map_err(AttentionError::Data)?)
    } else {
        None
    };
    run_attention_on(request, heads.as_deref().map(|h| h as &dyn HeadSet))
}

/// Runs one part on `heads`: the stored heads, or the reader's text's heads that the model
/// workers keep from its forward (the encoder's, or the causal model's: then only the chosen
/// methods with a causal form are computed).
pub fn run_attention_on(
    request: &AttentionRequest,
    heads: Option<&dyn HeadSet>,
) -> Result<AttentionOutput, AttentionError> {
    request
        .config
        .validate()
        .map_err(|e| AttentionError::Data(e.to_string()))?;
    let masked;
    let config = if request.config.attention.source.is_causal() {
        masked = request.config.with_causal_methods()?;
        &masked
    } else {
        &request.config
    };
    // The parts that read every head compute only this share of them.
    let share = request.share.unwrap_or(ProblemShare::WHOLE);
    let problem = || -> Result<(AttentionData, Option<LlnConstants>), AttentionError> {
        let data = attention_data(config, heads)?;
        let lln = lln_constants(config, data.d)?;
        Ok((data, lln))
    };
    Ok(match request.part {
        AttentionPart::Main => {
            let (data, lln) = problem()?;
            let mut report = main_report(config, &data, lln.as_ref())?;
            // The tokens of the real passage shown (the user's text is passage 0 of its heads).
            let passage = config.attention.real_passage().zip(heads);
            if let Some(tokens) = passage.and_then(|(p, h)| h.tokens(p)) {
                report.tokens = tokens.to_vec();
            }
            AttentionOutput::Main(report)
        }
        AttentionPart::BiasVariance => {
            let (data, lln) = problem()?;
            AttentionOutput::BiasVariance(bias_variance(config, &data, lln.as_ref())?)
        }
        AttentionPart::Temperature => {
            let (data, lln) = problem()?;
            AttentionOutput::Temperature(temperature(config, &data, lln.as_ref())?)
        }
        AttentionPart::Budget => {
            let (data, lln) = problem()?;
            AttentionOutput::Budget(budget(config, &data, lln.as_ref())?)
        }
        AttentionPart::HeadsTable => {
            let heads = heads.ok_or_else(|| {
                AttentionError::Data("the real-head table needs the real heads".into())
            })?;
            AttentionOutput::HeadsTable(heads_table(config, heads, share)?)
        }
        AttentionPart::KernelVsAttention => {
            AttentionOutput::KernelVsAttention(kernel_vs_attention_share(config, heads, share)?)
        }
        AttentionPart::Lengths => {
            let heads = heads.ok_or_else(|| {
                AttentionError::Data("the length study needs the real heads".into())
            })?;
            AttentionOutput::Lengths(match &request.lengths_unit {
                Some(unit) => measure_unit(config, heads, unit)?,
                None => length_study(config, heads)?,
            })
        }
    })
}
