//! Native timing of the attention view's parts at the benchmark's case (L = 512, d = 32,
//! m = 256, the eight default methods), one thread: where the time goes.
use std::time::Instant;

use softmax_kernel_lab::lab::attention::StoredHeads;
use softmax_kernel_lab::lab::attention::report::{AttentionPart, AttentionRequest, run_attention};
use softmax_kernel_lab::lab::config::ExperimentConfig;
use softmax_kernel_lab::numerics::attention::heads::HEADS_ASSET_PATH;

fn main() {
    let query = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "view=attention&len=512&d=32&features=256".to_string());
    let (config, notices) = ExperimentConfig::from_query(&query);
    assert!(notices.is_empty(), "{notices:?}");
    let path = format!("{}/{HEADS_ASSET_PATH}", env!("CARGO_MANIFEST_DIR"));
    let mut stored = StoredHeads::read_by(move || std::fs::read(&path).map_err(|e| e.to_string()));
    for part in AttentionPart::ALL
        .into_iter()
        .filter(|p| p.applies(&config))
    {
        let started = Instant::now();
        let request = AttentionRequest {
            config: config.clone(),
            part,
            share: None,
            lengths_unit: None,
        };
        let outcome = run_attention(&request, &mut stored).map(|_| ());
        println!(
            "{part:?}: {:.1} ms {outcome:?}",
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    for method in config.attention.methods.clone() {
        let mut c = config.clone();
        c.attention.methods = vec![method];
        let started = Instant::now();
        let request = AttentionRequest {
            config: c,
            part: AttentionPart::Main,
            share: None,
            lengths_unit: None,
        };
        let _ = run_attention(&request, &mut stored);
        println!(
            "  main, {}: {:.1} ms",
            method.id(),
            started.elapsed().as_secs_f64() * 1e3
        );
    }
}
