//! The narrow handles the components get through context (the probe panel, the attention
//! view, the data panel, the export bar): each can send its own kind of request to a pool,
//! under tickets of its own channel, nothing else.

use std::cell::RefCell;
use std::rc::Rc;

use leptos::prelude::{LocalStorage, RwSignal, StoredValue, Track, Update, UpdateValue, WithValue};

use super::{Channel, NO_WORKER, Pool, PoolEvent, Ticket, WorkerKind};
use crate::lab::attention::{AttentionOutput, AttentionPart, AttentionRequest, ProblemShare};
use crate::lab::config::HeadSource;
use crate::lab::kernel::data_view::DataView;
use crate::lab::kernel::tasks::{ProbeRequest, TaskOutput};
use crate::lab::models::protocol::ModelSetup;
use crate::lab::pool::{Ask, DataViewAsk, ExportTaskAsk, ScatterPairAsk};
use crate::numerics::probe::{PairVectors, ProbeResult};

/// The probe panel's handle: probes and the probed pair of the scatter dataset, on the
/// [`Channel::Probe`].
#[derive(Clone, Copy)]
pub struct ProbeRunner(pub StoredValue<Rc<RefCell<Pool>>, LocalStorage>);

impl ProbeRunner {
    /// A new probe: its requests supersede the previous probe's.
    pub fn ticket(&self) -> Option<Ticket> {
        self.0
            .try_with_value(|pool| Pool::ticket(pool, Channel::Probe))
    }

    /// Runs `request` in a worker; `done` is told the outcome unless a newer probe started.
    pub fn run(
        &self,
        ticket: Ticket,
        request: ProbeRequest,
        done: impl FnOnce(Result<ProbeResult, String>) + 'static,
    ) {
        self.ask(ticket, request, done);
    }

    /// Asks a worker for pair `index` of `config`'s scatter dataset.
    pub fn scatter_pair(
        &self,
        ticket: Ticket,
        request: ScatterPairAsk,
        done: impl FnOnce(Result<PairVectors, String>) + 'static,
    ) {
        self.ask(ticket, request, done);
    }

    fn ask<A: Ask>(
        &self,
        ticket: Ticket,
        ask: A,
        done: impl FnOnce(Result<A::Answer, String>) + 'static,
    ) {
        self.0.with_value(|pool| Pool::ask(pool, ticket, ask, done));
    }
}

/// A pool of workers that hold a model: the encoder's (started when the text view is first
/// opened), shared by the text view's client ([`crate::ui::attention`]'s `ModelClient`) and
/// the attention view's parts on the text's heads, which those workers keep; or the language
/// model's heads workers (started when the source `lm` is first chosen).
///
/// Made under the page's owner, it keeps its workers' start-up news with it: a view rebuilt
/// when the reader comes back reads them again (a view's own signals die with it).
#[derive(Clone, Copy)]
pub struct ModelPool {
    pool: StoredValue<Option<Rc<RefCell<Pool>>>, LocalStorage>,
    kind: WorkerKind,
    /// Each worker's last start-up news (empty: not started).
    setups: StoredValue<Vec<Option<ModelSetup>>, LocalStorage>,
    /// Counts the news: what a view's state follows.
    news: RwSignal<u64>,
}

impl ModelPool {
    /// No model workers yet (the encoder's, when started).
    pub fn idle() -> Self {
        ModelPool::idle_of(WorkerKind::Model)
    }

    /// No workers of `kind` yet.
    pub fn idle_of(kind: WorkerKind) -> Self {
        ModelPool {
            pool: StoredValue::new_local(None),
            kind,
            setups: StoredValue::new_local(Vec::new()),
            news: RwSignal::new(0),
        }
    }

    /// Starts the pool once; its workers' start-up news are kept ([`ModelPool::setups`]).
    pub fn start(self) {
        if self.get().is_some() {
            return;
        }
        let listener = move |event: PoolEvent| {
            if let PoolEvent::WorkerSetup { slot, setup } = event {
                self.note(slot, setup);
            }
        };
        let started = self.pool.try_update_value(|pool| {
            pool.get_or_insert_with(|| Pool::of(self.kind, listener))
                .clone()
        });
        let workers = started.map_or(0, |pool| pool.borrow().workers());
        let failed = || ModelSetup::Failed("the model worker could not be started".into());
        self.setups.update_value(|setups| match workers {
            0 => *setups = vec![Some(failed())],
            n => setups.resize(n.max(setups.len()), None),
        });
        self.news.update(|n| *n += 1);
    }

    /// Keeps worker `slot`'s news.
    fn note(self, slot: usize, setup: ModelSetup) {
        self.setups.update_value(|setups| {
            if slot >= setups.len() {
                setups.resize(slot + 1, None);
            }
            setups[slot] = Some(setup);
        });
        self.news.update(|n| *n += 1);
    }

    /// Reads each worker's last start-up news (`None`: none yet; empty: the pool is not
    /// started), tracked: a closure that reads it reruns with every news.
    pub fn setups<T>(self, read: impl FnOnce(&[Option<ModelSetup>]) -> T) -> T {
        self.news.track();
        self.setups.with_value(|setups| read(setups))
    }

    /// The pool, if started.
    pub fn get(self) -> Option<Rc<RefCell<Pool>>> {
        self.pool.try_with_value(Clone::clone).flatten()
    }
}

/// The attention view's handle: each part on its own channel ([`Channel::Attention`]), in the
/// page's pool (which takes `full-worker`s for them) or, for the reader's text, in the model
/// workers, which hold its heads (the encoder's, or the language model's).
#[derive(Clone, Copy)]
pub struct AttentionRunner {
    pub main: StoredValue<Rc<RefCell<Pool>>, LocalStorage>,
    pub model: ModelPool,
    pub lm: ModelPool,
}

impl AttentionRunner {
    /// The pool that computes the attention view's parts on `source`'s heads, if started.
    fn pool_of(&self, source: HeadSource) -> Option<Rc<RefCell<Pool>>> {
        match source {
            HeadSource::Text => self.model.get(),
            HeadSource::Lm => self.lm.get(),
            HeadSource::Synthetic | HeadSource::Minilm => self.main.try_with_value(Clone::clone),
        }
    }

    /// A new length study on `source`'s heads: a new ticket of the study's channel, so that
    /// the older study's units still in flight are never delivered and its waiting ones never
    /// sent. `None` without a pool.
    pub fn length_study(&self, source: HeadSource) -> Option<StudyChannel> {
        let pool = self.pool_of(source)?;
        let ticket = Pool::ticket(&pool, Channel::Attention(AttentionPart::Lengths));
        Some(StudyChannel { pool, ticket })
    }

    /// Computes `request` in a worker; `done` is told the outcome unless a newer request for
    /// the same part superseded it (the newer one is sent once this one is answered).
    pub fn run(
        &self,
        request: AttentionRequest,
        done: impl FnOnce(Result<AttentionOutput, String>) + 'static,
    ) {
        match self.pool_of(request.config.attention.source) {
            Some(pool) => {
                let part: AttentionPart = request.part;
                let ticket = Pool::ticket(&pool, Channel::Attention(part));
                if part.splits_in_shares() {
                    ask_in_shares(&pool, ticket, request, done);
                } else {
                    Pool::ask(&pool, ticket, request, done);
                }
            }
            None => done(Err(NO_WORKER.into())),
        }
    }
}

/// One length study's units in the pool, under one ticket ([`AttentionRunner::length_study`]).
pub struct StudyChannel {
    pool: Rc<RefCell<Pool>>,
    ticket: Ticket,
}

impl StudyChannel {
    /// The pool's live workers: as many units as this are kept in flight.
    pub fn workers(&self) -> usize {
        self.pool.borrow().workers()
    }

    /// Sends one unit; `done` is told its outcome unless the study was superseded or stopped.
    pub fn ask(
        &self,
        request: AttentionRequest,
        done: impl FnOnce(Result<AttentionOutput, String>) + 'static,
    ) {
        Pool::ask(&self.pool, self.ticket, request, done);
    }

    /// Stops listening: a new ticket of the channel, so the units in flight finish in their
    /// workers (a worker cannot be interrupted without losing every other part on it) and
    /// their answers are dropped.
    pub fn supersede(&self) {
        Pool::ticket(&self.pool, self.ticket.channel);
    }
}

/// The most shares a part is split into.
const MAX_SHARES: usize = 8;

/// Asks for a part that reads every head ([`AttentionPart::splits_in_shares`]) in shares of
/// its problems, one per worker of `pool` (at 128 tokens the real-head table took 16 s of one
/// model worker while the other idled), under one ticket; `done` is told the shares' answers
/// merged in order (the whole part's, bit for bit), or the first error.
fn ask_in_shares(
    pool: &Rc<RefCell<Pool>>,
    ticket: Ticket,
    request: AttentionRequest,
    done: impl FnOnce(Result<AttentionOutput, String>) + 'static,
) {
    let count = pool.borrow().workers().clamp(1, MAX_SHARES);
    if count == 1 {
        Pool::ask(pool, ticket, request, done);
        return;
    }
    type Done = Box<dyn FnOnce(Result<AttentionOutput, String>)>;
    let done: Rc<RefCell<Option<Done>>> = Rc::new(RefCell::new(Some(Box::new(done))));
    let answers: Rc<RefCell<Vec<Option<AttentionOutput>>>> =
        Rc::new(RefCell::new(vec![None; count]));
    for index in 0..count {
        let share = AttentionRequest {
            share: Some(ProblemShare { index, count }),
            ..request.clone()
        };
        let (done, answers) = (done.clone(), answers.clone());
        Pool::ask(pool, ticket, share, move |answer| {
            let merged = match answer {
                Ok(output) => {
                    let mut answers = answers.borrow_mut();
                    answers[index] = Some(output);
                    if answers.iter().any(Option::is_none) {
                        return;
                    }
                    let shares = answers.iter_mut().filter_map(Option::take).collect();
                    AttentionOutput::merge_shares(shares).map_err(|e| e.to_string())
                }
                Err(message) => Err(message),
            };
            // The first error, or the merged answer, once.
            let done = done.borrow_mut().take();
            if let Some(done) = done {
                done(merged);
            }
        });
    }
}

/// The data panel's handle: its view of a configuration, on the [`Channel::DataView`].
#[derive(Clone, Copy)]
pub struct DataViewRunner(pub StoredValue<Rc<RefCell<Pool>>, LocalStorage>);

impl DataViewRunner {
    /// Computes `request` in a worker; `done` is told the outcome unless a newer request
    /// superseded it.
    pub fn run(&self, request: DataViewAsk, done: impl FnOnce(Result<DataView, String>) + 'static) {
        self.0.with_value(|pool| {
            let ticket = Pool::ticket(pool, Channel::DataView);
            Pool::ask(pool, ticket, request, done);
        });
    }
}

/// The export bar's handle: the export's tasks in the kernel view's own pool, on the
/// [`Channel::Export`].
#[derive(Clone, Copy)]
pub struct ExportRunner(pub StoredValue<Rc<RefCell<Pool>>, LocalStorage>);

impl ExportRunner {
    /// A new export: its tasks supersede an older export's.
    pub fn ticket(&self) -> Option<Ticket> {
        self.0
            .try_with_value(|pool| Pool::ticket(pool, Channel::Export))
    }

    /// Computes one export task; `done` is told the outcome unless a newer export started.
    pub fn run(
        &self,
        ticket: Ticket,
        request: ExportTaskAsk,
        done: impl FnOnce(Result<TaskOutput, String>) + 'static,
    ) {
        self.0
            .with_value(|pool| Pool::ask(pool, ticket, request, done));
    }
}
