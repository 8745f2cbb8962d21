//! The text view (`src=text`): the user's text, the model worker that runs all-MiniLM-L6-v2 on
//! it ([`TextModel`]: started, and the 46 MB model fetched, only when this view is first
//! opened), the download's progress in bytes, the text's tokens and what the forward cost. The
//! attention view then shows the chosen layer's and head's queries, keys and values of this
//! text as it shows a stored passage.

use std::cell::RefCell;
use std::rc::Rc;

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{MessageEvent, Worker};

use std::collections::VecDeque;

use crate::lab::config::{ExperimentConfig, MAX_LINK_TEXT_CHARS, MAX_TEXT_BYTES, STORED_PASSAGES};
use crate::lab::model_protocol::{
    HedgehogJob, HedgehogPoint, HedgehogTraining, MODEL_URL, ModelAnswer, ModelRequest,
    RetrievalReport, SwapJob, SwapReport, TextRun,
};

/// Where the model stands.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum ModelState {
    /// The text view was never opened.
    Idle,
    /// The worker is starting, or the file downloading (`loaded` of `total` bytes).
    Downloading { loaded: u64, total: Option<u64> },
    /// Checked and unpacked.
    Ready {
        bytes: u64,
        parameters: usize,
        load_ms: f64,
    },
    /// The file is absent, its hash wrong, or the worker did not start: the sentence says which.
    Failed(String),
}

/// One text's answer: the run, and the forward's time in the worker.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct TextOutcome {
    pub run: TextRun,
    pub forward_ms: f64,
    /// How many texts the worker has answered, this one included (the page shows it, so that a
    /// test or the benchmark can tell a new answer from the previous one).
    pub answer: u32,
}

/// One swap's answer.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct SwapCell {
    pub job: SwapJob,
    pub report: Result<SwapReport, String>,
}

/// One retrieval's answer.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct RetrievalCell {
    pub job: SwapJob,
    pub report: Result<RetrievalReport, String>,
}

/// The model swap's answers for the current plan, as they arrive.
#[derive(Clone, Copy)]
pub(super) struct SwapResults {
    pub cells: RwSignal<Vec<SwapCell>, LocalStorage>,
    pub retrieval: RwSignal<Vec<RetrievalCell>, LocalStorage>,
    /// The Hedgehog maps' training curve (the newest training's points).
    pub curve: RwSignal<Vec<HedgehogPoint>, LocalStorage>,
    pub training: RwSignal<Option<Result<HedgehogTraining, String>>, LocalStorage>,
    /// Jobs of the plan answered, and in all.
    pub progress: RwSignal<(usize, usize)>,
}

/// The worker and what waits for it.
#[derive(Default)]
struct Client {
    worker: Option<Worker>,
    /// A request is in the worker.
    busy: bool,
    /// The newest text asked for while the worker was busy or loading (older ones are dropped).
    pending: Option<String>,
    /// The model swap's jobs not yet sent (a new plan replaces them all).
    queue: VecDeque<ModelRequest>,
    /// The plan's number, and the number of the plan of the job in the worker: an answer to an
    /// older plan's job is dropped.
    plan: u64,
    in_flight_plan: Option<u64>,
    /// The training whose maps the worker holds.
    trained: Option<HedgehogJob>,
    loaded: bool,
    answers: u32,
    _on_message: Option<Closure<dyn FnMut(MessageEvent)>>,
    _on_error: Option<Closure<dyn FnMut(web_sys::Event)>>,
}

/// The model worker, its state and the latest text's outcome (a cheap handle: signals and a
/// stored client).
#[derive(Clone, Copy)]
pub(super) struct TextModel {
    pub state: RwSignal<ModelState, LocalStorage>,
    pub outcome: RwSignal<Option<Result<Rc<TextOutcome>, String>>, LocalStorage>,
    pub swap: SwapResults,
    client: StoredValue<Rc<RefCell<Client>>, LocalStorage>,
}

fn post(worker: &Worker, request: &ModelRequest) {
    let bytes = postcard::to_allocvec(request).unwrap_or_default();
    let array = js_sys::Uint8Array::from(bytes.as_slice());
    if let Err(error) = worker.post_message(&array) {
        web_sys::console::error_2(&"model worker: cannot send".into(), &error);
    }
}

impl TextModel {
    pub fn new() -> Self {
        Self {
            state: RwSignal::new_local(ModelState::Idle),
            outcome: RwSignal::new_local(None),
            swap: SwapResults {
                cells: RwSignal::new_local(Vec::new()),
                retrieval: RwSignal::new_local(Vec::new()),
                curve: RwSignal::new_local(Vec::new()),
                training: RwSignal::new_local(None),
                progress: RwSignal::new((0, 0)),
            },
            client: StoredValue::new_local(Rc::default()),
        }
    }

    /// Starts the worker (once); it then fetches the model.
    pub fn start(self) {
        let client = self.client.get_value();
        if client.borrow().worker.is_some() {
            return;
        }
        // The relaxed-SIMD build when the browser runs it (fused multiply-adds in the dense layers).
        let script = if crate::ui::pool::relaxed_simd() {
            "./model-worker_loader.js"
        } else {
            "./model-worker-simd128_loader.js"
        };
        let worker = match Worker::new(script) {
            Ok(worker) => worker,
            Err(_) => {
                self.state.set(ModelState::Failed(
                    "the model worker could not be started".into(),
                ));
                return;
            }
        };
        self.state.set(ModelState::Downloading {
            loaded: 0,
            total: None,
        });
        let weak = Rc::downgrade(&client);
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            if let Some(client) = weak.upgrade() {
                self.on_message(&client, event.data());
            }
        });
        let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
            self.state.set(ModelState::Failed(
                "the model worker stopped (its script did not load, or it ran out of memory)"
                    .into(),
            ));
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        let mut c = client.borrow_mut();
        c.worker = Some(worker);
        c._on_message = Some(on_message);
        c._on_error = Some(on_error);
    }

    fn on_message(self, client: &Rc<RefCell<Client>>, data: JsValue) {
        if data.as_string().is_some() {
            // "ready": the worker listens; fetch the model.
            if let Some(worker) = &client.borrow().worker {
                post(
                    worker,
                    &ModelRequest::Load {
                        url: MODEL_URL.to_string(),
                    },
                );
            }
            return;
        }
        let bytes = js_sys::Uint8Array::new(&data).to_vec();
        let answer = postcard::from_bytes::<ModelAnswer>(&bytes)
            .unwrap_or_else(|e| ModelAnswer::Failed(format!("unreadable answer: {e}")));
        match answer {
            ModelAnswer::Progress { loaded, total } => {
                self.state.set(ModelState::Downloading { loaded, total });
            }
            ModelAnswer::Loaded {
                bytes,
                parameters,
                load_ms,
            } => {
                self.state.set(ModelState::Ready {
                    bytes,
                    parameters,
                    load_ms,
                });
                client.borrow_mut().loaded = true;
                self.send_pending(client);
            }
            ModelAnswer::Ran { run, forward_ms } => {
                let answer = {
                    let mut c = client.borrow_mut();
                    c.busy = false;
                    c.answers += 1;
                    c.answers
                };
                self.outcome.set(Some(Ok(Rc::new(TextOutcome {
                    run,
                    forward_ms,
                    answer,
                }))));
                self.send_pending(client);
            }
            ModelAnswer::Swapped { job, report, .. } => {
                if self.swap_answered(client) {
                    self.swap.cells.update(|c| c.push(SwapCell { job, report }));
                }
                self.send_pending(client);
            }
            ModelAnswer::Retrieved { job, report, .. } => {
                if self.swap_answered(client) {
                    self.swap
                        .retrieval
                        .update(|c| c.push(RetrievalCell { job, report }));
                }
                self.send_pending(client);
            }
            ModelAnswer::Training(point) => {
                // Points of the training in the worker (it answers `Trained` at the end).
                if client.borrow().in_flight_plan == Some(client.borrow().plan) {
                    self.swap.curve.update(|c| c.push(point));
                }
            }
            ModelAnswer::Trained(result) => {
                if let Ok(training) = &result {
                    client.borrow_mut().trained = Some(training.job.clone());
                }
                if self.swap_answered(client) {
                    self.swap.training.set(Some(result));
                }
                self.send_pending(client);
            }
            ModelAnswer::Failed(message) => {
                if client.borrow().in_flight_plan.is_some() {
                    // A swap job's request could not be read: count it and go on.
                    self.swap_answered(client);
                    web_sys::console::error_1(&message.into());
                    self.send_pending(client);
                } else if client.borrow().loaded {
                    self.outcome.set(Some(Err(message)));
                    client.borrow_mut().busy = false;
                    self.send_pending(client);
                } else {
                    self.state.set(ModelState::Failed(message));
                }
            }
        }
    }

    /// A swap job was answered: whether the answer belongs to the current plan.
    fn swap_answered(self, client: &Rc<RefCell<Client>>) -> bool {
        let mut c = client.borrow_mut();
        c.busy = false;
        let current = c.in_flight_plan.take() == Some(c.plan);
        if current {
            self.swap.progress.update(|(done, _)| *done += 1);
        }
        current
    }

    /// Sends the newest text, else the plan's next job, when the worker is free.
    fn send_pending(self, client: &Rc<RefCell<Client>>) {
        let mut c = client.borrow_mut();
        if c.busy || !c.loaded || c.worker.is_none() {
            return;
        }
        let request = if let Some(text) = c.pending.take() {
            c.in_flight_plan = None;
            ModelRequest::Run { text }
        } else if let Some(job) = c.queue.pop_front() {
            c.in_flight_plan = Some(c.plan);
            job
        } else {
            return;
        };
        if let Some(worker) = c.worker.as_ref() {
            post(worker, &request);
        }
        c.busy = true;
    }

    /// The training whose maps the worker holds (the plan leaves it out when it is the same).
    pub fn trained(self) -> Option<HedgehogJob> {
        self.client.get_value().borrow().trained.clone()
    }

    /// Replaces the model swap's plan (older answers are dropped, the results cleared).
    pub fn plan(self, jobs: Vec<ModelRequest>) {
        let client = self.client.get_value();
        {
            let mut c = client.borrow_mut();
            c.plan += 1;
            self.swap.progress.set((0, jobs.len()));
            c.queue = jobs.into();
        }
        self.swap.cells.set(Vec::new());
        self.swap.retrieval.set(Vec::new());
        if client
            .borrow()
            .queue
            .iter()
            .any(|r| matches!(r, ModelRequest::TrainHedgehog(_)))
        {
            self.swap.curve.set(Vec::new());
            self.swap.training.set(None);
        }
        self.send_pending(&client);
    }

    /// Runs the model on `text` as soon as the worker is free (a newer text replaces a waiting one).
    pub fn submit(self, text: String) {
        let client = self.client.get_value();
        client.borrow_mut().pending = Some(text);
        self.send_pending(&client);
    }
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// The text box, the model's status and the text's tokens.
///
/// - `config`, `set_config`: the configuration (this reads and writes `text`).
/// - `model`: the model worker's handle, whose outcome the attention view reads.
#[component]
pub(super) fn TextInput(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    model: TextModel,
) -> impl IntoView {
    let (error, set_error) = signal(None::<String>);
    let on_input = move |ev: leptos::ev::Event| {
        let value = event_target_value(&ev);
        if value.len() > MAX_TEXT_BYTES {
            set_error.set(Some(format!(
                "That text is {}; the lab reads at most {} KB (the model sees its first 512 tokens). Paste a shorter part.",
                megabytes(value.len() as u64),
                MAX_TEXT_BYTES / 1000
            )));
            return;
        }
        set_error.set(None);
        // The link carries the first MAX_LINK_TEXT_CHARS characters; the page keeps it all.
        let mut next = config.get_untracked();
        next.attention.text = value;
        set_config.set(next);
    };
    let set_text = move |text: &str| {
        set_error.set(None);
        let mut next = config.get_untracked();
        next.attention.text = text.to_string();
        set_config.set(next);
    };
    let status = move || {
        match model.state.get() {
        ModelState::Idle => view! { <span>"the model starts with this view"</span> }.into_any(),
        ModelState::Downloading { loaded, total } => view! {
            <span>
                <progress
                    max=move || total.unwrap_or(0).max(1) as f64
                    value=loaded as f64
                    aria-label="the model's download"
                ></progress>
                {format!(
                    " downloading the model: {}{}",
                    megabytes(loaded),
                    total.map(|t| format!(" of {}", megabytes(t))).unwrap_or_default()
                )}
            </span>
        }
        .into_any(),
        ModelState::Ready {
            bytes,
            parameters,
            load_ms,
        } => view! {
            <span>{format!(
                "all-MiniLM-L6-v2 loaded: {:.1} M parameters, {} in f16, checked and unpacked in {load_ms:.0} ms",
                parameters as f64 / 1e6,
                megabytes(bytes)
            )}</span>
        }
        .into_any(),
        ModelState::Failed(message) => {
            view! { <span class="error" role="alert">{format!("The model is not available: {message}")}</span> }
                .into_any()
        }
    }
    };
    let tokens = move || {
        model.outcome.with(|o| match o {
            Some(Ok(outcome)) => {
                let run = &outcome.run;
                let cut = run.full_len.map(|n| {
                    let last = run.tokens.get(run.tokens.len().saturating_sub(2)).cloned().unwrap_or_default();
                    format!(
                        " The text has {n} tokens: the model reads the first 512 (up to “{last}”), the rest is left out."
                    )
                });
                let macs = run.multiply_adds as f64;
                let summary = format!(
                    "{} tokens; forward {:.0} ms in the worker ({:.2e} multiply-adds, {:.2} G/s); sentence embedding of {} values.",
                    run.tokens.len(),
                    outcome.forward_ms,
                    macs,
                    macs / outcome.forward_ms.max(1e-3) / 1e6,
                    run.embedding.len()
                );
                let chips = run
                    .tokens
                    .iter()
                    .enumerate()
                    .map(|(i, t)| view! { <li title=format!("token {i}")>{t.clone()}</li> })
                    .collect_view();
                view! {
                    <p
                        class="caption"
                        data-text-tokens=run.tokens.len()
                        data-forward-ms=format!("{:.1}", outcome.forward_ms)
                        data-multiply-adds=run.multiply_adds
                        data-answer=outcome.answer
                    >{summary}{cut}</p>
                    <ol class="tokens">{chips}</ol>
                }
                .into_any()
            }
            Some(Err(message)) => view! { <p class="error" role="alert">{message.clone()}</p> }.into_any(),
            None => ().into_any(),
        })
    };
    let link_note = move || {
        config.with(|c| {
            (c.attention.text.chars().count() > MAX_LINK_TEXT_CHARS).then(|| {
                format!("The link keeps the first {MAX_LINK_TEXT_CHARS} characters of this text.")
            })
        })
    };
    view! {
        <section class="figure text-input" aria-label="your text">
            <h2>"Your text through all-MiniLM-L6-v2"</h2>
            <textarea
                name="text"
                rows="4"
                aria-label="the text the model runs on"
                prop:value=move || config.with(|c| c.attention.text.clone())
                on:input=on_input
            ></textarea>
            <p class="text-presets">
                "or run the model on a stored passage: "
                {STORED_PASSAGES
                    .iter()
                    .enumerate()
                    .map(|(i, text)| view! {
                        <button type="button" class="passage-text" on:click=move |_| set_text(text)>
                            {format!("passage {}", i + 1)}
                        </button>
                        " "
                    })
                    .collect_view()}
            </p>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <p
                class="status model-status"
                data-load-ms=move || match model.state.get() {
                    ModelState::Ready { load_ms, .. } => Some(format!("{load_ms:.1}")),
                    _ => None,
                }
                data-model-state=move || match model.state.get() {
                ModelState::Idle => "idle",
                ModelState::Downloading { .. } => "downloading",
                ModelState::Ready { .. } => "ready",
                ModelState::Failed(_) => "failed",
            }>{status}</p>
            {tokens}
            {link_note}
        </section>
    }
}
