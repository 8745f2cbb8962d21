//! One text through the page's two language model workers: the first scores it under exact
//! attention while the second computes the swap's first draw, then each takes the next draw
//! still to do as it comes free. The swap's first number so comes with the exact one (one
//! forward's time, not two), and three draws take two forwards' time, not four. The page's
//! client ([`crate::ui`]'s `LmClient`) posts the messages this bookkeeping returns and publishes
//! [`TextRun::news`]; it has no web dependency, so its order of work is tested natively.

use super::protocol::{LmJob, LmReport, LmSwapDraw, LmSwapReport, LmToWorker, SplitPart};

/// Which of the page's language model workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LmWorkerSlot {
    /// The one that fetched the file: it scores the text and keeps its exact run for the chart.
    First,
    /// The second, handed the first's file where there is a second core.
    Second,
}

impl LmWorkerSlot {
    fn index(self) -> usize {
        match self {
            LmWorkerSlot::First => 0,
            LmWorkerSlot::Second => 1,
        }
    }
}

/// What a worker computes for the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Task {
    Exact,
    Draw(usize),
    /// A draw computed by both workers together, each over half of the text.
    Split(usize),
    /// The exact score computed by both together.
    SplitExact,
}

/// A message for one of the workers.
pub type Post = (LmWorkerSlot, LmToWorker);

/// A text's exact score and its swap's draws, part way.
#[derive(Debug)]
pub struct TextRun {
    pub id: u64,
    pub job: LmJob,
    exact: Option<Result<Box<LmReport>, String>>,
    /// The swap's draws (0 without a method), those not handed out yet (next last), and those in.
    draws: usize,
    to_hand: Vec<usize>,
    received: Vec<LmSwapDraw>,
    computing: [Option<Task>; 2],
    /// Whether the second worker takes draws.
    second: bool,
    /// Whether the two workers can compute one draw together (they are connected).
    split: bool,
    /// A newer text waits: nothing more is handed out.
    stopped: bool,
    /// Draws in when the answer was last published (`None`: never).
    published: Option<usize>,
    /// The exact report came from before (the same text's), not from a `Score` of this run.
    exact_was_known: bool,
}

impl TextRun {
    /// The run of `job` (request id `id`), with the second worker when `second`: the first
    /// scores the text, the second takes the swap's first draw. With `known`, the exact report
    /// of the same text (the first worker keeps its run), nothing is scored again: the first
    /// worker takes draw 0, starting from its kept states, and the second the next.
    pub fn start(
        id: u64,
        job: LmJob,
        (second, split): (bool, bool),
        known: Option<Box<LmReport>>,
    ) -> (Self, Vec<Post>) {
        let draws = job.swap_draws();
        let known = known.filter(|report| report.text == job.text);
        let split = split && second;
        let scoring = match (&known, split) {
            (Some(_), _) => [None, None],
            (None, true) => [Some(Task::SplitExact); 2],
            (None, false) => [Some(Task::Exact), None],
        };
        let mut run = Self {
            id,
            exact_was_known: known.is_some(),
            computing: scoring,
            exact: known.map(Ok),
            draws,
            to_hand: (0..draws).rev().collect(),
            received: Vec::new(),
            second,
            split,
            stopped: false,
            published: None,
            job,
        };
        let mut posts = Vec::new();
        match run.computing[0] {
            Some(Task::Exact) => posts.push((
                LmWorkerSlot::First,
                LmToWorker::Score {
                    id,
                    job: run.job.clone(),
                },
            )),
            Some(Task::SplitExact) => {
                for (slot, index) in [(LmWorkerSlot::First, 0), (LmWorkerSlot::Second, 1)] {
                    let part = SplitPart {
                        index,
                        // Draws take the requests (id << 8) | draw, with draw < 255.
                        request: (id << 8) | 0xFF,
                    };
                    let job = run.job.clone();
                    posts.push((slot, LmToWorker::SplitScore { id, job, part }));
                }
            }
            _ => {}
        }
        posts.extend(run.hand(LmWorkerSlot::First));
        posts.extend(run.hand(LmWorkerSlot::Second));
        (run, posts)
    }

    /// Whether the run reuses an exact report from before (no `Score` was sent).
    pub fn exact_kept(&self) -> bool {
        self.exact_was_known
    }

    /// The first worker's exact report (or why there is none); the next draw for it.
    pub fn scored(&mut self, report: Result<Box<LmReport>, String>) -> Vec<Post> {
        // Part 0 answers a split score once it has the other part's last share: both are
        // free (the other's `helped` may come later; it is then ignored).
        if self.computing[0] == Some(Task::SplitExact) {
            self.computing[1] = None;
        }
        self.computing[0] = None;
        self.exact = Some(report);
        self.hand(LmWorkerSlot::First)
    }

    /// A draw from `slot` (an error is kept as that draw's failure); the next draw for it.
    pub fn drawn(
        &mut self,
        slot: LmWorkerSlot,
        draw: usize,
        result: Result<LmSwapDraw, String>,
    ) -> Vec<Post> {
        let task = self.computing[slot.index()];
        if task != Some(Task::Draw(draw)) && task != Some(Task::Split(draw)) {
            return Vec::new();
        }
        if task == Some(Task::Split(draw)) && self.computing[1] == task {
            self.computing[1] = None;
        }
        self.computing[slot.index()] = None;
        self.received
            .push(result.unwrap_or_else(|reason| LmSwapDraw {
                workers: 1,
                draw,
                losses: Vec::new(),
                perplexity: None,
                failure: Some(reason),
                top: Vec::new(),
                forward_ms: 0.0,
            }));
        self.hand(slot)
    }

    /// The second worker's half of split draw `draw` (or of the split exact score: `None`)
    /// is done: the next draw, if both are free. The first's answer frees both already (it
    /// comes once the second's last share is in), so this matters only when that answer is
    /// lost.
    pub fn helped(&mut self, draw: Option<usize>) -> Vec<Post> {
        let task = draw.map_or(Task::SplitExact, Task::Split);
        if self.computing[1] != Some(task) {
            return Vec::new();
        }
        self.computing[1] = None;
        self.hand(LmWorkerSlot::Second)
    }

    /// The second worker stopped: its draw goes back to be done, by the first when it is free.
    pub fn second_lost(&mut self) -> Vec<Post> {
        self.second = false;
        self.split = false;
        match self.computing[1].take() {
            Some(Task::Draw(draw)) => self.to_hand.push(draw),
            // The first's half fails when its peer's shares stop coming; its answer, an error,
            // is kept as the draw's failure.
            Some(Task::Split(_) | Task::SplitExact | Task::Exact) | None => {}
        }
        self.hand(LmWorkerSlot::First)
    }

    /// A newer text waits: hand out no more draws (those under way finish).
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// Whether nothing of the run is being computed or left to hand out.
    pub fn is_finished(&self) -> bool {
        self.computing.iter().all(Option::is_none)
            && (self.to_hand.is_empty() || self.stopped || self.exact_failed())
    }

    /// Whether the exact report and every draw are in (the per-layer chart can follow).
    pub fn is_complete(&self) -> bool {
        self.is_finished() && matches!(self.exact, Some(Ok(_))) && self.received.len() == self.draws
    }

    /// The answer to publish if something new came since the last call: the exact report as
    /// soon as it is in, with the swap as its draws so far make it (none yet: its draws are
    /// all pending), or why the text could not be scored.
    pub fn news(&mut self) -> Option<Result<LmReport, String>> {
        let exact = self.exact.as_ref()?;
        let report = match exact {
            Err(reason) => {
                return self
                    .published
                    .replace(0)
                    .is_none()
                    .then(|| Err(reason.clone()));
            }
            Ok(report) => report,
        };
        if self.published == Some(self.received.len()) {
            return None;
        }
        self.published = Some(self.received.len());
        let mut report = (**report).clone();
        report.swap = self.job.method().map(|method| {
            LmSwapReport::from_draws(
                (method.id(), method.label()),
                &self.job.config.attention.lm_layers,
                self.draws,
                &self.received,
            )
        });
        Some(Ok(report))
    }

    fn exact_failed(&self) -> bool {
        matches!(self.exact, Some(Err(_)))
    }

    /// What `slot` takes next, if it is free and a draw is left: with two connected workers,
    /// once the exact report is in (itself split over both), each draw is split over both
    /// (half a forward's time each), so a worker that comes free first waits for the other;
    /// otherwise a draw alone (while the first scores a new text, the second takes draw 0).
    fn hand(&mut self, slot: LmWorkerSlot) -> Vec<Post> {
        let free = self.computing[slot.index()].is_none();
        if !free
            || self.stopped
            || self.exact_failed()
            || (slot == LmWorkerSlot::Second && !self.second)
            || self.to_hand.is_empty()
        {
            return Vec::new();
        }
        let other = match slot {
            LmWorkerSlot::First => LmWorkerSlot::Second,
            LmWorkerSlot::Second => LmWorkerSlot::First,
        };
        if self.split {
            // Both free, the text scored (split too): the next draw over both.
            if self.exact.is_none() || self.computing[other.index()].is_some() {
                return Vec::new();
            }
            let Some(draw) = self.to_hand.pop() else {
                return Vec::new();
            };
            self.computing = [Some(Task::Split(draw)); 2];
            let request = (self.id << 8) | (draw as u64 & 0xFF);
            let message = |index| LmToWorker::SplitDraw {
                id: self.id,
                job: self.job.clone(),
                draw,
                part: SplitPart { index, request },
            };
            return vec![
                (LmWorkerSlot::First, message(0)),
                (LmWorkerSlot::Second, message(1)),
            ];
        }
        let Some(draw) = self.to_hand.pop() else {
            return Vec::new();
        };
        self.computing[slot.index()] = Some(Task::Draw(draw));
        vec![(
            slot,
            LmToWorker::SwapDraw {
                id: self.id,
                job: self.job.clone(),
                draw,
            },
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::config::ExperimentConfig;
    use crate::numerics::attention::methods::MethodId;

    fn job(method: &str, draws: usize) -> LmJob {
        let mut config = ExperimentConfig::default();
        config.attention.lm_method = MethodId::from_id(method);
        config.attention.swap_draws = draws;
        LmJob::of(&config)
    }

    fn report() -> Box<LmReport> {
        Box::new(LmReport {
            text: "a b".into(),
            ids: vec![1, 2],
            pieces: vec!["a".into(), " b".into()],
            losses: vec![1.0],
            perplexity: 1f64.exp(),
            top: Vec::new(),
            multiply_adds: 1.0,
            forward_ms: 1.0,
            swap: None,
        })
    }

    fn draw(draw: usize, loss: f64) -> Result<LmSwapDraw, String> {
        Ok(LmSwapDraw {
            workers: 1,
            draw,
            losses: vec![loss],
            perplexity: Some(loss.exp()),
            failure: None,
            top: Vec::new(),
            forward_ms: 10.0,
        })
    }

    /// What `posts` ask, as (worker, draw or `None` for the exact score).
    fn asked(posts: &[Post]) -> Vec<(LmWorkerSlot, Option<usize>)> {
        posts
            .iter()
            .map(|(slot, message)| match message {
                LmToWorker::SwapDraw { draw, .. } => (*slot, Some(*draw)),
                _ => (*slot, None),
            })
            .collect()
    }

    use LmWorkerSlot::{First, Second};

    /// The split draws `posts` ask, as (worker, draw, part index, request).
    fn split_asked(posts: &[Post]) -> Vec<(LmWorkerSlot, usize, usize, u64)> {
        posts
            .iter()
            .filter_map(|(slot, message)| match message {
                LmToWorker::SplitDraw { draw, part, .. } => {
                    Some((*slot, *draw, part.index, part.request))
                }
                _ => None,
            })
            .collect()
    }

    /// The split exact score's posts, as (worker, part index, request).
    fn split_scores(posts: &[Post]) -> Vec<(LmWorkerSlot, usize, u64)> {
        posts
            .iter()
            .filter_map(|(slot, message)| match message {
                LmToWorker::SplitScore { part, .. } => Some((*slot, part.index, part.request)),
                _ => None,
            })
            .collect()
    }

    /// Two connected workers, three draws. A new text: its exact score split over both; then
    /// each draw split over both, the next handed as soon as the first answers; the exact
    /// report is shown as soon as it is in. A kept text: every draw split at once.
    #[test]
    fn connected_workers_split_the_score_and_each_draw() {
        let prf = job("prf-pos", 3);
        let (mut run, posts) = TextRun::start(11, prf.clone(), (true, true), None);
        assert_eq!(
            split_scores(&posts),
            vec![(First, 0, (11 << 8) | 0xFF), (Second, 1, (11 << 8) | 0xFF)]
        );
        assert_eq!(posts.len(), 2);
        assert!(run.helped(Some(0)).is_empty(), "not what it helps with");
        assert!(run.helped(None).is_empty(), "the first has not answered");
        let request = |draw: u64| (11 << 8) | draw;
        assert_eq!(
            split_asked(&run.scored(Ok(report()))),
            vec![(First, 0, 0, request(0)), (Second, 0, 1, request(0))]
        );
        let first = run.news().expect("news").expect("a report");
        assert_eq!(first.swap.map(|s| s.pending_draws), Some(3));
        // The first answers once the second's last share is in: both are free at once, and
        // the second's own word that it is done comes too late to matter.
        assert_eq!(
            split_asked(&run.drawn(First, 0, draw(0, 2.0))),
            vec![(First, 1, 0, request(1)), (Second, 1, 1, request(1))]
        );
        assert!(run.helped(Some(0)).is_empty());
        // The second's word may come first: then the first's answer hands the next.
        assert!(run.helped(Some(1)).is_empty(), "the first still computes");
        assert_eq!(
            split_asked(&run.drawn(First, 1, draw(1, 3.0))),
            vec![(First, 2, 0, request(2)), (Second, 2, 1, request(2))]
        );
        assert!(!run.is_finished());
        assert!(run.drawn(First, 2, draw(2, 4.0)).is_empty());
        assert!(run.is_complete());
        assert!(run.helped(Some(2)).is_empty());
        let swap = run.news().and_then(|r| r.ok()).and_then(|r| r.swap);
        assert_eq!(swap.map(|s| (s.draws, s.pending_draws)), Some((3, 0)));

        let kept = Box::new(LmReport {
            text: prf.text.clone(),
            ..*report()
        });
        let (mut run, posts) = TextRun::start(12, prf.clone(), (true, true), Some(kept));
        assert_eq!(
            split_asked(&posts),
            vec![(First, 0, 0, (12 << 8)), (Second, 0, 1, (12 << 8))]
        );
        // The second stops in the middle: the first's half fails (its answer, an error, is
        // the draw's failure) and the first takes the rest alone.
        assert!(run.second_lost().is_empty(), "the first is still on draw 0");
        assert_eq!(
            asked(&run.drawn(First, 0, Err("no share came".into()))),
            vec![(First, Some(1))]
        );
        // Not connected: as before.
        let (_, posts) = TextRun::start(13, prf, (true, false), Some(report()));
        assert!(split_asked(&posts).is_empty());
    }

    /// Two workers, three draws: the exact score and draw 0 at once; the exact report shown
    /// as soon as it is in (its swap pending), then with the swap from draw 0 on, refined by
    /// each later draw; the chart's turn once all three are in.
    #[test]
    fn two_workers_share_the_draws() {
        let (mut run, posts) = TextRun::start(7, job("prf-pos", 3), (true, false), None);
        assert_eq!(asked(&posts), vec![(First, None), (Second, Some(0))]);
        assert!(run.news().is_none(), "nothing in yet");
        assert_eq!(asked(&run.scored(Ok(report()))), vec![(First, Some(1))]);
        let pending = run.news().expect("news").expect("a report").swap;
        assert_eq!(
            pending.map(|s| (s.pending_draws, s.perplexity)),
            Some((3, None))
        );
        assert!(run.news().is_none(), "nothing new");
        assert_eq!(
            asked(&run.drawn(Second, 0, draw(0, 2.0))),
            vec![(Second, Some(2))]
        );
        let first = run.news().expect("news").expect("a report");
        let swap = first.swap.expect("a swap");
        assert_eq!((swap.pending_draws, swap.losses.clone()), (2, vec![2.0]));
        assert!(run.news().is_none(), "nothing new");
        assert!(run.drawn(Second, 2, draw(2, 4.0)).is_empty());
        assert!(!run.is_finished());
        assert!(run.drawn(First, 1, draw(1, 3.0)).is_empty());
        let last = run
            .news()
            .expect("news")
            .expect("a report")
            .swap
            .expect("a swap");
        assert_eq!((last.pending_draws, last.losses), (0, vec![3.0]));
        assert!(run.is_complete());
    }

    /// One worker does everything in turn; a run without a method publishes the exact report
    /// alone; a text that cannot be scored publishes its reason once and hands out nothing.
    #[test]
    fn one_worker_no_method_and_a_refused_text() {
        let (mut run, posts) = TextRun::start(1, job("elu", 3), (false, false), None);
        assert_eq!(asked(&posts), vec![(First, None)]);
        assert_eq!(asked(&run.scored(Ok(report()))), vec![(First, Some(0))]);
        assert!(
            run.drawn(First, 0, draw(0, 1.5)).is_empty(),
            "a deterministic method: one draw"
        );
        assert!(run.is_complete());
        assert_eq!(
            run.news()
                .and_then(|r| r.ok())
                .and_then(|r| r.swap)
                .map(|s| s.draws),
            Some(1)
        );

        let (mut run, posts) = TextRun::start(2, job("none", 3), (true, false), None);
        assert_eq!(asked(&posts), vec![(First, None)]);
        assert!(run.scored(Ok(report())).is_empty());
        assert!(run.news().expect("news").expect("a report").swap.is_none());
        assert!(run.is_complete());

        let (mut run, _) = TextRun::start(3, job("prf-pos", 3), (true, false), None);
        assert!(run.scored(Err("the text is empty".into())).is_empty());
        assert_eq!(run.news(), Some(Err("the text is empty".into())));
        assert_eq!(run.news(), None);
        // The second's draw of a text that cannot be scored fails too; nothing more is handed.
        assert!(
            run.drawn(Second, 0, Err("the text is empty".into()))
                .is_empty()
        );
        assert!(run.is_finished() && !run.is_complete());
    }

    /// A newer text stops the handing out; a second worker that stops gives its draw back to
    /// the first.
    #[test]
    fn a_newer_text_and_a_lost_worker() {
        let (mut run, _) = TextRun::start(4, job("prf-pos", 3), (true, false), None);
        run.stop();
        assert!(run.scored(Ok(report())).is_empty());
        assert!(!run.is_finished(), "draw 0 is still under way");
        assert!(run.drawn(Second, 0, draw(0, 2.0)).is_empty());
        assert!(run.is_finished() && !run.is_complete());

        let (mut run, _) = TextRun::start(5, job("prf-pos", 2), (true, false), None);
        assert_eq!(asked(&run.scored(Ok(report()))), vec![(First, Some(1))]);
        assert!(
            run.second_lost().is_empty(),
            "the first is busy with draw 1"
        );
        assert_eq!(
            asked(&run.drawn(First, 1, draw(1, 2.0))),
            vec![(First, Some(0))]
        );
        // A late answer of the lost worker is not counted.
        assert!(run.drawn(Second, 0, draw(0, 9.0)).is_empty());
        assert!(run.drawn(First, 0, draw(0, 1.0)).is_empty());
        assert!(run.is_complete());
    }

    /// The same text again with another setting: its exact report is kept, so nothing is
    /// scored; the first worker (which kept the text's exact run) takes draw 0, the second
    /// draw 1, and the swap is published with the kept report from its first draw. A kept
    /// report of another text is not used; a run with no method is complete at once.
    #[test]
    fn a_kept_exact_report_is_not_scored_again() {
        let prf = job("prf-pos", 3);
        let kept = Box::new(LmReport {
            text: prf.text.clone(),
            ..*report()
        });
        let (mut run, posts) = TextRun::start(8, prf.clone(), (true, false), Some(kept.clone()));
        assert!(run.exact_kept());
        assert_eq!(asked(&posts), vec![(First, Some(0)), (Second, Some(1))]);
        let pending = run
            .news()
            .expect("the kept report at once")
            .expect("a report");
        assert_eq!(pending.swap.map(|s| s.pending_draws), Some(3));
        assert_eq!(
            asked(&run.drawn(First, 0, draw(0, 2.0))),
            vec![(First, Some(2))]
        );
        let shown = run.news().expect("news").expect("a report");
        assert_eq!(shown.perplexity, kept.perplexity);
        assert_eq!(shown.swap.map(|s| s.pending_draws), Some(2));
        assert!(run.drawn(Second, 1, draw(1, 3.0)).is_empty());
        assert!(run.drawn(First, 2, draw(2, 4.0)).is_empty());
        assert!(run.is_complete());

        let (run, posts) = TextRun::start(9, prf, (true, false), Some(report()));
        assert!(!run.exact_kept(), "another text's report");
        assert_eq!(asked(&posts), vec![(First, None), (Second, Some(0))]);

        let none = job("none", 3);
        let kept = Box::new(LmReport {
            text: none.text.clone(),
            ..*report()
        });
        let (mut run, posts) = TextRun::start(10, none, (true, true), Some(kept));
        assert!(posts.is_empty());
        assert!(run.is_complete());
        assert!(run.news().expect("news").expect("a report").swap.is_none());
    }
}
