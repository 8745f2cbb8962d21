//! The length study as the page writes it ([`crate::lab::attention::lengths`]): the crossover table's rows and
//! the sentences beside the charts, every number read from a [`LengthsReport`] (none typed in).
//! Plain text, so it builds and is tested natively; `ui::attention::lengths` shows it.

use crate::lab::attention::lengths::{
    CrossoverLength, Kernel, LengthSeries, LengthsReport, form_name,
};
use crate::numerics::attention::long::{LinearForm, flash_memory_bytes};
use crate::numerics::attention::methods::MethodId;

/// The row-error thresholds the page offers (mean total variation of a row of P̂ against P).
pub const TV_THRESHOLDS: [f64; 4] = [0.05, 0.1, 0.2, 0.5];

/// The forms in the order the page lists them.
pub const FORMS: [LinearForm; 3] = [
    LinearForm::Bidirectional,
    LinearForm::CausalChunked,
    LinearForm::CausalPrefix,
];

/// A form as the page names it.
pub fn form_label(form: LinearForm) -> &'static str {
    match form {
        LinearForm::Bidirectional => "bidirectional",
        LinearForm::CausalChunked => "causal (chunks)",
        LinearForm::CausalPrefix => "causal (prefix sums)",
    }
}

/// `n` with its thousands grouped by commas: 16384 → "16,384".
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A length as the page writes it (rounded, grouped); "–" if it is not a finite positive number.
pub fn length_text(l: f64) -> String {
    if l.is_finite() && l > 0.0 && l < 1e15 {
        grouped(l.round().max(1.0) as u64)
    } else {
        "–".to_string()
    }
}

/// A measured crossover: "≤ 128", "≈ 1,234" or "> 16,384".
pub fn crossover_cell(length: CrossoverLength) -> String {
    match length {
        CrossoverLength::AtOrBelow(l) => format!("≤ {}", grouped(l as u64)),
        CrossoverLength::At(l) => format!("≈ {}", length_text(l)),
        CrossoverLength::Beyond(l) => format!("> {}", grouped(l as u64)),
    }
}

/// The multiply-add model's crossover: "≈ 1,234" ("–" when it has none).
pub fn model_cell(l: f64) -> String {
    match length_text(l).as_str() {
        "–" => "–".to_string(),
        text => format!("≈ {text}"),
    }
}

/// Bytes as B, KB, MB or GB (powers of 1024, as memory is counted), "–" if not finite.
pub fn bytes_text(bytes: f64) -> String {
    if !bytes.is_finite() || bytes < 0.0 {
        return "–".to_string();
    }
    let (value, unit) = if bytes < 1024.0 {
        return format!("{bytes:.0} B");
    } else if bytes < 1024.0 * 1024.0 {
        (bytes / 1024.0, "KB")
    } else if bytes < 1024.0 * 1024.0 * 1024.0 {
        (bytes / (1024.0 * 1024.0), "MB")
    } else {
        (bytes / (1024.0 * 1024.0 * 1024.0), "GB")
    };
    // Three significant digits at most: 18.6 KB, 520 KB.
    if value < 100.0 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.0} {unit}")
    }
}

/// A small number (an error, a total variation) with two significant decimals; "–" for none.
pub fn error_text(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => {
            if v != 0.0 && (v.abs() < 0.01 || v.abs() >= 1000.0) {
                format!("{v:.1e}")
            } else {
                format!("{v:.2}")
            }
        }
        _ => "–".to_string(),
    }
}

/// A threshold as the page writes it (0.05, 0.1, …).
pub fn threshold_text(v: f64) -> String {
    let text = format!("{v}");
    if v.is_finite() { text } else { "–".into() }
}

/// How a series' method is named: "Performer (PRF) at m = 64", or the label alone for a map
/// without random features (its size does not depend on m).
pub fn method_name(method: MethodId, m: usize) -> String {
    if method.is_random() {
        format!("{} at m = {m}", method.label())
    } else {
        method.label().to_string()
    }
}

/// The measured length whose errors describe a crossover (the first measured length from which
/// the method is faster, or the longest measured if it never is): the smallest measured length
/// of `series` at or above the crossover.
pub fn error_length(series: &LengthSeries, length: CrossoverLength) -> Option<usize> {
    match length {
        CrossoverLength::AtOrBelow(l) | CrossoverLength::Beyond(l) => Some(l),
        CrossoverLength::At(l) => series
            .points
            .iter()
            .map(|p| p.len)
            .find(|&len| len as f64 >= l),
    }
}

/// One row of the crossover table: a method series (one head size, m and form).
#[derive(Clone, Debug, PartialEq)]
pub struct CrossoverRow {
    pub d: usize,
    pub method: MethodId,
    /// "64" for a random map; "–" for a map whose size does not depend on m.
    pub m: String,
    pub features: usize,
    pub form: LinearForm,
    /// [`crossover_cell`], or "–" without a length measured with exact attention.
    pub crossover: String,
    /// The crossover's kind for the tests: `at-or-below`, `at`, `beyond` or `none`.
    pub kind: &'static str,
    pub model: String,
    /// The output error and row TV at the crossover, and the length they were measured at.
    pub output_error: String,
    pub row_tv: String,
    pub error_len: Option<usize>,
    /// At the longest length the series measured: its working memory, exact attention's (same
    /// head size) and a dense L × L matrix of f32 (4·L² bytes).
    pub longest: Option<usize>,
    pub memory: String,
    pub exact_memory: String,
    pub dense_memory: String,
}

/// Exact attention's working memory at length `len` and head size `d`: the report's measured
/// point when exact attention reached `len`, else the tiled kernel's formula (the same count).
fn exact_memory(report: &LengthsReport, d: usize, len: usize) -> f64 {
    report
        .series
        .iter()
        .filter(|s| s.d == d && s.kernel == Kernel::Exact)
        .flat_map(|s| &s.points)
        .find(|p| p.len == len)
        .map_or_else(|| flash_memory_bytes(len, d), |p| p.memory_bytes)
}

/// One row per method series (head size, method, m, form), in the report's order.
pub fn crossover_rows(report: &LengthsReport) -> Vec<CrossoverRow> {
    report
        .series
        .iter()
        .filter_map(|s| {
            let Kernel::Method {
                method,
                m,
                features,
            } = s.kernel
            else {
                return None;
            };
            let crossover = report.crossover_of(s);
            let longest = s.points.last();
            let error_len = crossover.and_then(|c| error_length(s, c.length));
            Some(CrossoverRow {
                d: s.d,
                method,
                m: if method.is_random() {
                    m.to_string()
                } else {
                    "–".to_string()
                },
                features,
                form: s.form,
                crossover: crossover.map_or_else(|| "–".to_string(), |c| crossover_cell(c.length)),
                kind: match crossover.map(|c| c.length) {
                    Some(CrossoverLength::AtOrBelow(_)) => "at-or-below",
                    Some(CrossoverLength::At(_)) => "at",
                    Some(CrossoverLength::Beyond(_)) => "beyond",
                    None => "none",
                },
                model: crossover.map_or_else(|| "–".to_string(), |c| model_cell(c.model_length)),
                output_error: error_text(crossover.and_then(|c| c.output_error)),
                row_tv: error_text(crossover.and_then(|c| c.row_tv)),
                error_len,
                longest: longest.map(|p| p.len),
                memory: longest.map_or_else(|| "–".into(), |p| bytes_text(p.memory_bytes)),
                exact_memory: longest.map_or_else(
                    || "–".into(),
                    |p| bytes_text(exact_memory(report, s.d, p.len)),
                ),
                dense_memory: longest.map_or_else(
                    || "–".into(),
                    |p| bytes_text(4.0 * (p.len as f64) * (p.len as f64)),
                ),
            })
        })
        .collect()
}

/// One method series' clause of [`threshold_sentence`], and whether it is both faster than
/// exact attention and within the threshold there.
fn clause(
    report: &LengthsReport,
    series: &LengthSeries,
    threshold: f64,
) -> Option<(String, Option<String>)> {
    let Kernel::Method { method, m, .. } = series.kernel else {
        return None;
    };
    let name = method_name(method, m);
    let Some(c) = report.crossover_of(series) else {
        return Some((
            format!("{name} was not measured at a length exact attention also reached"),
            None,
        ));
    };
    let at = error_length(series, c.length).map_or_else(String::new, |l| match c.length {
        CrossoverLength::AtOrBelow(_) | CrossoverLength::Beyond(_) => " there".to_string(),
        CrossoverLength::At(_) => format!(" at L = {}", grouped(l as u64)),
    });
    let limit = threshold_text(threshold);
    let error = match c.row_tv.filter(|v| v.is_finite()) {
        Some(tv) if tv <= threshold => format!(
            "its row error{at} is {}, within {limit}",
            error_text(Some(tv))
        ),
        Some(tv) => format!(
            "its row error{at} is {}, above {limit}",
            error_text(Some(tv))
        ),
        None => format!("its row error{at} was not measured"),
    };
    let within = c.row_tv.is_some_and(|tv| tv.is_finite() && tv <= threshold);
    Some(match c.length {
        CrossoverLength::AtOrBelow(l) => {
            // Shorter lengths may have been measured at 0 ms (a coarse clock): no comparison.
            let which = if report.lengths.first() == Some(&l) {
                "the shortest length measured"
            } else {
                "the shortest where both times were above zero on this clock"
            };
            (
                format!(
                    "{name} is faster already at L = {} ({which}), {} {error}",
                    grouped(l as u64),
                    if within { "and" } else { "but" }
                ),
                within.then(|| format!("{name} (from L ≤ {})", grouped(l as u64))),
            )
        }
        CrossoverLength::At(l) => (
            format!(
                "{name} is faster from L ≈ {}, {} {error}",
                length_text(l),
                if within { "and" } else { "but" }
            ),
            within.then(|| format!("{name} (from L ≈ {})", length_text(l))),
        ),
        CrossoverLength::Beyond(l) => (
            format!(
                "{name} is not faster up to L = {} ({error})",
                grouped(l as u64)
            ),
            None,
        ),
    })
}

/// The note for one head size at a row-error threshold: its opening, one clause per method
/// series (bidirectional), and the verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct ThresholdNote {
    pub d: usize,
    /// "At d = 64 (bidirectional), against exact attention:"
    pub opening: String,
    /// "Performer (PRF) at m = 64 is faster from L ≈ 354, but its row error at L = 512 is
    /// 0.45, above 0.1", one per method series.
    pub clauses: Vec<String>,
    /// Which methods are both faster and within the threshold, or that none is.
    pub verdict: String,
}

impl ThresholdNote {
    /// The note as one sentence (opening, clauses joined by semicolons, verdict).
    pub fn sentence(&self) -> String {
        format!(
            "{} {}. {}",
            self.opening,
            self.clauses.join("; "),
            self.verdict
        )
    }
}

/// The note for head size `d` at a row-error `threshold` (bidirectional attention, the form
/// whose rows the study measures): each method's crossover and its row error there, then the
/// methods that are both faster and within the threshold. `None` without a method series at
/// `d`.
pub fn threshold_note(report: &LengthsReport, d: usize, threshold: f64) -> Option<ThresholdNote> {
    let clauses: Vec<(String, Option<String>)> = report
        .series
        .iter()
        .filter(|s| s.d == d && s.form == LinearForm::Bidirectional)
        .filter_map(|s| clause(report, s, threshold))
        .collect();
    if clauses.is_empty() {
        return None;
    }
    let good: Vec<&str> = clauses.iter().filter_map(|c| c.1.as_deref()).collect();
    let limit = threshold_text(threshold);
    let longest = report.lengths.last().copied().unwrap_or(0) as u64;
    let verdict = if good.is_empty() {
        format!(
            "No method is both faster than exact attention and within a row error of {limit} at d = {d}, up to L = {}.",
            grouped(longest)
        )
    } else {
        format!(
            "Faster than exact attention and within a row error of {limit}: {}.",
            good.join(", ")
        )
    };
    Some(ThresholdNote {
        d,
        opening: format!("At d = {d} (bidirectional), against exact attention:"),
        clauses: clauses.into_iter().map(|c| c.0).collect(),
        verdict,
    })
}

/// [`threshold_note`] as one sentence.
pub fn threshold_sentence(report: &LengthsReport, d: usize, threshold: f64) -> Option<String> {
    threshold_note(report, d, threshold).map(|n| n.sentence())
}

/// "Exact attention ran at X GMAC/s (best over L); the model forward's dense kernel at Y GMAC/s
/// on this device."
pub fn rates_sentence(report: &LengthsReport) -> String {
    let gmac = |rate: f64| {
        if rate.is_finite() && rate > 0.0 {
            format!("{:.2} GMAC/s", rate / 1e9)
        } else {
            "– GMAC/s".to_string()
        }
    };
    format!(
        "Exact attention ran at {} (best over L); the model forward's dense kernel at {} on this device.",
        gmac(report.exact_rate),
        gmac(report.dense_rate)
    )
}

/// A series as the page names it in the stopped list.
fn series_name(series: &LengthSeries) -> String {
    match series.kernel {
        Kernel::Exact => format!(
            "exact attention ({}) at d = {}",
            form_label(series.form),
            series.d
        ),
        Kernel::Method { method, m, .. } => format!(
            "{} ({}) at d = {}",
            method_name(method, m),
            form_label(series.form),
            series.d
        ),
    }
}

/// The series that stopped before the longest length asked for, one clause each: "exact
/// attention (bidirectional) at d = 64 stopped at L = 16,384: one run took over 2.5 s". Empty
/// when none stopped.
pub fn stopped_sentences(report: &LengthsReport) -> Vec<String> {
    let longest = report.lengths.last().copied().unwrap_or(0);
    let budget = if report.budget_ms.is_finite() {
        format!("{} s", report.budget_ms / 1e3)
    } else {
        "its budget".to_string()
    };
    report
        .series
        .iter()
        .filter_map(|s| {
            let at = s.stopped_at.filter(|&l| l <= longest)?;
            Some(format!(
                "{} stopped at L = {}: one run took over {budget}",
                series_name(s),
                grouped(at as u64)
            ))
        })
        .collect()
}

/// The chosen methods the study did not time, with their reasons.
pub fn skipped_sentence(report: &LengthsReport) -> Option<String> {
    (!report.skipped.is_empty()).then(|| {
        let each: Vec<String> = report
            .skipped
            .iter()
            .map(|s| format!("{} ({})", s.method.label(), s.reason))
            .collect();
        format!("Not timed: {}.", each.join("; "))
    })
}

/// The form's name in the CSV (re-exported for the page's data attributes).
pub fn form_key(form: LinearForm) -> &'static str {
    form_name(form)
}

#[cfg(test)]
mod tests;
