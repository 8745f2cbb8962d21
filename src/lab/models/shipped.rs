//! Answers of the text view that do not depend on the reader's text, computed once by the lab's
//! build and shipped beside the model (`assets/shipped-answers.bin`, written by `kernel-lab
//! shipped` with the same code the model worker runs): the default Hedgehog maps with their
//! training curve (trained on
//! [`HEDGEHOG_TRAINING_TEXT`](crate::lab::models::protocol::HEDGEHOG_TRAINING_TEXT) with a fixed seed) and the default
//! retrieval set's report under each default method. A first visit computed both, about half
//! the one-thread work of the default swap (issue 48).
//!
//! Each is checked in the worker before it is used, against what this model computes there:
//! every head's cross-entropy with the shipped maps on the training text ([`kept_check`]), and
//! the exact ranking of the retrieval set (the order and every cosine). The build computes in
//! native f32 (multiply then add) and the browser with relaxed SIMD's fused multiply-add, so the
//! two agree to rounding, not bit for bit: the check allows [`SHIPPED_TOLERANCE`], far below
//! any difference another model, text or training would make, and far above the arithmetic's.
//! A check that fails, another setting, or the reader's "compute here" (`reuse=off`) computes
//! the answer in the worker as before.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::lab::config::{ExperimentConfig, HeadSource};
use crate::lab::models::learned_map::{
    KeptTraining, LearnedMaps, kept_check, merge_learned_heads, train_learned_heads,
};
use crate::lab::models::protocol::{
    HedgehogJob, HedgehogTraining, ModelRequest, Origin, Ranking, RetrievalReport, SwapJob,
};
use crate::lab::models::swap::{ExactRetrieval, exact_retrieval, retrieval_report_on, swap_of_job};
use crate::lab::models::swap_plan::swap_plan;
use crate::lab::models::text_model::TextModel;
use crate::numerics::bert::ModelError;

/// Where the page serves the shipped answers (beside the stored heads; index.html copies it).
pub const SHIPPED_ASSET_PATH: &str = "assets/shipped-answers.bin";

/// The largest difference a check allows between a shipped number and the worker's, relative
/// to the number (absolute below 1): the browser's fused multiply-adds move a cross-entropy or a
/// cosine by about 1e-7 (measured: docs/benchmark.md), another training by far more than 1e-3.
pub const SHIPPED_TOLERANCE: f64 = 1e-5;

/// What the build computed for the default configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShippedAnswers {
    /// The model file's SHA-256 they were computed with (answers of another model are not
    /// used).
    pub model_sha256: String,
    /// The default Hedgehog training: every head's maps and losses, in one part, and the
    /// check's cross-entropies.
    pub training: KeptTraining,
    /// The default retrieval set under each default method.
    pub retrievals: Vec<ShippedRetrieval>,
}

/// One retrieval request of the default plan and its report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShippedRetrieval {
    pub job: SwapJob,
    pub query: String,
    pub candidates: Vec<String>,
    pub report: RetrievalReport,
}

/// The configuration whose answers are shipped: the lab's defaults on the reader's text (the
/// page's `view=attention&src=text`).
pub fn shipped_config() -> ExperimentConfig {
    let mut config = ExperimentConfig::default();
    config.attention.source = HeadSource::Text;
    config
}

/// Computes the answers of [`shipped_config`]'s plan that do not depend on the text, as the
/// model worker does: the training of every head in one part, then each retrieval request
/// against the set's exact run (computed once).
pub fn compute_shipped_answers(
    model: &TextModel,
    model_sha256: &str,
    now: fn() -> f64,
) -> Result<ShippedAnswers, ModelError> {
    let reject = |e: String| ModelError::Replacement(format!("the shipped answers: {e}"));
    let plan = swap_plan(&shipped_config(), None);
    let job = plan
        .iter()
        .find_map(|r| match r {
            ModelRequest::TrainHedgehog { job, .. } => Some(job.clone()),
            _ => None,
        })
        .ok_or_else(|| reject("the default plan trains no Hedgehog maps".into()))?;
    let heads = model.weights.layers.len() * model.weights.config.num_attention_heads;
    let all: Vec<usize> = (0..heads).collect();
    let part = train_learned_heads(model, &job, &all, &mut |_| {}, now)?;
    let parts = vec![part];
    let check = kept_check(model, &parts)?;
    let maps = Arc::new(merge_learned_heads(&parts)?.0);
    let mut retrievals = Vec::new();
    let mut kept_exact = None;
    for request in plan {
        let ModelRequest::Retrieve {
            job,
            query,
            candidates,
            ..
        } = request
        else {
            continue;
        };
        let set: Vec<&str> = candidates.iter().map(String::as_str).collect();
        let exact = match kept_exact
            .take()
            .filter(|e: &ExactRetrieval| e.query == query && e.candidates == candidates)
        {
            Some(e) => e,
            None => exact_retrieval(model, &query, &set)?,
        };
        let swap = swap_of_job(&job, Some(maps.clone())).map_err(reject)?;
        let report = retrieval_report_on(model, &exact, &job.config, &swap)?;
        retrievals.push(ShippedRetrieval {
            job,
            query,
            candidates,
            report,
        });
        kept_exact = Some(exact);
    }
    Ok(ShippedAnswers {
        model_sha256: model_sha256.to_string(),
        training: KeptTraining { parts, check },
        retrievals,
    })
}

/// Whether `here` agrees with `shipped` within [`SHIPPED_TOLERANCE`] (same length).
pub fn agrees(here: &[f64], shipped: &[f64]) -> bool {
    here.len() == shipped.len()
        && here
            .iter()
            .zip(shipped)
            .all(|(a, b)| (a - b).abs() <= SHIPPED_TOLERANCE * b.abs().max(1.0))
}

/// Whether the exact ranking computed here is the shipped one: the same order, the cosines
/// within the tolerance.
pub fn ranking_agrees(here: &Ranking, shipped: &Ranking) -> bool {
    here.order == shipped.order && agrees(&here.cosines, &shipped.cosines)
}

impl ShippedAnswers {
    /// The shipped training of `job`, if it is the one shipped.
    pub fn training_of(&self, job: &HedgehogJob) -> Option<&KeptTraining> {
        self.training
            .parts
            .first()
            .filter(|p| &p.job == job)
            .map(|_| &self.training)
    }

    /// The shipped report of a retrieval request, if it is one of the shipped ones.
    pub fn retrieval_of(
        &self,
        job: &SwapJob,
        query: &str,
        candidates: &[String],
    ) -> Option<&RetrievalReport> {
        self.retrievals
            .iter()
            .find(|r| &r.job == job && r.query == query && r.candidates == candidates)
            .map(|r| &r.report)
    }

    /// The shipped maps of `job` and their training's record (marked shipped) if `model`
    /// gives their check within the tolerance.
    pub fn checked_training(
        &self,
        model: &TextModel,
        job: &HedgehogJob,
    ) -> Option<(LearnedMaps, HedgehogTraining)> {
        let kept = self.training_of(job)?;
        let here = kept_check(model, &kept.parts).ok()?;
        agrees(&here, &kept.check).then_some(())?;
        let (maps, mut training) = merge_learned_heads(&kept.parts).ok()?;
        training.origin = Origin::Shipped;
        Some((maps, training))
    }

    /// The shipped report of a retrieval request (marked shipped) if the exact ranking computed
    /// here agrees with the one it was computed against.
    pub fn checked_retrieval(
        &self,
        exact: &ExactRetrieval,
        job: &SwapJob,
    ) -> Option<RetrievalReport> {
        let shipped = self.retrieval_of(job, &exact.query, &exact.candidates)?;
        ranking_agrees(exact.ranking(), &shipped.exact).then(|| RetrievalReport {
            origin: Origin::Shipped,
            ..shipped.clone()
        })
    }
}

/// How the file's bytes are read.
type Reader = Box<dyn FnMut() -> Result<Vec<u8>, String>>;

/// The shipped answers as a worker holds them: read the first time a request may use them
/// (the worker's own reader: a fetch beside the page, a file for the command line and tests),
/// then kept, absent or not: a missing file is not asked for again.
#[derive(Default)]
pub struct ShippedSource {
    read: Option<Reader>,
    read_once: Option<Result<Arc<ShippedAnswers>, String>>,
}

impl std::fmt::Debug for ShippedSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShippedSource")
            .field("readable", &self.read.is_some())
            .field("read", &self.read_once.as_ref().map(|r| r.is_ok()))
            .finish()
    }
}

impl ShippedSource {
    /// Answers read by `read` when first needed.
    pub fn read_by(read: impl FnMut() -> Result<Vec<u8>, String> + 'static) -> Self {
        Self {
            read: Some(Box::new(read)),
            read_once: None,
        }
    }

    /// The answers for the model whose SHA-256 is `model_sha256`, read and decoded the first
    /// time (`None`: none here, unreadable, damaged, or another model's).
    pub fn get(&mut self, model_sha256: &str) -> Option<Arc<ShippedAnswers>> {
        if self.read_once.is_none() {
            let read = self.read.as_mut()?;
            self.read_once = Some(read().and_then(|bytes| {
                postcard::from_bytes::<ShippedAnswers>(&bytes)
                    .map(Arc::new)
                    .map_err(|e| format!("the shipped answers cannot be read: {e}"))
            }));
        }
        match self.read_once.as_ref()? {
            Ok(answers) if answers.model_sha256 == model_sha256 => Some(answers.clone()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_allows_rounding_not_another_answer() {
        assert!(agrees(&[2.5, 0.3], &[2.5 * (1.0 + 1e-7), 0.3 + 1e-7]));
        assert!(!agrees(&[2.5, 0.3], &[2.5 * (1.0 + 1e-4), 0.3]));
        assert!(!agrees(&[0.3], &[0.3, 0.2]));
        let ranking = |order: Vec<usize>, cosines: Vec<f64>| Ranking { order, cosines };
        let shipped = ranking(vec![1, 0], vec![0.9, 0.5]);
        assert!(ranking_agrees(
            &ranking(vec![1, 0], vec![0.9 + 1e-8, 0.5]),
            &shipped
        ));
        assert!(!ranking_agrees(
            &ranking(vec![0, 1], vec![0.9, 0.5]),
            &shipped
        ));
    }

    #[test]
    fn a_damaged_or_absent_file_is_no_answers_and_is_read_once() {
        let reads = std::rc::Rc::new(std::cell::Cell::new(0));
        let counted = reads.clone();
        let mut source = ShippedSource::read_by(move || {
            counted.set(counted.get() + 1);
            Ok(vec![1, 2, 3])
        });
        assert!(source.get("abc").is_none());
        assert!(source.get("abc").is_none());
        assert_eq!(reads.get(), 1);
        let mut absent = ShippedSource::read_by(|| Err("404".into()));
        assert!(absent.get("abc").is_none());
        assert!(ShippedSource::default().get("abc").is_none());
    }
}
