//! Requests outside the scheduler's job (the probe and its pair, the data panel, an attention
//! part): sent to the least busy ready worker, held until one is ready, failed when none is
//! left, and whom to tell each outcome.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use leptos::prelude::set_timeout;

use super::{NO_WORKER, Pool, WorkerKind};
use crate::lab::attention::{AttentionOutput, AttentionRequest};
use crate::lab::config::ExperimentConfig;
use crate::lab::data_view::DataView;
use crate::lab::tasks::{ProbeRequest, WorkerRequest, WorkerResponse, encode};
use crate::numerics::probe::{PairVectors, ProbeResult};

/// Told the outcome of a probe.
pub type ProbeDone = Box<dyn FnOnce(Result<ProbeResult, String>)>;
/// Told the outcome of one part of the attention view.
pub type AttentionDone = Box<dyn FnOnce(Result<AttentionOutput, String>)>;
/// Told the outcome of the data panel's view.
pub type DataViewDone = Box<dyn FnOnce(Result<DataView, String>)>;
/// Told the probe's pair of the scatter dataset.
pub type PairDone = Box<dyn FnOnce(Result<PairVectors, String>)>;

/// A request outside the scheduler's job (a probe, its pair, the data panel, an attention part) and whom to tell.
pub(super) enum SideJob {
    Probe(ProbeDone),
    Attention(AttentionDone),
    DataView(DataViewDone),
    Pair(PairDone),
}

impl SideJob {
    /// Tells the waiting side its answer (one of another kind is dropped, as never asked).
    pub(super) fn answer(self, response: WorkerResponse) {
        match (self, response) {
            (SideJob::Probe(done), WorkerResponse::Probe { output, .. }) => done(output),
            (SideJob::Attention(done), WorkerResponse::Attention { output, .. }) => done(output),
            (SideJob::Pair(done), WorkerResponse::ScatterPair { output, .. }) => done(output),
            (SideJob::DataView(done), WorkerResponse::DataView { output, .. }) => {
                done(output.map(|view| *view));
            }
            _ => {}
        }
    }

    /// Tells the waiting side that the request failed.
    pub(super) fn fail(self, message: String) {
        match self {
            SideJob::Probe(done) => done(Err(message)),
            SideJob::Attention(done) => done(Err(message)),
            SideJob::DataView(done) => done(Err(message)),
            SideJob::Pair(done) => done(Err(message)),
        }
    }
}

/// A side request that waits for a worker to be ready.
pub(super) type Waiting = (Box<dyn FnOnce(u64) -> WorkerRequest>, SideJob);

impl Pool {
    /// Runs the single-pair probe in the least busy worker and tells `done` the outcome.
    pub fn probe(pool: &Rc<RefCell<Pool>>, request: ProbeRequest, done: ProbeDone) {
        if request.fit_to_pair.is_some() {
            // The worker fits the typed pair.
            Pool::ensure_covers(pool, WorkerKind::for_estimators(&[request.estimator]));
        }
        Pool::side(
            pool,
            Box::new(move |id| WorkerRequest::Probe { id, probe: request }),
            SideJob::Probe(done),
        );
    }

    /// Computes one part of the attention view in the least busy worker and tells `done` the
    /// outcome.
    pub fn attention(pool: &Rc<RefCell<Pool>>, request: AttentionRequest, done: AttentionDone) {
        Pool::side(
            pool,
            Box::new(move |id| WorkerRequest::Attention { id, request }),
            SideJob::Attention(done),
        );
    }

    /// Asks the least busy worker for pair `index` of `config`'s scatter dataset.
    pub fn scatter_pair(
        pool: &Rc<RefCell<Pool>>,
        config: ExperimentConfig,
        index: usize,
        done: PairDone,
    ) {
        Pool::side(
            pool,
            Box::new(move |id| WorkerRequest::ScatterPair { id, config, index }),
            SideJob::Pair(done),
        );
    }

    /// Computes the data panel of `config` in the least busy worker and tells `done` the
    /// outcome.
    pub fn data_view(pool: &Rc<RefCell<Pool>>, config: ExperimentConfig, done: DataViewDone) {
        Pool::ensure_covers(pool, WorkerKind::for_estimators(&config.estimators));
        Pool::side(
            pool,
            Box::new(move |id| WorkerRequest::DataView { id, config }),
            SideJob::DataView(done),
        );
    }

    /// Sends a request outside the job to the least busy ready worker; while workers are
    /// still starting, it waits for the first; without any worker it fails (or, in the
    /// browser tests, runs on the page in a task of its own).
    fn side(
        pool: &Rc<RefCell<Pool>>,
        message: Box<dyn FnOnce(u64) -> WorkerRequest>,
        job: SideJob,
    ) {
        let mut p = pool.borrow_mut();
        let (id, slot) = p.scheduler.start_side_request();
        if let Some(index) = slot {
            let bytes = encode(&message(id)).map(|b| js_sys::Uint8Array::from(b.as_slice()));
            if let (Ok(array), Some(handle)) = (bytes, p.workers.get(index))
                && handle.worker.post_message(&array).is_ok()
            {
                p.side_jobs.insert(id, job);
                return;
            }
            p.scheduler.send_failed(id);
            drop(p);
            job.fail("the request could not be sent to a worker".into());
            return;
        }
        p.scheduler.side_request_answered(id);
        if p.scheduler.workers() > 0 {
            p.waiting.push((message, job));
            return;
        }
        let Some(runner) = p.page_runner.clone() else {
            drop(p);
            job.fail(NO_WORKER.into());
            return;
        };
        let (id, _) = p.scheduler.start_side_request();
        p.side_jobs.insert(id, job);
        let bytes = encode(&message(id));
        let this = p.this.clone();
        drop(p);
        set_timeout(
            move || {
                let answer = bytes.map(|b| runner(&b)).unwrap_or_default();
                if let Some(pool) = this.upgrade() {
                    Pool::on_answer(&pool, None, &answer);
                }
            },
            Duration::ZERO,
        );
    }

    /// Sends the side requests that waited for a worker (or fails them if none is left).
    pub(super) fn flush_waiting(pool: &Rc<RefCell<Pool>>) {
        let waiting = std::mem::take(&mut pool.borrow_mut().waiting);
        for (message, job) in waiting {
            Pool::side(pool, message, job);
        }
    }
}
