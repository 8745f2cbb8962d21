//! The `kernel-lab` command line, as a library so that it is unit-testable and shares the
//! page's code path: `pair` runs one registered estimator on one (x, y) pair many times with
//! [`reference_estimate`] and compares it with the estimator's MSE formula; `estimators` lists
//! the registry; `experiment` parses the page's parameters with
//! [`ExperimentConfig::set`] (or [`ExperimentConfig::from_query`], strictly), runs
//! [`run_experiment`] and prints what the page shows, as JSON or CSV.
//!
//! Here: [`run`], [`USAGE`] and [`help`] and [`CliError`]. The flags are split by `lexopt` and their
//! numbers read in `args.rs`; each command has its file (`pair.rs`, `experiment.rs`,
//! `estimators.rs`), and its public items are re-exported here.
//!
//! The binary (`src/bin/kernel-lab.rs`) only collects the arguments, calls [`run`], prints
//! the text or the one-line error, and exits with [`CliError::EXIT_CODE`] on an error.
//! Nothing here touches the web, so it builds natively and for `wasm32-unknown-unknown`.
//!
//! [`reference_estimate`]: crate::numerics::estimators::reference_estimate
//! [`ExperimentConfig::set`]: crate::lab::config::ExperimentConfig::set
//! [`ExperimentConfig::from_query`]: crate::lab::config::ExperimentConfig::from_query

use std::fmt;

use serde::Serialize;

use crate::lab::kernel::experiment::run_experiment;
use crate::lab::kernel::export::{experiment_csv, experiment_json};

mod args;
mod attention;
mod estimators;
mod experiment;
mod lengths;
#[cfg(feature = "text-model")]
mod lm;
#[cfg(feature = "text-model")]
mod model;
mod pair;
#[cfg(feature = "text-model")]
mod shipped;
#[cfg(feature = "text-model")]
mod swap;

pub use args::{MAX_COMPONENT, MAX_VECTOR_LEN};
pub use attention::{
    ATTENTION_CSV_HEADER, AttentionCommand, AttentionReport, MethodMetrics, attention_csv,
    attention_report, run_attention_command,
};
pub use estimators::{EstimatorListing, estimator_listing};
pub use experiment::ExperimentRequest;
#[cfg(feature = "text-model")]
pub use lm::{default_lm_path, load_lm, run_lm_command};
#[cfg(feature = "text-model")]
pub use model::{ModelReport, default_model_path, load_model, run_model_command};
pub use pair::{
    DEFAULT_M, DEFAULT_TRIALS, MAX_TRIALS, MIN_TRIALS, PairReport, PairRequest, pair_report,
};

/// What `--help` prints.
pub const USAGE: &str = "\
kernel-lab: random-feature estimators of the softmax kernel SM(x, y) = exp(x·y)

USAGE:
    kernel-lab pair --x X --y Y [--estimator E] [--a A] [--m M] [--trials T] [--seed S]
                    [--theta T] [--cplxa A] [--coupling C]
    kernel-lab experiment [--d D --m M ... | --query QUERY] [--csv]
    kernel-lab estimators
    kernel-lab attention [--len L --features M --methods IDS ... | --query QUERY]
                         [--table | --budget | --kernel-vs-attention | --lengths] [--csv]
                         [--heads-file PATH]
    kernel-lab model --text TEXT [--qkv [--layer L] [--head H]] [--model-file PATH]
    kernel-lab swap [--text TEXT] [--methods IDS] [--features M] [--layers all|each|L,..]
                    [--swapdraws R] [--rank [--retrieval SET]] [--hedgehog [--hhsteps N]]
                    [--model-file PATH]
    kernel-lab lm --text TEXT [--method M [--layers L | --per-layer]] [--lm-file PATH]
    kernel-lab shipped [--out PATH] [--model-file PATH]
    kernel-lab --help

pair: estimate SM(x, y) for one pair T times, each trial with fresh ω, and print JSON with
the true value, the mean estimate, the empirical MSE, the estimator's MSE formula and the
standard errors of the mean estimate and of the empirical MSE.
    --x, --y        comma-separated numbers, same length (1 to 4096), |value| <= 1e100
    --estimator     an id of `kernel-lab estimators` (prf-pos, prf-hyp, cexp-mean, ...,
                    rff, cplx, hcplx, oprf, oprf-var, hcexp-opt); the older names prf,
                    cexp and hcexp (with --a) still work                      [prf = prf-pos]
    --a             with cexp or hcexp: identity, mean-only or variance-adjusted, A from
                    the pair's components taken as the means, variance 0      [identity]
    --theta         the complex A's angle, 0 to pi/2 (cplx, hcplx)            [0.785...]
    --cplxa         the complex A's magnitudes: identity, mean-only, variance-adjusted
                                                                              [identity]
    --coupling      how the rows of ω are drawn together: iid, orthogonal, simplex,
                    rqmc (--orf 1, the older flag, is orthogonal)             [iid]
    --m             random projections ω, 1 to 16384                          [64]
    --trials        independent trials, 2 to 10000000                         [10000]
    --seed          0 to 18446744073709551615                                 [0]

experiment: run the page's experiment and print its numbers as JSON (or CSV with --csv).
Parameters are the page's URL keys, as flags (--d 50 --m 64 --n 200 --datasets 5
--pairs 100 --seed 3 --scale 0.02 --xshape 0.02 --yshape 0.01 --xnorm 5 --ynorm 0.5
--est prf-hyp,hcexp-mean,hcexp-var --theta 0.5 --cplxa identity --coupling iid --omega shared)
or as one URL query (--query 'm=64&seed=3'), not both; a missing parameter takes the page's
default, a bad one is an error. --hyp 0/1 (legacy) puts the estimators in one form.
    --csv           print estimator,dataset,mse,max_rel_err rows instead of JSON

estimators: list every estimator (id, label, family, formula, source) as JSON.

attention: the attention view's per-method numbers (output error, row total variation, bad
rows, rank, squared bias and variance over --draws R) as JSON, or CSV with --csv. Takes the
page's URL keys as flags (--src synthetic|minilm|text|lm --passage 0 --layer 2 --head 5 --len 256
--dv 16 --features 256 --methods prf-pos,hcexp-var,taylor,lln,ra --deg 2 --draws 8 --ras 4,
and the kernel view's --d --seed --scale ... for synthetic data) or one --query.
    --table         every real head: Performer's PRF against the data-chosen A and OPRF at
                    equal m (mean |o - ô| per head, wins, median ratios)
    --budget        mean |o - ô| against the feature budget D per method, with each
                    method's fitted slope of ln error against ln D and the page's note
    --kernel-vs-attention
                    per method and problem (every real head with --src minilm, else 12
                    synthetic datasets of up to 256 tokens): the kernel's mean relative MSE and
                    the mean row total variation at D = --features, wins, agreement
    --lengths       wall time of exact attention (tiled) and of each method's linear
                    attention at L = 128, 256, ... up to --lmax [4096], head sizes 32 and 64,
                    m = --features/4 and --features, bidirectional and causal, on sequences
                    drawn from the real head --layer/--head's Gaussian; each method's
                    crossover length with exact attention and its error there, the dense
                    kernel's multiply-adds per second beside exact attention's
    --heads-file    the real heads' asset                      [assets/minilm-heads.bin]

    --src text --text TEXT  the model on a text instead of the stored passages (--model-file)
    --src lm --text TEXT    the causal language model's heads on a text (--layer 0-29, --head
                    0-8; causal mask; methods without a causal form left out; --lm-file)

model: the real all-MiniLM-L6-v2 on a text (the page's text view): its tokens (the model's own
WordPiece tokenizer, cut to 512), its ids, the sentence embedding (mean pooling, L2 norm), the
forward's multiply-adds and time, as JSON.
    --qkv           also every head's raw Q, K, V (x W^T + b, before the 1/sqrt(32) scaling),
                    or only --layer L (0 to 5) and/or --head H (0 to 11)
    --model-file    the converted model       [$SKL_MODEL_CACHE or ~/.cache/softmax-kernel-lab/
                    minilm-l6-v2-f16.safetensors, written by scripts/fetch-model.sh]

swap: approximate attention inside the model: each method of --methods replaces softmax in
every head of --layers (all, each = one layer at a time, or a list), the rest exact, on --text
(default: the two stored passages), --swapdraws draws of a random method (the attention view's
--features, --seed, ... apply). Per layer the attention outputs' and hidden states' relative
distance to the exact model's, the sentence embedding's cosine to the exact one, and the cost
(measured forward time, multiply-adds of attention against softmax's); with --rank also the
retrieval set's ranking (--retrieval: the query, then candidates, one per line; default the
preset) with top-1 kept and Kendall's tau; with --hedgehog the Hedgehog maps are trained
(--hhsteps Adam steps on a text of their own, evaluated on the first text; the curve is printed)
and swapped in after the methods.

lm: the causal language model SmolLM2-135M-Instruct on --text: its token ids and pieces, each
token's loss in nats (the first token has none), the perplexity and the five likeliest next
tokens at each position, as JSON. At most 1,024 tokens.
    --method M      also with the attention method M (a causal-capable one: prf-pos, the
                    hcexp and oprf variants, rfa, elu, lln, taylor) in place of softmax
    --layers L      where: all (the default), a layer 0..29, a list 1,4 or a range 3-7
    --per-layer     instead, the perplexity with each of those layers alone swapped
    --lm-file       the GGUF file             [$SKL_MODEL_CACHE or ~/.cache/softmax-kernel-lab/
                    smollm2-135m-instruct-q4_1.gguf, written by scripts/fetch-model.sh]

shipped: compute the text view's answers that do not depend on the text, for the page's
defaults (the Hedgehog maps trained on their own text, the retrieval set under each default
method), with the model worker's code, and write them for the page to ship; prints a summary.
    --out           where                               [assets/shipped-answers.bin]

Flags also accept --flag=value. Exit status: 0 on success, 2 on a rejected argument (one
line on stderr names it), 1 if the output cannot be written.
";

/// What `--help` prints: [`USAGE`], then every URL parameter as a flag with what it accepts and
/// its default, from the parameter table (`src/lab/config/params.rs`), so a new parameter is
/// listed without editing the text above.
pub fn help() -> String {
    use crate::lab::config::{ExperimentConfig, Param, Section};
    let defaults = ExperimentConfig::default();
    let mut text = USAGE.to_string();
    for (section, title) in [
        (Section::Kernel, "experiment, attention (data)"),
        (Section::Attention, "attention"),
    ] {
        text.push_str(&format!("\nPARAMETERS of {title}:\n"));
        for param in Param::in_section(section) {
            text.push_str(&format!(
                "    --{:<10} {}: {} [{}]\n",
                param.key(),
                param.label(),
                param.allowed(),
                defaults.get(param)
            ));
        }
    }
    text
}

/// A rejected argument: which one and why. Every error of [`run`] is one of these, and the
/// binary exits with [`CliError::EXIT_CODE`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CliError {
    argument: String,
    message: String,
}

impl CliError {
    /// The exit status of the binary for any [`CliError`].
    pub const EXIT_CODE: u8 = 2;

    /// An error about `argument`. Control characters (a newline in a quoted value, say) are
    /// escaped so that the error always prints as one line.
    pub fn new(argument: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            argument: one_line(&argument.into()),
            message: one_line(&message.into()),
        }
    }

    /// The argument the error is about, for example `--m`.
    pub fn argument(&self) -> &str {
        &self.argument
    }

    /// What is wrong and what is allowed.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The exit status of the binary for this error (always [`CliError::EXIT_CODE`]).
    pub fn exit_code(&self) -> u8 {
        Self::EXIT_CODE
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.argument, self.message)
    }
}

impl std::error::Error for CliError {}

/// `text` with every control character escaped (`\n`, `\u{1b}`, ...).
fn one_line(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

pub(crate) use crate::lab::config::quote;

/// Runs the command line `args` (the arguments after the program name) and returns the text
/// to print on standard output (it ends with a newline), or the rejected argument.
pub fn run(args: &[String]) -> Result<String, CliError> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(help());
    }
    let Some((command, rest)) = args.split_first() else {
        return Err(CliError::new(
            "<command>",
            "missing: expected `pair`, `experiment`, `attention` or `estimators` (see --help)",
        ));
    };
    match command.as_str() {
        "pair" => {
            let request = PairRequest::parse(rest)?;
            to_json(&pair_report(&request)?)
        }
        "estimators" => {
            if let Some(extra) = rest.first() {
                return Err(CliError::new(extra, "`estimators` takes no arguments"));
            }
            to_json(&estimator_listing())
        }
        "experiment" => {
            let request = ExperimentRequest::parse(rest)?;
            let result = run_experiment(&request.config)
                .map_err(|e| CliError::new("experiment", e.to_string()))?;
            if request.csv {
                Ok(experiment_csv(&result))
            } else {
                experiment_json(&result).map_err(|e| CliError::new("output", e.to_string()))
            }
        }
        "attention" => run_attention_command(&AttentionCommand::parse(rest)?),
        #[cfg(feature = "text-model")]
        "model" => model::run_model_command(rest),
        #[cfg(feature = "text-model")]
        "swap" => swap::run_swap_command(rest),
        #[cfg(feature = "text-model")]
        "lm" => lm::run_lm_command(rest),
        #[cfg(feature = "text-model")]
        "shipped" => shipped::run_shipped_command(rest),
        other => Err(CliError::new(
            "<command>",
            format!(
                "expected `pair`, `experiment`, `attention` or `estimators` (got {}; see --help)",
                quote(other)
            ),
        )),
    }
}

fn to_json<T: Serialize>(value: &T) -> Result<String, CliError> {
    let mut text =
        serde_json::to_string_pretty(value).map_err(|e| CliError::new("output", e.to_string()))?;
    text.push('\n');
    Ok(text)
}

/// `Some(value)` when it is finite.
fn finite(value: f64) -> Option<f64> {
    value.is_finite().then_some(value)
}

/// Helpers shared by the command line's unit tests.
#[cfg(test)]
pub(crate) mod test_support {
    use super::{CliError, run};

    /// A command line split on whitespace.
    pub fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    /// The error `line` must give.
    pub fn error_of(line: &str) -> CliError {
        run(&args(line)).expect_err(line)
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{args, error_of};
    use super::*;

    #[test]
    fn help_wins_anywhere_and_no_command_is_an_error() {
        assert_eq!(run(&args("--help")).unwrap(), help());
        assert!(help().contains("--features   random features m: an integer from 1 to 4096 [256]"));
        assert_eq!(run(&args("pair --m abc -h")).unwrap(), help());
        assert_eq!(error_of("").argument(), "<command>");
        assert_eq!(error_of("bogus").argument(), "<command>");
    }

    #[test]
    fn errors_name_the_argument_and_say_what_is_allowed() {
        let e = error_of("pair --x 1,2,3 --y 3,2,1 --m abc");
        assert_eq!(
            e.to_string(),
            "--m: must be an integer from 1 to 16384 (got \"abc\")"
        );
        assert_eq!(e.exit_code(), 2);
        for (line, argument) in [
            ("pair --x 1,2 --y 1,2,3", "--y"),
            ("pair --x 1,2 --y 1,2 --trials 0", "--trials"),
            ("pair --x 1,2 --y 1,2 --trials 10000001", "--trials"),
            ("pair --x 1,2 --y 1,2 --m 16385", "--m"),
            ("pair --x 1,2 --y 1,2 --m 2.5", "--m"),
            ("pair --x 1,2 --y 1,2 --seed -1", "--seed"),
            ("pair --x 1,2 --y 1,2 --estimator nope", "--estimator"),
            ("pair --x 1,2 --y 1,2 --a nope", "--a"),
            ("pair --x 1,2 --y 1,2 --estimator prf --a mean-only", "--a"),
            ("pair --x 1,2 --y 1,2 --bogus 3", "--bogus"),
            ("pair --x 1,nan --y 1,2", "--x"),
            ("pair --x 1,inf --y 1,2", "--x"),
            ("pair --x 1,1e101 --y 1,2", "--x"),
            ("pair --x 1,,2 --y 1,2,3", "--x"),
            ("pair --x= --y 1", "--x"),
            ("pair --y 1", "--x"),
            ("pair --x 1", "--y"),
            ("pair --x 1 --y 2 --m", "--m"),
            ("pair --x 1 --y 2 --m --trials 5", "--m"),
            ("pair --x 1 --x 2 --y 2", "--x"),
            ("pair stray", "\"stray\""),
            ("pair --x 1 --y 2 --m 16384 --trials 10000000", "--trials"),
            ("experiment --m abc", "--m"),
            ("experiment --m 0", "--m"),
            ("experiment --csv=1", "--csv"),
            ("experiment --est prf,nope", "--est"),
            ("experiment --bogus 1", "--bogus"),
            ("experiment --query m=abc", "--query"),
            ("experiment --query m=64 --seed 3", "--seed"),
            // Refused before the language model is read (no file needed).
            #[cfg(feature = "text-model")]
            ("lm", "--text"),
            #[cfg(feature = "text-model")]
            ("lm --text hi --method nope", "--method"),
            #[cfg(feature = "text-model")]
            ("lm --text hi --method elu --layers 30", "--layers"),
            #[cfg(feature = "text-model")]
            ("lm --text hi --layers 3", "--layers"),
            #[cfg(feature = "text-model")]
            ("lm --text hi --per-layer", "--per-layer"),
            #[cfg(feature = "text-model")]
            ("lm --text hi --train-layers 30", "--train-layers"),
            #[cfg(feature = "text-model")]
            ("lm --text hi --train-layers 0 --per-layer", "--per-layer"),
            #[cfg(feature = "text-model")]
            ("lm --text hi --lmlayers 2-1", "--lmlayers"),
        ] {
            let error = error_of(line);
            assert_eq!(error.argument(), argument, "{line}: {error}");
        }
    }

    #[test]
    fn vectors_longer_than_the_limit_are_refused_before_parsing() {
        let long = vec!["1"; MAX_VECTOR_LEN + 1].join(",");
        let e = run(&[
            "pair".into(),
            "--x".into(),
            long.clone(),
            "--y".into(),
            long,
        ])
        .unwrap_err();
        assert_eq!(e.argument(), "--x");
        assert!(e.message().contains("at most 4096"), "{e}");
    }

    #[test]
    fn control_characters_in_values_stay_on_one_line() {
        for line in [
            vec!["pair", "--x", "1\n2", "--y", "1"],
            vec!["experiment", "--m", "6\n4"],
            vec!["experiment", "--query", "m=6%0A4"],
            vec!["pair\n"],
        ] {
            let line: Vec<String> = line.into_iter().map(str::to_string).collect();
            let e = run(&line).unwrap_err();
            assert!(!e.to_string().contains('\n'), "{e}");
        }
    }
}
