//! The language model's worker (feature `text-model`; the `model-worker` build started with
//! `?lm` in its URL, so no other build is needed): it fetches the GGUF file itself with its
//! progress ([`LmFromWorker::Progress`]), checks and reads it ([`LlamaModel::load`]), then
//! scores each text the page sends ([`score`]), computes the draws of its swap the page hands
//! it ([`swap_draw`]) and the per-layer chart, and answers with the request's id. The page
//! keeps only the newest request's answers.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent, MessagePort};

use sha2::{Digest, Sha256};

use super::fetch::stream_file;
use super::peers::Peers;
use super::{Reply, message_bytes, serve};
use crate::lab::models::smollm::transfer::{
    LayerTraining, TextStates, judge, transfer_ids, transfer_settings,
};
use crate::lab::models::smollm::{
    ContinuationEnd, ContinuationEvent, Decoding, GeneratedToken, Generation, LM_FILE_BYTES,
    LM_FILE_FROM_PAGE, LM_FILE_MESSAGE, LM_HEADS_WORKER, LM_URL, LayerSweep, LmFromWorker, LmJob,
    LmToWorker, Share, TrainedLayer, TrainingEvent, TransferVerdict, chart_swap, lm_tokens, score,
    swap_draw,
};
use crate::lab::pool::{decode, encode};
use crate::numerics::llama::{ExactRun, LlamaModel};

mod split;
use split::{on_split_draw, on_split_score};

/// The worker's model, once loaded, and the per-layer chart under way.
#[derive(Default)]
struct LmWorker {
    /// Shared with a split draw under way, which holds it across its exchanges.
    model: Option<Rc<LlamaModel>>,
    /// The ports to the other language model worker (split draws).
    peers: Peers,
    /// The last text's exact forward with its hidden states: a chart of that text starts from it.
    exact: Option<ExactRun>,
    chart: Option<Chart>,
    /// The continuations under way (at most one of each decoding), stepped before the chart.
    continuations: Vec<Continuing>,
    /// The layer being trained for a transfer, stepped after the continuations.
    training: Option<Training>,
    /// The transfer text's states entering its layers, and the last held-out text's (when it
    /// is not the text of `exact`), kept for the next layer's training.
    transfer_text: Option<TextStates>,
    held_out: Option<TextStates>,
    /// Whether the loop stepping the chart and the continuations is scheduled.
    stepping: bool,
}

/// A continuation being made, one token per turn of the worker.
struct Continuing {
    id: u64,
    decoding: Decoding,
    generation: Generation,
    last: Option<GeneratedToken>,
}

/// One layer's transfer training, one Adam step per turn of the worker.
struct Training {
    id: u64,
    run: LayerTraining,
    started: f64,
}

/// A per-layer chart being computed, one draw of one layer per turn of the worker.
struct Chart {
    id: u64,
    sweep: LayerSweep,
    started: f64,
}

pub(super) fn now() -> f64 {
    js_sys::global()
        .dyn_into::<DedicatedWorkerGlobalScope>()
        .ok()
        .and_then(|scope| scope.performance())
        .map_or(0.0, |p| p.now())
}

fn send(reply: &Reply, message: &LmFromWorker) {
    match encode(message) {
        Ok(bytes) => reply.bytes(&bytes),
        Err(error) => web_sys::console::error_1(&format!("lm worker: {error}").into()),
    }
}

/// Whether this worker's address (`…_loader.js?lm&…`) has the parameter `part`.
pub(super) fn address_has(part: &str) -> bool {
    js_sys::Reflect::get(&js_sys::global(), &"location".into())
        .and_then(|location| js_sys::Reflect::get(&location, &"search".into()))
        .ok()
        .and_then(|search| search.as_string())
        .is_some_and(|search| search.trim_start_matches('?').split('&').any(|p| p == part))
}

/// Whether this worker was started as the language model's (`…_loader.js?lm`).
pub fn started_as_lm() -> bool {
    address_has("lm")
}

/// Whether it was started as one of the attention view's workers on the language model's
/// heads (`…_loader.js?lm&heads`).
pub fn started_as_lm_heads() -> bool {
    address_has("lm") && address_has(LM_HEADS_WORKER)
}

/// The worker: listens, then fetches and loads the model, saying how far it got.
pub fn start_lm() {
    let Some((state, reply)) = serve(LmWorker::default(), on_message) else {
        return;
    };
    if address_has(LM_FILE_FROM_PAGE) {
        // The chart's second worker: the page hands it the first worker's file.
        return;
    }
    wasm_bindgen_futures::spawn_local(async move {
        let progress = |loaded, total| send(&reply, &LmFromWorker::Progress { loaded, total });
        let message = match fetch_with_progress(LM_URL, &progress).await {
            Ok((bytes, digest, last_byte_at)) => {
                let size = bytes.len() as u64;
                match LlamaModel::load_hashed(bytes, digest) {
                    Ok(model) => {
                        state.borrow_mut().model = Some(Rc::new(model));
                        LmFromWorker::Loaded {
                            bytes: size,
                            load_ms: now() - last_byte_at,
                        }
                    }
                    Err(error) => LmFromWorker::Failed(error.to_string()),
                }
            }
            Err(message) => LmFromWorker::Failed(message),
        };
        send(&reply, &message);
    });
}

fn on_message(state: &Rc<RefCell<LmWorker>>, event: MessageEvent, reply: &Reply) {
    let file = js_sys::Reflect::get(&event.data(), &LM_FILE_MESSAGE.into())
        .ok()
        .and_then(|file| file.dyn_into::<js_sys::Uint8Array>().ok());
    if let Some(file) = file {
        let (start, bytes) = (now(), file.to_vec());
        let size = bytes.len() as u64;
        let message = match LlamaModel::load(bytes) {
            Ok(model) => {
                state.borrow_mut().model = Some(Rc::new(model));
                LmFromWorker::Loaded {
                    bytes: size,
                    load_ms: now() - start,
                }
            }
            Err(error) => LmFromWorker::Failed(error.to_string()),
        };
        send(reply, &message);
        return;
    }
    let request = match decode::<LmToWorker>(&message_bytes(&event)) {
        Ok(request) => request,
        Err(error) => {
            web_sys::console::error_1(&format!("lm worker: {error}").into());
            return;
        }
    };
    match request {
        LmToWorker::Connect { peer } => match event.ports().get(0).dyn_into::<MessagePort>() {
            Ok(port) => state.borrow_mut().peers.connect(peer, port),
            Err(_) => web_sys::console::error_1(&"lm worker: a peer came without a port".into()),
        },
        LmToWorker::SplitDraw {
            id,
            job,
            draw,
            part,
        } => {
            stop_for_a_text(state);
            on_split_draw(state.clone(), reply.clone(), (id, job, draw), part);
        }
        LmToWorker::SplitScore { id, job, part } => {
            stop_for_a_text(state);
            on_split_score(state.clone(), reply.clone(), (id, job), part);
        }
        LmToWorker::Score { id, job } => {
            let mut worker = state.borrow_mut();
            // A new text or setting: the chart and continuations of the last one are not
            // wanted any more.
            worker.chart = None;
            worker.continuations.clear();
            let report = match &worker.model {
                Some(model) => match score(model, &job, now) {
                    Ok((report, exact)) => {
                        worker.exact = Some(exact);
                        Ok(Box::new(report))
                    }
                    Err(error) => Err(error.to_string()),
                },
                None => Err("the language model is not loaded yet".to_string()),
            };
            send(reply, &LmFromWorker::Scored { id, report });
        }
        LmToWorker::SwapDraw { id, job, draw } => {
            let mut worker = state.borrow_mut();
            worker.chart = None;
            worker.continuations.clear();
            let result = match &worker.model {
                Some(model) => swap_draw(model, &job, draw, now, worker.exact.as_ref())
                    .map_err(|e| e.to_string()),
                None => Err("the language model is not loaded yet".to_string()),
            };
            send(reply, &LmFromWorker::SwapDrawn { id, draw, result });
        }
        LmToWorker::StopChart => state.borrow_mut().chart = None,
        LmToWorker::StopTraining => state.borrow_mut().training = None,
        LmToWorker::Train { id, job, layer } => {
            let (started, mut worker) = (now(), state.borrow_mut());
            match start_training(&mut worker, &job, layer) {
                Ok(run) => {
                    worker.training = Some(Training { id, run, started });
                    if !worker.stepping {
                        worker.stepping = true;
                        step_charts(state.clone(), reply.clone());
                    }
                }
                Err(error) => {
                    worker.training = None;
                    let event = TrainingEvent::Failed(error);
                    send(reply, &LmFromWorker::Training { id, layer, event });
                }
            }
        }
        LmToWorker::Judge { id, job, layers } => {
            let result = judge_transfer(&state.borrow(), &job, &layers);
            send(reply, &LmFromWorker::Judged { id, result });
        }
        LmToWorker::StopContinuing => state.borrow_mut().continuations.clear(),
        LmToWorker::Continue {
            id,
            job,
            decoding,
            trained,
        } => {
            let mut worker = state.borrow_mut();
            worker.continuations.retain(|c| c.decoding != decoding);
            let started = match &worker.model {
                Some(model) => Generation::start(model, &job, (decoding, &trained), now),
                None => Err(crate::numerics::llama::LmError::Replacement(
                    "the language model is not loaded yet".into(),
                )),
            };
            let event = match started {
                Ok((generation, start)) => {
                    worker.continuations.push(Continuing {
                        id,
                        decoding,
                        generation,
                        last: None,
                    });
                    if !worker.stepping {
                        worker.stepping = true;
                        step_charts(state.clone(), reply.clone());
                    }
                    ContinuationEvent::Started(start)
                }
                Err(error) => ContinuationEvent::Ended(ContinuationEnd::Failed(error.to_string())),
            };
            let message = LmFromWorker::Continuing {
                id,
                decoding,
                event,
            };
            send(reply, &message);
        }
        LmToWorker::SendFile => {
            if let Some(model) = &state.borrow().model {
                post_file(model.file_bytes());
            }
        }
        LmToWorker::PerLayer { id, job, share } => {
            let started = now();
            let mut worker = state.borrow_mut();
            match start_chart(&mut worker, &job, share) {
                Ok(sweep) => {
                    worker.chart = Some(Chart { id, sweep, started });
                    if !worker.stepping {
                        worker.stepping = true;
                        step_charts(state.clone(), reply.clone());
                    }
                }
                Err(error) => {
                    worker.chart = None;
                    let ms = now() - started;
                    send(
                        reply,
                        &LmFromWorker::LayersEnded {
                            id,
                            ms,
                            error: Some(error),
                        },
                    );
                }
            }
        }
    }
}

/// A new text or setting: the chart and continuations of the last one are not wanted any
/// more.
fn stop_for_a_text(state: &Rc<RefCell<LmWorker>>) {
    let mut worker = state.borrow_mut();
    worker.chart = None;
    worker.continuations.clear();
}

/// `layer`'s training for `job`'s transfer: the lab's transfer text, evaluated on the job's
/// text, each from its states entering the layer (kept for the next layer; the held-out text's
/// are the kept exact run's when it is that text).
fn start_training(
    worker: &mut LmWorker,
    job: &LmJob,
    layer: usize,
) -> Result<LayerTraining, String> {
    let LmWorker {
        model,
        exact,
        transfer_text,
        held_out,
        ..
    } = worker;
    let model = model
        .as_ref()
        .ok_or("the language model is not loaded yet")?;
    let error = |e: crate::numerics::llama::LmError| e.to_string();
    let training = transfer_ids(model).map_err(error)?;
    let ids = lm_tokens(model, &job.text).map_err(error)?;
    let reach = |kept: &Option<TextStates>, ids: &[u32]| {
        kept.as_ref()
            .is_some_and(|t| t.ids == ids && t.states.len() > layer)
    };
    // Up to the deepest layer the job trains: its later layers find their states kept.
    let last = job
        .config
        .attention
        .lm_train
        .iter()
        .fold(layer, |a, &b| a.max(b));
    if !reach(transfer_text, &training) {
        *transfer_text = Some(TextStates::new(model, &training, last).map_err(error)?);
    }
    let from_run = exact.as_ref().filter(|run| run.ids == ids);
    if from_run.is_none() && !reach(held_out, &ids) {
        *held_out = Some(TextStates::new(model, &ids, last).map_err(error)?);
    }
    let train_view = transfer_text.as_ref().map(TextStates::view);
    let held_view = match from_run {
        Some(run) => Some((run.states.as_slice(), &run.rope)),
        None => held_out.as_ref().map(TextStates::view),
    };
    let (Some(train_view), Some(held_view)) = (train_view, held_view) else {
        return Err("the texts' states are missing".into());
    };
    let settings = transfer_settings(&job.config);
    LayerTraining::new(model, (train_view, held_view), layer, &settings).map_err(error)
}

/// The job's text exact, zero-shot and with `layers`' trained maps.
fn judge_transfer(
    worker: &LmWorker,
    job: &LmJob,
    layers: &[TrainedLayer],
) -> Result<TransferVerdict, String> {
    let model = worker
        .model
        .as_ref()
        .ok_or("the language model is not loaded yet")?;
    let ids = lm_tokens(model, &job.text).map_err(|e| e.to_string())?;
    let settings = transfer_settings(&job.config);
    judge(model, &ids, &settings, layers, &now).map_err(|e| e.to_string())
}

/// One step of the training under way: its point, and its maps once done (then dropped).
fn step_training(slot: &mut Option<Training>) -> Vec<LmFromWorker> {
    let Some(training) = slot.as_mut() else {
        return Vec::new();
    };
    let (id, layer) = (training.id, training.run.layer());
    let message = |event| LmFromWorker::Training { id, layer, event };
    let mut messages = Vec::new();
    match training.run.step() {
        Ok(Some(point)) => messages.push(message(TrainingEvent::Point(point))),
        Ok(None) => {}
        Err(error) => {
            *slot = None;
            return vec![message(TrainingEvent::Failed(error.to_string()))];
        }
    }
    if training.run.is_done()
        && let Some(done) = slot.take()
    {
        let trained = done.run.finish(now() - done.started);
        messages.push(message(TrainingEvent::Trained(trained)));
    }
    messages
}

/// The sweep of `job`'s chart, its text's exact run made unless it is the one kept.
fn start_chart(worker: &mut LmWorker, job: &LmJob, share: Share) -> Result<LayerSweep, String> {
    let model = worker
        .model
        .as_ref()
        .ok_or("the language model is not loaded yet")?;
    let swap = chart_swap(&job.config, model.config.layers)
        .ok_or("no method is chosen to swap into each layer")?;
    let ids = lm_tokens(model, &job.text).map_err(|e| e.to_string())?;
    if worker.exact.as_ref().is_none_or(|run| run.ids != ids) {
        worker.exact = Some(model.exact_run(&ids, 0).map_err(|e| e.to_string())?);
    }
    Ok(LayerSweep::new(model, &job.config, &swap, share))
}

/// Steps the continuations under way, one token each per turn of the worker's event loop (so
/// that a new request is read between two tokens), then the training, one step per turn, then
/// the chart, one draw per turn, until nothing is left.
fn step_charts(state: Rc<RefCell<LmWorker>>, reply: Reply) {
    wasm_bindgen_futures::spawn_local(async move {
        loop {
            next_turn().await;
            let mut guard = state.borrow_mut();
            let LmWorker {
                model,
                exact,
                chart,
                continuations,
                training,
                stepping,
                ..
            } = &mut *guard;
            let Some(model) = model.as_ref() else {
                *stepping = false;
                return;
            };
            if !continuations.is_empty() {
                for message in step_continuations(model, continuations) {
                    send(&reply, &message);
                }
                continue;
            }
            if training.is_some() {
                for message in step_training(training) {
                    send(&reply, &message);
                }
                continue;
            }
            let (Some(exact), Some(under_way)) = (exact.as_ref(), chart.as_mut()) else {
                *stepping = false;
                return;
            };
            let (id, started) = (under_way.id, under_way.started);
            let ended = match under_way.sweep.step(model, exact) {
                Ok(bar) => {
                    if let Some(bar) = bar {
                        let ms = now() - started;
                        send(&reply, &LmFromWorker::LayerBar { id, bar, ms });
                    }
                    under_way.sweep.is_done().then_some(None)
                }
                Err(error) => Some(Some(error.to_string())),
            };
            if let Some(error) = ended {
                *chart = None;
                let ms = now() - started;
                send(&reply, &LmFromWorker::LayersEnded { id, ms, error });
            }
        }
    });
}

/// One token of each continuation under way, and the end of those that are done (then
/// dropped).
fn step_continuations(
    model: &LlamaModel,
    continuations: &mut Vec<Continuing>,
) -> Vec<LmFromWorker> {
    let mut messages = Vec::new();
    continuations.retain_mut(|c| {
        let event = if c.generation.is_done() {
            ContinuationEvent::Ended(c.generation.end(c.last.as_ref(), model))
        } else {
            c.generation.step(model, now)
        };
        let ended = matches!(event, ContinuationEvent::Ended(_));
        if let ContinuationEvent::Token(token) = &event {
            c.last = Some(token.clone());
        }
        messages.push(LmFromWorker::Continuing {
            id: c.id,
            decoding: c.decoding,
            event,
        });
        !ended
    });
    messages
}

/// Posts a copy of the model's file to the page as `{ lmFile: Uint8Array }`, its buffer
/// transferred (the page passes it on without a copy).
fn post_file(bytes: &[u8]) {
    let Ok(scope) = js_sys::global().dyn_into::<DedicatedWorkerGlobalScope>() else {
        return;
    };
    let array = js_sys::Uint8Array::from(bytes);
    let message = js_sys::Object::new();
    let posted = js_sys::Reflect::set(&message, &LM_FILE_MESSAGE.into(), &array).and_then(|_| {
        scope.post_message_with_transfer(&message, &js_sys::Array::of1(&array.buffer()))
    });
    if let Err(error) = posted {
        web_sys::console::error_2(&"lm worker: cannot post the file".into(), &error);
    }
}

/// Resolves on the worker's next turn (a zero timeout), after the messages already queued.
async fn next_turn() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Ok(scope) = js_sys::global().dyn_into::<DedicatedWorkerGlobalScope>() {
            let _ = scope.set_timeout_with_callback(&resolve);
        } else {
            let _ = resolve.call0(&JsValue::UNDEFINED);
        }
    });
    let _ = JsFuture::from(promise).await;
}

/// The file's bytes, telling `progress` (bytes so far, of the total when the server says)
/// every megabyte, hashed as they arrive (the SHA-256 of 98 MB is then done when the download
/// is); with the digest and the time its last byte came.
pub(super) async fn fetch_with_progress(
    url: &str,
    progress: &dyn Fn(u64, Option<u64>),
) -> Result<(Vec<u8>, String, f64), String> {
    let mut bytes: Vec<u8> = Vec::with_capacity(LM_FILE_BYTES as usize);
    let mut hasher = Sha256::new();
    let streamed = stream_file(
        url,
        "the language model file",
        &mut |array| {
            let start = bytes.len();
            bytes.resize(start + array.length() as usize, 0);
            array.copy_to(&mut bytes[start..]);
            hasher.update(&bytes[start..]);
        },
        progress,
    )
    .await?;
    debug_assert_eq!(streamed.loaded, bytes.len() as u64);
    let digest = crate::numerics::bert::weights::digest_hex(&hasher.finalize());
    Ok((bytes, digest, streamed.last_byte_at))
}
