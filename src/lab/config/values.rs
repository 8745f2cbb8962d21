//! Single values as text: numbers within a range, switches, a side's own mean scale, lists of
//! estimator ids (old names included), and user text quoted for a message. The parameter table
//! ([`crate::lab::config::params`]) builds its entries from these; nothing here knows the table.

use crate::numerics::estimators::{EstimatorId, all_ids};

/// The allowed range of a numeric parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NumericRange {
    pub min: f64,
    pub max: f64,
    pub integer: bool,
}

pub(super) const fn int(min: f64, max: f64) -> NumericRange {
    NumericRange {
        min,
        max,
        integer: true,
    }
}

pub(super) const fn real(min: f64, max: f64) -> NumericRange {
    NumericRange {
        min,
        max,
        integer: false,
    }
}

/// Indices the probe accepts: any pair of the largest scatter dataset.
pub(super) const PROBE_RANGE: NumericRange = int(0.0, 19_999.0);

/// The Laplace scales of the means (`scale`, `xscale`, `yscale`).
pub(super) const MEAN_SCALE_RANGE: NumericRange = real(0.001, 1000.0);

/// Why a text was refused: not one of the allowed values, or a reason of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// The message says what is allowed ([`Param::allowed`]).
    NotAllowed,
    /// The message is this.
    Because(String),
}

/// The `est` names of links made before the registry (always with `hyp`, default 1): they
/// name the hyperbolic estimators, and `hyp=0` turns them into their positive twins.
const LEGACY_ESTIMATORS: [(&str, &str); 3] = [
    ("prf", "prf-hyp"),
    ("mean", "hcexp-mean"),
    ("var", "hcexp-var"),
];

/// User text for a message: at most 24 characters, in quotes, control characters and quotes
/// escaped (so that a message is always one line). The page and the command line share it.
pub fn quote(text: &str) -> String {
    let mut shown: String = text.chars().take(24).collect();
    if text.chars().count() > 24 {
        shown.push('…');
    }
    format!("{shown:?}")
}

/// A real parameter as URL text that reads back to the same f64: plain decimals, or
/// scientific notation where those would be long (`1e-255`, which `Display` writes with 255
/// zeros, longer than a value may be).
pub(super) fn number_text(value: f64) -> String {
    let plain = value.to_string();
    if plain.len() <= 24 {
        plain
    } else {
        format!("{value:e}")
    }
}

/// `1`, `true`, `on` or `0`, `false`, `off`.
pub(super) fn parse_switch(text: &str) -> Result<bool, Rejection> {
    match text.trim() {
        "1" | "true" | "on" => Ok(true),
        "0" | "false" | "off" => Ok(false),
        _ => Err(Rejection::NotAllowed),
    }
}

/// Every chosen estimator that has a twin, in the hyperbolic (`true`) or positive form.
pub(super) fn with_form(estimators: &[EstimatorId], hyperbolic: bool) -> Vec<EstimatorId> {
    let mapped: Vec<EstimatorId> = estimators
        .iter()
        .map(|&id| {
            let estimator = id.info();
            match estimator.twin().and_then(EstimatorId::from_id) {
                Some(twin) if estimator.is_hyperbolic() != hyperbolic => twin,
                _ => id,
            }
        })
        .collect();
    in_registry_order(&mapped)
}

/// The distinct estimators of `chosen`, in registry order (what a sort and a dedup would give,
/// without linking one more sort into the page).
fn in_registry_order(chosen: &[EstimatorId]) -> Vec<EstimatorId> {
    EstimatorId::all()
        .filter(|id| chosen.contains(id))
        .collect()
}

/// A comma-separated list of estimator ids (old names included), in registry order.
pub(super) fn parse_estimators(text: &str) -> Result<Vec<EstimatorId>, String> {
    let mut chosen = Vec::new();
    for name in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let id = LEGACY_ESTIMATORS
            .iter()
            .find(|(old, _)| *old == name)
            .map_or(name, |(_, new)| new);
        let estimator = EstimatorId::from_id(id)
            .ok_or_else(|| format!("unknown estimator {} (expected {})", quote(name), all_ids()))?;
        chosen.push(estimator);
    }
    let chosen = in_registry_order(&chosen);
    if chosen.is_empty() {
        return Err("choose at least one estimator".to_string());
    }
    Ok(chosen)
}

pub(super) fn same_or_scale() -> String {
    format!(
        "same (the scale b of scale) or a number from {} to {}",
        MEAN_SCALE_RANGE.min, MEAN_SCALE_RANGE.max
    )
}

pub(super) fn scale_text(scale: Option<f64>) -> String {
    scale.map_or_else(|| "same".to_string(), number_text)
}

pub(super) fn parse_same_or_scale(text: &str) -> Result<Option<f64>, Rejection> {
    match text.trim() {
        "" | "same" => Ok(None),
        number => parse_in_range(number, MEAN_SCALE_RANGE).map(Some),
    }
}

pub(super) fn switch_words() -> String {
    "1 or 0 (true or false)".to_string()
}

pub(super) fn switch_text(on: bool) -> String {
    if on { "1" } else { "0" }.to_string()
}

/// A number within `range` (and whole where it must be).
pub(super) fn parse_in_range(text: &str, range: NumericRange) -> Result<f64, Rejection> {
    let value: f64 = text.trim().parse().map_err(|_| Rejection::NotAllowed)?;
    if range.contains(value) {
        Ok(value)
    } else {
        Err(Rejection::NotAllowed)
    }
}

impl NumericRange {
    /// What it accepts, in words.
    pub fn describe(self) -> String {
        let kind = if self.integer {
            "an integer"
        } else {
            "a number"
        };
        format!("{kind} from {} to {}", self.min, self.max)
    }

    /// Whether `value` is finite, within the range, and whole where it must be.
    pub fn contains(self, value: f64) -> bool {
        value.is_finite()
            && value >= self.min
            && value <= self.max
            && (!self.integer || value.fract() == 0.0)
    }
}

/// The `check` of a parameter whose type holds only values it accepts (an enum, a switch): of
/// any configuration (generic, so that this file needs no configuration type).
pub(super) fn every_value_allowed<Config>(_: &Config) -> bool {
    true
}

/// The `check` of a list: non-empty, in registry order (the ids' order), no repeats.
pub(super) fn ascending_without_repeats<T: Ord>(list: &[T]) -> bool {
    !list.is_empty() && list.windows(2).all(|pair| pair[0] < pair[1])
}

/// The `check` of a side's own mean scale.
pub(super) fn scale_in_range(scale: Option<f64>) -> bool {
    scale.is_none_or(|scale| MEAN_SCALE_RANGE.contains(scale))
}
