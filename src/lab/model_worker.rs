//! The model worker's state and protocol (feature `text-model`): the model once loaded, the
//! Hedgehog maps once trained, and the answer to each request (postcard messages, as the other
//! workers'): a text's run ([`TextModel::run`]), a swap ([`swap_report`]), a retrieval
//! ([`retrieval_report`]) and the Hedgehog maps' training ([`train_learned_maps`]).

use std::sync::Arc;

use super::config::{HEAD_LAYERS, MAX_SWAP_DRAWS};
use super::learned_map::{LearnedMaps, train_learned_maps};
use super::model_loader::ModelLoader;
use super::model_protocol::{HEDGEHOG, HedgehogPoint, ModelAnswer, ModelRequest, SwapJob};
use super::model_swap::{
    ExactRun, Swap, SwapMethod, exact_run, retrieval_report, swap_report, swap_report_on,
};
use super::text_model::TextModel;
use crate::numerics::attention::methods::MethodId;

/// The model worker's state: the model once loaded, the Hedgehog maps once trained, and the
/// last swapped text's exact run.
#[derive(Debug, Default)]
pub struct ModelWorkspace {
    model: Option<TextModel>,
    learned: Option<Arc<LearnedMaps>>,
    /// The exact run of the last swapped text (a plan's jobs share it).
    exact: Option<ExactRun>,
}

impl ModelWorkspace {
    /// Finishes the fetched file (hashed and mostly unpacked as it streamed in) and keeps the
    /// model; `now` is the worker's clock in milliseconds, `last_byte_at` when the file's last
    /// byte arrived on it, and `load_ms` the time from then to the model ready.
    pub fn load(
        &mut self,
        loader: ModelLoader,
        last_byte_at: f64,
        now: fn() -> f64,
    ) -> ModelAnswer {
        let start = last_byte_at;
        let bytes = loader.loaded();
        match loader.finish() {
            Ok(model) => {
                let parameters = model.parameter_count();
                self.model = Some(model);
                ModelAnswer::Loaded {
                    bytes,
                    parameters,
                    load_ms: now() - start,
                }
            }
            Err(e) => ModelAnswer::Failed(e.to_string()),
        }
    }

    /// Runs the loaded model on `text`.
    pub fn run(&self, text: &str, now: fn() -> f64) -> ModelAnswer {
        let Some(model) = &self.model else {
            return ModelAnswer::Failed("the model is not loaded yet".into());
        };
        let start = now();
        match model.run(text) {
            Ok(run) => ModelAnswer::Ran {
                run,
                forward_ms: now() - start,
            },
            Err(e) => ModelAnswer::Failed(e.to_string()),
        }
    }
    /// Answers one request other than `Load` (which the worker handles, as it fetches);
    /// `post` sends answers that come before the last (the training's points).
    pub fn handle(
        &mut self,
        request: ModelRequest,
        now: fn() -> f64,
        post: &mut dyn FnMut(&ModelAnswer),
    ) -> ModelAnswer {
        let Some(model) = &self.model else {
            return ModelAnswer::Failed("the model is not loaded yet".into());
        };
        match request {
            ModelRequest::Load { .. } => {
                ModelAnswer::Failed("the worker loads the model as it fetches it".into())
            }
            ModelRequest::Run { text } => self.run(&text, now),
            ModelRequest::Swap(job) => {
                let start = now();
                let swap = self.swap_of(&job);
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
            } => {
                let start = now();
                let candidates: Vec<&str> = candidates.iter().map(String::as_str).collect();
                let report = self.swap_of(&job).and_then(|swap| {
                    retrieval_report(model, &query, &candidates, &job.config, &swap)
                        .map_err(|e| e.to_string())
                });
                ModelAnswer::Retrieved {
                    job,
                    report,
                    ms: now() - start,
                }
            }
            ModelRequest::TrainHedgehog(job) => {
                let mut on_point = |p: &HedgehogPoint| post(&ModelAnswer::Training(p.clone()));
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

    /// The swap a job names: its method (the registry's, or the trained Hedgehog maps) in its layers.
    fn swap_of(&self, job: &SwapJob) -> Result<Swap, String> {
        if let Some(layer) = job.layers.iter().find(|&&l| l >= HEAD_LAYERS) {
            return Err(format!(
                "the model has layers 0 to {} (got {layer})",
                HEAD_LAYERS - 1
            ));
        }
        job.config.validate().map_err(|e| e.to_string())?;
        let method = if job.method == HEDGEHOG {
            SwapMethod::Learned(
                self.learned
                    .clone()
                    .ok_or_else(|| "the Hedgehog maps are not trained yet".to_string())?,
            )
        } else {
            SwapMethod::Registry(
                MethodId::from_id(&job.method)
                    .ok_or_else(|| format!("no attention method {}", job.method))?,
            )
        };
        Ok(Swap {
            method,
            layers: job.layers.clone(),
            draws: job.draws.clamp(1, MAX_SWAP_DRAWS),
        })
    }
}
