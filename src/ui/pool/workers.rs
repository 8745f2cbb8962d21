//! The workers themselves: which build a pool runs (kernel or full, relaxed SIMD or
//! `simd128`), how many start, and starting and retiring them.

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{ErrorEvent, MessageEvent, Worker};

use std::cell::RefCell;
use std::rc::Rc;

use super::{Pool, PoolEvent};
use crate::lab::config::ExperimentConfig;
use crate::lab::models::protocol::ModelSetup;
use crate::lab::pool::{encode_request, request_kind};
use crate::numerics::estimators::EstimatorId;

/// Which worker a pool runs (`scripts/build-worker.sh` builds each twice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerKind {
    /// `kernel-worker`: the kernel view's tasks, the probe, the data panel, with every
    /// estimator that needs no optimiser (what the first view needs).
    Kernel,
    /// `full-worker`: every request, the attention view's parts and the optimised A included
    /// (started only when one of those is first asked for).
    Full,
    /// `model-worker`: the real model on the reader's text, its swap, and the attention view's
    /// parts on that text's heads (started when the text view is first opened).
    Model,
    /// `model-worker` started as `?lm&heads`: the causal language model, answering the
    /// attention view's parts on its heads (started when the source `lm` is first chosen).
    LmHeads,
}

impl WorkerKind {
    /// The kernel pool's worker for a configuration with these estimators: `full-worker` when
    /// one of them needs the optimiser.
    pub fn for_estimators(estimators: &[EstimatorId]) -> WorkerKind {
        if estimators.iter().any(|e| e.info().needs_optimiser()) {
            WorkerKind::Full
        } else {
            WorkerKind::Kernel
        }
    }

    /// The kernel pool's worker for a configuration: `full-worker` when an estimator needs the
    /// optimiser or its coupling of ω is one only `full-worker` draws (simplex, RQMC).
    pub fn for_config(config: &ExperimentConfig) -> WorkerKind {
        if config.coupling.needs_full_worker() {
            WorkerKind::Full
        } else {
            WorkerKind::for_estimators(&config.estimators)
        }
    }

    /// The loader script of the relaxed-SIMD build, or of the `simd128`-only build for
    /// browsers without relaxed SIMD (the export's bit-exact path uses that one too).
    pub fn script(self, relaxed: bool) -> &'static str {
        match (self, relaxed) {
            (WorkerKind::Kernel, true) => "./kernel-worker_loader.js",
            (WorkerKind::Kernel, false) => "./kernel-worker-simd128_loader.js",
            (WorkerKind::Full, true) => "./full-worker_loader.js",
            (WorkerKind::Full, false) => "./full-worker-simd128_loader.js",
            (WorkerKind::Model, true) => "./model-worker_loader.js",
            (WorkerKind::Model, false) => "./model-worker-simd128_loader.js",
            (WorkerKind::LmHeads, true) => "./model-worker_loader.js?lm&heads",
            (WorkerKind::LmHeads, false) => "./model-worker-simd128_loader.js?lm&heads",
        }
    }

    /// Whether its workers fetch and hold a model first (they say how far they got, take work
    /// once all have it, and one request at a time).
    pub fn holds_a_model(self) -> bool {
        matches!(self, WorkerKind::Model | WorkerKind::LmHeads)
    }

    /// Whether a pool of this kind can run what needs `needed` (a model pool runs only model
    /// requests and attention parts, and is never replaced by another kind).
    pub(super) fn covers(self, needed: WorkerKind) -> bool {
        self == needed || self.holds_a_model() || needed == WorkerKind::Kernel
    }

    /// How many workers of this kind to start: one per core, at most [`MAX_WORKERS`], and for
    /// the model at most [`MAX_MODEL_WORKERS`] (each holds the model, about 100 MB).
    fn count(self) -> usize {
        match self {
            WorkerKind::Model => worker_count().min(MAX_MODEL_WORKERS),
            WorkerKind::LmHeads => worker_count().min(MAX_LM_HEADS_WORKERS),
            _ => worker_count(),
        }
    }
}

/// Model workers beyond this many cost memory for little: the forward's parts exchange keys
/// and values per layer, and the swap plan has a few dozen jobs.
pub const MAX_MODEL_WORKERS: usize = 4;

/// The language model's heads workers: each holds the 98 MB file and a text's heads (58 MB
/// at 512 tokens); two split the parts that read every head.
pub const MAX_LM_HEADS_WORKERS: usize = 2;

/// A module whose one function uses `i8x16.relaxed_swizzle`: valid only where relaxed SIMD is.
const RELAXED_SIMD_PROBE: [u8; 36] = [
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
    0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type: () -> v128
    0x03, 0x02, 0x01, 0x00, // one function of that type
    0x0a, 0x0f, 0x01, 0x0d, 0x00, // code: one body of 13 bytes, no locals
    0x41, 0x01, 0xfd, 0x0f, // i32.const 1, i8x16.splat
    0x41, 0x02, 0xfd, 0x0f, // i32.const 2, i8x16.splat
    0xfd, 0x80, 0x02, // i8x16.relaxed_swizzle
    0x0b, // end
];

/// Whether this browser runs relaxed-SIMD WebAssembly.
pub fn relaxed_simd() -> bool {
    let bytes = js_sys::Uint8Array::from(&RELAXED_SIMD_PROBE[..]);
    js_sys::WebAssembly::validate(&bytes).unwrap_or(false)
}

/// Workers beyond this many rarely help (the tasks are memory-light but the page is not alone).
pub const MAX_WORKERS: usize = 8;

/// One Web Worker and the handlers the page installed on it.
pub(super) struct WorkerHandle {
    pub(super) worker: Worker,
    on_message: Closure<dyn FnMut(MessageEvent)>,
    on_error: Closure<dyn FnMut(ErrorEvent)>,
}

impl WorkerHandle {
    /// Detaches the handlers and stops the worker; returns the handlers, which must outlive
    /// any event the browser had already queued for them.
    pub(super) fn retire(self) -> RetiredHandlers {
        self.worker.set_onmessage(None);
        self.worker.set_onerror(None);
        self.worker.terminate();
        (self.on_message, self.on_error)
    }
}

pub(super) type RetiredHandlers = (
    Closure<dyn FnMut(MessageEvent)>,
    Closure<dyn FnMut(ErrorEvent)>,
);

/// How many workers to start: one per logical core, at least one, at most [`MAX_WORKERS`].
pub(in crate::ui) fn worker_count() -> usize {
    web_sys::window()
        .map(|w| w.navigator().hardware_concurrency())
        .filter(|n| n.is_finite() && *n >= 1.0)
        .map_or(2, |n| n as usize)
        .clamp(1, MAX_WORKERS)
}

impl Pool {
    /// Starts fresh workers; returns how many started (0: none can compute).
    pub(super) fn spawn_workers(&mut self) -> usize {
        let old: Vec<WorkerHandle> = std::mem::take(&mut self.workers);
        self.retired = old.into_iter().map(WorkerHandle::retire).collect();
        let count = self.kind.count();
        self.listening = vec![false; count];
        self.loading = vec![true; count];
        for index in 0..count {
            match self.spawn(index) {
                Ok(handle) => self.workers.push(handle),
                Err(error) => {
                    web_sys::console::warn_2(
                        &"softmax-kernel-lab: cannot start a Web Worker".into(),
                        &error,
                    );
                    break;
                }
            }
        }
        self.workers.len()
    }

    fn spawn(&self, index: usize) -> Result<WorkerHandle, JsValue> {
        let worker = Worker::new(self.kind.script(self.relaxed))?;
        let this = self.this.clone();
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            if let Some(pool) = this.upgrade() {
                Pool::on_message(&pool, index, event.data());
            }
        });
        let this = self.this.clone();
        let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(move |event: ErrorEvent| {
            // A worker script that cannot load fires a plain `Event`, without `message`:
            // read it without assuming an `ErrorEvent` (a throw here would lose the error).
            let message = js_sys::Reflect::get(&event, &"message".into())
                .ok()
                .and_then(|m| m.as_string())
                .unwrap_or_else(|| "its script did not load".into());
            web_sys::console::error_1(
                &format!("softmax-kernel-lab: worker {index} failed: {message}").into(),
            );
            if let Some(pool) = this.upgrade() {
                Pool::on_worker_error(&pool, index);
            }
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        Ok(WorkerHandle {
            worker,
            on_message,
            on_error,
        })
    }
}

/// Posts `bytes` to `worker` as a new `Uint8Array` whose buffer is transferred, not copied: a
/// structured clone of a request that carries a text's heads (3.5 MB at 512 tokens) cost the
/// page's thread about 5 ms per request, six requests per text.
pub(super) fn post_transferred(worker: &Worker, bytes: &[u8]) -> Result<(), JsValue> {
    let array = js_sys::Uint8Array::from(bytes);
    worker.post_message_with_transfer(&array, &js_sys::Array::of1(&array.buffer()))
}

impl Pool {
    /// Model worker `slot` listens: connects it to every other model worker that listens, by a
    /// `MessageChannel` whose ports each gets (`WorkerRequest::Connect`).
    pub(super) fn connect_peers(pool: &Rc<RefCell<Pool>>, slot: usize) {
        let mut p = pool.borrow_mut();
        if let Some(listening) = p.listening.get_mut(slot) {
            *listening = true;
        }
        let peers: Vec<usize> = (0..p.listening.len())
            .filter(|&j| j != slot && p.listening[j])
            .collect();
        for peer in peers {
            let (Some(a), Some(b)) = (p.workers.get(slot), p.workers.get(peer)) else {
                continue;
            };
            let connected = web_sys::MessageChannel::new().and_then(|channel| {
                post_port(&a.worker, peer, &channel.port1())?;
                post_port(&b.worker, slot, &channel.port2())
            });
            if let Err(error) = connected {
                web_sys::console::error_2(&"cannot connect two model workers".into(), &error);
            }
        }
    }

    /// A model worker's news while it starts: passed on; once no worker is still loading, the
    /// loaded ones take work (together, so that a request for every worker finds them all).
    pub(super) fn on_setup(pool: &Rc<RefCell<Pool>>, slot: usize, setup: ModelSetup) {
        let settled = {
            let mut p = pool.borrow_mut();
            match &setup {
                ModelSetup::Progress { .. } => false,
                ModelSetup::Loaded { .. } | ModelSetup::Failed(_) => {
                    if let Some(loading) = p.loading.get_mut(slot) {
                        *loading = false;
                    }
                    if matches!(setup, ModelSetup::Failed(_)) {
                        p.scheduler.worker_lost(slot);
                    }
                    !p.loading.iter().any(|&l| l)
                }
            }
        };
        Pool::emit(pool, vec![PoolEvent::WorkerSetup { slot, setup }]);
        if settled {
            {
                let mut p = pool.borrow_mut();
                for slot in 0..p.loading.len() {
                    p.scheduler.worker_ready(slot);
                }
            }
            Pool::pump_side(pool);
        }
    }
}

/// Posts `WorkerRequest::Connect { peer }` with `port` transferred.
fn post_port(worker: &Worker, peer: usize, port: &web_sys::MessagePort) -> Result<(), JsValue> {
    let bytes = encode_request(request_kind::CONNECT, &peer).map_err(JsValue::from)?;
    let array = js_sys::Uint8Array::from(bytes.as_slice());
    worker.post_message_with_transfer(&array, &js_sys::Array::of2(&array.buffer(), port))
}
