//! How the page runs and presents the lab, without the web: the kernel view's job as a state
//! machine ([`job`]), the attention view's requests as another ([`attention_dispatch`]), the
//! length study's units as a third ([`lengths_run`]), the export's bookkeeping
//! ([`export_run`]), the formulas beside the charts ([`formulas`], [`mathml`]), the guided
//! tour ([`tour`]) and presenter and embed modes ([`mode`]).

pub mod attention_dispatch;
pub mod export_run;
pub mod formulas;
pub mod job;
pub mod lengths_run;
pub mod mathml;
#[cfg(feature = "page")]
pub mod mode;
#[cfg(feature = "page")]
pub mod tour;
pub mod view_formulas;

pub use export_run::{ExportRun, ExportStep};
