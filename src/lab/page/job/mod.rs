//! The page's job state as a pure state machine: events in (a new configuration, the
//! scheduler's events, a timer, a chart drawn, the user's answers), commands out (submit,
//! pause, cancel, start a timer, show a part). The Leptos app only turns signals and DOM
//! events into [`JobInput`]s, carries out the [`JobCommand`]s and mirrors [`Job::status`],
//! [`Job::progress`] and [`Job::elapsed`] into its signals; every rule here is tested natively.
//!
//! - A configuration above the budget waits for confirmation ([`Status::Confirm`]); the
//!   scheduler is paused, not cancelled (its workers stay).
//! - Parts finished within [`PROGRESS_DELAY_MS`] are held and shown together when the job ends
//!   (one redraw, no half-updated moment); after it, each part is shown as it lands and the
//!   progress bar appears.
//! - The page is ready when every part of the current request is in and drawn.
//! - Anything that answers an older request is ignored.
//! - A configuration that comes while a quick job computes (a slider dragged) waits for that
//!   job's end, the newest replacing any other waiting ([`FOLLOW_MAX_MS`]): every answer is
//!   drawn while the thumb moves.

mod held;
mod machine;
mod parts;
mod shown;
#[cfg(test)]
mod tests;

pub use machine::{
    BUDGET_BYTES, BUDGET_WORK, FOLLOW_MAX_MS, Job, JobCommand, JobInput, PROGRESS_DELAY_MS,
};
pub use shown::{ScatterView, Shown, Status};
