//! The model worker (feature `text-model`): served like the others ([`super::serve`]), it
//! fetches the model file itself (so that the page's thread never holds or copies its 46 MB),
//! posting its progress ([`ModelSetup`]), then answers the text view's requests
//! ([`ModelWorkspace::respond`]). The model workers of a pool are connected pairwise by
//! `MessagePort`s ([`WorkerRequest::Connect`]), over which the parts of a split request talk
//! (`peers`): the Hedgehog training, split by heads ([`train_split`]), and kept for later
//! visits in Cache Storage ([`keep_or_train`]).

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent, MessagePort};

use super::fetch::stream_file;
use super::peers::Peers;
use super::{Reply, message_bytes, serve};
use crate::lab::models::board::{BoardLayout, board_holds, worth_splitting};
use crate::lab::models::learned_map::{KeptTraining, LearnedHeads, kept_training_key};
use crate::lab::models::loader::ModelLoader;
use crate::lab::models::protocol::{HedgehogJob, MODEL_URL, ModelAnswer, ModelRequest, ModelSetup};
use crate::lab::models::shipped::{SHIPPED_ASSET_PATH, ShippedSource};
use crate::lab::models::split::{PeerMessage, TextPart};
use crate::lab::models::swap::forward_with_exact;
use crate::lab::pool::PartOf;
use crate::lab::pool::model_worker::ModelWorkspace;
use crate::lab::pool::{TaskResponse, WorkerRequest, WorkerResponse, decode, encode};
use crate::numerics::bert::MODEL_SHA256;

/// A model worker's state: the model's workspace and the ports to the other model workers.
#[derive(Default)]
struct ModelWorker {
    workspace: ModelWorkspace,
    peers: Peers,
}

fn now() -> f64 {
    js_sys::global()
        .dyn_into::<DedicatedWorkerGlobalScope>()
        .ok()
        .and_then(|scope| scope.performance())
        .map_or(0.0, |p| p.now())
}

/// The model worker: listens, then fetches and loads the model, saying how far it got.
pub fn start_model() {
    let mut worker = ModelWorker::default();
    worker.workspace.set_stored_heads(super::stored_heads());
    worker.workspace.set_shipped(ShippedSource::read_by(|| {
        super::fetch_now(SHIPPED_ASSET_PATH)
    }));
    let Some((state, reply)) = serve(worker, on_message) else {
        return;
    };
    wasm_bindgen_futures::spawn_local(async move {
        let setup = match fetch_with_progress(MODEL_URL, &reply).await {
            Ok((loader, last_byte_at)) => {
                state.borrow_mut().workspace.load(loader, last_byte_at, now)
            }
            Err(message) => ModelSetup::Failed(message),
        };
        reply.send(&WorkerResponse::Setup(setup));
    });
}

fn on_message(state: &Rc<RefCell<ModelWorker>>, event: MessageEvent, reply: &Reply) {
    let request = match decode::<WorkerRequest>(&message_bytes(&event)) {
        Ok(request) => request,
        Err(error) => {
            reply.send(&WorkerResponse::Task(TaskResponse {
                id: 0,
                output: Err(error),
            }));
            return;
        }
    };
    if let WorkerRequest::Connect { peer } = request {
        match event.ports().get(0).dyn_into::<MessagePort>() {
            Ok(port) => state.borrow_mut().peers.connect(peer, port),
            Err(_) => reply.send(&WorkerResponse::Setup(ModelSetup::Failed(
                "a peer's port came without a port".into(),
            ))),
        }
        return;
    }
    // The Hedgehog training, kept from an earlier visit or trained: on several workers each
    // trains its share of the heads, then the shares go to every part over the ports, so that
    // each worker holds every map.
    if let WorkerRequest::Model {
        id,
        part,
        request: ModelRequest::TrainHedgehog { job, reuse },
    } = &request
    {
        let (state, reply) = (state.clone(), reply.clone());
        let (id, part, job, reuse) = (*id, part.clone(), job.clone(), *reuse);
        wasm_bindgen_futures::spawn_local(async move {
            keep_or_train(&state, &reply, id, &part, &job, reuse).await;
        });
        return;
    }
    // A text on several workers: each runs its share of the rows, and they swap keys and
    // values per layer, so that each ends with the whole run and the text's heads.
    if let WorkerRequest::Model {
        id,
        part,
        request: ModelRequest::Run { text },
    } = &request
        && part.slots.len() > 1
    {
        let (state, reply) = (state.clone(), reply.clone());
        let (id, part, text) = (*id, part.clone(), text.clone());
        wasm_bindgen_futures::spawn_local(async move {
            if let Err(message) = text_split(&state, &reply, id, &part, &text).await {
                reply.send(&WorkerResponse::Model {
                    id,
                    answer: ModelAnswer::Failed(message),
                });
            }
        });
        return;
    }
    let mut update = |response: WorkerResponse| reply.send(&response);
    let response = state
        .borrow_mut()
        .workspace
        .respond(request, now, &mut update);
    reply.send(&response);
}

/// This worker's part of a text's forward split by rows (see [`on_message`]); answers the
/// request itself (part 0 with the text's run, the others [`ModelAnswer::Helped`]) as soon as
/// the run is known, then lays out and keeps the text's heads (the worker takes no other
/// request meanwhile: this runs on). An error before the answer is returned, for the caller to
/// answer with.
async fn text_split(
    state: &Rc<RefCell<ModelWorker>>,
    reply: &Reply,
    id: u64,
    part: &PartOf,
    text: &str,
) -> Result<(), String> {
    let model = state
        .borrow()
        .workspace
        .model()
        .ok_or("the model is not loaded yet")?;
    let start = now();
    let answer = |answer: ModelAnswer| reply.send(&WorkerResponse::Model { id, answer });
    let encoded = model.encode(text).map_err(|e| e.to_string())?;
    let count = part.slots.len();
    // Every part reads the same tokens and the same boards' state, so all take the same path.
    let shared = state.borrow().peers.share_boards(part)
        && board_holds(&BoardLayout::default(), encoded.ids.len(), count);
    if !worth_splitting(encoded.ids.len(), shared) {
        // The first part runs the short text whole; the others leave it the cores (they
        // compute its heads if the attention view asks them for a part on it).
        if part.index > 0 {
            answer(ModelAnswer::Helped);
            return Ok(());
        }
        // The text's exact run comes from the same forward: this worker's jobs of the text's
        // swap start without running it again.
        let (exact, qkv) =
            forward_with_exact(&model, text, &encoded.ids, now).map_err(|e| e.to_string())?;
        let embedding = exact.embedding().to_vec();
        let run = model.run_of(text, encoded.clone(), embedding.clone());
        answer(ModelAnswer::Ran {
            run,
            forward_ms: now() - start,
        });
        let mut worker = state.borrow_mut();
        worker.workspace.keep_exact_run(exact);
        match model.text_run_of(text, encoded, embedding, qkv) {
            Ok((_, heads)) => worker.workspace.keep_text_heads(text, heads),
            Err(error) => web_sys::console::error_1(
                &format!("model worker: the text's heads: {error}").into(),
            ),
        }
        return Ok(());
    }
    let mut share = TextPart::from_encoded(&model, text, encoded, part.index, count)
        .map_err(|e| e.to_string())?;
    // Step `layer` carries a layer's keys and values, step `layers` the outputs.
    let exchange = |step: usize, message: PeerMessage| {
        let state = state.clone();
        let part = part.clone();
        async move {
            let bytes = encode(&message)?;
            let shares = state.borrow().peers.exchange(
                part.request,
                step as u32,
                &part,
                &bytes,
                shared,
                &now,
            )?;
            shares
                .await?
                .iter()
                .map(|(_, body)| decode::<PeerMessage>(body))
                .collect::<Result<Vec<_>, String>>()
        }
    };
    let layers = share.layers();
    for layer in 0..layers {
        let mine = share.project().map_err(|e| e.to_string())?;
        let others = exchange(layer, mine).await?;
        share.finish_layer(others).map_err(|e| e.to_string())?;
    }
    let mine = share.finish().map_err(|e| e.to_string())?;
    let others = exchange(layers, mine).await?;
    let run = share.run(&others).map_err(|e| e.to_string())?;
    let forward_ms = now() - start;
    answer(if part.index == 0 {
        ModelAnswer::Ran { run, forward_ms }
    } else {
        ModelAnswer::Helped
    });
    // Every worker ends with the whole forward: its swap's exact run comes from it (no worker
    // runs the text again), and the text's heads. The layers' states travel after the answer,
    // so that it does not wait for them.
    let states = match exchange(layers + 1, share.states()).await {
        Ok(states) => states,
        Err(error) => {
            web_sys::console::error_1(
                &format!("model worker: the split text's states: {error}").into(),
            );
            return Ok(());
        }
    };
    match share.exact_and_heads(others, states, forward_ms) {
        Ok((exact, heads)) => {
            let mut worker = state.borrow_mut();
            worker.workspace.keep_exact_run(exact);
            worker.workspace.keep_text_heads(text, heads);
        }
        Err(error) => web_sys::console::error_1(
            &format!("model worker: the split text's heads: {error}").into(),
        ),
    }
    Ok(())
}

/// Answers a Hedgehog training (see [`on_message`]): with `reuse`, with the maps kept from an
/// earlier visit when Cache Storage has them and their check holds with this build and model,
/// or else with the maps shipped with the lab when they are the job's and their check holds
/// (part 0 answers the record, curve and all); otherwise by training them (split by heads over
/// the request's parts), after which part 0 keeps them for later visits. Every part checks for
/// itself (each worker holds every map). A context without Cache Storage (a page not served
/// from a secure origin) does not keep them.
async fn keep_or_train(
    state: &Rc<RefCell<ModelWorker>>,
    reply: &Reply,
    id: u64,
    part: &PartOf,
    job: &HedgehogJob,
    reuse: bool,
) {
    let key = kept_training_key(job, MODEL_SHA256);
    let kept = if reuse {
        cache_get(&key)
            .await
            .and_then(|bytes| decode::<KeptTraining>(&bytes).ok())
    } else {
        None
    };
    let kept_answer = kept
        .and_then(|kept| state.borrow_mut().workspace.keep_kept_training(&kept))
        .or_else(|| {
            reuse
                .then(|| state.borrow_mut().workspace.keep_shipped_training(job))
                .flatten()
        });
    if let Some(answer) = kept_answer {
        // The record carries the curve (the page draws a training's record's curve), so no
        // points are posted one by one.
        let answer = if part.index > 0 {
            ModelAnswer::Helped
        } else {
            answer
        };
        reply.send(&WorkerResponse::Model { id, answer });
        return;
    }
    let (answer, parts) = match train_split(state, reply, id, part, job).await {
        Ok(trained) => trained,
        Err(message) => (ModelAnswer::Failed(message), Vec::new()),
    };
    let trained = matches!(answer, ModelAnswer::Trained(Ok(_)));
    reply.send(&WorkerResponse::Model { id, answer });
    if trained && part.index == 0 {
        let kept = state.borrow().workspace.kept_training(&parts);
        match kept.and_then(|kept| encode(&kept)) {
            Ok(bytes) => cache_put(&key, bytes).await,
            Err(message) => web_sys::console::warn_1(
                &format!("model worker: the Hedgehog maps are not kept: {message}").into(),
            ),
        }
    }
}

/// Calls `method` of the JavaScript object `target` with `args`, awaiting the promise it gives.
async fn call_async(target: &JsValue, method: &str, args: &[&JsValue]) -> Option<JsValue> {
    let function = js_sys::Reflect::get(target, &method.into())
        .ok()?
        .dyn_into::<js_sys::Function>()
        .ok()?;
    let array = js_sys::Array::new();
    for arg in args {
        array.push(arg);
    }
    let promise = function
        .apply(target, &array)
        .ok()?
        .dyn_into::<js_sys::Promise>()
        .ok()?;
    JsFuture::from(promise).await.ok()
}

/// The browser's Cache Storage of the kept trainings, when this context has one.
async fn kept_cache() -> Option<JsValue> {
    let caches = js_sys::Reflect::get(&js_sys::global(), &"caches".into()).ok()?;
    if caches.is_undefined() || caches.is_null() {
        return None;
    }
    call_async(&caches, "open", &[&KEPT_CACHE.into()]).await
}

/// The kept entry `key`, if there is one.
async fn cache_get(key: &str) -> Option<Vec<u8>> {
    let cache = kept_cache().await?;
    let response = call_async(&cache, "match", &[&key.into()]).await?;
    if response.is_undefined() {
        return None;
    }
    let buffer = call_async(&response, "arrayBuffer", &[]).await?;
    Some(js_sys::Uint8Array::new(&buffer).to_vec())
}

/// Keeps `bytes` as the entry `key` (a quota or a context without Cache Storage: not kept).
async fn cache_put(key: &str, mut bytes: Vec<u8>) {
    let Some(cache) = kept_cache().await else {
        return;
    };
    let Ok(response) = web_sys::Response::new_with_opt_u8_array(Some(bytes.as_mut_slice())) else {
        return;
    };
    if call_async(&cache, "put", &[&key.into(), &response])
        .await
        .is_none()
    {
        web_sys::console::warn_1(&"model worker: the Hedgehog maps could not be kept".into());
    }
}

/// The Cache Storage cache of the kept Hedgehog trainings.
const KEPT_CACHE: &str = "softmax-kernel-lab-hedgehog-maps";

/// This worker's part of a training split by heads (see [`keep_or_train`]): its answer (part
/// 0's is the training's record, the others' [`ModelAnswer::Helped`]) and every part's maps.
async fn train_split(
    state: &Rc<RefCell<ModelWorker>>,
    reply: &Reply,
    id: u64,
    part: &PartOf,
    job: &HedgehogJob,
) -> Result<(ModelAnswer, Vec<LearnedHeads>), String> {
    let count = part.slots.len();
    let mine = {
        // The points of part 0's heads stand for the curve while it trains.
        let mut post = |answer: &ModelAnswer| {
            if part.index == 0 {
                reply.send(&WorkerResponse::Update {
                    id,
                    update: answer.clone(),
                });
            }
        };
        state
            .borrow()
            .workspace
            .train_part(job, (part.index, count), now, &mut post)?
    };
    let bytes = encode(&mine)?;
    // The request's handle is the same in every part: the shares' tag.
    let request = part.request;
    // Over the ports: the parts finish their heads at different times, and a worker waiting
    // for the others keeps its event loop.
    let shares = state
        .borrow()
        .peers
        .exchange(request, 0, part, &bytes, false, &now)?;
    let mut parts = vec![mine];
    for (_, body) in shares.await? {
        parts.push(decode::<LearnedHeads>(&body)?);
    }
    let answer = state.borrow_mut().workspace.keep_trained_parts(&parts);
    let answer = match answer {
        ModelAnswer::Trained(Err(message)) => ModelAnswer::Failed(message),
        _ if part.index > 0 => ModelAnswer::Helped,
        answer => answer,
    };
    Ok((answer, parts))
}

/// Fetches `url` chunk by chunk into a [`ModelLoader`], which hashes and reads each chunk as it
/// arrives, posting a progress update about every megabyte; gives the loader and when the last
/// byte arrived (the worker's clock, ms).
async fn fetch_with_progress(url: &str, reply: &Reply) -> Result<(ModelLoader, f64), String> {
    let progress = |loaded: u64, total: Option<u64>| {
        reply.send(&WorkerResponse::Setup(ModelSetup::Progress {
            loaded,
            total,
        }));
    };
    let mut loader = ModelLoader::new();
    let streamed = stream_file(
        url,
        "the model file",
        &mut |array| loader.push_with(array.length() as usize, |slot| array.copy_to(slot)),
        &progress,
    )
    .await?;
    Ok((loader, streamed.last_byte_at))
}
