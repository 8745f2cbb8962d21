//! What the forward returns and keeps ([`Forward`], [`Keep`], [`LayerStates`]) and what a
//! replacement of a head's attention sees and gives ([`HeadInputs`], [`Replacement`]): shared by
//! the whole forward (`forward.rs`) and its parts (`part.rs`).

/// What the forward returns.
#[derive(Clone, Debug, PartialEq)]
pub struct Forward {
    /// Tokens L.
    pub len: usize,
    /// The last layer's hidden states, `L × hidden`.
    pub hidden: Vec<f32>,
    /// Mean-pooled and L2-normalised sentence embedding (`hidden` values).
    pub embedding: Vec<f32>,
    /// When asked for: every head's raw projections `x Wᵀ + b` of its layer's input (before the
    /// model's `1/√dh` scaling), ordered `[layer][head][q, k, v][token][dim]`, the layout of the
    /// stored heads' asset.
    pub qkv: Option<Vec<f32>>,
    /// When asked for: per layer, the heads' attention outputs side by side (`L × hidden`, before
    /// the output projection) and the layer's output hidden states (`L × hidden`).
    pub layers: Option<Vec<LayerStates>>,
}

/// One layer's attention outputs and output hidden states.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerStates {
    pub attention: Vec<f32>,
    pub hidden: Vec<f32>,
}

/// What a forward keeps besides the last hidden states and the embedding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Keep {
    /// Every head's raw Q, K, V ([`Forward::qkv`]).
    pub qkv: bool,
    /// Every layer's attention outputs and hidden states ([`Forward::layers`]).
    pub layers: bool,
}

/// One head's inputs in one layer: its raw projections (before the `1/√dh` scaling), each
/// `len × dim`, row `i` token `i`.
#[derive(Clone, Copy, Debug)]
pub struct HeadInputs<'a> {
    pub layer: usize,
    pub head: usize,
    pub len: usize,
    pub dim: usize,
    pub q: &'a [f32],
    pub k: &'a [f32],
    pub v: &'a [f32],
}

/// What replaces a head's softmax attention: `None` keeps softmax, `Some(Ok(out))` gives the
/// head's output (`len × dim`), `Some(Err(reason))` stops the forward with that reason.
pub type Replacement<'a> = &'a mut dyn FnMut(&HeadInputs) -> Option<Result<Vec<f32>, String>>;
