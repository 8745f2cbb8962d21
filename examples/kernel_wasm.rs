//! The f32 kernel and the whole task list in WebAssembly, timed from Node on one thread: a
//! development aid to tune the kernel without a browser. With the worker's flags:
//!
//! ```sh
//! CARGO_TARGET_DIR=target/worker RUSTFLAGS="-C target-feature=+simd128,+relaxed-simd" \
//!   cargo build --release --target wasm32-unknown-unknown --example kernel_wasm
//! wasm-bindgen --target nodejs --out-dir /tmp/kw \
//!   target/worker/wasm32-unknown-unknown/release/examples/kernel_wasm.wasm
//! node --experimental-wasm-relaxed-simd \
//!   -e 'const k = require("/tmp/kw/kernel_wasm.js"); console.log(k.full(1n, 1024, 50, true))'
//! ```
#[cfg(target_arch = "wasm32")]
mod bench {
    use softmax_kernel_lab::numerics::estimators::{FeatureForm, Projections};
    use softmax_kernel_lab::numerics::kernel::{KernelScratch, TransposedOmega, log_sums};
    use softmax_kernel_lab::numerics::rng::{StreamPurpose, stream_rng};
    use wasm_bindgen::prelude::*;

    /// Runs `blocks` blocks of 4 pairs at m = 1024, d = 50; returns a checksum. `fused`: the
    /// page's kernel (see [`full`]).
    #[wasm_bindgen]
    pub fn kernel(blocks: usize, hyperbolic: bool, fused: bool) -> f64 {
        let (m, d) = (1024, 50);
        let p = Projections::sample(m, d, &mut stream_rng(0, StreamPurpose::Trial, 0, 0)).unwrap();
        let o = TransposedOmega::new(&p);
        let z: Vec<f32> = (0..4 * d).map(|i| (i as f32 * 0.37).sin() * 0.2).collect();
        let mut s = KernelScratch::default();
        s.fused = fused;
        let mut out = [0.0; 4];
        let form = if hyperbolic {
            FeatureForm::Hyperbolic
        } else {
            FeatureForm::Positive
        };
        let mut acc = 0.0;
        for _ in 0..blocks {
            log_sums(&o, &z, 4, form, &mut s, &mut out);
            acc += out[0];
        }
        acc
    }

    /// Every task of the default page at `m` and `d`, one after another; returns the
    /// milliseconds spent in each kind of task. `fused`: the page's kernel (fused
    /// multiply-adds, what its workers run) or the export's bit-exact one.
    #[wasm_bindgen]
    pub fn full(seed: u64, m: usize, d: usize, fused: bool) -> String {
        use softmax_kernel_lab::lab::config::ExperimentConfig;
        use softmax_kernel_lab::lab::kernel::tasks::{Piece, Workspace, plan};
        let now = || js_sys::Date::now();
        let config = ExperimentConfig {
            seed,
            m,
            d,
            ..ExperimentConfig::default()
        };
        let mut workspace = Workspace::new();
        workspace.set_fused(fused);
        let mut spent = [0.0f64; 4];
        for task in plan(&config) {
            let t = now();
            workspace.run(&config, &task).unwrap();
            let kind = match task.piece {
                Piece::ScatterSetup => 0,
                Piece::ScatterPairs { .. } => 1,
                Piece::BoxplotPairs { .. } => 2,
                Piece::Curve => 3,
            };
            spent[kind] += now() - t;
        }
        format!(
            "setup {:.0} ms, scatter {:.0} ms, boxplots {:.0} ms, curves {:.0} ms",
            spent[0], spent[1], spent[2], spent[3]
        )
    }

    /// Draws `count` sets of m × d normals (ω), to time the sampling.
    #[wasm_bindgen]
    pub fn omega(count: usize) -> f64 {
        let mut acc = 0.0;
        for i in 0..count {
            let p = Projections::sample(
                1024,
                50,
                &mut stream_rng(0, StreamPurpose::Trial, i as u64, 0),
            )
            .unwrap();
            acc += p.rows().next().unwrap()[0];
        }
        acc
    }
}
