//! The length study as CSV: one row per measured point, with its series' crossover (the
//! command line's `attention --lengths --csv` and the page's download).

use super::crossover::CrossoverLength;
use super::report::LengthsReport;
use super::series::Kernel;
use crate::numerics::attention::long::LinearForm;

/// The header of [`lengths_csv`].
pub const LENGTHS_CSV_HEADER: &str = "d,kernel,m,features,form,len,ms,model_ms,multiply_adds,memory_bytes,output_error,row_tv,bad_rows,crossover_len,crossover_kind,model_crossover_len,crossover_output_error,crossover_row_tv";

/// A form's name in the CSV and the page.
pub fn form_name(form: LinearForm) -> &'static str {
    match form {
        LinearForm::Bidirectional => "bidirectional",
        LinearForm::CausalPrefix => "causal-prefix",
        LinearForm::CausalChunked => "causal",
    }
}

/// One row per measured point.
pub fn lengths_csv(report: &LengthsReport) -> String {
    let cell = |v: Option<f64>| {
        v.filter(|v| v.is_finite())
            .map_or_else(String::new, |v| format!("{v:.6e}"))
    };
    let mut csv = format!("{LENGTHS_CSV_HEADER}\n");
    for series in &report.series {
        let (kernel, m, features) = match series.kernel {
            Kernel::Exact => ("exact".to_string(), String::new(), String::new()),
            Kernel::Method {
                method,
                m,
                features,
            } => (method.id().to_string(), m.to_string(), features.to_string()),
        };
        let crossover = report.crossover_of(series);
        let (crossover_len, kind, model, error, tv) = match crossover {
            Some(c) => (
                cell(Some(c.length.value())),
                match c.length {
                    CrossoverLength::AtOrBelow(_) => "at-or-below",
                    CrossoverLength::At(_) => "at",
                    CrossoverLength::Beyond(_) => "beyond",
                },
                cell(Some(c.model_length)),
                cell(c.output_error),
                cell(c.row_tv),
            ),
            None => (
                String::new(),
                "",
                String::new(),
                String::new(),
                String::new(),
            ),
        };
        for p in &series.points {
            csv.push_str(&format!(
                "{},{kernel},{m},{features},{},{},{},{},{},{},{},{},{},{crossover_len},{kind},{model},{error},{tv}\n",
                series.d,
                form_name(series.form),
                p.len,
                cell(Some(p.ms)),
                cell(Some(p.model_ms)),
                cell(Some(p.multiply_adds)),
                cell(Some(p.memory_bytes)),
                cell(p.output_error),
                cell(p.row_tv),
                p.bad_rows,
            ));
        }
    }
    csv
}
