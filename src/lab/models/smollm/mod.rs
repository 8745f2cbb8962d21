//! The causal language model on the reader's text (SmolLM2-135M-Instruct, a Llama decoder,
//! `numerics::llama`): how surprised it is by each token under exact attention and with the
//! lab's estimators swapped into some of its layers ([`report`]), and which layers a swap names
//! ([`layers`]).

pub mod layers;
pub mod report;

pub use layers::parse_layers;
pub use report::{LM_MAX_TOKENS, LmReport, LmSwapReport, NextToken, lm_report};
