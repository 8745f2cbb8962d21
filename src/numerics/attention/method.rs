//! The attention view's methods: every kernel estimator of the registry used as a feature map,
//! plus the attention-level methods of seeds 001, 003 and 004 and the `elu + 1` baseline.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::numerics::estimators::EstimatorId;

/// One way of computing an attention output.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MethodId {
    /// A registry estimator's φ, ψ in the linear attention ratio (`prf-pos` is Performer,
    /// `rff` is RFA, `hcexp-var` a data-chosen A, `oprf` the optimal positive features).
    Kernel(EstimatorId),
    /// Taylor's `Σ_{k≤n} (q·k)^k / k!` (seed 004).
    Taylor,
    /// `(1 + q·k/n)^n` (seed 004).
    Power,
    /// Linear log-normal attention with moment matching (seed 001).
    Lln,
    /// `φ = ψ = elu + 1` (the linear transformer, cited in seed 001).
    Elu,
    /// Randomized attention (seed 003): unbiased for the output, quadratic in L.
    Randomized,
}

/// The ids of the methods that are not registry estimators, in the page's order.
const OTHERS: [(MethodId, &str); 5] = [
    (MethodId::Taylor, "taylor"),
    (MethodId::Power, "power"),
    (MethodId::Lln, "lln"),
    (MethodId::Elu, "elu"),
    (MethodId::Randomized, "ra"),
];

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

impl MethodId {
    /// Every method: the registry's estimators, then the attention-level ones.
    pub fn all() -> impl Iterator<Item = MethodId> {
        EstimatorId::all()
            .map(MethodId::Kernel)
            .chain(OTHERS.iter().map(|(m, _)| *m))
    }

    /// The method with this id.
    pub fn from_id(id: &str) -> Option<MethodId> {
        EstimatorId::from_id(id)
            .map(MethodId::Kernel)
            .or_else(|| OTHERS.iter().find(|(_, i)| *i == id).map(|(m, _)| *m))
    }

    /// The stable id: URL `methods=`, CSV, `--methods`, `data-method`.
    pub fn id(self) -> &'static str {
        match self {
            MethodId::Kernel(e) => e.id(),
            other => OTHERS
                .iter()
                .find(|(m, _)| *m == other)
                .map_or("?", |(_, id)| id),
        }
    }

    /// A short human-readable name.
    pub fn label(self) -> String {
        match self {
            MethodId::Kernel(e) => match e.id() {
                "prf-pos" => "Performer (PRF)".to_string(),
                "rff" => "RFA (trigonometric)".to_string(),
                _ => e.label().to_string(),
            },
            MethodId::Taylor => "Taylor".to_string(),
            MethodId::Power => "(1 + x/n)^n".to_string(),
            MethodId::Lln => "LLN (moment matching)".to_string(),
            MethodId::Elu => "elu + 1".to_string(),
            MethodId::Randomized => "randomized attention".to_string(),
        }
    }

    /// Whether repeated draws differ (bias and variance apply).
    pub fn is_random(self) -> bool {
        matches!(self, MethodId::Kernel(_) | MethodId::Randomized)
    }

    /// Whether it costs O(L²) by construction (randomized attention samples from P's rows).
    pub fn is_quadratic(self) -> bool {
        matches!(self, MethodId::Randomized)
    }

    /// The colour of its marks: the registry's for estimators, distinct Tol colours otherwise.
    pub fn colour(self) -> [u8; 3] {
        match self {
            MethodId::Kernel(e) => e.info().colour(),
            MethodId::Taylor => [102, 37, 6],
            MethodId::Power => [170, 68, 153],
            MethodId::Lln => [51, 34, 136],
            MethodId::Elu => [119, 119, 119],
            MethodId::Randomized => [17, 119, 51],
        }
    }

    /// Its formula in one line, for the page and `kernel-lab attention --list`.
    pub fn formula(self) -> &'static str {
        match self {
            MethodId::Kernel(_) => {
                "ô_i = φ(q_i)·Σ_j ψ(k_j) v_jᵀ / φ(q_i)·Σ_l ψ(k_l), φ, ψ the estimator's features"
            }
            MethodId::Taylor => {
                "k(q, k) = Σ_{j≤n} (q·k)^j / j!, feature [⊗^j q / √j!]_{j≤n} of size Σ d^j"
            }
            MethodId::Power => "k(q, k) = (1 + q·k/n)^n, feature ⊗^n [1, q/√n] of size (d + 1)^n",
            MethodId::Lln => "φ(q) = exp(αq), ψ(k) = exp(βk), α, β matching the spread of log P",
            MethodId::Elu => "φ(u) = ψ(u) = elu(u) + 1",
            MethodId::Randomized => {
                "ω ~ Σ_j P_ij N(q_i + k_j, I); ô_i = Σ_j ξ(k_j, ω) v_j / Σ_l ξ(k_l, ω), O(L²)"
            }
        }
    }

    /// Where it comes from.
    pub fn source(self) -> &'static str {
        match self {
            MethodId::Kernel(_) => "seed 000 (CEXP, A), seed 002 (PRF, RFA), REFERENCE.md",
            MethodId::Taylor | MethodId::Power => "seed 004",
            MethodId::Lln => "seed 001",
            MethodId::Elu => "linear transformer, cited in seed 001",
            MethodId::Randomized => "seed 003",
        }
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

impl Serialize for MethodId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

impl<'de> Deserialize<'de> for MethodId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = String::deserialize(deserializer)?;
        MethodId::from_id(&id)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown attention method `{id}`")))
    }
}

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
