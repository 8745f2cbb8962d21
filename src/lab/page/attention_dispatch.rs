//! The attention view's rules as a pure state machine, as [`crate::lab::page::job`] is the
//! kernel view's: which parts to ask for after a change, which answers are stale, when a part
//! is asked again. The page's effect only hands in what changed ([`AttentionDispatch::on_change`])
//! and each answer ([`AttentionDispatch::on_answer`]) and carries out what comes back; every
//! rule is tested natively (`attention_dispatch/tests.rs`).
//!
//! - A part is asked when it applies to the configuration (and to the embedded figure, if
//!   any) and what its numbers depend on ([`part_key`]) differs from its last request's: moving
//!   the heatmaps' method or the probe asks nothing again.
//! - Nothing is asked while a configuration above the ask-first budget waits for its click.
//! - The parts on the reader's text wait until the model workers ran that very text (they
//!   hold its heads); the stored heads are the workers' own, so no part waits for them here.
//! - Each request of a part has a generation; an answer of an older one is stale, never shown.
//! - A part whose answer failed is asked again at the next change, even with the same key (a
//!   worker lost, a fetch that failed: the next try may succeed).

use std::collections::HashMap;

use crate::lab::attention::{AttentionPart, AttentionRequest};
use crate::lab::config::{ExperimentConfig, HeadSource};
use crate::numerics::attention::methods::MethodId;

/// What the page knows beside the configuration when it changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ViewState<'a> {
    /// The configuration is above the ask-first budget and not confirmed yet.
    pub awaiting_confirmation: bool,
    /// The model workers hold the heads of the configuration's text (it ran).
    pub text_ran: bool,
    /// The parts of the one figure embedded alone (`?embed=`), if any.
    pub embedded: Option<&'a [AttentionPart]>,
}

/// One part to ask for: the request, and its generation (handed back with the answer).
#[derive(Clone, Debug, PartialEq)]
pub struct PartAsk {
    pub request: AttentionRequest,
    pub generation: u64,
}

/// What to do with an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerFate {
    /// The newest request's answer: show it.
    Show,
    /// An older request's answer: drop it.
    Stale,
}

/// The newest request of one part.
#[derive(Clone, Debug)]
struct Asked {
    key: String,
    generation: u64,
    answered: bool,
    failed: bool,
}

/// The attention view's requests: the newest of each part and whether it is answered.
#[derive(Clone, Debug, Default)]
pub struct AttentionDispatch {
    asked: HashMap<AttentionPart, Asked>,
    next_generation: u64,
}

impl AttentionDispatch {
    /// A view that asked nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The configuration or the view's state changed (or the view opened): the parts to ask
    /// for now, in the order the page shows them.
    pub fn on_change(&mut self, config: &ExperimentConfig, view: ViewState<'_>) -> Vec<PartAsk> {
        if view.awaiting_confirmation {
            return Vec::new();
        }
        if config.attention.source == HeadSource::Text && !view.text_ran {
            return Vec::new();
        }
        let mut asks = Vec::new();
        for part in AttentionPart::ALL {
            if !part.applies(config) || view.embedded.is_some_and(|parts| !parts.contains(&part)) {
                continue;
            }
            let key = part_key(part, config);
            let again = self
                .asked
                .get(&part)
                .is_none_or(|asked| asked.key != key || asked.failed);
            if !again {
                continue;
            }
            self.next_generation += 1;
            let generation = self.next_generation;
            self.asked.insert(
                part,
                Asked {
                    key,
                    generation,
                    answered: false,
                    failed: false,
                },
            );
            asks.push(PartAsk {
                request: AttentionRequest {
                    config: config.clone(),
                    part,
                    share: None,
                    lengths_unit: None,
                },
                generation,
            });
        }
        asks
    }

    /// The answer to `part`'s request of `generation` came (`ok`: it is not an error): shown
    /// if it answers the part's newest request, else stale.
    pub fn on_answer(&mut self, part: AttentionPart, generation: u64, ok: bool) -> AnswerFate {
        match self.asked.get_mut(&part) {
            Some(asked) if asked.generation == generation && !asked.answered => {
                asked.answered = true;
                asked.failed = !ok;
                AnswerFate::Show
            }
            _ => AnswerFate::Stale,
        }
    }

    /// Whether `part`'s newest request awaits its answer.
    pub fn is_pending(&self, part: AttentionPart) -> bool {
        self.asked.get(&part).is_some_and(|asked| !asked.answered)
    }

    /// Parts whose newest request awaits its answer, the length study left out (it runs for
    /// seconds to a minute; the view is ready without it).
    pub fn pending_besides_lengths(&self) -> usize {
        self.asked
            .iter()
            .filter(|(part, asked)| **part != AttentionPart::Lengths && !asked.answered)
            .count()
    }
}

/// What a part's numbers depend on: for the real-head table only whose heads (the stored ones
/// or the text's), m, the seed and the estimators' parameters; for the kernel-against-attention
/// part on the real heads not the head shown; for the length study what it reads
/// ([`lengths_key`]); for the others everything but the heatmaps' method, the probe, the
/// length study's `lmax` and `lalone`, and the swap's `reuse`.
pub fn part_key(part: AttentionPart, config: &ExperimentConfig) -> String {
    if part == AttentionPart::Lengths {
        return lengths_key(config);
    }
    let mut c = config.clone();
    c.attention.focus = MethodId::first();
    c.probe = None;
    c.attention.length_max = ExperimentConfig::default().attention.length_max;
    // How the study is timed, and whether the model swap reuses answers: no part reads them.
    c.attention.lengths_alone = ExperimentConfig::default().attention.lengths_alone;
    c.attention.reuse_answers = ExperimentConfig::default().attention.reuse_answers;
    if part == AttentionPart::HeadsTable {
        // A new text is new heads (the table used to keep the last text's).
        let heads = match c.attention.source {
            HeadSource::Text | HeadSource::Lm => {
                format!("{:?} {:?}", c.attention.source, c.attention.text)
            }
            source => format!("{source:?}"),
        };
        return format!(
            "{heads} {} {} {:?} {} {:?}",
            c.attention.features, c.seed, c.coupling, c.theta, c.complex_a
        );
    }
    if part == AttentionPart::KernelVsAttention && c.attention.source.is_real() {
        // Every head of both passages: the one shown does not matter.
        (c.attention.passage, c.attention.layer, c.attention.head) = (0, 0, 0);
    }
    c.to_query()
}

/// What the length study reads: `lmax`, the methods and their settings (m, the seed, the
/// coupling, θ, the complex A, and the sizes a method's map may read: degree, window,
/// samples, landmarks, top k), the head whose Gaussian the sequences follow, and whose heads
/// they are (the stored asset for synthetic data and the real heads alike, or the text's).
/// Not the synthetic data's L, d and norms, the draws or the heatmaps' method: moving those
/// does not re-run a study of many seconds.
fn lengths_key(c: &ExperimentConfig) -> String {
    let a = &c.attention;
    let methods: Vec<&str> = a.methods.iter().map(|m| m.id()).collect();
    let heads = match a.source {
        HeadSource::Text => format!("text {:?}", a.text),
        HeadSource::Lm => format!("lm {:?}", a.text),
        HeadSource::Synthetic | HeadSource::Minilm => "stored heads".to_string(),
    };
    format!(
        "lengths lmax={} alone={} methods={} m={} seed={} coupling={:?} theta={:?} complex_a={:?} degree={} window={} ra={} landmarks={} topk={} layer={} head={} {heads}",
        a.length_max,
        a.lengths_alone,
        methods.join(","),
        a.features,
        c.seed,
        c.coupling,
        c.theta,
        c.complex_a,
        a.degree,
        a.window,
        a.ra_samples,
        a.landmarks,
        a.top_k,
        a.layer,
        a.head,
    )
}

#[cfg(test)]
mod tests;
