//! The per-layer chart's computation: the perplexity of a text when each layer alone runs the
//! method (the others softmax), over the swap's draws of a random method, one draw at a time
//! ([`LayerSweep::step`]) so that a worker answers its other messages between steps and a new
//! text can stop it.
//!
//! Every bar starts from the exact hidden states entering its layer ([`ExactRun`]), so layer
//! `l`'s bar costs `30 − l` layers and the head, and is bit for bit the forward swapped in that
//! layer alone. The deepest layers go first: they cost least, so the first bars come within a
//! fraction of one forward.

use super::protocol::{LmLayerBar, LmLayerReport, Share};
use crate::lab::config::ExperimentConfig;
use crate::lab::models::head_swap::{
    RegistryContext, Swap, SwapMethod, registry_of, replacement_of,
};
use crate::lab::models::protocol::Spread;
use crate::numerics::attention::long::LinearForm;
use crate::numerics::llama::{ExactRun, LlamaModel, LmError};

/// The chart of one method over some layers, part way.
pub struct LayerSweep {
    /// The method and its draws; `layers` are the bars still to come, next last.
    swap: Swap,
    registry: Option<RegistryContext>,
    draws: usize,
    /// The draw of the next bar's layer that comes next, and what its earlier draws gave.
    draw: usize,
    perplexities: Vec<f64>,
    failure: Option<String>,
    bars: Vec<LmLayerBar>,
}

impl LayerSweep {
    /// The bars of `swap.layers` in `share` (each once, deepest first) with `swap.draws` draws
    /// of a random method (one of a deterministic one); the method's settings from `config`.
    pub fn new(model: &LlamaModel, config: &ExperimentConfig, swap: &Swap, share: Share) -> Self {
        let mut layers = swap.layers.clone();
        layers.sort_unstable_by(|a, b| b.cmp(a));
        layers.dedup();
        let mut layers: Vec<usize> = layers
            .into_iter()
            .enumerate()
            .filter(|&(position, _)| share.takes(position))
            .map(|(_, layer)| layer)
            .collect();
        layers.reverse();
        let draws = if swap.method.is_random() {
            swap.draws.max(1)
        } else {
            1
        };
        Self {
            registry: registry_of(swap, config, model.config.head_dim),
            swap: Swap {
                layers,
                ..swap.clone()
            },
            draws,
            draw: 0,
            perplexities: Vec::new(),
            failure: None,
            bars: Vec::new(),
        }
    }

    /// Whether every bar is in.
    pub fn is_done(&self) -> bool {
        self.swap.layers.is_empty()
    }

    /// The bars so far, in the order they came.
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
        let Some(&layer) = self.swap.layers.last() else {
            return Ok(None);
        };
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
        match model.swap_one(run, layer, &mut replace) {
            Ok(scores) => self
                .perplexities
                .push(scores.perplexity().unwrap_or(f64::NAN)),
            Err(LmError::Replacement(reason)) => {
                self.failure.get_or_insert(reason);
            }
            Err(other) => return Err(other),
        }
        self.draw += 1;
        let complete = self.draw == self.draws;
        let bar = LmLayerBar {
            layer,
            complete,
            failed_draws: self.draw - self.perplexities.len(),
            perplexity: Spread::of(&self.perplexities),
            failure: self.failure.clone(),
        };
        if complete {
            self.swap.layers.pop();
            self.draw = 0;
            self.perplexities.clear();
            self.failure = None;
            self.bars.push(bar.clone());
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
