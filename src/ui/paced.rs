//! Charts that draw one per task. When a worker's answer lands, every chart that reads it would
//! redraw in the same task (Leptos runs the effects it wakes in one microtask checkpoint): the
//! attention view's first render at 128 tokens drew its heatmaps, line charts and
//! distributions in one 200 ms task (measured in a Chromium trace), a page frozen for that long.
//! A paced chart waits for its turn instead: a queue hands out turns one per macrotask
//! (`setTimeout(0)`), so the browser can paint, take input and run the page's other work
//! between two charts, and a chart asked for again before its turn still draws once.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::time::Duration;

use leptos::prelude::*;

thread_local! {
    /// The charts waiting for a turn, first asked first served, each at most once.
    static WAITING: RefCell<VecDeque<RwSignal<u64>>> = const { RefCell::new(VecDeque::new()) };
    /// Whether a macrotask that hands out the next turn is scheduled.
    static SCHEDULED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `draw` (which reads the signals it depends on and draws) whenever any of them changes,
/// but each time in a task of its own, after the charts that asked before it.
///
/// How it keeps Leptos's tracking whole: the effect reads its turn counter; a run the counter
/// did not cause (the first, or one woken by a change) only asks for a turn; the run the turn
/// causes calls `draw`, which reads, and so tracks, everything it depends on. A change between
/// the two is not missed: the turn's run reads the newest values.
pub(in crate::ui) fn paced_effect(draw: impl Fn() + 'static) {
    let turn = RwSignal::new(0u64);
    Effect::new(move |drawn_at: Option<u64>| {
        let current = turn.get();
        match drawn_at {
            Some(previous) if previous != current => draw(),
            _ => ask_turn(turn),
        }
        current
    });
}

/// Puts `turn` in the queue (once) and makes sure the queue is served.
fn ask_turn(turn: RwSignal<u64>) {
    WAITING.with(|waiting| {
        let mut waiting = waiting.borrow_mut();
        if !waiting.contains(&turn) {
            waiting.push_back(turn);
        }
    });
    serve_later();
}

/// Schedules one turn in a later macrotask (then the next, while charts wait).
fn serve_later() {
    if SCHEDULED.with(|s| s.replace(true)) {
        return;
    }
    set_timeout(
        || {
            SCHEDULED.with(|s| s.set(false));
            let next = WAITING.with(|waiting| waiting.borrow_mut().pop_front());
            // A chart whose component is gone has a disposed counter: nothing to draw.
            if let Some(turn) = next {
                turn.try_update(|t| *t = t.wrapping_add(1));
            }
            if WAITING.with(|waiting| !waiting.borrow().is_empty()) {
                serve_later();
            }
        },
        Duration::ZERO,
    );
}
