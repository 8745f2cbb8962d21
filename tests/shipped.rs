//! The answers shipped with the lab (`lab::models::shipped`, `assets/shipped-answers.bin`): the
//! committed file is what the code computes now (bit for bit: the same native arithmetic), a
//! model worker answers with them only for the shipped requests and only when its check holds,
//! and a damaged file, another request or `reuse=off` is computed as before.
//!
//! Needs the converted model, like tests/model.rs (scripts/fetch-model.sh).
#![cfg(all(not(target_arch = "wasm32"), feature = "text-model"))]

use std::sync::OnceLock;
use std::time::Instant;

use softmax_kernel_lab::cli::default_model_path;
use softmax_kernel_lab::lab::models::learned_map::LearnedHeads;
use softmax_kernel_lab::lab::models::loader::ModelLoader;
use softmax_kernel_lab::lab::models::protocol::{ModelAnswer, ModelRequest, ModelSetup, Origin};
use softmax_kernel_lab::lab::models::shipped::{
    SHIPPED_ASSET_PATH, ShippedAnswers, ShippedSource, compute_shipped_answers, shipped_config,
};
use softmax_kernel_lab::lab::models::swap_plan::swap_plan;
use softmax_kernel_lab::lab::pool::model_worker::ModelWorkspace;
use softmax_kernel_lab::numerics::bert::MODEL_SHA256;

fn model_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let path = default_model_path();
        std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "cannot read the converted model {}: {e}; run scripts/fetch-model.sh",
                path.display()
            )
        })
    })
}

fn now() -> f64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
}

fn shipped_bytes() -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SHIPPED_ASSET_PATH);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn shipped() -> ShippedAnswers {
    postcard::from_bytes(&shipped_bytes()).expect("the shipped answers decode")
}

/// A worker with the model loaded that reads its shipped answers from `bytes`.
fn worker(bytes: Vec<u8>) -> ModelWorkspace {
    let mut w = ModelWorkspace::default();
    let mut loader = ModelLoader::new();
    loader.push(model_bytes());
    assert!(matches!(
        w.load(loader, 0.0, || 0.0),
        ModelSetup::Loaded { .. }
    ));
    w.set_shipped(ShippedSource::read_by(move || Ok(bytes.clone())));
    w
}

/// The parts' training times are the build's clock, the one thing not computed.
fn without_times(mut answers: ShippedAnswers) -> ShippedAnswers {
    for part in &mut answers.training.parts {
        part.train_ms = 0.0;
    }
    answers
}

#[test]
fn the_committed_answers_are_what_the_code_computes() {
    let model = worker(Vec::new()).model().expect("loaded");
    let fresh = compute_shipped_answers(&model, MODEL_SHA256, now).expect("computed");
    let committed = shipped();
    assert_eq!(
        without_times(committed),
        without_times(fresh),
        "{SHIPPED_ASSET_PATH} is not what the code computes now: run \
         `cargo run --release --bin kernel-lab -- shipped` and commit the file"
    );
}

/// The plan's shipped requests: the training and each retrieval, with `reuse`.
fn shipped_requests(reuse: bool) -> Vec<ModelRequest> {
    let mut config = shipped_config();
    config.attention.reuse_answers = reuse;
    swap_plan(&config, None)
        .into_iter()
        .filter(|r| {
            matches!(
                r,
                ModelRequest::TrainHedgehog { .. } | ModelRequest::Retrieve { .. }
            )
        })
        .collect()
}

#[test]
fn a_worker_answers_the_shipped_requests_with_the_shipped_answers() {
    let answers = shipped();
    let mut w = worker(shipped_bytes());
    let requests = shipped_requests(true);
    let (training, retrievals) = requests.split_first().expect("the plan has requests");
    match w.handle(training.clone(), now, &mut |_| {}) {
        ModelAnswer::Trained(Ok(t)) => {
            assert_eq!(t.origin, Origin::Shipped);
            let parts: Vec<LearnedHeads> = answers.training.parts.clone();
            assert_eq!(t.job, parts[0].job);
            assert_eq!(t.curve.len(), parts[0].job.steps + 1);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(retrievals.len(), answers.retrievals.len());
    for (request, shipped) in retrievals.iter().zip(&answers.retrievals) {
        match w.handle(request.clone(), now, &mut |_| {}) {
            ModelAnswer::Retrieved {
                report: Ok(report), ..
            } => {
                assert_eq!(report.origin, Origin::Shipped);
                assert_eq!(
                    report,
                    softmax_kernel_lab::lab::models::protocol::RetrievalReport {
                        origin: Origin::Shipped,
                        ..shipped.report.clone()
                    }
                );
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn reuse_off_another_request_or_a_damaged_file_is_computed() {
    let answers = shipped();
    let retrieval = |reuse: bool| {
        shipped_requests(reuse)
            .into_iter()
            .find(|r| matches!(r, ModelRequest::Retrieve { job, .. } if job.method == "taylor"))
            .expect("the plan ranks the set with Taylor")
    };
    let origin_of =
        |w: &mut ModelWorkspace, request: ModelRequest| match w.handle(request, now, &mut |_| {}) {
            ModelAnswer::Retrieved {
                report: Ok(report), ..
            } => report,
            other => panic!("{other:?}"),
        };
    let shipped_taylor = answers
        .retrievals
        .iter()
        .find(|r| r.job.method == "taylor")
        .expect("shipped")
        .report
        .clone();
    // Asked to compute here: the same report (native arithmetic both), computed.
    let mut w = worker(shipped_bytes());
    let here = origin_of(&mut w, retrieval(false));
    assert_eq!(here.origin, Origin::Computed);
    assert_eq!(
        here,
        softmax_kernel_lab::lab::models::protocol::RetrievalReport {
            origin: Origin::Computed,
            ..shipped_taylor.clone()
        }
    );
    // Another m: not shipped.
    let mut other = retrieval(true);
    if let ModelRequest::Retrieve { job, .. } = &mut other {
        job.config.attention.features = 16;
    }
    assert_eq!(origin_of(&mut w, other).origin, Origin::Computed);
    // A file whose exact ranking disagrees with this model's by 1e-3: computed.
    let mut damaged = answers.clone();
    for r in &mut damaged.retrievals {
        r.report.exact.cosines[0] += 1e-3;
    }
    let mut w = worker(postcard::to_allocvec(&damaged).expect("encodes"));
    assert_eq!(origin_of(&mut w, retrieval(true)).origin, Origin::Computed);
    // A training check off by 1e-3 relative: the shipped maps are refused.
    let model = w.model().expect("loaded");
    let job = answers.training.parts[0].job.clone();
    assert!(answers.checked_training(&model, &job).is_some());
    let mut damaged = answers.clone();
    damaged.training.check[5] *= 1.0 + 1e-3;
    assert!(damaged.checked_training(&model, &job).is_none());
    // Bytes that are not the answers, and another model's: none, never a panic.
    let mut w = worker(vec![7; 100]);
    assert_eq!(origin_of(&mut w, retrieval(true)).origin, Origin::Computed);
    let mut foreign = answers;
    foreign.model_sha256 = "0".repeat(64);
    let mut w = worker(postcard::to_allocvec(&foreign).expect("encodes"));
    assert_eq!(origin_of(&mut w, retrieval(true)).origin, Origin::Computed);
}
