//! What the page and the language model's worker say to each other (postcard, as the other
//! workers' messages), and what one text through the model gives: shared by the page, which
//! never links the model, and the worker and the command line (`report`, feature `text-model`).

use serde::{Deserialize, Serialize};

use crate::lab::config::ExperimentConfig;
pub use crate::lab::config::LM_MAX_GENERATED;
use crate::lab::models::protocol::Spread;
use crate::numerics::attention::hedgehog::{CompactMap, TrainingPoint};
use crate::numerics::attention::methods::MethodId;

/// Where the page serves the GGUF file (scripts/build-worker.sh copies it there).
pub const LM_URL: &str = "model/smollm2-135m-instruct-q4_1.gguf";
/// Its size, for the download's progress when the server does not say.
pub const LM_FILE_BYTES: u64 = 98_362_432;

/// Tokens of the reader's text the model reads at most (its context is 8,192; the page's
/// budget is a second's forward on a laptop).
pub const LM_MAX_TOKENS: usize = 1024;
/// Next tokens kept per position.
pub const TOP_TOKENS: usize = 5;

/// One candidate next token.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NextToken {
    pub id: u32,
    /// Its text as the reader sees it.
    pub piece: String,
    /// Its log-probability in nats.
    pub logprob: f64,
}

/// The text under a swap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LmSwapReport {
    pub method: String,
    pub label: String,
    pub layers: Vec<usize>,
    /// Draws asked for (1 for a deterministic method) and draws that failed (a row whose
    /// estimated normaliser is not positive cannot go on).
    pub draws: usize,
    pub failed_draws: usize,
    pub failure: Option<String>,
    /// Each token's loss, the mean over the draws that ran.
    pub losses: Vec<f64>,
    /// The perplexity of each draw, summarised.
    pub perplexity: Option<Spread>,
    /// The first draw's next tokens per position.
    pub top: Vec<Vec<NextToken>>,
    /// The mean time of a swapped forward.
    pub forward_ms: f64,
    /// Draws not in yet (the page shows the swap after its first draw and refines it; 0 in
    /// the command line's report).
    #[serde(default)]
    pub pending_draws: usize,
    /// Draws computed by the page's two workers together, each over half of the text.
    #[serde(default)]
    pub split_draws: usize,
}

/// One draw of a swap: one forward with the method in the swapped layers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LmSwapDraw {
    /// Which draw (its random features are the `draw`-th of the seed's).
    pub draw: usize,
    /// Each token's loss; empty when the draw failed.
    pub losses: Vec<f64>,
    pub perplexity: Option<f64>,
    /// Why it failed (a row whose estimated normaliser is not positive cannot go on).
    pub failure: Option<String>,
    /// Next tokens per position, kept for draw 0 only.
    pub top: Vec<Vec<NextToken>>,
    pub forward_ms: f64,
    /// The workers that computed it together (1: one alone).
    pub workers: usize,
}

impl LmSwapReport {
    /// The swap of `method` (its id and label) in `layers` over `draws` draws, from the draws
    /// `received` so far in any order: losses and perplexities taken in draw order (so the
    /// page, whose draws come from two workers, and the command line give the same bits), the
    /// first failure's reason, draw 0's next tokens.
    pub fn from_draws(
        (method, label): (&str, &str),
        layers: &[usize],
        draws: usize,
        received: &[LmSwapDraw],
    ) -> Self {
        let mut ordered: Vec<&LmSwapDraw> = received.iter().collect();
        ordered.sort_by_key(|d| d.draw);
        let ran: Vec<&LmSwapDraw> = ordered
            .iter()
            .copied()
            .filter(|d| d.perplexity.is_some())
            .collect();
        let mut sums = vec![0.0f64; ran.first().map_or(0, |d| d.losses.len())];
        for draw in &ran {
            for (s, l) in sums.iter_mut().zip(&draw.losses) {
                *s += l;
            }
        }
        let perplexities: Vec<f64> = ran.iter().filter_map(|d| d.perplexity).collect();
        let timed = ordered.len().max(1) as f64;
        LmSwapReport {
            method: method.to_string(),
            label: label.to_string(),
            layers: layers.to_vec(),
            draws,
            failed_draws: ordered.len() - ran.len(),
            failure: ordered.iter().find_map(|d| d.failure.clone()),
            losses: sums.iter().map(|s| s / ran.len() as f64).collect(),
            perplexity: Spread::of(&perplexities),
            top: ordered
                .iter()
                .find(|d| d.draw == 0)
                .map_or_else(Vec::new, |d| d.top.clone()),
            forward_ms: ordered.iter().map(|d| d.forward_ms).sum::<f64>() / timed,
            pending_draws: draws.saturating_sub(ordered.len()),
            split_draws: ordered.iter().filter(|d| d.workers > 1).count(),
        }
    }
}

/// What `kernel-lab lm` prints and the view shows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LmReport {
    pub text: String,
    pub ids: Vec<u32>,
    /// Each token's text as the reader sees it.
    pub pieces: Vec<String>,
    /// `losses[t]`: the loss of token `t + 1` in nats (the first token has none).
    pub losses: Vec<f64>,
    pub perplexity: f64,
    /// Per position, the most likely next tokens under exact attention.
    pub top: Vec<Vec<NextToken>>,
    pub multiply_adds: f64,
    pub forward_ms: f64,
    pub swap: Option<LmSwapReport>,
}

/// One bar of the per-layer chart: the perplexity with one layer alone swapped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LmLayerBar {
    pub layer: usize,
    /// Whether every draw is in (a bar is sent after each draw, its spread refined as they
    /// come).
    pub complete: bool,
    /// Over the draws that ran.
    pub perplexity: Option<Spread>,
    pub failed_draws: usize,
    pub failure: Option<String>,
}

/// Perplexity when each layer alone runs the method (the others softmax).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LmLayerReport {
    pub method: String,
    pub label: String,
    pub draws: usize,
    pub exact_perplexity: f64,
    pub bars: Vec<LmLayerBar>,
}

/// What the page asks: the text, and the method and layers of the swap from the configuration
/// (`lmmethod`, `lmlayers`, and the attention view's m, degree, seed, draws).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LmJob {
    pub text: String,
    pub config: ExperimentConfig,
}

impl LmJob {
    /// The job of a configuration's scores: the continuation's settings (`lmgen`, `lmtemp`)
    /// and the transfer's (`lmtrain`, `lmsteps`) left out, so that changing them does not score
    /// the text again.
    pub fn scoring(config: &ExperimentConfig) -> Self {
        let mut job = Self::of(config);
        let a = &mut job.config.attention;
        a.lm_generate = 0;
        a.lm_temperature = 0.0;
        a.lm_train = Vec::new();
        a.lm_train_steps = 0;
        job
    }

    /// The job of a configuration's continuation, `None` when it asks for none (`lmgen` 0).
    pub fn continuation(config: &ExperimentConfig) -> Option<Self> {
        (config.attention.lm_generate > 0).then(|| Self::of(config))
    }

    /// The job of a configuration's transfer, `None` when it asks for none (`lmtrain` empty):
    /// the text and the settings the transfer reads (`lmtrain`, `lmsteps`, the seed), the
    /// others at their defaults, so that changing them does not train again.
    pub fn transfer(config: &ExperimentConfig) -> Option<Self> {
        let a = &config.attention;
        if a.lm_train.is_empty() {
            return None;
        }
        let mut only = ExperimentConfig {
            seed: config.seed,
            ..ExperimentConfig::default()
        };
        only.attention.lm_train.clone_from(&a.lm_train);
        only.attention.lm_train_steps = a.lm_train_steps;
        only.attention.text.clone_from(&a.text);
        Some(Self::of(&only))
    }

    /// The job of a configuration.
    pub fn of(config: &ExperimentConfig) -> Self {
        Self {
            text: config.attention.text.clone(),
            config: config.clone(),
        }
    }

    /// The method swapped in, if any.
    pub fn method(&self) -> Option<MethodId> {
        self.config.attention.lm_method
    }

    /// The swap's draws: `swapdraws` of a random method, one of a deterministic one, none
    /// without a method.
    pub fn swap_draws(&self) -> usize {
        match self.method() {
            Some(method) if method.is_random() => self.config.attention.swap_draws.max(1),
            Some(_) => 1,
            None => 0,
        }
    }
}

/// Which continuation of the text: the model as it is (softmax in every layer, a key/value
/// cache), with the swap's layers linear, or with the transferred layers linear (their trained
/// Hedgehog maps), each linear layer decoded as recurrent networks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Decoding {
    Exact,
    Linear,
    Transferred,
}

impl Decoding {
    pub fn key(self) -> &'static str {
        match self {
            Decoding::Exact => "exact",
            Decoding::Linear => "linear",
            Decoding::Transferred => "transferred",
        }
    }
}

/// A continuation's prompt read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContinuationStart {
    pub prompt_tokens: usize,
    /// The layers decoded as recurrent networks (none for the exact continuation).
    pub linear_layers: Vec<usize>,
    /// The prompt's batched forward, filling every layer's memory.
    pub prefill_ms: f64,
    /// Bytes each layer keeps after the prompt.
    pub memory: Vec<u64>,
    /// Multiply-adds of the first step's attention in each layer (a softmax layer's grow by
    /// `2 · heads · d` a token, a linear layer's stay).
    pub step_multiply_adds: Vec<f64>,
}

/// One token of a continuation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeneratedToken {
    pub id: u32,
    pub piece: String,
    /// Its log-probability under the model (temperature 1), in nats.
    pub logprob: f64,
    /// The step: choosing it, then reading it through every layer.
    pub ms: f64,
    /// Bytes each layer keeps once it is read.
    pub memory: Vec<u64>,
}

/// How a continuation ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ContinuationEnd {
    /// Every token asked for.
    Complete,
    /// The model chose a control token (the end of its text).
    EndOfText,
    /// It could not go on (a linear head's normaliser not usable, …).
    Failed(String),
}

/// What a continuation sends as it goes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ContinuationEvent {
    Started(ContinuationStart),
    Token(GeneratedToken),
    Ended(ContinuationEnd),
}

/// A whole continuation (the command line's, and the page's once it has ended).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Continuation {
    pub decoding: Decoding,
    pub start: Option<ContinuationStart>,
    pub tokens: Vec<GeneratedToken>,
    /// The tokens' text together.
    pub text: String,
    pub end: Option<ContinuationEnd>,
}

impl Continuation {
    pub fn new(decoding: Decoding) -> Self {
        Self {
            decoding,
            start: None,
            tokens: Vec::new(),
            text: String::new(),
            end: None,
        }
    }

    /// Takes in one event (a token's piece appended to the text).
    pub fn absorb(&mut self, event: ContinuationEvent) {
        match event {
            ContinuationEvent::Started(start) => self.start = Some(start),
            ContinuationEvent::Token(token) => {
                self.text.push_str(&token.piece);
                self.tokens.push(token);
            }
            ContinuationEvent::Ended(end) => self.end = Some(end),
        }
    }

    /// Tokens a second over the steps (the prompt's forward apart); `None` before a token.
    pub fn tokens_per_second(&self) -> Option<f64> {
        let ms: f64 = self.tokens.iter().map(|t| t.ms).sum();
        (!self.tokens.is_empty() && ms > 0.0).then(|| self.tokens.len() as f64 * 1e3 / ms)
    }
}

/// One layer's attention transfer: its training curve (means over the layer's heads) and its
/// maps, one per query head, as f32 (what the page passes from worker to worker and what the
/// perplexity runs with, in the page and the command line alike).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainedLayer {
    pub layer: usize,
    pub curve: Vec<TrainingPoint>,
    pub maps: Vec<CompactMap>,
    /// The training's time, its samples' forwards included.
    pub ms: f64,
}

/// What transfer wins back: the text's perplexity with softmax everywhere, with the transferred
/// layers' untrained maps (the zero-shot swap), and with their trained maps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransferVerdict {
    pub layers: Vec<usize>,
    pub exact: f64,
    pub zero_shot: f64,
    pub transferred: f64,
    pub ms: f64,
}

/// A transfer of some layers, judged on the reader's text (`kernel-lab lm --train-layers`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransferReport {
    pub steps: usize,
    pub seed: u64,
    /// Tokens of the lab's transfer text trained on, and of the reader's text judged on.
    pub training_tokens: usize,
    pub held_out_tokens: usize,
    pub layers: Vec<TrainedLayer>,
    pub verdict: TransferVerdict,
}

/// What a worker says of the layer it trains.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TrainingEvent {
    /// A step's losses (step 0: the untrained maps').
    Point(TrainingPoint),
    Trained(TrainedLayer),
    Failed(String),
}

/// A worker's share of a forward split over the page's two language model workers: part
/// `index` (0 for the first worker, which answers), tagged `request` in what the two send each
/// other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitPart {
    pub index: usize,
    pub request: u64,
}

impl SplitPart {
    /// The two workers' slots (the first's 0, the second's 1), in part order.
    pub const SLOTS: [usize; 2] = [0, 1];
}

/// A message to the language model's worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum LmToWorker {
    /// Score a text under exact attention (the report's `swap` is `None`); the answer carries
    /// the same id. Stops any per-layer chart.
    Score { id: u64, job: LmJob },
    /// One draw of the job's swap ([`LmFromWorker::SwapDrawn`]): the page hands a swap's
    /// draws to its two workers while the first scores the text, so the first swapped number
    /// comes with the exact one. Stops any per-layer chart.
    SwapDraw { id: u64, job: LmJob, draw: usize },
    /// The per-layer chart of the job's method over every layer, bar by bar
    /// ([`LmFromWorker::LayerBar`], then [`LmFromWorker::LayersEnded`]); replaces any chart
    /// under way.
    PerLayer { id: u64, job: LmJob, share: Share },
    /// Stop the chart under way (the page has moved on to another text or setting).
    StopChart,
    /// Continue the job's text by `lmgen` tokens ([`LmFromWorker::Continuing`], token by
    /// token), exactly or with the swap's layers linear; replaces any continuation under way.
    Continue {
        id: u64,
        job: LmJob,
        decoding: Decoding,
        /// The trained maps ([`Decoding::Transferred`]; empty for the others).
        trained: Vec<TrainedLayer>,
    },
    /// Stop the continuation under way.
    StopContinuing,
    /// Train `layer`'s maps for the job's transfer (`lmtrain`, `lmsteps`, the seed), one Adam
    /// step per turn of the worker ([`LmFromWorker::Training`]); replaces any training under way.
    Train { id: u64, job: LmJob, layer: usize },
    /// Stop the training under way.
    StopTraining,
    /// The job's text's perplexity exact, zero-shot and with `layers`' trained maps
    /// ([`LmFromWorker::Judged`]).
    Judge {
        id: u64,
        job: LmJob,
        layers: Vec<TrainedLayer>,
    },
    /// Post the model's file to the page (not postcard: a JS object `{ lmFile: Uint8Array }`,
    /// its buffer transferred), which hands it to the chart's second worker.
    SendFile,
    /// Part `part.index` of draw `draw` of the job's swap, computed by both workers together,
    /// each over its share of the text's positions (`lab::models::smollm::split`): part 0
    /// answers [`LmFromWorker::SwapDrawn`], the others [`LmFromWorker::Helped`]. Stops
    /// any per-layer chart.
    SplitDraw {
        id: u64,
        job: LmJob,
        draw: usize,
        part: SplitPart,
    },
    /// The port to the worker of slot `peer` comes with this message (the split forwards'
    /// talk).
    Connect { peer: usize },
    /// Part `part.index` of the job's text under exact attention, computed by both workers
    /// together: part 0 answers [`LmFromWorker::Scored`] and keeps the exact run, the others
    /// [`LmFromWorker::Helped`]. Stops any per-layer chart.
    SplitScore {
        id: u64,
        job: LmJob,
        part: SplitPart,
    },
}

/// The property of the message that carries the file from one worker to another through the
/// page (see [`LmToWorker::SendFile`]).
pub const LM_FILE_MESSAGE: &str = "lmFile";
/// What a worker's address says when its file comes from the page, not from the server.
pub const LM_FILE_FROM_PAGE: &str = "file=page";
/// What a worker's address says when it serves the attention view's parts on the language
/// model's heads (`…_loader.js?lm&heads`): the pool protocol, not [`LmToWorker`].
pub const LM_HEADS_WORKER: &str = "heads";

/// Which of a chart's layers a worker computes when several share it: of the layers taken
/// deepest first, those at positions `index`, `index + count`, … (so each worker's share costs
/// about the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Share {
    pub index: usize,
    pub count: usize,
}

impl Share {
    /// The whole chart, on one worker.
    pub const ALL: Share = Share { index: 0, count: 1 };

    /// Whether the layer at `position` (deepest first) is this share's.
    pub fn takes(self, position: usize) -> bool {
        position % self.count.max(1) == self.index % self.count.max(1)
    }
}

/// A message from the language model's worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum LmFromWorker {
    /// Bytes of the file received so far.
    Progress { loaded: u64, total: Option<u64> },
    /// The model is ready: the file's size and the time to check and read it after its last
    /// byte.
    Loaded { bytes: u64, load_ms: f64 },
    /// The file is absent or damaged, or the worker could not read it.
    Failed(String),
    /// The answer to [`LmToWorker::Score`] `id`: the report, or why there is none.
    Scored {
        id: u64,
        report: Result<Box<LmReport>, String>,
    },
    /// Draw `draw` of job `id`'s swap, or why the text cannot be swapped.
    SwapDrawn {
        id: u64,
        draw: usize,
        result: Result<LmSwapDraw, String>,
    },
    /// A bar of chart `id`, `ms` after the worker took the request.
    LayerBar { id: u64, bar: LmLayerBar, ms: f64 },
    /// An event of continuation `id`.
    Continuing {
        id: u64,
        decoding: Decoding,
        event: ContinuationEvent,
    },
    /// An event of training `id`'s `layer`.
    Training {
        id: u64,
        layer: usize,
        event: TrainingEvent,
    },
    /// The answer to [`LmToWorker::Judge`] `id`.
    Judged {
        id: u64,
        result: Result<TransferVerdict, String>,
    },
    /// Chart `id` is complete (`error: None`) or stopped by an error, `ms` after the request.
    LayersEnded {
        id: u64,
        ms: f64,
        error: Option<String>,
    },
    /// This worker's part of a split forward of job `id` is done (part 0 answers it): of
    /// draw `draw`, or of the exact score (`None`).
    Helped { id: u64, draw: Option<usize> },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draw(draw: usize, losses: &[f64], failure: Option<&str>) -> LmSwapDraw {
        let perplexity = failure
            .is_none()
            .then(|| (losses.iter().sum::<f64>() / losses.len() as f64).exp());
        LmSwapDraw {
            workers: 1,
            draw,
            losses: if failure.is_none() {
                losses.to_vec()
            } else {
                Vec::new()
            },
            perplexity,
            failure: failure.map(str::to_string),
            top: vec![vec![]; draw + 1],
            forward_ms: 100.0 * (draw + 1) as f64,
        }
    }

    /// Draws in any order give the same report, the losses averaged over the draws that ran,
    /// the failed one counted with its reason, draw 0's next tokens, what is still to come.
    #[test]
    fn a_swap_is_its_draws_in_draw_order() {
        let draws = [
            draw(2, &[3.0, 1.0], None),
            draw(0, &[1.0, 1.0], None),
            draw(1, &[], Some("a row's normaliser is not positive")),
        ];
        let report = LmSwapReport::from_draws(("prf-pos", "Performer"), &[1, 2], 4, &draws);
        let mut reversed = draws.clone();
        reversed.reverse();
        assert_eq!(
            report,
            LmSwapReport::from_draws(("prf-pos", "Performer"), &[1, 2], 4, &reversed)
        );
        assert_eq!(report.losses, vec![2.0, 1.0]);
        assert_eq!(report.failed_draws, 1);
        assert_eq!(report.pending_draws, 1);
        assert_eq!(
            report.failure.as_deref(),
            Some("a row's normaliser is not positive")
        );
        assert_eq!(report.top.len(), 1, "draw 0's");
        assert_eq!(report.forward_ms, 200.0);
        let p = report.perplexity.expect("two draws ran");
        assert!((p.mean - (1f64.exp() + 2f64.exp()) / 2.0).abs() < 1e-12);
        // Nothing in yet: no perplexity, every draw to come.
        let none = LmSwapReport::from_draws(("elu", "elu + 1"), &[0], 1, &[]);
        assert_eq!((none.perplexity, none.pending_draws), (None, 1));
        assert!(none.losses.is_empty());
    }
}
