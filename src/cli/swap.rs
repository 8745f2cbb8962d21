//! `kernel-lab swap`: approximate attention inside the model ([`swap_report`],
//! [`retrieval_report`]): each chosen attention method (`--methods`, the page's key) replaces
//! softmax in every head of `--layers` (all, or a comma-separated list, or `each`: one layer at a
//! time), over `--draws` draws, on `--text` (default: the two stored passages) and, with
//! `--retrieval`, on the retrieval preset. JSON.

use std::path::PathBuf;

use serde::Serialize;

use super::args::{FlagKind, Flags};
use super::experiment::config_of;
use super::{CliError, quote};
use crate::lab::config::{HEAD_LAYERS, Param};
use crate::lab::model_swap::{
    RETRIEVAL_CANDIDATES, RETRIEVAL_QUERY, RetrievalReport, Swap, SwapReport, retrieval_report,
    swap_report,
};
use crate::numerics::attention::heads::RealHeads;

/// The stored passages' texts (from the heads asset's header), the default texts.
fn stored_passages() -> Result<Vec<String>, CliError> {
    let bytes = std::fs::read(super::attention::default_heads_path())
        .map_err(|e| CliError::new("--text", format!("cannot read the stored passages: {e}")))?;
    let heads = RealHeads::parse(&bytes).map_err(|e| CliError::new("--text", e.to_string()))?;
    Ok(heads
        .header()
        .passages
        .iter()
        .map(|p| p.text.clone())
        .collect())
}

/// Which layer sets `--layers` names.
fn layer_sets(text: &str) -> Result<Vec<Vec<usize>>, CliError> {
    match text.trim() {
        "all" => Ok(vec![(0..HEAD_LAYERS).collect()]),
        "each" => Ok((0..HEAD_LAYERS).map(|l| vec![l]).collect()),
        list => {
            let layers = list
                .split(',')
                .map(|v| match v.trim().parse::<usize>() {
                    Ok(l) if l < HEAD_LAYERS => Ok(l),
                    _ => Err(CliError::new(
                        "--layers",
                        format!(
                            "expected all, each or layers from 0 to {} (got {})",
                            HEAD_LAYERS - 1,
                            quote(v)
                        ),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(vec![layers])
        }
    }
}

/// What `swap` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SwapOutput {
    pub features: usize,
    pub seed: u64,
    pub texts: Vec<SwapReport>,
    pub retrieval: Vec<RetrievalReport>,
}

/// Runs `swap`.
pub fn run_swap_command(args: &[String]) -> Result<String, CliError> {
    let flags = Flags::parse("swap", args, |name| match name {
        "retrieval" => Some(FlagKind::Switch),
        "text" | "model-file" | "layers" | "query" => Some(FlagKind::Value),
        key => Param::from_key(key).map(|_| FlagKind::Value),
    })?;
    let config = config_of(&flags)?;
    let sets = layer_sets(flags.value("--layers").unwrap_or("all"))?;
    let texts = match flags.value("--text") {
        Some(t) => vec![t.to_string()],
        None => stored_passages()?,
    };
    let path = flags
        .value("--model-file")
        .map_or_else(super::default_model_path, PathBuf::from);
    let model = super::load_model(&path, "--model-file")?;
    let mut output = SwapOutput {
        features: config.attention.features,
        seed: config.seed,
        texts: Vec::new(),
        retrieval: Vec::new(),
    };
    for &method in &config.attention.methods {
        for layers in &sets {
            let swap = Swap {
                method,
                layers: layers.clone(),
                draws: config.attention.draws,
            };
            for text in &texts {
                output.texts.push(
                    swap_report(&model, text, &config, &swap)
                        .map_err(|e| CliError::new("swap", e.to_string()))?,
                );
            }
            if flags.has("--retrieval") {
                output.retrieval.push(
                    retrieval_report(
                        &model,
                        RETRIEVAL_QUERY,
                        &RETRIEVAL_CANDIDATES,
                        &config,
                        &swap,
                    )
                    .map_err(|e| CliError::new("swap", e.to_string()))?,
                );
            }
        }
    }
    super::to_json(&output)
}
