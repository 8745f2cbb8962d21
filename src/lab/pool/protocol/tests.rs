//! The protocol's tests: messages round-trip, workers answer or refuse each kind.

use super::*;
use crate::lab::test_support::{config_with, id};
use crate::numerics::projections::couplings::Coupling;

use crate::lab::kernel::tasks::{ErrorSums, Piece, TaskOutput};
use crate::numerics::estimators::Fit;

#[test]
fn the_probes_pair_is_the_scatter_datasets_and_a_missing_pair_is_refused() {
    let config = config_with(&[("n", "20"), ("d", "6"), ("seed", "11")]);
    let data = crate::lab::kernel::tasks::generate_dataset(&config, 0).unwrap();
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
    let answer: WorkerResponse = decode(&handle_kernel_request(&mut workspace, &bytes)).unwrap();
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
            share: None,
            lengths_unit: None,
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
            share: None,
            lengths_unit: None,
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
