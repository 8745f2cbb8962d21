//! `kernel-lab lm`: the causal language model (SmolLM2-135M-Instruct) on a text, as the page's
//! "what the model expects" view computes it ([`lm_report`]): the token ids, each token's
//! loss in nats, the perplexity, the five most likely next tokens at each position, and with
//! `--method M` the same with M replacing softmax in `--layers` (default all), causally, over
//! `--swapdraws` draws of a random method (the attention view's `--features`, `--seed`, …
//! apply). With `--per-layer`, the perplexity with each of those layers alone swapped (the exact
//! states before it reused). With `--generate N` (or `--lmgen`), the text continued by N tokens
//! (at most 128), exactly and, with `--method`, with those layers decoded as recurrent
//! networks (`--lmtemp` the temperature, 0 the likeliest token; `--seed` the draws). With
//! `--train-layers L` (or `--lmtrain`), attention transfer: each of those layers' Hedgehog maps
//! trained on the lab's transfer text for `--lmsteps` steps, with every point of the curves,
//! then the text's perplexity exact, zero-shot and transferred (`lab::models::smollm::transfer`,
//! the page's code); with `--generate` too, the continuations add `transferred` (those layers
//! linear with their trained maps) and the transfer's report. JSON. The GGUF file is the one scripts/fetch-model.sh caches (or
//! `--lm-file`).

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

use super::args::{FlagKind, Flags};
use super::experiment::config_of;
use super::{CliError, quote};
use crate::lab::config::ExperimentConfig;
use crate::lab::config::{LM_LAYERS, Param, parse_layers};
use crate::lab::models::smollm::TransferReport;
use crate::lab::models::smollm::transfer::transfer_report;
use crate::lab::models::smollm::{
    Continuation, Decoding, LmJob, continue_text, lm_report, lm_tokens, per_layer_report, swap_of,
};
use crate::numerics::attention::methods::MethodId;
use crate::numerics::llama::{LM_FILE_NAME, LlamaModel};

/// Where scripts/fetch-model.sh caches the language model.
pub fn default_lm_path() -> PathBuf {
    super::model::model_cache_dir().join(LM_FILE_NAME)
}

/// Reads and checks the GGUF file (its SHA-256, then its tensors).
pub fn load_lm(path: &PathBuf, flag: &str) -> Result<LlamaModel, CliError> {
    let bytes = std::fs::read(path).map_err(|e| {
        CliError::new(
            flag,
            format!(
                "cannot read the language model {}: {e}; scripts/fetch-model.sh fetches it",
                quote(&path.to_string_lossy())
            ),
        )
    })?;
    LlamaModel::load(bytes).map_err(|e| CliError::new(flag, e.to_string()))
}

/// Milliseconds since the first call.
fn now() -> f64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
}

/// The text's continuations, as the page shows them: exact, with the swap's layers linear when
/// a method is asked, and with the transferred layers linear when a transfer is asked (then
/// with the transfer's report).
#[derive(serde::Serialize)]
struct Continuations {
    exact: Continuation,
    linear: Option<Continuation>,
    transferred: Option<Continuation>,
    transfer: Option<TransferReport>,
}

fn continuations(
    model: &LlamaModel,
    config: &ExperimentConfig,
    transfer: Option<TransferReport>,
) -> Continuations {
    let job = LmJob::of(config);
    let trained = transfer.as_ref().map_or(&[][..], |t| &t.layers[..]);
    let run = |decoding| {
        let mut continuation = Continuation::new(decoding);
        continue_text(model, &job, (decoding, trained), now, &mut |e| {
            continuation.absorb(e)
        });
        let ids: Vec<u32> = continuation.tokens.iter().map(|t| t.id).collect();
        continuation.text = model.tokenizer.decode(&ids);
        continuation
    };
    Continuations {
        exact: run(Decoding::Exact),
        linear: config.attention.lm_method.map(|_| run(Decoding::Linear)),
        transferred: transfer.as_ref().map(|_| run(Decoding::Transferred)),
        transfer,
    }
}

/// Runs `lm`.
pub fn run_lm_command(args: &[String]) -> Result<String, CliError> {
    let flags = Flags::parse("lm", args, |name| match name {
        "per-layer" => Some(FlagKind::Switch),
        "text" | "lm-file" | "method" | "layers" | "generate" | "train-layers" => {
            Some(FlagKind::Value)
        }
        key => Param::from_key(key).map(|_| FlagKind::Value),
    })?;
    let mut config = config_of(&flags)?;
    let text = flags
        .value("--text")
        .ok_or_else(|| CliError::new("--text", "missing: the text to score"))?;
    if let Some(id) = flags.value("--method") {
        config.attention.lm_method = Some(MethodId::from_id(id.trim()).ok_or_else(|| {
            CliError::new(
                "--method",
                format!("no attention method is called {}", quote(id)),
            )
        })?);
    }
    if let Some(layers) = flags.value("--layers") {
        config.attention.lm_layers =
            parse_layers(layers, LM_LAYERS).map_err(|e| CliError::new("--layers", e))?;
    }
    if let Some(tokens) = flags.value("--generate") {
        config
            .set(Param::LmGenerate, tokens)
            .map_err(|e| CliError::new("--generate", e.to_string()))?;
    }
    if let Some(layers) = flags.value("--train-layers") {
        config
            .set(Param::LmTrain, layers)
            .map_err(|e| CliError::new("--train-layers", e.to_string()))?;
    }
    // The page's default method is a link's; the command line swaps only when asked.
    let asked = flags.has("--method") || flags.has("--lmmethod");
    if !asked && (flags.has("--layers") || flags.has("--lmlayers")) {
        return Err(CliError::new(
            "--layers",
            "needs --method: the method to swap in",
        ));
    }
    let swap = asked.then(|| swap_of(&config)).flatten();
    let per_layer = flags.has("--per-layer");
    if per_layer && swap.is_none() {
        return Err(CliError::new(
            "--per-layer",
            "needs --method: the method to swap in each layer",
        ));
    }
    let generate = flags.has("--generate") || flags.has("--lmgen");
    if generate && per_layer {
        return Err(CliError::new(
            "--generate",
            "cannot go with --per-layer: ask for one at a time",
        ));
    }
    let train = !config.attention.lm_train.is_empty();
    if train && per_layer {
        return Err(CliError::new(
            "--train-layers",
            "cannot go with --per-layer: ask for one at a time",
        ));
    }
    let path = flags
        .value("--lm-file")
        .map_or_else(default_lm_path, PathBuf::from);
    let model = load_lm(&path, "--lm-file")?;
    let transfer = match train {
        true => {
            let ids =
                lm_tokens(&model, text).map_err(|e| CliError::new("--text", e.to_string()))?;
            let report = transfer_report(&model, &config, &ids, &now, &mut |_, _| {})
                .map_err(|e| CliError::new("--train-layers", e.to_string()))?;
            Some(report)
        }
        false => None,
    };
    if generate {
        config.attention.text = text.to_string();
        if !asked {
            config.attention.lm_method = None;
        }
        return super::to_json(&continuations(&model, &config, transfer));
    }
    if let Some(report) = transfer {
        return super::to_json(&report);
    }
    if let (true, Some(swap)) = (per_layer, &swap) {
        let report = per_layer_report(&model, text, &config, swap, &mut |_| {})
            .map_err(|e| CliError::new("--text", e.to_string()))?;
        return super::to_json(&report);
    }
    let report = lm_report(&model, text, &config, swap.as_ref(), now)
        .map_err(|e| CliError::new("--text", e.to_string()))?;
    super::to_json(&report)
}
