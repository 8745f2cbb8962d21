//! The page's entry point: Trunk builds this binary for `wasm32-unknown-unknown`.

#[cfg(target_arch = "wasm32")]
fn main() {
    softmax_kernel_lab::ui::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("softmax-kernel-lab is a web page: serve it with `make serve` (see README.md).");
    std::process::exit(2);
}
