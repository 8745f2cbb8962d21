//! The Web Worker that computes the attention view's parts (built by scripts/build-worker.sh
//! beside `kernel-worker`; the page starts these only when the attention view is first shown,
//! see `ui::pool`), so that the kernel view's first load never downloads the attention math.

#[cfg(target_arch = "wasm32")]
fn main() {
    softmax_kernel_lab::worker::start_attention();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!(
        "attention-worker runs inside the page as a Web Worker; use `kernel-lab attention` on the command line."
    );
    std::process::exit(2);
}
