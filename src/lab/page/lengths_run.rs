//! The length study on the page as a pure state machine: its units
//! ([`crate::lab::attention::lengths::study_units`]) sent a few at a time, as many in flight as
//! the pool has workers, shortest length first; each unit's report merged as it arrives; the
//! progress; a stop. The page's transport only sends what [`LengthsRun::next_requests`] gives
//! and hands back each answer ([`LengthsRun::on_answer`]); every rule is tested natively.
//!
//! Units are handed out one per free worker rather than queued all at once: a worker that is
//! sent a message runs it whatever comes later, so a queue inside the workers could neither be
//! stopped nor balanced (the longest length's units are far dearer than the others), and a
//! unit sent late names the series that stopped meanwhile (a run over the budget), which it
//! then does not time again.

use crate::lab::attention::lengths::{
    LengthsReport, LengthsUnit, SeriesKey, study_head_sizes, study_lengths, study_units,
};
use crate::lab::attention::{AttentionPart, AttentionRequest};
use crate::lab::config::ExperimentConfig;

/// Where a run stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunState {
    /// Units are in flight or waiting.
    Running,
    /// Every unit answered.
    Complete,
    /// Stopped by the reader: what was measured stays, nothing more is sent or shown.
    Stopped,
    /// A unit failed (the message); nothing more is sent.
    Failed(String),
}

/// Units answered out of all, and where the run stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LengthsProgress {
    pub done: usize,
    pub total: usize,
    pub state: RunState,
}

/// One study of one configuration, unit by unit.
#[derive(Clone, Debug)]
pub struct LengthsRun {
    config: ExperimentConfig,
    units: Vec<LengthsUnit>,
    /// Units sent so far (the next is `units[sent]`).
    sent: usize,
    /// The units sent and not answered.
    in_flight: Vec<usize>,
    answered: usize,
    report: Option<LengthsReport>,
    state: RunState,
}

impl LengthsRun {
    /// The study of `config`, nothing sent yet (failed at once if it has no length to measure).
    pub fn new(config: &ExperimentConfig) -> Self {
        let lengths = study_lengths(config.attention.length_max);
        let units = study_units(&lengths, &study_head_sizes(config));
        let state = if units.is_empty() {
            RunState::Failed("the length study needs lmax of at least 128".into())
        } else {
            RunState::Running
        };
        Self {
            config: config.clone(),
            units,
            sent: 0,
            in_flight: Vec::new(),
            answered: 0,
            report: None,
            state,
        }
    }

    /// The requests to send now so that `workers` units are in flight (at least one), each
    /// with its index for [`LengthsRun::on_answer`] and the series stopped so far at its head
    /// size. None once the run is not running.
    pub fn next_requests(&mut self, workers: usize) -> Vec<(usize, AttentionRequest)> {
        let mut out = Vec::new();
        while self.state == RunState::Running
            && self.in_flight.len() < workers.max(1)
            && self.sent < self.units.len()
        {
            let index = self.sent;
            let mut unit = self.units[index].clone();
            unit.stopped = self.stopped_by(unit.d, unit.len);
            self.sent += 1;
            self.in_flight.push(index);
            out.push((
                index,
                AttentionRequest {
                    config: self.config.clone(),
                    part: AttentionPart::Lengths,
                    share: None,
                    lengths_unit: Some(unit),
                },
            ));
        }
        out
    }

    /// The series of head size `d` that stopped at or before `len`, as far as the answers
    /// tell.
    fn stopped_by(&self, d: usize, len: usize) -> Vec<SeriesKey> {
        self.report
            .iter()
            .flat_map(|r| &r.series)
            .filter(|s| s.d == d && s.stopped_at.is_some_and(|at| at <= len))
            .map(|s| SeriesKey {
                kernel: s.kernel,
                form: s.form,
            })
            .collect()
    }

    /// Unit `index`'s answer: merged into the report while running; the first error fails the
    /// run. An answer to a unit not in flight (never sent, or answered already), or after a
    /// stop, changes nothing.
    pub fn on_answer(&mut self, index: usize, answer: Result<LengthsReport, String>) {
        let Some(at) = self.in_flight.iter().position(|&i| i == index) else {
            return;
        };
        self.in_flight.swap_remove(at);
        if self.state != RunState::Running {
            return;
        }
        self.answered += 1;
        match answer {
            Ok(unit) => {
                match &mut self.report {
                    Some(report) => report.merge_unit(unit),
                    None => self.report = Some(LengthsReport::from_unit(unit)),
                }
                if self.answered == self.units.len() {
                    self.state = RunState::Complete;
                }
            }
            Err(message) => self.state = RunState::Failed(message),
        }
    }

    /// Stops a running run; returns whether it was running.
    pub fn stop(&mut self) -> bool {
        let running = self.state == RunState::Running;
        if running {
            self.state = RunState::Stopped;
        }
        running
    }

    /// The merged report so far (`None` before the first answer).
    pub fn report(&self) -> Option<&LengthsReport> {
        self.report.as_ref()
    }

    pub fn progress(&self) -> LengthsProgress {
        LengthsProgress {
            done: self.answered,
            total: self.units.len(),
            state: self.state.clone(),
        }
    }
}

#[cfg(test)]
mod tests;
