//! The scheduler's side requests, its methods for them: tickets, the queue, dispatch, answers
//! and a lost worker's requests (the types and the rule are in [`super::side`]).

use super::scheduler::Scheduler;
use super::side::{
    Channel, PartOf, Queued, Reach, SideAnswer, SideDispatch, SideRequest, SideSend, Ticket,
};

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
    pub fn queue_side(&mut self, ticket: Ticket, reach: Reach) -> u64 {
        let request = self.fresh_id();
        self.side_queue.push(Queued {
            request,
            ticket,
            reach,
            resent: false,
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
            let slots = match queued.reach {
                _ if free.is_empty() => Vec::new(),
                Reach::One => vec![free[0]],
                Reach::Free => {
                    let mut slots = free.clone();
                    slots.sort_unstable();
                    slots
                }
                Reach::All if free.len() == ready.len() => ready.clone(),
                Reach::All => Vec::new(),
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
                reach: queued.reach,
                resent: queued.resent,
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

    /// Worker `slot` died. A whole request of a current ticket that was on it ([`Reach::One`])
    /// goes back to the front of the side queue, once, if another worker lives: a worker lost
    /// in the middle of an export costs its tasks a second computation, not the export (the
    /// job's tasks go back to the queue the same way). The others (a request sent again
    /// already, one split over several workers, one of a superseded ticket, or no worker left)
    /// are forgotten with their parts on other workers; returns their handles.
    pub(super) fn side_requests_of_lost_worker(&mut self, slot: usize) -> Vec<u64> {
        let another_lives = self
            .slots
            .iter()
            .enumerate()
            .any(|(i, s)| i != slot && s.alive);
        let mut on_slot: Vec<SideRequest> = self
            .side_requests
            .values()
            .filter(|r| r.slot == Some(slot))
            .copied()
            .collect();
        on_slot.sort_unstable_by_key(|r| r.request);
        on_slot.dedup_by_key(|r| r.request);
        let (again, lost): (Vec<SideRequest>, Vec<SideRequest>) =
            on_slot.into_iter().partition(|r| {
                another_lives && r.reach == Reach::One && !r.resent && self.is_current(r.ticket)
            });
        let lost: Vec<u64> = lost.iter().map(|r| r.request).collect();
        let forgotten: Vec<u64> = self
            .side_requests
            .iter()
            .filter(|(_, r)| {
                lost.contains(&r.request)
                    || (r.slot == Some(slot) && again.iter().any(|a| a.request == r.request))
            })
            .map(|(id, _)| *id)
            .collect();
        for id in forgotten {
            if let Some(r) = self.side_requests.remove(&id)
                && let Some(s) = r.slot.and_then(|i| self.slots.get_mut(i))
            {
                s.in_flight = s.in_flight.saturating_sub(1);
                s.side_in_flight = s.side_in_flight.saturating_sub(1);
            }
        }
        // In the order they were asked, before anything queued since.
        let resent = again.iter().map(|r| Queued {
            request: r.request,
            ticket: r.ticket,
            reach: Reach::One,
            resent: true,
        });
        self.side_queue.splice(0..0, resent);
        lost
    }
}
