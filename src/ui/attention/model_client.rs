//! The text view's client of the model workers ([`ModelClient`]): the reader's text, the model
//! swap's plan and the workers' start-up, all through the page's one worker client
//! (`ui::pool`: [`Pool::ask`] under the scheduler's rule that a channel's newest ticket wins,
//! natively tested in `lab::pool::scheduler`). This file only turns answers into signals: a text on
//! [`Channel::Text`] (split by rows over the free workers), the plan's jobs on
//! [`Channel::Swap`] (one per worker at a time, after any text), the Hedgehog maps' training on
//! every worker (each keeps the maps).

use std::cell::RefCell;
use std::rc::Rc;

use leptos::prelude::*;

use crate::lab::models::protocol::{
    HedgehogJob, HedgehogPoint, HedgehogTraining, ModelAnswer, ModelRequest, ModelSetup, Origin,
    RetrievalReport, SwapJob, SwapReport, TextRun,
};
use crate::lab::pool::{Channel, Ticket};
use crate::ui::pool::{ModelPool, NO_WORKER, Pool};

/// Where the model stands.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum ModelState {
    /// The text view was never opened.
    Idle,
    /// The workers are starting, or the file downloading (`loaded` of `total` bytes, the
    /// slowest worker's).
    Downloading { loaded: u64, total: Option<u64> },
    /// Checked and unpacked in every worker that could (`load_ms`: the slowest, after its last
    /// byte).
    Ready {
        bytes: u64,
        parameters: usize,
        load_ms: f64,
        workers: usize,
    },
    /// The file is absent, its hash wrong, or no worker started: the sentence says which.
    Failed(String),
}

/// One text's answer: the run, and the forward's time in the worker.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct TextOutcome {
    pub run: TextRun,
    pub forward_ms: f64,
    /// How many texts the workers have answered, this one included (the page shows it, so that
    /// a test or the benchmark can tell a new answer from the previous one).
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
    /// The request it answers: a later plan with the same request keeps this answer (the
    /// retrieval set does not depend on the text).
    pub request: ModelRequest,
}

/// The model swap's answers for the current plan, as they arrive.
#[derive(Clone, Copy)]
pub(super) struct SwapResults {
    pub cells: RwSignal<Vec<SwapCell>, LocalStorage>,
    pub retrieval: RwSignal<Vec<RetrievalCell>, LocalStorage>,
    /// The Hedgehog maps' training curve (the newest training's points).
    pub curve: RwSignal<Vec<HedgehogPoint>, LocalStorage>,
    pub training: RwSignal<Option<Result<HedgehogTraining, String>>, LocalStorage>,
    /// Jobs of the plan answered, and in all, as last shown (with the answers, at most every
    /// [`SHOW_EVERY_MS`]).
    pub progress: RwSignal<(usize, usize)>,
    /// Jobs of the plan answered, and in all, as they come.
    answered: StoredValue<(usize, usize)>,
    /// Swap answers in, not yet in `cells` ([`SHOW_EVERY_MS`]).
    pending: StoredValue<Vec<SwapCell>, LocalStorage>,
    /// When `cells` last took answers (ms, `Date.now`), and whether a later showing is set.
    last_shown: StoredValue<f64>,
    show_set: StoredValue<bool>,
}

/// While a plan's jobs stream in, its answers and its progress reach the page at most this
/// often: each showing redraws the table and three charts on the page's thread, and even a new
/// count alone costs a frame (about 10 ms of style, paint and the answer line), on the two cores
/// the workers computing the next jobs share (a Chromium trace of a second text's swap at 128
/// tokens: about 0.8 s of the page's work beside 6.7 s of the workers'). The first answer after
/// a pause and the plan's last are shown at once.
const SHOW_EVERY_MS: f64 = 400.0;

impl SwapResults {
    /// After an answer of the plan: shows the waiting swap answers now (the plan is complete,
    /// or none was shown for [`SHOW_EVERY_MS`]) or sets a showing for when that much has passed.
    fn show_answers_in_time(self) {
        let now = js_sys::Date::now();
        let complete = self
            .answered
            .try_get_value()
            .is_none_or(|(done, total)| done >= total);
        let since = now - self.last_shown.try_get_value().unwrap_or(0.0);
        if complete || since >= SHOW_EVERY_MS {
            self.show_pending();
        } else if self.show_set.try_get_value() == Some(false) {
            self.show_set.set_value(true);
            let wait = std::time::Duration::from_millis((SHOW_EVERY_MS - since).ceil() as u64);
            set_timeout(
                move || {
                    let _ = self.show_set.try_set_value(false);
                    self.show_pending();
                },
                wait,
            );
        }
    }

    /// Shows the count of answers and moves the waiting swap answers into `cells` (one update
    /// each: one redraw of what reads them).
    fn show_pending(self) {
        let _ = self.last_shown.try_set_value(js_sys::Date::now());
        if let Some(answered) = self.answered.try_get_value()
            && self.progress.try_get_untracked() != Some(answered)
        {
            self.progress.set(answered);
        }
        let waiting = self
            .pending
            .try_update_value(std::mem::take)
            .unwrap_or_default();
        if !waiting.is_empty() {
            self.cells.try_update(|c| c.extend(waiting));
        }
    }
}

/// The text view's handle on the model workers: their state, the latest text's outcome and
/// the swap's results (signals), and the pool they run in.
#[derive(Clone, Copy)]
pub(super) struct ModelClient {
    /// Where the model stands: read from the pool's kept news, so a view rebuilt shows it.
    pub state: Signal<ModelState>,
    pub outcome: RwSignal<Option<Result<Rc<TextOutcome>, String>>, LocalStorage>,
    pub swap: SwapResults,
    pool: ModelPool,
    /// The training whose maps every worker holds.
    trained: StoredValue<Option<(HedgehogJob, Origin)>, LocalStorage>,
    answers: StoredValue<u32>,
    /// The text last sent to the workers, and a plan for a newer text held until that text is
    /// sent ([`ModelClient::plan`]).
    asked_text: StoredValue<Option<String>, LocalStorage>,
    held_plan: StoredValue<Option<(String, Ticket, Vec<ModelRequest>)>, LocalStorage>,
}

impl ModelClient {
    /// A client of `pool` (started by [`ModelClient::start`]).
    pub fn new(pool: ModelPool) -> Self {
        Self {
            state: Signal::derive(move || pool.setups(model_state)),
            outcome: RwSignal::new_local(None),
            swap: SwapResults {
                cells: RwSignal::new_local(Vec::new()),
                retrieval: RwSignal::new_local(Vec::new()),
                curve: RwSignal::new_local(Vec::new()),
                training: RwSignal::new_local(None),
                progress: RwSignal::new((0, 0)),
                answered: StoredValue::new((0, 0)),
                pending: StoredValue::new_local(Vec::new()),
                last_shown: StoredValue::new(0.0),
                show_set: StoredValue::new(false),
            },
            pool,
            trained: StoredValue::new_local(None),
            answers: StoredValue::new(0),
            asked_text: StoredValue::new_local(None),
            held_plan: StoredValue::new_local(None),
        }
    }

    /// Starts the model workers (once); each then fetches and loads the model.
    pub fn start(self) {
        self.pool.start();
    }

    /// Runs the model on `text` (a newer text supersedes a waiting or running one), once the
    /// page has painted the keystroke that changed it: the frame then shows at once, and the
    /// forward has the cores to itself instead of sharing them with the page's style, layout
    /// and paint (about 10 ms of a 30 ms forward at 32 tokens, measured with Chromium's trace).
    /// A hidden page paints no frame: its text is sent at once.
    pub fn submit(self, text: String) {
        let hidden = web_sys::window()
            .and_then(|w| w.document())
            .is_some_and(|d| d.hidden());
        if hidden {
            self.ask_text(text);
        } else {
            request_animation_frame(move || {
                set_timeout(move || self.ask_text(text), std::time::Duration::ZERO);
            });
        }
    }

    fn ask_text(self, text: String) {
        let Some(pool) = self.pool.get() else {
            return;
        };
        self.asked_text.set_value(Some(text.clone()));
        let held = self
            .held_plan
            .try_update_value(|held| held.take_if(|(of, _, _)| *of == text))
            .flatten();
        let ticket = Pool::ticket(&pool, Channel::Text);
        Pool::ask(&pool, ticket, ModelRequest::Run { text }, move |answer| {
            let outcome = match answer {
                Ok(ModelAnswer::Ran { run, forward_ms }) => {
                    let answer = self.answers.try_update_value(|n| {
                        *n += 1;
                        *n
                    });
                    Ok(Rc::new(TextOutcome {
                        run,
                        forward_ms,
                        answer: answer.unwrap_or(0),
                    }))
                }
                Ok(_) => Err("the model answered a text with something else".to_string()),
                Err(message) => Err(message),
            };
            // The view may be gone by the time the answer comes (the reader moved on).
            let _ = self.outcome.try_set(Some(outcome));
        });
        // The text's swap after its own answer: the first free worker runs the text.
        if let Some((_, ticket, jobs)) = held {
            self.send_jobs(&pool, ticket, jobs);
        }
    }

    /// The training whose maps the workers hold (the plan leaves it out when it is the same).
    pub fn trained(self) -> Option<(HedgehogJob, Origin)> {
        self.trained.get_value()
    }

    /// Replaces the model swap's plan: the older plan's answers are no longer delivered and
    /// its jobs not yet sent are dropped; the results are cleared, except the retrievals the
    /// new plan asks for again (answered, they are not sent again).
    pub fn plan(self, jobs: Vec<ModelRequest>) {
        let kept: Vec<RetrievalCell> = self.swap.retrieval.with_untracked(|cells| {
            cells
                .iter()
                .filter(|c| c.report.is_ok() && jobs.contains(&c.request))
                .cloned()
                .collect()
        });
        let total = jobs.len();
        let jobs: Vec<ModelRequest> = jobs
            .into_iter()
            .filter(|j| !kept.iter().any(|c| &c.request == j))
            .collect();
        self.swap.answered.set_value((total - jobs.len(), total));
        self.swap.progress.set((total - jobs.len(), total));
        self.swap.pending.set_value(Vec::new());
        // The new plan's first answer is shown at once.
        self.swap.last_shown.set_value(0.0);
        self.swap.cells.set(Vec::new());
        self.swap.retrieval.set(kept);
        if jobs
            .iter()
            .any(|r| matches!(r, ModelRequest::TrainHedgehog { .. }))
        {
            self.swap.curve.set(Vec::new());
            self.swap.training.set(None);
        }
        let Some(pool) = self.pool.get() else {
            if !jobs.is_empty() {
                self.swap.answered.set_value((0, 0));
                self.swap.progress.set((0, 0));
            }
            return;
        };
        // The older plan's answers stop here, whether this one is sent now or held (with its
        // ticket: a newer plan replaces it).
        let ticket = Pool::ticket(&pool, Channel::Swap);
        // A plan for a text not sent yet (the keystroke's frame comes first,
        // [`ModelClient::submit`]) waits for it, so that the text's own answer is not queued
        // behind the swap's first jobs on every worker.
        let text = jobs.iter().find_map(|r| match r {
            ModelRequest::Swap(job) => Some(job.text.clone()),
            _ => None,
        });
        match text {
            Some(text) if self.asked_text.with_value(|t| t.as_ref() != Some(&text)) => {
                self.held_plan.set_value(Some((text, ticket, jobs)));
            }
            _ => {
                self.held_plan.set_value(None);
                self.send_jobs(&pool, ticket, jobs);
            }
        }
    }

    /// Sends the plan's `jobs` under `ticket`; their answers reach [`SwapResults`].
    fn send_jobs(self, pool: &Rc<RefCell<Pool>>, ticket: Ticket, jobs: Vec<ModelRequest>) {
        let swap = self.swap;
        for job in jobs {
            let request = job.clone();
            let on_point = move |update: ModelAnswer| {
                if let ModelAnswer::Training(point) = update {
                    swap.curve.try_update(|c| c.push(point));
                }
            };
            Pool::ask_with_updates(pool, ticket, job, on_point, move |answer| {
                match answer {
                    Ok(ModelAnswer::Swapped { job, report, .. }) => {
                        let cell = SwapCell { job, report };
                        let _ = swap.pending.try_update_value(|p| p.push(cell));
                    }
                    Ok(ModelAnswer::Retrieved { job, report, .. }) => {
                        swap.retrieval.try_update(|c| {
                            c.push(RetrievalCell {
                                job,
                                report,
                                request,
                            })
                        });
                    }
                    Ok(ModelAnswer::Trained(result)) => {
                        if let Ok(training) = &result {
                            self.trained
                                .try_set_value(Some((training.job.clone(), training.origin)));
                            // While it trains split by heads, the points are the first part's
                            // heads'; the record's curve is every head's mean.
                            let _ = swap.curve.try_set(training.curve.clone());
                        }
                        let _ = swap.training.try_set(Some(result));
                    }
                    Ok(_) => {}
                    // A job the workers could not read or run: counted, and said in the console
                    // (unless no model worker is left: the status already says why).
                    Err(message) => {
                        if message != NO_WORKER {
                            web_sys::console::error_1(&message.into());
                        }
                    }
                }
                // The view may be gone by the time an answer comes (the reader moved on).
                let _ = swap.answered.try_update_value(|(done, _)| *done += 1);
                swap.show_answers_in_time();
            });
        }
    }
}

/// The page's view of the workers' start-up news (none at all: not started).
fn model_state(setups: &[Option<ModelSetup>]) -> ModelState {
    if setups.is_empty() {
        return ModelState::Idle;
    }
    let mut slowest: Option<(u64, Option<u64>)> = None;
    let mut loaded = Vec::new();
    let mut failure = None;
    let mut loading = false;
    for setup in setups {
        match setup {
            None => {
                loading = true;
                slowest = Some((0, slowest.and_then(|(_, t)| t)));
            }
            Some(ModelSetup::Progress {
                loaded: bytes,
                total,
            }) => {
                loading = true;
                slowest = Some(match slowest {
                    Some((l, t)) if l <= *bytes => (l, t.or(*total)),
                    _ => (*bytes, *total),
                });
            }
            Some(ModelSetup::Loaded {
                bytes,
                parameters,
                load_ms,
            }) => loaded.push((*bytes, *parameters, *load_ms)),
            Some(ModelSetup::Failed(message)) => failure = Some(message.clone()),
        }
    }
    if loading {
        let (loaded, total) = slowest.unwrap_or((0, None));
        return ModelState::Downloading { loaded, total };
    }
    match (loaded.first(), failure) {
        (Some(&(bytes, parameters, _)), _) => ModelState::Ready {
            bytes,
            parameters,
            load_ms: loaded.iter().map(|l| l.2).fold(0.0, f64::max),
            workers: loaded.len(),
        },
        (None, Some(message)) => ModelState::Failed(message),
        (None, None) => ModelState::Failed("no model worker started".into()),
    }
}
