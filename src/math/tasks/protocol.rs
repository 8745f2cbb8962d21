//! The messages between the page and a worker (postcard-encoded), and what a worker does
//! with one.

use serde::{Deserialize, Serialize};

use super::workspace::Workspace;
use super::{Task, TaskOutput};
use crate::math::attention::{AttentionOutput, AttentionRequest, run_attention};
use crate::math::config::ExperimentConfig;
use crate::math::probe::{ProbeRequest, ProbeResult, probe_pair};

/// A message to a worker: run `task` for `config`. `id` comes back with the answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskRequest {
    pub id: u64,
    pub config: ExperimentConfig,
    pub task: Task,
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
}

/// What a worker does with one message: decode the request, run it (in `workspace` for a
/// task), encode the answer. A malformed message is answered with an error for task id 0,
/// never a panic.
pub fn handle_request(workspace: &mut Workspace, message: &[u8]) -> Vec<u8> {
    let response = match decode::<WorkerRequest>(message) {
        Ok(WorkerRequest::Task(request)) => WorkerResponse::Task(TaskResponse {
            id: request.id,
            output: workspace
                .run(&request.config, &request.task)
                .map_err(|e| e.to_string()),
        }),
        Ok(WorkerRequest::Probe { id, probe: p }) => WorkerResponse::Probe {
            id,
            output: probe_pair(&p).map_err(|e| e.to_string()),
        },
        Ok(WorkerRequest::Attention { id, request }) => WorkerResponse::Attention {
            id,
            output: run_attention(&request).map_err(|e| e.to_string()),
        },
        Err(error) => WorkerResponse::Task(TaskResponse {
            id: 0,
            output: Err(error),
        }),
    };
    // An encoding failure is reported as a (tiny, always encodable) error response.
    encode(&response).unwrap_or_else(|error| {
        encode(&WorkerResponse::Task(TaskResponse {
            id: 0,
            output: Err(error),
        }))
        .unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::test_support::{config_with, id};

    use crate::math::estimators::Fit;
    use crate::math::tasks::{ErrorSums, Piece, TaskOutput};

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
            orthogonal: true,
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
}
