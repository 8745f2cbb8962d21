//! What the length study's charts show, decided without drawing: for one head size and one
//! form, milliseconds against L on log–log axes, exact attention dark grey (bidirectional
//! solid, causal dashed), each method in its colour (the smaller m thin, the larger m and maps
//! without random features thick), the multiply-add model as a thin dotted line of the same
//! colour, and each measured crossover as a marker on exact attention's line.

use crate::chart_geometry::attention::Axis;
use crate::lab::attention::lengths::{CrossoverLength, Kernel, LengthSeries, LengthsReport};
use crate::numerics::attention::long::LinearForm;
use crate::numerics::attention::methods::MethodId;

/// Exact attention's colour.
pub const EXACT_COLOUR: [u8; 3] = [64, 64, 64];
/// Line widths in CSS pixels: the smaller m, the larger m (and exact attention), the model.
pub const THIN: f64 = 1.25;
pub const THICK: f64 = 2.75;
pub const MODEL: f64 = 1.25;

/// How a line is stroked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stroke {
    Solid,
    Dashed,
    Dotted,
}

/// One line of a timing chart: `(L, ms)` in increasing L.
#[derive(Clone, Debug, PartialEq)]
pub struct TimingLine {
    pub colour: [u8; 3],
    pub stroke: Stroke,
    /// CSS pixels.
    pub width: f64,
    /// A dot at each measured point (not on the model's lines).
    pub markers: bool,
    pub points: Vec<(f64, f64)>,
}

/// A measured crossover: on exact attention's line at the crossover length, in the method's
/// colour, filled for the larger m (and maps without random features), hollow for the smaller.
#[derive(Clone, Debug, PartialEq)]
pub struct CrossoverMark {
    pub colour: [u8; 3],
    pub filled: bool,
    pub len: f64,
    pub ms: f64,
}

/// One chart: its lines (drawn in this order), its marks, and the lengths for the x ticks.
#[derive(Clone, Debug, PartialEq)]
pub struct TimingChart {
    pub lines: Vec<TimingLine>,
    pub marks: Vec<CrossoverMark>,
    pub lengths: Vec<usize>,
}

impl TimingChart {
    /// The log10 axes around every line and mark (`None` with nothing plottable).
    pub fn axes(&self) -> Option<(Axis, Axis)> {
        let xs = self
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.0))
            .chain(self.lengths.iter().map(|&l| l as f64));
        let ys = self
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .chain(self.marks.iter().map(|m| m.ms));
        let x = Axis::around(true, xs.filter_map(|v| Axis::on_axis(true, v)), 0.04)?;
        let y = Axis::around(true, ys.filter_map(|v| Axis::on_axis(true, v)), 0.06)?;
        // Points exist only where both coordinates do; a chart of x without y is empty.
        self.lines
            .iter()
            .flat_map(|l| &l.points)
            .any(|&(x, y)| Axis::on_axis(true, x).is_some() && Axis::on_axis(true, y).is_some())
            .then_some((x, y))
    }

    /// The x ticks: the measured lengths, on the axis (log10).
    pub fn x_ticks(&self) -> Vec<f64> {
        self.lengths
            .iter()
            .filter_map(|&l| Axis::on_axis(true, l as f64))
            .collect()
    }
}

/// A length on the x axis, short enough for a phone: 128, 256, 512, 1k, 2k, …, 16k.
pub fn length_tick_label(log_len: f64) -> String {
    let len = 10f64.powf(log_len).round();
    if !len.is_finite() {
        return String::new();
    }
    if len >= 1000.0 && (len % 1024.0 == 0.0) {
        format!("{}k", len / 1024.0)
    } else {
        format!("{len:.0}")
    }
}

/// Whether a method series is drawn thick: the larger m, or a map without random features.
pub fn is_thick(report: &LengthsReport, method: MethodId, m: usize) -> bool {
    !method.is_random() || report.features.iter().all(|&f| f <= m)
}

/// `y` on the log–log line through `points` at `x` (between the two points around it).
pub fn on_line(points: &[(f64, f64)], x: f64) -> Option<f64> {
    let usable: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.0 > 0.0 && p.1 > 0.0 && p.0.is_finite() && p.1.is_finite())
        .map(|p| (p.0.ln(), p.1.ln()))
        .collect();
    let lx = x.ln();
    if !lx.is_finite() {
        return None;
    }
    usable.windows(2).find_map(|w| {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        (x0 <= lx && lx <= x1 && x1 > x0).then(|| (y0 + (lx - x0) / (x1 - x0) * (y1 - y0)).exp())
    })
}

fn measured(series: &LengthSeries) -> Vec<(f64, f64)> {
    series.points.iter().map(|p| (p.len as f64, p.ms)).collect()
}

fn modelled(series: &LengthSeries) -> Vec<(f64, f64)> {
    series
        .points
        .iter()
        .map(|p| (p.len as f64, p.model_ms))
        .collect()
}

/// The chart at head size `d` for the methods' `form` (both exact lines are drawn, the
/// crossovers marked on the one of the same causality); `model`: draw the model's lines.
pub fn timing_chart(
    report: &LengthsReport,
    d: usize,
    form: LinearForm,
    model: bool,
) -> TimingChart {
    let mut lines = Vec::new();
    let mut model_lines = Vec::new();
    let mut exact_line: Option<Vec<(f64, f64)>> = None;
    for s in report.series.iter().filter(|s| s.d == d) {
        let (colour, stroke, width) = match s.kernel {
            Kernel::Exact => {
                if s.form.is_causal() == form.is_causal() {
                    exact_line = Some(measured(s));
                }
                let stroke = if s.form.is_causal() {
                    Stroke::Dashed
                } else {
                    Stroke::Solid
                };
                (EXACT_COLOUR, stroke, 2.0)
            }
            Kernel::Method { method, m, .. } if s.form == form => {
                let width = if is_thick(report, method, m) {
                    THICK
                } else {
                    THIN
                };
                (method.colour(), Stroke::Solid, width)
            }
            Kernel::Method { .. } => continue,
        };
        if model {
            model_lines.push(TimingLine {
                colour,
                stroke: Stroke::Dotted,
                width: MODEL,
                markers: false,
                points: modelled(s),
            });
        }
        lines.push(TimingLine {
            colour,
            stroke,
            width,
            markers: true,
            points: measured(s),
        });
    }
    let marks = exact_line
        .map(|exact| {
            report
                .crossovers
                .iter()
                .filter(|c| c.d == d && c.form == form)
                .filter_map(|c| {
                    let CrossoverLength::At(len) = c.length else {
                        return None;
                    };
                    Some(CrossoverMark {
                        colour: c.method.colour(),
                        filled: is_thick(report, c.method, c.m),
                        len,
                        ms: on_line(&exact, len)?,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    model_lines.extend(lines);
    TimingChart {
        lines: model_lines,
        marks,
        lengths: report.lengths.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::attention::lengths::{LengthPoint, crossovers};

    fn series(kernel: Kernel, form: LinearForm, times: &[(usize, f64)]) -> LengthSeries {
        LengthSeries {
            d: 64,
            kernel,
            form,
            points: times
                .iter()
                .map(|&(len, ms)| LengthPoint {
                    len,
                    ms,
                    runs_ms: vec![ms],
                    multiply_adds: len as f64,
                    model_ms: ms / 2.0,
                    memory_bytes: 0.0,
                    output_error: None,
                    row_tv: None,
                    bad_rows: 0,
                })
                .collect(),
            stopped_at: None,
        }
    }

    fn report() -> LengthsReport {
        let prf = |m| Kernel::Method {
            method: MethodId::from_id("prf-pos").expect("registered"),
            m,
            features: m,
        };
        let times = [(128, 1.0), (256, 4.0), (512, 16.0)];
        let mut all = vec![
            series(Kernel::Exact, LinearForm::Bidirectional, &times),
            series(Kernel::Exact, LinearForm::CausalChunked, &times),
        ];
        for form in [LinearForm::Bidirectional, LinearForm::CausalPrefix] {
            all.push(series(prf(4), form, &[(128, 2.0), (256, 3.0), (512, 8.0)]));
            all.push(series(
                prf(16),
                form,
                &[(128, 8.0), (256, 16.0), (512, 32.0)],
            ));
        }
        let crossovers = crossovers(&all);
        LengthsReport {
            layer: 0,
            head: 0,
            lengths: vec![128, 256, 512],
            head_sizes: vec![64],
            features: vec![4, 16],
            dense_rate: 1e9,
            exact_rate: 1e9,
            budget_ms: 2500.0,
            series: all,
            crossovers,
            skipped: Vec::new(),
        }
    }

    #[test]
    fn lines_styles_and_crossover_marks() {
        let report = report();
        let chart = timing_chart(&report, 64, LinearForm::Bidirectional, true);
        // Model lines first (2 exact + 2 methods), then the measured ones.
        assert_eq!(chart.lines.len(), 8);
        assert!(
            chart.lines[..4]
                .iter()
                .all(|l| l.stroke == Stroke::Dotted && !l.markers)
        );
        let measured = &chart.lines[4..];
        assert_eq!(measured[0].stroke, Stroke::Solid);
        assert_eq!(measured[1].stroke, Stroke::Dashed);
        assert_eq!(measured[0].colour, EXACT_COLOUR);
        assert_eq!((measured[2].width, measured[3].width), (THIN, THICK));
        assert_eq!(chart.lines[2].points[0], (128.0, 1.0), "the model's ms");
        // m = 4 crosses exact attention between 128 and 256; m = 16 only beyond 512.
        assert_eq!(chart.marks.len(), 1);
        let mark = &chart.marks[0];
        assert!(!mark.filled);
        assert!(mark.len > 128.0 && mark.len < 256.0, "{}", mark.len);
        let on_exact = on_line(&measured[0].points, mark.len).expect("on the line");
        assert!((mark.ms - on_exact).abs() < 1e-12);
        let without = timing_chart(&report, 64, LinearForm::CausalPrefix, false);
        assert_eq!(without.lines.len(), 4);
        assert_eq!(
            timing_chart(&report, 32, LinearForm::Bidirectional, true).axes(),
            None
        );
        let (x, y) = chart.axes().expect("axes");
        assert!(x.lo < 128f64.log10() && x.hi > 512f64.log10());
        assert!(y.lo < 0.5f64.log10() && y.hi > 32f64.log10());
        assert_eq!(chart.x_ticks().len(), 3);
    }

    #[test]
    fn tick_labels_and_interpolation() {
        let labels: Vec<String> = [128.0, 512.0, 1024.0, 16384.0]
            .iter()
            .map(|l: &f64| length_tick_label(l.log10()))
            .collect();
        assert_eq!(labels, ["128", "512", "1k", "16k"]);
        assert_eq!(length_tick_label(f64::INFINITY), "");
        let line = [(100.0, 1.0), (1000.0, 100.0)];
        let mid = on_line(&line, 10f64.powf(2.5)).expect("between");
        assert!((mid - 10.0).abs() < 1e-9);
        assert_eq!(on_line(&line, 50.0), None);
        assert_eq!(on_line(&[(1.0, f64::NAN)], 1.0), None);
        assert_eq!(on_line(&line, -1.0), None);
    }
}
