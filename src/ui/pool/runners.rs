//! The narrow handles the components get through context (the probe panel, the attention
//! view, the data panel): each can send its own requests to a pool, nothing else.

use std::cell::RefCell;
use std::rc::Rc;

use leptos::prelude::{LocalStorage, StoredValue, UpdateValue, WithValue};

use super::{AttentionDone, DataViewDone, NO_WORKER, PairDone, Pool, ProbeDone, WorkerKind};
use crate::lab::attention::AttentionRequest;
use crate::lab::config::ExperimentConfig;
use crate::lab::tasks::ProbeRequest;

/// The narrow handle the probe panel gets through context: it can run a probe in the pool
/// (and ask for the probed pair of the scatter dataset), nothing else.
#[derive(Clone, Copy)]
pub struct ProbeRunner(pub StoredValue<Rc<RefCell<Pool>>, LocalStorage>);

impl ProbeRunner {
    /// Runs `request` in a worker; `done` is told the outcome.
    pub fn run(&self, request: ProbeRequest, done: ProbeDone) {
        self.0.with_value(|pool| Pool::probe(pool, request, done));
    }

    /// Asks a worker for pair `index` of `config`'s scatter dataset.
    pub fn scatter_pair(&self, config: ExperimentConfig, index: usize, done: PairDone) {
        self.0
            .with_value(|pool| Pool::scatter_pair(pool, config, index, done));
    }
}

/// The narrow handle the attention view gets through context: it can compute attention parts
/// in a pool of `full-worker`s ([`WorkerKind::Full`]), started on its first request, nothing
/// else.
#[derive(Clone, Copy)]
pub struct AttentionRunner(pub StoredValue<Option<Rc<RefCell<Pool>>>, LocalStorage>);

impl AttentionRunner {
    /// A runner whose pool starts with its first request.
    pub fn lazy() -> Self {
        AttentionRunner(StoredValue::new_local(None))
    }

    /// Computes `request` in a worker; `done` is told the outcome.
    pub fn run(&self, request: AttentionRequest, done: AttentionDone) {
        let pool = self.0.try_update_value(|pool| {
            pool.get_or_insert_with(|| Pool::of(WorkerKind::Full, |_| {}))
                .clone()
        });
        match pool {
            Some(pool) => Pool::attention(&pool, request, done),
            None => done(Err(NO_WORKER.into())),
        }
    }
}

/// The narrow handle the data panel gets through context: it can compute the panel's view in
/// the pool, nothing else.
#[derive(Clone, Copy)]
pub struct DataViewRunner(pub StoredValue<Rc<RefCell<Pool>>, LocalStorage>);

impl DataViewRunner {
    /// Computes the data panel of `config` in a worker; `done` is told the outcome.
    pub fn run(&self, config: ExperimentConfig, done: DataViewDone) {
        self.0
            .with_value(|pool| Pool::data_view(pool, config, done));
    }
}
