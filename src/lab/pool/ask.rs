//! The page's side requests as types: each kind of work outside the job (the probe, its pair,
//! the data panel, an attention part, an export task) is one type implementing [`Ask`], which
//! says what message it sends and what answer it gets back. The pool has one function for all
//! of them (`ui::pool`: `Pool::ask`), and the answer reaches its caller typed.

use super::protocol::{
    TaskRequest, WorkerRequest, encode_request, request_kind, response_answer, response_kind,
};
use super::side::{PartOf, Reach};
use crate::lab::attention::{AttentionOutput, AttentionRequest};
use crate::lab::config::ExperimentConfig;
use crate::lab::kernel::data_view::DataView;
use crate::lab::kernel::tasks::{Task, TaskOutput};
use crate::lab::models::protocol::{ModelAnswer, ModelRequest};
use crate::numerics::estimators::EstimatorId;
use crate::numerics::probe::{PairVectors, ProbeRequest, ProbeResult};

/// A request to a worker, typed by its answer.
pub trait Ask: 'static {
    /// What the worker's answer holds.
    type Answer: 'static;

    /// The message of `part` (the whole request unless [`Ask::reach`] splits it), carrying
    /// `id`.
    fn message(&self, id: u64, part: &PartOf) -> WorkerRequest;

    /// [`Ask::message`]'s bytes, as `encode` writes them, written by kind
    /// (`encode_request`): a module that never asks for a kind links none of its encoder.
    fn request_bytes(&self, id: u64, part: &PartOf) -> Result<Vec<u8>, String>;

    /// Its answer out of the worker's encoded response (a response of another kind is an
    /// error). Each kind decodes only its own answer's type, so a module that never asks for
    /// a kind links none of its decoder (the page's first view: no attention part, no model).
    fn answer(response: &[u8]) -> Result<Self::Answer, String>;

    /// Whether only `full-worker` computes it (the attention math, the optimised A's fit).
    fn needs_full_worker(&self) -> bool {
        false
    }

    /// On how many workers it runs.
    fn reach(&self) -> Reach {
        Reach::One
    }
}

/// Whether one of `estimators` needs the optimiser (only `full-worker` links it).
fn any_needs_optimiser(estimators: &[EstimatorId]) -> bool {
    estimators.iter().any(|e| e.info().needs_optimiser())
}

impl Ask for ProbeRequest {
    type Answer = ProbeResult;

    fn request_bytes(&self, id: u64, _part: &PartOf) -> Result<Vec<u8>, String> {
        encode_request(request_kind::PROBE, &(id, self))
    }

    fn message(&self, id: u64, _part: &PartOf) -> WorkerRequest {
        WorkerRequest::Probe {
            id,
            probe: self.clone(),
        }
    }

    fn answer(response: &[u8]) -> Result<ProbeResult, String> {
        response_answer(response, response_kind::PROBE, "probe")?
    }

    /// A typed pair is fitted in the worker, which then needs the optimiser if the estimator
    /// does.
    fn needs_full_worker(&self) -> bool {
        (self.fit_to_pair.is_some() && any_needs_optimiser(&[self.estimator]))
            || self.coupling.needs_full_worker()
    }
}

impl Ask for AttentionRequest {
    type Answer = AttentionOutput;

    fn request_bytes(&self, id: u64, _part: &PartOf) -> Result<Vec<u8>, String> {
        encode_request(request_kind::ATTENTION, &(id, self))
    }

    fn message(&self, id: u64, _part: &PartOf) -> WorkerRequest {
        WorkerRequest::Attention {
            id,
            request: self.clone(),
        }
    }

    fn answer(response: &[u8]) -> Result<AttentionOutput, String> {
        response_answer(response, response_kind::ATTENTION, "attention")?
    }

    fn needs_full_worker(&self) -> bool {
        true
    }
}

/// The kernel view's data panel of a configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct DataViewAsk(pub ExperimentConfig);

impl Ask for DataViewAsk {
    type Answer = DataView;

    fn request_bytes(&self, id: u64, _part: &PartOf) -> Result<Vec<u8>, String> {
        encode_request(request_kind::DATA_VIEW, &(id, &self.0))
    }

    fn message(&self, id: u64, _part: &PartOf) -> WorkerRequest {
        WorkerRequest::DataView {
            id,
            config: self.0.clone(),
        }
    }

    fn answer(response: &[u8]) -> Result<DataView, String> {
        response_answer::<Result<Box<DataView>, String>>(
            response,
            response_kind::DATA_VIEW,
            "data panel",
        )?
        .map(|view| *view)
    }

    fn needs_full_worker(&self) -> bool {
        any_needs_optimiser(&self.0.estimators)
    }
}

/// Pair `index` of a configuration's scatter dataset (the probe's pair).
#[derive(Clone, Debug, PartialEq)]
pub struct ScatterPairAsk {
    pub config: ExperimentConfig,
    pub index: usize,
}

impl Ask for ScatterPairAsk {
    type Answer = PairVectors;

    fn request_bytes(&self, id: u64, _part: &PartOf) -> Result<Vec<u8>, String> {
        encode_request(request_kind::SCATTER_PAIR, &(id, &self.config, self.index))
    }

    fn message(&self, id: u64, _part: &PartOf) -> WorkerRequest {
        WorkerRequest::ScatterPair {
            id,
            config: self.config.clone(),
            index: self.index,
        }
    }

    fn answer(response: &[u8]) -> Result<PairVectors, String> {
        response_answer(response, response_kind::SCATTER_PAIR, "scatter pair")?
    }
}

/// One task of the export ([`crate::lab::page::ExportRun`]): computed without fused multiply-adds, so
/// that every build, relaxed SIMD included, gives the command line's bits.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportTaskAsk {
    pub config: ExperimentConfig,
    pub task: Task,
}

impl Ask for ExportTaskAsk {
    type Answer = TaskOutput;

    fn request_bytes(&self, id: u64, part: &PartOf) -> Result<Vec<u8>, String> {
        match self.message(id, part) {
            WorkerRequest::Task(request) => encode_request(request_kind::TASK, &request),
            _ => Err("an export task's message is a task".into()),
        }
    }

    fn message(&self, id: u64, _part: &PartOf) -> WorkerRequest {
        WorkerRequest::Task(TaskRequest {
            id,
            config: self.config.clone(),
            task: self.task,
            fused: false,
        })
    }

    /// A task's answer is its [`crate::lab::pool::TaskResponse`]: its id, then its output.
    fn answer(response: &[u8]) -> Result<TaskOutput, String> {
        response_answer(response, response_kind::TASK, "export task")?
    }

    fn needs_full_worker(&self) -> bool {
        any_needs_optimiser(&self.config.estimators) || self.config.coupling.needs_full_worker()
    }
}

/// A request to the model workers: a text's forward (split by rows over every free worker),
/// a swap or retrieval job (one worker), the Hedgehog maps' training (every worker, so that
/// each holds the maps). The answer is the worker's [`ModelAnswer`]; `Failed` is an error.
impl Ask for ModelRequest {
    type Answer = ModelAnswer;

    fn request_bytes(&self, id: u64, part: &PartOf) -> Result<Vec<u8>, String> {
        encode_request(request_kind::MODEL, &(id, part, self))
    }

    fn message(&self, id: u64, part: &PartOf) -> WorkerRequest {
        WorkerRequest::Model {
            id,
            part: part.clone(),
            request: self.clone(),
        }
    }

    fn answer(response: &[u8]) -> Result<ModelAnswer, String> {
        match response_answer(response, response_kind::MODEL, "model")? {
            ModelAnswer::Failed(message) => Err(message),
            answer => Ok(answer),
        }
    }

    fn reach(&self) -> Reach {
        match self {
            ModelRequest::Run { .. } => Reach::Free,
            ModelRequest::TrainHedgehog { .. } => Reach::All,
            ModelRequest::Swap(_) | ModelRequest::Retrieve { .. } => Reach::One,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::kernel::tasks::Workspace;
    use crate::lab::pool::{encode, handle_request};
    use crate::lab::test_support::config_with;

    /// Sends `ask` through the worker's own handler, as the pool does (its bytes by kind, which
    /// are checked against `encode`'s of its message).
    fn ask<A: Ask>(workspace: &mut Workspace, ask: A) -> Result<A::Answer, String> {
        let bytes = ask.request_bytes(5, &PartOf::whole(0)).unwrap();
        assert_eq!(bytes, encode(&ask.message(5, &PartOf::whole(0))).unwrap());
        A::answer(&handle_request(workspace, &bytes))
    }

    #[test]
    fn each_kind_gets_its_own_answer_typed() {
        let config = config_with(&[("n", "12"), ("d", "3"), ("m", "8")]);
        let mut workspace = Workspace::new();
        let pair = ask(
            &mut workspace,
            ScatterPairAsk {
                config: config.clone(),
                index: 4,
            },
        )
        .unwrap();
        let data = crate::lab::kernel::tasks::generate_dataset(&config, 0).unwrap();
        assert_eq!(pair.x, data.query(4));
        let view = ask(&mut workspace, DataViewAsk(config.clone())).unwrap();
        assert_eq!(
            view,
            crate::lab::kernel::data_view::data_view(&config).unwrap()
        );
        // The export's tasks are the experiment's, bit for bit.
        let run = crate::lab::page::ExportRun::new(&config).unwrap();
        let task = run.task(0).unwrap();
        let output = ask(
            &mut workspace,
            ExportTaskAsk {
                config: config.clone(),
                task,
            },
        )
        .unwrap();
        assert_eq!(output, Workspace::new().run(&config, &task).unwrap());
        // An attention part and a model request: the bytes by kind are the message's.
        let attention = AttentionRequest {
            config: config_with(&[("view", "attention")]),
            part: crate::lab::attention::AttentionPart::Main,
            share: None,
            lengths_unit: None,
        };
        let part = PartOf::whole(1);
        assert_eq!(
            attention.request_bytes(7, &part).unwrap(),
            encode(&attention.message(7, &part)).unwrap()
        );
        let model = ModelRequest::Run {
            text: "a text".into(),
        };
        assert_eq!(
            model.request_bytes(8, &part).unwrap(),
            encode(&model.message(8, &part)).unwrap()
        );
        // A response of another kind is an error, not a panic.
        assert!(
            ProbeRequest::answer(
                &encode(&crate::lab::pool::WorkerResponse::ScatterPair {
                    id: 1,
                    output: Ok(pair)
                })
                .unwrap()
            )
            .is_err()
        );
    }

    #[test]
    fn the_full_worker_is_asked_for_only_what_needs_it() {
        let plain = config_with(&[("est", "hcexp-var")]);
        let optimised = config_with(&[("est", "hcexp-var,hcexp-opt")]);
        assert!(!DataViewAsk(plain.clone()).needs_full_worker());
        assert!(DataViewAsk(optimised.clone()).needs_full_worker());
        let task = Task {
            estimator: optimised.estimators[0],
            piece: crate::lab::kernel::tasks::Piece::ScatterSetup,
        };
        assert!(
            ExportTaskAsk {
                config: optimised,
                task
            }
            .needs_full_worker()
        );
        // Simplex and RQMC ω are drawn only by full-worker; i.i.d. and orthogonal blocks by
        // either.
        for (coupling, full) in [
            ("iid", false),
            ("orthogonal", false),
            ("simplex", true),
            ("rqmc", true),
        ] {
            let config = config_with(&[("est", "hcexp-var"), ("coupling", coupling)]);
            let export = ExportTaskAsk {
                config: config.clone(),
                task,
            };
            assert_eq!(export.needs_full_worker(), full, "{coupling}");
            assert!(
                !DataViewAsk(config).needs_full_worker(),
                "{coupling}: no ω drawn"
            );
        }
    }
}
