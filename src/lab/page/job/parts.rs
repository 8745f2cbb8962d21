//! The parts the scheduler reports (scatter, boxplots, curves): held while a job is quick, then
//! shown together when it ends, or each as it lands once the progress delay has passed.

use std::sync::Arc;

use super::machine::{Job, JobCommand};
use super::shown::{ScatterView, Shown, Status};
use crate::lab::kernel::results::ExperimentResult;
use crate::lab::kernel::tasks::Part;
use crate::lab::pool::SchedulerEvent;

impl Job {
    /// One scheduler event: the current request's progress, a part of it held or shown, its
    /// end or its failure (events of older requests change nothing).
    pub(super) fn on_pool(&mut self, event: SchedulerEvent) -> Vec<JobCommand> {
        let generation = self.generation;
        let current = |g: u64| g == generation;
        match event {
            SchedulerEvent::Progress {
                generation: g,
                fraction,
            } if current(g) && self.progress.is_some() => {
                self.progress = Some(fraction);
                Vec::new()
            }
            SchedulerEvent::Scatter {
                generation: g,
                scatter,
            } if current(g) => {
                self.held.scatter = Some(Shown {
                    generation: g,
                    value: Arc::new(ScatterView {
                        config: (*self.request).clone(),
                        series: (*scatter).clone(),
                    }),
                });
                self.show_if_progressive()
            }
            SchedulerEvent::Summaries {
                generation: g,
                summaries,
            } if current(g) => {
                // The table and the boxplots need the scatter too (its fits), held or shown.
                let scatter = [self.held.scatter.as_ref(), self.scatter.as_ref()]
                    .into_iter()
                    .flatten()
                    .find(|s| s.generation == g)
                    .map(|s| s.value.series.clone());
                let Some(scatter) = scatter else {
                    return Vec::new();
                };
                self.held.summaries = Some(Shown {
                    generation: g,
                    value: Arc::new(ExperimentResult {
                        config: (*self.request).clone(),
                        scatter,
                        summaries: (*summaries).clone(),
                    }),
                });
                self.show_if_progressive()
            }
            SchedulerEvent::Curves {
                generation: g,
                curves,
            } if current(g) => {
                self.held.curves = Some(Shown {
                    generation: g,
                    value: curves,
                });
                self.show_if_progressive()
            }
            SchedulerEvent::Finished {
                generation: g,
                elapsed_ms,
            } if current(g) => {
                let mut commands = self.show_held();
                self.elapsed = Some((g, elapsed_ms));
                self.finished = true;
                self.mark_ready_if_done();
                commands.extend(self.submit_next());
                commands
            }
            SchedulerEvent::Failed {
                generation: g,
                message,
            } if current(g) => {
                let mut commands = self.show_held();
                self.status = Status::Error(message);
                // A newer configuration waited: it is computed (and may not fail).
                commands.extend(self.submit_next());
                commands
            }
            _ => Vec::new(),
        }
    }

    fn show_if_progressive(&mut self) -> Vec<JobCommand> {
        if self.progressive {
            self.show_held()
        } else {
            Vec::new()
        }
    }

    /// Moves every held part of the current request on screen.
    pub(super) fn show_held(&mut self) -> Vec<JobCommand> {
        let held = std::mem::take(&mut self.held);
        let generation = self.generation;
        let mut commands = Vec::new();
        if let Some(shown) = held.scatter.filter(|s| s.generation == generation) {
            self.scatter = Some(shown);
            commands.push(JobCommand::Show(Part::Scatter));
        }
        if let Some(shown) = held.summaries.filter(|s| s.generation == generation) {
            self.summaries = Some(shown);
            commands.push(JobCommand::Show(Part::Boxplots));
        }
        if let Some(shown) = held.curves.filter(|s| s.generation == generation) {
            self.curves = Some(shown);
            commands.push(JobCommand::Show(Part::Curves));
        }
        commands
    }
}
