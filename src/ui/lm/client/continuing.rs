//! The continuations seen from the page: the view asks for the newest configuration's
//! ([`LmClient::ask_continuation`]); once no text is in flight the exact one goes to the first
//! worker and the linear one to the second (or the first, alone), and their tokens, as they
//! come, fill [`LmContinuations`].

use leptos::prelude::*;

use super::super::spawn::post;
use super::LmClient;
use crate::lab::models::smollm::{Continuation, ContinuationEvent, Decoding, LmJob, LmToWorker};

/// The continuations of the newest text asked for, as their tokens come.
#[derive(Clone, Debug, PartialEq)]
pub struct LmContinuations {
    pub job: LmJob,
    pub exact: Continuation,
    /// With the swap's layers linear (`None` without a method).
    pub linear: Option<Continuation>,
    /// With the transferred layers linear, their trained maps (`None` until a transfer of the
    /// same text is judged).
    pub transferred: Option<Continuation>,
}

impl LmContinuations {
    fn absorb(&mut self, decoding: Decoding, event: ContinuationEvent) {
        match decoding {
            Decoding::Exact => self.exact.absorb(event),
            Decoding::Linear => {
                if let Some(linear) = self.linear.as_mut() {
                    linear.absorb(event);
                }
            }
            Decoding::Transferred => {
                if let Some(transferred) = self.transferred.as_mut() {
                    transferred.absorb(event);
                }
            }
        }
    }
}

impl LmClient {
    /// Asks for `job`'s continuation (`None`: no continuation), sent once the model is ready
    /// and no text is in flight.
    pub fn ask_continuation(self, job: Option<LmJob>) {
        self.inner.get_value().borrow_mut().wanted_continuation = job;
        self.send_continuation();
    }

    /// Sends the wanted continuation if it is not the one under way: the exact one to the
    /// first worker, the linear one to the second when it is ready (else to the first too).
    pub(super) fn send_continuation(self) {
        let inner = self.inner.get_value();
        let mut guard = inner.borrow_mut();
        if !guard.ready || guard.run.is_some() || guard.waiting.is_some() {
            return;
        }
        if guard.continued == guard.wanted_continuation && guard.continued.is_some() {
            return;
        }
        let Some(job) = guard.wanted_continuation.clone() else {
            if guard.continued.take().is_some() || guard.continuation_id.is_some() {
                let _ = post(guard.worker.as_ref(), &LmToWorker::StopContinuing);
                let _ = post(guard.helper.as_ref(), &LmToWorker::StopContinuing);
                guard.continuation_id = None;
            }
            drop(guard);
            self.continuations.set(None);
            return;
        };
        guard.next_id += 1;
        let id = guard.next_id;
        // The transfer's trained maps, once judged on this text.
        let trained = self.transfer.with_untracked(|t| {
            t.as_ref()
                .filter(|t| t.job.text == job.text && matches!(t.verdict, Some(Ok(_))))
                .map(|t| t.trained.clone())
        });
        let message = |decoding, trained: &[_]| LmToWorker::Continue {
            id,
            job: job.clone(),
            decoding,
            trained: trained.to_vec(),
        };
        let linear = job.method().is_some();
        let helper = guard.helper.clone().filter(|_| guard.helper_ready);
        let _ = post(guard.helper.as_ref(), &LmToWorker::StopContinuing);
        if post(guard.worker.as_ref(), &message(Decoding::Exact, &[])).is_none() {
            return;
        }
        // The linear continuations on the second worker where there is one, else the first.
        let second = |decoding, trained: &[_]| {
            let on_helper = helper
                .as_ref()
                .is_some_and(|h| post(Some(h), &message(decoding, trained)).is_some());
            if !on_helper {
                let _ = post(guard.worker.as_ref(), &message(decoding, trained));
            }
        };
        if linear {
            second(Decoding::Linear, &[]);
        }
        if let Some(trained) = &trained {
            second(Decoding::Transferred, trained);
        }
        guard.continuation_id = Some(id);
        guard.continued = Some(job.clone());
        drop(guard);
        self.continuations.set(Some(LmContinuations {
            job,
            exact: Continuation::new(Decoding::Exact),
            linear: linear.then(|| Continuation::new(Decoding::Linear)),
            transferred: trained.map(|_| Continuation::new(Decoding::Transferred)),
        }));
    }

    /// An event of the continuation asked last (an older one's are dropped).
    pub(super) fn on_continuing(self, id: u64, decoding: Decoding, event: ContinuationEvent) {
        if self.inner.get_value().borrow().continuation_id != Some(id) {
            return;
        }
        self.continuations.update(|c| {
            if let Some(c) = c.as_mut() {
                c.absorb(decoding, event);
            }
        });
    }
}
