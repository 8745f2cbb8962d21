//! [`EstimatorId`]: an estimator of the registry by position, serialised as its stable id
//! (URL `est=`, CLI `--estimator`, CSV, worker messages), and [`all_ids`] for messages.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{DESCRIPTIONS, Describe, Estimator, REGISTRY};

/// An estimator of [`REGISTRY`], by position; serialised as its id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EstimatorId(u8);

impl EstimatorId {
    /// Every estimator, in registry order.
    pub fn all() -> impl Iterator<Item = EstimatorId> {
        (0..DESCRIPTIONS.len()).map(|i| EstimatorId(i as u8))
    }

    /// The estimator with this id.
    pub fn from_id(id: &str) -> Option<EstimatorId> {
        DESCRIPTIONS
            .iter()
            .position(|e| e.id() == id)
            .map(|i| EstimatorId(i as u8))
    }

    /// Its registry entry, to compute with (never on the page: see [`Describe`]).
    pub fn get(self) -> &'static dyn Estimator {
        REGISTRY[usize::from(self.0).min(REGISTRY.len() - 1)]
    }

    /// What the page shows and plans with.
    pub fn info(self) -> &'static dyn Describe {
        DESCRIPTIONS[usize::from(self.0).min(DESCRIPTIONS.len() - 1)]
    }

    /// Its stable id.
    pub fn id(self) -> &'static str {
        self.info().id()
    }

    /// Its label.
    pub fn label(self) -> &'static str {
        self.info().label()
    }

    /// Its position in [`REGISTRY`].
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

impl fmt::Debug for EstimatorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EstimatorId({})", self.id())
    }
}

impl fmt::Display for EstimatorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl Serialize for EstimatorId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

impl<'de> Deserialize<'de> for EstimatorId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = String::deserialize(deserializer)?;
        EstimatorId::from_id(&id)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown estimator `{id}`")))
    }
}

/// Every id, comma-separated (for messages and usage text).
pub fn all_ids() -> String {
    DESCRIPTIONS
        .iter()
        .map(|e| e.id())
        .collect::<Vec<_>>()
        .join(", ")
}
