//! A share of the problems of a part that reads every head, so that the part can run on
//! several workers at once (the page merges the shares' reports).

use serde::{Deserialize, Serialize};

use crate::numerics::attention::AttentionError;

/// Share `index` of `count` of the problems of a part that reads every head (each real head,
/// or each synthetic dataset): a contiguous run of them, so that the shares' reports, merged in
/// order ([`crate::lab::attention::KernelVsAttention::merge`],
/// [`crate::lab::attention::report::HeadsTable::merge`]), are the whole report bit for
/// bit (each problem's numbers depend only on the problem, the method and the seed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProblemShare {
    pub index: usize,
    pub count: usize,
}

impl ProblemShare {
    /// Every problem.
    pub const WHOLE: ProblemShare = ProblemShare { index: 0, count: 1 };

    /// The problems of this share among `problems`; an error for a share that does not exist
    /// (a message from elsewhere: it must not panic the worker).
    pub fn range(self, problems: usize) -> Result<std::ops::Range<usize>, AttentionError> {
        if self.count == 0 || self.index >= self.count {
            return Err(AttentionError::Data(format!(
                "share {} of {} of the problems does not exist",
                self.index, self.count
            )));
        }
        // In u128: a share from a message may count up to usize::MAX.
        let at = |i: usize| (i as u128 * problems as u128 / self.count as u128) as usize;
        Ok(at(self.index)..at(self.index + 1))
    }

    /// This share's `(layer, head)` pairs of a model with `layers` layers of `heads` heads, in
    /// layer-then-head order (the real heads' problems).
    pub fn heads(self, layers: usize, heads: usize) -> Result<Vec<(usize, usize)>, AttentionError> {
        let range = self.range(layers * heads)?;
        Ok(range.map(|i| (i / heads, i % heads)).collect())
    }
}
