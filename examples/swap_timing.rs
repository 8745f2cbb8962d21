//! Times the model swap's jobs natively, one thread, with the page's defaults (a development
//! aid; the benchmark of record is tests/e2e/model-bench.mjs, in the browser): the plan
//! `swap_plan` makes for the default configuration on the benchmark's text of L tokens, every job
//! answered by the model worker's own `ModelWorkspace::handle`, in the page's order.
//!
//! `cargo run --release --example swap_timing -- [--len 128] [--rounds 3] [--dump answers.json]
//! [--computed]` prints, per round, each job kind's total milliseconds and the plan's sum; `--dump` writes
//! the last round's answers (reports without their times) as JSON, to compare two builds. The
//! worker takes the answers shipped with the lab (`assets/shipped-answers.bin`) as the page's
//! does; `--computed` computes them (a first visit before issue 48).
use std::sync::OnceLock;
use std::time::Instant;

use softmax_kernel_lab::cli::default_model_path;
use softmax_kernel_lab::lab::config::{ExperimentConfig, HeadSource};
use softmax_kernel_lab::lab::models::loader::ModelLoader;
use softmax_kernel_lab::lab::models::protocol::{ModelAnswer, ModelRequest, ModelSetup};
use softmax_kernel_lab::lab::models::shipped::{SHIPPED_ASSET_PATH, ShippedSource};
use softmax_kernel_lab::lab::models::swap_plan::swap_plan;
use softmax_kernel_lab::lab::pool::model_worker::ModelWorkspace;

/// Words that are one token each (tests/e2e/model-bench.mjs): a text of n is n + 2 tokens.
const WORDS: [&str; 20] = [
    "the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to", "house", "with", "red",
    "blue", "book", "tree", "water", "light", "small", "large",
];

/// The benchmark's `textOf(tokens, seed)`.
fn text_of(tokens: usize, seed: usize) -> String {
    (0..tokens - 2)
        .map(|i| WORDS[(i * 7 + seed * 13 + (i * i) % 5) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

/// This thread's time on a CPU in milliseconds (Linux's schedstat, nanoseconds): on a shared
/// machine, what the jobs cost whatever else runs.
fn cpu_ms() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns * 1e-6)
}

fn now() -> f64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
}

/// A job's kind: what it runs and at which m.
fn kind(request: &ModelRequest) -> String {
    match request {
        ModelRequest::Swap(job) => {
            format!("swap {} m={}", job.method, job.config.attention.features)
        }
        ModelRequest::Retrieve { job, .. } => format!("retrieve {}", job.method),
        ModelRequest::TrainHedgehog { .. } => "train hedgehog".into(),
        other => format!("{other:?}"),
    }
}

/// An answer without its measured times, as JSON.
fn fingerprint(answer: &ModelAnswer) -> serde_json::Value {
    let mut value = serde_json::to_value(answer).unwrap_or_default();
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                map.retain(|k, _| !k.ends_with("_ms") && k != "ms");
                map.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut value);
    value
}

/// The exact forwards of the retrieval set, which every retrieval job runs again unless the
/// worker keeps them (`model_swap::exact_retrieval`).
fn exact_retrieval_cost(bytes: &[u8], config: &ExperimentConfig) {
    use softmax_kernel_lab::lab::config::parse_retrieval;
    use softmax_kernel_lab::lab::models::swap::exact_retrieval;
    use softmax_kernel_lab::lab::models::text_model::TextModel;
    let model = TextModel::from_checked_bytes(bytes).expect("model");
    let (query, candidates) = parse_retrieval(&config.attention.retrieval).expect("retrieval");
    let candidates: Vec<&str> = candidates.iter().map(String::as_str).collect();
    let start = cpu_ms();
    exact_retrieval(&model, &query, &candidates).expect("exact retrieval");
    println!(
        "  (the retrieval set's exact run: {:.1} ms CPU)",
        cpu_ms() - start
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut len, mut rounds, mut dump, mut only, mut computed) = (128, 3, None, None, false);
    while let Some(arg) = args.next() {
        let mut value = || args.next().expect("a value after the flag");
        match arg.as_str() {
            "--len" => len = value().parse().expect("--len"),
            "--rounds" => rounds = value().parse().expect("--rounds"),
            "--dump" => dump = Some(value()),
            "--only" => only = Some(value()),
            "--computed" => computed = true,
            other => panic!("unknown argument {other}"),
        }
    }
    let bytes = std::fs::read(default_model_path()).expect("the model (scripts/fetch-model.sh)");
    let mut config = ExperimentConfig::default();
    config.attention.source = HeadSource::Text;
    config.attention.text = text_of(len, 99);
    let plan = swap_plan(&config, None);
    for round in 0..rounds {
        let mut workspace = ModelWorkspace::default();
        let mut loader = ModelLoader::new();
        loader.push(&bytes);
        if let ModelSetup::Failed(e) = workspace.load(loader, now(), now) {
            panic!("{e}");
        }
        // The answers shipped with the lab, as the page's worker reads them (`--computed`: none).
        if !computed {
            workspace.set_shipped(ShippedSource::read_by(|| {
                std::fs::read(SHIPPED_ASSET_PATH).map_err(|e| e.to_string())
            }));
        }
        let mut kinds: Vec<(String, f64, f64)> = Vec::new();
        let mut answers = Vec::new();
        let (mut total, mut total_cpu) = (0.0, 0.0);
        for request in &plan {
            let name = kind(request);
            // The training stays whenever Hedgehog's jobs do (they need its maps).
            let needed = |o: &String| {
                name.contains(o.as_str())
                    || (o.contains("hedgehog")
                        && matches!(request, ModelRequest::TrainHedgehog { .. }))
            };
            if only.as_ref().is_some_and(|o| !needed(o)) {
                continue;
            }
            let (start, start_cpu) = (now(), cpu_ms());
            let answer = workspace.handle(request.clone(), now, &mut |_| {});
            let (ms, cpu) = (now() - start, cpu_ms() - start_cpu);
            total += ms;
            total_cpu += cpu;
            if let ModelAnswer::Failed(e) = &answer {
                panic!("{name}: {e}");
            }
            answers.push(fingerprint(&answer));
            kinds.push((name, ms, cpu));
        }
        println!(
            "round {round}, L = {len}: {} jobs, {total:.1} ms wall, {total_cpu:.1} ms CPU",
            answers.len()
        );
        exact_retrieval_cost(&bytes, &config);
        for (name, ms, cpu) in &kinds {
            println!("  {name:<28} {ms:>9.1} ms wall {cpu:>9.1} ms CPU");
        }
        if round + 1 == rounds
            && let Some(path) = &dump
        {
            let json = serde_json::to_string_pretty(&answers).expect("json");
            std::fs::write(path, json).expect("dump");
        }
    }
}
