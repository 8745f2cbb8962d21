//! The per-layer chart's computation: the perplexity of a text when each layer alone runs the
//! method (the others softmax), over the swap's draws of a random method, one draw of one bar
//! at a time ([`LayerSweep::step`]) so that a worker answers its other messages between steps
//! and a new text can stop it.
//!
//! Every bar starts from the exact hidden states entering its layer ([`ExactRun`]), so layer
//! `l`'s bar costs `30 − l` layers and the head, and is bit for bit the forward swapped in that
//! layer alone. The deepest layers go first: they cost least, so the first bars come within a
//! fraction of one forward. Draws go round by round: every bar's first draw, then every bar's
//! second, so the whole chart is on screen after a third of the work of three draws and the
//! later rounds refine each bar's mean and spread.

use super::protocol::{LmLayerBar, LmLayerReport, Share};
use crate::lab::config::ExperimentConfig;
use crate::lab::models::head_swap::{
    RegistryContext, Swap, SwapMethod, registry_of, replacement_of,
};
use crate::lab::models::protocol::Spread;
use crate::numerics::attention::long::LinearForm;
use crate::numerics::llama::{ExactRun, LlamaModel, LmError};

/// What one bar's draws have given so far.
#[derive(Default)]
struct BarDraws {
    perplexities: Vec<f64>,
    failure: Option<String>,
}

/// The chart of one method over some layers, part way.
pub struct LayerSweep {
    /// The method and its draws; `layers` are this share's bars, deepest first.
    swap: Swap,
    registry: Option<RegistryContext>,
    draws: usize,
    /// The round (draw) under way and the position in `swap.layers` of the next bar.
    draw: usize,
    position: usize,
    /// Per bar (as `swap.layers`), its draws so far.
    bar_draws: Vec<BarDraws>,
    /// The complete bars, in the order they came.
    bars: Vec<LmLayerBar>,
}

impl LayerSweep {
    /// The bars of `swap.layers` in `share` (each once, deepest first) with `swap.draws` draws
    /// of a random method (one of a deterministic one); the method's settings from `config`.
    pub fn new(model: &LlamaModel, config: &ExperimentConfig, swap: &Swap, share: Share) -> Self {
        let mut layers = swap.layers.clone();
        layers.sort_unstable_by(|a, b| b.cmp(a));
        layers.dedup();
        let layers: Vec<usize> = layers
            .into_iter()
            .enumerate()
            .filter(|&(position, _)| share.takes(position))
            .map(|(_, layer)| layer)
            .collect();
        let draws = swap.draws_run();
        Self {
            registry: registry_of(swap, config, model.config.head_dim),
            bar_draws: layers.iter().map(|_| BarDraws::default()).collect(),
            swap: Swap {
                layers,
                ..swap.clone()
            },
            draws,
            draw: 0,
            position: 0,
            bars: Vec::new(),
        }
    }

    /// Whether every bar is in.
    pub fn is_done(&self) -> bool {
        self.swap.layers.is_empty() || self.draw >= self.draws
    }

    /// The complete bars so far, in the order they came.
    pub fn bars(&self) -> &[LmLayerBar] {
        &self.bars
    }

    /// One draw of the next bar on `run` (the text's exact forward), and the bar as its draws so
    /// far make it (`complete` once its last draw is in; `None` when every bar is in). A draw
    /// whose estimated normaliser is not positive is counted as failed with its reason; other
    /// errors end the chart.
    pub fn step(
        &mut self,
        model: &LlamaModel,
        run: &ExactRun,
    ) -> Result<Option<LmLayerBar>, LmError> {
        if self.is_done() {
            return Ok(None);
        }
        let layer = self.swap.layers[self.position];
        let one = Swap {
            method: self.swap.method.clone(),
            layers: vec![layer],
            draws: self.draws,
        };
        let mut replace = replacement_of(
            &one,
            self.registry.as_ref(),
            self.draw,
            LinearForm::CausalChunked,
        );
        let so_far = &mut self.bar_draws[self.position];
        match model.swap_one(run, layer, &mut replace) {
            Ok(scores) => so_far
                .perplexities
                .push(scores.perplexity().unwrap_or(f64::NAN)),
            Err(LmError::Replacement(reason)) => {
                so_far.failure.get_or_insert(reason);
            }
            Err(other) => return Err(other),
        }
        let complete = self.draw + 1 == self.draws;
        let bar = LmLayerBar {
            layer,
            complete,
            failed_draws: self.draw + 1 - so_far.perplexities.len(),
            perplexity: Spread::of(&so_far.perplexities),
            failure: so_far.failure.clone(),
        };
        if complete {
            self.bars.push(bar.clone());
        }
        self.position += 1;
        if self.position == self.swap.layers.len() {
            self.position = 0;
            self.draw += 1;
        }
        Ok(Some(bar))
    }

    /// The chart once every bar is in (the bars in the order they came).
    pub fn into_report(self, run: &ExactRun) -> LmLayerReport {
        LmLayerReport {
            method: self.swap.method.id().to_string(),
            label: self.swap.method.label().to_string(),
            draws: self.draws,
            exact_perplexity: run.scores.perplexity().unwrap_or(f64::NAN),
            bars: self.bars,
        }
    }
}

/// The chart the page draws for a configuration: its method in each of the model's layers
/// alone (whatever layers its own swap uses), `swapdraws` draws of a random one.
pub fn chart_swap(config: &ExperimentConfig, layers: usize) -> Option<Swap> {
    let a = &config.attention;
    a.lm_method.map(|method| Swap {
        method: SwapMethod::Registry(method),
        layers: (0..layers).collect(),
        draws: a.swap_draws,
    })
}
