//! The language model's workers, seen from the page ([`LmClient`]): the first started when the
//! view is first opened (the `model-worker` build with `?lm`, which fetches the 98 MB file
//! itself), a second handed its file where there is a second core; one text in flight at a time
//! (scored by the first while the second draws its swap: [`TextRun`]) and the newest waiting one
//! replacing any older (a reader typing never builds a queue), and their answers turned into
//! signals.

use std::cell::RefCell;
use std::rc::Rc;

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::Worker;

mod charting;
mod continuing;
mod transferring;

use super::spawn::{Handlers, post, post_port, spawn};
use crate::lab::models::smollm::text_run::{LmWorkerSlot, Post, TextRun};
use crate::lab::models::smollm::{
    LM_FILE_FROM_PAGE, LM_FILE_MESSAGE, LmFromWorker, LmJob, LmReport, LmToWorker,
};
use crate::lab::pool::decode;
pub use charting::LmChart;
use charting::same_chart;
pub use continuing::LmContinuations;
pub use transferring::LmTransfer;

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
    /// Answers published so far, this one included (a test tells a new answer by it): a
    /// swap's later draws publish the same text's answer again, refined.
    pub count: u32,
    /// The exact score is the same text's from before (only the swap was computed).
    pub exact_kept: bool,
}

/// The worker and what the page has asked it.
#[derive(Default)]
struct Inner {
    worker: Option<Worker>,
    /// Kept alive as long as the worker.
    handlers: Option<Handlers>,
    ready: bool,
    next_id: u64,
    /// The text the workers are computing.
    run: Option<TextRun>,
    /// The first worker's last exact report: it keeps that text's run, so a new setting on
    /// the same text needs only the swap's draws.
    last_exact: Option<Box<LmReport>>,
    /// The newest job asked while another was in flight (or before the model was ready).
    waiting: Option<LmJob>,
    /// The last job sent, so that an unchanged configuration is not asked twice.
    last_sent: Option<LmJob>,
    /// The id of the per-layer chart asked last.
    chart_id: Option<u64>,
    /// The continuation the view asks for (sent once no text is in flight), the one sent last
    /// and its id.
    wanted_continuation: Option<LmJob>,
    continued: Option<LmJob>,
    continuation_id: Option<u64>,
    /// What the page has handed out of the transfer under way.
    transfer: Option<transferring::TransferRun>,
    answers: u32,
    /// A second worker that computes half of each per-layer chart (started once the first has
    /// the model, where the machine has a second core); `None` once it failed.
    helper: Option<Worker>,
    helper_handlers: Option<Handlers>,
    helper_ready: bool,
    /// The two workers hold the ends of one `MessageChannel`: a draw can be split over both.
    connected: bool,
}

/// The page's handle on the language model's worker.
#[derive(Clone, Copy)]
pub struct LmClient {
    pub state: RwSignal<LmState, LocalStorage>,
    pub answer: RwSignal<Option<LmAnswer>, LocalStorage>,
    /// The per-layer chart of the newest answer (asked once the answer is in, when a method is
    /// chosen).
    pub chart: RwSignal<Option<LmChart>, LocalStorage>,
    /// The continuations of the newest text (asked once its answer is in, when `lmgen` > 0).
    pub continuations: RwSignal<Option<LmContinuations>, LocalStorage>,
    /// The attention transfer of the newest configuration (`lmtrain`), as it trains.
    pub transfer: RwSignal<Option<LmTransfer>, LocalStorage>,
    /// Whether a request is being computed.
    pub busy: RwSignal<bool>,
    /// The workers with the model: 1, then 2 once the second has it (the two are connected
    /// before, so from then on a draw can be split over both).
    pub workers: RwSignal<usize>,
    inner: StoredValue<Rc<RefCell<Inner>>, LocalStorage>,
}

impl LmClient {
    pub fn new() -> Self {
        Self {
            state: RwSignal::new_local(LmState::Idle),
            answer: RwSignal::new_local(None),
            chart: RwSignal::new_local(None),
            continuations: RwSignal::new_local(None),
            transfer: RwSignal::new_local(None),
            busy: RwSignal::new(false),
            workers: RwSignal::new(0),
            inner: StoredValue::new_local(Rc::new(RefCell::new(Inner::default()))),
        }
    }

    /// Starts the worker (once).
    pub fn start(self) {
        let inner = self.inner.get_value();
        if inner.borrow().worker.is_some() {
            return;
        }
        let spawned = spawn(
            "",
            move |data| self.on_message(data, false),
            move |message| self.fail(format!("the language model's worker stopped: {message}")),
        );
        let Some((worker, handlers)) = spawned else {
            self.state.set(LmState::Failed(
                "this browser could not start the language model's worker".into(),
            ));
            return;
        };
        self.state.set(LmState::Downloading {
            loaded: 0,
            total: None,
        });
        let mut inner = inner.borrow_mut();
        inner.worker = Some(worker);
        inner.handlers = Some(handlers);
    }

    /// Starts the chart's second worker, where there is a second core (its file comes from
    /// the browser's cache: the first worker has fetched it).
    fn start_helper(self) {
        let cores = web_sys::window().map_or(1.0, |w| w.navigator().hardware_concurrency());
        let inner = self.inner.get_value();
        if cores < 2.0 || inner.borrow().helper.is_some() {
            return;
        }
        let spawned = spawn(
            &format!("&{LM_FILE_FROM_PAGE}"),
            move |data| self.on_message(data, true),
            move |message| self.helper_failed(message),
        );
        if let Some((worker, handlers)) = spawned {
            let mut inner = inner.borrow_mut();
            inner.helper = Some(worker);
            inner.helper_handlers = Some(handlers);
        }
    }

    /// Gives each worker one end of a new `MessageChannel` (`LmToWorker::Connect`), over which
    /// they compute a draw together.
    fn connect_workers(self) {
        let inner = self.inner.get_value();
        let (Some(first), Some(second)) =
            (inner.borrow().worker.clone(), inner.borrow().helper.clone())
        else {
            return;
        };
        let connected = web_sys::MessageChannel::new().and_then(|channel| {
            post_port(&first, 1, &channel.port1())?;
            post_port(&second, 0, &channel.port2())
        });
        match connected {
            Ok(()) => inner.borrow_mut().connected = true,
            Err(error) => {
                web_sys::console::error_2(
                    &"cannot connect the language model's workers".into(),
                    &error,
                );
            }
        }
    }

    /// Hands the first worker's file (`{ lmFile: Uint8Array }`) to the second, its buffer
    /// transferred, never copied into the page; whether `data` was the file.
    fn pass_file(self, data: &JsValue) -> bool {
        let file = js_sys::Reflect::get(data, &LM_FILE_MESSAGE.into())
            .ok()
            .and_then(|file| file.dyn_into::<js_sys::Uint8Array>().ok());
        let Some(file) = file else {
            return false;
        };
        let inner = self.inner.get_value();
        let passed = inner.borrow().helper.as_ref().map(|helper| {
            helper.post_message_with_transfer(data, &js_sys::Array::of1(&file.buffer()))
        });
        if let Some(Err(_)) = passed {
            self.helper_failed("the file could not be handed to it".into());
        }
        true
    }

    /// The second worker stopped: charts go on the first alone; a chart it was computing part
    /// of says so.
    fn helper_failed(self, message: String) {
        let inner = self.inner.get_value();
        {
            let mut inner = inner.borrow_mut();
            if let Some(helper) = inner.helper.take() {
                helper.terminate();
            }
            inner.helper_ready = false;
            inner.connected = false;
        }
        if self.workers.get_untracked() > 1 {
            self.workers.set(1);
        }
        // A draw it was computing goes to the first worker.
        let posts = inner
            .borrow_mut()
            .run
            .as_mut()
            .map(TextRun::second_lost)
            .unwrap_or_default();
        self.dispatch(posts);
        self.transfer_lost_helper();
        self.chart.update(|chart| {
            if let Some(chart) = chart.as_mut().filter(|c| c.parts > 1 && !c.done) {
                chart.done = true;
                chart.error = Some(format!(
                    "the chart's second worker stopped ({message}); change the text or the \
                     method to compute it on one"
                ));
            }
        });
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
            // The text under way hands out no more draws: its answer is not wanted.
            if let Some(run) = inner.run.as_mut() {
                run.stop();
            }
        }
        self.send_waiting();
    }

    /// Sends the waiting job if the model is ready and no text is in flight: the first worker
    /// scores it, the second (when ready) draws its swap.
    fn send_waiting(self) {
        let inner = self.inner.get_value();
        let mut guard = inner.borrow_mut();
        if !guard.ready || guard.run.is_some() {
            return;
        }
        let Some(job) = guard.waiting.take() else {
            return;
        };
        guard.next_id += 1;
        let id = guard.next_id;
        if let Some(helper) = &guard.helper {
            // The chart of the text before is not wanted any more (the first worker stops its
            // own when it reads the new request).
            let _ = post(Some(helper), &LmToWorker::StopChart);
            let _ = post(Some(helper), &LmToWorker::StopContinuing);
        }
        let known = guard.last_exact.clone();
        let workers = (guard.helper_ready, guard.helper_ready && guard.connected);
        let (run, posts) = TextRun::start(id, job.clone(), workers, known);
        guard.run = Some(run);
        guard.last_sent = Some(job);
        drop(guard);
        self.busy.set(true);
        // With a kept exact report and no method, the answer is already complete.
        self.advance_run(posts);
    }

    /// Posts each message to its worker; one the second worker cannot take goes back to the
    /// run (its draw to the first), one the first cannot take fails the model.
    fn dispatch(self, posts: Vec<Post>) {
        for (slot, message) in posts {
            let inner = self.inner.get_value();
            let worker = match slot {
                LmWorkerSlot::First => inner.borrow().worker.clone(),
                LmWorkerSlot::Second => inner.borrow().helper.clone(),
            };
            if post(worker.as_ref(), &message).is_some() {
                continue;
            }
            match slot {
                LmWorkerSlot::First => {
                    self.fail(
                        "the page could not send the text to the language model's worker".into(),
                    );
                    return;
                }
                LmWorkerSlot::Second => self.helper_failed("a message could not be posted".into()),
            }
        }
    }

    /// After a worker's answer of the text in flight: its news published, the next messages
    /// posted, and once the text is done the per-layer chart asked (if every draw came) and
    /// the waiting text sent.
    fn advance_run(self, posts: Vec<Post>) {
        self.dispatch(posts);
        let inner = self.inner.get_value();
        let (news, finished) = {
            let mut guard = inner.borrow_mut();
            let Some(run) = guard.run.as_mut() else {
                return;
            };
            let news = run
                .news()
                .map(|report| (run.job.clone(), report, run.exact_kept()));
            let finished = run
                .is_finished()
                .then(|| (run.is_complete(), run.job.clone()));
            if news.is_some() {
                guard.answers += 1;
            }
            (news.map(|n| (n, guard.answers)), finished)
        };
        if let Some(((job, report, exact_kept), count)) = news {
            // The chart shown is another text's or setting's: it waits, empty, for this text's
            // last draw (the page does not jump, and no old bar stands beside the new answer).
            let stale = self
                .chart
                .with_untracked(|c| c.as_ref().is_some_and(|c| !same_chart(c, &job)));
            if stale {
                self.chart.set(
                    (job.method().is_some() && job.config.attention.lm_chart)
                        .then(|| LmChart::waiting(job.clone())),
                );
            }
            self.answer.set(Some(LmAnswer {
                job,
                report: report.map(Rc::new),
                count,
                exact_kept,
            }));
        }
        if let Some((complete, job)) = finished {
            inner.borrow_mut().run = None;
            self.busy.set(false);
            // A new text's request stopped the workers' continuations: ask again.
            inner.borrow_mut().continued = None;
            self.send_continuation();
            if complete {
                self.ask_chart(&job);
            } else {
                self.chart.set(None);
            }
            self.send_waiting();
        }
    }

    /// An answer about text `id`, fed to the run in flight by `answer` (an older text's is
    /// dropped); then the run moves on.
    fn on_run_answer(self, id: u64, answer: impl FnOnce(&mut TextRun) -> Vec<Post>) {
        let posts = {
            let inner = self.inner.get_value();
            let mut guard = inner.borrow_mut();
            match guard.run.as_mut() {
                Some(run) if run.id == id => answer(run),
                _ => return,
            }
        };
        self.advance_run(posts);
    }

    fn fail(self, message: String) {
        self.busy.set(false);
        self.state.set(LmState::Failed(message));
    }

    /// A message of the first worker, or of the chart's second (`from_helper`), which only
    /// loads the model and computes its share of charts.
    fn on_message(self, data: JsValue, from_helper: bool) {
        if data.as_string().as_deref() == Some(crate::worker::READY) {
            if from_helper {
                // The second worker listens: the two are connected (long before a draw is
                // split: their shared boards cross meanwhile), and the first sends it the
                // file, through the page.
                self.connect_workers();
                let inner = self.inner.get_value();
                let sent = post(inner.borrow().worker.as_ref(), &LmToWorker::SendFile);
                if sent.is_none() {
                    self.helper_failed("the file could not be asked for".into());
                }
            }
            return;
        }
        if !from_helper && self.pass_file(&data) {
            return;
        }
        let bytes = js_sys::Uint8Array::new(&data).to_vec();
        let message = match decode::<LmFromWorker>(&bytes) {
            Ok(message) => message,
            Err(error) if from_helper => {
                self.helper_failed(format!("an unreadable message: {error}"));
                return;
            }
            Err(error) => {
                self.fail(format!(
                    "an unreadable answer from the language model: {error}"
                ));
                return;
            }
        };
        if from_helper {
            match message {
                LmFromWorker::Loaded { .. } => {
                    self.inner.get_value().borrow_mut().helper_ready = true;
                    self.workers.set(2);
                    // A chart begun on one worker starts again on both.
                    let alone = self.chart.with_untracked(|c| {
                        c.as_ref()
                            .filter(|c| !c.done && c.parts == 1)
                            .map(|c| c.job.clone())
                    });
                    if let Some(job) = alone {
                        self.ask_chart(&job);
                    }
                    self.hand_out_layers();
                }
                LmFromWorker::Failed(message) => self.helper_failed(message),
                LmFromWorker::LayerBar { .. } | LmFromWorker::LayersEnded { .. } => {
                    self.on_chart(message);
                }
                LmFromWorker::SwapDrawn { id, draw, result } => {
                    self.on_run_answer(id, |run| run.drawn(LmWorkerSlot::Second, draw, result));
                }
                LmFromWorker::Helped { id, draw } => {
                    self.on_run_answer(id, |run| run.helped(draw));
                }
                LmFromWorker::Continuing {
                    id,
                    decoding,
                    event,
                } => self.on_continuing(id, decoding, event),
                LmFromWorker::Training { id, layer, event } => {
                    self.on_training((id, layer, event), true);
                }
                LmFromWorker::Progress { .. }
                | LmFromWorker::Scored { .. }
                | LmFromWorker::Judged { .. } => {}
            }
            return;
        }
        match message {
            LmFromWorker::Progress { loaded, total } => {
                self.state.set(LmState::Downloading { loaded, total });
            }
            LmFromWorker::Loaded { bytes, load_ms } => {
                self.state.set(LmState::Ready { bytes, load_ms });
                self.inner.get_value().borrow_mut().ready = true;
                self.workers.set(1);
                self.send_waiting();
                self.send_continuation();
                self.hand_out_layers();
                self.start_helper();
            }
            LmFromWorker::Failed(message) => self.fail(message),
            LmFromWorker::Scored { id, report } => {
                // Whichever text it was, the worker now keeps its exact run.
                if let Ok(report) = &report {
                    self.inner.get_value().borrow_mut().last_exact = Some(report.clone());
                }
                self.on_run_answer(id, |run| run.scored(report));
            }
            LmFromWorker::SwapDrawn { id, draw, result } => {
                self.on_run_answer(id, |run| run.drawn(LmWorkerSlot::First, draw, result));
            }
            LmFromWorker::LayerBar { .. } | LmFromWorker::LayersEnded { .. } => {
                self.on_chart(message);
            }
            LmFromWorker::Continuing {
                id,
                decoding,
                event,
            } => self.on_continuing(id, decoding, event),
            LmFromWorker::Training { id, layer, event } => {
                self.on_training((id, layer, event), false);
            }
            LmFromWorker::Judged { id, result } => self.on_judged(id, result),
            // The first worker is always part 0 of a split forward: it answers it.
            LmFromWorker::Helped { .. } => {}
        }
    }
}
