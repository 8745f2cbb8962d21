//! The lab's model: what the page, the workers and the command line compute and how they ask for
//! it. Built on [`crate::numerics`]; no web dependency, tested natively. Its folders, each
//! importing only those listed before it:
//! - [`config`]: the one configuration type (the URL, the controls, the worker messages and the
//!   CLI read and write it), its parameters and presets;
//! - [`kernel`]: the seed paper's experiment, its tasks, results, data panel and files;
//! - [`attention`]: the attention view's parts, on synthetic data and real heads;
//! - [`models`]: the real model on the reader's text, and approximate attention inside it;
//! - [`pool`]: the messages between the page and its workers, the side requests as types, the
//!   scheduler, and what a worker does with a message;
//! - [`page`]: how the page runs and presents it (the job, the export, the tour, the formulas).

pub mod attention;
pub mod config;
pub mod kernel;
pub mod models;
pub mod page;
pub mod pool;
#[cfg(test)]
mod test_support;
