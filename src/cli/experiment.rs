//! `kernel-lab experiment`: the page's parameters, as flags named by their URL keys or as one
//! URL query, through the page's own parser. What it prints, as JSON or CSV, is written by the
//! page's own export ([`crate::lab::kernel::export`]).

use super::CliError;
use super::args::{Flag, FlagKind, Flags};
use crate::lab::config::{ExperimentConfig, Param, ParamError};

/// A parsed `experiment` command.
#[derive(Clone, Debug, PartialEq)]
pub struct ExperimentRequest {
    pub config: ExperimentConfig,
    /// CSV rows instead of JSON.
    pub csv: bool,
}

impl ExperimentRequest {
    /// Parses the flags of `experiment`: the page's parameters by their URL keys, or one
    /// `--query`, and `--csv`.
    pub fn parse(args: &[String]) -> Result<Self, CliError> {
        let flags = Flags::parse("experiment", args, |name| match name {
            "csv" => Some(FlagKind::Switch),
            "query" => Some(FlagKind::Value),
            key => Param::from_key(key).map(|_| FlagKind::Value),
        })?;
        let csv = flags.has("--csv");
        let config = config_of(&flags)?;
        Ok(Self { config, csv })
    }
}

/// The configuration that `flags` give: the page's parameters as flags named by their URL keys,
/// or one `--query`, not both (`experiment` and `attention` alike).
pub(super) fn config_of(flags: &Flags) -> Result<ExperimentConfig, CliError> {
    let parameters: Vec<(Param, &Flag)> = flags
        .iter()
        .filter_map(|f| Param::from_key(&f.name[2..]).map(|p| (p, f)))
        .collect();
    match (flags.value("--query"), parameters.first()) {
        (Some(_), Some((_, flag))) => Err(CliError::new(
            &flag.name,
            "cannot be combined with --query: give every parameter in the query or every one as a flag",
        )),
        (Some(query), None) => config_from_query(query),
        (None, _) => config_from_flags(&parameters),
    }
}

/// The configuration of a URL query, read by the page's own parser; where the page would
/// keep a default and show a notice, the command line refuses.
fn config_from_query(query: &str) -> Result<ExperimentConfig, CliError> {
    let (config, notices) = ExperimentConfig::from_query(query);
    match notices.first() {
        Some(notice) => Err(CliError::new("--query", strict_notice(notice))),
        None => Ok(config),
    }
}

/// A notice of [`ExperimentConfig::from_query`] as an error: `key: message`, without the
/// page's note on what it does instead (keep the default, ignore, use the first value).
fn strict_notice(notice: &ParamError) -> String {
    let mut message = notice.message.as_str();
    for lenient in ["; the default ", "; the first value is used", ", ignored"] {
        if let Some((strict, _)) = message.split_once(lenient) {
            message = strict;
        }
    }
    format!("{}: {message}", notice.key)
}

/// The configuration of parameter flags, set in order with [`ExperimentConfig::set`]. The work
/// limit depends on several parameters, so a refused value is retried after the others (what
/// [`ExperimentConfig::from_query`] does), and the order of the flags does not matter.
pub(super) fn config_from_flags(
    parameters: &[(Param, &Flag)],
) -> Result<ExperimentConfig, CliError> {
    let mut config = ExperimentConfig::default();
    let mut deferred = Vec::new();
    // The legacy `--hyp` applies to the estimators chosen, wherever it stands.
    let mut parameters = parameters.to_vec();
    parameters.sort_by_key(|(param, _)| *param == Param::Hyperbolic);
    for (param, flag) in &parameters {
        if config.set(*param, &flag.value).is_err() {
            deferred.push((*param, *flag));
        }
    }
    for (param, flag) in deferred {
        config
            .set(param, &flag.value)
            .map_err(|e| CliError::new(&flag.name, e.message))?;
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::test_support::{args, error_of};

    #[test]
    fn query_notices_become_strict_errors_without_the_pages_fallback_note() {
        for (query, expected) in [
            (
                "m=abc",
                "m: must be an integer from 1 to 16384 (got \"abc\")",
            ),
            ("bogus=1", "bogus: unknown parameter"),
            ("m=5&m=6", "m: given more than once"),
        ] {
            let e = error_of(&format!("experiment --query {query}"));
            assert_eq!(e.message(), expected);
        }
    }

    #[test]
    fn flags_and_query_build_the_same_configuration_in_any_order() {
        let flags = ExperimentRequest::parse(&args("--d 2 --m 16384 --n 10 --est var,prf --hyp 0"))
            .unwrap();
        let reordered =
            ExperimentRequest::parse(&args("--m=16384 --hyp 0 --est var,prf --n 10 --d 2"))
                .unwrap();
        let query =
            ExperimentRequest::parse(&args("--query ?m=16384&d=2&n=10&est=prf,var&hyp=0")).unwrap();
        assert_eq!(flags, reordered);
        assert_eq!(flags, query);
        assert_eq!(flags.config.m, 16384);
        assert!(!flags.csv);
    }
}
