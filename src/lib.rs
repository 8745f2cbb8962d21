//! softmax-kernel-lab: random features estimating the softmax kernel, live in the browser.
//!
//! - [`numerics`]: the numerical core (datasets, streams, estimators, kernel, theory, attention
//!   maps), with no notion of a page, a URL, a worker or a job.
//! - [`lab`]: the lab's model built on it (configuration, presets, experiment, tasks, scheduler,
//!   results, the attention view's parts), with no web dependency either.
//! - [`chart_geometry`]: what the charts show (ranges, log axes, hit testing, labels), decided
//!   without drawing, so it builds and is tested natively.
//! - `ui` and `charts` (WebAssembly only, feature `page`): the Leptos page and the canvas
//!   drawing; they only call into [`lab`], [`numerics`] and [`chart_geometry`]. The workers are built
//!   without them.

pub mod chart_geometry;
// The command line prints the estimators' prose, which the workers' builds leave out
// (`build.rs`, `estimator_prose`): it is compiled natively and in the page's build only.
#[cfg(estimator_prose)]
pub mod cli;
pub mod lab;
pub mod numerics;

#[cfg(all(target_arch = "wasm32", feature = "page"))]
pub mod charts;
#[cfg(all(target_arch = "wasm32", feature = "page"))]
pub mod ui;
#[cfg(target_arch = "wasm32")]
pub mod worker;

/// docs/adding-an-estimator.md, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../docs/adding-an-estimator.md")]
pub struct AddingAnEstimator;

/// docs/adding-an-attention-method.md, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../docs/adding-an-attention-method.md")]
pub struct AddingAnAttentionMethod;
