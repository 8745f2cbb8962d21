//! The job's state, its inputs and commands, and how it takes a new configuration, a timer and
//! a chart drawn (the scheduler's events: `parts.rs`).

use std::sync::Arc;

use crate::lab::config::ExperimentConfig;
use crate::lab::kernel::results::{ExperimentResult, MseCurve};
use crate::lab::kernel::tasks::Part;
use crate::lab::pool::SchedulerEvent;

use super::held::Held;
use super::shown::{ScatterView, Shown, Status};

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
/// A configuration that comes while a job started less than this long ago computes waits for
/// that job's end instead of superseding it, and the newest waiting one supersedes the job
/// when it has run this long ([`JobCommand::StartFollowTimer`]). A slider dragged sends a
/// configuration per step, faster than a job ends: superseding each, no job ended and the
/// charts stood still until the thumb rested (0 answers drawn in a 1.5 s drag of m). Waiting,
/// each quick job's answer is drawn, a whole answer for a step the thumb passed, and the
/// newest step is computed next (the steps between are skipped); a long job is superseded
/// after this long at most, so the reader never waits for it.
pub const FOLLOW_MAX_MS: f64 = 250.0;

/// What happens to the page.
#[derive(Clone, Debug)]
pub enum JobInput {
    /// The configuration changed (or the page started): `workers` is the pool's size, for the
    /// memory budget; `now_ms`, the page's clock ([`FOLLOW_MAX_MS`]).
    Configured {
        config: Box<ExperimentConfig>,
        workers: usize,
        now_ms: f64,
    },
    /// The follow timer of request `generation` fired: a configuration still waiting for it
    /// supersedes it ([`FOLLOW_MAX_MS`]).
    FollowDelay { generation: u64 },
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
    /// Call back with [`JobInput::FollowDelay`] after `delay_ms` (when request `generation`
    /// will have run [`FOLLOW_MAX_MS`]).
    StartFollowTimer { generation: u64, delay_ms: f64 },
    /// Show (draw) this part: its value is [`Job::scatter`], [`Job::summaries`] or
    /// [`Job::curves`].
    Show(Part),
}

/// The page's job state.
#[derive(Clone, Debug)]
pub struct Job {
    pub(super) generation: u64,
    pub(super) request: Arc<ExperimentConfig>,
    pub(super) status: Status,
    pub(super) progress: Option<f64>,
    pub(super) progressive: bool,
    pub(super) held: Held,
    pub(super) drawn: [bool; 3],
    pub(super) finished: bool,
    pub(super) confirmed: Option<ExperimentConfig>,
    /// The pool's size at the last configuration (the memory budget depends on it).
    pub(super) workers: usize,
    pub(super) elapsed: Option<(u64, f64)>,
    /// The newest configuration asked while a young job computes, with the pool's size: it
    /// is submitted when that job ends, or supersedes it once it is old ([`FOLLOW_MAX_MS`]).
    /// It always waits for the current request (`configure` clears it), so its presence also
    /// says that request's follow timer is set.
    pub(super) next: Option<(ExperimentConfig, usize)>,
    /// The page's clock at the last configuration, and when the job in flight was asked.
    pub(super) clock_ms: f64,
    pub(super) started_ms: f64,
    pub(super) scatter: Option<Shown<ScatterView>>,
    pub(super) summaries: Option<Shown<ExperimentResult>>,
    pub(super) curves: Option<Shown<Vec<MseCurve>>>,
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
            next: None,
            clock_ms: 0.0,
            started_ms: 0.0,
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

    /// The configuration whose full results are on screen (where "go back" returns; a
    /// preview's whole configuration).
    pub fn shown_config(&self) -> Option<ExperimentConfig> {
        self.summaries.as_ref().map(|s| s.value.config.whole())
    }

    /// Handles one input; returns what the page must do, in order.
    pub fn handle(&mut self, input: JobInput) -> Vec<JobCommand> {
        match input {
            JobInput::Configured {
                config,
                workers,
                now_ms,
            } => {
                if now_ms.is_finite() {
                    self.clock_ms = self.clock_ms.max(now_ms);
                }
                if self.is_young() {
                    let timer_set = self.next.replace((*config, workers)).is_some();
                    if timer_set {
                        return Vec::new();
                    }
                    return vec![JobCommand::StartFollowTimer {
                        generation: self.generation,
                        delay_ms: (self.started_ms + FOLLOW_MAX_MS - self.clock_ms).max(0.0),
                    }];
                }
                self.configure(*config, workers, false)
            }
            JobInput::FollowDelay { generation } => {
                if generation == self.generation && self.status == Status::Computing {
                    self.submit_next()
                } else {
                    Vec::new()
                }
            }
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
                self.configure(config, self.workers, false)
            }
            JobInput::Cancel => {
                if self.status != Status::Computing {
                    return Vec::new();
                }
                self.progress = None;
                self.status = Status::Cancelled;
                self.next = None;
                vec![JobCommand::Cancel]
            }
        }
    }

    /// Asks for `config`, or, with `preview`, for its preview first ([`ExperimentConfig::preview`],
    /// whose end asks for the whole configuration unless a newer one waits).
    fn configure(
        &mut self,
        config: ExperimentConfig,
        workers: usize,
        preview: bool,
    ) -> Vec<JobCommand> {
        self.generation += 1;
        self.started_ms = self.clock_ms;
        self.next = None;
        self.workers = workers;
        let over_budget =
            config.work() > BUDGET_WORK || config.memory_bytes(workers) > BUDGET_BYTES;
        let preview = (preview && !over_budget)
            .then(|| config.preview())
            .flatten();
        let is_preview = preview.is_some();
        self.request = Arc::new(preview.unwrap_or(config));
        // A preview has no curve: the one on screen stays.
        self.drawn = [false, false, is_preview];
        self.finished = false;
        self.held = Held::default();
        self.progressive = false;
        self.progress = None;
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

    /// Whether a job computes that was asked less than [`FOLLOW_MAX_MS`] ago (a new
    /// configuration then waits for it).
    fn is_young(&self) -> bool {
        self.generation > 0
            && self.status == Status::Computing
            && !self.finished
            && self.clock_ms - self.started_ms < FOLLOW_MAX_MS
    }

    /// After a job: the configuration that waited for it, as a preview (it came while a job
    /// computed: a slider moving), or else, after a preview, its whole configuration (the
    /// slider rests). Nothing if neither.
    pub(super) fn submit_next(&mut self) -> Vec<JobCommand> {
        match self.next.take() {
            Some((config, workers)) => self.configure(config, workers, true),
            None if self.request.preview_of.is_some() => {
                self.configure(self.request.whole(), self.workers, false)
            }
            None => Vec::new(),
        }
    }

    pub(super) fn mark_ready_if_done(&mut self) {
        if self.finished
            && self.drawn.iter().all(|d| *d)
            && self.status == Status::Computing
            && self.request.preview_of.is_none()
        {
            self.progress = None;
            self.status = Status::Ready;
        }
    }
}
