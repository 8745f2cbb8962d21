//! The length study in pieces: one [`LengthsUnit`] is one length at one head size in one
//! causality (exact attention in that form and every method's forms of the same causality, so
//! each method's error has its reference in the same piece). The page sends the units to its
//! workers a few at a time, shortest length first, and merges their reports
//! ([`super::LengthsReport::merge_unit`]) as they arrive.

use serde::{Deserialize, Serialize};

use super::series::{FIRST_LENGTH, Kernel, MAX_LENGTH};
use crate::lab::config::{ExperimentConfig, HEAD_DIM, HeadSource, LM_HEAD_DIM};
use crate::numerics::attention::gaussian_head::GaussianHead;
use crate::numerics::attention::long::LinearForm;

/// One series of a head size: what is timed, in which form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesKey {
    pub kernel: Kernel,
    pub form: LinearForm,
}

/// Which kernels a unit times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum UnitKernels {
    /// Exact attention and every method.
    All,
    /// Exact attention alone (no method is fitted): the study's first piece, so that its first
    /// point is on screen while a worker that has just started still warms up.
    Exact,
    /// Every method, against exact attention computed untimed.
    Methods,
}

/// One piece of the study: length `len` at head size `d`, the bidirectional forms or the
/// causal ones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LengthsUnit {
    pub d: usize,
    pub len: usize,
    pub causal: bool,
    pub kernels: UnitKernels,
    /// Series of head size `d` that stopped at a shorter length (a run over the budget): not
    /// timed again (exact attention's output is still computed, untimed, as the methods'
    /// reference).
    pub stopped: Vec<SeriesKey>,
}

impl LengthsUnit {
    /// Whether `form` belongs to this unit.
    pub fn measures(&self, form: LinearForm) -> bool {
        form.is_causal() == self.causal
    }

    /// Whether it times exact attention.
    pub fn times_exact(&self) -> bool {
        self.kernels != UnitKernels::Methods
    }

    /// Whether it times the methods.
    pub fn times_methods(&self) -> bool {
        self.kernels != UnitKernels::Exact
    }
}

/// The lengths a configuration measures: 128, 256, … up to `lmax`.
pub fn study_lengths(length_max: usize) -> Vec<usize> {
    std::iter::successors(Some(FIRST_LENGTH), |l| l.checked_mul(2))
        .take_while(|&l| l <= length_max.min(MAX_LENGTH))
        .collect()
}

/// The head sizes a configuration's heads give (the worker reads them from the heads
/// themselves; the page from the source, which decides whose heads they are).
pub fn study_head_sizes(config: &ExperimentConfig) -> Vec<usize> {
    let head_dim = match config.attention.source {
        HeadSource::Lm => LM_HEAD_DIM,
        HeadSource::Synthetic | HeadSource::Minilm | HeadSource::Text => HEAD_DIM,
    };
    GaussianHead::head_sizes(head_dim)
}

/// Every unit of a study, in the order they are sent: shortest length first, and within a
/// length the dearest first (d = 64 before 32, bidirectional exact attention, L², before
/// causal, about L²/2), so that the longest length's big units start as early as its small ones
/// and the workers finish together. The very first unit is split in two, exact attention alone
/// then the methods: a worker's first unit also pays for its start (the compiler's tiers, the
/// stored heads), and exact attention alone is the first point on screen within a second.
pub fn study_units(lengths: &[usize], head_sizes: &[usize]) -> Vec<LengthsUnit> {
    let mut sizes = head_sizes.to_vec();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    let mut units: Vec<LengthsUnit> = lengths
        .iter()
        .flat_map(|&len| {
            sizes.iter().flat_map(move |&d| {
                [false, true].map(|causal| LengthsUnit {
                    d,
                    len,
                    causal,
                    kernels: UnitKernels::All,
                    stopped: Vec::new(),
                })
            })
        })
        .collect();
    if let Some(first) = units.first_mut() {
        first.kernels = UnitKernels::Methods;
        let exact = LengthsUnit {
            kernels: UnitKernels::Exact,
            ..first.clone()
        };
        units.insert(0, exact);
    }
    units
}
