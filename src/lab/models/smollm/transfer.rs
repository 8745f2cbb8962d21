//! Attention transfer in the decoder (Hedgehog, Zhang et al., ICLR 2024; the first stage of
//! LoLCATs, ICLR 2025): each query head of a chosen layer gets its own learned map pair, trained
//! under the causal mask to imitate that head's softmax rows on the lab's transfer text
//! (`numerics::attention::hedgehog`, [`HeadSample::causal`]), then swapped in for softmax in
//! its layer (`HedgehogMap::causal_attention`), and judged by the perplexity of the reader's
//! text, which the training never sees. Nothing else of the model is fine-tuned.
//!
//! The settings: n = 32 (64 features, the maps' rows start as the identity's plus the seed's
//! noise), Adam at 0.01, `lmsteps` steps, the first [`LM_TRANSFER_TOKENS`] tokens of
//! [`LM_TRANSFER_TEXT`]. Measured (tests/lm_transfer.rs): layer 0 alone swapped takes a
//! 107-token held-out text from perplexity 120 to 290–340 with the untrained maps, and 40
//! steps bring it back to 124–126.
//!
//! The page and the command line run the same code: [`LayerTraining`] one step at a time, its
//! maps narrowed to f32 ([`CompactMap`]) when done, and [`judge`] with those maps.

use crate::lab::config::ExperimentConfig;
use crate::lab::models::smollm::protocol::{TrainedLayer, TransferReport, TransferVerdict};
use crate::numerics::attention::hedgehog::{
    CompactMap, HeadSample, HedgehogMap, HedgehogSettings, Trainer, TrainingPoint,
};
use crate::numerics::bert::{HeadInputs, Replacement};
use crate::numerics::llama::{LlamaModel, LmError, Rope, Scratch};

/// The text every transfer trains on: written for this project, five unrelated paragraphs
/// (prose, a technical one, dates, numbers and units, science), so that the reader's text
/// is held out.
pub const LM_TRANSFER_TEXT: &str = "The old harbour town wakes before sunrise. Fishing boats \
return with the night's catch, gulls circle above the market, and the baker on the corner opens \
his shutters to the smell of fresh bread. By noon the lanes fill with visitors who climb to the \
lighthouse, where a retired sailor tells how the great storm of his youth tore the pier apart \
and how the town rebuilt it in a single summer.
A computer program is a list of instructions. The processor reads them one at a time, fetches \
the numbers they name from memory, adds or compares them, and writes the result back. Modern \
processors do many of these steps at once: while one instruction is being added, the next is \
already being read, and a third is waiting for its numbers to arrive from memory.
In the spring of 1887 the village council met to decide where the new school would stand. Some \
wanted it beside the church, where the ground was dry; others wanted it near the mill, where \
most of the children lived. After three evenings of argument they chose the mill, and the \
building, finished in 1889, still serves the village today.
To bake a simple loaf, mix 500 grams of flour with 10 grams of salt, 7 grams of yeast and 350 \
millilitres of warm water. Knead the dough for ten minutes until it is smooth, let it rise for \
an hour, shape it, let it rise again, and bake it at 220 degrees for about thirty-five minutes.";

/// Tokens of [`LM_TRANSFER_TEXT`] trained on.
pub const LM_TRANSFER_TOKENS: usize = 256;
/// The maps' n (2n features): below d = 64, so the seed's noise breaks the identity's ties.
pub const LM_TRANSFER_HALF_FEATURES: usize = 32;
/// Adam's learning rate (LoLCATs' attention transfer uses 0.01).
pub const LM_TRANSFER_LEARNING_RATE: f64 = 0.01;
/// The held-out KL is measured every this many steps (and at the last).
pub const LM_TRANSFER_EVAL_EVERY: usize = 5;

/// The Hedgehog settings of a configuration's transfer (`lmsteps`, the seed).
pub fn transfer_settings(config: &ExperimentConfig) -> HedgehogSettings {
    HedgehogSettings {
        half_features: LM_TRANSFER_HALF_FEATURES,
        steps: config.attention.lm_train_steps,
        learning_rate: LM_TRANSFER_LEARNING_RATE,
        seed: config.seed,
    }
}

/// The transfer text's tokens trained on.
pub fn transfer_ids(model: &LlamaModel) -> Result<Vec<u32>, LmError> {
    let mut ids = model.tokenizer.encode(LM_TRANSFER_TEXT)?;
    ids.truncate(LM_TRANSFER_TOKENS);
    Ok(ids)
}

/// `d^{-1/4}` in f64: a sample's queries and keys are scaled so that their dot product is the
/// head's `q·k/√d`.
fn quarter_scaled(x: &[f32], d: usize) -> Vec<f64> {
    let scale = (d as f64).powf(-0.25);
    x.iter().map(|&v| f64::from(v) * scale).collect()
}

fn layer_error(layer: usize, count: usize) -> LmError {
    LmError::Replacement(format!("layer {layer} is not one of the model's {count}"))
}

/// A text's hidden states entering each of its first layers, and its rotary table: what a
/// layer's samples start from, computed once for every layer trained on it.
pub struct TextStates {
    pub ids: Vec<u32>,
    /// `states[l]`: the `n × width` states entering layer `l`.
    pub states: Vec<Vec<f32>>,
    pub rope: Rope,
}

impl TextStates {
    /// The states of `ids` entering layers `0..=last` (layers `0..last` run, exactly).
    pub fn new(model: &LlamaModel, ids: &[u32], last: usize) -> Result<Self, LmError> {
        if last >= model.config.layers {
            return Err(layer_error(last, model.config.layers));
        }
        let mut x = model.embed(ids)?;
        let rope = model.rope(ids.len());
        let mut scratch = Scratch::default();
        let mut states = Vec::with_capacity(last + 1);
        for layer in 0..=last {
            states.push(x.clone());
            if layer < last {
                model.layer(layer, &mut x, ids.len(), &rope, &mut None, &mut scratch)?;
            }
        }
        Ok(Self {
            ids: ids.to_vec(),
            states,
            rope,
        })
    }

    /// The states as [`layer_samples`] reads them.
    pub fn view(&self) -> StatesView<'_> {
        (&self.states, &self.rope)
    }
}

/// A text's states entering its layers and its rotary table (a [`TextStates`]' or an
/// [`crate::numerics::llama::ExactRun`]'s).
pub type StatesView<'a> = (&'a [Vec<f32>], &'a Rope);

/// `layer`'s heads under exact attention, each as a causal sample, from the states entering it
/// (the layers before it are not run again).
pub fn layer_samples(
    model: &LlamaModel,
    (states, rope): StatesView<'_>,
    layer: usize,
) -> Result<Vec<HeadSample>, LmError> {
    let entering = states
        .get(layer)
        .ok_or_else(|| layer_error(layer, states.len().min(model.config.layers)))?;
    let n = entering.len() / model.config.width;
    let mut samples: Vec<Option<Result<HeadSample, String>>> = vec![None; model.config.heads];
    let mut capture = |h: &HeadInputs| -> Option<Result<Vec<f32>, String>> {
        let sample = HeadSample::new(
            h.len,
            h.dim,
            quarter_scaled(h.q, h.dim),
            quarter_scaled(h.k, h.dim),
        )
        .map(HeadSample::causal)
        .map_err(|e| e.to_string());
        if let Some(slot) = samples.get_mut(h.head) {
            *slot = Some(sample);
        }
        None
    };
    let mut x = entering.clone();
    let mut replace: Option<Replacement> = Some(&mut capture);
    model.layer(
        layer,
        &mut x,
        n,
        rope,
        &mut replace,
        &mut Scratch::default(),
    )?;
    samples
        .into_iter()
        .map(|s| {
            s.unwrap_or_else(|| Err("a head was not seen".into()))
                .map_err(LmError::Replacement)
        })
        .collect()
}

fn hedgehog_error(error: impl std::fmt::Display) -> LmError {
    LmError::Replacement(error.to_string())
}

/// One layer's training, taken one Adam step at a time (the worker steps it between its
/// messages; the command line runs it to the end).
pub struct LayerTraining {
    layer: usize,
    trainer: Trainer,
    curve: Vec<TrainingPoint>,
}

impl LayerTraining {
    /// `layer`'s heads on the training text as samples, evaluated on the held-out text, each
    /// from its states entering the layer.
    pub fn new(
        model: &LlamaModel,
        (training, held_out): (StatesView<'_>, StatesView<'_>),
        layer: usize,
        settings: &HedgehogSettings,
    ) -> Result<Self, LmError> {
        let train = layer_samples(model, training, layer)?;
        let eval = layer_samples(model, held_out, layer)?;
        let heads: Vec<usize> = (0..train.len()).collect();
        let samples = (train.as_slice(), eval.as_slice());
        let trainer = Trainer::new(settings, samples, &heads, LM_TRANSFER_EVAL_EVERY)
            .map_err(hedgehog_error)?;
        Ok(Self {
            layer,
            trainer,
            curve: Vec::new(),
        })
    }

    pub fn layer(&self) -> usize {
        self.layer
    }

    pub fn is_done(&self) -> bool {
        self.trainer.is_done()
    }

    /// The next step's point, `None` once done.
    pub fn step(&mut self) -> Result<Option<TrainingPoint>, LmError> {
        let point = self.trainer.step().map_err(hedgehog_error)?;
        self.curve.extend(point);
        Ok(point)
    }

    /// The layer's maps as they are, narrowed to f32, with the curve so far; `ms` its time.
    pub fn finish(self, ms: f64) -> TrainedLayer {
        TrainedLayer {
            layer: self.layer,
            curve: self.curve,
            maps: self
                .trainer
                .finish()
                .maps
                .iter()
                .map(HedgehogMap::to_compact)
                .collect(),
            ms,
        }
    }
}

/// The untrained maps of a layer's heads (the training's starting point, the same seed),
/// narrowed as trained ones are: the zero-shot swap transfer is measured against.
pub fn untrained_maps(
    model: &LlamaModel,
    settings: &HedgehogSettings,
) -> Result<Vec<CompactMap>, LmError> {
    (0..model.config.heads)
        .map(|head| {
            HedgehogMap::initial(model.config.head_dim, settings, head as u64)
                .map(|map| map.to_compact())
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(hedgehog_error)
}

/// The perplexity of `ids` with each of `layers`' maps (one per query head) in place of softmax
/// in its layer (causal), softmax elsewhere.
pub fn perplexity_with(
    model: &LlamaModel,
    ids: &[u32],
    layers: &[(usize, &[CompactMap])],
) -> Result<f64, LmError> {
    let mut maps: Vec<Option<Vec<HedgehogMap>>> = vec![None; model.config.layers];
    for &(layer, compact) in layers {
        let slot = maps
            .get_mut(layer)
            .ok_or_else(|| layer_error(layer, model.config.layers))?;
        if compact.len() != model.config.heads {
            return Err(LmError::Replacement(format!(
                "layer {layer} has {} maps for the model's {} heads",
                compact.len(),
                model.config.heads
            )));
        }
        let widened = compact.iter().map(HedgehogMap::from_compact);
        *slot = Some(widened.collect::<Result<_, _>>().map_err(hedgehog_error)?);
    }
    let mut swap = |h: &HeadInputs| -> Option<Result<Vec<f32>, String>> {
        let map = maps.get(h.layer)?.as_ref()?.get(h.head)?;
        let v: Vec<f64> = h.v.iter().map(|&x| f64::from(x)).collect();
        let (q, k) = (quarter_scaled(h.q, h.dim), quarter_scaled(h.k, h.dim));
        Some(
            map.causal_attention(&q, &k, &v, h.len, h.dim, h.dim)
                .map(|out| out.iter().map(|&x| x as f32).collect())
                .map_err(|e| format!("layer {} head {}: {e}", h.layer, h.head)),
        )
    };
    let replace: Replacement = &mut swap;
    let scores = model.forward(ids, 0, Some(replace))?;
    scores.perplexity().ok_or(LmError::OneToken)
}

/// The reader's text `ids` exact, with `trained`'s layers zero-shot, and with their trained
/// maps; `now` is a clock in milliseconds.
pub fn judge(
    model: &LlamaModel,
    ids: &[u32],
    settings: &HedgehogSettings,
    trained: &[TrainedLayer],
    now: &dyn Fn() -> f64,
) -> Result<TransferVerdict, LmError> {
    let start = now();
    let exact = model
        .forward(ids, 0, None)?
        .perplexity()
        .ok_or(LmError::OneToken)?;
    let untrained = untrained_maps(model, settings)?;
    let zero_shot: Vec<(usize, &[CompactMap])> = trained
        .iter()
        .map(|t| (t.layer, untrained.as_slice()))
        .collect();
    let transferred: Vec<(usize, &[CompactMap])> = trained
        .iter()
        .map(|t| (t.layer, t.maps.as_slice()))
        .collect();
    let mut layers: Vec<usize> = trained.iter().map(|t| t.layer).collect();
    layers.sort_unstable();
    Ok(TransferVerdict {
        exact,
        zero_shot: perplexity_with(model, ids, &zero_shot)?,
        transferred: perplexity_with(model, ids, &transferred)?,
        layers,
        ms: now() - start,
    })
}

/// The whole transfer of `config`'s layers (`lmtrain`) judged on `ids`, as the page does it:
/// each layer trained to its end on the transfer text (evaluated on `ids`), then judged. Each
/// text's states are computed once, up to the deepest layer trained.
/// `on_point` sees each layer's points as they come.
pub fn transfer_report(
    model: &LlamaModel,
    config: &ExperimentConfig,
    ids: &[u32],
    now: &dyn Fn() -> f64,
    on_point: &mut dyn FnMut(usize, &TrainingPoint),
) -> Result<TransferReport, LmError> {
    let settings = transfer_settings(config);
    let last = config.attention.lm_train.iter().copied().max().unwrap_or(0);
    let training = TextStates::new(model, &transfer_ids(model)?, last)?;
    let held_out = TextStates::new(model, ids, last)?;
    let mut layers = Vec::new();
    for &layer in &config.attention.lm_train {
        let start = now();
        let texts = (training.view(), held_out.view());
        let mut run = LayerTraining::new(model, texts, layer, &settings)?;
        while let Some(point) = run.step()? {
            on_point(layer, &point);
        }
        layers.push(run.finish(now() - start));
    }
    let verdict = judge(model, ids, &settings, &layers, now)?;
    Ok(TransferReport {
        steps: settings.steps,
        seed: settings.seed,
        training_tokens: training.ids.len(),
        held_out_tokens: ids.len(),
        layers,
        verdict,
    })
}
