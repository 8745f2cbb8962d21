//! What the attention view's parts return, as plain data (serialised between the workers and
//! the page, and printed by `kernel-lab attention`): the parts, a request, each part's report.

use serde::{Deserialize, Serialize};

use crate::lab::config::{ExperimentConfig, HeadSource};
use crate::numerics::attention::methods::MethodId;
use crate::numerics::attention::{AttentionError, Evaluation};
use crate::numerics::stats::{mean_and_standard_error, median};

pub use crate::lab::attention::kernel_vs_attention::KernelVsAttention;
pub use crate::lab::attention::lengths::{LengthsReport, LengthsUnit};
pub use crate::lab::attention::share::ProblemShare;

/// The parts of the view, computed separately (in parallel in the pool) and shown as they
/// arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AttentionPart {
    /// One draw of every method: errors per row, the matrix block and its singular values.
    Main,
    /// R draws of every random method: bias and variance per row.
    BiasVariance,
    /// Entropy and spectral gap against the temperature.
    Temperature,
    /// Output error against the feature budget D.
    Budget,
    /// Every real head: data-chosen A and OPRF against Performer at equal m.
    HeadsTable,
    /// Kernel-level relative MSE against attention-level row TV, per method and problem.
    KernelVsAttention,
    /// Wall time against sequence length, exact against each method (`lmax` > 0).
    Lengths,
}

impl AttentionPart {
    /// Every part, in the order the page asks for them.
    pub const ALL: [AttentionPart; 7] = [
        AttentionPart::Main,
        AttentionPart::BiasVariance,
        AttentionPart::Temperature,
        AttentionPart::Budget,
        AttentionPart::HeadsTable,
        AttentionPart::KernelVsAttention,
        AttentionPart::Lengths,
    ];

    /// Whether the part applies to this configuration (the table needs the real heads; the
    /// length study runs only when asked for, `lmax` ≥ 128).
    pub fn applies(self, config: &ExperimentConfig) -> bool {
        match self {
            AttentionPart::HeadsTable => config.attention.source.is_real(),
            AttentionPart::Lengths => {
                config.attention.length_max >= crate::lab::attention::lengths::FIRST_LENGTH
            }
            _ => true,
        }
    }

    /// Whether the part reads every head (or every synthetic dataset) one after another, so
    /// that the page splits it over its workers in [`ProblemShare`]s and merges their answers
    /// ([`AttentionOutput::merge_shares`]).
    pub fn splits_in_shares(self) -> bool {
        matches!(
            self,
            AttentionPart::HeadsTable | AttentionPart::KernelVsAttention
        )
    }

    /// Whether the part reads the real heads' asset whatever the source (the length study
    /// fits its sequences to a real head).
    pub fn needs_heads(self) -> bool {
        self == AttentionPart::Lengths
    }
}

/// A message to a worker (and the command line's unit of work). The heads it reads are the
/// worker's own: the stored asset, read once ([`crate::lab::attention::stored_heads`]), or the
/// reader's text's, kept by the model worker that ran it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttentionRequest {
    pub config: ExperimentConfig,
    pub part: AttentionPart,
    /// The share of the problems this request computes (`None`: all); only the parts that
    /// read every head ([`AttentionPart::splits_in_shares`]) are split, one share per worker,
    /// and the page merges the answers ([`AttentionOutput::merge_shares`]).
    #[serde(default)]
    pub share: Option<ProblemShare>,
    /// The length study's one unit this request measures (`None`: the whole study); the page
    /// sends the units a few at a time and merges their reports
    /// ([`LengthsReport::merge_unit`]).
    #[serde(default)]
    pub lengths_unit: Option<LengthsUnit>,
}

impl AttentionRequest {
    /// Whether it reads the stored heads: they are its data, or the length study fits its
    /// sequences to one of them (on synthetic data). The reader's text's heads are the model
    /// workers' (the encoder's or the language model's), not these.
    pub fn reads_stored_heads(&self) -> bool {
        match self.config.attention.source {
            HeadSource::Minilm => true,
            HeadSource::Synthetic => self.part.needs_heads(),
            HeadSource::Text | HeadSource::Lm => false,
        }
    }
}

/// One method's measurements on one draw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MethodReport {
    pub method: MethodId,
    /// Features per token D (randomized attention: samples per query).
    pub feature_size: usize,
    pub evaluation: Evaluation,
    pub note: String,
    /// Total variation `½ Σ_j |P̂_ij − P_ij|` of the sampled rows with a usable denominator.
    pub row_tv: Vec<f64>,
    /// `|o_i − ô_i|` (Euclidean) of every row with a usable denominator.
    pub output_error: Vec<f64>,
    /// Rows whose denominator was not finite, ≤ 0 or near 0 (their P̂ row has no meaning).
    pub bad_rows: usize,
    /// P̂ on the first [`BLOCK`] tokens taken as their own sequence (row-major).
    pub block: Vec<f64>,
    /// Its singular values, largest first, and numerical rank.
    pub singular_values: Vec<f64>,
    pub rank: usize,
}

impl MethodReport {
    /// The mean output error (NaN without a usable row).
    pub fn mean_output_error(&self) -> f64 {
        mean_and_standard_error(&self.output_error).0
    }

    /// The median total variation.
    pub fn median_tv(&self) -> f64 {
        median(&self.row_tv).unwrap_or(f64::NAN)
    }
}

/// [`AttentionPart::Main`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MainReport {
    pub len: usize,
    pub d: usize,
    pub dv: usize,
    /// Tokens of the matrix block.
    pub block_len: usize,
    /// P on the block, its singular values, rank, mean row entropy and spectral gap.
    pub exact_block: Vec<f64>,
    pub exact_singular_values: Vec<f64>,
    pub exact_rank: usize,
    /// The rows whose total variation is measured.
    pub tv_rows: Vec<usize>,
    /// The mean norm of the exact outputs (the scale of the output errors).
    pub mean_output_norm: f64,
    pub methods: Vec<MethodReport>,
    /// The real head's tokens (the stored passage's, or the user's text's), for the axes and
    /// the hover; empty on synthetic data.
    pub tokens: Vec<String>,
}

/// One method's bias and variance over R draws, per row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BiasVariance {
    pub method: MethodId,
    pub draws: usize,
    /// `|mean_r ô_i − o_i|² − variance_i / R` (the squared bias with the mean's own noise
    /// removed; may be slightly negative), per usable row.
    pub squared_bias: Vec<f64>,
    /// `Σ_r |ô_i^r − mean|² / (R − 1)` per usable row.
    pub variance: Vec<f64>,
    /// Rows left out because a draw had an unusable denominator.
    pub bad_rows: usize,
    /// The mean over rows of `|mean_r ô_i − o_i|²` and its standard error over rows, for the
    /// unbiasedness check of the table.
    pub mean_squared_deviation: f64,
}

/// [`AttentionPart::BiasVariance`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BiasVarianceReport {
    pub methods: Vec<BiasVariance>,
}

/// One curve of the temperature chart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TemperatureCurve {
    /// `None`: softmax itself.
    pub method: Option<MethodId>,
    /// Mean row entropy at each temperature (`None` where a row is negative).
    pub entropy: Vec<Option<f64>>,
    /// Spectral gap `1 − |λ₂|` at each temperature.
    pub gap: Vec<Option<f64>>,
}

/// [`AttentionPart::Temperature`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TemperatureReport {
    pub temperatures: Vec<f64>,
    pub block_len: usize,
    pub curves: Vec<TemperatureCurve>,
}

/// One method's output error at the feature budgets it can take.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BudgetCurve {
    pub method: MethodId,
    /// `(D, mean |o_i − ô_i|, its standard error over two draws)`, D increasing.
    pub points: Vec<(usize, f64, f64)>,
}

/// [`AttentionPart::Budget`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BudgetReport {
    pub len: usize,
    pub curves: Vec<BudgetCurve>,
}

/// The methods of the real-head table: Performer's PRF, then the data-chosen A (positive and
/// hyperbolic, variance-adjusted; optimised) and OPRF (plain and with a variance-adjusted A).
pub const TABLE_METHODS: [&str; 6] = [
    "prf-pos",
    "cexp-var",
    "hcexp-var",
    "hcexp-opt",
    "oprf",
    "oprf-var",
];

/// Independent draws of ω per head and method in the table.
pub const TABLE_DRAWS: usize = 4;

/// One head's mean output error per method.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeadRow {
    pub layer: usize,
    pub head: usize,
    /// The mean over the passages, draws and rows of `|o_i − ô_i|`, per [`TABLE_METHODS`].
    pub errors: Vec<f64>,
}

/// [`AttentionPart::HeadsTable`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeadsTable {
    pub methods: Vec<MethodId>,
    pub features: usize,
    pub rows: Vec<HeadRow>,
    /// Heads on which each method's error is below Performer's (the first method's).
    pub wins: Vec<usize>,
    /// The median over heads of each method's error divided by Performer's.
    pub median_ratio: Vec<f64>,
}

impl HeadsTable {
    /// The table of `rows` (one per head): each method's wins against Performer (the first
    /// method) and its median error ratio to it, counted over the rows.
    pub fn from_rows(methods: Vec<MethodId>, features: usize, rows: Vec<HeadRow>) -> Self {
        let wins = (0..methods.len())
            .map(|k| rows.iter().filter(|r| r.errors[k] < r.errors[0]).count())
            .collect();
        let median_ratio = (0..methods.len())
            .map(|k| {
                let ratios: Vec<f64> = rows.iter().map(|r| r.errors[k] / r.errors[0]).collect();
                median(&ratios).unwrap_or(f64::NAN)
            })
            .collect();
        HeadsTable {
            methods,
            features,
            rows,
            wins,
            median_ratio,
        }
    }

    /// The shares' tables of one request, in share order, as the whole request's table: the
    /// rows one after another, the wins and medians counted again over all of them. An error if
    /// the shares do not belong together.
    pub fn merge(shares: Vec<HeadsTable>) -> Result<HeadsTable, AttentionError> {
        let first = shares
            .first()
            .ok_or_else(|| AttentionError::Data("no share of the heads".into()))?;
        let (methods, features) = (first.methods.clone(), first.features);
        if shares
            .iter()
            .any(|s| s.methods != methods || s.features != features)
        {
            return Err(AttentionError::Data(
                "the shares of the heads were computed with other settings".into(),
            ));
        }
        let rows = shares.into_iter().flat_map(|s| s.rows).collect();
        Ok(HeadsTable::from_rows(methods, features, rows))
    }

    /// The table as CSV: `layer,head,<method>…`, then the wins and median ratios.
    pub fn to_csv(&self) -> String {
        let ids: Vec<&str> = self.methods.iter().map(|m| m.id()).collect();
        let mut csv = format!("layer,head,{}\n", ids.join(","));
        for row in &self.rows {
            let errors: Vec<String> = row.errors.iter().map(|e| format!("{e:.6e}")).collect();
            csv.push_str(&format!(
                "{},{},{}\n",
                row.layer,
                row.head,
                errors.join(",")
            ));
        }
        let wins: Vec<String> = self.wins.iter().map(usize::to_string).collect();
        csv.push_str(&format!("wins against prf-pos,,{}\n", wins.join(",")));
        let ratios: Vec<String> = self
            .median_ratio
            .iter()
            .map(|r| format!("{r:.4}"))
            .collect();
        csv.push_str(&format!(
            "median error ratio to prf-pos,,{}\n",
            ratios.join(",")
        ));
        csv
    }
}

/// What a worker answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum AttentionOutput {
    Main(MainReport),
    BiasVariance(BiasVarianceReport),
    Temperature(TemperatureReport),
    Budget(BudgetReport),
    HeadsTable(HeadsTable),
    KernelVsAttention(KernelVsAttention),
    Lengths(LengthsReport),
}

impl AttentionOutput {
    /// The answers to the shares of one part ([`AttentionPart::splits_in_shares`]), in share
    /// order, as the whole part's answer; an error for answers of any other part, or of two.
    pub fn merge_shares(shares: Vec<AttentionOutput>) -> Result<AttentionOutput, AttentionError> {
        // Every answer as the first one's report, or an error.
        fn reports<T>(
            shares: Vec<AttentionOutput>,
            report: fn(AttentionOutput) -> Option<T>,
        ) -> Result<Vec<T>, AttentionError> {
            shares
                .into_iter()
                .map(|s| report(s).ok_or_else(not_one_part))
                .collect()
        }
        fn not_one_part() -> AttentionError {
            AttentionError::Data("the shares' answers are not of one split part".into())
        }
        match shares.first() {
            Some(AttentionOutput::HeadsTable(_)) => {
                let tables = reports(shares, |s| match s {
                    AttentionOutput::HeadsTable(table) => Some(table),
                    _ => None,
                })?;
                HeadsTable::merge(tables).map(AttentionOutput::HeadsTable)
            }
            Some(AttentionOutput::KernelVsAttention(_)) => {
                let parts = reports(shares, |s| match s {
                    AttentionOutput::KernelVsAttention(report) => Some(report),
                    _ => None,
                })?;
                KernelVsAttention::merge(parts).map(AttentionOutput::KernelVsAttention)
            }
            _ => Err(not_one_part()),
        }
    }
}
