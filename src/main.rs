//! The page's entry point: scripts/build-page.sh builds this binary for
//! `wasm32-unknown-unknown` and splits its module at [`attention_view`], [`tour_step`],
//! [`kernel_below`], [`export_actions`] and [`lm_view`]: the first view (the kernel view) loads
//! the main part; the attention view, the tour's step panel, the kernel view's panels below its
//! first screen, the export's work and the language model's view are fetched the first time
//! they are needed
//! (docs/architecture.md, "The page's module in parts").

/// The split point: everything only [`softmax_kernel_lab::ui::mount_attention`] reaches (the
/// attention view, its text and swap views, its charts and embedded figures) goes into the
/// split part `attention_view`. The wrapper this macro makes is `async`: it fetches and
/// instantiates that part once, then answers its entry; a failed fetch is an `Err` (tried
/// again on the next call), never a panic.
#[cfg(all(target_arch = "wasm32", feature = "page"))]
#[wasm_split_helpers::wasm_split(attention_view, fallible)]
fn attention_view()
-> Result<softmax_kernel_lab::ui::AttentionMount, wasm_split_helpers::SplitLoaderError> {
    Ok(softmax_kernel_lab::ui::mount_attention)
}

/// The tour's split point: the step panel with every step's prose and verdict (only a
/// `?tour=N` page shows a step) goes into the split part `tour_step`.
#[cfg(all(target_arch = "wasm32", feature = "page"))]
#[wasm_split_helpers::wasm_split(tour_step, fallible)]
fn tour_step() -> Result<softmax_kernel_lab::ui::TourMount, wasm_split_helpers::SplitLoaderError> {
    Ok(softmax_kernel_lab::ui::mount_tour_step)
}

/// The third split point: the kernel view's panels below its first screen (the data panel, the
/// probe, "What is computed"), fetched when the reader scrolls near them or probes a pair.
#[cfg(all(target_arch = "wasm32", feature = "page"))]
#[wasm_split_helpers::wasm_split(kernel_below, fallible)]
fn kernel_below() -> Result<softmax_kernel_lab::ui::BelowMount, wasm_split_helpers::SplitLoaderError>
{
    Ok(softmax_kernel_lab::ui::mount_below)
}

/// The fourth split point: the CSV and JSON export's work (its tasks and the command line's
/// writers), fetched on the first click of "Download CSV" or "Download JSON".
#[cfg(all(target_arch = "wasm32", feature = "page"))]
#[wasm_split_helpers::wasm_split(export_actions, fallible)]
fn export_actions()
-> Result<softmax_kernel_lab::ui::ExportAction, wasm_split_helpers::SplitLoaderError> {
    Ok(softmax_kernel_lab::ui::run_export)
}

/// The fifth split point: the language model's view (its controls, token colouring, per-layer
/// chart and the worker's handling), fetched the first time the view is shown.
#[cfg(all(target_arch = "wasm32", feature = "page"))]
#[wasm_split_helpers::wasm_split(lm_view, fallible)]
fn lm_view() -> Result<softmax_kernel_lab::ui::LmMount, wasm_split_helpers::SplitLoaderError> {
    Ok(softmax_kernel_lab::ui::mount_lm)
}

#[cfg(all(target_arch = "wasm32", feature = "page"))]
fn main() {
    softmax_kernel_lab::ui::start(softmax_kernel_lab::ui::Splits {
        // The formulas the first view does not show come with the code of the parts that show
        // them (the attention and language model views, the tour's steps, the panels below the
        // kernel view's first screen), fetched at the same time.
        attention: || {
            softmax_kernel_lab::ui::load_view_formulas();
            Box::pin(async { attention_view().await.map_err(|e| e.to_string()) })
        },
        tour: || {
            softmax_kernel_lab::ui::load_view_formulas();
            Box::pin(async { tour_step().await.map_err(|e| e.to_string()) })
        },
        below: || {
            softmax_kernel_lab::ui::load_view_formulas();
            Box::pin(async { kernel_below().await.map_err(|e| e.to_string()) })
        },
        export: || Box::pin(async { export_actions().await.map_err(|e| e.to_string()) }),
        lm: || {
            softmax_kernel_lab::ui::load_view_formulas();
            Box::pin(async { lm_view().await.map_err(|e| e.to_string()) })
        },
    });
}

#[cfg(not(all(target_arch = "wasm32", feature = "page")))]
fn main() {
    eprintln!(
        "softmax-kernel-lab is a web page (built with the feature `page`): serve it with `./scripts/serve.sh` (see README.md)."
    );
    std::process::exit(2);
}
