//! The attention view's model: fitting and drawing each method on a configuration's data
//! ([`methods`]), and the view's parts ([`report`]);
//! [`timing_notes`] writes the length study's table and sentences.

pub mod data;
pub mod kernel_vs_attention;
pub mod lengths;
pub mod methods;
mod outputs;
mod parts;
pub mod report;
mod share;
pub mod stored_heads;
pub mod timing_notes;
pub mod trend;

pub use report::{
    AttentionOutput, AttentionPart, AttentionRequest, KernelVsAttention, ProblemShare,
    run_attention, run_attention_on,
};
pub use stored_heads::StoredHeads;
