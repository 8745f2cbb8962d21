//! One request of the attention view run ([`run_attention`]): the data, LLN's constants when
//! a method needs them, then the part's computation ([`super::parts`]). The parts' results are
//! in [`super::outputs`] (re-exported here).

use std::sync::Mutex;

use super::kernel_vs_attention::kernel_vs_attention;
pub use super::outputs::*;
pub use super::parts::BUDGET_TOKENS;
use super::parts::{bias_variance, budget, heads_table, main_report, temperature};
use crate::lab::attention::data::attention_data;
use crate::lab::config::ExperimentConfig;
use crate::numerics::attention::AttentionError;
use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::heads::RealHeads;
use crate::numerics::attention::lln::{LlnConstants, fit_moment_matching};
use crate::numerics::rng::{StreamPurpose, stream_rng};

/// Runs one part.
pub fn run_attention(request: &AttentionRequest) -> Result<AttentionOutput, AttentionError> {
    let config = &request.config;
    config
        .validate()
        .map_err(|e| AttentionError::Data(e.to_string()))?;
    let heads = match &request.heads {
        Some(bytes) => {
            Some(RealHeads::parse(bytes).map_err(|e| AttentionError::Data(e.to_string()))?)
        }
        None => None,
    };
    let problem = || -> Result<(AttentionData, Option<LlnConstants>), AttentionError> {
        let data = attention_data(config, heads.as_ref())?;
        let lln = lln_constants(config, data.d)?;
        Ok((data, lln))
    };
    Ok(match request.part {
        AttentionPart::Main => {
            let (data, lln) = problem()?;
            AttentionOutput::Main(main_report(config, &data, lln.as_ref())?)
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
            let heads = heads.as_ref().ok_or_else(|| {
                AttentionError::Data("the real-head table needs the real heads".into())
            })?;
            AttentionOutput::HeadsTable(heads_table(config, heads)?)
        }
        AttentionPart::KernelVsAttention => {
            AttentionOutput::KernelVsAttention(kernel_vs_attention(config, heads.as_ref())?)
        }
    })
}

/// LLN's constants a, b for dimension d, fitted on the seed's own stream (only when LLN is
/// chosen: the fit costs about 16 softmax matrices of 256 tokens).
pub(super) fn lln_constants(
    config: &ExperimentConfig,
    d: usize,
) -> Result<Option<LlnConstants>, AttentionError> {
    if !config
        .attention
        .methods
        .iter()
        .any(|m| m.get().needs_lln_constants())
    {
        return Ok(None);
    }
    // The fit depends on d alone (its stream is fixed) and costs about 2·10⁸ exponentials:
    // each process (a worker, the command line) fits a dimension once.
    static FITTED: Mutex<Vec<LlnConstants>> = Mutex::new(Vec::new());
    if let Some(found) = FITTED
        .lock()
        .ok()
        .and_then(|fitted| fitted.iter().find(|c| c.d == d).copied())
    {
        return Ok(Some(found));
    }
    let mut rng = stream_rng(0, StreamPurpose::Attention, 1_000, d as u64);
    let constants = fit_moment_matching(d, &mut rng).map_err(|e| AttentionError::Method {
        method: "lln".into(),
        message: e.to_string(),
    })?;
    if let Ok(mut fitted) = FITTED.lock() {
        fitted.push(constants);
    }
    Ok(Some(constants))
}
