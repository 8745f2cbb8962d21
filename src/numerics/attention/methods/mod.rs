//! The registry of attention methods: every kernel estimator of the estimator registry as a
//! random feature map ([`random_features`]), then the attention-level methods, one file each.
//! **Adding a method: one file here implementing [`AttentionMethod`] and [`FitMethod`], one
//! line in `others!`.** [`MethodId`] is the handle the rest of the lab holds: a position in
//! this registry.

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

use std::fmt;
use std::sync::LazyLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::numerics::estimators::EstimatorId;

use super::AttentionError;
use super::data::AttentionData;
use super::method::{
    AttentionMethod, FitMethod, FittedMethod, MethodFamily, MethodSettings, SharedFits,
};
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

/// One method of the registry ([`all`]), by position; serialised as its id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MethodId(u16);

impl MethodId {
    /// Every method, in the page's order: the registry's estimators, then the others.
    pub fn all() -> impl Iterator<Item = MethodId> {
        (0..count()).map(|i| MethodId(i as u16))
    }

    /// The registry's first method (the registry is never empty).
    pub fn first() -> MethodId {
        MethodId(0)
    }

    /// The method with this id.
    pub fn from_id(id: &str) -> Option<MethodId> {
        all()
            .iter()
            .position(|m| m.id() == id)
            .map(|i| MethodId(i as u16))
    }

    /// Its registry entry.
    pub fn get(self) -> &'static dyn AttentionMethod {
        let all = all();
        all[usize::from(self.0).min(all.len() - 1)]
    }

    /// Fits it to `data` (workers and the command line only: see [`FitMethod`]); refused for
    /// causal data when it has no causal form ([`MethodId::has_causal_form`]).
    pub fn fit(
        self,
        data: &AttentionData,
        settings: &MethodSettings,
        shared: SharedFits<'_>,
    ) -> Result<Box<dyn FittedMethod>, AttentionError> {
        if data.causal && !self.has_causal_form() {
            return Err(AttentionError::Data(format!(
                "{} has no causal form: only a feature map (random features, Taylor, LLN, \
                 elu + 1) or a kernel summed over the earlier keys can be masked",
                self.label()
            )));
        }
        let fits = fits();
        fits[usize::from(self.0).min(fits.len() - 1)].fit(data, settings, shared)
    }

    /// The stable id.
    pub fn id(self) -> &'static str {
        self.get().id()
    }

    /// A short human-readable name.
    pub fn label(self) -> &'static str {
        self.get().label()
    }

    /// Whether repeated draws differ.
    pub fn is_random(self) -> bool {
        self.get().is_random()
    }

    /// Whether it computes causal attention (each query over its own and the earlier keys)
    /// by the same formula: a feature map's prefix sums or a kernel's masked sums do; a
    /// sampler of softmax's rows, Nyström's landmarks, the window and the top-k keys are
    /// defined over the whole sequence here.
    pub fn has_causal_form(self) -> bool {
        matches!(
            self.get().family(),
            MethodFamily::RandomFeatures | MethodFamily::Deterministic
        )
    }

    /// Whether it costs O(L²) by construction.
    pub fn is_quadratic(self) -> bool {
        self.get().is_quadratic()
    }

    /// The colour of its marks.
    pub fn colour(self) -> [u8; 3] {
        self.get().colour()
    }

    /// Its formula, in LaTeX.
    pub fn formula(self) -> &'static str {
        self.get().formula()
    }

    /// Where it comes from.
    pub fn source(self) -> &'static str {
        self.get().source()
    }

    /// The registry estimator behind it, if it is one.
    pub fn estimator(self) -> Option<EstimatorId> {
        self.get().estimator()
    }

    /// The index of its draws' random stream: keyed by its id, so that adding a method
    /// anywhere in the registry changes no other method's numbers
    /// ([`stream_index`]).
    pub fn stream_index(self) -> u64 {
        stream_index(self.id())
    }
}

impl fmt::Debug for MethodId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MethodId({})", self.id())
    }
}

impl fmt::Display for MethodId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// As its id in text formats (JSON); as its position in binary ones (the worker messages,
/// between a page and workers of the same build), so that a worker that never describes a
/// method (the kernel view's) decodes a configuration without linking the registry's
/// descriptions.
impl Serialize for MethodId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.serialize_str(self.id())
        } else {
            serializer.serialize_u16(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for MethodId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if !deserializer.is_human_readable() {
            let index = u16::deserialize(deserializer)?;
            return (usize::from(index) < count())
                .then_some(MethodId(index))
                .ok_or_else(|| {
                    serde::de::Error::custom(format!("no attention method at position {index}"))
                });
        }
        let id = String::deserialize(deserializer)?;
        MethodId::from_id(&id)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown attention method `{id}`")))
    }
}

/// The attention view's default methods (eight: the benchmark's case).
pub const DEFAULT_METHODS: [&str; 8] = [
    "prf-pos",
    "hcexp-var",
    "oprf-var",
    "rff",
    "taylor",
    "lln",
    "elu",
    "ra",
];

/// Every method id, comma-separated.
pub fn all_method_ids() -> String {
    MethodId::all()
        .map(MethodId::id)
        .collect::<Vec<_>>()
        .join(", ")
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

    #[test]
    fn ids_round_trip_and_are_unique() {
        let ids: Vec<&str> = MethodId::all().map(MethodId::id).collect();
        let mut unique = ids.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), ids.len());
        for m in MethodId::all() {
            assert_eq!(MethodId::from_id(m.id()), Some(m));
        }
        for id in DEFAULT_METHODS {
            assert!(MethodId::from_id(id).is_some(), "{id}");
        }
        assert_eq!(MethodId::from_id("nope"), None);
    }
}
