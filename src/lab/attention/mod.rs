//! The attention view's model: fitting and drawing each method on a configuration's data
//! ([`methods`]), and the view's parts ([`report`]).

pub mod data;
pub mod kernel_vs_attention;
pub mod lengths;
pub mod methods;
mod outputs;
mod parts;
pub mod report;
pub mod trend;

pub use report::{AttentionOutput, AttentionPart, AttentionRequest, run_attention};
