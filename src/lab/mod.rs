//! The lab's model: what the page, the workers and the command line compute and how they ask for
//! it. The configuration (one type behind the URL, the controls, the worker messages and the
//! CLI), presets, the experiment over a configuration, the tasks the workers run and the
//! scheduler that plans them, results, the data panel and the attention view's parts. Built on
//! [`crate::numerics`]; no web dependency, tested natively.

pub mod attention;
pub mod config;
pub mod data_view;
pub mod experiment;
pub mod experiment_export;
pub mod formulas;
pub mod job;
#[cfg(feature = "text-model")]
pub mod learned_map;
pub mod mathml;
pub mod model_board;
#[cfg(feature = "text-model")]
pub mod model_loader;
pub mod model_protocol;
#[cfg(feature = "text-model")]
pub mod model_split;
#[cfg(feature = "text-model")]
pub mod model_swap;
#[cfg(feature = "text-model")]
pub mod model_worker;
#[cfg(feature = "page")]
pub mod page_mode;
pub mod presets;
pub mod results;
pub mod scheduler;
pub mod swap_plan;
pub mod tasks;
#[cfg(test)]
mod test_support;
#[cfg(feature = "text-model")]
pub mod text_model;
#[cfg(feature = "page")]
pub mod tour;
