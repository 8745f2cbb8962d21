//! `kernel-lab shipped`: computes the answers of the text view that do not depend on the
//! reader's text for the lab's defaults (`lab::models::shipped`: the default Hedgehog maps and
//! the default retrieval set under each default method) with the code the model worker runs, and
//! writes them for the page to ship (`--out`, default `assets/shipped-answers.bin`, which
//! index.html copies beside the page). Prints a summary as JSON. The native test
//! `tests/shipped.rs` checks that the committed file is what this computes.

use std::path::PathBuf;

use serde::Serialize;

use super::args::{FlagKind, Flags};
use super::{CliError, swap::now};
use crate::lab::models::shipped::{SHIPPED_ASSET_PATH, compute_shipped_answers};
use crate::numerics::bert::MODEL_SHA256;

/// What `shipped` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShippedSummary {
    pub out: String,
    pub bytes: usize,
    pub model_sha256: String,
    pub heads: usize,
    pub retrievals: Vec<String>,
    pub compute_ms: f64,
}

/// Runs `shipped`.
pub fn run_shipped_command(args: &[String]) -> Result<String, CliError> {
    let flags = Flags::parse("shipped", args, |name| match name {
        "out" | "model-file" => Some(FlagKind::Value),
        _ => None,
    })?;
    let path = flags
        .value("--model-file")
        .map_or_else(super::default_model_path, PathBuf::from);
    let out = PathBuf::from(flags.value("--out").unwrap_or(SHIPPED_ASSET_PATH));
    let model = super::load_model(&path, "--model-file")?;
    let start = now();
    let answers = compute_shipped_answers(&model, MODEL_SHA256, now)
        .map_err(|e| CliError::new("shipped", e.to_string()))?;
    let compute_ms = now() - start;
    let bytes =
        postcard::to_allocvec(&answers).map_err(|e| CliError::new("shipped", e.to_string()))?;
    std::fs::write(&out, &bytes)
        .map_err(|e| CliError::new("--out", format!("cannot write {}: {e}", out.display())))?;
    super::to_json(&ShippedSummary {
        out: out.display().to_string(),
        bytes: bytes.len(),
        model_sha256: answers.model_sha256.clone(),
        heads: answers.training.check.len(),
        retrievals: answers
            .retrievals
            .iter()
            .map(|r| r.job.method.clone())
            .collect(),
        compute_ms,
    })
}
