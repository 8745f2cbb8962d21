//! The scheduler's side requests: every message outside the job (the probe and its pair, the
//! data panel, an attention part, the export's tasks), and the one rule by which the newest
//! request wins.
//!
//! Each request belongs to a [`Channel`] (what it is for) and carries a [`Ticket`] of it. A new
//! ticket supersedes the channel's older ones:
//! - **latest answer wins**: an answer to a superseded ticket is not delivered
//!   ([`SideAnswer::current`]), so a component never sees an older request's answer after a
//!   newer one's;
//! - **one ticket in flight per channel**: a request whose channel still has requests of an
//!   older ticket in flight is parked ([`Route::Park`]) and sent once they are all answered;
//!   only the newest parked ticket is kept (the caller drops the older ones, which
//!   [`Route::Drop`] reports), so dragging a slider never queues stale work in the workers.
//!
//! Several requests may share one ticket (the probe's pair and then its estimates, the export's
//! tasks): they are all current until the channel's next ticket.

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
}

/// A group of side requests of one channel; the channel's newest ticket is current.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ticket {
    pub channel: Channel,
    generation: u64,
}

/// What to do with a request of a ticket now ([`Scheduler::route`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Send it ([`Scheduler::start_side_request`]).
    Send,
    /// Hold it until the channel's older requests are answered ([`Scheduler::may_send`]).
    Park,
    /// Drop it: a newer ticket of its channel exists.
    Drop,
}

/// What an answer to a side request is ([`Scheduler::side_request_answered`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SideAnswer {
    pub ticket: Ticket,
    /// Whether its ticket is still its channel's newest: only then is it delivered.
    pub current: bool,
}

/// One side request in flight.
#[derive(Clone, Copy, Debug)]
pub(super) struct SideRequest {
    slot: Option<usize>,
    ticket: Ticket,
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

    /// What to do now with a request of `ticket`: drop it if superseded, park it while its
    /// channel has older requests in flight, else send it.
    pub fn route(&self, ticket: Ticket) -> Route {
        if !self.is_current(ticket) {
            Route::Drop
        } else if self.may_send(ticket) {
            Route::Send
        } else {
            Route::Park
        }
    }

    /// Whether no request of an older ticket of `ticket`'s channel is in flight.
    pub fn may_send(&self, ticket: Ticket) -> bool {
        !self
            .side_requests
            .values()
            .any(|r| r.ticket.channel == ticket.channel && r.ticket.generation < ticket.generation)
    }

    /// A side request of `ticket` to send: its message id and the least busy ready worker
    /// (`None`: no worker is ready, or none is alive). The worker counts it in flight.
    pub fn start_side_request(&mut self, ticket: Ticket) -> (u64, Option<usize>) {
        let id = self.fresh_id();
        let slot = if self.local {
            None
        } else {
            (0..self.slots.len())
                .filter(|&i| self.slots[i].alive && self.slots[i].ready)
                .min_by_key(|&i| self.slots[i].in_flight)
        };
        if let Some(s) = slot.and_then(|i| self.slots.get_mut(i)) {
            s.in_flight += 1;
        }
        self.side_requests.insert(id, SideRequest { slot, ticket });
        (id, slot)
    }

    /// Side request `id` was answered (or will never be: the caller gave up on it): forgets
    /// it and says whether to deliver its answer. `None`: it was not awaited.
    pub fn side_request_answered(&mut self, id: u64) -> Option<SideAnswer> {
        let request = self.side_requests.remove(&id)?;
        if let Some(s) = request.slot.and_then(|i| self.slots.get_mut(i)) {
            s.in_flight = s.in_flight.saturating_sub(1);
        }
        Some(SideAnswer {
            ticket: request.ticket,
            current: self.is_current(request.ticket),
        })
    }

    /// Forgets every side request in flight (the workers are replaced); returns their ids in
    /// order.
    pub(super) fn forget_side_requests(&mut self) -> Vec<u64> {
        let mut lost: Vec<u64> = std::mem::take(&mut self.side_requests)
            .into_keys()
            .collect();
        lost.sort_unstable();
        lost
    }

    /// Side request `id` could not be posted: its worker is taken as dead.
    pub(super) fn side_request_failed(&mut self, id: u64) {
        if let Some(SideRequest {
            slot: Some(slot), ..
        }) = self.side_requests.remove(&id)
            && let Some(s) = self.slots.get_mut(slot)
        {
            s.alive = false;
        }
    }

    /// Forgets the side requests sent to worker `slot`, which died; returns their ids.
    pub(super) fn side_requests_of_lost_worker(&mut self, slot: usize) -> Vec<u64> {
        let mut lost: Vec<u64> = self
            .side_requests
            .iter()
            .filter(|(_, r)| r.slot == Some(slot))
            .map(|(id, _)| *id)
            .collect();
        lost.sort_unstable();
        for id in &lost {
            self.side_requests.remove(id);
        }
        lost
    }
}
