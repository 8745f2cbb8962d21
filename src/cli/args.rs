//! A command's arguments as flags, split by [`lexopt`], and the values the flags carry:
//! integers and comma-separated vectors of numbers.
//!
//! The rules (the README's "Command line"): every flag is long (`--m`), given at most once,
//! with its value as the next argument or after `=` (`--m 64`, `--m=64`); a value may start
//! with `-` (a negative number such as `--x -1,2`) but not with `--`, which is taken for the
//! next flag, so `--m --trials 5` reports `--m` as missing its value. A bare `--` is not the
//! end of the flags (as lexopt would read it) but an unknown flag, and anything that is not a
//! long flag (`stray`, `-x`) is refused whole. `--help` and `-h` are handled by
//! [`super::run`] before any parsing.

use std::ffi::{OsStr, OsString};

use lexopt::{Arg, Parser};

use super::{CliError, quote};

/// Most components of `--x` and `--y`.
pub const MAX_VECTOR_LEN: usize = 4096;
/// Largest magnitude of a component of `--x` or `--y`. Beyond it `|Ax + A^-T y|²` (with
/// `a_i` up to [`crate::numerics::heuristics::A_MAX`] and 4096 components) could overflow even in
/// the log domain; below it every logarithm the estimators form is finite.
pub const MAX_COMPONENT: f64 = 1e100;

/// Whether a flag takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FlagKind {
    Value,
    Switch,
}

/// One flag as given: its name with the dashes (`--m`) and its value (empty for a switch).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Flag {
    pub name: String,
    pub value: String,
}

/// The flags of one command, in the order given, each name at most once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Flags(Vec<Flag>);

impl Flags {
    /// Splits `args` (the arguments after the command's name) into flags. `kind_of` says
    /// which flag names (without the dashes) `command` knows and whether they take a value.
    pub fn parse(
        command: &str,
        args: &[String],
        kind_of: impl Fn(&str) -> Option<FlagKind>,
    ) -> Result<Self, CliError> {
        let mut parser = Parser::from_args(args);
        let mut flags: Vec<Flag> = Vec::new();
        loop {
            // Between two flags nothing of an argument is pending, so this is the argument
            // lexopt reads next, kept whole for the messages.
            let next = parser
                .try_raw_args()
                .and_then(|raw| raw.peek().map(text_of));
            if next.as_deref() == Some("--") {
                return Err(unknown_flag(command, "--"));
            }
            let name = match parser.next() {
                Ok(None) => break,
                Ok(Some(Arg::Long(name))) => format!("--{name}"),
                Ok(Some(Arg::Short(_) | Arg::Value(_))) => {
                    return Err(CliError::new(
                        quote(next.as_deref().unwrap_or_default()),
                        format!(
                            "unexpected argument for `{command}`: flags start with -- (see --help)"
                        ),
                    ));
                }
                // Only a `--flag=value` whose value was left unread, which the loop never does.
                Err(error) => return Err(CliError::new(command, error.to_string())),
            };
            let Some(kind) = kind_of(&name[2..]) else {
                return Err(unknown_flag(command, &name));
            };
            if flags.iter().any(|f| f.name == name) {
                return Err(CliError::new(&name, "given more than once"));
            }
            let value = match kind {
                FlagKind::Switch => {
                    if parser.optional_value().is_some() {
                        return Err(CliError::new(&name, "takes no value"));
                    }
                    String::new()
                }
                FlagKind::Value => {
                    // `try_raw_args` is `None` while the value of `--flag=value` is pending:
                    // that value is taken as it is, even when it starts with `--`.
                    let separate_is_missing = parser.try_raw_args().is_some_and(|raw| {
                        raw.peek()
                            .is_none_or(|value| text_of(value).starts_with("--"))
                    });
                    if separate_is_missing {
                        return Err(CliError::new(&name, "missing value"));
                    }
                    // `value` takes the next argument even when it starts with `-`.
                    match parser.value() {
                        Ok(value) => string_of(value),
                        Err(_) => return Err(CliError::new(&name, "missing value")),
                    }
                }
            };
            flags.push(Flag { name, value });
        }
        Ok(Self(flags))
    }

    /// The value of the flag `name` (with its dashes), if it was given.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.value.as_str())
    }

    /// Whether the flag `name` (with its dashes) was given.
    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|f| f.name == name)
    }

    /// The flags in the order given.
    pub fn iter(&self) -> impl Iterator<Item = &Flag> {
        self.0.iter()
    }
}

fn unknown_flag(command: &str, name: &str) -> CliError {
    CliError::new(name, format!("unknown flag for `{command}` (see --help)"))
}

/// An argument as text (the arguments come from `String`s, so nothing is lost).
fn text_of(arg: &OsStr) -> String {
    arg.to_string_lossy().into_owned()
}

fn string_of(arg: OsString) -> String {
    arg.into_string()
        .unwrap_or_else(|arg| arg.to_string_lossy().into_owned())
}

/// An integer in `min..=max`, written as digits or (like the page) as an integral number
/// such as `1e3`.
pub(super) fn parse_integer(flag: &str, text: &str, min: u64, max: u64) -> Result<u64, CliError> {
    let reject = || {
        CliError::new(
            flag,
            format!(
                "must be an integer from {min} to {max} (got {})",
                quote(text)
            ),
        )
    };
    let trimmed = text.trim();
    let value = match trimmed.parse::<u64>() {
        Ok(value) => value,
        Err(_) => {
            let real: f64 = trimmed.parse().map_err(|_| reject())?;
            // Above 2^53 a float no longer names one integer.
            if !(real.is_finite()
                && real.fract() == 0.0
                && (0.0..=9.007_199_254_740_992e15).contains(&real))
            {
                return Err(reject());
            }
            real as u64
        }
    };
    if value < min || value > max {
        return Err(reject());
    }
    Ok(value)
}

/// A comma-separated vector of finite numbers of magnitude at most [`MAX_COMPONENT`], with 1
/// to [`MAX_VECTOR_LEN`] components.
pub(super) fn parse_vector(flag: &str, text: &str) -> Result<Vec<f64>, CliError> {
    if text.trim().is_empty() {
        return Err(CliError::new(
            flag,
            "must be a non-empty, comma-separated list of numbers",
        ));
    }
    let len = text.split(',').count();
    if len > MAX_VECTOR_LEN {
        return Err(CliError::new(
            flag,
            format!("must have at most {MAX_VECTOR_LEN} components (got {len})"),
        ));
    }
    text.split(',')
        .enumerate()
        .map(|(i, item)| {
            let position = i + 1;
            let item = item.trim();
            let value: f64 = item.parse().map_err(|_| {
                CliError::new(
                    flag,
                    format!("component {position} is not a number (got {})", quote(item)),
                )
            })?;
            if !value.is_finite() {
                return Err(CliError::new(
                    flag,
                    format!("component {position} must be finite (got {})", quote(item)),
                ));
            }
            if value.abs() > MAX_COMPONENT {
                return Err(CliError::new(
                    flag,
                    format!(
                        "component {position} must have magnitude at most 1e100 (got {})",
                        quote(item)
                    ),
                ));
            }
            Ok(value)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{PairRequest, help, run};

    fn args(line: &[&str]) -> Vec<String> {
        line.iter().map(|a| a.to_string()).collect()
    }

    /// `--x`, `--y`, `--m` take a value, `--csv` is a switch.
    fn flags(line: &[&str]) -> Result<Flags, CliError> {
        Flags::parse("test", &args(line), |name| match name {
            "x" | "y" | "m" => Some(FlagKind::Value),
            "csv" => Some(FlagKind::Switch),
            _ => None,
        })
    }

    fn error(line: &[&str]) -> String {
        flags(line).expect_err(&line.join(" ")).to_string()
    }

    #[test]
    fn values_follow_as_the_next_argument_or_after_equals_in_the_order_given() {
        let given = flags(&["--m", "4", "--csv", "--x=1,2", "--y", "3"]).unwrap();
        let names: Vec<&str> = given.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["--m", "--csv", "--x", "--y"]);
        assert_eq!(given.value("--m"), Some("4"));
        assert_eq!(given.value("--x"), Some("1,2"));
        assert_eq!(given.value("--csv"), Some(""));
        assert!(given.has("--csv") && !given.has("--z"));
        // Only the first `=` splits; an empty value after `=` is a value (refused later).
        let given = flags(&["--x=a=b", "--y="]).unwrap();
        assert_eq!(given.value("--x"), Some("a=b"));
        assert_eq!(given.value("--y"), Some(""));
        assert_eq!(flags(&[]).unwrap(), Flags::default());
    }

    #[test]
    fn values_may_start_with_one_dash() {
        for line in [
            &["--x", "-1,2", "--y", "-4,-2"][..],
            &["--x=-1,2", "--y=-4,-2"],
            &["--y", "-4,-2", "--x", "-1,2"],
        ] {
            let given = flags(line).unwrap();
            assert_eq!(given.value("--x"), Some("-1,2"), "{line:?}");
            assert_eq!(given.value("--y"), Some("-4,-2"), "{line:?}");
            let request = PairRequest::parse(&args(line)).unwrap();
            assert_eq!(request.x, [-1.0, 2.0]);
            assert_eq!(request.y, [-4.0, -2.0]);
        }
        assert_eq!(flags(&["--x", "-"]).unwrap().value("--x"), Some("-"));
        assert_eq!(flags(&["--x", "-h"]).unwrap().value("--x"), Some("-h"));
        // After `=` even a leading `--` belongs to the value.
        assert_eq!(flags(&["--x=--1"]).unwrap().value("--x"), Some("--1"));
        assert_eq!(
            PairRequest::parse(&args(&["--x=--1", "--y", "1"]))
                .unwrap_err()
                .to_string(),
            "--x: component 1 is not a number (got \"--1\")"
        );
    }

    #[test]
    fn a_missing_value_names_its_flag() {
        for line in [
            &["--m"][..],
            &["--x", "1", "--m"],
            &["--m", "--x", "1"],
            &["--m", "--"],
            &["--m", "--bogus"],
        ] {
            assert_eq!(error(line), "--m: missing value", "{line:?}");
        }
    }

    #[test]
    fn a_flag_may_be_given_once() {
        for line in [
            &["--x", "1", "--x", "2"][..],
            &["--x=1", "--x", "2"],
            &["--x", "1", "--y", "2", "--x=3"],
            // Before its value is looked at: the second one has none.
            &["--x", "1", "--x"],
        ] {
            assert_eq!(error(line), "--x: given more than once", "{line:?}");
        }
        assert_eq!(error(&["--csv", "--csv"]), "--csv: given more than once");
    }

    #[test]
    fn unknown_flags_and_other_arguments_are_refused_by_name() {
        assert_eq!(
            error(&["--x", "1", "--bogus", "3"]),
            "--bogus: unknown flag for `test` (see --help)"
        );
        assert_eq!(
            error(&["--bogus=3"]),
            "--bogus: unknown flag for `test` (see --help)"
        );
        // A bare `--` does not end the flags: it is an unknown one.
        for line in [&["--"][..], &["--x", "1", "--", "--y", "2"], &["--=3"]] {
            assert_eq!(
                error(line),
                "--: unknown flag for `test` (see --help)",
                "{line:?}"
            );
        }
        for (line, argument) in [
            (&["stray"][..], "\"stray\""),
            (&["--x", "1", "2"], "\"2\""),
            (&["-x", "1"], "\"-x\""),
            (&["-mx"], "\"-mx\""),
            (&["-1"], "\"-1\""),
            (&["-"], "\"-\""),
            (&[""], "\"\""),
        ] {
            assert_eq!(
                error(line),
                format!(
                    "{argument}: unexpected argument for `test`: flags start with -- (see --help)"
                ),
                "{line:?}"
            );
        }
        assert_eq!(error(&["--csv=1"]), "--csv: takes no value");
        assert_eq!(error(&["--csv="]), "--csv: takes no value");
    }

    #[test]
    fn help_after_other_flags_prints_the_usage() {
        for line in [
            &["pair", "--x", "1", "--y", "2", "--help"][..],
            &["pair", "--x", "1", "-h"],
            &["pair", "--bogus", "--help"],
            &["experiment", "--m", "abc", "--csv", "--help"],
            &["estimators", "--help"],
            &["pair", "--x", "-h"],
        ] {
            assert_eq!(run(&args(line)).unwrap(), help(), "{line:?}");
        }
        // `--help=…` is no help flag.
        assert_eq!(
            run(&args(&["pair", "--help=1"])).unwrap_err().to_string(),
            "--help: unknown flag for `pair` (see --help)"
        );
    }
}
