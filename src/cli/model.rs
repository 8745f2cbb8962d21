//! `kernel-lab model`: the page's text view on the command line: the real all-MiniLM-L6-v2 on a
//! text (the same tokenizer and forward as the model worker, [`TextModel::run`]), printing the
//! tokens, the sentence embedding and, on request, heads' raw queries, keys and values, as JSON.
//! The converted model file is the one scripts/fetch-model.sh caches (or `--model-file`).

use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use super::args::{FlagKind, Flags};
use super::{CliError, quote};
use crate::lab::config::{HEAD_LAYERS, HEADS_PER_LAYER};
use crate::lab::models::text_model::TextModel;
use crate::numerics::attention::heads::HeadQkv;
use crate::numerics::bert::MODEL_FILE_NAME;

/// Where scripts/fetch-model.sh caches the models: `$SKL_MODEL_CACHE`, else
/// `$HOME/.cache/softmax-kernel-lab`.
pub fn model_cache_dir() -> PathBuf {
    std::env::var_os("SKL_MODEL_CACHE")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/softmax-kernel-lab"))
        })
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The converted MiniLM file in the cache.
pub fn default_model_path() -> PathBuf {
    model_cache_dir().join(MODEL_FILE_NAME)
}

/// Reads and checks the model file (its SHA-256, then its tensors).
pub fn load_model(path: &PathBuf, flag: &str) -> Result<TextModel, CliError> {
    let bytes = std::fs::read(path).map_err(|e| {
        CliError::new(
            flag,
            format!(
                "cannot read the model file {}: {e}; scripts/fetch-model.sh fetches it",
                quote(&path.to_string_lossy())
            ),
        )
    })?;
    TextModel::from_checked_bytes(&bytes).map_err(|e| CliError::new(flag, e.to_string()))
}

/// One head's vectors in the output.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HeadVectors {
    pub layer: usize,
    pub head: usize,
    /// Raw projections `x Wᵀ + b` (before the model's `1/√32` scaling), `tokens × 32` each, as
    /// the forward computed them in f32 and rounded to f16 (the attention view's values).
    pub q: Vec<Vec<f64>>,
    pub k: Vec<Vec<f64>>,
    pub v: Vec<Vec<f64>>,
}

/// What `model` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelReport {
    pub text: String,
    pub tokens: Vec<String>,
    pub ids: Vec<u32>,
    /// Tokens of the whole text when it was cut to 512 (`null` when it fits).
    pub full_len: Option<usize>,
    /// Mean-pooled, L2-normalised sentence embedding (384 values).
    pub embedding: Vec<f32>,
    pub multiply_adds: u64,
    /// Tokenizer and forward, wall time.
    pub forward_ms: f64,
    /// With `--qkv`: the chosen head (`--layer`, `--head`) or every head.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heads: Option<Vec<HeadVectors>>,
}

fn rows(values: &[f64], dim: usize) -> Vec<Vec<f64>> {
    values.chunks(dim).map(<[f64]>::to_vec).collect()
}

/// Runs `model`: parses its flags, loads the model, runs it and returns the JSON.
pub fn run_model_command(args: &[String]) -> Result<String, CliError> {
    let flags = Flags::parse("model", args, |name| match name {
        "qkv" => Some(FlagKind::Switch),
        "text" | "model-file" | "layer" | "head" => Some(FlagKind::Value),
        _ => None,
    })?;
    let text = flags
        .value("--text")
        .ok_or_else(|| CliError::new("--text", "missing: the text to run the model on"))?;
    let index = |flag: &str, count: usize| -> Result<Option<usize>, CliError> {
        flags
            .value(flag)
            .map(|v| match v.trim().parse::<usize>() {
                Ok(i) if i < count => Ok(i),
                _ => Err(CliError::new(
                    flag,
                    format!(
                        "expected an integer from 0 to {} (got {})",
                        count - 1,
                        quote(v)
                    ),
                )),
            })
            .transpose()
    };
    let layer = index("--layer", HEAD_LAYERS)?;
    let head = index("--head", HEADS_PER_LAYER)?;
    let path = flags
        .value("--model-file")
        .map_or_else(default_model_path, PathBuf::from);
    let model = load_model(&path, "--model-file")?;
    let start = Instant::now();
    let (run, parsed) = model
        .run_keeping_heads(text)
        .map_err(|e| CliError::new("--text", e.to_string()))?;
    let forward_ms = start.elapsed().as_secs_f64() * 1e3;
    let heads = if flags.has("--qkv") {
        let mut chosen = Vec::new();
        for l in (0..HEAD_LAYERS).filter(|l| layer.is_none_or(|x| x == *l)) {
            for h in (0..HEADS_PER_LAYER).filter(|h| head.is_none_or(|x| x == *h)) {
                let HeadQkv { dim, q, k, v, .. } = parsed
                    .head(0, l, h)
                    .map_err(|e| CliError::new("model", e.to_string()))?;
                chosen.push(HeadVectors {
                    layer: l,
                    head: h,
                    q: rows(&q, dim),
                    k: rows(&k, dim),
                    v: rows(&v, dim),
                });
            }
        }
        Some(chosen)
    } else {
        None
    };
    super::to_json(&ModelReport {
        text: run.text,
        tokens: run.tokens,
        ids: run.ids,
        full_len: run.full_len,
        embedding: run.embedding,
        multiply_adds: run.multiply_adds,
        forward_ms,
        heads,
    })
}
