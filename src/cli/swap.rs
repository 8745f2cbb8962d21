//! `kernel-lab swap`: approximate attention inside the model ([`swap_report`],
//! [`retrieval_report`]): each chosen attention method (`--methods`, the page's key) replaces
//! softmax in every head of `--layers` (all, or a comma-separated list, or `each`: one layer at a
//! time), over `--swapdraws` draws, on `--text` (default: the two stored passages) and, with
//! `--rank`, on the retrieval set (`--retrieval`, one sentence per line, the query first;
//! default the preset). With
//! `--hedgehog`, the Hedgehog maps are trained first (`--hhsteps` steps on
//! `HEDGEHOG_TRAINING_TEXT`, evaluated on the first text) and swapped in after the methods.
//! JSON.

use std::path::PathBuf;

use serde::Serialize;

use super::args::{FlagKind, Flags};
use super::experiment::config_of;
use super::{CliError, quote};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use crate::lab::config::{ExperimentConfig, HEAD_LAYERS, Param, parse_retrieval};
use crate::lab::models::learned_map::train_learned_maps;
use crate::lab::models::protocol::HedgehogTraining;
use crate::lab::models::swap::{
    RetrievalReport, Swap, SwapMethod, SwapReport, retrieval_report, swap_report,
};
use crate::lab::models::swap_plan::hedgehog_job_on;
use crate::lab::models::text_model::TextModel;
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
    /// The Hedgehog maps' training, with `--hedgehog`.
    pub hedgehog: Option<HedgehogTraining>,
}

/// Milliseconds since the first call (the forwards' measured times).
pub(super) fn now() -> f64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
}

/// Trains the Hedgehog maps of every head on the training text, evaluated on `eval_text`.
fn trained_hedgehog(
    model: &TextModel,
    config: &ExperimentConfig,
    eval_text: &str,
) -> Result<(SwapMethod, HedgehogTraining), CliError> {
    let job = hedgehog_job_on(config, eval_text);
    let (maps, training) = train_learned_maps(model, &job, &mut |_| {}, now)
        .map_err(|e| CliError::new("--hedgehog", e.to_string()))?;
    Ok((SwapMethod::Learned(Arc::new(maps)), training))
}

/// Runs `swap`.
pub fn run_swap_command(args: &[String]) -> Result<String, CliError> {
    let flags = Flags::parse("swap", args, |name| match name {
        "rank" | "hedgehog" => Some(FlagKind::Switch),
        "text" | "model-file" | "layers" => Some(FlagKind::Value),
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
    let (query, candidates) = parse_retrieval(&config.attention.retrieval)
        .map_err(|e| CliError::new("--retrieval", e))?;
    let candidates: Vec<&str> = candidates.iter().map(String::as_str).collect();
    let model = super::load_model(&path, "--model-file")?;
    let mut output = SwapOutput {
        features: config.attention.features,
        seed: config.seed,
        texts: Vec::new(),
        retrieval: Vec::new(),
        hedgehog: None,
    };
    let mut methods: Vec<SwapMethod> = config
        .attention
        .methods
        .iter()
        .map(|&m| SwapMethod::Registry(m))
        .collect();
    if flags.has("--hedgehog") {
        let (learned, training) =
            trained_hedgehog(&model, &config, texts.first().map_or("", String::as_str))?;
        methods.push(learned);
        output.hedgehog = Some(training);
    }
    let failed = |e: crate::numerics::bert::ModelError| CliError::new("swap", e.to_string());
    for method in methods {
        for layers in &sets {
            let swap = Swap {
                method: method.clone(),
                layers: layers.clone(),
                draws: config.attention.swap_draws,
            };
            for text in &texts {
                output
                    .texts
                    .push(swap_report(&model, text, &config, &swap, now).map_err(failed)?);
            }
            if flags.has("--rank") {
                output.retrieval.push(
                    retrieval_report(&model, &query, &candidates, &config, &swap)
                        .map_err(failed)?,
                );
            }
        }
    }
    super::to_json(&output)
}
