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
//! priority. A request may run on several workers at once ([`Spread`]): the model's forward of
//! one text, split by rows, and the Hedgehog maps' training, split by heads; each worker gets
//! its part ([`PartOf`]) under an id of its own.

use super::Scheduler;
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
    /// is typing or looking at before the long model swap, and the swap (the text view's
    /// first screen) before the two parts that read every head of the text, the last
    /// sections of the page (on the model's workers they would hold the swap back by several
    /// seconds; a head's own parts stay first, as the reader moves between heads).
    pub fn priority(self) -> u8 {
        match self {
            Channel::Text => 0,
            Channel::Attention(AttentionPart::HeadsTable | AttentionPart::KernelVsAttention) => 4,
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
    generation: u64,
}

/// On how many workers a side request runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spread {
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
    slot: Option<usize>,
    ticket: Ticket,
    request: u64,
    part: usize,
}

/// One side request waiting to be sent.
#[derive(Clone, Copy, Debug)]
pub(super) struct Queued {
    request: u64,
    ticket: Ticket,
    spread: Spread,
}

/// The newest generation of each channel (a handful: a list is enough, and the page links no
/// other map for it).
#[derive(Clone, Debug, Default)]
pub(super) struct Channels {
    newest: Vec<(Channel, u64)>,
    next: u64,
}

impl Channels {
    fn newest(&self, channel: Channel) -> Option<u64> {
        self.newest
            .iter()
            .find(|(c, _)| *c == channel)
            .map(|(_, generation)| *generation)
    }
}

impl Scheduler {
    /// A new ticket of `channel`, which supersedes its older ones.
    pub fn ticket(&mut self, channel: Channel) -> Ticket {
        self.channels.next += 1;
        let generation = self.channels.next;
        match self.channels.newest.iter_mut().find(|(c, _)| *c == channel) {
            Some(newest) => newest.1 = generation,
            None => self.channels.newest.push((channel, generation)),
        }
        Ticket {
            channel,
            generation,
        }
    }

    /// Whether `ticket` is its channel's newest.
    pub fn is_current(&self, ticket: Ticket) -> bool {
        self.channels.newest(ticket.channel) == Some(ticket.generation)
    }

    /// At most `limit` side requests in one worker at once (`None`: no limit, the default).
    pub fn set_side_limit(&mut self, limit: Option<usize>) {
        self.side_limit = limit;
    }

    /// Queues a side request of `ticket`; returns its handle (see [`Scheduler::dispatch_side`]).
    pub fn queue_side(&mut self, ticket: Ticket, spread: Spread) -> u64 {
        let request = self.fresh_id();
        self.side_queue.push(Queued {
            request,
            ticket,
            spread,
        });
        request
    }

    /// Whether requests wait in the side queue.
    pub fn has_queued_side(&self) -> bool {
        !self.side_queue.is_empty()
    }

    /// Takes every queued request out (no worker is left to run them); returns their handles.
    pub fn drain_side_queue(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.side_queue)
            .into_iter()
            .map(|q| q.request)
            .collect()
    }

    /// Whether no request of an older ticket of `ticket`'s channel is in flight.
    fn may_send(&self, ticket: Ticket) -> bool {
        !self
            .side_requests
            .values()
            .any(|r| r.ticket.channel == ticket.channel && r.ticket.generation < ticket.generation)
    }

    /// The ready, live workers, and those of them with room for a side request, least busy
    /// first.
    fn side_room(&self) -> (Vec<usize>, Vec<usize>) {
        let ready: Vec<usize> = (0..self.slots.len())
            .filter(|&i| self.slots[i].alive && self.slots[i].ready)
            .collect();
        let mut free: Vec<usize> = ready
            .iter()
            .copied()
            .filter(|&i| {
                self.side_limit
                    .is_none_or(|limit| self.slots[i].side_in_flight < limit)
            })
            .collect();
        free.sort_by_key(|&i| (self.slots[i].in_flight, i));
        (ready, free)
    }

    /// What to send now: the queued requests of current tickets whose channel has nothing older
    /// in flight, by priority, as long as workers have room (without any worker, each goes to
    /// the caller with `slot: None`); superseded ones are dropped.
    pub fn dispatch_side(&mut self) -> SideDispatch {
        let mut out = SideDispatch::default();
        let queue = std::mem::take(&mut self.side_queue);
        let (current, superseded): (Vec<Queued>, Vec<Queued>) =
            queue.into_iter().partition(|q| self.is_current(q.ticket));
        out.dropped = superseded.iter().map(|q| q.request).collect();
        let mut order = current;
        // Stable: first come first served within a priority.
        order.sort_by_key(|q| q.ticket.channel.priority());
        let mut kept = Vec::new();
        let mut blocked = false;
        for queued in order {
            if blocked || !self.may_send(queued.ticket) {
                kept.push(queued);
                continue;
            }
            if self.local {
                out.send
                    .push(self.start_part(queued, None, PartOf::whole(0)));
                continue;
            }
            let (ready, free) = self.side_room();
            let slots = match queued.spread {
                _ if free.is_empty() => Vec::new(),
                Spread::One => vec![free[0]],
                Spread::Free => {
                    let mut slots = free.clone();
                    slots.sort_unstable();
                    slots
                }
                Spread::All if free.len() == ready.len() => ready.clone(),
                Spread::All => Vec::new(),
            };
            if slots.is_empty() {
                // Nothing has room (or an `All` request waits for everyone): it and everything
                // behind it wait, so the first in line is the first served.
                blocked = true;
                kept.push(queued);
                continue;
            }
            for index in 0..slots.len() {
                let part = PartOf {
                    index,
                    slots: slots.clone(),
                    request: queued.request,
                };
                out.send
                    .push(self.start_part(queued, Some(slots[index]), part));
            }
        }
        self.side_queue = kept;
        out
    }

    fn start_part(&mut self, queued: Queued, slot: Option<usize>, part: PartOf) -> SideSend {
        let id = self.fresh_id();
        if let Some(s) = slot.and_then(|i| self.slots.get_mut(i)) {
            s.in_flight += 1;
            s.side_in_flight += 1;
        }
        self.side_requests.insert(
            id,
            SideRequest {
                slot,
                ticket: queued.ticket,
                request: queued.request,
                part: part.index,
            },
        );
        SideSend {
            request: queued.request,
            id,
            slot,
            part,
        }
    }

    /// Side request part `id` was answered (or will never be: the caller gave up on it):
    /// forgets it and says whether to deliver its answer. `None`: it was not awaited.
    pub fn side_request_answered(&mut self, id: u64) -> Option<SideAnswer> {
        let request = self.side_requests.remove(&id)?;
        if let Some(s) = request.slot.and_then(|i| self.slots.get_mut(i)) {
            s.in_flight = s.in_flight.saturating_sub(1);
            s.side_in_flight = s.side_in_flight.saturating_sub(1);
        }
        Some(SideAnswer {
            ticket: request.ticket,
            request: request.request,
            part: request.part,
            current: self.is_current(request.ticket),
            last: !self
                .side_requests
                .values()
                .any(|r| r.request == request.request),
        })
    }

    /// Whether part `id` is in flight (an update for a forgotten part is dropped).
    pub fn side_request_of(&self, id: u64) -> Option<(u64, bool)> {
        self.side_requests
            .get(&id)
            .map(|r| (r.request, self.is_current(r.ticket)))
    }

    /// Forgets every side request in flight or queued (the workers are replaced); returns the
    /// handles of those in flight, in order.
    pub(super) fn forget_side_requests(&mut self) -> Vec<u64> {
        let mut lost: Vec<u64> = std::mem::take(&mut self.side_requests)
            .into_values()
            .map(|r| r.request)
            .collect();
        lost.sort_unstable();
        lost.dedup();
        lost
    }

    /// Side request part `id` could not be posted: its worker is taken as dead.
    pub fn side_request_failed(&mut self, id: u64) {
        if let Some(SideRequest {
            slot: Some(slot), ..
        }) = self.side_requests.remove(&id)
            && let Some(s) = self.slots.get_mut(slot)
        {
            s.alive = false;
        }
    }

    /// Forgets the side requests with a part on worker `slot`, which died (their other parts,
    /// which wait for this one, too); returns their handles.
    pub(super) fn side_requests_of_lost_worker(&mut self, slot: usize) -> Vec<u64> {
        let mut lost: Vec<u64> = self
            .side_requests
            .values()
            .filter(|r| r.slot == Some(slot))
            .map(|r| r.request)
            .collect();
        lost.sort_unstable();
        lost.dedup();
        let parts: Vec<u64> = self
            .side_requests
            .iter()
            .filter(|(_, r)| lost.contains(&r.request))
            .map(|(id, _)| *id)
            .collect();
        for id in parts {
            if let Some(r) = self.side_requests.remove(&id)
                && let Some(s) = r.slot.and_then(|i| self.slots.get_mut(i))
            {
                s.in_flight = s.in_flight.saturating_sub(1);
                s.side_in_flight = s.side_in_flight.saturating_sub(1);
            }
        }
        lost
    }
}
