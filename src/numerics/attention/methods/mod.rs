//! The registry of attention methods: every kernel estimator of the estimator registry as a
//! random feature map ([`random_features`]), then the attention-level methods, one file each.
//! **Adding a method: one file here implementing [`AttentionMethod`] and [`FitMethod`], one
//! line in `others!`.**

pub mod elu;
pub mod lln;
pub mod nystrom;
pub mod polynomial;
pub mod power;
pub mod random_features;
pub mod randomized;
pub mod sparse;
pub mod taylor;
#[cfg(test)]
mod test_problems;
pub mod window;

use std::sync::LazyLock;

use crate::numerics::estimators::EstimatorId;

use super::method::{AttentionMethod, FitMethod};
use random_features::RandomFeatureMethod;

/// The methods that are not registry estimators, in the page's order: **one line per method**.
/// Each goes into two tables, what the page reads ([`AttentionMethod`]) and what the workers
/// fit ([`FitMethod`]), so the page's module links no fit.
macro_rules! others {
    ($($method:expr,)*) => {
        static OTHERS: &[&dyn AttentionMethod] = &[$(&$method,)*];
        static OTHER_FITS: &[&dyn FitMethod] = &[$(&$method,)*];
        /// How many there are, known without either table.
        const OTHER_COUNT: usize = [$(stringify!($method),)*].len();
    };
}

others! {
    taylor::TAYLOR,
    power::POWER,
    lln::LLN,
    elu::ELU,
    randomized::RANDOMIZED,
    nystrom::NYSTROM,
    window::WINDOW,
    sparse::SPARSE,
}

/// Every registry estimator as an attention method (built once: the estimator registry is
/// the list).
static RANDOM_FEATURE_METHODS: LazyLock<Vec<RandomFeatureMethod>> =
    LazyLock::new(|| EstimatorId::all().map(RandomFeatureMethod::new).collect());

static ALL: LazyLock<Vec<&'static dyn AttentionMethod>> = LazyLock::new(|| {
    RANDOM_FEATURE_METHODS
        .iter()
        .map(|m| m as &dyn AttentionMethod)
        .chain(OTHERS.iter().copied())
        .collect()
});

static ALL_FITS: LazyLock<Vec<&'static dyn FitMethod>> = LazyLock::new(|| {
    RANDOM_FEATURE_METHODS
        .iter()
        .map(|m| m as &dyn FitMethod)
        .chain(OTHER_FITS.iter().copied())
        .collect()
});

/// Every method, in the page's order.
pub fn all() -> &'static [&'static dyn AttentionMethod] {
    &ALL
}

/// How many methods there are: [`all`]'s length, without building it (a worker that only
/// decodes method ids links no description).
pub fn count() -> usize {
    EstimatorId::all().count() + OTHER_COUNT
}

/// Every method's fit, in the same order as [`all`] (workers and the command line only).
pub fn fits() -> &'static [&'static dyn FitMethod] {
    &ALL_FITS
}

/// The methods as they were when draw streams were first keyed by position: each keeps the
/// index `2 + position` it had then, so its numbers never change. Never edit this list.
const FROZEN_STREAM_ORDER: [&str; 17] = [
    "prf-pos",
    "prf-hyp",
    "cexp-mean",
    "cexp-var",
    "hcexp-mean",
    "hcexp-var",
    "hcexp-opt",
    "rff",
    "cplx",
    "hcplx",
    "oprf",
    "oprf-var",
    "taylor",
    "power",
    "lln",
    "elu",
    "ra",
];

/// The index of a method's draw streams (`StreamPurpose::Attention`, index, draw): for the
/// methods of [`FROZEN_STREAM_ORDER`] their old index, for any other the 64-bit FNV-1a hash of
/// its id with the top bit set (so it never meets an index below 2⁶³: the data streams are 0
/// and 1). Keyed by id, so adding a method anywhere changes no other method's numbers.
pub fn stream_index(id: &str) -> u64 {
    if let Some(position) = FROZEN_STREAM_ORDER.iter().position(|frozen| *frozen == id) {
        return 2 + position as u64;
    }
    let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    hash | (1 << 63)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_indices_are_pinned_and_distinct() {
        // Value stability: the indices of today's methods, as they were keyed by position.
        assert_eq!(stream_index("prf-pos"), 2);
        assert_eq!(stream_index("oprf-var"), 13);
        assert_eq!(stream_index("taylor"), 14);
        assert_eq!(stream_index("ra"), 18);
        // A new id is hashed, far from the small indices, and the same every time.
        assert_eq!(stream_index("nystrom"), stream_index("nystrom"));
        assert!(stream_index("nystrom") >= 1 << 63);
        assert_ne!(stream_index("nystrom"), stream_index("window"));
        let mut indices: Vec<u64> = all().iter().map(|m| stream_index(m.id())).collect();
        let count = indices.len();
        indices.sort_unstable();
        indices.dedup();
        assert_eq!(indices.len(), count, "two methods share a draw stream");
    }

    #[test]
    fn the_count_is_the_registrys_length() {
        assert_eq!(count(), all().len());
        assert_eq!(count(), fits().len());
    }

    #[test]
    fn every_method_of_the_registry_has_a_frozen_or_hashed_stream() {
        for method in all() {
            let index = stream_index(method.id());
            assert!(index >= 2, "{}", method.id());
        }
    }
}
