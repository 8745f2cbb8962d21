//! The model workers' talk among themselves: each pair is connected by a `MessagePort` (the
//! page sends each worker its end, `WorkerRequest::Connect`); a request split over workers
//! ([`PartOf`]) sends its parts' shares over them ([`Peers::send`]) and waits for the others'
//! ([`Peers::receive`]), tagged by the request and a step, so that a share that arrives before
//! its receiver asked waits in the inbox. A share that does not come within [`PEER_TIMEOUT_MS`]
//! (its worker died) fails the request instead of holding the worker forever.
//!
//! When the page is cross-origin isolated, each model worker also owns a shared board (a
//! `SharedArrayBuffer`, laid out by `lab::models::board`) that it sends every peer once over the
//! port; a text's parts then post their per-layer shares on their boards and wait for the
//! others' with `Atomics.wait` ([`Peers::exchange`] with `shared`), microseconds instead of a
//! trip through each worker's event loop.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use js_sys::{Atomics, Int32Array, SharedArrayBuffer, Uint8Array};
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{MessageEvent, MessagePort};

use crate::lab::models::board::{BoardLayout, HOLDERS};
use crate::lab::pool::PartOf;
use crate::lab::pool::{decode, encode};

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

/// How long a part blocked on a shared board waits for another's share.
const BOARD_TIMEOUT_MS: f64 = 30_000.0;

/// How many times a part looks at a board before it sleeps on it (about a millisecond).
const BOARD_SPINS: u32 = 20_000;

/// Whether this worker may share memory (the page is cross-origin isolated).
fn may_share_memory() -> bool {
    js_sys::Reflect::get(&js_sys::global(), &"crossOriginIsolated".into())
        .ok()
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}

/// A shared board: its memory, seen as Int32s (the header) and bytes (the buffers).
struct Board {
    memory: SharedArrayBuffer,
    ints: Int32Array,
    layout: BoardLayout,
}

impl Board {
    /// A new board, when this worker may share memory.
    fn create(layout: BoardLayout) -> Option<Board> {
        if !may_share_memory() {
            return None;
        }
        let constructor = js_sys::Reflect::get(&js_sys::global(), &"SharedArrayBuffer".into())
            .ok()?
            .dyn_into::<js_sys::Function>()
            .ok()?;
        let length = js_sys::Array::of1(&(layout.bytes() as f64).into());
        let memory = js_sys::Reflect::construct(&constructor, &length)
            .ok()?
            .unchecked_into::<SharedArrayBuffer>();
        Some(Board::over(memory, layout))
    }

    /// A peer's board, as it came over the port.
    fn received(memory: SharedArrayBuffer) -> Board {
        let bytes = memory.byte_length() as usize;
        let capacity = bytes.saturating_sub(BoardLayout { capacity: 0 }.bytes()) / 2;
        Board::over(memory, BoardLayout { capacity })
    }

    fn over(memory: SharedArrayBuffer, layout: BoardLayout) -> Board {
        let ints = Int32Array::new(&memory);
        Board {
            memory,
            ints,
            layout,
        }
    }

    /// Writes `body` as `step`'s message, stamps it, and wakes the readers.
    fn post(&self, stamp: i32, step: u32, body: &[u8]) -> Result<(), String> {
        if !self.layout.fits(body.len()) {
            return Err(format!(
                "a share of {} bytes does not fit the shared board ({})",
                body.len(),
                self.layout.capacity
            ));
        }
        let offset = self.layout.buffer_offset(BoardLayout::buffer(step)) as u32;
        Uint8Array::new_with_byte_offset_and_length(&self.memory, offset, body.len() as u32)
            .copy_from(body);
        let fail = |_| "cannot write the shared board".to_string();
        Atomics::store(
            &self.ints,
            BoardLayout::length_slot(step),
            body.len() as i32,
        )
        .map_err(fail)?;
        Atomics::store(&self.ints, BoardLayout::stamp_slot(step), stamp).map_err(fail)?;
        Atomics::notify(&self.ints, BoardLayout::stamp_slot(step)).map_err(fail)?;
        Ok(())
    }

    /// Waits (blocking this worker) until `step`'s message carries `stamp`, and reads it.
    fn read(
        &self,
        stamp: i32,
        step: u32,
        started: f64,
        now: &dyn Fn() -> f64,
    ) -> Result<Vec<u8>, String> {
        let fail = |_| "cannot read the shared board".to_string();
        let slot = BoardLayout::stamp_slot(step);
        let mut spins = 0;
        loop {
            let seen = Atomics::load(&self.ints, slot).map_err(fail)?;
            if seen == stamp {
                break;
            }
            // The other part is usually a fraction of a millisecond behind: look again for a
            // while before sleeping, since a sleeping worker may wake a scheduler slice later.
            if spins < BOARD_SPINS {
                spins += 1;
                continue;
            }
            let left = BOARD_TIMEOUT_MS - (now() - started);
            if left <= 0.0 {
                return Err("another model worker did not post its share in time".into());
            }
            Atomics::wait_with_timeout(&self.ints, slot, seen, left).map_err(fail)?;
        }
        let length = Atomics::load(&self.ints, BoardLayout::length_slot(step)).map_err(fail)?;
        let length = usize::try_from(length)
            .ok()
            .filter(|&l| self.layout.fits(l))
            .ok_or("a share on the shared board has a wrong length")?;
        let offset = self.layout.buffer_offset(BoardLayout::buffer(step)) as u32;
        Ok(
            Uint8Array::new_with_byte_offset_and_length(&self.memory, offset, length as u32)
                .to_vec(),
        )
    }
}

/// The ports to the other model workers, what came over them, and the shared boards.
#[derive(Default)]
pub(super) struct Peers {
    ports: Vec<(usize, MessagePort)>,
    inbox: Rc<RefCell<Inbox>>,
    handlers: Vec<Closure<dyn FnMut(MessageEvent)>>,
    /// This worker's board (made at the first connection, when the page is isolated).
    board: Option<Board>,
    /// The peers' boards, by slot.
    boards: Rc<RefCell<Vec<(usize, Board)>>>,
}

impl Peers {
    /// Keeps the port to the model worker of slot `peer`, listens on it, and sends it this
    /// worker's shared board (when the page is isolated).
    pub(super) fn connect(&mut self, peer: usize, port: MessagePort) {
        let inbox = self.inbox.clone();
        let boards = self.boards.clone();
        let handler = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            let data = event.data();
            // A peer's board (checked only where `SharedArrayBuffer` exists).
            if may_share_memory() && data.is_instance_of::<SharedArrayBuffer>() {
                let board = Board::received(data.unchecked_into());
                // Its owner counts who holds it, to use it once every peer does.
                let _ = Atomics::add(&board.ints, HOLDERS, 1);
                let mut boards = boards.borrow_mut();
                boards.retain(|(p, _)| *p != peer);
                boards.push((peer, board));
                return;
            }
            let bytes = js_sys::Uint8Array::new(&data).to_vec();
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
        if self.board.is_none() {
            self.board = Board::create(BoardLayout::default());
        }
        if let Some(board) = &self.board
            && port.post_message(&board.memory).is_err()
        {
            web_sys::console::error_1(&"cannot send the shared board to a peer".into());
        }
        self.ports.retain(|(p, _)| *p != peer);
        self.ports.push((peer, port));
    }

    /// Whether the parts of `part` can exchange over shared boards: this worker's board is
    /// held by every peer it is connected to, and it holds the board of every other part.
    pub(super) fn share_boards(&self, part: &PartOf) -> bool {
        let me = part.slots.get(part.index).copied();
        let Some(board) = &self.board else {
            return false;
        };
        let held = Atomics::load(&board.ints, HOLDERS).unwrap_or(0);
        let boards = self.boards.borrow();
        usize::try_from(held).is_ok_and(|h| h >= self.ports.len())
            && part
                .slots
                .iter()
                .filter(|&&slot| Some(slot) != me)
                .all(|slot| boards.iter().any(|(p, _)| p == slot))
    }

    /// Sends `body` as this part's share of `step` and gives the other parts' shares, by part
    /// index: over the shared boards when `shared` (blocking this worker until they are
    /// posted: the parts of a split run at the same time), otherwise over the ports (the
    /// future waits for them). Every part of a request must pass the same `shared`.
    pub(super) fn exchange(
        &self,
        request: u64,
        step: u32,
        part: &PartOf,
        body: &[u8],
        shared: bool,
        now: &dyn Fn() -> f64,
    ) -> Result<Exchange, String> {
        self.post_share(request, step, part, body, shared)?;
        self.read_shares(request, step, part, shared, now)
    }

    /// Posts `body` as this part's share of `step` without reading the others' (a last step
    /// whose answer one part alone makes: the part that posts only may take its next request
    /// as soon as the reader has answered, since it reads nothing of this one any more).
    pub(super) fn post_share(
        &self,
        request: u64,
        step: u32,
        part: &PartOf,
        body: &[u8],
        shared: bool,
    ) -> Result<(), String> {
        if !shared {
            return self.send(request, step, part, body);
        }
        let board = self
            .board
            .as_ref()
            .ok_or("this model worker has no shared board")?;
        board.post(BoardLayout::stamp(request, step), step, body)
    }

    /// The other parts' shares of `step`, by part index, without posting one (see
    /// [`Peers::exchange`] for `shared`).
    pub(super) fn read_shares(
        &self,
        request: u64,
        step: u32,
        part: &PartOf,
        shared: bool,
        now: &dyn Fn() -> f64,
    ) -> Result<Exchange, String> {
        if !shared {
            return Ok(Exchange::Ports(self.receive(request, step, part)));
        }
        let stamp = BoardLayout::stamp(request, step);
        let started = now();
        let boards = self.boards.borrow();
        let mut shares = Vec::new();
        for (index, slot) in part.slots.iter().enumerate() {
            if index == part.index {
                continue;
            }
            let (_, other) = boards
                .iter()
                .find(|(p, _)| p == slot)
                .ok_or_else(|| format!("no shared board of the model worker {slot}"))?;
            shares.push((index, other.read(stamp, step, started, now)?));
        }
        Ok(Exchange::Ready(Some(shares)))
    }

    /// Sends `body` as this part's share of `step` to every other part of `part`.
    fn send(&self, request: u64, step: u32, part: &PartOf, body: &[u8]) -> Result<(), String> {
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
    fn receive(&self, request: u64, step: u32, part: &PartOf) -> Receive {
        Receive {
            inbox: self.inbox.clone(),
            request,
            step,
            want: part.slots.len().saturating_sub(1),
            timer: None,
        }
    }
}

/// The other parts' shares ([`Peers::exchange`]): already read from the boards, or coming
/// over the ports.
pub(super) enum Exchange {
    Ready(Option<Vec<(usize, Vec<u8>)>>),
    Ports(Receive),
}

impl Future for Exchange {
    type Output = Result<Vec<(usize, Vec<u8>)>, String>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Exchange::Ready(shares) => Poll::Ready(
                shares
                    .take()
                    .ok_or_else(|| "the shares were taken already".to_string()),
            ),
            Exchange::Ports(receive) => Pin::new(receive).poll(cx),
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
