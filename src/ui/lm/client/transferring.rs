//! Attention transfer seen from the page: the view asks for the configuration's (`lmtrain`,
//! `lmsteps`, the seed, the text; [`LmClient::ask_transfer`]); its layers are handed out one
//! at a time to whichever worker is free (the first, and the second once it has the model),
//! their curves fill [`LmTransfer`] step by step, and once every layer is trained the first
//! worker judges them on the text. A new text with the same settings keeps the trained maps
//! and is only judged again; Stop ends the training where it is.

use leptos::prelude::*;

use super::super::spawn::post;
use super::LmClient;
use crate::lab::models::smollm::{LmJob, LmToWorker, TrainedLayer, TrainingEvent, TransferVerdict};
use crate::numerics::attention::hedgehog::TrainingPoint;

/// The transfer of the newest configuration, as it trains.
#[derive(Clone, Debug, PartialEq)]
pub struct LmTransfer {
    pub job: LmJob,
    /// Each asked layer's curve so far, in the order of `lmtrain`.
    pub curves: Vec<(usize, Vec<TrainingPoint>)>,
    /// The layers trained, in the order they finished.
    pub trained: Vec<TrainedLayer>,
    /// The text's perplexities once every layer is trained.
    pub verdict: Option<Result<TransferVerdict, String>>,
    /// The maps were trained for another text (the curve's held-out KL is that text's).
    pub judged_again: bool,
    /// Stopped by the reader before every layer was trained.
    pub stopped: bool,
    /// Why the training stopped.
    pub failure: Option<String>,
    /// The page's clock when it was asked, and its wall time to the verdict.
    pub started: f64,
    pub wall_ms: Option<f64>,
}

impl LmTransfer {
    fn new(job: LmJob) -> Self {
        Self {
            curves: job
                .config
                .attention
                .lm_train
                .iter()
                .map(|&l| (l, Vec::new()))
                .collect(),
            job,
            trained: Vec::new(),
            verdict: None,
            judged_again: false,
            stopped: false,
            failure: None,
            started: page_now(),
            wall_ms: None,
        }
    }

    /// Whether it is still training or being judged.
    pub fn is_running(&self) -> bool {
        !self.stopped && self.failure.is_none() && self.verdict.is_none()
    }
}

fn page_now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

/// What the page has handed out of the transfer under way.
#[derive(Default)]
pub(super) struct TransferRun {
    id: u64,
    /// Layers not handed out yet.
    pending: Vec<usize>,
    /// The layer the first and the second worker are training.
    busy: [Option<usize>; 2],
}

/// The training settings of a job: a new text with the same ones keeps the maps.
fn same_training(a: &LmJob, b: &LmJob) -> bool {
    let (a, b) = (&a.config, &b.config);
    a.seed == b.seed
        && a.attention.lm_train == b.attention.lm_train
        && a.attention.lm_train_steps == b.attention.lm_train_steps
}

impl LmClient {
    /// Asks for `job`'s transfer (`None`: none), sent once the model is ready. The same job
    /// again changes nothing (a stopped transfer stays stopped until [`Self::train_again`]).
    pub fn ask_transfer(self, job: Option<LmJob>) {
        let current = self
            .transfer
            .with_untracked(|t| t.as_ref().map(|t| t.job.clone()));
        if current == job {
            return;
        }
        let Some(job) = job else {
            self.stop_transfer();
            self.transfer.set(None);
            return;
        };
        let judged = self.transfer.with_untracked(|t| {
            t.as_ref()
                .filter(|t| same_training(&t.job, &job) && matches!(t.verdict, Some(Ok(_))))
                .map(|t| t.trained.clone())
        });
        match judged {
            Some(trained) => self.judge_again(job, trained),
            None => self.start_transfer(job),
        }
    }

    /// Trains the newest transfer again from the start.
    pub fn train_again(self) {
        if let Some(job) = self
            .transfer
            .with_untracked(|t| t.as_ref().map(|t| t.job.clone()))
        {
            self.start_transfer(job);
        }
    }

    /// Stops the training under way (the curves so far stay).
    pub fn stop_transfer(self) {
        let inner = self.inner.get_value();
        let mut guard = inner.borrow_mut();
        if guard.transfer.take().is_none() {
            return;
        }
        let _ = post(guard.worker.as_ref(), &LmToWorker::StopTraining);
        let _ = post(guard.helper.as_ref(), &LmToWorker::StopTraining);
        drop(guard);
        self.transfer.update(|t| {
            if let Some(t) = t.as_mut().filter(|t| t.is_running()) {
                t.stopped = true;
            }
        });
    }

    fn start_transfer(self, job: LmJob) {
        self.stop_transfer();
        let inner = self.inner.get_value();
        {
            let mut guard = inner.borrow_mut();
            guard.next_id += 1;
            guard.transfer = Some(TransferRun {
                id: guard.next_id,
                pending: job.config.attention.lm_train.clone(),
                busy: [None; 2],
            });
        }
        self.transfer.set(Some(LmTransfer::new(job)));
        self.hand_out_layers();
    }

    /// The trained maps judged on a new text.
    fn judge_again(self, job: LmJob, trained: Vec<TrainedLayer>) {
        self.stop_transfer();
        let inner = self.inner.get_value();
        let id = {
            let mut guard = inner.borrow_mut();
            guard.next_id += 1;
            let id = guard.next_id;
            guard.transfer = Some(TransferRun {
                id,
                ..TransferRun::default()
            });
            id
        };
        self.transfer.set(Some(LmTransfer {
            judged_again: true,
            trained: trained.clone(),
            curves: trained.iter().map(|t| (t.layer, t.curve.clone())).collect(),
            ..LmTransfer::new(job.clone())
        }));
        self.send_judge(id, job, trained);
    }

    fn send_judge(self, id: u64, job: LmJob, layers: Vec<TrainedLayer>) {
        let inner = self.inner.get_value();
        let guard = inner.borrow();
        if !guard.ready {
            return;
        }
        let message = LmToWorker::Judge { id, job, layers };
        if post(guard.worker.as_ref(), &message).is_none() {
            drop(guard);
            self.transfer_failed("the page could not send the maps to be judged".into());
        }
    }

    /// Gives each free, ready worker the next layer to train; once every layer is trained,
    /// sends them to be judged (also where a judging waited for the model).
    pub(super) fn hand_out_layers(self) {
        let Some(job) = self
            .transfer
            .with_untracked(|t| t.as_ref().map(|t| t.job.clone()))
        else {
            return;
        };
        let inner = self.inner.get_value();
        let mut guard = inner.borrow_mut();
        if !guard.ready {
            return;
        }
        let helper = guard.helper.clone().filter(|_| guard.helper_ready);
        let worker = guard.worker.clone();
        let Some(run) = guard.transfer.as_mut() else {
            return;
        };
        let id = run.id;
        let mut handed = Vec::new();
        for (slot, target) in [worker, helper].into_iter().enumerate() {
            if run.busy[slot].is_some() || target.is_none() || run.pending.is_empty() {
                continue;
            }
            let layer = run.pending.remove(0);
            let message = LmToWorker::Train {
                id,
                job: job.clone(),
                layer,
            };
            match post(target.as_ref(), &message) {
                Some(()) => {
                    run.busy[slot] = Some(layer);
                    handed.push(layer);
                }
                None => run.pending.insert(0, layer),
            }
        }
        let all_trained = run.pending.is_empty() && run.busy == [None; 2];
        drop(guard);
        // A layer handed out again (its worker stopped) starts its curve again.
        self.transfer.update(|t| {
            let curves = t.iter_mut().flat_map(|t| t.curves.iter_mut());
            curves
                .filter(|(layer, _)| handed.contains(layer))
                .for_each(|(_, curve)| curve.clear());
        });
        let waiting = self.transfer.with_untracked(|t| {
            t.as_ref().filter(|t| t.is_running()).and_then(|t| {
                let complete = t.trained.len() == t.curves.len();
                (all_trained && complete).then(|| t.trained.clone())
            })
        });
        if let Some(trained) = waiting {
            self.send_judge(id, job, trained);
        }
    }

    fn transfer_failed(self, message: String) {
        self.stop_transfer();
        self.transfer.update(|t| {
            if let Some(t) = t.as_mut() {
                t.stopped = false;
                t.failure = Some(message);
            }
        });
    }

    fn is_current_transfer(self, id: u64) -> bool {
        let inner = self.inner.get_value();
        let current = inner.borrow().transfer.as_ref().map(|r| r.id);
        current == Some(id)
    }

    /// An event of the first or the second (`from_helper`) worker's layer.
    pub(super) fn on_training(
        self,
        (id, layer, event): (u64, usize, TrainingEvent),
        from_helper: bool,
    ) {
        if !self.is_current_transfer(id) {
            return;
        }
        match event {
            TrainingEvent::Point(point) => self.transfer.update(|t| {
                let curve = t
                    .as_mut()
                    .and_then(|t| t.curves.iter_mut().find(|c| c.0 == layer));
                if let Some((_, curve)) = curve {
                    curve.push(point);
                }
            }),
            TrainingEvent::Trained(trained) => {
                if let Some(run) = self.inner.get_value().borrow_mut().transfer.as_mut() {
                    run.busy[usize::from(from_helper)] = None;
                }
                self.transfer.update(|t| {
                    if let Some(t) = t.as_mut() {
                        t.trained.push(trained);
                    }
                });
                self.hand_out_layers();
            }
            TrainingEvent::Failed(message) => {
                self.transfer_failed(format!("layer {layer}: {message}"));
            }
        }
    }

    /// The verdict of the transfer asked last.
    pub(super) fn on_judged(self, id: u64, result: Result<TransferVerdict, String>) {
        if !self.is_current_transfer(id) {
            return;
        }
        let judged = result.is_ok();
        self.inner.get_value().borrow_mut().transfer = None;
        self.transfer.update(|t| {
            if let Some(t) = t.as_mut() {
                t.wall_ms = Some(page_now() - t.started);
                t.verdict = Some(result);
            }
        });
        // The continuations start again, now with the transferred layers' too.
        if judged {
            self.inner.get_value().borrow_mut().continued = None;
            self.send_continuation();
        }
    }

    /// The second worker stopped: a layer it was training goes back to the first.
    pub(super) fn transfer_lost_helper(self) {
        let inner = self.inner.get_value();
        if let Some(run) = inner.borrow_mut().transfer.as_mut()
            && let Some(layer) = run.busy[1].take()
        {
            run.pending.insert(0, layer);
        }
        self.hand_out_layers();
    }
}
