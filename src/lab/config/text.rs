//! A configuration as text: one parameter read and written ([`ExperimentConfig::get`],
//! [`ExperimentConfig::set`]), checked ([`ExperimentConfig::validate`]) and a whole link
//! ([`ExperimentConfig::from_query`], [`ExperimentConfig::to_query`]), all through the table of
//! [`crate::lab::config::params`].

use std::fmt;

use super::attention::{self, MAX_LINK_TEXT_CHARS, View};
use super::experiment::{ExperimentConfig, MAX_WORK};
use super::params::{CHECKS, Param, Rule, Section, Value};
use super::values::{number_text, parse_in_range, quote};
use crate::numerics::attention::AttentionError;

/// Longest parameter text considered; longer text is rejected without being parsed.
const MAX_VALUE_LEN: usize = 256;

/// A parameter value that was rejected (or a query key that was not understood).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    /// The URL key the message is about.
    pub key: String,
    pub message: String,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.key, self.message)
    }
}

impl std::error::Error for ParamError {}

impl ExperimentConfig {
    /// The value of `param` as URL text (the inverse of [`ExperimentConfig::set`]).
    pub fn get(&self, param: Param) -> String {
        match param.spec().value {
            Value::Number { range, read, .. } if range.integer => (read(self) as u64).to_string(),
            Value::Number { read, .. } => number_text(read(self)),
            Value::Text { read, .. } => read(self),
        }
    }

    /// Parses `text` for `param` and stores it, or explains what is allowed and leaves the
    /// configuration unchanged. A value that would push the work past [`MAX_WORK`] is refused.
    pub fn set(&mut self, param: Param, text: &str) -> Result<(), ParamError> {
        let refuse = |message: String| ParamError {
            key: param.key().to_string(),
            message,
        };
        // The texts are longer: the user's text and the retrieval set.
        let limit = if param == Param::Text || param == Param::Retrieval {
            4 * MAX_LINK_TEXT_CHARS
        } else {
            MAX_VALUE_LEN
        };
        if text.len() > limit {
            return Err(refuse(format!(
                "must be {} (got {} characters of text)",
                param.allowed(),
                text.len()
            )));
        }
        let mut next = self.clone();
        let written = match param.spec().value {
            Value::Number { range, write, .. } => {
                parse_in_range(text, range).map(|value| write(&mut next, value))
            }
            Value::Text { write, .. } => write(&mut next, text),
        };
        written.map_err(|rejection| refuse(param.refusal(rejection, text)))?;
        next.check_work(param)?;
        next.check_head_shape()?;
        *self = next;
        Ok(())
    }

    /// Refuses a layer or head that the source's model does not have (a source switched to
    /// clamps them first, so only a `layer` or `head` of its own can be refused here).
    pub(super) fn check_head_shape(&self) -> Result<(), ParamError> {
        let a = &self.attention;
        let (layers, heads) = a.source.shape();
        let model = a.source.model_name();
        let (key, message) = if a.layer >= layers {
            (
                Param::Layer,
                format!("{model} has layers 0 to {} (got {})", layers - 1, a.layer),
            )
        } else if a.head >= heads {
            (
                Param::Head,
                format!(
                    "{model} has heads 0 to {} in a layer (got {})",
                    heads - 1,
                    a.head
                ),
            )
        } else {
            return Ok(());
        };
        Err(ParamError {
            key: key.key().to_string(),
            message,
        })
    }

    /// The configuration a causal source computes: its methods only those with a causal form
    /// (the heatmaps' method the first of them if it has none), or why nothing is left.
    pub fn with_causal_methods(&self) -> Result<ExperimentConfig, AttentionError> {
        let mut masked = self.clone();
        let kept = self.attention.computed_methods();
        let Some(&first) = kept.first() else {
            return Err(AttentionError::Data(
                "none of the chosen methods has a causal form (randomized attention, Nyström, \
                 the window and sparse + low-rank are defined over the whole sequence): choose \
                 a feature map"
                    .into(),
            ));
        };
        if !kept.contains(&masked.attention.focus) {
            masked.attention.focus = first;
        }
        masked.attention.methods = kept;
        Ok(masked)
    }

    /// [`ExperimentConfig::set`] for a slider: a value that would push the work past
    /// [`MAX_WORK`] is replaced by the largest value between the current one and the
    /// requested one that stays within it (the work grows with d, m, n, datasets and pairs),
    /// so dragging to the end stops at the limit instead of being refused. Returns the value
    /// applied when it differs from the one asked for.
    pub fn set_within_work_limit(
        &mut self,
        param: Param,
        text: &str,
    ) -> Result<Option<String>, ParamError> {
        let original = match self.set(param, text) {
            Ok(()) => return Ok(None),
            Err(error) => error,
        };
        let requested = text.trim().parse::<f64>().ok().filter(|v| v.is_finite());
        let (Some(requested), true) = (requested, param.grows_work()) else {
            return Err(original);
        };
        let Ok(current) = self.get(param).parse::<u64>() else {
            return Err(original);
        };
        let mut trial = self.clone();
        // Only a value in range and above the current one can have hit the limit.
        let (mut fits, mut too_big) = (current, requested.floor() as u64);
        if too_big <= fits || trial.set(param, &too_big.to_string()).is_ok() {
            return Err(original);
        }
        while too_big - fits > 1 {
            let middle = fits + (too_big - fits) / 2;
            if trial.clone().set(param, &middle.to_string()).is_ok() {
                fits = middle;
            } else {
                too_big = middle;
            }
        }
        // Already at the limit (the slider is dragged further): stay there.
        if fits != current {
            self.set(param, &fits.to_string())?;
        }
        Ok(Some(fits.to_string()))
    }

    /// Refuses a value that pushes either view's work past its limit.
    pub(super) fn check_work(&self, param: Param) -> Result<(), ParamError> {
        self.check_attention_work(param)?;
        self.check_kernel_work(param)
    }

    fn check_attention_work(&self, param: Param) -> Result<(), ParamError> {
        let attention = self.attention.work(self.d);
        if attention > attention::MAX_ATTENTION_WORK {
            return Err(ParamError {
                key: param.key().to_string(),
                message: format!(
                    "this value makes one attention recompute {attention:.1e} multiply-adds, above the limit of {:.1e}: lower L, m, the draws or the degree first",
                    attention::MAX_ATTENTION_WORK
                ),
            });
        }
        Ok(())
    }

    fn check_kernel_work(&self, param: Param) -> Result<(), ParamError> {
        if self.work() > MAX_WORK {
            return Err(ParamError {
                key: param.key().to_string(),
                message: format!(
                    "this value makes one recompute {:.1e} multiply-adds, above the limit of {:.1e}: lower m, d or the number of pairs first",
                    self.work(),
                    MAX_WORK
                ),
            });
        }
        Ok(())
    }

    /// Checks a configuration that did not come through [`ExperimentConfig::set`] (for example
    /// one deserialised from a message): every value one `set` could have stored, by the same
    /// ranges, and the work within its limits.
    pub fn validate(&self) -> Result<(), ParamError> {
        self.validate_kernel()?;
        self.check_section(Section::Attention)?;
        self.check_head_shape()?;
        self.check_attention_work(Param::M)
    }

    /// [`ExperimentConfig::validate`] for what the kernel view computes (its parameters and
    /// work): what the workspace checks for every task, so that the kernel view's worker links
    /// neither the attention methods nor any parser.
    pub fn validate_kernel(&self) -> Result<(), ParamError> {
        self.check_section(Section::Kernel)?;
        self.check_kernel_work(Param::M)
    }

    /// Every value of `section` against its entry's range or `check` ([`CHECKS`]).
    fn check_section(&self, section: Section) -> Result<(), ParamError> {
        for entry in CHECKS.iter().filter(|entry| entry.section == section) {
            let refused = match entry.rule {
                Rule::Number { range, read } => {
                    let value = read(self);
                    (!range.contains(value))
                        .then(|| format!("must be {} (got {value})", range.describe()))
                }
                Rule::Text { check } => (!check(self)).then(|| {
                    "holds a value its parser would not store (a list empty, out of registry order or with repeats, or a number out of range)".to_string()
                }),
            };
            if let Some(message) = refused {
                return Err(ParamError {
                    key: entry.key.to_string(),
                    message,
                });
            }
        }
        Ok(())
    }

    /// The configuration described by a URL query (with or without the leading `?`). Every
    /// value that is missing keeps its default; every value that is bad keeps its default
    /// and yields a notice, as do unknown and repeated keys (the first occurrence wins).
    pub fn from_query(query: &str) -> (ExperimentConfig, Vec<ParamError>) {
        let query = query.strip_prefix('?').unwrap_or(query);
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap_or_default();
        let mut config = ExperimentConfig::default();
        let mut notices = Vec::new();
        let mut seen = Vec::new();
        let mut deferred = Vec::new();
        let mut legacy = Vec::new();
        for (key, value) in pairs {
            let Some(param) = Param::from_key(&key) else {
                notices.push(ParamError {
                    message: "unknown parameter, ignored".to_string(),
                    key: quote(&key).trim_matches('"').to_string(),
                });
                continue;
            };
            if seen.contains(&param) {
                notices.push(ParamError {
                    key: key.clone(),
                    message: "given more than once; the first value is used".to_string(),
                });
                continue;
            }
            seen.push(param);
            if param.spec().section == Section::Legacy {
                // Applies to what the rest chose, whatever its place in the query.
                legacy.push((param, value));
                continue;
            }
            // The work limit depends on several parameters: apply the ones that shrink the
            // work first by deferring failures once and retrying at the end.
            if config.set(param, &value).is_err() {
                deferred.push((param, value));
            }
        }
        deferred.extend(legacy);
        for (param, value) in deferred {
            if let Err(error) = config.set(param, &value) {
                notices.push(ParamError {
                    key: error.key,
                    message: format!(
                        "{}; the default {} is used",
                        error.message,
                        config.get(param)
                    ),
                });
            }
        }
        (config, notices)
    }

    /// The URL query that reproduces this configuration (every parameter, so a link keeps its
    /// meaning even if a default changes; the attention view's only when it is shown).
    pub fn to_query(&self) -> String {
        // The language model's view reads the attention view's settings too (m, the draws).
        let attention = self.view != View::Kernel;
        let pairs: Vec<(&str, String)> = Param::in_section(Section::Kernel)
            .chain(Param::in_section(Section::Attention).filter(|_| attention))
            .filter(|p| p.spec().omitted_when.is_none_or(|omitted| !omitted(self)))
            .map(|p| (p.key(), self.get(p)))
            .collect();
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    }
}
