//! The model worker's state and protocol (feature `text-model`): the model once loaded, the
//! Hedgehog maps once trained, and the answer to each request (postcard messages, as the other
//! workers'): a text's run ([`TextModel::run`]), a swap ([`swap_report`]), a retrieval
//! ([`retrieval_report`]) and the Hedgehog maps' training ([`train_learned_maps`]).

use std::sync::Arc;

use super::protocol::{TaskResponse, WorkerRequest, WorkerResponse};
use crate::lab::attention::{StoredHeads, run_attention, run_attention_on};
use crate::lab::config::HeadSource;
use crate::lab::models::learned_map::{
    KeptTraining, LearnedHeads, LearnedMaps, kept_check, merge_learned_heads, train_learned_heads,
    train_learned_maps,
};
use crate::lab::models::loader::ModelLoader;
use crate::lab::models::protocol::{
    HedgehogJob, HedgehogPoint, ModelAnswer, ModelRequest, ModelSetup, Origin, SwapJob,
};
use crate::lab::models::shipped::ShippedSource;
use crate::lab::models::swap::{
    ExactRetrieval, ExactRun, Swap, exact_retrieval, exact_run, forward_with_exact,
    retrieval_report_on, swap_of_job, swap_report, swap_report_on,
};
use crate::lab::models::text_model::TextModel;
use crate::numerics::attention::heads::RealHeads;
use crate::numerics::bert::MODEL_SHA256;

/// The least time between two points of a training posted to the page while it trains. Every
/// point posted is a message, a chart redrawn and a page painted (a Chromium trace: 2.6 s of the
/// page's main thread over a 4 s training that posted all 201 steps, on a machine whose two
/// cores the workers need); ten a second still draw the curve as it falls, and the whole curve
/// comes with the training's record.
pub const TRAINING_POINT_INTERVAL_MS: f64 = 100.0;

/// `post` for the points of a training, at most one every [`TRAINING_POINT_INTERVAL_MS`] of
/// `now` (the first at once).
fn throttled_points<'a>(
    post: &'a mut dyn FnMut(&ModelAnswer),
    now: fn() -> f64,
) -> impl FnMut(&HedgehogPoint) + 'a {
    let mut last: Option<f64> = None;
    move |point| {
        let at = now();
        if last.is_none_or(|l| at - l >= TRAINING_POINT_INTERVAL_MS) {
            last = Some(at);
            post(&ModelAnswer::Training(point.clone()));
        }
    }
}

/// The model worker's state: the model once loaded, the Hedgehog maps once trained, and the
/// last swapped text's exact run.
#[derive(Debug, Default)]
pub struct ModelWorkspace {
    model: Option<Arc<TextModel>>,
    learned: Option<Arc<LearnedMaps>>,
    /// The exact run of the last swapped text (a plan's jobs share it).
    exact: Option<ExactRun>,
    /// The last text's heads (the attention view's parts on the user's text).
    text_heads: Option<(String, Arc<RealHeads>)>,
    /// The exact run of the last retrieval set (every method's retrieval job compares with it).
    exact_retrieval: Option<ExactRetrieval>,
    /// The stored heads, read when a part on them first comes to this worker.
    stored: StoredHeads,
    /// The answers shipped with the lab, read when a request may first use them.
    shipped: ShippedSource,
}

impl ModelWorkspace {
    /// Where this worker reads the stored heads from (none until it is told).
    pub fn set_stored_heads(&mut self, stored: StoredHeads) {
        self.stored = stored;
    }

    /// Where this worker reads the shipped answers from (none until it is told).
    pub fn set_shipped(&mut self, shipped: ShippedSource) {
        self.shipped = shipped;
    }

    /// Finishes the fetched file (hashed and mostly unpacked as it streamed in) and keeps the
    /// model; `now` is the worker's clock in milliseconds, `last_byte_at` when the file's last
    /// byte arrived on it, and `load_ms` the time from then to the model ready.
    pub fn load(&mut self, loader: ModelLoader, last_byte_at: f64, now: fn() -> f64) -> ModelSetup {
        let start = last_byte_at;
        let bytes = loader.loaded();
        match loader.finish() {
            Ok(model) => {
                let parameters = model.parameter_count();
                self.model = Some(Arc::new(model));
                ModelSetup::Loaded {
                    bytes,
                    parameters,
                    load_ms: now() - start,
                }
            }
            Err(e) => ModelSetup::Failed(e.to_string()),
        }
    }

    /// Runs the loaded model on `text`; keeps the text's heads for the attention view's parts
    /// (the answer carries none: no heads travel to the page).
    pub fn run(&mut self, text: &str, now: fn() -> f64) -> ModelAnswer {
        let Some(model) = &self.model else {
            return ModelAnswer::Failed("the model is not loaded yet".into());
        };
        let start = now();
        let ran = model.encode(text).and_then(|encoded| {
            let (exact, qkv) = forward_with_exact(model, text, &encoded.ids, now)?;
            let embedding = exact.embedding().to_vec();
            Ok((model.text_run_of(text, encoded, embedding, qkv)?, exact))
        });
        match ran {
            Ok(((run, heads), exact)) => {
                self.text_heads = Some((text.to_string(), Arc::new(heads)));
                self.exact = Some(exact);
                ModelAnswer::Ran {
                    run,
                    forward_ms: now() - start,
                }
            }
            Err(e) => ModelAnswer::Failed(e.to_string()),
        }
    }

    /// The loaded model, to run a part of a text's forward outside the workspace (a split
    /// text, `worker::model`).
    pub fn model(&self) -> Option<Arc<TextModel>> {
        self.model.clone()
    }

    /// Keeps `text`'s heads (a split text's, joined here), as [`ModelWorkspace::run`] does.
    pub fn keep_text_heads(&mut self, text: &str, heads: RealHeads) {
        self.text_heads = Some((text.to_string(), Arc::new(heads)));
    }

    /// Keeps a text's exact run (from its own forward, [`forward_with_exact`], or from its
    /// forward split over the workers, [`crate::lab::models::split::TextPart::exact_and_heads`]):
    /// its swap's jobs here start from it.
    pub fn keep_exact_run(&mut self, exact: ExactRun) {
        self.exact = Some(exact);
    }

    /// The heads of `text` (computed here if this worker did not run it: another worker did
    /// the text alone while this one was busy).
    fn heads_of(&mut self, text: &str, now: fn() -> f64) -> Result<Arc<RealHeads>, String> {
        if let Some((kept, heads)) = &self.text_heads
            && kept == text
        {
            return Ok(heads.clone());
        }
        match self.run(text, now) {
            ModelAnswer::Failed(message) => Err(message),
            _ => self
                .text_heads
                .as_ref()
                .map(|(_, heads)| heads.clone())
                .ok_or_else(|| "the text's heads were not kept".to_string()),
        }
    }

    /// Answers one message of the page (a model request or an attention part); `update` sends
    /// news before the answer (the training's points). Anything else is refused.
    pub fn respond(
        &mut self,
        request: WorkerRequest,
        now: fn() -> f64,
        update: &mut dyn FnMut(WorkerResponse),
    ) -> WorkerResponse {
        match request {
            WorkerRequest::Model { id, part, request } => {
                let mut post = |answer: &ModelAnswer| {
                    update(WorkerResponse::Update {
                        id,
                        update: answer.clone(),
                    })
                };
                let answer = self.handle(request, now, &mut post);
                // A part other than the first did its share; the first answers for the request.
                let answer = match answer {
                    ModelAnswer::Failed(message) => ModelAnswer::Failed(message),
                    _ if part.index > 0 => ModelAnswer::Helped,
                    answer => answer,
                };
                WorkerResponse::Model { id, answer }
            }
            WorkerRequest::Attention { id, request } => {
                let output = if request.config.attention.source == HeadSource::Text {
                    self.heads_of(&request.config.attention.text, now)
                        .and_then(|heads| {
                            run_attention_on(&request, Some(&*heads)).map_err(|e| e.to_string())
                        })
                } else {
                    run_attention(&request, &mut self.stored).map_err(|e| e.to_string())
                };
                WorkerResponse::Attention { id, output }
            }
            WorkerRequest::Task(task) => WorkerResponse::Task(TaskResponse {
                id: task.id,
                output: Err("the model worker computes the text view only".into()),
            }),
            WorkerRequest::Connect { .. } => WorkerResponse::Setup(ModelSetup::Failed(
                "a peer's port came without a port".into(),
            )),
            other => WorkerResponse::Task(TaskResponse {
                id: 0,
                output: Err(format!("the model worker does not answer {}", other.kind())),
            }),
        }
    }

    /// Answers one model request; `post` sends answers that come before the last (the
    /// training's points).
    pub fn handle(
        &mut self,
        request: ModelRequest,
        now: fn() -> f64,
        post: &mut dyn FnMut(&ModelAnswer),
    ) -> ModelAnswer {
        if self.model.is_none() {
            return ModelAnswer::Failed("the model is not loaded yet".into());
        }
        match request {
            ModelRequest::Run { text } => self.run(&text, now),
            ModelRequest::Swap(job) => {
                let start = now();
                let swap = self.swap_of(&job);
                let Some(model) = &self.model else {
                    return ModelAnswer::Failed("the model is not loaded yet".into());
                };
                if self.exact.as_ref().is_none_or(|e| e.text != job.text) {
                    self.exact = exact_run(model, &job.text, now).ok();
                }
                let report = swap.and_then(|swap| {
                    match &self.exact {
                        Some(exact) => swap_report_on(model, exact, &job.config, &swap, now),
                        // The text's own error (no words, …), as the page shows it.
                        None => swap_report(model, &job.text, &job.config, &swap, now),
                    }
                    .map_err(|e| e.to_string())
                });
                ModelAnswer::Swapped {
                    job,
                    report,
                    ms: now() - start,
                }
            }
            ModelRequest::Retrieve {
                job,
                query,
                candidates,
                reuse,
            } => {
                let start = now();
                let candidates: Vec<&str> = candidates.iter().map(String::as_str).collect();
                let shipped = reuse.then(|| self.shipped.get(MODEL_SHA256)).flatten();
                let report = self.swap_of(&job).and_then(|swap| {
                    let model = self.model.as_ref().ok_or("the model is not loaded yet")?;
                    let kept = self
                        .exact_retrieval
                        .take()
                        .filter(|e| e.query == query && e.candidates == candidates);
                    let exact = match kept {
                        Some(exact) => exact,
                        None => exact_retrieval(model, &query, &candidates)
                            .map_err(|e| e.to_string())?,
                    };
                    let report = match shipped.and_then(|s| s.checked_retrieval(&exact, &job)) {
                        Some(report) => Ok(report),
                        None => retrieval_report_on(model, &exact, &job.config, &swap)
                            .map_err(|e| e.to_string()),
                    };
                    self.exact_retrieval = Some(exact);
                    report
                });
                ModelAnswer::Retrieved {
                    job,
                    report,
                    ms: now() - start,
                }
            }
            ModelRequest::TrainHedgehog { job, reuse } => {
                if reuse && let Some(answer) = self.keep_shipped_training(&job) {
                    return answer;
                }
                let Some(model) = &self.model else {
                    return ModelAnswer::Failed("the model is not loaded yet".into());
                };
                let mut on_point = throttled_points(post, now);
                match train_learned_maps(model, &job, &mut on_point, now) {
                    Ok((maps, training)) => {
                        self.learned = Some(Arc::new(maps));
                        ModelAnswer::Trained(Ok(training))
                    }
                    Err(e) => ModelAnswer::Trained(Err(e.to_string())),
                }
            }
        }
    }

    /// Part `index` of `count` of a Hedgehog training split by heads: the heads `i` with
    /// `i % count == index` (every 12th of 72 when the workers are 12: the layers' costs even
    /// out); `post` sends the points of this part's heads.
    pub fn train_part(
        &self,
        job: &HedgehogJob,
        (index, count): (usize, usize),
        now: fn() -> f64,
        post: &mut dyn FnMut(&ModelAnswer),
    ) -> Result<LearnedHeads, String> {
        let model = self.model.as_ref().ok_or("the model is not loaded yet")?;
        let total = model.weights.layers.len() * model.weights.config.num_attention_heads;
        let heads: Vec<usize> = (0..total).filter(|h| h % count.max(1) == index).collect();
        let mut on_point = throttled_points(post, now);
        train_learned_heads(model, job, &heads, &mut on_point, now).map_err(|e| e.to_string())
    }

    /// Every part of a training split by heads: the maps of every head, kept for the
    /// Hedgehog swaps; the training's record.
    pub fn keep_trained_parts(&mut self, parts: &[LearnedHeads]) -> ModelAnswer {
        match merge_learned_heads(parts) {
            Ok((maps, training)) => {
                self.learned = Some(Arc::new(maps));
                ModelAnswer::Trained(Ok(training))
            }
            Err(e) => ModelAnswer::Trained(Err(e.to_string())),
        }
    }

    /// A training's parts to keep for later visits, with their check ([`kept_check`]).
    pub fn kept_training(&self, parts: &[LearnedHeads]) -> Result<KeptTraining, String> {
        let model = self.model.as_ref().ok_or("the model is not loaded yet")?;
        let check = kept_check(model, parts).map_err(|e| e.to_string())?;
        Ok(KeptTraining {
            parts: parts.to_vec(),
            check,
        })
    }

    /// Keeps the maps of a training kept from an earlier visit if its check holds with this
    /// build and model (the training's record, marked kept), or `None` (train it again).
    pub fn keep_kept_training(&mut self, kept: &KeptTraining) -> Option<ModelAnswer> {
        let model = self.model.as_ref()?;
        if kept_check(model, &kept.parts).ok()? != kept.check {
            return None;
        }
        match self.keep_trained_parts(&kept.parts) {
            ModelAnswer::Trained(Ok(mut training)) => {
                training.origin = Origin::Kept;
                Some(ModelAnswer::Trained(Ok(training)))
            }
            _ => None,
        }
    }

    /// Keeps the maps of `job` shipped with the lab if their check holds with this model (the
    /// training's record, marked shipped), or `None` (none shipped for it: train it).
    pub fn keep_shipped_training(&mut self, job: &HedgehogJob) -> Option<ModelAnswer> {
        let model = self.model.clone()?;
        let (maps, training) = self
            .shipped
            .get(MODEL_SHA256)?
            .checked_training(&model, job)?;
        self.learned = Some(Arc::new(maps));
        Some(ModelAnswer::Trained(Ok(training)))
    }

    /// The swap a job names ([`swap_of_job`]), with the maps this worker holds.
    fn swap_of(&self, job: &SwapJob) -> Result<Swap, String> {
        swap_of_job(job, self.learned.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        static CLOCK: Cell<f64> = const { Cell::new(0.0) };
    }

    /// A clock that moves 10 ms at every reading.
    fn ticking() -> f64 {
        CLOCK.with(|c| {
            c.set(c.get() + 10.0);
            c.get()
        })
    }

    #[test]
    fn a_training_posts_a_point_every_tenth_of_a_second() {
        let mut posted = Vec::new();
        let mut post = |answer: &ModelAnswer| {
            if let ModelAnswer::Training(p) = answer {
                posted.push(p.step);
            }
        };
        let mut on_point = throttled_points(&mut post, ticking);
        for step in 0..=200 {
            on_point(&HedgehogPoint {
                step,
                train_cross_entropy: 1.0,
                train_kl: 0.5,
                eval_kl: None,
            });
        }
        drop(on_point);
        let every_tenth: Vec<usize> = (0..=200).step_by(10).collect();
        assert_eq!(posted, every_tenth);
    }
}
