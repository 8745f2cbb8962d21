//! `kernel-lab attention`: the attention view's parameters (the page's URL keys, as flags or
//! one `--query`), its parts computed by the page's own code ([`run_attention`]), and the
//! per-method numbers behind its charts and its real-head table, as JSON or CSV.

use std::path::PathBuf;

use serde::Serialize;

use super::args::{FlagKind, Flags};
use super::experiment::config_of;
use super::{CliError, finite, quote};
use crate::lab::attention::report::{
    AttentionOutput, AttentionPart, AttentionRequest, BiasVarianceReport, BudgetReport, HeadsTable,
    KernelVsAttention, MainReport, run_attention_on,
};
use crate::lab::attention::trend::{budget_notice, log_log_slope};
use crate::lab::config::{ExperimentConfig, HeadSource, Param, View};
use crate::numerics::attention::heads::{HEADS_ASSET_PATH, HeadSet, RealHeads};
use crate::numerics::stats::{mean_and_standard_error, median};

/// The stored heads' asset in this checkout (`--heads-file`'s default).
pub(super) fn default_heads_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(HEADS_ASSET_PATH)
}

/// What `attention` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CliPart {
    /// The per-method metrics of one draw, with bias and variance over R draws.
    Main,
    /// The real-head table (`--table`).
    Table,
    /// Output error against the feature budget, with each method's fitted slope (`--budget`).
    Budget,
    /// Kernel error against attention error per method and problem (`--kernel-vs-attention`).
    KernelVsAttention,
    /// Wall time against sequence length, exact against each method (`--lengths`).
    Lengths,
}

/// A parsed `attention` command.
#[derive(Clone, Debug, PartialEq)]
pub struct AttentionCommand {
    pub config: ExperimentConfig,
    /// Which part: `main` (the per-method metrics, with bias and variance), `table`,
    /// `budget` (the equal-budget curves and their fitted slopes) or `kernel-vs-attention`.
    pub part: CliPart,
    pub csv: bool,
    /// Where the real heads are read from.
    pub heads: PathBuf,
    /// The converted model, for `--src text` (`None`: the fetch script's cache).
    pub model_file: Option<PathBuf>,
    /// The language model's GGUF (`--src lm`).
    pub lm_file: Option<PathBuf>,
}

impl AttentionCommand {
    /// Parses the flags of `attention`.
    pub fn parse(args: &[String]) -> Result<Self, CliError> {
        let flags = Flags::parse("attention", args, |name| match name {
            "csv" | "table" | "budget" | "kernel-vs-attention" | "lengths" => {
                Some(FlagKind::Switch)
            }
            "query" | "heads-file" | "model-file" | "lm-file" => Some(FlagKind::Value),
            key => Param::from_key(key).map(|_| FlagKind::Value),
        })?;
        let mut config = config_of(&flags)?;
        config.view = View::Attention;
        let chosen: Vec<CliPart> = [
            ("--table", CliPart::Table),
            ("--budget", CliPart::Budget),
            ("--kernel-vs-attention", CliPart::KernelVsAttention),
            ("--lengths", CliPart::Lengths),
        ]
        .into_iter()
        .filter(|(flag, _)| flags.has(flag))
        .map(|(_, part)| part)
        .collect();
        let part = match chosen.as_slice() {
            [] => CliPart::Main,
            [one] => *one,
            _ => {
                return Err(CliError::new(
                    "--table",
                    "choose at most one of --table, --budget, --kernel-vs-attention and --lengths",
                ));
            }
        };
        if part == CliPart::Table && !config.attention.source.is_real() {
            config.attention.source = HeadSource::Minilm;
        }
        if part == CliPart::Lengths && config.attention.length_max == 0 {
            config.attention.length_max = super::lengths::DEFAULT_LENGTH_MAX;
        }
        let heads = flags
            .value("--heads-file")
            .map_or_else(default_heads_path, PathBuf::from);
        Ok(Self {
            config,
            part,
            csv: flags.has("--csv"),
            heads,
            model_file: flags.value("--model-file").map(PathBuf::from),
            lm_file: flags.value("--lm-file").map(PathBuf::from),
        })
    }

    /// The real heads, when they are the data (the length study fits its sequences to a real
    /// head whatever the source: the text's with `--src text`, else the stored ones).
    fn heads(&self) -> Result<Option<Box<dyn HeadSet>>, CliError> {
        match self.config.attention.source {
            HeadSource::Synthetic if self.part != CliPart::Lengths => return Ok(None),
            HeadSource::Synthetic => {}
            HeadSource::Minilm => {}
            HeadSource::Text => return self.text_heads(),
            HeadSource::Lm => return self.lm_heads(),
        }
        let bytes = std::fs::read(&self.heads).map_err(|e| {
            CliError::new(
                "--heads-file",
                format!("cannot read {}: {e}", quote(&self.heads.to_string_lossy())),
            )
        })?;
        RealHeads::parse(&bytes)
            .map(|heads| Some(Box::new(heads) as Box<dyn HeadSet>))
            .map_err(|e| CliError::new("--heads-file", e.to_string()))
    }
}

impl AttentionCommand {
    /// The heads of the model run on `--text` (those the model workers keep).
    #[cfg(feature = "text-model")]
    fn text_heads(&self) -> Result<Option<Box<dyn HeadSet>>, CliError> {
        let path = self
            .model_file
            .clone()
            .unwrap_or_else(super::default_model_path);
        let model = super::load_model(&path, "--model-file")?;
        let (_, heads) = model
            .run_keeping_heads(&self.config.attention.text)
            .map_err(|e| CliError::new("--text", e.to_string()))?;
        Ok(Some(Box::new(heads)))
    }

    /// The language model's heads on `--text` (those its workers keep for the page).
    #[cfg(feature = "text-model")]
    fn lm_heads(&self) -> Result<Option<Box<dyn HeadSet>>, CliError> {
        let path = self.lm_file.clone().unwrap_or_else(super::default_lm_path);
        let model = super::load_lm(&path, "--lm-file")?;
        let heads = crate::lab::models::smollm::lm_heads(&model, &self.config.attention.text)
            .map_err(|e| CliError::new("--text", e.to_string()))?;
        Ok(Some(Box::new(heads)))
    }

    #[cfg(not(feature = "text-model"))]
    fn text_heads(&self) -> Result<Option<Box<dyn HeadSet>>, CliError> {
        Err(CliError::new(
            "--src",
            "text needs the model: build kernel-lab with the feature text-model",
        ))
    }

    #[cfg(not(feature = "text-model"))]
    fn lm_heads(&self) -> Result<Option<Box<dyn HeadSet>>, CliError> {
        Err(CliError::new(
            "--src",
            "lm needs the language model: build kernel-lab with the feature text-model",
        ))
    }
}

/// One method's numbers: what the page's charts and legend show.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MethodMetrics {
    pub method: &'static str,
    pub label: String,
    pub feature_size: usize,
    pub evaluation: &'static str,
    /// Rows with an unusable denominator (≤ 0, near 0 or not finite).
    pub bad_rows: usize,
    pub mean_output_error: Option<f64>,
    pub median_output_error: Option<f64>,
    pub median_row_tv: Option<f64>,
    pub rank_of_block: usize,
    /// Over R draws: mean squared bias and mean variance of ô per row.
    pub mean_squared_bias: Option<f64>,
    pub mean_variance: Option<f64>,
    pub note: String,
}

/// What `attention` prints as JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AttentionReport {
    /// The configuration as the page's URL query.
    pub config: String,
    pub len: usize,
    pub d: usize,
    pub dv: usize,
    pub mean_output_norm: f64,
    pub exact_rank_of_block: usize,
    pub methods: Vec<MethodMetrics>,
}

/// The per-method metrics of the main part and the bias-variance part.
pub fn attention_report(
    config: &ExperimentConfig,
    main: &MainReport,
    bias: &BiasVarianceReport,
) -> AttentionReport {
    let methods = main
        .methods
        .iter()
        .map(|m| {
            let bv = bias.methods.iter().find(|b| b.method == m.method);
            let mean = |values: &[f64]| finite(mean_and_standard_error(values).0);
            MethodMetrics {
                method: m.method.id(),
                label: m.method.label().to_string(),
                feature_size: m.feature_size,
                evaluation: m.evaluation.label(),
                bad_rows: m.bad_rows,
                mean_output_error: finite(m.mean_output_error()),
                median_output_error: median(&m.output_error).and_then(finite),
                median_row_tv: finite(m.median_tv()),
                rank_of_block: m.rank,
                mean_squared_bias: bv.and_then(|b| mean(&b.squared_bias)),
                mean_variance: bv.and_then(|b| mean(&b.variance)),
                note: m.note.clone(),
            }
        })
        .collect();
    AttentionReport {
        config: config.to_query(),
        len: main.len,
        d: main.d,
        dv: main.dv,
        mean_output_norm: main.mean_output_norm,
        exact_rank_of_block: main.exact_rank,
        methods,
    }
}

/// The header of [`attention_csv`].
pub const ATTENTION_CSV_HEADER: &str = "method,feature_size,evaluation,bad_rows,mean_output_error,median_output_error,median_row_tv,rank_of_block,mean_squared_bias,mean_variance";

/// The per-method metrics as CSV (empty cells for undefined values).
pub fn attention_csv(report: &AttentionReport) -> String {
    let cell = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v:.6e}"));
    let mut csv = format!("{ATTENTION_CSV_HEADER}\n");
    for m in &report.methods {
        csv.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{}\n",
            m.method,
            m.feature_size,
            m.evaluation,
            m.bad_rows,
            cell(m.mean_output_error),
            cell(m.median_output_error),
            cell(m.median_row_tv),
            m.rank_of_block,
            cell(m.mean_squared_bias),
            cell(m.mean_variance),
        ));
    }
    csv
}

/// Runs `attention`: the text to print.
pub fn run_attention_command(command: &AttentionCommand) -> Result<String, CliError> {
    let heads = command.heads()?;
    let part = |part: AttentionPart| {
        let request = AttentionRequest {
            config: command.config.clone(),
            part,
            share: None,
            lengths_unit: None,
        };
        run_attention_on(&request, heads.as_deref())
            .map_err(|e| CliError::new("attention", e.to_string()))
    };
    match command.part {
        CliPart::Main => {}
        CliPart::Table => {
            let AttentionOutput::HeadsTable(table) = part(AttentionPart::HeadsTable)? else {
                return Err(CliError::new("attention", "unexpected answer"));
            };
            return if command.csv {
                Ok(table.to_csv())
            } else {
                super::to_json(&table_json(&table))
            };
        }
        CliPart::Budget => {
            let AttentionOutput::Budget(report) = part(AttentionPart::Budget)? else {
                return Err(CliError::new("attention", "unexpected answer"));
            };
            return if command.csv {
                Ok(budget_csv(&report))
            } else {
                super::to_json(&budget_json(&report))
            };
        }
        CliPart::Lengths => {
            let AttentionOutput::Lengths(report) = part(AttentionPart::Lengths)? else {
                return Err(CliError::new("attention", "unexpected answer"));
            };
            return if command.csv {
                Ok(crate::lab::attention::lengths::lengths_csv(&report))
            } else {
                super::to_json(&report)
            };
        }
        CliPart::KernelVsAttention => {
            let AttentionOutput::KernelVsAttention(report) =
                part(AttentionPart::KernelVsAttention)?
            else {
                return Err(CliError::new("attention", "unexpected answer"));
            };
            return if command.csv {
                Ok(kernel_vs_attention_csv(&report))
            } else {
                super::to_json(&kernel_vs_attention_json(&report))
            };
        }
    }
    let (AttentionOutput::Main(main), AttentionOutput::BiasVariance(bias)) = (
        part(AttentionPart::Main)?,
        part(AttentionPart::BiasVariance)?,
    ) else {
        return Err(CliError::new("attention", "unexpected answer"));
    };
    let report = attention_report(&command.config, &main, &bias);
    if command.csv {
        Ok(attention_csv(&report))
    } else {
        super::to_json(&report)
    }
}

/// The table as JSON: ids instead of the method type.
#[derive(Serialize)]
struct TableJson<'a> {
    methods: Vec<&'static str>,
    features: usize,
    rows: &'a [crate::lab::attention::report::HeadRow],
    wins: &'a [usize],
    median_ratio: &'a [f64],
}

fn table_json(table: &HeadsTable) -> TableJson<'_> {
    TableJson {
        methods: table.methods.iter().map(|m| m.id()).collect(),
        features: table.features,
        rows: &table.rows,
        wins: &table.wins,
        median_ratio: &table.median_ratio,
    }
}

/// One method's budget curve as JSON, with its fitted slope.
#[derive(Serialize)]
struct BudgetCurveJson {
    method: &'static str,
    /// `(D, mean |o_i − ô_i|, its standard error)`.
    points: Vec<(usize, f64, f64)>,
    /// Least-squares slope of ln error against ln D (`null` below three points).
    slope: Option<f64>,
}

#[derive(Serialize)]
struct BudgetJson {
    tokens: usize,
    curves: Vec<BudgetCurveJson>,
    /// The sentence the page prints under the chart.
    notice: String,
}

fn budget_json(report: &BudgetReport) -> BudgetJson {
    BudgetJson {
        tokens: report.len,
        curves: report
            .curves
            .iter()
            .map(|c| BudgetCurveJson {
                method: c.method.id(),
                points: c.points.clone(),
                slope: log_log_slope(&c.points),
            })
            .collect(),
        notice: budget_notice(report),
    }
}

/// The header of [`budget_csv`].
pub const BUDGET_CSV_HEADER: &str = "method,feature_size,mean_output_error,standard_error";

fn budget_csv(report: &BudgetReport) -> String {
    let mut csv = format!("{BUDGET_CSV_HEADER}\n");
    for curve in &report.curves {
        for (size, error, se) in &curve.points {
            csv.push_str(&format!(
                "{},{size},{error:.6e},{se:.6e}\n",
                curve.method.id()
            ));
        }
    }
    csv
}

#[derive(Serialize)]
struct KernelVsAttentionJson<'a> {
    budget: usize,
    tokens: usize,
    problems: &'a [String],
    methods: Vec<&'static str>,
    feature_sizes: &'a [usize],
    /// `[method][problem]`: mean relative MSE of the kernel over the problem's pairs.
    kernel_relative_mse: &'a [Vec<f64>],
    /// `[method][problem]`: mean row total variation.
    mean_row_tv: &'a [Vec<f64>],
    bad_rows: &'a [usize],
    attention_wins: Vec<usize>,
    kernel_wins: Vec<usize>,
    agreement: usize,
    mean_spearman: Option<f64>,
    without_kernel: Vec<&'static str>,
    off_budget: Vec<&'static str>,
    summary: String,
}

fn kernel_vs_attention_json(report: &KernelVsAttention) -> KernelVsAttentionJson<'_> {
    KernelVsAttentionJson {
        budget: report.budget,
        tokens: report.tokens,
        problems: &report.problems,
        methods: report.methods.iter().map(|m| m.id()).collect(),
        feature_sizes: &report.feature_sizes,
        kernel_relative_mse: &report.kernel,
        mean_row_tv: &report.attention,
        bad_rows: &report.bad_rows,
        attention_wins: report.attention_wins(),
        kernel_wins: report.kernel_wins(),
        agreement: report.agreement(),
        mean_spearman: report.mean_spearman(),
        without_kernel: report.without_kernel.iter().map(|m| m.id()).collect(),
        off_budget: report.off_budget.iter().map(|m| m.id()).collect(),
        summary: report.summary(),
    }
}

/// The header of [`kernel_vs_attention_csv`].
pub const KERNEL_VS_ATTENTION_CSV_HEADER: &str =
    "problem,method,feature_size,kernel_relative_mse,mean_row_tv";

fn kernel_vs_attention_csv(report: &KernelVsAttention) -> String {
    let mut csv = format!("{KERNEL_VS_ATTENTION_CSV_HEADER}\n");
    for (p, problem) in report.problems.iter().enumerate() {
        for (k, method) in report.methods.iter().enumerate() {
            csv.push_str(&format!(
                "{problem},{},{},{:.6e},{:.6e}\n",
                method.id(),
                report.feature_sizes[k],
                report.kernel[k][p],
                report.attention[k][p]
            ));
        }
    }
    csv
}
