use softmax_kernel_lab::numerics::estimators::{FeatureForm, Projections};
use softmax_kernel_lab::numerics::kernel::{KernelScratch, TransposedOmega, log_sums};
use softmax_kernel_lab::numerics::rng::{StreamPurpose, stream_rng};
use std::time::Instant;
fn main() {
    let (m, d) = (1024, 50);
    let t = Instant::now();
    let p = Projections::sample(m, d, &mut stream_rng(0, StreamPurpose::Trial, 0, 0)).unwrap();
    println!("sample omega {:.2} ms", t.elapsed().as_secs_f64() * 1e3);
    let o = TransposedOmega::new(&p);
    let z: Vec<f32> = (0..4 * d).map(|i| (i as f32 * 0.37).sin() * 0.2).collect();
    let mut s = KernelScratch::default();
    let mut out = [0.0; 4];
    for form in [FeatureForm::Positive, FeatureForm::Hyperbolic] {
        let t = Instant::now();
        let blocks = 1500;
        let mut acc = 0.0;
        for _ in 0..blocks {
            log_sums(&o, &z, 4, form, &mut s, &mut out);
            acc += out[0];
        }
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{form:?}: {:.2} ms for {} pairs, {:.2} GMAC/s ({acc})",
            secs * 1e3,
            blocks * 4,
            (blocks * 4 * m * d) as f64 / secs / 1e9
        );
    }
}
