//! The guided tour's last step (src/lab/page/tour/model_step.rs) on its own state: the model swap
//! run as the page's model worker runs it (the same plan of jobs, answered by the worker's
//! own state machine), and the step's claim checked against the reports. Needs the converted
//! model, like tests/model_swap.rs (scripts/fetch-model.sh; a missing file fails with that
//! sentence). The other steps are checked in src/lab/page/tour/tests.rs.
#![cfg(all(not(target_arch = "wasm32"), feature = "text-model", feature = "page"))]

use softmax_kernel_lab::cli::default_model_path;
use softmax_kernel_lab::lab::config::SWAP_BUDGETS;
use softmax_kernel_lab::lab::models::loader::ModelLoader;
use softmax_kernel_lab::lab::models::protocol::{ModelAnswer, ModelRequest, ModelSetup};
use softmax_kernel_lab::lab::models::swap_plan::swap_plan;
use softmax_kernel_lab::lab::page::tour::{Evidence, STEPS};
use softmax_kernel_lab::lab::pool::model_worker::ModelWorkspace;

/// A value as the tour writes it (three significant digits, a typographic minus).
fn plain(value: f64) -> String {
    let digits = (2 - value.abs().log10().floor() as i32).max(0) as usize;
    format!("{value:.digits$}").replace('-', "\u{2212}")
}

/// The model swap of the last step's state, run as the page's model worker runs it: the same
/// plan of jobs, answered by the worker's own state machine (needs the converted model:
/// scripts/fetch-model.sh, which scripts/test.sh runs; without it the test fails saying so).
#[test]
fn random_features_in_every_layer_do_not_keep_the_embedding() {
    let step = STEPS.iter().find(|s| s.id == "embedding").unwrap();
    let config = step.config().unwrap();
    let path = default_model_path();
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read the converted model {}: {e}; run scripts/fetch-model.sh",
            path.display()
        )
    });
    let mut worker = ModelWorkspace::default();
    let mut loader = ModelLoader::new();
    loader.push(&bytes);
    assert!(matches!(
        worker.load(loader, 0.0, || 0.0),
        ModelSetup::Loaded { .. }
    ));
    let mut reports = Vec::new();
    for request in swap_plan(&config, None) {
        if let ModelRequest::Swap(_) = request {
            match worker.handle(request, || 0.0, &mut |_| {}) {
                ModelAnswer::Swapped { report, .. } => reports.push(report.expect("the swap runs")),
                other => panic!("{other:?}"),
            }
        }
    }
    let verdict = (step.verdict)(&Evidence::Swap(&reports)).unwrap();
    // Counted here: Performer's largest cosine over its budgets, each the mean of its draws
    // (recomputed from the per-draw spread's bounds: the mean lies between min and max).
    let performer: Vec<_> = reports.iter().filter(|r| r.method == "prf-pos").collect();
    assert_eq!(performer.len(), SWAP_BUDGETS.len());
    for report in &performer {
        let cosine = report.cosine.as_ref().expect("every draw went through");
        assert!(cosine.min <= cosine.mean && cosine.mean <= cosine.max);
        assert!(cosine.max < 0.99, "m = {:?}: {cosine:?}", report.features);
        assert!(verdict.measured.contains(&format!(
            "{} at m = {}",
            plain(cosine.mean),
            report.features.unwrap()
        )));
    }
    assert_eq!(verdict.answer, 2, "{}", verdict.measured);
    // Sparse plus low-rank keeps the top keys exactly: closer than Performer at every budget.
    for report in reports.iter().filter(|r| r.method == "sparse") {
        let at = performer
            .iter()
            .find(|p| p.features == report.features)
            .unwrap();
        assert!(
            report.cosine.as_ref().unwrap().min > at.cosine.as_ref().unwrap().max,
            "m = {:?}",
            report.features
        );
    }
}

/// The tour's step on the language model (src/lab/page/tour/lm_step.rs) on its own state, run
/// as the command line and the page's workers run it (the same report and transfer code): elu +
/// 1 in every layer raises the perplexity more than tenfold, and the transfer of every layer
/// brings most of it back. Needs the GGUF file (scripts/fetch-model.sh).
#[test]
fn linear_attention_in_every_layer_and_what_transfer_wins_back() {
    use softmax_kernel_lab::cli::default_lm_path;
    use softmax_kernel_lab::lab::models::smollm::transfer::transfer_report;
    use softmax_kernel_lab::lab::models::smollm::{lm_report, lm_tokens, swap_of};
    use softmax_kernel_lab::lab::page::tour::LanguageModelEvidence;
    use softmax_kernel_lab::numerics::llama::LlamaModel;

    let step = STEPS.iter().find(|s| s.id == "win-it-back").unwrap();
    let config = step.config().unwrap();
    let bytes = std::fs::read(default_lm_path()).expect("scripts/fetch-model.sh caches the model");
    let model = LlamaModel::load(bytes).expect("the pinned file loads");
    let text = &config.attention.text;
    let report = lm_report(&model, text, &config, swap_of(&config).as_ref(), || 0.0).unwrap();
    let swap = report.swap.as_ref().expect("elu + 1 swapped");
    let swapped = swap.perplexity.as_ref().expect("it ran").mean;
    let ids = lm_tokens(&model, text).unwrap();
    let transfer = transfer_report(&model, &config, &ids, &|| 0.0, &mut |_, _| {}).unwrap();
    let v = &transfer.verdict;
    assert_eq!(v.exact, report.perplexity, "the same exact forward");
    let evidence = LanguageModelEvidence {
        tokens: report.ids.len(),
        exact: report.perplexity,
        swap: Some((swap.label.clone(), swap.layers.clone(), swapped)),
        transfer: Some((transfer.steps, v.clone())),
    };
    let verdict = (step.verdict)(&Evidence::LanguageModel(&evidence)).unwrap();
    eprintln!("{}", verdict.measured);
    assert!(swapped > 10.0 * report.perplexity, "{}", verdict.measured);
    assert_eq!(verdict.answer, 2);
    for value in [report.perplexity, swapped, v.zero_shot, v.transferred] {
        assert!(
            verdict.measured.contains(&plain(value)),
            "{value}: {}",
            verdict.measured
        );
    }
    // Transfer wins back most of the loss in nats per token (measured: 7.93 → 5.76, exact
    // 4.29 at 20 steps a layer).
    let (exact, zero_shot, after) = (v.exact.ln(), v.zero_shot.ln(), v.transferred.ln());
    assert!(after - exact < 0.5 * (zero_shot - exact), "{v:?}");
}
