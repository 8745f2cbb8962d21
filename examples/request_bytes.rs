//! The bytes of one attention part request as the page posts it, now and as it was while every
//! request carried the stored heads' asset (the old wire type, rebuilt here field for field):
//! `cargo run --release --example request_bytes`. docs/benchmark.md has the figures.
use serde::Serialize;

use softmax_kernel_lab::lab::attention::{AttentionPart, AttentionRequest, ProblemShare};
use softmax_kernel_lab::lab::config::ExperimentConfig;
use softmax_kernel_lab::lab::pool::{WorkerRequest, encode};
use softmax_kernel_lab::numerics::attention::heads::HEADS_ASSET_PATH;

/// `AttentionRequest` before the workers read the stored heads themselves.
#[derive(Serialize)]
struct RequestWithAsset {
    config: ExperimentConfig,
    part: AttentionPart,
    #[serde(with = "serde_bytes")]
    heads: Option<Vec<u8>>,
    share: Option<ProblemShare>,
}

/// `WorkerRequest::Attention` with that request (variant 2, as postcard writes it; built
/// once, so its size does not matter).
#[derive(Serialize)]
#[allow(clippy::large_enum_variant)]
enum OldWorkerRequest {
    _Task,
    _Probe,
    Attention { id: u64, request: RequestWithAsset },
}

fn main() {
    let path = format!("{}/{HEADS_ASSET_PATH}", env!("CARGO_MANIFEST_DIR"));
    let asset = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    for query in ["view=attention", "view=attention&src=minilm"] {
        let (config, notices) = ExperimentConfig::from_query(query);
        assert!(notices.is_empty(), "{notices:?}");
        let request = AttentionRequest {
            config: config.clone(),
            part: AttentionPart::Main,
            share: None,
            lengths_unit: None,
        };
        let now = encode(&WorkerRequest::Attention {
            id: 7,
            request: request.clone(),
        })
        .expect("encodes")
        .len();
        let before = encode(&OldWorkerRequest::Attention {
            id: 7,
            request: RequestWithAsset {
                config,
                part: AttentionPart::Main,
                heads: request.reads_stored_heads().then(|| asset.clone()),
                share: None,
            },
        })
        .expect("encodes")
        .len();
        println!("{query}: main part request {before} bytes before, {now} bytes now");
    }
}
