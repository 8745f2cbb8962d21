//! What replaces softmax in one head of a real model, shared by the encoder (MiniLM,
//! bidirectional) and the decoder (SmolLM2, causal): the swap's method and layers ([`Swap`]),
//! the registry method's settings prepared once per forward ([`RegistryContext`]), and the
//! replacement a forward calls for every head ([`replacement_of`]).
//!
//! A method sees each head as the attention view sees a real head: the raw projections with the
//! model's scaling `q/dh^{1/4}`, `k/dh^{1/4}`, the configuration's settings (m, coupling,
//! degree, landmarks, window, top-k, …), and a stream of its own per (draw, layer, head).
//! Where the method's map has a batched f32 form it runs in the long-sequence f32 kernels (the
//! same ω; figures within about 1e-6 of its f64 draw), bidirectional or causal; randomized
//! attention takes its f64 draw's samples with its products in f32; the others (Nyström, the
//! window, sparse) run their f64 draw. All but the maps are bidirectional only.

use std::sync::Arc;

use crate::lab::attention::methods::{
    Prepared, batched_outputs, draw_rng, lln_constants, method_settings, prepare_with, run_with,
};
use crate::lab::config::ExperimentConfig;
use crate::lab::models::learned_map::LearnedMaps;
use crate::numerics::attention::AttentionError;
use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::lln::LlnConstants;
use crate::numerics::attention::long::{FeatureMap32, LinearForm};
use crate::numerics::attention::method::MethodSettings;
use crate::numerics::attention::methods::MethodId;
use crate::numerics::attention::methods::randomized::RANDOMIZED_INFO;
use crate::numerics::attention::randomized::{AttentionShape, randomized_attention_f32};
use crate::numerics::bert::HeadInputs;
use crate::numerics::rng::StreamRng;

/// What replaces softmax: a method of the registry, or the Hedgehog maps learned for every head.
#[derive(Clone, Debug, PartialEq)]
pub enum SwapMethod {
    Registry(MethodId),
    Learned(Arc<LearnedMaps>),
}

impl SwapMethod {
    pub fn id(&self) -> &'static str {
        match self {
            SwapMethod::Registry(m) => m.id(),
            SwapMethod::Learned(_) => crate::lab::models::protocol::HEDGEHOG,
        }
    }

    pub fn label(&self) -> &'static str {
        match self {
            SwapMethod::Registry(m) => m.label(),
            SwapMethod::Learned(_) => "Hedgehog (learned map)",
        }
    }

    pub fn is_random(&self) -> bool {
        matches!(self, SwapMethod::Registry(m) if m.is_random())
    }
}

/// What is swapped in, where, and how often it is drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct Swap {
    pub method: SwapMethod,
    /// The layers whose every head runs the method (the others keep softmax).
    pub layers: Vec<usize>,
    /// Independent draws of a random method (a deterministic one is run once).
    pub draws: usize,
}

impl Swap {
    /// The forwards the swap runs: `draws` (at least one) of a random method, one of a
    /// deterministic one.
    pub fn draws_run(&self) -> usize {
        if self.method.is_random() {
            self.draws.max(1)
        } else {
            1
        }
    }
}

/// What a registry method reads, prepared once per swap rather than once per head: its
/// settings and LLN's constants (for the heads' dimension).
pub struct RegistryContext {
    method: MethodId,
    settings: MethodSettings,
    seed: u64,
    lln: Result<Option<LlnConstants>, String>,
}

impl RegistryContext {
    fn new(method: MethodId, config: &ExperimentConfig, dim: usize) -> Self {
        let mut one = config.clone();
        one.attention.methods = vec![method];
        Self {
            method,
            settings: method_settings(config),
            seed: config.seed,
            lln: lln_constants(&one, dim).map_err(|e| e.to_string()),
        }
    }
}

/// The method's output for one head, or why it has none.
fn approximate(
    swap: &Swap,
    registry: Option<&RegistryContext>,
    (draw, form): (usize, LinearForm),
    head: &HeadInputs,
) -> Result<Vec<f32>, String> {
    let scale = (head.dim as f64).powf(-0.25);
    let widen = |v: &[f32], s: f64| v.iter().map(|x| f64::from(*x) * s).collect::<Vec<f64>>();
    let describe = |e: String| format!("layer {} head {}: {e}", head.layer, head.head);
    let (q, k) = (widen(head.q, scale), widen(head.k, scale));
    let output = match (&swap.method, registry) {
        (SwapMethod::Registry(_), Some(context)) => {
            registry_output(context, (draw, form), head, q, k).map_err(describe)?
        }
        (SwapMethod::Registry(m), None) => {
            return Err(describe(format!("{}: no settings prepared", m.id())));
        }
        (SwapMethod::Learned(_), _) if form.is_causal() => {
            return Err(describe(
                "the learned Hedgehog maps are trained for bidirectional attention; causal \
                 maps are not trained yet"
                    .into(),
            ));
        }
        (SwapMethod::Learned(maps), _) => maps
            .attention(
                head.layer,
                head.head,
                &q,
                &k,
                &widen(head.v, 1.0),
                head.len,
                head.dim,
            )
            .map_err(describe)?
            .iter()
            .map(|x| *x as f32)
            .collect(),
    };
    if let Some(row) = output
        .chunks_exact(head.dim)
        .position(|r| r.iter().any(|x| !x.is_finite()))
    {
        return Err(format!(
            "layer {} head {}: row {row} of {} has no usable normaliser (the estimated sum of \
             its weights is ≤ 0 or not finite), so the forward cannot go on",
            head.layer,
            head.head,
            swap.method.id()
        ));
    }
    Ok(output)
}

/// A registry method's output for one head (queries and keys already scaled by `dh^{-1/4}`).
/// A method with a batched f32 form of its map (the random features, Taylor, LLN, `elu + 1`)
/// runs in the long-sequence kernels ([`linear_attention_f32`]) with the same ω the f64 draw
/// would take (the same stream, drawn the same way); randomized attention takes its f64 draw's
/// samples and does its products in f32 ([`randomized_attention_f32`]); the others (a
/// polynomial map over its feature budget, Nyström, the window, sparse) run their f64 draw.
fn registry_output(
    context: &RegistryContext,
    (draw, form): (usize, LinearForm),
    head: &HeadInputs,
    q: Vec<f64>,
    k: Vec<f64>,
) -> Result<Vec<f32>, String> {
    let text = |e: AttentionError| e.to_string();
    let (method, settings) = (context.method, &context.settings);
    let (data, prepared, mut rng) = fit_head(context, draw, head, q, k)?;
    if let Some(Ok(map)) = prepared.batched_map(head.dim, settings, &mut rng) {
        return batched_outputs(&map, &data, head.v, form)
            .ok_or_else(|| format!("{}: shapes do not match", method.id()));
    }
    if form.is_causal() {
        return Err(format!(
            "{} has no causal form here (only methods with a feature map do: random features, \
             Taylor, LLN, elu + 1)",
            method.id()
        ));
    }
    if method.id() == RANDOMIZED_INFO.id {
        // The same draws as the f64 method's, its products in f32 (`randomized_attention_f32`).
        let shape = AttentionShape {
            len: head.len,
            d: head.dim,
            dv: head.dim,
        };
        let mut rng = draw_rng(context.seed, method, head_stream(draw, head));
        return randomized_attention_f32(
            &data.q,
            &data.k,
            head.v,
            shape,
            settings.ra_samples,
            &mut rng,
        )
        .map_err(|e| format!("{}: {e}", method.id()));
    }
    let run = run_with(
        method,
        &prepared,
        &data,
        settings,
        context.seed,
        head_stream(draw, head),
        &[],
    )
    .map_err(text)?;
    Ok(run.attention.output.iter().map(|x| *x as f32).collect())
}

/// A stream per (draw, layer, head): 72 heads share no draw.
fn head_stream(draw: usize, head: &HeadInputs) -> u64 {
    (draw * 1_000 + head.layer * 100 + head.head) as u64
}

/// The method fitted on one head (queries and keys already scaled by `dh^{-1/4}`), with the
/// generator of its draw.
fn fit_head(
    context: &RegistryContext,
    draw: usize,
    head: &HeadInputs,
    q: Vec<f64>,
    k: Vec<f64>,
) -> Result<(AttentionData, Prepared, StreamRng), String> {
    let text = |e: AttentionError| e.to_string();
    let v = head.v.iter().map(|x| f64::from(*x)).collect();
    let data = AttentionData::new(head.len, head.dim, head.dim, q, k, v).map_err(text)?;
    let lln = context.lln.clone()?;
    let prepared =
        prepare_with(context.method, &data, &context.settings, lln.as_ref()).map_err(text)?;
    let rng = draw_rng(context.seed, context.method, head_stream(draw, head));
    Ok((data, prepared, rng))
}

/// The f32 feature map draw `draw` of the registry method gives one head, fitted on that
/// head's inputs (rotated, unscaled): what a linear layer decodes with as a recurrent network
/// (`numerics::llama::Decoder`), the same ω and fit as the swap's forward on those inputs.
/// Refused for a method with no feature map (randomized attention, Nyström, the window,
/// sparse, a polynomial map over its budget).
pub fn decoding_map(
    context: &RegistryContext,
    draw: usize,
    head: &HeadInputs,
) -> Result<FeatureMap32, String> {
    let scale = (head.dim as f64).powf(-0.25);
    let widen = |v: &[f32]| {
        v.iter()
            .map(|x| f64::from(*x) * scale)
            .collect::<Vec<f64>>()
    };
    let describe = |e: String| format!("layer {} head {}: {e}", head.layer, head.head);
    let (_, prepared, mut rng) =
        fit_head(context, draw, head, widen(head.q), widen(head.k)).map_err(describe)?;
    match prepared.batched_map(head.dim, &context.settings, &mut rng) {
        Some(Ok(map)) => Ok(map),
        Some(Err(e)) => Err(describe(e.to_string())),
        None => Err(format!(
            "{} has no recurrent form (only methods with a feature map decode as a recurrent \
             network: random features, Taylor, LLN, elu + 1)",
            context.method.id()
        )),
    }
}

/// The settings a swap's registry method reads, prepared once per forward (or batch).
pub fn registry_of(
    swap: &Swap,
    config: &ExperimentConfig,
    head_dim: usize,
) -> Option<RegistryContext> {
    match &swap.method {
        SwapMethod::Registry(method) => Some(RegistryContext::new(*method, config, head_dim)),
        SwapMethod::Learned(_) => None,
    }
}

/// What replaces softmax in a forward with `swap`, draw `draw`: the method in the swapped
/// layers' heads, softmax elsewhere; `form` says whether the model's attention is
/// bidirectional (the encoder) or causal (the decoder).
pub fn replacement_of<'a>(
    swap: &'a Swap,
    registry: Option<&'a RegistryContext>,
    draw: usize,
    form: LinearForm,
) -> impl FnMut(&HeadInputs) -> Option<Result<Vec<f32>, String>> + 'a {
    move |head: &HeadInputs| {
        swap.layers
            .contains(&head.layer)
            .then(|| approximate(swap, registry, (draw, form), head))
    }
}
