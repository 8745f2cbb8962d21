//! The language model's worker, seen from the page ([`LmClient`]): started when the view is
//! first opened (the `model-worker` build with `?lm`, which fetches the 98 MB file itself), one
//! request in flight at a time and the newest waiting one replacing any older (a reader typing
//! never builds a queue), and its answers turned into signals.

use std::cell::RefCell;
use std::rc::Rc;

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{ErrorEvent, MessageEvent, Worker};

use crate::lab::models::smollm::{LmFromWorker, LmJob, LmLayerBar, LmReport, LmToWorker};
use crate::lab::pool::{decode, encode};

/// Where the model stands.
#[derive(Clone, Debug, PartialEq)]
pub enum LmState {
    /// The view was never opened.
    Idle,
    /// The file is downloading (`loaded` of `total` bytes).
    Downloading { loaded: u64, total: Option<u64> },
    /// Checked and read (`load_ms` after its last byte).
    Ready { bytes: u64, load_ms: f64 },
    /// The file is absent or damaged, or the worker did not start: the sentence says which.
    Failed(String),
}

/// The newest answer: its report or why there is none, and the job it answers.
#[derive(Clone, Debug, PartialEq)]
pub struct LmAnswer {
    pub job: LmJob,
    pub report: Result<Rc<LmReport>, String>,
    /// Answers received so far, this one included (a test tells a new answer by it).
    pub count: u32,
}

/// The per-layer chart of the newest answer's text and method, as its bars come.
#[derive(Clone, Debug, PartialEq)]
pub struct LmChart {
    pub job: LmJob,
    /// In the order they came (deepest layer first).
    pub bars: Vec<LmLayerBar>,
    /// Every bar is in, or `error` says why the chart stopped.
    pub done: bool,
    pub error: Option<String>,
    /// From the request to its first bar, and to its end.
    pub first_bar_ms: Option<f64>,
    pub total_ms: Option<f64>,
}

/// The worker's message and error handlers.
type Handlers = (
    Closure<dyn FnMut(MessageEvent)>,
    Closure<dyn FnMut(ErrorEvent)>,
);

/// The worker and what the page has asked it.
#[derive(Default)]
struct Inner {
    worker: Option<Worker>,
    /// Kept alive as long as the worker.
    handlers: Option<Handlers>,
    ready: bool,
    next_id: u64,
    /// The request the worker is computing.
    in_flight: Option<(u64, LmJob)>,
    /// The newest job asked while another was in flight (or before the model was ready).
    waiting: Option<LmJob>,
    /// The last job sent, so that an unchanged configuration is not asked twice.
    last_sent: Option<LmJob>,
    /// The id of the per-layer chart asked last.
    chart_id: Option<u64>,
    answers: u32,
}

/// The page's handle on the language model's worker.
#[derive(Clone, Copy)]
pub struct LmClient {
    pub state: RwSignal<LmState, LocalStorage>,
    pub answer: RwSignal<Option<LmAnswer>, LocalStorage>,
    /// The per-layer chart of the newest answer (asked once the answer is in, when a method is
    /// chosen).
    pub chart: RwSignal<Option<LmChart>, LocalStorage>,
    /// Whether a request is being computed.
    pub busy: RwSignal<bool>,
    inner: StoredValue<Rc<RefCell<Inner>>, LocalStorage>,
}

impl LmClient {
    pub fn new() -> Self {
        Self {
            state: RwSignal::new_local(LmState::Idle),
            answer: RwSignal::new_local(None),
            chart: RwSignal::new_local(None),
            busy: RwSignal::new(false),
            inner: StoredValue::new_local(Rc::new(RefCell::new(Inner::default()))),
        }
    }

    /// Starts the worker (once).
    pub fn start(self) {
        let inner = self.inner.get_value();
        if inner.borrow().worker.is_some() {
            return;
        }
        let script = if crate::ui::pool::relaxed_simd() {
            "./model-worker_loader.js?lm"
        } else {
            "./model-worker-simd128_loader.js?lm"
        };
        let worker = match Worker::new(script) {
            Ok(worker) => worker,
            Err(_) => {
                self.state.set(LmState::Failed(
                    "this browser could not start the language model's worker".into(),
                ));
                return;
            }
        };
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            self.on_message(event.data());
        });
        let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(move |event: ErrorEvent| {
            let message = js_sys::Reflect::get(&event, &"message".into())
                .ok()
                .and_then(|m| m.as_string())
                .unwrap_or_else(|| "its script did not load".into());
            self.fail(format!("the language model's worker stopped: {message}"));
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        self.state.set(LmState::Downloading {
            loaded: 0,
            total: None,
        });
        let mut inner = inner.borrow_mut();
        inner.worker = Some(worker);
        inner.handlers = Some((on_message, on_error));
    }

    /// Asks for `job`'s report (sent now if the worker is free, else kept as the next one).
    pub fn ask(self, job: LmJob) {
        let inner = self.inner.get_value();
        {
            let mut inner = inner.borrow_mut();
            if inner.waiting.as_ref() == Some(&job)
                || (inner.waiting.is_none() && inner.last_sent.as_ref() == Some(&job))
            {
                return;
            }
            inner.waiting = Some(job);
        }
        self.send_waiting();
    }

    /// Sends the waiting job if the model is ready and nothing is in flight.
    fn send_waiting(self) {
        let inner = self.inner.get_value();
        let mut inner = inner.borrow_mut();
        if !inner.ready || inner.in_flight.is_some() {
            return;
        }
        let Some(job) = inner.waiting.take() else {
            return;
        };
        inner.next_id += 1;
        let id = inner.next_id;
        let message = LmToWorker::Score {
            id,
            job: job.clone(),
        };
        if post(inner.worker.as_ref(), &message).is_none() {
            drop(inner);
            self.fail("the page could not send the text to the language model's worker".into());
            return;
        }
        inner.in_flight = Some((id, job.clone()));
        inner.last_sent = Some(job);
        drop(inner);
        self.busy.set(true);
    }

    /// Asks for the per-layer chart of `job` (the job just answered), unless a newer job
    /// waits: its answer will ask for its own.
    fn ask_chart(self, job: &LmJob) {
        if job.method().is_none() {
            self.chart.set(None);
            return;
        }
        // The chart swaps every layer whatever layers the swap itself uses: a complete chart
        // of the same text and settings stays.
        let same_chart = |chart: &LmChart| {
            let mut asked = job.config.clone();
            asked
                .attention
                .lm_layers
                .clone_from(&chart.job.config.attention.lm_layers);
            chart.done
                && chart.error.is_none()
                && chart.job.text == job.text
                && chart.job.config == asked
        };
        if self
            .chart
            .with_untracked(|c| c.as_ref().is_some_and(same_chart))
        {
            return;
        }
        let inner = self.inner.get_value();
        let mut inner = inner.borrow_mut();
        if inner.waiting.is_some() {
            return;
        }
        inner.next_id += 1;
        let id = inner.next_id;
        let message = LmToWorker::PerLayer {
            id,
            job: job.clone(),
        };
        if post(inner.worker.as_ref(), &message).is_none() {
            return;
        }
        inner.chart_id = Some(id);
        drop(inner);
        self.chart.set(Some(LmChart {
            job: job.clone(),
            bars: Vec::new(),
            done: false,
            error: None,
            first_bar_ms: None,
            total_ms: None,
        }));
    }

    /// Whether `id` is the chart asked last.
    fn is_current_chart(self, id: u64) -> bool {
        self.inner.get_value().borrow().chart_id == Some(id)
    }

    fn fail(self, message: String) {
        self.busy.set(false);
        self.state.set(LmState::Failed(message));
    }

    fn on_message(self, data: JsValue) {
        if data.as_string().as_deref() == Some(crate::worker::READY) {
            return;
        }
        let bytes = js_sys::Uint8Array::new(&data).to_vec();
        let message = match decode::<LmFromWorker>(&bytes) {
            Ok(message) => message,
            Err(error) => {
                self.fail(format!(
                    "an unreadable answer from the language model: {error}"
                ));
                return;
            }
        };
        match message {
            LmFromWorker::Progress { loaded, total } => {
                self.state.set(LmState::Downloading { loaded, total });
            }
            LmFromWorker::Loaded { bytes, load_ms } => {
                self.state.set(LmState::Ready { bytes, load_ms });
                self.inner.get_value().borrow_mut().ready = true;
                self.send_waiting();
            }
            LmFromWorker::Failed(message) => self.fail(message),
            LmFromWorker::Scored { id, report } => {
                let inner = self.inner.get_value();
                let job = {
                    let mut inner = inner.borrow_mut();
                    match inner.in_flight.take() {
                        Some((sent, job)) if sent == id => {
                            inner.answers += 1;
                            Some((job, inner.answers))
                        }
                        other => {
                            inner.in_flight = other;
                            None
                        }
                    }
                };
                let answered = report.is_ok();
                if let Some((job, count)) = job {
                    self.answer.set(Some(LmAnswer {
                        job: job.clone(),
                        report: report.map(|r| Rc::new(*r)),
                        count,
                    }));
                    if answered {
                        self.ask_chart(&job);
                    } else {
                        self.chart.set(None);
                    }
                }
                self.busy.set(false);
                self.send_waiting();
            }
            LmFromWorker::LayerBar { id, bar, ms } => {
                if self.is_current_chart(id) {
                    self.chart.update(|chart| {
                        if let Some(chart) = chart {
                            chart.first_bar_ms.get_or_insert(ms);
                            chart.bars.push(bar);
                        }
                    });
                }
            }
            LmFromWorker::LayersEnded { id, ms, error } => {
                if self.is_current_chart(id) {
                    self.chart.update(|chart| {
                        if let Some(chart) = chart {
                            chart.done = true;
                            chart.total_ms = Some(ms);
                            chart.error = error;
                        }
                    });
                }
            }
        }
    }
}

/// Posts `message` to `worker`; `None` when it cannot be encoded or posted.
fn post(worker: Option<&Worker>, message: &LmToWorker) -> Option<()> {
    let bytes = encode(message).ok()?;
    let array = js_sys::Uint8Array::from(&bytes[..]);
    worker?.post_message(&array).ok()
}
