//! The parts of the current request that are finished but not yet shown.

use super::shown::{ScatterView, Shown};
use crate::lab::kernel::results::{ExperimentResult, MseCurve};

/// Parts of the current request that are finished but not yet shown.
#[derive(Clone, Debug, Default)]
pub(super) struct Held {
    pub(super) scatter: Option<Shown<ScatterView>>,
    pub(super) summaries: Option<Shown<ExperimentResult>>,
    pub(super) curves: Option<Shown<Vec<MseCurve>>>,
}
