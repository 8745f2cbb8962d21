//! The page's workers: the messages between the page and a worker ([`protocol`]), every side
//! request as a type by its answer ([`ask`]), the scheduler that decides which worker does what
//! ([`scheduler`]; its side requests: [`side`], `side_requests.rs`), and what a worker does
//! with a message ([`protocol::handle_request`]; the model workers: [`model_worker`]).

pub mod ask;
#[cfg(feature = "text-model")]
pub mod model_worker;
pub mod protocol;
pub mod scheduler;
pub mod side;
mod side_requests;

pub use ask::{Ask, DataViewAsk, ExportTaskAsk, ScatterPairAsk};
pub use protocol::{
    ResponseHead, TaskRequest, TaskResponse, WorkerRequest, WorkerResponse, decode, encode,
    encode_request, handle_kernel_request, handle_request, handle_request_with, request_kind,
    response_answer, response_failed, response_kind, response_value,
};
pub use scheduler::{Dispatch, IN_FLIGHT_PER_WORKER, Scheduler, SchedulerEvent};
pub use side::{Channel, PartOf, Reach, SideAnswer, SideDispatch, SideSend, Ticket};
