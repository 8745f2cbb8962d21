//! The model workers' fabric, natively: the page's scheduler (`lab::pool::scheduler`, the one the
//! pool runs) driving two model workspaces with the model workers' own handler
//! (`ModelWorkspace::respond`), as the pool drives two model workers. Needs the converted model
//! (scripts/fetch-model.sh).
//!
//! Checked: a text runs on every free worker (its parts), the newest text wins (an older
//! text's answer is not delivered, a text typed while one runs waits for it), each worker then
//! holds the text's heads and computes the attention view's parts on them exactly as the stored
//! asset's path does, the swap plan's jobs go one per worker and a text typed meanwhile goes
//! first, and the Hedgehog maps' training runs on every worker so either answers a Hedgehog swap.

use std::collections::HashMap;
use std::sync::OnceLock;

use softmax_kernel_lab::cli::default_model_path;
use softmax_kernel_lab::lab::attention::{
    AttentionOutput, AttentionPart, AttentionRequest, run_attention_on,
};
use softmax_kernel_lab::lab::config::ExperimentConfig;
use softmax_kernel_lab::lab::models::learned_map::{KeptTraining, kept_training_key};
use softmax_kernel_lab::lab::models::loader::ModelLoader;
use softmax_kernel_lab::lab::models::protocol::{ModelAnswer, ModelRequest, ModelSetup, Origin};
use softmax_kernel_lab::lab::models::swap_plan::swap_plan;
use softmax_kernel_lab::lab::models::text_model::TextModel;
use softmax_kernel_lab::lab::pool::model_worker::ModelWorkspace;
use softmax_kernel_lab::lab::pool::{Ask, WorkerRequest, WorkerResponse};
use softmax_kernel_lab::lab::pool::{Channel, Reach, Scheduler, SideSend, Ticket};
use softmax_kernel_lab::lab::pool::{decode, encode};
use softmax_kernel_lab::numerics::attention::heads::RealHeads;
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

/// The page's side of the fabric: the scheduler and the requests' messages, and two workers.
struct Fabric {
    scheduler: Scheduler,
    workers: Vec<ModelWorkspace>,
    requests: HashMap<u64, WorkerRequestMaker>,
}

/// A request's message for a part (what the pool keeps).
enum WorkerRequestMaker {
    Model(Box<ModelRequest>),
    Attention(Box<AttentionRequest>),
}

impl Fabric {
    fn new(workers: usize) -> Self {
        let mut scheduler = Scheduler::new(workers);
        scheduler.set_side_limit(Some(1));
        let workers: Vec<ModelWorkspace> = (0..workers)
            .map(|_| {
                let mut w = ModelWorkspace::default();
                let mut loader = ModelLoader::new();
                loader.push(model_bytes());
                assert!(matches!(
                    w.load(loader, 0.0, || 0.0),
                    ModelSetup::Loaded { .. }
                ));
                w
            })
            .collect();
        for slot in 0..workers.len() {
            scheduler.worker_ready(slot);
        }
        Fabric {
            scheduler,
            workers,
            requests: HashMap::new(),
        }
    }

    fn ask(&mut self, ticket: Ticket, request: ModelRequest) -> u64 {
        let handle = self.scheduler.queue_side(ticket, request.reach());
        self.requests
            .insert(handle, WorkerRequestMaker::Model(Box::new(request)));
        handle
    }

    fn ask_attention(&mut self, ticket: Ticket, request: AttentionRequest) -> u64 {
        let handle = self.scheduler.queue_side(ticket, Reach::One);
        self.requests
            .insert(handle, WorkerRequestMaker::Attention(Box::new(request)));
        handle
    }

    fn dispatch(&mut self) -> Vec<SideSend> {
        self.scheduler.dispatch_side().send
    }

    /// Runs one sent part in its worker; returns (request handle, delivered answer or None).
    fn run(&mut self, send: &SideSend) -> (u64, Option<WorkerResponse>) {
        let message = match &self.requests[&send.request] {
            WorkerRequestMaker::Model(request) => request.message(send.id, &send.part),
            WorkerRequestMaker::Attention(request) => request.message(send.id, &send.part),
        };
        let slot = send.slot.expect("a worker");
        let response = self.workers[slot].respond(message, || 0.0, &mut |_| {});
        let answer = self.scheduler.side_request_answered(send.id).unwrap();
        let delivered = (answer.current && answer.part == 0).then_some(response);
        (send.request, delivered)
    }
}

fn text_config(text: &str) -> ExperimentConfig {
    let (config, errors) = ExperimentConfig::from_query(&format!(
        "view=attention&src=text&text={}",
        text.replace(' ', "+")
    ));
    assert!(errors.is_empty(), "{errors:?}");
    config
}

const FIRST: &str = "The quick brown fox jumps over the lazy dog near the river bank.";
const SECOND: &str = "A short second text about attention and kernels in transformers.";

#[test]
fn the_newest_text_wins_and_every_worker_then_holds_its_heads() {
    let mut fabric = Fabric::new(2);
    let first = fabric.scheduler.ticket(Channel::Text);
    fabric.ask(
        first,
        ModelRequest::Run {
            text: FIRST.to_string(),
        },
    );
    let parts = fabric.dispatch();
    assert_eq!(
        parts.len(),
        2,
        "both workers are free: the text runs on both"
    );
    // A newer text while the first runs: it waits for the first's parts, which are not
    // delivered.
    let second = fabric.scheduler.ticket(Channel::Text);
    let newest = fabric.ask(
        second,
        ModelRequest::Run {
            text: SECOND.to_string(),
        },
    );
    assert!(fabric.dispatch().is_empty());
    for part in &parts {
        assert_eq!(fabric.run(part).1, None, "an older text's answer");
    }
    let parts = fabric.dispatch();
    assert_eq!(parts.len(), 2);
    let mut delivered = Vec::new();
    for part in &parts {
        let (request, answer) = fabric.run(part);
        assert_eq!(request, newest);
        delivered.extend(answer);
    }
    let [WorkerResponse::Model { answer, .. }] = delivered.as_slice() else {
        panic!("one answer for the request: {delivered:?}");
    };
    let ModelAnswer::Ran { run, .. } = answer else {
        panic!("{answer:?}");
    };
    // The same as one model on the text (the command line's path), without the heads.
    let (alone, asset) = TextModel::from_checked_bytes(model_bytes())
        .unwrap()
        .run_with_asset(SECOND)
        .unwrap();
    assert_eq!(run.embedding, alone.embedding);
    assert_eq!(run.ids, alone.ids);
    // Each worker computes the attention view's main part on the text's heads as the stored
    // asset's path does on the same heads.
    let config = text_config(SECOND);
    let request = AttentionRequest {
        config: config.clone(),
        part: AttentionPart::Main,
        share: None,
        lengths_unit: None,
    };
    let asset_heads = RealHeads::parse(&asset).unwrap();
    let reference = run_attention_on(&request, Some(&asset_heads)).unwrap();
    assert!(matches!(reference, AttentionOutput::Main(_)));
    for slot in 0..2 {
        let ticket = fabric
            .scheduler
            .ticket(Channel::Attention(AttentionPart::Main));
        fabric.ask_attention(ticket, request.clone());
        let sent = fabric.dispatch();
        assert_eq!(sent.len(), 1);
        let response = fabric.workers[slot].respond(
            WorkerRequest::Attention {
                id: sent[0].id,
                request: request.clone(),
            },
            || 0.0,
            &mut |_| {},
        );
        fabric.scheduler.side_request_answered(sent[0].id);
        assert_eq!(
            response,
            WorkerResponse::Attention {
                id: sent[0].id,
                output: Ok(reference.clone())
            },
            "worker {slot}"
        );
    }
}

#[test]
fn the_swap_plan_goes_one_job_per_worker_after_any_text_and_both_hold_the_trained_maps() {
    let mut fabric = Fabric::new(2);
    let mut config = text_config(FIRST);
    config.attention.hedgehog_steps = 3;
    config.attention.swap_draws = 1;
    config.attention.methods.truncate(1);
    let plan = swap_plan(&config, None);
    let training = plan
        .iter()
        .position(|r| matches!(r, ModelRequest::TrainHedgehog { .. }))
        .expect("the plan trains the Hedgehog maps");
    let swap = fabric.scheduler.ticket(Channel::Swap);
    let handles: Vec<u64> = plan.iter().map(|r| fabric.ask(swap, r.clone())).collect();
    let mut answered: HashMap<u64, ModelAnswer> = HashMap::new();
    let mut typed = false;
    let mut text_answer = None;
    loop {
        let sent = fabric.dispatch();
        if sent.is_empty() {
            break;
        }
        // One job per worker at a time; the training takes every worker at once.
        let mut per_slot = HashMap::new();
        for s in &sent {
            *per_slot.entry(s.slot).or_insert(0) += 1;
        }
        assert!(per_slot.values().all(|&n| n == 1), "{sent:?}");
        if sent.iter().any(|s| s.request == handles[training]) {
            assert_eq!(sent.len(), 2, "the training runs on both workers");
        }
        if !typed {
            // A text typed while the first jobs run goes before the plan's next jobs.
            typed = true;
            let ticket = fabric.scheduler.ticket(Channel::Text);
            let text = fabric.ask(
                ticket,
                ModelRequest::Run {
                    text: SECOND.to_string(),
                },
            );
            for s in &sent {
                fabric.run(s);
            }
            let next = fabric.dispatch();
            assert!(!next.is_empty() && next.iter().all(|s| s.request == text));
            for s in &next {
                if let (_, Some(WorkerResponse::Model { answer, .. })) = fabric.run(s) {
                    text_answer = Some(answer);
                }
            }
            continue;
        }
        for s in &sent {
            if let (request, Some(WorkerResponse::Model { answer, .. })) = fabric.run(s) {
                answered.insert(request, answer);
            }
        }
    }
    assert!(matches!(text_answer, Some(ModelAnswer::Ran { .. })));
    assert!(matches!(
        answered.get(&handles[training]),
        Some(ModelAnswer::Trained(Ok(_)))
    ));
    // Every job after the training was answered, the Hedgehog swap included, whichever worker
    // took it (both hold the maps).
    for (request, handle) in plan.iter().zip(&handles).skip(training + 1) {
        match answered.get(handle) {
            Some(ModelAnswer::Swapped { report, .. }) => {
                report.as_ref().expect("the swap runs");
            }
            Some(ModelAnswer::Retrieved { report, .. }) => {
                report.as_ref().expect("the retrieval runs");
            }
            other => panic!("{request:?}: {other:?}"),
        }
    }
    for (slot, worker) in fabric.workers.iter_mut().enumerate() {
        let hedgehog = plan[training + 1].clone();
        assert!(matches!(hedgehog, ModelRequest::Swap(_)));
        let answer = worker.handle(hedgehog, || 0.0, &mut |_| {});
        assert!(
            matches!(&answer, ModelAnswer::Swapped { report: Ok(_), .. }),
            "worker {slot}: {answer:?}"
        );
    }
}

#[test]
fn a_training_split_by_heads_over_two_workers_equals_one_workers() {
    let mut config = text_config(FIRST);
    config.attention.hedgehog_steps = 3;
    config.attention.swap_draws = 1;
    config.attention.methods.truncate(1);
    let plan = swap_plan(&config, None);
    let Some(ModelRequest::TrainHedgehog { job, .. }) = plan
        .iter()
        .find(|r| matches!(r, ModelRequest::TrainHedgehog { .. }))
        .cloned()
    else {
        panic!("the plan trains the Hedgehog maps");
    };
    let hedgehog = plan
        .iter()
        .find(|r| matches!(r, ModelRequest::Swap(j) if j.method == "hedgehog"))
        .cloned()
        .expect("the plan swaps the Hedgehog maps in");
    let mut fabric = Fabric::new(3);
    // One worker alone, as before.
    let whole = fabric.workers[2].handle(
        ModelRequest::TrainHedgehog {
            job: job.clone(),
            reuse: true,
        },
        || 0.0,
        &mut |_| {},
    );
    // Two workers, each its share of the heads, then both parts to each (any order).
    let shares: Vec<_> = (0..2)
        .map(|index| {
            fabric.workers[index]
                .train_part(&job, (index, 2), || 0.0, &mut |_| {})
                .expect("the part trains")
        })
        .collect();
    let reversed: Vec<_> = shares.iter().rev().cloned().collect();
    let first = fabric.workers[0].keep_trained_parts(&shares);
    let second = fabric.workers[1].keep_trained_parts(&reversed);
    let record = |answer: &ModelAnswer| match answer {
        ModelAnswer::Trained(Ok(training)) => (training.curve.clone(), training.train_tokens),
        other => panic!("{other:?}"),
    };
    assert_eq!(record(&first), record(&whole));
    assert_eq!(record(&second), record(&whole));
    // Every worker's Hedgehog swap is the same report (the same maps).
    let reports: Vec<_> = (0..3)
        .map(
            |slot| match fabric.workers[slot].handle(hedgehog.clone(), || 0.0, &mut |_| {}) {
                ModelAnswer::Swapped {
                    report: Ok(report), ..
                } => report.per_layer,
                other => panic!("worker {slot}: {other:?}"),
            },
        )
        .collect();
    assert_eq!(reports[0], reports[2]);
    assert_eq!(reports[1], reports[2]);

    // Kept for a later visit (as the model worker keeps it in Cache Storage): a fresh worker
    // takes the kept parts, checked, and answers the same record, marked kept, and the same swap.
    let kept = fabric.workers[0]
        .kept_training(&shares)
        .expect("the parts are checked");
    assert_eq!(kept.check.len(), 72, "one check per head");
    let bytes = encode(&kept).expect("it encodes");
    let kept: KeptTraining = decode(&bytes).expect("it decodes");
    let mut later = Fabric::new(1);
    match later.workers[0].keep_kept_training(&kept) {
        Some(ModelAnswer::Trained(Ok(training))) => {
            assert_eq!(training.origin, Origin::Kept);
            assert_eq!(
                (training.curve.clone(), training.train_tokens),
                record(&whole)
            );
        }
        other => panic!("the kept training is not taken: {other:?}"),
    }
    match later.workers[0].handle(hedgehog.clone(), || 0.0, &mut |_| {}) {
        ModelAnswer::Swapped {
            report: Ok(report), ..
        } => assert_eq!(report.per_layer, reports[2]),
        other => panic!("{other:?}"),
    }
    // A check that another build or a damaged entry would give: trained again instead.
    let mut damaged = kept.clone();
    damaged.check[40] = f64::from_bits(damaged.check[40].to_bits() ^ 1);
    assert!(
        Fabric::new(1).workers[0]
            .keep_kept_training(&damaged)
            .is_none()
    );
    // Another job has another place.
    let mut other = job.clone();
    other.seed += 1;
    assert_ne!(
        kept_training_key(&job, MODEL_SHA256),
        kept_training_key(&other, MODEL_SHA256)
    );
}

/// Runs `text` as `count` parts of one forward, passing each step's messages between them as
/// the workers' ports do (each part gets the others' messages, in an order other than its own).
fn split_run(
    model: &TextModel,
    text: &str,
    count: usize,
) -> Vec<(
    softmax_kernel_lab::lab::models::protocol::TextRun,
    softmax_kernel_lab::numerics::attention::heads::RealHeads,
)> {
    use softmax_kernel_lab::lab::models::split::TextPart;
    let mut parts: Vec<TextPart> = (0..count)
        .map(|index| TextPart::start(model, text, index, count).expect("the part starts"))
        .collect();
    let others = |messages: &[_], me: usize| -> Vec<_> {
        let mut rest: Vec<_> = messages
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != me)
            .map(|(_, m): (usize, &softmax_kernel_lab::lab::models::split::PeerMessage)| m.clone())
            .collect();
        rest.reverse();
        rest
    };
    for _ in 0..parts[0].layers() {
        let sent: Vec<_> = parts
            .iter_mut()
            .map(|p| p.project().expect("the layer projects"))
            .collect();
        for (me, part) in parts.iter_mut().enumerate() {
            part.finish_layer(others(&sent, me))
                .expect("the layer finishes");
        }
    }
    let outputs: Vec<_> = parts
        .iter_mut()
        .map(|p| p.finish().expect("the part finishes"))
        .collect();
    let states: Vec<_> = parts.iter().map(|p| p.states()).collect();
    parts
        .into_iter()
        .enumerate()
        .map(|(me, part)| {
            part.join(others(&outputs, me), others(&states, me))
                .expect("the parts join")
        })
        .collect()
}

#[test]
fn a_text_split_by_rows_over_workers_gives_every_worker_one_workers_run() {
    let model = TextModel::from_checked_bytes(model_bytes()).expect("the model loads");
    let text = "Random features estimate the softmax kernel; split by rows, each worker \
                runs some of the tokens and they swap keys and values per layer.";
    let (whole, whole_heads) = model.run_keeping_heads(text).expect("one worker's run");
    assert!(whole.ids.len() > 20);
    // Two, three parts, and more parts than a two-token text has rows.
    for (text, count) in [(text, 2), (text, 3), ("hi", 4)] {
        let (one, one_heads) = model.run_keeping_heads(text).expect("one worker's run");
        let runs = split_run(&model, text, count);
        assert_eq!(runs.len(), count);
        for (run, heads) in &runs {
            assert_eq!(run.ids, one.ids, "{count} parts");
            assert_eq!(run.tokens, one.tokens);
            // Queries, keys and values are the same products row by row: bit for bit.
            assert_eq!(heads, &one_heads, "{count} parts: the heads");
            // The embedding's f64 column sums are grouped by part: within an f32 rounding.
            let drift = run
                .embedding
                .iter()
                .zip(&one.embedding)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(drift <= 1e-7, "{count} parts: embedding moved by {drift}");
        }
        // Every worker holds the same run.
        assert!(runs.windows(2).all(|w| w[0] == w[1]));
    }
    assert_eq!(whole_heads.header().tokens_per_passage, whole.ids.len());
}

/// The shared boards (`lab::models::board`) are sized for the longest text split in two: every
/// message of a 512-token text's split, as it travels (postcard), fits one board buffer, and
/// the bound is not loose by more than a few percent.
#[test]
fn every_message_of_the_longest_split_text_fits_a_shared_board() {
    use softmax_kernel_lab::lab::models::board::{BoardLayout, largest_message_bytes};
    use softmax_kernel_lab::lab::models::split::TextPart;
    use softmax_kernel_lab::lab::pool::encode;
    let model = TextModel::from_checked_bytes(model_bytes()).expect("the model loads");
    // One token per word: 510 words and the two special tokens.
    let words = [
        "the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to",
    ];
    let text = (0..510)
        .map(|i| words[(i * 7 + i * i % 5) % words.len()])
        .collect::<Vec<_>>()
        .join(" ");
    let layout = BoardLayout::default();
    let count = 2;
    let mut parts: Vec<TextPart> = (0..count)
        .map(|index| TextPart::start(&model, &text, index, count).expect("the part starts"))
        .collect();
    let mut largest = 0;
    for _ in 0..parts[0].layers() {
        let sent: Vec<_> = parts
            .iter_mut()
            .map(|p| p.project().expect("the layer projects"))
            .collect();
        for message in &sent {
            largest = largest.max(encode(message).expect("it encodes").len());
        }
        for (me, part) in parts.iter_mut().enumerate() {
            let others = sent
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != me)
                .map(|(_, m)| m.clone())
                .collect();
            part.finish_layer(others).expect("the layer finishes");
        }
    }
    for part in &mut parts {
        let output = part.finish().expect("the part finishes");
        largest = largest.max(encode(&output).expect("it encodes").len());
        largest = largest.max(encode(&part.states()).expect("it encodes").len());
    }
    let bound = largest_message_bytes(512, count);
    assert!(
        layout.fits(largest),
        "{largest} bytes against {}",
        layout.capacity
    );
    assert!(
        largest <= bound && largest as f64 >= 0.97 * bound as f64,
        "{largest} of {bound}"
    );
}

/// A text split by rows over the workers leaves each worker the text's exact run (no worker
/// runs the text again for its swap): a swap from any part's exact run reports the numbers of
/// one worker's separate exact run bit for bit (the measured times aside), for two and three
/// parts and for a part without rows.
#[test]
fn a_split_texts_exact_run_in_every_worker_is_one_workers_exact_run() {
    use softmax_kernel_lab::lab::models::protocol::SwapReport;
    use softmax_kernel_lab::lab::models::split::TextPart;
    use softmax_kernel_lab::lab::models::swap::{Swap, SwapMethod, exact_run, swap_report_on};
    use softmax_kernel_lab::numerics::attention::methods::MethodId;
    fn now() -> f64 {
        0.0
    }
    let model = TextModel::from_checked_bytes(model_bytes()).expect("the model loads");
    let mut config = ExperimentConfig::default();
    config.attention.features = 16;
    let swap = Swap {
        method: SwapMethod::Registry(MethodId::from_id("prf-pos").expect("a method")),
        layers: (0..6).collect(),
        draws: 2,
    };
    let without_times = |mut report: SwapReport| {
        report.cost.forward_ms = 0.0;
        report.cost.exact_forward_ms = 0.0;
        report
    };
    let text = "Split by rows, each worker keeps the whole exact run of the text for its swap.";
    for (text, count) in [(text, 2), (text, 3), ("hi", 4)] {
        let separate = exact_run(&model, text, now).expect("one worker's exact run");
        let expected =
            without_times(swap_report_on(&model, &separate, &config, &swap, now).unwrap());
        assert!(expected.cosine.is_some(), "{expected:?}");
        let mut parts: Vec<TextPart> = (0..count)
            .map(|index| TextPart::start(&model, text, index, count).expect("the part starts"))
            .collect();
        let others = |messages: &[softmax_kernel_lab::lab::models::split::PeerMessage],
                      me: usize| {
            let mut rest: Vec<_> = messages
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != me)
                .map(|(_, m)| m.clone())
                .collect();
            rest.reverse();
            rest
        };
        for _ in 0..parts[0].layers() {
            let sent: Vec<_> = parts.iter_mut().map(|p| p.project().unwrap()).collect();
            for (me, part) in parts.iter_mut().enumerate() {
                part.finish_layer(others(&sent, me)).unwrap();
            }
        }
        let outputs: Vec<_> = parts.iter_mut().map(|p| p.finish().unwrap()).collect();
        let states: Vec<_> = parts.iter().map(|p| p.states()).collect();
        for (me, part) in parts.into_iter().enumerate() {
            let (exact, _) = part
                .exact_and_heads(others(&outputs, me), others(&states, me), 12.5)
                .expect("the parts join");
            assert_eq!(
                exact.embedding(),
                separate.embedding(),
                "{count} parts, part {me}"
            );
            let report = swap_report_on(&model, &exact, &config, &swap, now).unwrap();
            assert_eq!(without_times(report), expected, "{count} parts, part {me}");
        }
    }
}
