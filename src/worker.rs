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

/// The model worker (feature `text-model`): the model on the user's text.
#[cfg(feature = "text-model")]
pub fn start_model() {
    use crate::lab::text_model::{ModelWorkspace, handle_model_request};
    fn now() -> f64 {
        js_sys::global()
            .dyn_into::<DedicatedWorkerGlobalScope>()
            .ok()
            .and_then(|scope| scope.performance())
            .map_or(0.0, |p| p.now())
    }
    serve_with(ModelWorkspace::default(), move |workspace, bytes| {
        handle_model_request(workspace, bytes, now)
    });
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
