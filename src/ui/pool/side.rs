//! Requests outside the scheduler's job, every kind through one typed function
//! ([`Pool::ask`]): sent to the least busy ready worker under the scheduler's rule that the
//! newest [`Ticket`] of a [`Channel`] wins (an older answer is not delivered; a newer request
//! waits until the older ones of its channel are answered), held until a worker is ready,
//! failed when none is left.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use leptos::prelude::set_timeout;

use super::{NO_WORKER, Pool, WorkerKind};
use crate::lab::scheduler::{Channel, Route, Ticket};
use crate::lab::tasks::{Ask, WorkerRequest, WorkerResponse, encode};

/// Whom to tell a side request's outcome (the typed `done` of [`Pool::ask`], behind the
/// decoding of its answer).
pub(super) type SideJob = Box<dyn FnOnce(Result<WorkerResponse, String>)>;

/// A side request in flight: its ticket and whom to tell.
pub(super) type InFlight = (Ticket, SideJob);

/// A side request not sent yet: its ticket, its message (given its id) and whom to tell.
pub(super) struct Unsent {
    ticket: Ticket,
    message: Box<dyn FnOnce(u64) -> WorkerRequest>,
    job: SideJob,
}

impl Pool {
    /// A new ticket of `channel`: requests made with it supersede the channel's older ones.
    pub fn ticket(pool: &Rc<RefCell<Pool>>, channel: Channel) -> Ticket {
        pool.borrow_mut().scheduler.ticket(channel)
    }

    /// Sends `ask` to the least busy worker under `ticket`; `done` is told its typed outcome,
    /// once, unless a newer ticket of the same channel superseded this one (then never).
    pub fn ask<A: Ask>(
        pool: &Rc<RefCell<Pool>>,
        ticket: Ticket,
        ask: A,
        done: impl FnOnce(Result<A::Answer, String>) + 'static,
    ) {
        if ask.needs_full_worker() {
            Pool::ensure_covers(pool, WorkerKind::Full);
        }
        Pool::route(
            pool,
            Unsent {
                ticket,
                message: Box::new(move |id| ask.message(id)),
                job: Box::new(move |response| done(response.and_then(A::answer))),
            },
        );
    }

    /// Sends, parks or drops `request` as the scheduler says.
    fn route(pool: &Rc<RefCell<Pool>>, request: Unsent) {
        let route = pool.borrow().scheduler.route(request.ticket);
        match route {
            Route::Drop => {}
            Route::Park => {
                let mut p = pool.borrow_mut();
                let channel = request.ticket.channel;
                // Only the newest ticket's requests wait.
                p.parked
                    .retain(|r| r.ticket.channel != channel || r.ticket == request.ticket);
                p.parked.push(request);
            }
            Route::Send => Pool::send(pool, request),
        }
    }

    /// Posts `request` to the least busy ready worker; while workers are still starting, it
    /// waits for the first; without any worker it fails (or, in the browser tests, runs on
    /// the page in a task of its own).
    fn send(pool: &Rc<RefCell<Pool>>, request: Unsent) {
        let mut p = pool.borrow_mut();
        let (id, slot) = p.scheduler.start_side_request(request.ticket);
        let Unsent {
            ticket,
            message,
            job,
        } = request;
        if let Some(index) = slot {
            let bytes = encode(&message(id));
            if let (Ok(bytes), Some(handle)) = (bytes, p.workers.get(index))
                && super::post_transferred(&handle.worker, &bytes).is_ok()
            {
                p.side_jobs.insert(id, (ticket, job));
                return;
            }
            p.scheduler.send_failed(id);
            drop(p);
            job(Err("the request could not be sent to a worker".into()));
            return;
        }
        p.scheduler.side_request_answered(id);
        if p.scheduler.workers() > 0 {
            p.waiting.push(Unsent {
                ticket,
                message,
                job,
            });
            return;
        }
        let Some(runner) = p.page_runner.clone() else {
            drop(p);
            job(Err(NO_WORKER.into()));
            return;
        };
        let (id, _) = p.scheduler.start_side_request(ticket);
        p.side_jobs.insert(id, (ticket, job));
        let bytes = encode(&message(id));
        let this = p.this.clone();
        drop(p);
        set_timeout(
            move || {
                let answer = bytes.map(|b| runner(&b)).unwrap_or_default();
                if let Some(pool) = this.upgrade() {
                    Pool::on_answer(&pool, None, &answer);
                }
            },
            Duration::ZERO,
        );
    }

    /// Delivers the answer to side request `id` if its ticket is still current, then sends
    /// what waited behind it on its channel.
    pub(super) fn side_answered(pool: &Rc<RefCell<Pool>>, id: u64, response: WorkerResponse) {
        let (answer, job) = {
            let mut p = pool.borrow_mut();
            let answer = p.scheduler.side_request_answered(id);
            (answer, p.side_jobs.remove(&id))
        };
        let Some(answer) = answer else {
            return;
        };
        if let (true, Some((_, job))) = (answer.current, job) {
            job(Ok(response));
        }
        Pool::send_parked(pool, answer.ticket.channel);
    }

    /// Sends the parked requests of `channel` once nothing older of it is in flight.
    fn send_parked(pool: &Rc<RefCell<Pool>>, channel: Channel) {
        let ready: Vec<Unsent> = {
            let mut p = pool.borrow_mut();
            let Some(ticket) = p
                .parked
                .iter()
                .find(|r| r.ticket.channel == channel)
                .map(|r| r.ticket)
            else {
                return;
            };
            if !p.scheduler.may_send(ticket) {
                return;
            }
            let (ready, kept) = std::mem::take(&mut p.parked)
                .into_iter()
                .partition(|r| r.ticket.channel == channel);
            p.parked = kept;
            ready
        };
        for request in ready {
            Pool::route(pool, request);
        }
    }

    /// Tells the current ones of the side requests `ids` (lost with their workers) that they
    /// failed, then sends what waited behind them.
    pub(super) fn fail_side_requests(pool: &Rc<RefCell<Pool>>, ids: &[u64], reason: &str) {
        let jobs: Vec<SideJob> = {
            let mut p = pool.borrow_mut();
            let lost: Vec<InFlight> = ids.iter().filter_map(|id| p.side_jobs.remove(id)).collect();
            lost.into_iter()
                .filter(|(ticket, _)| p.scheduler.is_current(*ticket))
                .map(|(_, job)| job)
                .collect()
        };
        for job in jobs {
            job(Err(reason.to_string()));
        }
        let channels: Vec<Channel> = pool
            .borrow()
            .parked
            .iter()
            .map(|r| r.ticket.channel)
            .collect();
        for channel in channels {
            Pool::send_parked(pool, channel);
        }
    }

    /// Sends the side requests that waited for a worker (or fails them if none is left).
    pub(super) fn flush_waiting(pool: &Rc<RefCell<Pool>>) {
        let waiting = std::mem::take(&mut pool.borrow_mut().waiting);
        for request in waiting {
            Pool::route(pool, request);
        }
    }
}
