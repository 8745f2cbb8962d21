//! The Web Worker of the text view: the real all-MiniLM-L6-v2 (its tokenizer and its forward,
//! feature `text-model`) on the user's text. Built by scripts/build-worker.sh; the page starts
//! it only when the text view is first opened (see `ui::text_view`), so no other view ever
//! downloads the tokenizer or the forward.

#[cfg(target_arch = "wasm32")]
fn main() {
    // The same build serves the language model's worker (started as `…_loader.js?lm`) and
    // the attention view's workers on its heads (`…_loader.js?lm&heads`).
    if softmax_kernel_lab::worker::started_as_lm_heads() {
        softmax_kernel_lab::worker::start_lm_heads();
    } else if softmax_kernel_lab::worker::started_as_lm() {
        softmax_kernel_lab::worker::start_lm();
    } else {
        softmax_kernel_lab::worker::start_model();
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!(
        "model-worker runs inside the page as a Web Worker; use `kernel-lab model` on the command line."
    );
    std::process::exit(2);
}
