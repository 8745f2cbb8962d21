//! Requests outside the scheduler's job, every kind through one typed function
//! ([`Pool::ask`], or [`Pool::ask_with_updates`] for one that sends news while it runs): the
//! scheduler queues each under its ticket and says when to send which part to which worker
//! (`lab::pool::side`: the newest ticket of a channel wins, a capped pool serves by
//! priority, a request may be split over workers); this file keeps each request's message and
//! callbacks under the scheduler's handle and moves the bytes.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use leptos::prelude::set_timeout;

use super::{NO_WORKER, Pool, WorkerKind};
use crate::lab::models::protocol::ModelAnswer;
use crate::lab::pool::{Ask, decode, response_failed};
use crate::lab::pool::{PartOf, Ticket};

/// Whom to tell a side request's outcome (the typed `done` of [`Pool::ask`], behind the
/// decoding of its answer): the worker's encoded response, which only the request's own
/// [`Ask::answer`] decodes.
type SideJob = Box<dyn FnOnce(Result<Vec<u8>, String>)>;

/// Whom to tell a request's updates: each update's encoded [`ModelAnswer`].
type SideUpdate = Box<dyn FnMut(&[u8])>;

/// A request's encoded message for one of its parts, given the part's id
/// ([`Ask::request_bytes`]).
type PartMessage = Box<dyn Fn(u64, &PartOf) -> Result<Vec<u8>, String>>;

/// A side request the pool holds until its last part is answered.
pub(super) struct SideEntry {
    ticket: Ticket,
    /// Its message for a part, given the part's id.
    message: PartMessage,
    /// Told once: the first part's answer, or the first error.
    done: Option<SideJob>,
    /// Told every update while it runs (current tickets only): the update's encoded
    /// [`ModelAnswer`].
    update: Option<SideUpdate>,
}

impl Pool {
    /// A new ticket of `channel`: requests made with it supersede the channel's older ones.
    pub fn ticket(pool: &Rc<RefCell<Pool>>, channel: crate::lab::pool::Channel) -> Ticket {
        pool.borrow_mut().scheduler.ticket(channel)
    }

    /// Sends `ask` under `ticket` when the scheduler says (at once, unless workers are scarce
    /// or an older request of the channel is in flight); `done` is told its typed outcome,
    /// once, unless a newer ticket of the same channel superseded this one (then never).
    pub fn ask<A: Ask>(
        pool: &Rc<RefCell<Pool>>,
        ticket: Ticket,
        ask: A,
        done: impl FnOnce(Result<A::Answer, String>) + 'static,
    ) {
        Pool::queue(pool, ticket, ask, None, done);
    }

    /// [`Pool::ask`] for a request that sends news while it runs (the model's training):
    /// `update` is told each, while the ticket is current.
    pub fn ask_with_updates<A: Ask>(
        pool: &Rc<RefCell<Pool>>,
        ticket: Ticket,
        ask: A,
        mut update: impl FnMut(ModelAnswer) + 'static,
        done: impl FnOnce(Result<A::Answer, String>) + 'static,
    ) {
        // Decoded here, so that only a module that asks for updates links their decoder.
        let update = move |bytes: &[u8]| {
            if let Ok(answer) = decode::<ModelAnswer>(bytes) {
                update(answer);
            }
        };
        Pool::queue(pool, ticket, ask, Some(Box::new(update)), done);
    }

    fn queue<A: Ask>(
        pool: &Rc<RefCell<Pool>>,
        ticket: Ticket,
        ask: A,
        update: Option<SideUpdate>,
        done: impl FnOnce(Result<A::Answer, String>) + 'static,
    ) {
        if ask.needs_full_worker() {
            Pool::ensure_covers(pool, WorkerKind::Full);
        }
        {
            let mut p = pool.borrow_mut();
            let request = p.scheduler.queue_side(ticket, ask.reach());
            p.side.insert(
                request,
                SideEntry {
                    ticket,
                    message: Box::new(move |id, part| ask.request_bytes(id, part)),
                    done: Some(Box::new(move |response: Result<Vec<u8>, String>| {
                        done(response.and_then(|bytes| A::answer(&bytes)))
                    })),
                    update,
                },
            );
        }
        Pool::pump_side(pool);
    }

    /// Sends what the scheduler dispatches from the side queue; forgets what it dropped.
    /// Without any worker the queued requests fail (in the browser tests: each runs on the
    /// page, in a task of its own).
    pub(super) fn pump_side(pool: &Rc<RefCell<Pool>>) {
        let no_worker = {
            let p = pool.borrow();
            p.scheduler.workers() == 0 && p.page_runner.is_none()
        };
        if no_worker {
            let failed: Vec<SideJob> = {
                let mut p = pool.borrow_mut();
                let queued = p.scheduler.drain_side_queue();
                queued
                    .iter()
                    .filter_map(|r| p.side.remove(r).and_then(|e| e.done))
                    .collect()
            };
            for job in failed {
                job(Err(NO_WORKER.into()));
            }
            return;
        }
        let mut failed = Vec::new();
        {
            let mut p = pool.borrow_mut();
            let dispatch = p.scheduler.dispatch_side();
            for request in dispatch.dropped {
                p.side.remove(&request);
            }
            for send in dispatch.send {
                let Some(entry) = p.side.get(&send.request) else {
                    p.scheduler.side_request_answered(send.id);
                    continue;
                };
                let bytes = (entry.message)(send.id, &send.part);
                match send.slot {
                    Some(slot) => {
                        let sent = bytes.map_err(|e| e.into()).and_then(|bytes| {
                            match p.workers.get(slot) {
                                Some(h) => super::post_transferred(&h.worker, &bytes),
                                None => Err("no such worker".into()),
                            }
                        });
                        if sent.is_err() {
                            p.scheduler.side_request_failed(send.id);
                            failed.push(send.request);
                        }
                    }
                    None => {
                        let Some(runner) = p.page_runner.clone() else {
                            continue;
                        };
                        let this = p.this.clone();
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
                }
            }
        }
        if !failed.is_empty() {
            Pool::fail_side_requests(pool, &failed, "the request could not be sent to a worker");
        }
    }

    /// Part `id` of a side request answered: delivers the request's answer (its first part's,
    /// or the first error) if its ticket is still current, then sends what waited.
    pub(super) fn side_answered(pool: &Rc<RefCell<Pool>>, id: u64, response: Vec<u8>) {
        let job = {
            let mut p = pool.borrow_mut();
            let Some(answer) = p.scheduler.side_request_answered(id) else {
                return;
            };
            let deliver = answer.current && (answer.part == 0 || response_failed(&response));
            let job = if deliver {
                p.side
                    .get_mut(&answer.request)
                    .and_then(|entry| entry.done.take())
            } else {
                None
            };
            if answer.last {
                p.side.remove(&answer.request);
            }
            job
        };
        if let Some(job) = job {
            job(Ok(response));
        }
        Pool::pump_side(pool);
    }

    /// News from part `id` of a side request, told to its `update` if its ticket is current.
    pub(super) fn side_update(pool: &Rc<RefCell<Pool>>, id: u64, update: &[u8]) {
        let callback = {
            let mut p = pool.borrow_mut();
            let Some((request, true)) = p.scheduler.side_request_of(id) else {
                return;
            };
            p.side.get_mut(&request).and_then(|e| e.update.take())
        };
        // Taken out while it runs (it may call into the pool), then put back.
        if let Some(mut callback) = callback {
            callback(update);
            let mut p = pool.borrow_mut();
            if let Some((request, _)) = p.scheduler.side_request_of(id)
                && let Some(entry) = p.side.get_mut(&request)
            {
                entry.update = Some(callback);
            }
        }
    }

    /// Tells the side requests `requests` (lost with their workers, or unsendable) that they
    /// failed, then sends what waited behind them.
    pub(super) fn fail_side_requests(pool: &Rc<RefCell<Pool>>, requests: &[u64], reason: &str) {
        let jobs: Vec<SideJob> = {
            let mut p = pool.borrow_mut();
            let lost: Vec<SideEntry> = requests.iter().filter_map(|r| p.side.remove(r)).collect();
            lost.into_iter()
                .filter(|e| p.scheduler.is_current(e.ticket))
                .filter_map(|e| e.done)
                .collect()
        };
        for job in jobs {
            job(Err(reason.to_string()));
        }
        Pool::pump_side(pool);
    }
}
