//! The scheduler's side requests: messages outside the job (a probe, its pair, the data panel,
//! an attention part), each sent to the least busy ready worker and forgotten once answered,
//! once its worker is lost or once the workers are replaced.

use super::Scheduler;

impl Scheduler {
    /// A side request to send (anything outside the job): its message id and the least busy
    /// ready worker (`None`: no worker is ready, or none is alive).
    pub fn start_side_request(&mut self) -> (u64, Option<usize>) {
        let id = self.fresh_id();
        let slot = if self.local {
            None
        } else {
            (0..self.slots.len())
                .filter(|&i| self.slots[i].alive && self.slots[i].ready)
                .min_by_key(|&i| self.slots[i].in_flight)
        };
        self.side_requests.insert(id, slot);
        (id, slot)
    }

    /// Side request `id` was answered; whether it was still awaited.
    pub fn side_request_answered(&mut self, id: u64) -> bool {
        self.side_requests.remove(&id).is_some()
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
        if let Some(Some(slot)) = self.side_requests.remove(&id)
            && let Some(s) = self.slots.get_mut(slot)
        {
            s.alive = false;
        }
    }

    /// Forgets the side requests sent to worker `slot`, which died; returns their ids.
    pub(super) fn side_requests_of_lost_worker(&mut self, slot: usize) -> Vec<u64> {
        let lost: Vec<u64> = self
            .side_requests
            .iter()
            .filter(|(_, s)| **s == Some(slot))
            .map(|(id, _)| *id)
            .collect();
        for id in &lost {
            self.side_requests.remove(id);
        }
        lost
    }
}
