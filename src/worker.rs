//! The worker side of the pools (WebAssembly only): one way to serve for every worker. Each
//! message is a postcard-encoded [`WorkerRequest`](crate::lab::pool::WorkerRequest); each
//! answer, and each update before it, goes back the same way, its buffer transferred. Three
//! workers: `kernel-worker` ([`start`]: the kernel view's tasks, the probe, the data panel,
//! [`handle_kernel_request`], built without the optimised A), `full-worker` ([`start_full`]:
//! every request, [`handle_request_with`]) and `model-worker` ([`start_model`], feature
//! `text-model`: it fetches and checks the model itself, then answers the text view's
//! requests, `lab::pool::model_worker`). All the work is in those handlers; this file only wires one
//! to `onmessage`.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

use crate::lab::attention::StoredHeads;
use crate::lab::kernel::tasks::Workspace;
use crate::lab::pool::{handle_kernel_request, handle_request_with};
use crate::numerics::attention::heads::HEADS_ASSET_PATH;

/// The word a worker posts once it listens, so that the page never sends into the void.
pub const READY: &str = "ready";

/// The kernel worker: installs its message handler and tells the page it is ready.
pub fn start() {
    serve(Workspace::new(), |workspace, event, reply| {
        reply.bytes(&handle_kernel_request(
            &mut workspace.borrow_mut(),
            &message_bytes(&event),
        ));
    });
}

/// The full worker: installs its message handler and tells the page it is ready. It reads the
/// stored heads itself the first time a part needs them ([`stored_heads`]): no request
/// carries them.
pub fn start_full() {
    let state = (Workspace::new(), stored_heads());
    serve(state, |state, event, reply| {
        let (workspace, stored) = &mut *state.borrow_mut();
        reply.bytes(&handle_request_with(
            workspace,
            stored,
            &message_bytes(&event),
        ));
    });
}

/// The stored heads as a worker reads them: the asset beside the page (the workers' scripts
/// are there too), fetched once, synchronously (a worker may block itself; the part that
/// needs them waits for them anyway).
pub(crate) fn stored_heads() -> StoredHeads {
    StoredHeads::read_by(|| fetch_now(HEADS_ASSET_PATH))
}

/// The bytes at `path` (relative to the worker's script), fetched synchronously.
fn fetch_now(path: &str) -> Result<Vec<u8>, String> {
    let failed = |what: &str| format!("cannot fetch {path}: {what}");
    let request = web_sys::XmlHttpRequest::new().map_err(|_| failed("no XMLHttpRequest"))?;
    request
        .open_with_async("GET", path, false)
        .map_err(|_| failed("cannot open the request"))?;
    request.set_response_type(web_sys::XmlHttpRequestResponseType::Arraybuffer);
    request.send().map_err(|_| failed("the request failed"))?;
    let status = request.status().map_err(|_| failed("no status"))?;
    if status != 200 {
        return Err(format!("{path}: HTTP status {status}"));
    }
    let body = request.response().map_err(|_| failed("no body"))?;
    Ok(js_sys::Uint8Array::new(&body).to_vec())
}

/// Where answers go: the worker's scope, each answer's buffer transferred.
#[derive(Clone)]
pub(crate) struct Reply(DedicatedWorkerGlobalScope);

impl Reply {
    /// Posts encoded bytes.
    pub(crate) fn bytes(&self, bytes: &[u8]) {
        let array = js_sys::Uint8Array::from(bytes);
        let transfer = js_sys::Array::of1(&array.buffer());
        if let Err(error) = self.0.post_message_with_transfer(&array, &transfer) {
            web_sys::console::error_2(&"softmax-kernel-lab worker: cannot answer".into(), &error);
        }
    }

    /// Encodes and posts a response.
    #[cfg(feature = "text-model")]
    pub(crate) fn send(&self, response: &crate::lab::pool::WorkerResponse) {
        match crate::lab::pool::encode(response) {
            Ok(bytes) => self.bytes(&bytes),
            Err(error) => web_sys::console::error_1(&error.into()),
        }
    }
}

/// The bytes of a message from the page.
fn message_bytes(event: &MessageEvent) -> Vec<u8> {
    js_sys::Uint8Array::new(&event.data()).to_vec()
}

/// Installs `handle` (with its state `workspace`, kept between messages: datasets and ω, or
/// the model) as the message handler and tells the page the worker listens. Returns the state
/// and the reply handle, for a worker that has work of its own to start (the model's fetch).
fn serve<W: 'static>(
    workspace: W,
    handle: impl Fn(&Rc<RefCell<W>>, MessageEvent, &Reply) + 'static,
) -> Option<(Rc<RefCell<W>>, Reply)> {
    let Ok(scope) = js_sys::global().dyn_into::<DedicatedWorkerGlobalScope>() else {
        web_sys::console::error_1(
            &"softmax-kernel-lab worker: not running in a dedicated worker".into(),
        );
        return None;
    };
    let workspace = Rc::new(RefCell::new(workspace));
    let reply = Reply(scope.clone());
    let on_message = {
        let (workspace, reply) = (workspace.clone(), reply.clone());
        Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            handle(&workspace, event, &reply);
        })
    };
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    // The handler lives as long as the worker.
    on_message.forget();
    if let Err(error) = scope.post_message(&READY.into()) {
        web_sys::console::error_2(
            &"softmax-kernel-lab worker: cannot announce itself".into(),
            &error,
        );
    }
    Some((workspace, reply))
}

#[cfg(feature = "text-model")]
mod fetch;
#[cfg(feature = "text-model")]
mod lm;
#[cfg(feature = "text-model")]
mod lm_heads;
#[cfg(feature = "text-model")]
mod model;
#[cfg(feature = "text-model")]
mod peers;
#[cfg(feature = "text-model")]
pub use lm::{start_lm, started_as_lm, started_as_lm_heads};
#[cfg(feature = "text-model")]
pub use lm_heads::start_lm_heads;
#[cfg(feature = "text-model")]
pub use model::start_model;
