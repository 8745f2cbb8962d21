//! softmax-kernel-lab: random features estimating the softmax kernel, live in the browser.
//!
//! - [`math`]: the numerical core (datasets, estimators, A heuristics, the experiment), with
//!   no web dependency.
//! - [`chart_geometry`]: what the charts show (ranges, log axes, hit testing, labels), decided
//!   without drawing, so it builds and is tested natively.
//! - `ui` and `charts` (WebAssembly only, feature `page`): the Leptos page and the canvas
//!   drawing; they only call into [`math`] and [`chart_geometry`]. The workers are built
//!   without them.

pub mod chart_geometry;
pub mod cli;
pub mod math;

#[cfg(all(target_arch = "wasm32", feature = "page"))]
pub mod charts;
#[cfg(all(target_arch = "wasm32", feature = "page"))]
pub mod ui;
#[cfg(target_arch = "wasm32")]
pub mod worker;
