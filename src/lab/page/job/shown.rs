//! What the page shows: its status, and each computed value tagged with the request it answers.

use std::sync::Arc;

use crate::lab::config::ExperimentConfig;
use crate::lab::kernel::results::ScatterSeries;

/// What the page is doing; mirrored in the root's `data-status` attribute for tests.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Computing,
    Ready,
    /// The configuration is above the work or memory budget: waiting for the user to confirm.
    Confirm,
    /// The user stopped the computation; the charts show the previous results.
    Cancelled,
    Error(String),
}

impl Status {
    /// The `data-status` attribute.
    pub fn as_attr(&self) -> &'static str {
        match self {
            Status::Computing => "computing",
            Status::Ready => "ready",
            Status::Confirm => "confirm",
            Status::Cancelled => "cancelled",
            Status::Error(_) => "error",
        }
    }

    /// What the status line and its dot show when the job's status is `self`, `previous` having
    /// been shown: a quick job (computing, not yet past the progress delay, no preview drawn)
    /// changes nothing on screen at its start, and its answer replaces the line when it lands.
    /// Announcing it was a layout, a repaint and a compositor frame on the two cores the
    /// workers need, and a flicker at every step of a dragged slider.
    pub fn shown(self, previous: Option<&Status>, past_delay_or_preview: bool) -> Status {
        match previous {
            Some(previous) if self == Status::Computing && !past_delay_or_preview => {
                previous.clone()
            }
            _ => self,
        }
    }
}

/// A computed value tagged with the request it answers. Equal when it is the same value of
/// the same request (pointer equality: comparing the contents would cost more than drawing).
#[derive(Debug)]
pub struct Shown<T> {
    pub generation: u64,
    pub value: Arc<T>,
}

impl<T> Clone for Shown<T> {
    fn clone(&self) -> Self {
        Self {
            generation: self.generation,
            value: self.value.clone(),
        }
    }
}

impl<T> PartialEq for Shown<T> {
    fn eq(&self, other: &Self) -> bool {
        self.generation == other.generation && Arc::ptr_eq(&self.value, &other.value)
    }
}

/// Figure 1's data with the configuration it was computed for.
#[derive(Debug, PartialEq)]
pub struct ScatterView {
    pub config: ExperimentConfig,
    pub series: Vec<ScatterSeries>,
}
