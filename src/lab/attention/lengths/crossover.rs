//! Where a method's time meets exact attention's: for each method series, the length from which
//! it is faster than exact attention of the same head size and form (bidirectional against
//! bidirectional, each causal form against causal exact attention), interpolated on the log–log
//! chart between the two measured lengths around it, with the method's error there, and the
//! length the multiply-add model predicts.

use serde::{Deserialize, Serialize};

use super::series::{Kernel, LengthSeries};
use crate::numerics::attention::long::LinearForm;
use crate::numerics::attention::methods::MethodId;

/// Where the crossover lies.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum CrossoverLength {
    /// Faster already at the shortest length measured (this one).
    AtOrBelow(usize),
    /// Between two measured lengths, interpolated in log–log.
    At(f64),
    /// Not faster at any length measured together with exact attention, up to this one.
    Beyond(usize),
}

impl CrossoverLength {
    /// The length as a number (the bound for the open cases), for charts.
    pub fn value(self) -> f64 {
        match self {
            CrossoverLength::AtOrBelow(l) | CrossoverLength::Beyond(l) => l as f64,
            CrossoverLength::At(l) => l,
        }
    }
}

/// One method's crossover in one form at one head size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Crossover {
    pub d: usize,
    pub method: MethodId,
    pub m: usize,
    pub features: usize,
    pub form: LinearForm,
    pub length: CrossoverLength,
    /// The length where the multiply-add counts are equal.
    pub model_length: f64,
    /// The method's output error and row TV at the first measured length where it is faster
    /// (or the longest measured, if it never is).
    pub output_error: Option<f64>,
    pub row_tv: Option<f64>,
}

/// Every method series' crossover against its exact series.
pub fn crossovers(series: &[LengthSeries]) -> Vec<Crossover> {
    let exact = |d: usize, causal: bool| {
        series
            .iter()
            .find(|s| s.d == d && s.kernel == Kernel::Exact && s.form.is_causal() == causal)
    };
    series
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
            let reference = exact(s.d, s.form.is_causal())?;
            crossover(s, reference).map(|(length, at)| {
                let point = &s.points[at];
                Crossover {
                    d: s.d,
                    method,
                    m,
                    features,
                    form: s.form,
                    length,
                    model_length: model_length(s, reference),
                    output_error: point.output_error,
                    row_tv: point.row_tv,
                }
            })
        })
        .collect()
}

/// The crossover of `method` against `exact` and the index (in `method.points`) of the point
/// whose error describes it; `None` without a common length.
fn crossover(method: &LengthSeries, exact: &LengthSeries) -> Option<(CrossoverLength, usize)> {
    // (index in method.points, L, ln t_method − ln t_exact) at the lengths both measured.
    let common: Vec<(usize, usize, f64)> = method
        .points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let e = exact.points.iter().find(|e| e.len == p.len)?;
            (p.ms > 0.0 && e.ms > 0.0).then(|| (i, p.len, p.ms.ln() - e.ms.ln()))
        })
        .collect();
    let last = *common.last()?;
    // The first length from which the method stays faster.
    let from = common.iter().rposition(|c| c.2 > 0.0).map_or(0, |i| i + 1);
    if from == common.len() {
        return Some((CrossoverLength::Beyond(last.1), last.0));
    }
    let (at, len, diff) = common[from];
    if from == 0 {
        return Some((CrossoverLength::AtOrBelow(len), at));
    }
    let (_, before_len, before_diff) = common[from - 1];
    let (x0, x1) = ((before_len as f64).ln(), (len as f64).ln());
    let fraction = before_diff / (before_diff - diff);
    Some((CrossoverLength::At((x0 + fraction * (x1 - x0)).exp()), at))
}

/// The L where the method's multiply-adds (linear in L: `a L`) equal exact attention's
/// (`(d + dv) L²`, or `(d + dv) L(L + 1)/2` causal), from the first measured point of each.
fn model_length(method: &LengthSeries, exact: &LengthSeries) -> f64 {
    let (Some(p), Some(e)) = (method.points.first(), exact.points.first()) else {
        return f64::NAN;
    };
    let a = p.multiply_adds / p.len as f64;
    if exact.form.is_causal() {
        let per_pair = e.multiply_adds / (e.len as f64 * (e.len as f64 + 1.0) / 2.0);
        2.0 * a / per_pair - 1.0
    } else {
        let per_pair = e.multiply_adds / (e.len as f64 * e.len as f64);
        a / per_pair
    }
}

#[cfg(test)]
mod tests {
    use super::super::series::LengthPoint;
    use super::*;

    fn series(
        kernel: Kernel,
        form: LinearForm,
        times: &[(usize, f64)],
        per_len: f64,
    ) -> LengthSeries {
        LengthSeries {
            d: 32,
            kernel,
            form,
            points: times
                .iter()
                .map(|&(len, ms)| LengthPoint {
                    len,
                    ms,
                    runs_ms: vec![ms],
                    multiply_adds: if kernel == Kernel::Exact {
                        64.0 * (len * len) as f64
                    } else {
                        per_len * len as f64
                    },
                    model_ms: 0.0,
                    memory_bytes: 0.0,
                    output_error: Some(len as f64 / 1e4),
                    row_tv: None,
                    bad_rows: 0,
                })
                .collect(),
            stopped_at: None,
        }
    }

    fn method() -> Kernel {
        Kernel::Method {
            method: MethodId::first(),
            m: 16,
            features: 16,
        }
    }

    /// Exact time 4× per doubling, the method's 2×: they meet where the log–log lines cross,
    /// and the error is the first faster point's.
    #[test]
    fn interpolates_in_log_log() {
        let exact = series(
            Kernel::Exact,
            LinearForm::Bidirectional,
            &[(128, 1.0), (256, 4.0), (512, 16.0)],
            0.0,
        );
        // ln ratio: ln 4 at 128, ln 2 at 256, 0 at 512 → crossover exactly at 512 is "faster
        // from 512" only when strictly below; use 3.9 there.
        let linear = series(
            method(),
            LinearForm::Bidirectional,
            &[(128, 4.0), (256, 8.0), (512, 15.9)],
            6400.0,
        );
        let found = crossovers(&[exact.clone(), linear]);
        assert_eq!(found.len(), 1);
        let CrossoverLength::At(l) = found[0].length else {
            panic!("{:?}", found[0].length)
        };
        assert!(l > 256.0 && l < 512.0 && l > 500.0, "{l}");
        assert_eq!(found[0].output_error, Some(512.0 / 1e4));
        // 6400 L = 64 L² at L = 100.
        assert!((found[0].model_length - 100.0).abs() < 1e-9);

        let never = series(
            method(),
            LinearForm::Bidirectional,
            &[(128, 9.0), (256, 90.0), (512, 900.0)],
            1.0,
        );
        assert_eq!(
            crossovers(&[exact.clone(), never])[0].length,
            CrossoverLength::Beyond(512)
        );
        let always = series(
            method(),
            LinearForm::Bidirectional,
            &[(128, 0.5), (256, 1.0), (512, 2.0)],
            1.0,
        );
        assert_eq!(
            crossovers(&[exact.clone(), always])[0].length,
            CrossoverLength::AtOrBelow(128)
        );
        // Faster, then slower again (noise), then faster: the crossover is after the last slower.
        let noisy = series(
            method(),
            LinearForm::Bidirectional,
            &[(128, 0.5), (256, 5.0), (512, 2.0)],
            1.0,
        );
        let CrossoverLength::At(l) = crossovers(&[exact, noisy])[0].length else {
            panic!()
        };
        assert!(l > 256.0 && l < 512.0);
    }

    /// A causal method series is compared with causal exact attention, not bidirectional.
    #[test]
    fn causal_series_meet_causal_exact_attention() {
        let exact = series(
            Kernel::Exact,
            LinearForm::Bidirectional,
            &[(128, 100.0)],
            0.0,
        );
        let causal_exact = series(Kernel::Exact, LinearForm::CausalChunked, &[(128, 1.0)], 0.0);
        let linear = series(method(), LinearForm::CausalPrefix, &[(128, 2.0)], 1.0);
        let found = crossovers(&[exact, causal_exact, linear]);
        assert_eq!(found[0].length, CrossoverLength::Beyond(128));
    }
}
