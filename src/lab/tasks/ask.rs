//! The page's side requests as types: each kind of work outside the job (the probe, its pair,
//! the data panel, an attention part, an export task) is one type implementing [`Ask`], which
//! says what message it sends and what answer it gets back. The pool has one function for all
//! of them (`ui::pool`: `Pool::ask`), and the answer reaches its caller typed.

use super::protocol::{TaskRequest, WorkerRequest, WorkerResponse};
use super::{Task, TaskOutput};
use crate::lab::attention::{AttentionOutput, AttentionRequest};
use crate::lab::config::ExperimentConfig;
use crate::lab::data_view::DataView;
use crate::lab::model_protocol::{ModelAnswer, ModelRequest};
use crate::lab::scheduler::{PartOf, Spread};
use crate::numerics::estimators::EstimatorId;
use crate::numerics::probe::{PairVectors, ProbeRequest, ProbeResult};

/// A request to a worker, typed by its answer.
pub trait Ask: 'static {
    /// What the worker's answer holds.
    type Answer: 'static;

    /// The message of `part` (the whole request unless [`Ask::spread`] splits it), carrying
    /// `id`.
    fn message(&self, id: u64, part: &PartOf) -> WorkerRequest;

    /// Its answer out of the worker's response (a response of another kind is an error).
    fn answer(response: WorkerResponse) -> Result<Self::Answer, String>;

    /// Whether only `full-worker` computes it (the attention math, the optimised A's fit).
    fn needs_full_worker(&self) -> bool {
        false
    }

    /// On how many workers it runs.
    fn spread(&self) -> Spread {
        Spread::One
    }
}

/// Whether one of `estimators` needs the optimiser (only `full-worker` links it).
fn any_needs_optimiser(estimators: &[EstimatorId]) -> bool {
    estimators.iter().any(|e| e.info().needs_optimiser())
}

fn unexpected(kind: &str) -> String {
    format!("a worker answered a {kind} request with another kind of answer")
}

impl Ask for ProbeRequest {
    type Answer = ProbeResult;

    fn message(&self, id: u64, _part: &PartOf) -> WorkerRequest {
        WorkerRequest::Probe {
            id,
            probe: self.clone(),
        }
    }

    fn answer(response: WorkerResponse) -> Result<ProbeResult, String> {
        match response {
            WorkerResponse::Probe { output, .. } => output,
            _ => Err(unexpected("probe")),
        }
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

    fn message(&self, id: u64, _part: &PartOf) -> WorkerRequest {
        WorkerRequest::Attention {
            id,
            request: self.clone(),
        }
    }

    fn answer(response: WorkerResponse) -> Result<AttentionOutput, String> {
        match response {
            WorkerResponse::Attention { output, .. } => output,
            _ => Err(unexpected("attention")),
        }
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

    fn message(&self, id: u64, _part: &PartOf) -> WorkerRequest {
        WorkerRequest::DataView {
            id,
            config: self.0.clone(),
        }
    }

    fn answer(response: WorkerResponse) -> Result<DataView, String> {
        match response {
            WorkerResponse::DataView { output, .. } => output.map(|view| *view),
            _ => Err(unexpected("data panel")),
        }
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

    fn message(&self, id: u64, _part: &PartOf) -> WorkerRequest {
        WorkerRequest::ScatterPair {
            id,
            config: self.config.clone(),
            index: self.index,
        }
    }

    fn answer(response: WorkerResponse) -> Result<PairVectors, String> {
        match response {
            WorkerResponse::ScatterPair { output, .. } => output,
            _ => Err(unexpected("scatter pair")),
        }
    }
}

/// One task of the export ([`super::ExportRun`]): computed without fused multiply-adds, so
/// that every build, relaxed SIMD included, gives the command line's bits.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportTaskAsk {
    pub config: ExperimentConfig,
    pub task: Task,
}

impl Ask for ExportTaskAsk {
    type Answer = TaskOutput;

    fn message(&self, id: u64, _part: &PartOf) -> WorkerRequest {
        WorkerRequest::Task(TaskRequest {
            id,
            config: self.config.clone(),
            task: self.task,
            fused: false,
        })
    }

    fn answer(response: WorkerResponse) -> Result<TaskOutput, String> {
        match response {
            WorkerResponse::Task(response) => response.output,
            _ => Err(unexpected("export task")),
        }
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

    fn message(&self, id: u64, part: &PartOf) -> WorkerRequest {
        WorkerRequest::Model {
            id,
            part: part.clone(),
            request: self.clone(),
        }
    }

    fn answer(response: WorkerResponse) -> Result<ModelAnswer, String> {
        match response {
            WorkerResponse::Model {
                answer: ModelAnswer::Failed(message),
                ..
            } => Err(message),
            WorkerResponse::Model { answer, .. } => Ok(answer),
            _ => Err(unexpected("model")),
        }
    }

    fn spread(&self) -> Spread {
        match self {
            ModelRequest::Run { .. } => Spread::Free,
            ModelRequest::TrainHedgehog(_) => Spread::All,
            ModelRequest::Swap(_) | ModelRequest::Retrieve { .. } => Spread::One,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::tasks::{Workspace, decode, encode, handle_request};
    use crate::lab::test_support::config_with;

    /// Sends `ask` through the worker's own handler, as the pool does.
    fn ask<A: Ask>(workspace: &mut Workspace, ask: A) -> Result<A::Answer, String> {
        let bytes = encode(&ask.message(5, &PartOf::whole(0))).unwrap();
        A::answer(decode(&handle_request(workspace, &bytes)).unwrap())
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
        let data = crate::lab::tasks::generate_dataset(&config, 0).unwrap();
        assert_eq!(pair.x, data.query(4));
        let view = ask(&mut workspace, DataViewAsk(config.clone())).unwrap();
        assert_eq!(view, crate::lab::data_view::data_view(&config).unwrap());
        // The export's tasks are the experiment's, bit for bit.
        let run = super::super::ExportRun::new(&config).unwrap();
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
        // A response of another kind is an error, not a panic.
        assert!(
            ProbeRequest::answer(WorkerResponse::ScatterPair {
                id: 1,
                output: Ok(pair)
            })
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
            piece: crate::lab::tasks::Piece::ScatterSetup,
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
