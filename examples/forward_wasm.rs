//! The model's forward in WebAssembly, timed from Node on one thread: a development aid to
//! compare forward kernels in V8 (the browser's engine) without a browser, by CPU time, which
//! a busy shared machine disturbs less than wall time. Built as the model worker is:
//!
//! ```sh
//! CARGO_TARGET_DIR=target/test-release/worker RUSTFLAGS="-C target-feature=+simd128,+relaxed-simd" \
//!   cargo rustc --release --target wasm32-unknown-unknown --example forward_wasm \
//!   --no-default-features --features text-model --crate-type cdylib
//! wasm-bindgen --target nodejs --out-dir /tmp/fw \
//!   target/test-release/worker/wasm32-unknown-unknown/release/examples/forward_wasm.wasm
//! node --experimental-wasm-relaxed-simd -e '
//!   const m = require("/tmp/fw/forward_wasm.js");
//!   m.load(require("fs").readFileSync(process.env.HOME + "/.cache/softmax-kernel-lab/minilm-l6-v2-f16.safetensors"));
//!   console.log(m.run(128, 1))'
//! ```
//!
//! The swap's plan job by job (`plan`, with the shipped answers or, given empty bytes, without):
//!
//! ```sh
//! node --experimental-wasm-relaxed-simd -e '
//!   const m = require("/tmp/fw/forward_wasm.js"); const fs = require("fs");
//!   const bytes = fs.readFileSync(process.env.HOME + "/.cache/softmax-kernel-lab/minilm-l6-v2-f16.safetensors");
//!   console.log(m.plan(bytes, fs.readFileSync("assets/shipped-answers.bin"), 128, ""))'
//! ```
//!
//! The language model's decoding token by token (`lm_decode`: prefill of a prompt of C one-token
//! words, then N greedy steps, exact or a method in all 30 layers; one JSON object a call;
//! tests/e2e/decode-bench.mjs runs it for docs/benchmark.md), and the sketch of a one-row Q4_1
//! product against `QuantMatrix::apply` (`q4_row`):
//!
//! ```sh
//! node --experimental-wasm-relaxed-simd -e '
//!   const m = require("/tmp/fw/forward_wasm.js");
//!   m.lm_load(require("fs").readFileSync(process.env.HOME + "/.cache/softmax-kernel-lab/smollm2-135m-instruct-q4_1.gguf"));
//!   for (const method of ["exact", "elu", "prf-pos"]) console.log(m.lm_decode(1024, 32, method));
//!   console.log(m.q4_row(1536, 576, 200))'
//! ```
#[cfg(target_arch = "wasm32")]
mod bench {
    use std::cell::RefCell;

    use softmax_kernel_lab::lab::models::text_model::TextModel;
    use wasm_bindgen::prelude::*;

    thread_local! {
        static MODEL: RefCell<Option<TextModel>> = const { RefCell::new(None) };
    }

    const WORDS: [&str; 20] = [
        "the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to", "house", "with", "red",
        "blue", "book", "tree", "water", "light", "small", "large",
    ];

    /// Checks and unpacks the converted model; an error message, or empty.
    #[wasm_bindgen]
    pub fn load(bytes: &[u8]) -> String {
        match TextModel::from_checked_bytes(bytes) {
            Ok(model) => {
                MODEL.with(|m| *m.borrow_mut() = Some(model));
                String::new()
            }
            Err(e) => e.to_string(),
        }
    }

    /// `TextModel::run` on the benchmark's text of `tokens` tokens (tests/e2e/model-bench.mjs's
    /// `textOf`); returns the first embedding value (so the work is not optimised away).
    #[wasm_bindgen]
    pub fn run(tokens: usize, seed: usize) -> f64 {
        let text = (0..tokens.max(3) - 2)
            .map(|i| WORDS[(i * 7 + seed * 13 + (i * i) % 5) % WORDS.len()])
            .collect::<Vec<_>>()
            .join(" ");
        MODEL.with(|m| {
            m.borrow()
                .as_ref()
                .and_then(|model| model.run(&text).ok())
                .map_or(f64::NAN, |run| f64::from(run.embedding[0]))
        })
    }

    /// The Hedgehog maps' training the page asks for by default (`swap_plan::hedgehog_job` of
    /// the default configuration), on the heads `first..last` of the 72 (a worker's part);
    /// returns the last point's held-out KL.
    #[wasm_bindgen]
    pub fn train(first: usize, last: usize) -> f64 {
        use softmax_kernel_lab::lab::config::ExperimentConfig;
        use softmax_kernel_lab::lab::models::learned_map::train_learned_heads;
        use softmax_kernel_lab::lab::models::swap_plan::hedgehog_job;
        let Some(job) = hedgehog_job(&ExperimentConfig::default()) else {
            return f64::NAN;
        };
        let heads: Vec<usize> = (first..last).collect();
        let mut eval = f64::NAN;
        let mut on_point = |p: &softmax_kernel_lab::lab::models::protocol::HedgehogPoint| {
            if let Some(e) = p.eval_kl {
                eval = e;
            }
        };
        let trained = MODEL.with(|m| {
            let m = m.borrow();
            let Some(model) = m.as_ref() else {
                return false;
            };
            train_learned_heads(model, &job, &heads, &mut on_point, || 0.0).is_ok()
        });
        if trained { eval } else { f64::NAN }
    }

    /// The answers shipped with the lab computed here, in V8, against `shipped` (the native
    /// build's file): the largest relative difference of the training's check (every head's
    /// cross-entropy) and of the retrieval reports' exact and first-draw cosines, and whether
    /// each method's top-1 and Kendall's τ are the same (what `SHIPPED_TOLERANCE` must allow).
    #[wasm_bindgen]
    pub fn shipped_deviation(shipped: &[u8]) -> String {
        use softmax_kernel_lab::lab::models::shipped::{ShippedAnswers, compute_shipped_answers};
        let Ok(native) = postcard::from_bytes::<ShippedAnswers>(shipped) else {
            return "the shipped file does not decode".into();
        };
        let here = MODEL.with(|m| {
            m.borrow()
                .as_ref()
                .map(|model| compute_shipped_answers(model, &native.model_sha256, || 0.0))
        });
        let Some(Ok(here)) = here else {
            return "no model, or the answers failed".into();
        };
        let relative = |a: &[f64], b: &[f64]| {
            a.iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs() / y.abs().max(1.0))
                .fold(0.0f64, f64::max)
        };
        let check = relative(&here.training.check, &native.training.check);
        // What the worker's check compares: the shipped maps' cross-entropies computed here.
        let shipped_maps = MODEL.with(|m| {
            m.borrow().as_ref().map(|model| {
                softmax_kernel_lab::lab::models::learned_map::kept_check(
                    model,
                    &native.training.parts,
                )
            })
        });
        let Some(Ok(shipped_maps)) = shipped_maps else {
            return "the shipped maps' check failed".into();
        };
        let checked = relative(&shipped_maps, &native.training.check);
        let (mut exact, mut approximate, mut same) = (0.0f64, 0.0f64, true);
        for (h, n) in here.retrievals.iter().zip(&native.retrievals) {
            exact = exact.max(relative(&h.report.exact.cosines, &n.report.exact.cosines));
            if let (Some(a), Some(b)) = (&h.report.approximate, &n.report.approximate) {
                approximate = approximate.max(relative(&a.cosines, &b.cosines));
            }
            same &= h.report.top1_kept == n.report.top1_kept
                && h.report.exact.order == n.report.exact.order;
        }
        format!(
            "the shipped maps' check {checked:.2e}, the maps trained here {check:.2e}, exact cosines {exact:.2e}, first-draw cosines {approximate:.2e}, same orders and top-1: {same}"
        )
    }

    /// The page's default swap plan (`swap_plan::swap_plan`) on the benchmark's text of `tokens`
    /// tokens, every job through the model worker's own `ModelWorkspace::handle` on this one
    /// thread: each job's kind and wall milliseconds, a line each (where the swap's time goes
    /// in V8, job by job). Only the jobs whose line starts with `only` run (all when empty);
    /// `only = "part"` times the attention view's parts on the text instead. The worker takes
    /// the answers shipped with the lab from `shipped` (the file's bytes) as the page's does, and
    /// computes them when it is empty (a first visit before issue 48).
    #[wasm_bindgen]
    pub fn plan(bytes: &[u8], shipped: &[u8], tokens: usize, only: &str) -> String {
        use softmax_kernel_lab::lab::config::{ExperimentConfig, HeadSource};
        use softmax_kernel_lab::lab::models::loader::ModelLoader;
        use softmax_kernel_lab::lab::models::protocol::{ModelAnswer, ModelRequest, ModelSetup};
        use softmax_kernel_lab::lab::models::swap_plan::swap_plan;
        use softmax_kernel_lab::lab::pool::model_worker::ModelWorkspace;
        fn now() -> f64 {
            js_sys::Date::now()
        }
        let mut config = ExperimentConfig::default();
        config.attention.source = HeadSource::Text;
        config.attention.text = (0..tokens.max(3) - 2)
            .map(|i| WORDS[(i * 7 + 99 * 13 + (i * i) % 5) % WORDS.len()])
            .collect::<Vec<_>>()
            .join(" ");
        let mut workspace = ModelWorkspace::default();
        let mut loader = ModelLoader::new();
        loader.push(bytes);
        if let ModelSetup::Failed(e) = workspace.load(loader, now(), now) {
            return e.to_string();
        }
        if !shipped.is_empty() {
            let shipped = shipped.to_vec();
            workspace.set_shipped(
                softmax_kernel_lab::lab::models::shipped::ShippedSource::read_by(move || {
                    Ok(shipped.clone())
                }),
            );
        }
        let mut lines = Vec::new();
        let mut total = 0.0;
        for request in swap_plan(&config, None) {
            let name = match &request {
                ModelRequest::Swap(job) => {
                    format!("swap {} m={}", job.method, job.config.attention.features)
                }
                ModelRequest::Retrieve { job, .. } => format!("retrieve {}", job.method),
                ModelRequest::TrainHedgehog { .. } => "train hedgehog".into(),
                _ => "other".into(),
            };
            if !name.starts_with(only) {
                continue;
            }
            let start = now();
            let answer = workspace.handle(request, now, &mut |_| {});
            let ms = now() - start;
            total += ms;
            let failed = matches!(answer, ModelAnswer::Failed(_));
            lines.push(format!(
                "{name:<28} {ms:8.1} ms{}",
                if failed { " FAILED" } else { "" }
            ));
        }
        // The attention view's parts on the same text, each whole on this thread (the page
        // asks them after the swap, the two that read every head in shares over its workers).
        if only.starts_with("part") {
            use softmax_kernel_lab::lab::attention::{AttentionPart, AttentionRequest};
            use softmax_kernel_lab::lab::pool::WorkerRequest;
            for part in AttentionPart::ALL {
                if !part.applies(&config) {
                    continue;
                }
                let request = WorkerRequest::Attention {
                    id: 0,
                    request: AttentionRequest {
                        config: config.clone(),
                        part,
                        share: None,
                        lengths_unit: None,
                    },
                };
                let start = now();
                let response = workspace.respond(request, now, &mut |_| {});
                let ms = now() - start;
                total += ms;
                if let softmax_kernel_lab::lab::pool::WorkerResponse::Attention {
                    output: Err(e),
                    ..
                } = &response
                {
                    lines.push(format!("  error: {e}"));
                }
                lines.push(format!("{:<28} {ms:8.1} ms", format!("part {part:?}")));
            }
        }
        lines.push(format!("total {total:.1} ms"));
        lines.join("\n")
    }

    /// The forward alone (no tokenizer, no heads asset) on the same text's ids, keeping every
    /// head's Q, K, V when `keep_qkv`; returns the first embedding value.
    #[wasm_bindgen]
    pub fn forward(tokens: usize, seed: usize, keep_qkv: bool) -> f64 {
        let text = (0..tokens.max(3) - 2)
            .map(|i| WORDS[(i * 7 + seed * 13 + (i * i) % 5) % WORDS.len()])
            .collect::<Vec<_>>()
            .join(" ");
        MODEL.with(|m| {
            let m = m.borrow();
            let Some(model) = m.as_ref() else {
                return f64::NAN;
            };
            let Ok(encoded) = model.tokenizer.encode(&text, 512) else {
                return f64::NAN;
            };
            model
                .weights
                .forward(&encoded.ids, keep_qkv)
                .map_or(f64::NAN, |f| f64::from(f.embedding[0]))
        })
    }

    /// Every dense layer of the model applied to `rows` rows of stand-in inputs, `times` times
    /// (the products alone, without the rest of the forward); returns a checksum.
    #[wasm_bindgen]
    pub fn dense(rows: usize, times: usize) -> f64 {
        MODEL.with(|m| {
            let m = m.borrow();
            let Some(model) = m.as_ref() else {
                return f64::NAN;
            };
            let h = model.weights.config.hidden_size;
            let inner = model.weights.config.intermediate_size;
            let x: Vec<f32> = (0..rows * inner)
                .map(|i| ((i % 17) as f32 - 8.0) / 8.0)
                .collect();
            let mut y = vec![0.0f32; rows * inner];
            let mut total = 0.0;
            for _ in 0..times {
                for layer in &model.weights.layers {
                    layer
                        .qkv
                        .apply(&x[..rows * h], rows, &mut y[..rows * 3 * h]);
                    layer
                        .attention_output
                        .apply(&x[..rows * h], rows, &mut y[..rows * h]);
                    layer.intermediate.apply(&x[..rows * h], rows, &mut y);
                    layer.output.apply(&x, rows, &mut y[..rows * h]);
                }
                total += f64::from(y[0]);
            }
            total
        })
    }

    thread_local! {
        static LM: RefCell<Option<softmax_kernel_lab::numerics::llama::LlamaModel>> =
            const { RefCell::new(None) };
    }

    /// The text of the language model's timings.
    const PARAGRAPH: &str = "The committee met on Tuesday to discuss the budget for the coming \
        year. After a long debate about schools, roads and the new library, the members \
        agreed to raise the tax on property by two percent, while the mayor promised to \
        publish every invoice online so that citizens could check how the money is spent. ";

    /// Checks and reads the language model's GGUF file; an error message, or empty.
    #[wasm_bindgen]
    pub fn lm_load(bytes: &[u8]) -> String {
        match softmax_kernel_lab::numerics::llama::LlamaModel::load(bytes.to_vec()) {
            Ok(model) => {
                LM.with(|m| *m.borrow_mut() = Some(model));
                String::new()
            }
            Err(e) => e.to_string(),
        }
    }

    /// The page's default per-layer chart (its method, `draws` draws) on `tokens` tokens of a
    /// fixed paragraph, layers `from..30` only, on this thread: the exact run's and each bar's
    /// milliseconds, a line each.
    #[wasm_bindgen]
    pub fn lm_chart(tokens: usize, from: usize, draws: usize) -> String {
        use softmax_kernel_lab::lab::config::ExperimentConfig;
        use softmax_kernel_lab::lab::models::smollm::{LayerSweep, Share, chart_swap};
        let now = js_sys::Date::now;
        LM.with(|m| {
            let m = m.borrow();
            let Some(model) = m.as_ref() else {
                return "no model".to_string();
            };
            let Ok(mut ids) = model.tokenizer.encode(&PARAGRAPH.repeat(8)) else {
                return "tokenizer".to_string();
            };
            ids.truncate(tokens);
            let mut config = ExperimentConfig::default();
            config.attention.swap_draws = draws;
            let Some(mut swap) = chart_swap(&config, model.config.layers) else {
                return "no method".to_string();
            };
            swap.layers.retain(|&l| l >= from);
            let start = now();
            let Ok(exact) = model.exact_run(&ids, 0) else {
                return "exact run failed".to_string();
            };
            let mut lines = vec![format!("exact run {:.1} ms", now() - start)];
            let mut sweep = LayerSweep::new(model, &config, &swap, Share::ALL);
            let start = now();
            let mut bar_start = now();
            while !sweep.is_done() {
                match sweep.step(model, &exact) {
                    Ok(Some(bar)) if bar.complete => {
                        lines.push(format!(
                            "layer {:2} {:8.1} ms",
                            bar.layer,
                            now() - bar_start
                        ));
                        bar_start = now();
                    }
                    Ok(_) => {}
                    Err(e) => return e.to_string(),
                }
            }
            lines.push(format!("chart {:.1} ms", now() - start));
            lines.join("\n")
        })
    }

    /// The exact forward (`exact_run`, no top tokens) on `tokens` tokens of the chart's
    /// paragraph, `times` times: the fastest run's milliseconds.
    #[wasm_bindgen]
    pub fn lm_exact(tokens: usize, times: usize) -> f64 {
        let now = js_sys::Date::now;
        LM.with(|m| {
            let m = m.borrow();
            let Some(model) = m.as_ref() else {
                return f64::NAN;
            };
            let Ok(mut ids) = model.tokenizer.encode(&PARAGRAPH.repeat(8)) else {
                return f64::NAN;
            };
            ids.truncate(tokens);
            let mut best = f64::INFINITY;
            for _ in 0..times {
                let start = now();
                if model.exact_run(&ids, 0).is_err() {
                    return f64::NAN;
                }
                best = best.min(now() - start);
            }
            best
        })
    }

    #[wasm_bindgen]
    extern "C" {
        /// `performance.now()` (Node's global): sub-millisecond steps, where `Date.now` counts
        /// whole milliseconds.
        #[wasm_bindgen(js_namespace = performance, js_name = now)]
        fn performance_now() -> f64;
        /// `process.cpuUsage()`: the process's user and system CPU time in µs (the step's own
        /// work, which a busy shared machine disturbs less than wall time).
        #[wasm_bindgen(js_namespace = process, js_name = cpuUsage)]
        fn cpu_usage() -> JsValue;
    }

    /// The process's CPU time so far, in ms.
    fn cpu_ms() -> f64 {
        let usage = cpu_usage();
        let field = |name: &str| {
            js_sys::Reflect::get(&usage, &JsValue::from_str(name))
                .ok()
                .and_then(|v| v.as_f64())
                .unwrap_or(f64::NAN)
        };
        (field("user") + field("system")) / 1000.0
    }

    /// The median of `xs` (NaN when empty).
    fn median(xs: &[f64]) -> f64 {
        let mut sorted = xs.to_vec();
        sorted.sort_by(f64::total_cmp);
        match sorted.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => sorted[n / 2],
            n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
        }
    }

    /// Decoding token by token (`numerics::llama::Decoder`) after a prompt of `context` tokens
    /// (lm-bench's `textOf`, one-token words, seed 1; at most the model's context less `steps`),
    /// on this thread: the prompt's batched prefill, then `steps` greedy steps, each timed.
    /// `method`: "exact" (every layer softmax with its key/value cache), or a registry method
    /// ("elu", "prf-pos" at the default m = 256, …) in all 30 layers, run as recurrent
    /// networks with maps fitted on the prompt (`head_swap::decoding_map`, draw 0). One JSON
    /// object: prefill_ms, step_ms (each step), median_ms, tokens_per_s (1000 / median wall),
    /// the same in the process's CPU time (prefill_cpu_ms, step_cpu_ms, median_cpu_ms),
    /// memory_bytes (each layer's, after the last step) and the tokens chosen.
    #[wasm_bindgen]
    pub fn lm_decode(context: usize, steps: usize, method: &str) -> String {
        use softmax_kernel_lab::lab::config::{ExperimentConfig, Param};
        use softmax_kernel_lab::lab::models::head_swap::{decoding_map, registry_of};
        use softmax_kernel_lab::lab::models::smollm::swap_of;
        use softmax_kernel_lab::numerics::bert::HeadInputs;
        use softmax_kernel_lab::numerics::llama::Decoder;
        let error = |e: String| format!("{{\"error\":{e:?}}}");
        LM.with(|m| {
            let m = m.borrow();
            let Some(model) = m.as_ref() else {
                return error("no model: lm_load first".into());
            };
            let prompt = context
                .min(model.config.context.saturating_sub(steps))
                .max(1);
            let text = (0..prompt)
                .map(|i| WORDS[(i * 7 + 13 + (i * i) % 5) % WORDS.len()])
                .collect::<Vec<_>>()
                .join(" ");
            let ids = match model.tokenizer.encode(&text) {
                Ok(ids) if ids.len() == prompt => ids,
                Ok(ids) => return error(format!("{prompt} words gave {} tokens", ids.len())),
                Err(e) => return error(e.to_string()),
            };
            let (layers, registry) = if method == "exact" {
                (Vec::new(), None)
            } else {
                let mut config = ExperimentConfig::default();
                if let Err(e) = config.set(Param::LmMethod, method) {
                    return error(e.to_string());
                }
                if let Err(e) = config.set(Param::LmLayers, "all") {
                    return error(e.to_string());
                }
                let Some(swap) = swap_of(&config) else {
                    return error(format!("{method}: no swap"));
                };
                let registry = registry_of(&swap, &config, model.config.head_dim);
                (swap.layers, registry)
            };
            let mut make = |h: &HeadInputs| match &registry {
                Some(registry) => decoding_map(registry, 0, h),
                None => Err("no registry method".to_string()),
            };
            let (start, cpu_start) = (performance_now(), cpu_ms());
            let mut decoder = match Decoder::start(model, &ids, &layers, &mut make) {
                Ok(decoder) => decoder,
                Err(e) => return error(e.to_string()),
            };
            let prefill_ms = performance_now() - start;
            let prefill_cpu_ms = cpu_ms() - cpu_start;
            let argmax = |logits: &[f32]| {
                logits
                    .iter()
                    .enumerate()
                    .fold(0, |best, (i, &v)| if v > logits[best] { i } else { best })
                    as u32
            };
            let mut step_ms = Vec::with_capacity(steps);
            let mut step_cpu_ms = Vec::with_capacity(steps);
            let mut tokens = Vec::with_capacity(steps);
            for _ in 0..steps {
                let token = argmax(decoder.logits());
                tokens.push(token);
                let (start, cpu_start) = (performance_now(), cpu_ms());
                if let Err(e) = decoder.step(model, token) {
                    return error(e.to_string());
                }
                step_ms.push(performance_now() - start);
                step_cpu_ms.push(cpu_ms() - cpu_start);
            }
            let (wall, cpu) = (median(&step_ms), median(&step_cpu_ms));
            let list = |xs: Vec<String>| xs.join(",");
            let ms = |xs: &[f64]| list(xs.iter().map(|t| format!("{t:.2}")).collect());
            format!(
                "{{\"method\":{method:?},\"context\":{context},\"prompt_tokens\":{prompt},\
                 \"steps\":{steps},\"prefill_ms\":{prefill_ms:.1},\
                 \"prefill_cpu_ms\":{prefill_cpu_ms:.1},\"step_ms\":[{}],\"step_cpu_ms\":[{}],\
                 \"median_ms\":{wall:.2},\"median_cpu_ms\":{cpu:.2},\"tokens_per_s\":{:.1},\
                 \"position\":{},\"memory_bytes\":[{}],\"tokens\":[{}]}}",
                ms(&step_ms),
                ms(&step_cpu_ms),
                1000.0 / wall,
                decoder.position(),
                list(
                    decoder
                        .memory_bytes()
                        .iter()
                        .map(usize::to_string)
                        .collect()
                ),
                list(tokens.iter().map(u32::to_string).collect()),
            )
        })
    }

    /// A sketch of a one-row product from the Q4_1 blocks (not the lab's kernel, which is
    /// `QuantMatrix::apply`): `y_r = Σ_blocks d·(q·x) + m·Σx`, the nibbles widened in
    /// registers, nothing written to memory but `y`. The weights are not rounded as
    /// `dequantize_row` rounds them (`q·d + m` per weight), so it agrees with `apply` to f32
    /// rounding, not bit for bit.
    #[cfg(target_feature = "relaxed-simd")]
    fn one_row_q4_1(
        matrix: &softmax_kernel_lab::numerics::llama::quant::QuantMatrix,
        x: &[f32],
        y: &mut [f32],
    ) {
        use core::arch::wasm32::*;
        use softmax_kernel_lab::numerics::stored_float::f16_bits_to_f32;
        let sums: Vec<f32> = x.chunks_exact(32).map(|c| c.iter().sum()).collect();
        let load = |at: &[f32]| v128_load_f32(at);
        let row_bytes = matrix.row_bytes();
        for (r, out) in y.iter_mut().enumerate() {
            let row = &matrix.bytes[r * row_bytes..(r + 1) * row_bytes];
            let mut acc = f32x4_splat(0.0);
            let mut minimum = 0.0f32;
            for ((b, xb), sum) in row.chunks_exact(20).zip(x.chunks_exact(32)).zip(&sums) {
                let d = f16_bits_to_f32(u16::from_le_bytes([b[0], b[1]]));
                let m = f16_bits_to_f32(u16::from_le_bytes([b[2], b[3]]));
                let q = v128_load_u8(&b[4..20]);
                let mut dot = f32x4_splat(0.0);
                for (half, base) in [(v128_and(q, u8x16_splat(15)), 0), (u8x16_shr(q, 4), 16)] {
                    for (wide, at) in [
                        (u16x8_extend_low_u8x16(half), base),
                        (u16x8_extend_high_u8x16(half), base + 8),
                    ] {
                        let a = f32x4_convert_u32x4(u32x4_extend_low_u16x8(wide));
                        let c = f32x4_convert_u32x4(u32x4_extend_high_u16x8(wide));
                        dot = f32x4_relaxed_madd(a, load(&xb[at..at + 4]), dot);
                        dot = f32x4_relaxed_madd(c, load(&xb[at + 4..at + 8]), dot);
                    }
                }
                acc = f32x4_relaxed_madd(f32x4_splat(d), dot, acc);
                minimum += m * sum;
            }
            *out = f32x4_extract_lane::<0>(acc)
                + f32x4_extract_lane::<1>(acc)
                + f32x4_extract_lane::<2>(acc)
                + f32x4_extract_lane::<3>(acc)
                + minimum;
        }
    }

    /// Four floats from `at[..4]` (unaligned).
    #[cfg(target_feature = "relaxed-simd")]
    fn v128_load_f32(at: &[f32]) -> core::arch::wasm32::v128 {
        assert!(at.len() >= 4);
        // SAFETY: 16 readable bytes (checked above); wasm loads need no alignment.
        unsafe { core::arch::wasm32::v128_load(at.as_ptr().cast()) }
    }

    /// The 16 bytes `at[..16]` (unaligned).
    #[cfg(target_feature = "relaxed-simd")]
    fn v128_load_u8(at: &[u8]) -> core::arch::wasm32::v128 {
        assert!(at.len() >= 16);
        // SAFETY: 16 readable bytes (checked above); wasm loads need no alignment.
        unsafe { core::arch::wasm32::v128_load(at.as_ptr().cast()) }
    }

    /// One input row through a `rows × cols` Q4_1 matrix of made-up blocks, `times` times:
    /// the lab's `QuantMatrix::apply` (each panel widened for the one row) against the sketch
    /// above; the milliseconds of each, their multiply-adds a second and the largest relative
    /// difference of the outputs. What a decoding step's products would gain (a profile of a
    /// step: widening the panels most of its time).
    #[cfg(target_feature = "relaxed-simd")]
    #[wasm_bindgen]
    pub fn q4_row(rows: usize, cols: usize, times: usize) -> String {
        use softmax_kernel_lab::numerics::llama::quant::{QuantMatrix, TensorType};
        let blocks = rows * cols / 32;
        let mut bytes = Vec::with_capacity(blocks * 20);
        for i in 0..blocks {
            // d ≈ 0.002 and m ≈ −0.015, varied a little; nibbles from a counter.
            bytes.extend_from_slice(&(0x1800u16 + (i % 97) as u16).to_le_bytes());
            bytes.extend_from_slice(&(0xa3c0u16 + (i % 89) as u16).to_le_bytes());
            bytes.extend((0..16).map(|j| ((i * 31 + j * 7) % 256) as u8));
        }
        let Some(matrix) = QuantMatrix::new(TensorType::Q4_1, rows, cols, &bytes) else {
            return "shapes".into();
        };
        let x: Vec<f32> = (0..cols).map(|i| ((i % 23) as f32 - 11.0) / 7.0).collect();
        let (mut want, mut got, mut scratch) = (vec![0.0f32; rows], vec![0.0f32; rows], Vec::new());
        let start = performance_now();
        for _ in 0..times {
            matrix.apply(&x, 1, &mut want, &mut scratch);
        }
        let apply_ms = performance_now() - start;
        let start = performance_now();
        for _ in 0..times {
            one_row_q4_1(&matrix, &x, &mut got);
        }
        let row_ms = performance_now() - start;
        let worst = want
            .iter()
            .zip(&got)
            .map(|(a, b)| f64::from((a - b).abs() / a.abs().max(1.0)))
            .fold(0.0, f64::max);
        let rate = |ms: f64| (rows * cols * times) as f64 / (ms / 1000.0);
        format!(
            "{rows}x{cols} x{times}: apply {apply_ms:.1} ms ({:.2e}/s), one row {row_ms:.1} ms \
             ({:.2e}/s), {:.1}x; worst relative difference {worst:.1e}",
            rate(apply_ms),
            rate(row_ms),
            apply_ms / row_ms
        )
    }

    /// The long kernels' `gemm` at the shapes linear attention gives it for one head of 128
    /// tokens (d = dv = 32, D features): the projection (64 × D, inner 32), `S += Ψᵀ V` (D × 32,
    /// inner 64) and the outputs (64 × 32, inner D); multiply-adds a second of each.
    #[wasm_bindgen]
    pub fn gemm_shapes(features: usize, times: usize) -> String {
        use softmax_kernel_lab::numerics::attention::long::gemm::{MatRef, gemm};
        let fill = |n: usize| -> Vec<f32> {
            (0..n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
                .collect()
        };
        let d = features;
        let shapes: [(&str, usize, usize, usize, usize, usize, bool); 3] = [
            ("projection 64xD k32", 64, d, 32, 32, d, false),
            ("absorb Dx32 k64", d, 32, 64, 64, 32, true),
            ("output 64x32 kD", 64, 32, d, d, 32, false),
        ];
        let mut lines = Vec::new();
        for (name, m, n, k, lda, ldb, accumulate) in shapes {
            let a = fill(m * lda);
            let b = fill(k * ldb);
            let mut c = vec![0.0f32; m * n];
            let start = performance_now();
            for _ in 0..times {
                gemm(
                    m,
                    n,
                    k,
                    MatRef {
                        values: &a,
                        stride: lda,
                    },
                    MatRef {
                        values: &b,
                        stride: ldb,
                    },
                    &mut c,
                    n,
                    accumulate,
                );
            }
            let ms = performance_now() - start;
            lines.push(format!(
                "{name}: {:.2e}/s ({ms:.1} ms, c0 {})",
                (m * n * k * times) as f64 / (ms / 1000.0),
                c[0]
            ));
        }
        lines.join("\n")
    }

    /// One swapped forward of the page's default swap (its method in every layer, draw 0) on
    /// `tokens` tokens of the chart's paragraph, `times` times: the fastest run's milliseconds.
    #[wasm_bindgen]
    pub fn lm_swap(tokens: usize, times: usize) -> f64 {
        use softmax_kernel_lab::lab::config::ExperimentConfig;
        use softmax_kernel_lab::lab::models::smollm::{LmJob, swap_draw};
        let now = js_sys::Date::now;
        let mut config = ExperimentConfig::default();
        LM.with(|m| {
            let m = m.borrow();
            let Some(model) = m.as_ref() else {
                return f64::NAN;
            };
            // Whole words of the paragraph until the text has `tokens` tokens or more.
            let words: Vec<&str> = PARAGRAPH.split_whitespace().collect();
            let mut text = String::new();
            for word in words.iter().cycle().take(8 * tokens) {
                if model.tokenizer.encode(&text).map_or(0, |ids| ids.len()) >= tokens {
                    break;
                }
                text = format!("{text} {word}");
            }
            config.attention.text = text;
            let job = LmJob::of(&config);
            let mut best = f64::INFINITY;
            for _ in 0..times {
                let start = now();
                if swap_draw(model, &job, 0, now, None).is_err() {
                    return f64::NAN;
                }
                best = best.min(now() - start);
            }
            best
        })
    }
}
