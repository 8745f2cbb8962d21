//! Starting a language model worker and posting to it: the page's plumbing under
//! [`super::client`].

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{ErrorEvent, MessageEvent, Worker};

use crate::lab::models::smollm::LmToWorker;
use crate::lab::pool::encode;

/// The worker's message and error handlers.
pub(super) type Handlers = (
    Closure<dyn FnMut(MessageEvent)>,
    Closure<dyn FnMut(ErrorEvent)>,
);

/// Posts `message` to `worker`; `None` when it cannot be encoded or posted.
pub(super) fn post(worker: Option<&Worker>, message: &LmToWorker) -> Option<()> {
    let bytes = encode(message).ok()?;
    let array = js_sys::Uint8Array::from(&bytes[..]);
    worker?.post_message(&array).ok()
}

/// Starts a language model worker (the `model-worker` build with `?lm` and `parameters`, each
/// after a `&`) with its handlers:
/// `on_data` sees each message's data, `on_error` the sentence of a worker that stopped.
pub(super) fn spawn(
    parameters: &str,
    on_data: impl Fn(JsValue) + 'static,
    on_error: impl Fn(String) + 'static,
) -> Option<(Worker, Handlers)> {
    let script = if crate::ui::pool::relaxed_simd() {
        "./model-worker_loader.js?lm"
    } else {
        "./model-worker-simd128_loader.js?lm"
    };
    let worker = Worker::new(&format!("{script}{parameters}")).ok()?;
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        on_data(event.data());
    });
    let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(move |event: ErrorEvent| {
        let message = js_sys::Reflect::get(&event, &"message".into())
            .ok()
            .and_then(|m| m.as_string())
            .unwrap_or_else(|| "its script did not load".into());
        on_error(message);
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    Some((worker, (on_message, on_error)))
}

/// Posts `LmToWorker::Connect { peer }` to `worker` with `port` transferred.
pub(super) fn post_port(
    worker: &Worker,
    peer: usize,
    port: &web_sys::MessagePort,
) -> Result<(), JsValue> {
    let bytes = encode(&LmToWorker::Connect { peer }).map_err(JsValue::from)?;
    let array = js_sys::Uint8Array::from(&bytes[..]);
    worker.post_message_with_transfer(&array, &js_sys::Array::of2(&array.buffer(), port))
}
