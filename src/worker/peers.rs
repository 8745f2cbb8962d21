//! The model workers' talk among themselves: each pair is connected by a `MessagePort` (the
//! page sends each worker its end, `WorkerRequest::Connect`); a request split over workers
//! ([`PartOf`]) sends its parts' shares over them ([`Peers::send`]) and waits for the others'
//! ([`Peers::receive`]), tagged by the request and a step, so that a share that arrives before
//! its receiver asked waits in the inbox. A share that does not come within [`PEER_TIMEOUT_MS`]
//! (its worker died) fails the request instead of holding the worker forever.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use serde::{Deserialize, Serialize};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{MessageEvent, MessagePort};

use crate::lab::scheduler::PartOf;
use crate::lab::tasks::{decode, encode};

/// How long a part waits for another's share.
pub(super) const PEER_TIMEOUT_MS: i32 = 60_000;

/// One share, as it travels.
#[derive(Serialize, Deserialize)]
struct Envelope {
    request: u64,
    step: u32,
    from: usize,
    #[serde(with = "serde_bytes")]
    body: Vec<u8>,
}

#[derive(Default)]
struct Inbox {
    shares: Vec<Envelope>,
    waker: Option<Waker>,
    timed_out: bool,
}

/// The ports to the other model workers and what came over them.
#[derive(Default)]
pub(super) struct Peers {
    ports: Vec<(usize, MessagePort)>,
    inbox: Rc<RefCell<Inbox>>,
    handlers: Vec<Closure<dyn FnMut(MessageEvent)>>,
}

impl Peers {
    /// Keeps the port to the model worker of slot `peer` and listens on it.
    pub(super) fn connect(&mut self, peer: usize, port: MessagePort) {
        let inbox = self.inbox.clone();
        let handler = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            let bytes = js_sys::Uint8Array::new(&event.data()).to_vec();
            match decode::<Envelope>(&bytes) {
                Ok(envelope) => {
                    let mut inbox = inbox.borrow_mut();
                    inbox.shares.push(envelope);
                    if let Some(waker) = inbox.waker.take() {
                        waker.wake();
                    }
                }
                Err(error) => web_sys::console::error_1(&error.into()),
            }
        });
        port.set_onmessage(Some(handler.as_ref().unchecked_ref()));
        self.handlers.push(handler);
        self.ports.retain(|(p, _)| *p != peer);
        self.ports.push((peer, port));
    }

    /// Sends `body` as this part's share of `step` to every other part of `part`.
    pub(super) fn send(
        &self,
        request: u64,
        step: u32,
        part: &PartOf,
        body: &[u8],
    ) -> Result<(), String> {
        let me = part.slots.get(part.index).copied();
        let bytes = encode(&Envelope {
            request,
            step,
            from: part.index,
            body: body.to_vec(),
        })?;
        for (index, slot) in part.slots.iter().enumerate() {
            if Some(*slot) == me || index == part.index {
                continue;
            }
            let port = self
                .ports
                .iter()
                .find(|(p, _)| p == slot)
                .map(|(_, port)| port)
                .ok_or_else(|| format!("no port to the model worker {slot}"))?;
            let array = js_sys::Uint8Array::from(bytes.as_slice());
            port.post_message_with_transferable(&array, &js_sys::Array::of1(&array.buffer()))
                .map_err(|_| format!("cannot send to the model worker {slot}"))?;
        }
        Ok(())
    }

    /// The other parts' shares of `step` of `request`, by part index (waits until all came).
    pub(super) fn receive(&self, request: u64, step: u32, part: &PartOf) -> Receive {
        Receive {
            inbox: self.inbox.clone(),
            request,
            step,
            want: part.slots.len().saturating_sub(1),
            timer: None,
        }
    }
}

/// The future of [`Peers::receive`].
pub(super) struct Receive {
    inbox: Rc<RefCell<Inbox>>,
    request: u64,
    step: u32,
    want: usize,
    timer: Option<(i32, Closure<dyn FnMut()>)>,
}

impl Future for Receive {
    type Output = Result<Vec<(usize, Vec<u8>)>, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (request, step, want) = (self.request, self.step, self.want);
        let mut inbox = self.inbox.borrow_mut();
        let count = inbox
            .shares
            .iter()
            .filter(|e| e.request == request && e.step == step)
            .count();
        if count >= want {
            let (mine, rest): (Vec<Envelope>, Vec<Envelope>) = std::mem::take(&mut inbox.shares)
                .into_iter()
                .partition(|e| e.request == request && e.step == step);
            inbox.shares = rest;
            return Poll::Ready(Ok(mine.into_iter().map(|e| (e.from, e.body)).collect()));
        }
        if inbox.timed_out {
            inbox.timed_out = false;
            return Poll::Ready(Err(
                "another model worker did not send its share in time".into()
            ));
        }
        inbox.waker = Some(cx.waker().clone());
        drop(inbox);
        if self.timer.is_none() {
            let inbox = self.inbox.clone();
            let on_timeout = Closure::<dyn FnMut()>::new(move || {
                let mut inbox = inbox.borrow_mut();
                inbox.timed_out = true;
                if let Some(waker) = inbox.waker.take() {
                    waker.wake();
                }
            });
            let id = js_sys::global()
                .dyn_into::<web_sys::WorkerGlobalScope>()
                .ok()
                .and_then(|scope| {
                    scope
                        .set_timeout_with_callback_and_timeout_and_arguments_0(
                            on_timeout.as_ref().unchecked_ref(),
                            PEER_TIMEOUT_MS,
                        )
                        .ok()
                })
                .unwrap_or(0);
            self.timer = Some((id, on_timeout));
        }
        Poll::Pending
    }
}

impl Drop for Receive {
    fn drop(&mut self) {
        if let Some((id, _)) = self.timer.take()
            && let Ok(scope) = js_sys::global().dyn_into::<web_sys::WorkerGlobalScope>()
        {
            scope.clear_timeout_with_handle(id);
        }
    }
}
