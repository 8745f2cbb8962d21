//! The worker side of the pools (WebAssembly only): each message is a postcard-encoded
//! [`WorkerRequest`](crate::lab::tasks::WorkerRequest); the answer goes back the same way.
//! Two workers: `kernel-worker` ([`start`]: the kernel view's tasks, the probe, the data panel,
//! [`handle_kernel_request`], built without the optimised A) and `full-worker` ([`start_full`]:
//! every request, [`handle_request`]), so that the first view never downloads the attention
//! math or the optimiser.
//! All the work is in those handlers; this file only wires one to `onmessage`.

use std::cell::RefCell;

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

use crate::lab::tasks::{Workspace, handle_kernel_request, handle_request};

/// The word a worker posts once it listens, so that the page never sends into the void.
pub const READY: &str = "ready";

/// The kernel worker: installs its message handler and tells the page it is ready.
pub fn start() {
    serve(handle_kernel_request);
}

/// The full worker: installs its message handler and tells the page it is ready.
pub fn start_full() {
    serve(handle_request);
}

/// The model worker (feature `text-model`): fetches the model file itself (so that the page's
/// thread never holds or copies its 46 MB), posting its progress, then runs it on each text.
#[cfg(feature = "text-model")]
pub fn start_model() {
    use std::rc::Rc;

    use crate::lab::model_worker::ModelWorkspace;
    use crate::lab::text_model::{ModelAnswer, ModelRequest};

    fn now() -> f64 {
        js_sys::global()
            .dyn_into::<DedicatedWorkerGlobalScope>()
            .ok()
            .and_then(|scope| scope.performance())
            .map_or(0.0, |p| p.now())
    }
    let Ok(scope) = js_sys::global().dyn_into::<DedicatedWorkerGlobalScope>() else {
        return;
    };
    let post = {
        let scope = scope.clone();
        move |answer: &ModelAnswer| {
            let array = js_sys::Uint8Array::from(answer.encode().as_slice());
            let transfer = js_sys::Array::of1(&array.buffer());
            if let Err(error) = scope.post_message_with_transfer(&array, &transfer) {
                web_sys::console::error_2(&"model worker: cannot answer".into(), &error);
            }
        }
    };
    let workspace = Rc::new(RefCell::new(ModelWorkspace::default()));
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        let bytes = js_sys::Uint8Array::new(&event.data()).to_vec();
        match postcard::from_bytes::<ModelRequest>(&bytes) {
            Err(e) => post(&ModelAnswer::Failed(format!("unreadable message: {e}"))),
            Ok(ModelRequest::Load { url }) => {
                let (workspace, post) = (workspace.clone(), post.clone());
                wasm_bindgen_futures::spawn_local(async move {
                    let answer = match fetch_with_progress(&url, &post).await {
                        Ok((loader, last_byte_at)) => {
                            workspace.borrow_mut().load(loader, last_byte_at, now)
                        }
                        Err(message) => ModelAnswer::Failed(message),
                    };
                    post(&answer);
                });
            }
            Ok(request) => {
                let mut send = |answer: &ModelAnswer| post(answer);
                let answer = workspace.borrow_mut().handle(request, now, &mut send);
                post(&answer);
            }
        }
    });
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    if let Err(error) = scope.post_message(&READY.into()) {
        web_sys::console::error_2(&"model worker: cannot announce itself".into(), &error);
    }
}

/// Fetches `url` chunk by chunk into a [`ModelLoader`](crate::lab::model_loader::ModelLoader),
/// which hashes and reads each chunk as it arrives, posting a progress answer about every
/// megabyte; gives the loader and when the last byte arrived (the worker's clock, ms).
#[cfg(feature = "text-model")]
async fn fetch_with_progress(
    url: &str,
    post: &impl Fn(&crate::lab::text_model::ModelAnswer),
) -> Result<(crate::lab::model_loader::ModelLoader, f64), String> {
    use crate::lab::text_model::ModelAnswer;
    use wasm_bindgen_futures::JsFuture;

    let scope: DedicatedWorkerGlobalScope = js_sys::global()
        .dyn_into()
        .map_err(|_| "not in a worker".to_string())?;
    let absent = || {
        format!(
            "the model file {url} is not served: run scripts/fetch-model.sh (or \
             ./scripts/serve.sh, which runs it) and reload"
        )
    };
    let response: web_sys::Response = JsFuture::from(scope.fetch_with_str(url))
        .await
        .map_err(|_| absent())?
        .dyn_into()
        .map_err(|_| absent())?;
    if !response.ok() {
        return Err(format!("{} (HTTP status {})", absent(), response.status()));
    }
    let total = response
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|v| v.parse::<u64>().ok());
    let body = response.body().ok_or_else(absent)?;
    let reader: web_sys::ReadableStreamDefaultReader = body
        .get_reader()
        .dyn_into()
        .map_err(|_| "cannot read the model file".to_string())?;
    let mut loader = crate::lab::model_loader::ModelLoader::new();
    let mut reported = 0u64;
    let clock = || scope.performance().map_or(0.0, |p| p.now());
    let mut last_chunk_at = clock();
    loop {
        let chunk = JsFuture::from(reader.read())
            .await
            .map_err(|_| "the model file's download broke off".to_string())?;
        let done = js_sys::Reflect::get(&chunk, &"done".into())
            .map(|d| d.is_truthy())
            .unwrap_or(true);
        if done {
            break;
        }
        if let Ok(value) = js_sys::Reflect::get(&chunk, &"value".into()) {
            let array = js_sys::Uint8Array::new(&value);
            last_chunk_at = clock();
            loader.push_with(array.length() as usize, |slot| array.copy_to(slot));
        }
        let loaded = loader.loaded();
        if loaded - reported >= 1 << 20 {
            reported = loaded;
            post(&ModelAnswer::Progress { loaded, total });
        }
    }
    post(&ModelAnswer::Progress {
        loaded: loader.loaded(),
        total,
    });
    // When the browser had the last byte (the fetch's resource timing, on the same clock), if
    // before the loop took the last chunk: a loader slower than the download counts its backlog.
    let network_end = scope
        .performance()
        .and_then(|p| {
            p.get_entries_by_name(&response.url())
                .pop()
                .dyn_into::<js_sys::Object>()
                .ok()
        })
        .and_then(|entry| js_sys::Reflect::get(&entry, &"responseEnd".into()).ok())
        .and_then(|end| end.as_f64())
        .filter(|&end| end > 0.0);
    let last_byte_at = network_end.map_or(last_chunk_at, |end| end.min(last_chunk_at));
    Ok((loader, last_byte_at))
}

/// Installs `handle` as the message handler and tells the page the worker is ready.
fn serve(handle: fn(&mut Workspace, &[u8]) -> Vec<u8>) {
    serve_with(Workspace::new(), handle);
}

/// Installs `handle` (with its state `workspace`) as the message handler and tells the page
/// the worker is ready.
fn serve_with<W: 'static>(workspace: W, handle: impl Fn(&mut W, &[u8]) -> Vec<u8> + 'static) {
    let Ok(scope) = js_sys::global().dyn_into::<DedicatedWorkerGlobalScope>() else {
        web_sys::console::error_1(
            &"softmax-kernel-lab worker: not running in a dedicated worker".into(),
        );
        return;
    };
    // Datasets and ω (or the model) stay cached here between messages.
    let workspace = RefCell::new(workspace);
    let reply_scope = scope.clone();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        let bytes = js_sys::Uint8Array::new(&event.data()).to_vec();
        let answer = handle(&mut workspace.borrow_mut(), &bytes);
        let array = js_sys::Uint8Array::from(answer.as_slice());
        let buffer = array.buffer();
        let transfer = js_sys::Array::of1(&buffer);
        if let Err(error) = reply_scope.post_message_with_transfer(&array, &transfer) {
            web_sys::console::error_2(&"softmax-kernel-lab worker: cannot answer".into(), &error);
        }
    });
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    // The handler lives as long as the worker.
    on_message.forget();
    if let Err(error) = scope.post_message(&READY.into()) {
        web_sys::console::error_2(
            &"softmax-kernel-lab worker: cannot announce itself".into(),
            &error,
        );
    }
}
