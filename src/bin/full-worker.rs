//! The Web Worker that computes every request: the attention view's parts, and the kernel
//! view's tasks, probe and data panel with every estimator, the optimised A included (built
//! by scripts/build-worker.sh beside `kernel-worker`, which leaves the optimiser out). The
//! page starts these only when the attention view is first shown or a configuration needs
//! the optimised A (see `ui::pool`), so a first view never downloads them.

#[cfg(target_arch = "wasm32")]
fn main() {
    softmax_kernel_lab::worker::start_full();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!(
        "full-worker runs inside the page as a Web Worker; use `kernel-lab` on the command line."
    );
    std::process::exit(2);
}
