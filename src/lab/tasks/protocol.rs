//! The messages between the page and a worker (postcard-encoded), and what a worker does
//! with one.

use serde::{Deserialize, Serialize};

use super::workspace::Workspace;
use super::{Task, TaskOutput};
use crate::lab::attention::{AttentionOutput, AttentionRequest, run_attention};
use crate::lab::config::ExperimentConfig;
use crate::lab::data_view::{DataView, data_view};
use crate::lab::model_protocol::{ModelAnswer, ModelRequest, ModelSetup};
use crate::lab::scheduler::PartOf;
use crate::numerics::probe::{PairVectors, ProbeRequest, ProbeResult, probe_pair};

/// A message to a worker: run `task` for `config`. `id` comes back with the answer.
/// `fused`: the kernel may fuse multiply-adds where the worker has relaxed SIMD (the page's
/// job); `false` gives the command line's bits in every build (the export).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskRequest {
    pub id: u64,
    pub config: ExperimentConfig,
    pub task: Task,
    pub fused: bool,
}

/// A worker's answer to the [`TaskRequest`] with the same `id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskResponse {
    pub id: u64,
    pub output: Result<TaskOutput, String>,
}

/// Encodes a message for `postMessage` (postcard: compact, and every f64 bit for bit).
pub fn encode<T: Serialize>(message: &T) -> Result<Vec<u8>, String> {
    postcard::to_allocvec(message).map_err(|e| format!("cannot encode a worker message: {e}"))
}

/// Decodes a message from [`encode`].
pub fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, String> {
    postcard::from_bytes(bytes).map_err(|e| format!("malformed worker message: {e}"))
}

/// Every message the page sends a worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WorkerRequest {
    Task(TaskRequest),
    Probe {
        id: u64,
        probe: ProbeRequest,
    },
    /// One part of the attention view.
    Attention {
        id: u64,
        request: AttentionRequest,
    },
    /// The kernel view's data panel of this configuration ([`data_view`]).
    DataView {
        id: u64,
        config: ExperimentConfig,
    },
    /// Pair `index` of this configuration's scatter dataset (the probe's pair).
    ScatterPair {
        id: u64,
        config: ExperimentConfig,
        index: usize,
    },
    /// A request to the model workers; `part` says which share of it this worker does and
    /// which workers do the others.
    Model {
        id: u64,
        part: PartOf,
        request: ModelRequest,
    },
    /// The message's transferred `MessagePort` leads to the model worker of slot `peer` (the
    /// parts of a split request talk over it).
    Connect {
        peer: usize,
    },
}

impl WorkerRequest {
    /// What kind of request it is, in words (for an error message).
    pub fn kind(&self) -> &'static str {
        match self {
            WorkerRequest::Task(_) => "a task",
            WorkerRequest::Probe { .. } => "a probe",
            WorkerRequest::Attention { .. } => "an attention part",
            WorkerRequest::DataView { .. } => "a data panel",
            WorkerRequest::ScatterPair { .. } => "a scatter pair",
            WorkerRequest::Model { .. } => "a model request",
            WorkerRequest::Connect { .. } => "a peer's port",
        }
    }
}

/// Every answer a worker sends back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WorkerResponse {
    Task(TaskResponse),
    Probe {
        id: u64,
        output: Result<ProbeResult, String>,
    },
    Attention {
        id: u64,
        output: Result<AttentionOutput, String>,
    },
    /// Boxed: the view is much larger than the other answers.
    DataView {
        id: u64,
        output: Result<Box<DataView>, String>,
    },
    ScatterPair {
        id: u64,
        output: Result<PairVectors, String>,
    },
    /// A model worker's answer to a [`WorkerRequest::Model`] (its last for that id).
    Model {
        id: u64,
        answer: ModelAnswer,
    },
    /// A model worker's news about request `id` while it runs (the training's points).
    Update {
        id: u64,
        update: ModelAnswer,
    },
    /// A model worker's news while it starts (not about a request).
    Setup(ModelSetup),
}

/// The index postcard writes for each kind of [`WorkerRequest`] (its variant's place).
pub mod request_kind {
    pub const TASK: u32 = 0;
    pub const PROBE: u32 = 1;
    pub const ATTENTION: u32 = 2;
    pub const DATA_VIEW: u32 = 3;
    pub const SCATTER_PAIR: u32 = 4;
    pub const MODEL: u32 = 5;
    pub const CONNECT: u32 = 6;
}

/// The bytes of a [`WorkerRequest`] of `kind` whose fields, in order, are `fields` (a tuple, or
/// one value): what [`encode`] writes for it, without linking the encoders of every other
/// kind (the page's first view sends no attention part and no model request).
pub fn encode_request<T: Serialize>(kind: u32, fields: &T) -> Result<Vec<u8>, String> {
    encode(&(kind, fields))
}

/// The index postcard writes for each kind of [`WorkerResponse`] (its variant's place).
pub mod response_kind {
    pub const TASK: u32 = 0;
    pub const PROBE: u32 = 1;
    pub const ATTENTION: u32 = 2;
    pub const DATA_VIEW: u32 = 3;
    pub const SCATTER_PAIR: u32 = 4;
    pub const MODEL: u32 = 5;
    pub const UPDATE: u32 = 6;
    /// `ModelAnswer::Failed`'s index.
    pub const MODEL_FAILED: u32 = 6;
}

/// What the page's pool reads of a worker's response before it hands the response's bytes to
/// whoever asked: its kind and id (a job's task in full, which the pool itself stores, and a
/// model worker's setup news). Every other answer is decoded by its own [`super::Ask`]
/// (`Ask::answer`), so the first view's module links only the decoders of what it asks (not
/// the attention view's or the model's, which their split part decodes). The same bytes as
/// [`WorkerResponse`]; postcard ignores what a variant does not read.
#[derive(Debug, Deserialize)]
pub enum ResponseHead {
    /// Boxed: a task's output is much larger than the other variants' ids.
    Task(Box<TaskResponse>),
    Probe {
        id: u64,
    },
    Attention {
        id: u64,
    },
    DataView {
        id: u64,
    },
    ScatterPair {
        id: u64,
    },
    Model {
        id: u64,
    },
    Update {
        id: u64,
    },
    Setup(ModelSetup),
}

/// A response's kind, id and the bytes after them (the answer's value).
fn split_head(bytes: &[u8]) -> Result<(u32, u64, &[u8]), String> {
    postcard::take_from_bytes::<(u32, u64)>(bytes)
        .map(|((kind, id), rest)| (kind, id, rest))
        .map_err(|e| format!("malformed worker message: {e}"))
}

/// The bytes of a response's value after its kind and id (an update's [`ModelAnswer`]).
pub fn response_value(bytes: &[u8]) -> Result<&[u8], String> {
    split_head(bytes).map(|(_, _, rest)| rest)
}

/// Whether a response says its request failed (a task's or an attention part's `Err`, a model
/// answer's `Failed`), read from the value's first index without decoding the value.
pub fn response_failed(bytes: &[u8]) -> bool {
    use response_kind::{ATTENTION, MODEL, MODEL_FAILED, TASK};
    let Ok((kind, _, rest)) = split_head(bytes) else {
        return false;
    };
    let Ok((inner, _)) = postcard::take_from_bytes::<u32>(rest) else {
        return false;
    };
    match kind {
        TASK | ATTENTION => inner == 1,
        MODEL => inner == MODEL_FAILED,
        _ => false,
    }
}

/// The value `T` of a response of `kind` (what follows its id), or an error naming `what` if
/// the worker answered another kind.
pub fn response_answer<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    kind: u32,
    what: &str,
) -> Result<T, String> {
    let (found, _, rest) = split_head(bytes)?;
    if found != kind {
        return Err(format!(
            "a worker answered a {what} request with another kind of answer"
        ));
    }
    decode(rest)
}

/// What a worker does with one message: decode the request, run it (in `workspace` for a
/// task), encode the answer. A malformed message is answered with an error for task id 0,
/// never a panic. Every kind of request: `full-worker`, the command line's tests and the
/// browser tests' page runner. An attention part is answered here; every other message as
/// [`handle_kernel_request`] answers it (the same bytes).
pub fn handle_request(workspace: &mut Workspace, message: &[u8]) -> Vec<u8> {
    match decode::<WorkerRequest>(message) {
        Ok(WorkerRequest::Attention { id, request }) => encode_or_report(&attention(id, &request)),
        _ => handle_kernel_request(workspace, message),
    }
}

/// [`handle_request`] in `kernel-worker` (the first view's worker: the kernel view's tasks,
/// the probe, the data panel): an attention part or a model request is refused, so that it
/// never links the attention math (which `full-worker` computes). It reads and writes the
/// protocol through [`KernelRequest`] and [`KernelResponse`], the same bytes as
/// [`WorkerRequest`] and [`WorkerResponse`] without the types of what it refuses: their
/// decoders, encoders and drop glue stay out of the first view's worker.
pub fn handle_kernel_request(workspace: &mut Workspace, message: &[u8]) -> Vec<u8> {
    let response = match decode::<KernelRequest>(message) {
        Ok(request) => kernel(workspace, request),
        Err(error) => KernelResponse::Task(TaskResponse {
            id: 0,
            output: Err(error),
        }),
    };
    encode_or_report(&response)
}

/// `response`'s bytes; an encoding failure is reported as a (tiny, always encodable) error
/// response.
fn encode_or_report<T: Serialize>(response: &T) -> Vec<u8> {
    encode(response).unwrap_or_else(|error| {
        encode(&WorkerResponse::Task(TaskResponse {
            id: 0,
            output: Err(error),
        }))
        .unwrap_or_default()
    })
}

fn attention(id: u64, request: &AttentionRequest) -> WorkerResponse {
    WorkerResponse::Attention {
        id,
        output: run_attention(request).map_err(|e| e.to_string()),
    }
}

/// [`WorkerRequest`] as `kernel-worker` reads it: the same variants in the same order
/// (postcard writes a variant's index, then its fields), the ones it refuses read only as far
/// as their `id` (postcard ignores the bytes after what a type reads).
#[derive(Deserialize)]
enum KernelRequest {
    Task(TaskRequest),
    Probe {
        id: u64,
        probe: ProbeRequest,
    },
    Attention {
        id: u64,
    },
    DataView {
        id: u64,
        config: ExperimentConfig,
    },
    ScatterPair {
        id: u64,
        config: ExperimentConfig,
        index: usize,
    },
    Model {
        id: u64,
    },
    Connect {},
}

/// [`WorkerResponse`] as `kernel-worker` writes it: the same variants in the same order, the
/// refusals written as the error variants they stand for (`Update` is never sent).
#[derive(Serialize)]
enum KernelResponse {
    Task(TaskResponse),
    Probe {
        id: u64,
        output: Result<ProbeResult, String>,
    },
    Attention {
        id: u64,
        output: Refused,
    },
    DataView {
        id: u64,
        output: Result<Box<DataView>, String>,
    },
    ScatterPair {
        id: u64,
        output: Result<PairVectors, String>,
    },
    Model {
        id: u64,
        answer: Refused,
    },
    // Never written: it keeps `Setup` at its index.
    #[allow(dead_code)]
    Update(Never),
    Setup(Refused),
}

/// No value: a variant that is never written.
#[derive(Serialize)]
enum Never {}

/// A refusal, written as the error variant of the type it stands in for: `Result::Err` (an
/// attention part's output), `ModelAnswer::Failed`, `ModelSetup::Failed`. The variants'
/// indices are checked against those types in the tests below.
enum Refused {
    Output(String),
    Model(String),
    Setup(String),
}

impl Serialize for Refused {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Refused::Output(message) => {
                serializer.serialize_newtype_variant("Result", 1, "Err", message)
            }
            Refused::Model(message) => {
                serializer.serialize_newtype_variant("ModelAnswer", 6, "Failed", message)
            }
            Refused::Setup(message) => {
                serializer.serialize_newtype_variant("ModelSetup", 2, "Failed", message)
            }
        }
    }
}

fn kernel(workspace: &mut Workspace, request: KernelRequest) -> KernelResponse {
    match request {
        KernelRequest::Task(request) => KernelResponse::Task(TaskResponse {
            id: request.id,
            output: {
                workspace.set_fused(request.fused);
                workspace
                    .run(&request.config, &request.task)
                    .map_err(|e| e.to_string())
            },
        }),
        KernelRequest::Probe { id, probe: p } => KernelResponse::Probe {
            id,
            output: probe_pair(&p).map_err(|e| e.to_string()),
        },
        KernelRequest::DataView { id, config } => KernelResponse::DataView {
            id,
            output: config
                .validate_kernel()
                .map_err(|e| e.to_string())
                .and_then(|()| data_view(&config).map_err(|e| e.to_string()))
                .map(Box::new),
        },
        KernelRequest::ScatterPair { id, config, index } => KernelResponse::ScatterPair {
            id,
            output: config
                .validate_kernel()
                .map_err(|e| e.to_string())
                .and_then(|()| workspace.scatter_pair(&config, index)),
        },
        KernelRequest::Attention { id } => KernelResponse::Attention {
            id,
            output: Refused::Output("the kernel worker does not compute the attention view".into()),
        },
        KernelRequest::Model { id } => KernelResponse::Model {
            id,
            answer: Refused::Model("only the model worker runs the model".into()),
        },
        KernelRequest::Connect {} => KernelResponse::Setup(Refused::Setup(
            "only model workers talk to each other".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::test_support::{config_with, id};
    use crate::numerics::projections::couplings::Coupling;

    use crate::lab::tasks::{ErrorSums, Piece, TaskOutput};
    use crate::numerics::estimators::Fit;

    #[test]
    fn the_probes_pair_is_the_scatter_datasets_and_a_missing_pair_is_refused() {
        let config = config_with(&[("n", "20"), ("d", "6"), ("seed", "11")]);
        let data = crate::lab::tasks::generate_dataset(&config, 0).unwrap();
        let mut workspace = Workspace::new();
        for (index, id) in [(0, 1), (19, 2)] {
            let bytes = encode(&WorkerRequest::ScatterPair {
                id,
                config: config.clone(),
                index,
            })
            .unwrap();
            let answer: WorkerResponse =
                decode(&handle_kernel_request(&mut workspace, &bytes)).unwrap();
            assert_eq!(
                answer,
                WorkerResponse::ScatterPair {
                    id,
                    output: Ok(PairVectors {
                        x: data.query(index).to_vec(),
                        y: data.key(index).to_vec(),
                    })
                }
            );
        }
        let beyond = encode(&WorkerRequest::ScatterPair {
            id: 3,
            config,
            index: 20,
        })
        .unwrap();
        match decode(&handle_kernel_request(&mut workspace, &beyond)).unwrap() {
            WorkerResponse::ScatterPair {
                id: 3,
                output: Err(message),
            } => assert!(message.contains("n = 20"), "{message}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn messages_round_trip_through_handle_request_with_infinities_intact() {
        let config = config_with(&[("n", "8"), ("m", "16")]);
        let task = Task {
            estimator: id("hcexp-mean"),
            piece: Piece::ScatterPairs { start: 0, end: 8 },
        };
        let request = TaskRequest {
            id: 42,
            config: config.clone(),
            task,
            fused: true,
        };
        let mut workspace = Workspace::new();
        let ask = |workspace: &mut Workspace, request: &WorkerRequest| -> WorkerResponse {
            decode(&handle_request(workspace, &encode(request).unwrap())).unwrap()
        };
        let answer = ask(&mut workspace, &WorkerRequest::Task(request.clone()));
        assert_eq!(
            answer,
            WorkerResponse::Task(TaskResponse {
                id: 42,
                output: Ok(Workspace::new().run(&config, &task).unwrap())
            })
        );
        // −∞ (an exact estimate's log error) survives the encoding; JSON would turn it into null.
        let sums = TaskOutput::BoxplotPairs(ErrorSums {
            log_sum_squared: f64::NEG_INFINITY,
            log_max_rel_err: f64::NEG_INFINITY,
            log_sum_theoretical: 1.5,
            pairs: 3,
            clamped: 0,
        });
        assert_eq!(decode::<TaskOutput>(&encode(&sums).unwrap()), Ok(sums));
        // A probe gives what probe_pair gives.
        let probe = ProbeRequest {
            estimator: id("hcplx"),
            fit: Fit {
                theta: 0.6,
                ..Fit::diagonal(vec![1.5, 0.5], 0)
            },
            x: vec![0.5, -0.2],
            y: vec![0.1, 0.3],
            m: 8,
            trials: 50,
            seed: 3,
            coupling: Coupling::Orthogonal,
            fit_to_pair: None,
        };
        let expected = probe_pair(&probe).unwrap();
        assert_eq!(
            ask(&mut workspace, &WorkerRequest::Probe { id: 7, probe }),
            WorkerResponse::Probe {
                id: 7,
                output: Ok(expected)
            }
        );
        // Garbage is an error answer, not a panic.
        let garbage: WorkerResponse =
            decode(&handle_request(&mut workspace, &[0xff, 0x00, 0x13])).unwrap();
        assert!(matches!(
            garbage,
            WorkerResponse::Task(TaskResponse { output: Err(_), .. })
        ));
        // An invalid configuration inside a well-formed message is refused by validation.
        let mut bad = request.clone();
        bad.config.m = 0;
        let refused = ask(&mut workspace, &WorkerRequest::Task(bad));
        assert!(matches!(
            refused,
            WorkerResponse::Task(TaskResponse { output: Err(_), .. })
        ));
    }

    #[test]
    fn the_kernel_worker_answers_its_requests_and_refuses_attention_parts() {
        let config = config_with(&[("n", "50"), ("d", "4"), ("est", "hcexp-var,hcexp-opt")]);
        let mut workspace = Workspace::new();
        let data = WorkerRequest::DataView {
            id: 5,
            config: config.clone(),
        };
        let bytes = encode(&data).unwrap();
        // The data panel, in the kernel worker, is exactly data_view's.
        let answer: WorkerResponse =
            decode(&handle_kernel_request(&mut workspace, &bytes)).unwrap();
        assert_eq!(
            answer,
            WorkerResponse::DataView {
                id: 5,
                output: Ok(Box::new(data_view(&config).unwrap()))
            }
        );
        assert_eq!(
            decode::<WorkerResponse>(&handle_request(&mut workspace, &bytes)).unwrap(),
            answer
        );
        // The kernel worker refuses an attention part.
        let attention = encode(&WorkerRequest::Attention {
            id: 9,
            request: AttentionRequest {
                config: config_with(&[("view", "attention")]),
                part: crate::lab::attention::AttentionPart::Main,
                heads: None,
            },
        })
        .unwrap();
        assert!(matches!(
            decode::<WorkerResponse>(&handle_kernel_request(&mut workspace, &attention)).unwrap(),
            WorkerResponse::Attention {
                id: 9,
                output: Err(_)
            }
        ));
        // An invalid configuration is refused, not computed.
        let mut bad = config;
        bad.d = 0;
        let bad = encode(&WorkerRequest::DataView { id: 6, config: bad }).unwrap();
        assert!(matches!(
            decode::<WorkerResponse>(&handle_kernel_request(&mut workspace, &bad)).unwrap(),
            WorkerResponse::DataView {
                id: 6,
                output: Err(_)
            }
        ));
    }

    #[test]
    fn the_kernel_workers_refusals_are_the_bytes_of_the_full_protocols() {
        // KernelRequest reads WorkerRequest's bytes, KernelResponse writes WorkerResponse's:
        // every refusal the kernel worker sends is what the full protocol would have written.
        let mut workspace = Workspace::new();
        let attention = encode(&WorkerRequest::Attention {
            id: 9,
            request: AttentionRequest {
                config: config_with(&[("view", "attention")]),
                part: crate::lab::attention::AttentionPart::Main,
                heads: None,
            },
        })
        .unwrap();
        assert_eq!(
            handle_kernel_request(&mut workspace, &attention),
            encode(&WorkerResponse::Attention {
                id: 9,
                output: Err("the kernel worker does not compute the attention view".into()),
            })
            .unwrap()
        );
        let model = encode(&WorkerRequest::Model {
            id: 11,
            part: PartOf::whole(0),
            request: ModelRequest::Run {
                text: "a text".into(),
            },
        })
        .unwrap();
        assert_eq!(
            handle_kernel_request(&mut workspace, &model),
            encode(&WorkerResponse::Model {
                id: 11,
                answer: ModelAnswer::Failed("only the model worker runs the model".into()),
            })
            .unwrap()
        );
        let connect = encode(&WorkerRequest::Connect { peer: 1 }).unwrap();
        assert_eq!(
            handle_kernel_request(&mut workspace, &connect),
            encode(&WorkerResponse::Setup(ModelSetup::Failed(
                "only model workers talk to each other".into()
            )))
            .unwrap()
        );
        // A malformed message: an error for task id 0, in both handlers.
        for answer in [
            handle_kernel_request(&mut workspace, &[200]),
            handle_request(&mut workspace, &[200]),
        ] {
            assert!(matches!(
                decode::<WorkerResponse>(&answer).unwrap(),
                WorkerResponse::Task(TaskResponse {
                    id: 0,
                    output: Err(_)
                })
            ));
        }
        // A task and a probe: the same bytes from both handlers.
        let config = config_with(&[("n", "20"), ("d", "4"), ("seed", "3")]);
        let pair = encode(&WorkerRequest::ScatterPair {
            id: 4,
            config,
            index: 2,
        })
        .unwrap();
        assert_eq!(
            handle_kernel_request(&mut workspace, &pair),
            handle_request(&mut Workspace::new(), &pair)
        );
    }

    #[test]
    fn the_pages_reading_of_responses_agrees_with_worker_response() {
        use response_kind::*;
        let cases = [
            (
                WorkerResponse::Task(TaskResponse {
                    id: 3,
                    output: Err("no".into()),
                }),
                TASK,
                true,
            ),
            (
                WorkerResponse::Probe {
                    id: 4,
                    output: Err("no".into()),
                },
                PROBE,
                false,
            ),
            (
                WorkerResponse::Attention {
                    id: 5,
                    output: Err("no".into()),
                },
                ATTENTION,
                true,
            ),
            (
                WorkerResponse::DataView {
                    id: 6,
                    output: Err("no".into()),
                },
                DATA_VIEW,
                false,
            ),
            (
                WorkerResponse::ScatterPair {
                    id: 7,
                    output: Ok(PairVectors {
                        x: vec![1.0],
                        y: vec![2.0],
                    }),
                },
                SCATTER_PAIR,
                false,
            ),
            (
                WorkerResponse::Model {
                    id: 8,
                    answer: ModelAnswer::Failed("no".into()),
                },
                MODEL,
                true,
            ),
            (
                WorkerResponse::Model {
                    id: 9,
                    answer: ModelAnswer::Helped,
                },
                MODEL,
                false,
            ),
            (
                WorkerResponse::Update {
                    id: 10,
                    update: ModelAnswer::Helped,
                },
                UPDATE,
                false,
            ),
        ];
        for (response, kind, failed) in cases {
            let bytes = encode(&response).unwrap();
            assert_eq!(response_failed(&bytes), failed, "{response:?}");
            assert_eq!(split_head(&bytes).unwrap().0, kind, "{response:?}");
            let head = decode::<ResponseHead>(&bytes).unwrap();
            let id = match (&head, &response) {
                (ResponseHead::Task(task), WorkerResponse::Task(expected)) => {
                    assert_eq!(task.as_ref(), expected);
                    task.id
                }
                (ResponseHead::Probe { id }, WorkerResponse::Probe { .. })
                | (ResponseHead::Attention { id }, WorkerResponse::Attention { .. })
                | (ResponseHead::DataView { id }, WorkerResponse::DataView { .. })
                | (ResponseHead::ScatterPair { id }, WorkerResponse::ScatterPair { .. })
                | (ResponseHead::Model { id }, WorkerResponse::Model { .. })
                | (ResponseHead::Update { id }, WorkerResponse::Update { .. }) => *id,
                other => panic!("read as another kind: {other:?}"),
            };
            assert_eq!(split_head(&bytes).unwrap().1, id);
        }
        // The values after the id.
        let update = encode(&WorkerResponse::Update {
            id: 1,
            update: ModelAnswer::Failed("x".into()),
        })
        .unwrap();
        assert_eq!(
            decode::<ModelAnswer>(response_value(&update).unwrap()).unwrap(),
            ModelAnswer::Failed("x".into())
        );
        let setup = WorkerResponse::Setup(ModelSetup::Failed("gone".into()));
        assert!(matches!(
            decode::<ResponseHead>(&encode(&setup).unwrap()).unwrap(),
            ResponseHead::Setup(ModelSetup::Failed(m)) if m == "gone"
        ));
        let pair: Result<PairVectors, String> = response_answer(
            &encode(&WorkerResponse::ScatterPair {
                id: 2,
                output: Err("far".into()),
            })
            .unwrap(),
            SCATTER_PAIR,
            "scatter pair",
        )
        .unwrap();
        assert_eq!(pair, Err("far".into()));
        assert!(response_answer::<Result<ProbeResult, String>>(&update, PROBE, "probe").is_err());
    }

    #[test]
    fn requests_encoded_by_kind_are_worker_requests_bytes() {
        use request_kind::*;
        let config = config_with(&[("n", "20"), ("d", "4")]);
        let task = TaskRequest {
            id: 1,
            config: config.clone(),
            task: Task {
                estimator: id("hcexp-mean"),
                piece: Piece::ScatterPairs { start: 0, end: 8 },
            },
            fused: true,
        };
        assert_eq!(
            encode_request(TASK, &task).unwrap(),
            encode(&WorkerRequest::Task(task.clone())).unwrap()
        );
        assert_eq!(
            encode_request(DATA_VIEW, &(4u64, &config)).unwrap(),
            encode(&WorkerRequest::DataView {
                id: 4,
                config: config.clone()
            })
            .unwrap()
        );
        assert_eq!(
            encode_request(SCATTER_PAIR, &(5u64, &config, 3usize)).unwrap(),
            encode(&WorkerRequest::ScatterPair {
                id: 5,
                config,
                index: 3
            })
            .unwrap()
        );
        assert_eq!(
            encode_request(CONNECT, &2usize).unwrap(),
            encode(&WorkerRequest::Connect { peer: 2 }).unwrap()
        );
    }
}
