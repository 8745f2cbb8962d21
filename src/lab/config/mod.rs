//! The one configuration type: what is computed. The URL query, the page's controls, the
//! worker messages and the command line all read and write [`ExperimentConfig`] through
//! [`ExperimentConfig::set`] and [`ExperimentConfig::get`], so a value is parsed and
//! range-checked in exactly one place: the table of parameters in [`params`]. [`text`] turns
//! a configuration into text and back; [`attention`] holds the attention view's settings.

mod attention;
mod experiment;
mod param_handle;
pub mod params;
pub mod presets;
#[cfg(test)]
mod tests;
mod text;
mod values;

pub use attention::{
    ATTENTION_ASK_WORK, AttentionSettings, BLOCK, BUDGETS, DEFAULT_TEXT,
    DETERMINISTIC_FEATURE_BUDGET, HEAD_DIM, HEAD_LAYERS, HEAD_PASSAGES, HEAD_TOKENS,
    HEADS_PER_LAYER, HEDGEHOG_HALF_FEATURES, HEDGEHOG_LEARNING_RATE, HeadSource, LM_HEAD_DIM,
    LM_HEADS, LM_LAYERS, LM_MAX_GENERATED, LM_MAX_TRAIN_STEPS, MAX_ATTENTION_WORK, MAX_HEAD_LAYERS,
    MAX_HEADS_PER_LAYER, MAX_LINK_TEXT_CHARS, MAX_SWAP_DRAWS, MAX_TEXT_BYTES, MODEL_MAX_TOKENS,
    RETRIEVAL_CANDIDATES, RETRIEVAL_QUERY, STORED_PASSAGES, SWAP_BUDGETS, TEMPERATURES, TV_ROWS,
    View, default_retrieval, estimated_tokens, lm_layers_text, parse_layers, parse_retrieval,
    softmax_work,
};
pub use experiment::{
    CURVE_LARGEST_M, CURVE_MS, CURVE_PAIRS, CURVE_REPEATS, DEFAULT_ESTIMATORS, ExperimentConfig,
    MAX_WORK, OmegaMode, PREVIEW_DATASETS, PREVIEW_PAIRS, WholeSize,
};
pub use params::{Param, ParamSpec, Section};
pub use text::ParamError;
pub use values::{NumericRange, Rejection, quote};
