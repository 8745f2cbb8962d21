//! `kernel-lab attention --lengths`: the length study (the attention view's length part) as
//! JSON (the whole report: every point, the crossovers, the dense kernel's rate) or as CSV
//! ([`crate::lab::attention::lengths::lengths_csv`]).

/// The longest L when `--lengths` is given without `--lmax`.
pub const DEFAULT_LENGTH_MAX: usize = 4096;
