//! The Web Worker that computes the experiment's tasks (Trunk builds it with
//! `data-type="worker"`; the page starts as many as the machine has cores, see `ui::pool`).

#[cfg(target_arch = "wasm32")]
fn main() {
    softmax_kernel_lab::worker::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!(
        "kernel-worker runs inside the page as a Web Worker; use `kernel-lab` on the command line."
    );
    std::process::exit(2);
}
