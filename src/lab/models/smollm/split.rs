//! One forward computed by the page's two language model workers together, each over half of
//! the text's positions ([`crate::numerics::llama::part`]): a text's exact score, or one draw
//! of its swap, then takes about half a forward's time instead of a whole one.
//!
//! The parts talk in steps, every part sending one [`LmPeerMessage`] at each and reading the
//! others' of the same step: step 0 says where the forward starts (for a draw, part 0 keeps the
//! text's exact run, so it sends the other parts their rows' hidden states entering the first
//! swapped layer), each next step carries one layer's queries, keys and values (for the exact
//! score, also the other parts' hidden states entering it: part 0 keeps the whole run, which
//! later draws and the per-layer chart start from), and the last the rows' losses and
//! predictions, which part 0 joins into the answer. A failure (the method's,
//! on both parts alike, or a part's own) travels in place of the next messages, so that no
//! part waits for a share that will not come, and the number of steps never changes. How the
//! messages travel is the worker's (`worker::lm`); tests/lm_split.rs passes them by hand.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::protocol::{LmJob, LmSwapDraw, TOP_TOKENS};
use super::report::{draw_of_scores, lm_tokens, swap_of};
use crate::lab::models::head_swap::{RegistryContext, Swap, registry_of, replacement_of};
use crate::lab::models::split::{Floats, part_rows};
use crate::numerics::attention::long::LinearForm;
use crate::numerics::llama::{
    ExactRun, HeadShare, LayerShare, LlamaConfig, LlamaModel, LmError, LmPart, LmScores,
    Prediction, join_scores,
};

/// The fewest tokens worth a split draw: a shorter text's forward takes less than the
/// parts' exchanges cost, and part 0 draws it alone.
pub const LM_SPLIT_MIN_TOKENS: usize = 32;

/// An upper bound on the bytes of the largest message a part sends when a text of `tokens`
/// is split in `parts` (what a shared board's buffer must hold): a layer's share of the
/// largest part's rows (with their hidden states, for the exact score), step 0's hidden states
/// of the other parts' rows, or the last step's scores, with postcard's framing.
pub fn lm_share_bytes(config: &LlamaConfig, tokens: usize, parts: usize) -> usize {
    let rows = tokens.div_ceil(parts.max(1));
    let layer = rows * (2 * config.width + 2 * config.kv_heads * config.head_dim) * 4;
    let start = tokens * config.width * 4;
    // A loss, a normaliser, and each next token's id and log-probability, with their lengths.
    let scores = rows * (2 * 9 + TOP_TOKENS * 14 + 2);
    layer.max(start).max(scores) + 64
}

/// What a part sends the others at one step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum LmPeerMessage {
    /// Step 0, from part 0: the layer the draw starts at and, when it is not the first, the
    /// hidden states entering it of rows `start..` (every other part's rows).
    Start {
        from: usize,
        start: usize,
        entering: Option<Floats>,
    },
    /// Nothing to add at this step.
    Empty,
    /// One layer's rotated queries, keys and values of rows `start..end`, and for the exact
    /// score, from a part other than 0, the rows' hidden states entering the layer.
    Layer {
        start: usize,
        end: usize,
        q: Floats,
        k: Floats,
        v: Floats,
        entering: Option<Floats>,
    },
    /// At a swapped layer of a draw, after its `Layer` step: heads `first..last` of the layer's
    /// attention, as this part computed them, of every row but its own `start..end`
    /// ([`HeadShare`]'s layout).
    Heads {
        first: usize,
        last: usize,
        start: usize,
        end: usize,
        values: Floats,
    },
    /// After the last layer: the losses of the tokens after rows `start..` and the rows'
    /// predictions (the likeliest next tokens with their log-probabilities, the normaliser).
    Scores {
        start: usize,
        losses: Vec<f64>,
        predictions: Vec<(Vec<(u32, f64)>, f64)>,
    },
    /// The draw failed, and why.
    Failed(String),
}

/// The heads part `index` of `count` computes at `layer` when the parts split its heads: a
/// swapped layer of a draw (its method costs about a sixth of a forward with 256 random
/// features; softmax, a fiftieth, is computed whole by each part, one step fewer). `None`
/// for a layer whose heads are not split.
fn heads_of(
    work: &Work,
    layer: usize,
    index: usize,
    count: usize,
    model: &LlamaModel,
) -> Option<Range<usize>> {
    let heads = model.config.heads;
    match work {
        Work::Draw { swap, .. } if swap.layers.contains(&layer) && (2..=heads).contains(&count) => {
            // Part 0 also joins the answer: it takes the smaller share of the nine heads.
            Some(part_rows(heads, count - 1 - index, count))
        }
        _ => None,
    }
}

/// A failure's sentence (a method's own reason as it gave it).
fn reason_of(error: LmError) -> String {
    match error {
        LmError::Replacement(reason) => reason,
        other => other.to_string(),
    }
}

/// What a split forward computes.
enum Work {
    /// The text under exact attention, its hidden states kept (by part 0).
    Exact,
    /// Draw `draw` of a swap.
    Draw {
        swap: Swap,
        registry: Option<RegistryContext>,
        draw: usize,
    },
}

/// A part's share of one forward under way.
pub struct SplitForward<'m> {
    model: &'m LlamaModel,
    ids: Vec<u32>,
    index: usize,
    count: usize,
    rows: Range<usize>,
    work: Work,
    /// Part 0 of the exact score: every layer's hidden states entering it, whole.
    states: Vec<Vec<f32>>,
    /// Part 0 of the exact score: its own rows' states entering the layer under way.
    own_entering: Vec<f32>,
    /// The next layer's step to run, and the model's layers.
    next: usize,
    layers: usize,
    part: Option<LmPart<'m>>,
    mine: Option<LayerShare>,
    /// At a layer whose heads are split: this part's heads' outputs of the others' rows.
    heads: Option<HeadShare>,
    failure: Option<String>,
}

impl<'m> SplitForward<'m> {
    /// Part `index` of `count` of draw `draw` of `job`'s swap; an error when the text cannot
    /// be scored or the job has no method.
    pub fn draw(
        model: &'m LlamaModel,
        job: &LmJob,
        draw: usize,
        part: (usize, usize),
    ) -> Result<Self, LmError> {
        let swap = swap_of(&job.config)
            .ok_or_else(|| LmError::Replacement("no method is chosen to swap in".into()))?;
        let registry = registry_of(&swap, &job.config, model.config.head_dim);
        let work = Work::Draw {
            swap,
            registry,
            draw,
        };
        Self::new(model, job, work, part)
    }

    /// Part `index` of `count` of `job`'s text under exact attention; an error when the text
    /// cannot be scored.
    pub fn exact(
        model: &'m LlamaModel,
        job: &LmJob,
        part: (usize, usize),
    ) -> Result<Self, LmError> {
        Self::new(model, job, Work::Exact, part)
    }

    fn new(
        model: &'m LlamaModel,
        job: &LmJob,
        work: Work,
        (index, count): (usize, usize),
    ) -> Result<Self, LmError> {
        let ids = lm_tokens(model, &job.text)?;
        Ok(Self {
            rows: part_rows(ids.len(), index, count),
            model,
            ids,
            index,
            count,
            work,
            states: Vec::new(),
            own_entering: Vec::new(),
            next: 0,
            layers: model.config.layers,
            part: None,
            mine: None,
            heads: None,
            failure: None,
        })
    }

    /// The text's tokens.
    pub fn tokens(&self) -> usize {
        self.ids.len()
    }

    /// The text's token ids.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// The model's configuration.
    pub fn config(&self) -> &'m LlamaConfig {
        &self.model.config
    }

    /// Whether the text is long enough to split ([`LM_SPLIT_MIN_TOKENS`]); when it is not,
    /// part 0 draws it alone and the others only say they helped.
    pub fn worth_splitting(&self) -> bool {
        self.ids.len() >= LM_SPLIT_MIN_TOKENS
    }

    /// The layer a draw starts at, and the hidden states entering it, from `exact` when it
    /// is the run of this text (its states before the first swapped layer are the draw's); the
    /// exact score starts from the embeddings.
    fn entering<'e>(&self, exact: Option<&'e ExactRun>) -> (usize, Option<&'e [f32]>) {
        let Work::Draw { swap, .. } = &self.work else {
            return (0, None);
        };
        let first_swapped = swap.layers.iter().copied().min().unwrap_or(0);
        exact
            .filter(|run| run.ids == self.ids && first_swapped > 0)
            .and_then(|run| run.states.get(first_swapped))
            .map_or((0, None), |states| (first_swapped, Some(states.as_slice())))
    }

    /// Step 0's message: part 0 says where the draw starts (with `exact`, its kept run, if it
    /// has one); the others send nothing.
    pub fn start_message(&self, exact: Option<&ExactRun>) -> LmPeerMessage {
        if self.index != 0 {
            return LmPeerMessage::Empty;
        }
        let width = self.model.config.width;
        let (from, states) = self.entering(exact);
        LmPeerMessage::Start {
            from,
            start: self.rows.end,
            entering: states.map(|s| Floats(s[self.rows.end * width..].to_vec())),
        }
    }

    /// Starts the part's forward from step 0's messages (`exact` as for
    /// [`SplitForward::start_message`]).
    pub fn begin(&mut self, others: Vec<LmPeerMessage>, exact: Option<&ExactRun>) {
        let width = self.model.config.width;
        let rows = self.rows.clone();
        let (from, entering) = if self.index == 0 {
            let (from, states) = self.entering(exact);
            (
                from,
                states.map(|s| s[rows.start * width..rows.end * width].to_vec()),
            )
        } else {
            let start = others.into_iter().find_map(|m| match m {
                LmPeerMessage::Start {
                    from,
                    start,
                    entering,
                } => Some((from, start, entering)),
                _ => None,
            });
            let Some((from, start, entering)) = start else {
                self.fail("part 0 did not say where the draw starts".into());
                return;
            };
            let own = entering.map(|states| {
                let at = |row: usize| row.saturating_sub(start) * width;
                states
                    .0
                    .get(at(rows.start)..at(rows.end))
                    .map(<[f32]>::to_vec)
            });
            match own {
                Some(None) => {
                    self.fail("the hidden states sent do not cover this part's rows".into());
                    return;
                }
                Some(Some(states)) => (from, Some(states)),
                None => (from, None),
            }
        };
        self.next = from;
        match self.model.part(&self.ids, rows, (from, entering)) {
            Ok(part) => self.part = Some(part),
            Err(error) => {
                self.fail(error.to_string());
            }
        }
    }

    /// Whether a layer's step is left.
    pub fn layers_left(&self) -> bool {
        self.next < self.layers
    }

    /// The next layer's message: the part's rows' share, or the failure.
    pub fn project(&mut self) -> LmPeerMessage {
        if let Some(reason) = &self.failure {
            return LmPeerMessage::Failed(reason.clone());
        }
        let Some(part) = self.part.as_mut() else {
            return self.fail("the part did not start".into());
        };
        // The exact score's part 0 keeps every layer's states: its own rows' here, the others'
        // as they come with their shares.
        let exact = matches!(self.work, Work::Exact);
        let entering = (exact && self.index > 0).then(|| Floats(part.states().to_vec()));
        if exact && self.index == 0 {
            self.own_entering = part.states().to_vec();
        }
        match part.project() {
            Ok(share) => {
                let message = LmPeerMessage::Layer {
                    start: share.rows.start,
                    end: share.rows.end,
                    q: Floats(share.q.clone()),
                    k: Floats(share.k.clone()),
                    v: Floats(share.v.clone()),
                    entering,
                };
                self.mine = Some(share);
                message
            }
            Err(error) => self.fail(error.to_string()),
        }
    }

    /// Finishes the layer projected last with the other parts' messages of its step.
    pub fn finish_layer(&mut self, others: Vec<LmPeerMessage>) {
        self.next += 1;
        let mut shares = Vec::with_capacity(others.len());
        let mut entering = vec![(self.rows.start, std::mem::take(&mut self.own_entering))];
        for message in others {
            match message {
                LmPeerMessage::Layer {
                    start,
                    end,
                    q,
                    k,
                    v,
                    entering: states,
                } => {
                    entering.extend(states.map(|s| (start, s.0)));
                    shares.push(LayerShare {
                        rows: start..end,
                        q: q.0,
                        k: k.0,
                        v: v.0,
                    });
                }
                other => self.not_a_share(other),
            }
        }
        let (Some(part), Some(mine)) = (self.part.as_mut(), self.mine.take()) else {
            return;
        };
        if self.failure.is_some() {
            return;
        }
        if matches!(self.work, Work::Exact) && self.index == 0 {
            entering.sort_by_key(|(start, _)| *start);
            let whole: Vec<f32> = entering.into_iter().flat_map(|(_, s)| s).collect();
            if whole.len() != self.ids.len() * self.model.config.width {
                self.failure = Some("the parts' hidden states do not cover the text".into());
                return;
            }
            self.states.push(whole);
        }
        let finished = match &self.work {
            Work::Exact => part.finish_layer(mine, shares, None),
            Work::Draw {
                swap,
                registry,
                draw,
            } => {
                let form = LinearForm::CausalChunked;
                let mut replace = replacement_of(swap, registry.as_ref(), *draw, form);
                let layer = self.next - 1;
                match heads_of(&self.work, layer, self.index, self.count, self.model) {
                    Some(heads) => part
                        .attend_heads(mine, shares, heads, Some(&mut replace))
                        .map(|share| self.heads = Some(share)),
                    None => part.finish_layer(mine, shares, Some(&mut replace)),
                }
            }
        };
        if let Err(error) = finished {
            self.failure = Some(reason_of(error));
        }
    }

    /// The message of the heads' step that follows the layer just finished when that layer's
    /// heads are split between the parts (a swapped layer of a draw): this part's heads'
    /// outputs of the others' rows, or the failure. `None`: the layer has no such step (every
    /// part knows which layers have one, so the parts' steps stay in line).
    pub fn heads_message(&mut self) -> Option<LmPeerMessage> {
        let layer = self.next.checked_sub(1)?;
        heads_of(&self.work, layer, self.index, self.count, self.model)?;
        if let Some(reason) = &self.failure {
            return Some(LmPeerMessage::Failed(reason.clone()));
        }
        Some(match self.heads.take() {
            Some(share) => LmPeerMessage::Heads {
                first: share.heads.start,
                last: share.heads.end,
                start: share.rows.start,
                end: share.rows.end,
                values: Floats(share.values),
            },
            None => self.fail("the layer's heads were not attended".into()),
        })
    }

    /// Finishes the layer whose heads were split with the other parts' messages of the
    /// heads' step.
    pub fn finish_heads(&mut self, others: Vec<LmPeerMessage>) {
        let mut shares = Vec::with_capacity(others.len());
        for message in others {
            match message {
                LmPeerMessage::Heads {
                    first,
                    last,
                    start,
                    end,
                    values,
                } => shares.push(HeadShare {
                    heads: first..last,
                    rows: start..end,
                    values: values.0,
                }),
                other => self.not_a_share(other),
            }
        }
        if self.failure.is_some() {
            return;
        }
        let Some(part) = self.part.as_mut() else {
            return;
        };
        if let Err(error) = part.finish_heads(shares) {
            self.failure = Some(reason_of(error));
        }
    }

    /// The last step's message: the part's rows' scores, or the failure.
    pub fn scores_message(&self) -> LmPeerMessage {
        if let Some(reason) = &self.failure {
            return LmPeerMessage::Failed(reason.clone());
        }
        let top = match self.work {
            Work::Draw { draw, .. } if draw > 0 => 0,
            _ => TOP_TOKENS,
        };
        match self.part.as_ref().map(|part| part.scores(top)) {
            Some(Ok(scores)) => LmPeerMessage::Scores {
                start: self.rows.start,
                losses: scores.losses,
                predictions: scores
                    .predictions
                    .into_iter()
                    .map(|p| (p.top, p.log_normaliser))
                    .collect(),
            },
            Some(Err(error)) => LmPeerMessage::Failed(error.to_string()),
            None => LmPeerMessage::Failed("the part did not start".into()),
        }
    }

    /// The text's scores from every part's last message (this part's own, `mine`, among
    /// them), or why the forward failed.
    fn joined(mine: LmPeerMessage, others: Vec<LmPeerMessage>) -> Result<LmScores, String> {
        let mut parts = Vec::new();
        for message in std::iter::once(mine).chain(others) {
            match message {
                LmPeerMessage::Scores {
                    start,
                    losses,
                    predictions,
                } => parts.push((
                    start,
                    LmScores {
                        losses,
                        predictions: predictions
                            .into_iter()
                            .map(|(top, log_normaliser)| Prediction {
                                top,
                                log_normaliser,
                            })
                            .collect(),
                    },
                )),
                LmPeerMessage::Failed(reason) => return Err(reason),
                _ => return Err("a part's message came at the wrong step".into()),
            }
        }
        Ok(join_scores(parts))
    }

    /// Part 0's answer to a draw, from every part's last message (its own, `mine`, among
    /// them), which took `forward_ms`.
    pub fn answer(
        &self,
        mine: LmPeerMessage,
        others: Vec<LmPeerMessage>,
        forward_ms: f64,
    ) -> Result<LmSwapDraw, LmError> {
        let Work::Draw { draw, .. } = self.work else {
            return Err(LmError::Replacement("not a draw".into()));
        };
        let scores = Self::joined(mine, others).map_err(LmError::Replacement);
        let mut answer = draw_of_scores(self.model, draw, scores, forward_ms)?;
        answer.workers = self.count;
        Ok(answer)
    }

    /// Part 0's exact run of the text (its scores, and its hidden states entering every
    /// layer, as [`LlamaModel::exact_run`] keeps them), from every part's last message.
    pub fn exact_run(
        self,
        mine: LmPeerMessage,
        others: Vec<LmPeerMessage>,
    ) -> Result<ExactRun, LmError> {
        if !matches!(self.work, Work::Exact) || self.index != 0 {
            return Err(LmError::Replacement("not part 0 of an exact score".into()));
        }
        let scores = Self::joined(mine, others).map_err(LmError::Replacement)?;
        if self.states.len() != self.layers {
            return Err(LmError::Replacement(format!(
                "{} layers' hidden states for a model of {}",
                self.states.len(),
                self.layers
            )));
        }
        Ok(ExactRun {
            rope: self.model.rope(self.ids.len()),
            ids: self.ids,
            scores,
            states: self.states,
        })
    }

    /// Records what a message that is not the step's share says: the other part's failure,
    /// or that it came at the wrong step.
    fn not_a_share(&mut self, message: LmPeerMessage) {
        let reason = match message {
            LmPeerMessage::Failed(reason) => reason,
            _ => "a part's message came at the wrong step".into(),
        };
        self.failure.get_or_insert(reason);
    }

    /// Records the first failure and returns its message.
    fn fail(&mut self, reason: String) -> LmPeerMessage {
        let reason = self.failure.get_or_insert(reason).clone();
        LmPeerMessage::Failed(reason)
    }
}
