//! How the attention view writes its numbers and methods: scientific notation, a method's
//! colour, means and the per-method summaries of the charts' text alternatives.

use crate::lab::attention::report::MainReport;
use crate::numerics::attention::methods::MethodId;

/// `method value` for every method of the main part, for a chart's text alternative.
pub(super) fn summary(
    report: &MainReport,
    value: impl Fn(&crate::lab::attention::report::MethodReport) -> f64,
) -> String {
    report
        .methods
        .iter()
        .map(|m| format!("{} {}", m.method.id(), sci(value(m))))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The mean of `values`, NaN when empty (shown as "–").
pub(super) fn mean_of(values: &[f64]) -> f64 {
    if values.is_empty() {
        f64::NAN
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

pub(super) fn css_colour(method: MethodId) -> String {
    let [r, g, b] = method.colour();
    format!("rgb({r},{g},{b})")
}

pub(super) fn sci(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3e}")
    } else {
        "–".to_string()
    }
}
