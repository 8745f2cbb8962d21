//! The messages between the page and a worker (postcard-encoded), and what a worker does
//! with one.

use serde::{Deserialize, Serialize};

use super::side::PartOf;
use crate::lab::attention::{AttentionOutput, AttentionRequest, StoredHeads, run_attention};
use crate::lab::config::ExperimentConfig;
use crate::lab::kernel::data_view::{DataView, data_view};
use crate::lab::kernel::tasks::Workspace;
use crate::lab::kernel::tasks::{Task, TaskOutput};
use crate::lab::models::protocol::{ModelAnswer, ModelRequest, ModelSetup};
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
/// model worker's setup news). Every other answer is decoded by its own [`crate::lab::pool::Ask`]
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
/// never a panic. Every kind of request but the parts on the stored heads
/// ([`handle_request_with`] reads those): the tests and the browser tests' page runner.
pub fn handle_request(workspace: &mut Workspace, message: &[u8]) -> Vec<u8> {
    handle_request_with(workspace, &mut StoredHeads::none(), message)
}

/// [`handle_request`] with the stored heads `stored` (read once, when a part first needs
/// them): `full-worker` and the command line's tests. An attention part is answered here;
/// every other message as [`handle_kernel_request`] answers it (the same bytes).
pub fn handle_request_with(
    workspace: &mut Workspace,
    stored: &mut StoredHeads,
    message: &[u8],
) -> Vec<u8> {
    match decode::<WorkerRequest>(message) {
        Ok(WorkerRequest::Attention { id, request }) => {
            encode_or_report(&attention(id, &request, stored))
        }
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

fn attention(id: u64, request: &AttentionRequest, stored: &mut StoredHeads) -> WorkerResponse {
    WorkerResponse::Attention {
        id,
        output: run_attention(request, stored).map_err(|e| e.to_string()),
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
mod tests;
