//! What a parameter's handle answers ([`Param`]): its entry, its section, its value in a
//! configuration, its round trip and its check, all read from the table (`params`).

#[cfg(test)]
use super::experiment::ExperimentConfig;
use super::params::Section::{Attention, Kernel};
#[cfg(test)]
use super::params::{CHECKS, Rule};
use super::params::{Param, ParamSpec, Section, TABLE, Value};
use super::values::{NumericRange, Rejection, quote};

impl Param {
    /// Its entry of the table (the handles are made only by the table).
    pub fn spec(self) -> &'static ParamSpec {
        TABLE
            .iter()
            .find(|spec| spec.key == self.0)
            .unwrap_or(&TABLE[0])
    }

    /// Every parameter a link may hold: the kernel view's, then the attention view's.
    pub fn every() -> impl Iterator<Item = Param> {
        Param::in_section(Kernel).chain(Param::in_section(Attention))
    }

    /// The parameters of one section, in table order.
    pub fn in_section(section: Section) -> impl Iterator<Item = Param> {
        TABLE
            .iter()
            .filter(move |spec| spec.section == section)
            .map(|spec| Param(spec.key))
    }

    /// The URL query key (also the `--key` of the command line).
    pub fn key(self) -> &'static str {
        self.0
    }

    /// The parameter with URL key `key` (legacy keys included).
    pub fn from_key(key: &str) -> Option<Param> {
        TABLE
            .iter()
            .find(|spec| spec.key == key)
            .map(|spec| Param(spec.key))
    }

    /// A label for the page's controls.
    pub fn label(self) -> &'static str {
        self.spec().label
    }

    /// The range of a numeric parameter; `None` for the others.
    pub fn range(self) -> Option<NumericRange> {
        match self.spec().value {
            Value::Number { range, .. } => Some(range),
            Value::Text { .. } => None,
        }
    }

    /// What the parameter accepts, in words (for messages and docs/url-parameters.md).
    pub fn allowed(self) -> String {
        match self.spec().value {
            Value::Number { range, .. } => range.describe(),
            Value::Text { allowed, .. } => allowed(),
        }
    }

    /// What docs/url-parameters.md says it accepts.
    pub fn allowed_in_docs(self) -> String {
        self.spec()
            .docs_allowed
            .map_or_else(|| self.allowed(), str::to_string)
    }

    /// Whether a larger value never lowers the work (a slider may stop at the work limit).
    pub fn grows_work(self) -> bool {
        matches!(
            self.spec().value,
            Value::Number {
                grows_work: true,
                ..
            }
        )
    }

    /// For a text parameter: whether writing its own text back keeps its value unchanged
    /// (what its `check` must agree with). `None` for a number.
    #[cfg(test)]
    pub(super) fn round_trip_keeps(self, config: &ExperimentConfig) -> Option<bool> {
        match self.spec().value {
            Value::Number { .. } => None,
            Value::Text { read, write, .. } => {
                // Compared as text: a NaN elsewhere would make the configurations unequal.
                let mut copy = config.clone();
                let text = read(config);
                Some(write(&mut copy, &text).is_ok() && read(&copy) == text)
            }
        }
    }

    /// Whether `config`'s value passes this parameter's entry of [`CHECKS`].
    #[cfg(test)]
    pub(super) fn check_passes(self, config: &ExperimentConfig) -> bool {
        let entry = CHECKS.iter().find(|entry| entry.key == self.0);
        match entry.map(|entry| entry.rule) {
            Some(Rule::Number { range, read }) => range.contains(read(config)),
            Some(Rule::Text { check }) => check(config),
            None => false,
        }
    }

    /// The message for `text` refused as `rejection`.
    pub(super) fn refusal(self, rejection: Rejection, text: &str) -> String {
        match rejection {
            Rejection::NotAllowed => format!("must be {} (got {})", self.allowed(), quote(text)),
            Rejection::Because(message) => message,
        }
    }
}
