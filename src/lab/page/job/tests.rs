//! The job state machine's native tests: a page in miniature (a job, a scheduler with one
//! worker, a log of what was drawn) through quick and long jobs, the budget, stale answers,
//! cancel and a chart that fails to draw.

use super::*;
use crate::lab::config::ExperimentConfig;
use crate::lab::config::Param;
use crate::lab::kernel::tasks::Part;
use crate::lab::kernel::tasks::Workspace;
use crate::lab::pool::{Scheduler, SchedulerEvent};
use crate::lab::pool::{WorkerResponse, decode, encode, handle_request};
use crate::lab::test_support::{config_with, small};

/// The page in miniature: a job state, a scheduler with one worker computing in a
/// workspace, and a log of what was drawn. Commands are carried out as the app does.
struct Page {
    job: Job,
    scheduler: Scheduler,
    workspace: Workspace,
    shown: Vec<(u64, Part)>,
    timers: Vec<u64>,
    /// Follow timers asked: (request, delay in ms).
    follow_timers: Vec<(u64, f64)>,
    cancelled: usize,
    clock: f64,
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
            follow_timers: Vec::new(),
            cancelled: 0,
            clock: 0.0,
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
                    JobCommand::StartProgressTimer { generation } => self.timers.push(generation),
                    JobCommand::StartFollowTimer {
                        generation,
                        delay_ms,
                    } => self.follow_timers.push((generation, delay_ms)),
                    JobCommand::Show(part) => {
                        // The part's own generation (a job that ended may be followed by the
                        // next in the same input), as the charts report it.
                        let generation = match part {
                            Part::Scatter => self.job.scatter().map(|s| s.generation),
                            Part::Boxplots => self.job.summaries().map(|s| s.generation),
                            Part::Curves => self.job.curves().map(|s| s.generation),
                        }
                        .expect("a part shown is on screen");
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
                let bytes = handle_request(&mut self.workspace, &encode(&message.request).unwrap());
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

    /// A configuration, a second after the last (a job in flight is superseded at once).
    fn configure(&mut self, config: ExperimentConfig) {
        self.clock += 1000.0;
        self.configure_at(config, self.clock);
    }

    /// A configuration at `now_ms` on the page's clock.
    fn configure_at(&mut self, config: ExperimentConfig, now_ms: f64) {
        self.clock = now_ms;
        self.send(JobInput::Configured {
            config: Box::new(config),
            workers: 1,
            now_ms,
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
    // Eight boxplot datasets: enough tasks for several rounds of the worker's messages.
    page.configure(config_with(&[
        ("n", "40"),
        ("datasets", "8"),
        ("pairs", "24"),
        ("m", "32"),
    ]));
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
    let previous = page.job.shown_config().unwrap();
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

/// A slider dragged: the steps that come while a young job computes wait, the newest
/// replacing the others, and one follow timer is asked for when the job will be
/// FOLLOW_MAX_MS old; each job that ends is drawn whole, then the newest step is computed;
/// the page ends ready on the last step. A job that has run FOLLOW_MAX_MS is superseded by
/// the next step at once, or by the waiting one when its timer fires; cancel drops a waiting
/// step.
#[test]
fn a_dragged_slider_follows_young_jobs_and_supersedes_old_ones() {
    let mut page = Page::new();
    page.configure_at(small("32"), 1000.0);
    for (m, at) in [("40", 1030.0), ("48", 1060.0), ("56", 1090.0)] {
        page.configure_at(small(m), at);
        assert_eq!(page.job.generation, 1, "step m = {m} waits");
    }
    assert_eq!(page.follow_timers, vec![(1, FOLLOW_MAX_MS - 30.0)]);
    assert_eq!(page.job.request(), &small("32"));
    // Job 1 ends: drawn whole, then the newest step (56) is submitted, the steps between
    // skipped. Its timer, firing late, changes nothing.
    while page.job.generation == 1 {
        page.compute(Some(1));
    }
    assert_eq!(
        page.shown,
        vec![(1, Part::Scatter), (1, Part::Boxplots), (1, Part::Curves)]
    );
    assert_eq!(page.job.request(), &small("56"));
    assert_eq!(page.job.status(), &Status::Computing);
    page.send(JobInput::FollowDelay { generation: 1 });
    assert_eq!(page.job.generation, 2);
    page.compute(None);
    assert_eq!(page.job.status(), &Status::Ready);
    assert_eq!(page.job.shown_config(), Some(small("56")));
    assert_eq!(page.shown.len(), 6);

    // A step FOLLOW_MAX_MS after the job was asked supersedes it at once.
    let mut page = Page::new();
    page.configure_at(small("32"), 1000.0);
    page.configure_at(small("40"), 1000.0 + FOLLOW_MAX_MS);
    assert_eq!(page.job.generation, 2);
    assert_eq!(page.job.request(), &small("40"));
    page.compute(None);
    assert!(page.shown.iter().all(|(g, _)| *g == 2));

    // The thumb rests on a waiting step while a job runs long: the timer makes it supersede.
    let mut page = Page::new();
    page.configure_at(small("32"), 1000.0);
    page.configure_at(small("64"), 1100.0);
    assert_eq!(page.follow_timers, vec![(1, FOLLOW_MAX_MS - 100.0)]);
    page.send(JobInput::FollowDelay { generation: 1 });
    assert_eq!(page.job.generation, 2);
    assert_eq!(page.job.request(), &small("64"));
    page.compute(None);
    assert_eq!(page.job.shown_config(), Some(small("64")));

    // A waiting step is dropped by cancel; nothing is computed after it.
    let mut page = Page::new();
    page.configure_at(small("32"), 1000.0);
    page.configure_at(small("64"), 1010.0);
    page.send(JobInput::Cancel);
    assert_eq!(page.job.status(), &Status::Cancelled);
    page.send(JobInput::FollowDelay { generation: 1 });
    page.compute(None);
    assert_eq!(page.job.generation, 1);
    assert_eq!(page.job.request(), &small("32"));
}

/// A step that waited for a job (the slider moving) is computed as a preview: the first
/// PREVIEW_PAIRS scatter pairs and PREVIEW_DATASETS datasets, no curve (the one on screen
/// stays), never "ready"; when it ends with no newer step waiting, the whole configuration
/// follows and the page ends ready on it, its curve drawn. The preview's boxplot datasets are
/// the whole answer's first ones, number for number. A step that comes while a preview
/// computes waits for it and is previewed in turn.
#[test]
fn a_step_that_waited_is_previewed_then_computed_whole() {
    use crate::lab::config::{PREVIEW_DATASETS, PREVIEW_PAIRS};
    let big = |m: &str| {
        config_with(&[
            ("n", "300"),
            ("datasets", "7"),
            ("pairs", "8"),
            ("d", "4"),
            ("m", m),
        ])
    };
    let mut page = Page::new();
    page.configure_at(big("16"), 1000.0);
    page.configure_at(big("24"), 1010.0);
    assert_eq!(page.job.generation, 1, "the step waits");
    while page.job.generation == 1 {
        page.compute(Some(1));
    }
    // Job 1 drawn whole; the waiting step is job 2, a preview.
    assert_eq!(page.job.generation, 2);
    let preview = page.job.request().clone();
    assert_eq!(
        (preview.n, preview.datasets),
        (PREVIEW_PAIRS, PREVIEW_DATASETS)
    );
    assert_eq!(preview.whole(), big("24"));
    // A step while the preview computes waits for it and is previewed too.
    page.clock = 1020.0;
    page.configure_at(big("32"), 1020.0);
    assert_eq!(page.job.generation, 2);
    while page.job.generation == 2 {
        page.compute(Some(1));
    }
    assert_eq!(page.job.generation, 3);
    assert_eq!(page.job.request().whole(), big("32"));
    assert!(page.job.request().preview_of.is_some());
    let shown_before = page.shown.len();
    // The last preview: scatter and boxplots shown, no curve, not ready; then the whole.
    let mut preview_summaries = None;
    while page.job.generation == 3 {
        page.compute(Some(1));
        if let Some(s) = page.job.summaries().filter(|s| s.generation == 3) {
            preview_summaries = Some(s.value.clone());
        }
    }
    let preview_parts: Vec<Part> = page.shown[shown_before..]
        .iter()
        .filter(|(g, _)| *g == 3)
        .map(|(_, p)| *p)
        .collect();
    assert_eq!(preview_parts, vec![Part::Scatter, Part::Boxplots]);
    assert_eq!(page.job.generation, 4);
    assert_eq!(page.job.request(), &big("32"));
    assert_eq!(page.job.status(), &Status::Computing);
    // The preview's result says so, and the machine gives its whole configuration back.
    let preview_result = preview_summaries.expect("the preview's boxplots shown");
    assert_eq!(preview_result.config.preview_of.map(|w| w.n), Some(300));
    page.compute(None);
    assert_eq!(page.job.status(), &Status::Ready);
    assert_eq!(page.job.shown_config(), Some(big("32")));
    assert_eq!(page.job.curves().map(|c| c.generation), Some(4));
    let whole = page
        .job
        .summaries()
        .expect("the whole answer")
        .value
        .clone();
    for (p, w) in preview_result.summaries.iter().zip(&whole.summaries) {
        assert_eq!(p.per_dataset.len(), PREVIEW_DATASETS);
        assert_eq!(p.per_dataset[..], w.per_dataset[..PREVIEW_DATASETS]);
    }
    // A small configuration has nothing to preview: the waiting step is computed whole.
    let mut page = Page::new();
    page.configure_at(small("32"), 1000.0);
    page.configure_at(small("40"), 1010.0);
    page.compute(None);
    assert_eq!(page.job.request(), &small("40"));
}

#[test]
fn a_quick_job_keeps_the_line_it_found_and_a_long_one_or_a_preview_says_computing() {
    let ready = Status::Ready;
    // The first status is shown whatever it is.
    assert_eq!(Status::Computing.shown(None, false), Status::Computing);
    // A quick job keeps the line it found; its end replaces it.
    assert_eq!(Status::Computing.shown(Some(&ready), false), Status::Ready);
    assert_eq!(Status::Ready.shown(Some(&ready), false), Status::Ready);
    // Past the progress delay, or with a preview drawn, the line says so.
    assert_eq!(
        Status::Computing.shown(Some(&ready), true),
        Status::Computing
    );
    // Anything else is shown at once.
    let error = Status::Error("no".into());
    assert_eq!(error.clone().shown(Some(&ready), false), error);
    assert_eq!(
        Status::Cancelled.shown(Some(&Status::Computing), false),
        Status::Cancelled
    );
}
