//! The scheduler's side requests: every message outside the job (the probe and its pair, the
//! data panel, an attention part, the export's tasks, a text through the model, the model
//! swap's jobs), and the one rule by which the newest request wins. The pool (`ui::pool`) only
//! keeps each request's message and callback under the handle [`Scheduler::queue_side`] gives,
//! and sends what [`Scheduler::dispatch_side`] says; every decision is here, tested natively.
//!
//! Each request belongs to a [`Channel`] (what it is for) and carries a [`Ticket`] of it. A new
//! ticket supersedes the channel's older ones:
//! - **latest answer wins**: an answer to a superseded ticket is not delivered
//!   ([`SideAnswer::current`]), so a component never sees an older request's answer after a
//!   newer one's; a queued request of a superseded ticket is dropped unsent;
//! - **one ticket in flight per channel**: a request whose channel still has requests of an
//!   older ticket in flight waits in the queue and is sent once they are all answered, so
//!   dragging a slider or typing never queues stale work in the workers.
//!
//! Several requests may share one ticket (the probe's pair and then its estimates, the export's
//! tasks, the swap plan's jobs): they are all current until the channel's next ticket.
//!
//! A pool may cap the side requests a worker holds at once ([`Scheduler::set_side_limit`]: the
//! model's workers take one at a time, so that a text never waits behind a queue of swap jobs
//! inside a worker); the queue is then served by [`Channel::priority`], in order within a
//! priority. A request may run on several workers at once ([`Reach`]): the model's forward of
//! one text, split by rows, and the Hedgehog maps' training, split by heads; each worker gets
//! its part ([`PartOf`]) under an id of its own.

use crate::lab::attention::AttentionPart;

/// What a side request is for: requests of one channel supersede each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Channel {
    /// The single-pair probe: its pair of the scatter dataset, then one request per estimator.
    Probe,
    /// The kernel view's data panel.
    DataView,
    /// One part of the attention view.
    Attention(AttentionPart),
    /// The export's tasks (the experiment computed with every build's bits).
    Export,
    /// The user's text through the model.
    Text,
    /// The model swap's plan (its jobs share one ticket).
    Swap,
}

impl Channel {
    /// Which queued requests go first when workers are scarce (lower first): what the reader
    /// is typing or looking at first (the text, the probe, the data panel, the head's main
    /// part: its rows, heatmaps and singular values, tens of milliseconds), then, in the
    /// page's order, the long model swap (the text view's first screen, above the attention
    /// sections), the head's other parts (bias and variance, temperature, budget: on the text
    /// they took 0.6 s of a model worker before the swap's jobs, 29-30 November), and last the
    /// two parts that read every head of the text (the last sections; on the model's workers
    /// they would hold the swap back by several seconds).
    pub fn priority(self) -> u8 {
        match self {
            Channel::Text => 0,
            Channel::Attention(AttentionPart::HeadsTable | AttentionPart::KernelVsAttention) => 5,
            Channel::Attention(
                AttentionPart::BiasVariance | AttentionPart::Temperature | AttentionPart::Budget,
            ) => 4,
            Channel::Probe | Channel::DataView | Channel::Attention(_) => 1,
            Channel::Export => 2,
            Channel::Swap => 3,
        }
    }
}

/// A group of side requests of one channel; the channel's newest ticket is current.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ticket {
    pub channel: Channel,
    pub(super) generation: u64,
}

/// On how many workers a side request runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// One worker, the least busy.
    One,
    /// Every worker free now (at least one): the text's forward, whose parts the workers
    /// split among themselves as they are many.
    Free,
    /// Every live worker, waiting until all are free (the requests queued behind it wait too):
    /// what each worker must hold afterwards, the Hedgehog maps.
    All,
}

/// A worker's share of a request: part `index` of `slots.len()`, the workers of the parts in
/// order (so that each knows its peers).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PartOf {
    pub index: usize,
    pub slots: Vec<usize>,
    /// The request's handle, the same in every part (the parts tag what they send each other
    /// with it).
    pub request: u64,
}

impl PartOf {
    /// The whole request on one worker.
    pub fn whole(slot: usize) -> Self {
        PartOf {
            index: 0,
            slots: vec![slot],
            request: 0,
        }
    }
}

/// One message to send now ([`Scheduler::dispatch_side`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SideSend {
    /// The handle [`Scheduler::queue_side`] gave.
    pub request: u64,
    /// The message's id (each part has its own).
    pub id: u64,
    /// The worker, or `None`: no worker at all, the caller runs it (browser tests).
    pub slot: Option<usize>,
    pub part: PartOf,
}

/// What to do with the queue now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SideDispatch {
    pub send: Vec<SideSend>,
    /// Queued requests dropped unsent (their ticket was superseded).
    pub dropped: Vec<u64>,
}

/// What an answer to a side request is ([`Scheduler::side_request_answered`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SideAnswer {
    pub ticket: Ticket,
    /// The handle of the request it belongs to.
    pub request: u64,
    /// Which part answered (0: the part whose answer is the request's).
    pub part: usize,
    /// Whether its ticket is still its channel's newest: only then is it delivered.
    pub current: bool,
    /// Whether no part of the request is in flight any more.
    pub last: bool,
}

/// One side request part in flight.
#[derive(Clone, Copy, Debug)]
pub(super) struct SideRequest {
    pub(super) slot: Option<usize>,
    pub(super) ticket: Ticket,
    pub(super) request: u64,
    pub(super) part: usize,
    pub(super) reach: Reach,
    /// Sent again already, its first worker lost: a second loss fails it.
    pub(super) resent: bool,
}

/// One side request waiting to be sent.
#[derive(Clone, Copy, Debug)]
pub(super) struct Queued {
    pub(super) request: u64,
    pub(super) ticket: Ticket,
    pub(super) reach: Reach,
    /// Queued again because the worker it went to was lost.
    pub(super) resent: bool,
}

/// The newest generation of each channel (a handful: a list is enough, and the page links no
/// other map for it).
#[derive(Clone, Debug, Default)]
pub(super) struct Channels {
    pub(super) newest: Vec<(Channel, u64)>,
    pub(super) next: u64,
}

impl Channels {
    pub(super) fn newest(&self, channel: Channel) -> Option<u64> {
        self.newest
            .iter()
            .find(|(c, _)| *c == channel)
            .map(|(_, generation)| *generation)
    }
}
