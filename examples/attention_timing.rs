//! Native timing of the attention view's parts at the benchmark's case (L = 512, d = 32,
//! m = 256, the eight default methods), one thread: where the time goes.
use std::time::Instant;

use softmax_kernel_lab::lab::attention::report::{AttentionPart, AttentionRequest, run_attention};
use softmax_kernel_lab::lab::config::ExperimentConfig;

fn main() {
    let query = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "view=attention&len=512&d=32&features=256".to_string());
    let (config, notices) = ExperimentConfig::from_query(&query);
    assert!(notices.is_empty(), "{notices:?}");
    for part in AttentionPart::ALL
        .into_iter()
        .filter(|p| p.applies(&config))
    {
        let started = Instant::now();
        let request = AttentionRequest {
            config: config.clone(),
            part,
            heads: None,
            share: None,
        };
        let outcome = run_attention(&request).map(|_| ());
        println!(
            "{part:?}: {:.1} ms {outcome:?}",
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    for method in config.attention.methods.clone() {
        let mut c = config.clone();
        c.attention.methods = vec![method];
        let started = Instant::now();
        let _ = run_attention(&AttentionRequest {
            config: c,
            part: AttentionPart::Main,
            heads: None,
            share: None,
        });
        println!(
            "  main, {}: {:.1} ms",
            method.id(),
            started.elapsed().as_secs_f64() * 1e3
        );
    }
}
