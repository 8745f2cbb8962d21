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

use std::sync::Arc;

use super::config::ExperimentConfig;
use super::results::{ExperimentResult, MseCurve, ScatterSeries};
use super::scheduler::SchedulerEvent;
use super::tasks::Part;

/// Above this many multiply-adds the page asks before starting (about two seconds on two
/// cores at the measured speed).
pub const BUDGET_WORK: f64 = 1e10;
/// Above this many bytes of working memory (all workers together) the page asks too.
pub const BUDGET_BYTES: f64 = 512e6;
/// Progress and the cancel button appear when a job runs longer than this. Until then the
/// finished parts are held and drawn together when the job ends: a quick recompute redraws
/// once, without a moment where the scatter is new and the boxplots old, and on a two-core
/// machine the drawing does not take the CPU from the workers while they compute. Longer jobs
/// show each part as it lands.
pub const PROGRESS_DELAY_MS: u64 = 200;

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

/// What happens to the page.
#[derive(Clone, Debug)]
pub enum JobInput {
    /// The configuration changed (or the page started): `workers` is the pool's size, for the
    /// memory budget.
    Configured {
        config: Box<ExperimentConfig>,
        workers: usize,
    },
    /// The scheduler reports.
    Pool(SchedulerEvent),
    /// The progress timer of request `generation` fired.
    ProgressDelay { generation: u64 },
    /// A chart of request `generation` was drawn (or failed to draw).
    Drawn {
        generation: u64,
        part: Part,
        outcome: Result<(), String>,
    },
    /// The user confirmed a configuration above the budget.
    RunAnyway,
    /// The user cancelled the running job.
    Cancel,
}

/// What the page must do.
#[derive(Clone, Debug, PartialEq)]
pub enum JobCommand {
    /// Start computing request `generation`.
    Submit {
        generation: u64,
        config: Arc<ExperimentConfig>,
    },
    /// Drop the scheduler's queue, keep its workers.
    Pause,
    /// Stop everything now (replace the workers).
    Cancel,
    /// Call back with [`JobInput::ProgressDelay`] after [`PROGRESS_DELAY_MS`].
    StartProgressTimer { generation: u64 },
    /// Show (draw) this part: its value is [`Job::scatter`], [`Job::summaries`] or
    /// [`Job::curves`].
    Show(Part),
}

/// Parts of the current request that are finished but not yet shown.
#[derive(Clone, Debug, Default)]
struct Held {
    scatter: Option<Shown<ScatterView>>,
    summaries: Option<Shown<ExperimentResult>>,
    curves: Option<Shown<Vec<MseCurve>>>,
}

/// The page's job state.
#[derive(Clone, Debug)]
pub struct Job {
    generation: u64,
    request: Arc<ExperimentConfig>,
    status: Status,
    progress: Option<f64>,
    progressive: bool,
    held: Held,
    drawn: [bool; 3],
    finished: bool,
    confirmed: Option<ExperimentConfig>,
    /// The pool's size at the last configuration (the memory budget depends on it).
    workers: usize,
    elapsed: Option<(u64, f64)>,
    scatter: Option<Shown<ScatterView>>,
    summaries: Option<Shown<ExperimentResult>>,
    curves: Option<Shown<Vec<MseCurve>>>,
}

fn part_index(part: Part) -> usize {
    match part {
        Part::Scatter => 0,
        Part::Boxplots => 1,
        Part::Curves => 2,
    }
}

impl Default for Job {
    fn default() -> Self {
        Self::new()
    }
}

impl Job {
    /// Nothing requested yet.
    pub fn new() -> Self {
        Self {
            generation: 0,
            request: Arc::new(ExperimentConfig::default()),
            status: Status::Computing,
            progress: None,
            progressive: false,
            held: Held::default(),
            drawn: [false; 3],
            finished: false,
            confirmed: None,
            workers: 1,
            elapsed: None,
            scatter: None,
            summaries: None,
            curves: None,
        }
    }

    /// What the page is doing.
    pub fn status(&self) -> &Status {
        &self.status
    }

    /// The progress bar's fraction, once the job has run longer than [`PROGRESS_DELAY_MS`].
    pub fn progress(&self) -> Option<f64> {
        self.progress
    }

    /// The request whose computation finished last and how long it took.
    pub fn elapsed(&self) -> Option<(u64, f64)> {
        self.elapsed
    }

    /// The request being computed (or waiting for confirmation).
    pub fn request(&self) -> &ExperimentConfig {
        &self.request
    }

    /// The scatter on screen.
    pub fn scatter(&self) -> Option<&Shown<ScatterView>> {
        self.scatter.as_ref()
    }

    /// The whole result on screen (boxplots, table).
    pub fn summaries(&self) -> Option<&Shown<ExperimentResult>> {
        self.summaries.as_ref()
    }

    /// The curves on screen.
    pub fn curves(&self) -> Option<&Shown<Vec<MseCurve>>> {
        self.curves.as_ref()
    }

    /// The configuration whose full results are on screen (where "go back" returns).
    pub fn shown_config(&self) -> Option<&ExperimentConfig> {
        self.summaries.as_ref().map(|s| &s.value.config)
    }

    /// Handles one input; returns what the page must do, in order.
    pub fn handle(&mut self, input: JobInput) -> Vec<JobCommand> {
        match input {
            JobInput::Configured { config, workers } => self.configure(*config, workers),
            JobInput::Pool(event) => self.on_pool(event),
            JobInput::ProgressDelay { generation } => {
                if generation == self.generation && self.status == Status::Computing {
                    self.progressive = true;
                    self.progress = Some(0.0);
                    self.show_held()
                } else {
                    Vec::new()
                }
            }
            JobInput::Drawn {
                generation,
                part,
                outcome,
            } => {
                if generation != self.generation {
                    return Vec::new();
                }
                match outcome {
                    Err(message) => self.status = Status::Error(message),
                    Ok(()) => {
                        self.drawn[part_index(part)] = true;
                        self.mark_ready_if_done();
                    }
                }
                Vec::new()
            }
            JobInput::RunAnyway => {
                if self.status != Status::Confirm {
                    return Vec::new();
                }
                self.confirmed = Some((*self.request).clone());
                let config = (*self.request).clone();
                self.configure(config, self.workers)
            }
            JobInput::Cancel => {
                if self.status != Status::Computing {
                    return Vec::new();
                }
                self.progress = None;
                self.status = Status::Cancelled;
                vec![JobCommand::Cancel]
            }
        }
    }

    fn configure(&mut self, config: ExperimentConfig, workers: usize) -> Vec<JobCommand> {
        self.generation += 1;
        self.workers = workers;
        self.request = Arc::new(config);
        self.drawn = [false; 3];
        self.finished = false;
        self.held = Held::default();
        self.progressive = false;
        self.progress = None;
        let over_budget =
            self.request.work() > BUDGET_WORK || self.request.memory_bytes(workers) > BUDGET_BYTES;
        if over_budget && self.confirmed.as_ref() != Some(&*self.request) {
            self.status = Status::Confirm;
            return vec![JobCommand::Pause];
        }
        self.status = Status::Computing;
        vec![
            JobCommand::Submit {
                generation: self.generation,
                config: self.request.clone(),
            },
            JobCommand::StartProgressTimer {
                generation: self.generation,
            },
        ]
    }

    fn on_pool(&mut self, event: SchedulerEvent) -> Vec<JobCommand> {
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
                let commands = self.show_held();
                self.elapsed = Some((g, elapsed_ms));
                self.finished = true;
                self.mark_ready_if_done();
                commands
            }
            SchedulerEvent::Failed {
                generation: g,
                message,
            } if current(g) => {
                let commands = self.show_held();
                self.status = Status::Error(message);
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
    fn show_held(&mut self) -> Vec<JobCommand> {
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

    fn mark_ready_if_done(&mut self) {
        if self.finished && self.drawn.iter().all(|d| *d) && self.status == Status::Computing {
            self.progress = None;
            self.status = Status::Ready;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::config::Param;
    use crate::lab::scheduler::{Scheduler, SchedulerEvent};
    use crate::lab::tasks::{WorkerResponse, Workspace, decode, encode, handle_request};
    use crate::lab::test_support::small;

    /// The page in miniature: a job state, a scheduler with one worker computing in a
    /// workspace, and a log of what was drawn. Commands are carried out as the app does.
    struct Page {
        job: Job,
        scheduler: Scheduler,
        workspace: Workspace,
        shown: Vec<(u64, Part)>,
        timers: Vec<u64>,
        cancelled: usize,
    }

    impl Page {
        fn new() -> Self {
            let mut scheduler = Scheduler::new(1);
            scheduler.worker_ready(0);
            Self {
                job: Job::new(),
                scheduler,
                workspace: Workspace::new(),
                shown: Vec::new(),
                timers: Vec::new(),
                cancelled: 0,
            }
        }

        fn send(&mut self, input: JobInput) {
            let mut inputs = vec![input];
            while let Some(input) = inputs.pop() {
                for command in self.job.handle(input) {
                    match command {
                        JobCommand::Submit { generation, config } => {
                            let events = self.scheduler.submit(generation, &config, 0.0);
                            inputs.extend(events.into_iter().map(JobInput::Pool).rev());
                        }
                        JobCommand::Pause => self.scheduler.pause(),
                        JobCommand::Cancel => {
                            self.cancelled += 1;
                            self.scheduler.cancel(1);
                            self.scheduler.worker_ready(0);
                        }
                        JobCommand::StartProgressTimer { generation } => {
                            self.timers.push(generation)
                        }
                        JobCommand::Show(part) => {
                            let generation = self.job.generation;
                            self.shown.push((generation, part));
                            // The app draws the part and reports it drawn.
                            inputs.push(JobInput::Drawn {
                                generation,
                                part,
                                outcome: Ok(()),
                            });
                        }
                    }
                }
            }
        }

        /// The worker computes `limit` dispatched tasks (all when `None`).
        fn compute(&mut self, limit: Option<usize>) {
            let mut done = 0;
            loop {
                if limit.is_some_and(|l| done >= l) {
                    return;
                }
                // Every dispatched message is answered: none is left in flight.
                let messages = self.scheduler.dispatch();
                if messages.is_empty() {
                    return;
                }
                for message in messages {
                    let bytes =
                        handle_request(&mut self.workspace, &encode(&message.request).unwrap());
                    let Ok(WorkerResponse::Task(response)) = decode(&bytes) else {
                        panic!("a task answer");
                    };
                    for event in self.scheduler.answer(message.slot, response, 5.0) {
                        self.send(JobInput::Pool(event));
                    }
                    done += 1;
                }
            }
        }

        fn configure(&mut self, config: ExperimentConfig) {
            self.send(JobInput::Configured {
                config: Box::new(config),
                workers: 1,
            });
        }
    }

    #[test]
    fn a_quick_job_shows_every_part_once_at_its_end_and_is_ready() {
        let mut page = Page::new();
        page.configure(small("32"));
        assert_eq!(page.job.status(), &Status::Computing);
        assert_eq!(page.timers, vec![1]);
        page.compute(Some(3));
        assert!(
            page.shown.is_empty(),
            "parts are held before the progress delay"
        );
        page.compute(None);
        assert_eq!(
            page.shown,
            vec![(1, Part::Scatter), (1, Part::Boxplots), (1, Part::Curves)]
        );
        assert_eq!(page.job.status(), &Status::Ready);
        assert_eq!(page.job.progress(), None);
        assert_eq!(page.job.elapsed().map(|e| e.0), Some(1));
    }

    #[test]
    fn a_long_job_streams_its_parts_and_shows_monotone_progress() {
        let mut page = Page::new();
        page.configure(small("32"));
        page.send(JobInput::ProgressDelay { generation: 1 });
        assert_eq!(page.job.progress(), Some(0.0));
        let mut seen = Vec::new();
        while let Some(now) = page.job.progress() {
            seen.push(now);
            page.compute(Some(1));
        }
        assert!(seen.len() > 2, "{seen:?}");
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
        assert_eq!(page.shown.first(), Some(&(1, Part::Scatter)));
        assert_eq!(page.job.status(), &Status::Ready);
    }

    #[test]
    fn dragging_a_slider_across_the_budget_pauses_and_one_state_names_one_configuration() {
        // The bug report's sequence: m to its right end, then d to its right end, one
        // configuration per slider step; some steps are above the budget.
        let mut page = Page::new();
        let mut config = ExperimentConfig::default();
        page.configure(config.clone());
        page.compute(None);
        assert_eq!(page.job.status(), &Status::Ready);
        for m in (1024..=4096).step_by(512) {
            config.set(Param::M, &m.to_string()).unwrap();
            page.configure(config.clone());
        }
        for d in (50..=200).step_by(10) {
            let _ = config
                .set_within_work_limit(Param::D, &d.to_string())
                .unwrap();
            page.configure(config.clone());
            // The state names the configuration just set, whatever its budget.
            assert_eq!(page.job.request(), &config);
            let over = config.work() > BUDGET_WORK;
            assert_eq!(
                page.job.status() == &Status::Confirm,
                over,
                "d = {}",
                config.d
            );
        }
        assert!(config.work() <= crate::lab::config::MAX_WORK);
        assert_eq!(
            page.cancelled, 0,
            "a budget prompt never replaces the workers"
        );
        assert_eq!(page.job.status(), &Status::Confirm);
        // Running it anyway submits exactly this configuration.
        let generation = page.job.generation;
        page.send(JobInput::RunAnyway);
        assert_eq!(page.job.status(), &Status::Computing);
        assert_eq!(page.job.request(), &config);
        assert_eq!(page.timers.last(), Some(&(generation + 1)));
        // Going back to what is on screen (the default page) reuses its stored results.
        let previous = page.job.shown_config().cloned().unwrap();
        assert_eq!(previous, ExperimentConfig::default());
        page.configure(previous);
        assert_eq!(page.job.status(), &Status::Ready, "everything was stored");
    }

    #[test]
    fn answers_to_older_requests_change_nothing() {
        let mut page = Page::new();
        page.configure(small("32"));
        page.configure(small("48"));
        page.send(JobInput::Pool(SchedulerEvent::Failed {
            generation: 1,
            message: "old".into(),
        }));
        page.send(JobInput::Drawn {
            generation: 1,
            part: Part::Scatter,
            outcome: Err("old".into()),
        });
        page.send(JobInput::ProgressDelay { generation: 1 });
        assert_eq!(page.job.status(), &Status::Computing);
        assert_eq!(page.job.progress(), None);
        page.compute(None);
        assert_eq!(page.job.status(), &Status::Ready);
        assert!(page.shown.iter().all(|(g, _)| *g == 2));
    }

    #[test]
    fn cancel_stops_a_running_job_and_keeps_what_is_shown() {
        let mut page = Page::new();
        page.configure(small("32"));
        page.compute(None);
        let shown = page.job.summaries().cloned();
        page.configure(small("64"));
        page.send(JobInput::Cancel);
        assert_eq!(page.job.status(), &Status::Cancelled);
        assert_eq!(page.cancelled, 1);
        assert_eq!(page.job.summaries().cloned(), shown);
        // Cancel when nothing runs does nothing.
        page.send(JobInput::Cancel);
        assert_eq!(page.cancelled, 1);
    }

    #[test]
    fn a_chart_that_fails_to_draw_is_an_error() {
        let mut page = Page::new();
        page.configure(small("32"));
        page.send(JobInput::Drawn {
            generation: 1,
            part: Part::Curves,
            outcome: Err("no canvas".into()),
        });
        assert_eq!(page.job.status(), &Status::Error("no canvas".into()));
    }
}
