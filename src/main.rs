//! The page's entry point: Trunk builds this binary for `wasm32-unknown-unknown`.

#[cfg(all(target_arch = "wasm32", feature = "page"))]
fn main() {
    softmax_kernel_lab::ui::start();
}

#[cfg(not(all(target_arch = "wasm32", feature = "page")))]
fn main() {
    eprintln!(
        "softmax-kernel-lab is a web page (built with the feature `page`): serve it with `./scripts/serve.sh` (see README.md)."
    );
    std::process::exit(2);
}
