//! Attention transfer in one layer of the decoder (Hedgehog, Zhang et al., ICLR 2024; the first
//! stage of LoLCATs, ICLR 2025): each of the layer's query heads gets its own learned map pair,
//! trained under the causal mask to imitate that head's softmax rows on a training text
//! (`numerics::attention::hedgehog`, [`HeadSample::causal`]), then swapped in for softmax in
//! that layer alone (`HedgehogMap::causal_attention`), and judged by the perplexity of another
//! text. Nothing else of the model is fine-tuned.

use crate::numerics::attention::hedgehog::{
    HeadSample, HedgehogMap, HedgehogSettings, TrainingPoint, train,
};
use crate::numerics::bert::{HeadInputs, Replacement};
use crate::numerics::llama::{LlamaModel, LmError};

/// The maps of one layer, one per query head, and their training curve.
pub struct LayerTransfer {
    pub layer: usize,
    pub maps: Vec<HedgehogMap>,
    pub curve: Vec<TrainingPoint>,
}

/// `d^{-1/4}` in f64: a sample's queries and keys are scaled so that their dot product is the
/// head's `q·k/√d`.
fn quarter_scaled(x: &[f32], d: usize) -> Vec<f64> {
    let scale = (d as f64).powf(-0.25);
    x.iter().map(|&v| f64::from(v) * scale).collect()
}

/// `layer`'s heads on `ids` under exact attention, each as a causal sample.
pub fn layer_samples(
    model: &LlamaModel,
    ids: &[u32],
    layer: usize,
) -> Result<Vec<HeadSample>, LmError> {
    if layer >= model.config.layers {
        return Err(LmError::Replacement(format!(
            "layer {layer} is not one of the model's {}",
            model.config.layers
        )));
    }
    let mut samples: Vec<Option<Result<HeadSample, String>>> = vec![None; model.config.heads];
    let mut capture = |h: &HeadInputs| -> Option<Result<Vec<f32>, String>> {
        if h.layer == layer {
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
        }
        None
    };
    model.forward(ids, 0, Some(&mut capture))?;
    samples
        .into_iter()
        .map(|s| {
            s.unwrap_or_else(|| Err("a head was not seen".into()))
                .map_err(LmError::Replacement)
        })
        .collect()
}

/// Trains `layer`'s maps on `training` (ids) with `settings`, evaluating on `held_out` every
/// `eval_every` steps; `on_point` sees the curve as it grows.
pub fn train_layer(
    model: &LlamaModel,
    (training, held_out): (&[u32], &[u32]),
    layer: usize,
    (settings, eval_every): (&HedgehogSettings, usize),
    on_point: &mut dyn FnMut(&TrainingPoint),
) -> Result<LayerTransfer, LmError> {
    let train_samples = layer_samples(model, training, layer)?;
    let eval_samples = layer_samples(model, held_out, layer)?;
    let mut curve = Vec::new();
    let maps = train(
        settings,
        &train_samples,
        &eval_samples,
        eval_every,
        &mut |p| {
            curve.push(*p);
            on_point(p);
        },
    )
    .map_err(|e| LmError::Replacement(e.to_string()))?;
    Ok(LayerTransfer { layer, maps, curve })
}

impl LayerTransfer {
    /// The layer's untrained maps (the training's starting point, the same seed): the
    /// zero-shot swap that transfer is measured against.
    pub fn untrained(
        model: &LlamaModel,
        layer: usize,
        settings: &HedgehogSettings,
    ) -> Result<Self, LmError> {
        let maps = (0..model.config.heads)
            .map(|head| HedgehogMap::initial(model.config.head_dim, settings, head as u64))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| LmError::Replacement(e.to_string()))?;
        Ok(Self {
            layer,
            maps,
            curve: Vec::new(),
        })
    }

    /// The perplexity of `ids` with these maps in place of softmax in their layer (causal).
    pub fn perplexity(&self, model: &LlamaModel, ids: &[u32]) -> Result<f64, LmError> {
        let mut swap = |h: &HeadInputs| -> Option<Result<Vec<f32>, String>> {
            if h.layer != self.layer {
                return None;
            }
            let map = self.maps.get(h.head)?;
            let v: Vec<f64> = h.v.iter().map(|&x| f64::from(x)).collect();
            let (q, k) = (quarter_scaled(h.q, h.dim), quarter_scaled(h.k, h.dim));
            Some(
                map.causal_attention(&q, &k, &v, h.len, h.dim, h.dim)
                    .map(|out| out.iter().map(|&x| x as f32).collect())
                    .map_err(|e| e.to_string()),
            )
        };
        let replace: Replacement = &mut swap;
        let scores = model.forward(ids, 0, Some(replace))?;
        scores.perplexity().ok_or(LmError::OneToken)
    }
}
