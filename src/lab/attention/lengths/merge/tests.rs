//! The units' reports merged, in any order, are the whole study's report but for what the
//! clock gives; a stop found in one unit cuts the points other units measured beyond it.

use super::super::crossover::CrossoverLength;
use super::super::series::{Kernel, LengthPoint, LengthSeries, POINT_BUDGET_MS};
use super::super::unit::{LengthsUnit, UnitKernels, study_head_sizes, study_lengths, study_units};
use super::super::{length_study, measure_unit};
use super::*;
use crate::lab::test_support::config_with;
use crate::numerics::attention::gaussian_head::GaussianHead;
use crate::numerics::attention::heads::{HEADS_ASSET_PATH, HeadSet, RealHeads};
use crate::numerics::attention::long::LinearForm;

fn stored_heads() -> RealHeads {
    let path = format!("{}/{HEADS_ASSET_PATH}", env!("CARGO_MANIFEST_DIR"));
    RealHeads::parse(&std::fs::read(path).expect("the committed asset")).expect("valid asset")
}

/// `report` without what the clock gives: times, rates, the model times, and the crossovers'
/// lengths and the errors read where they fall (their series, method, m, D, form and model
/// length stay).
fn without_clock(mut report: LengthsReport) -> LengthsReport {
    report.dense_rate = 0.0;
    report.exact_rate = 0.0;
    for series in &mut report.series {
        for p in &mut series.points {
            (p.ms, p.model_ms) = (0.0, 0.0);
            p.runs_ms.clear();
        }
    }
    for c in &mut report.crossovers {
        c.length = CrossoverLength::Beyond(0);
        (c.output_error, c.row_tv) = (None, None);
    }
    report
}

/// Every unit of a small study measured and merged, last unit first (so exact attention's own
/// unit last): the same series in the
/// same order, the same points (lengths, multiply-adds, memory, output errors, row TVs, bad
/// rows, bit for bit), the same skipped method, lengths, head sizes and m, and a crossover for
/// each method series as in the whole study.
#[test]
fn merged_units_are_the_whole_study_but_for_the_clock() {
    let config = config_with(&[
        ("view", "attention"),
        ("lmax", "256"),
        ("methods", "prf-pos,taylor,elu,ra"),
        ("features", "16"),
        ("layer", "2"),
        ("head", "5"),
    ]);
    let heads = stored_heads();
    let whole = length_study(&config, &heads).expect("the study runs");
    let head_sizes = GaussianHead::head_sizes(heads.shape().head_dim);
    assert_eq!(head_sizes, study_head_sizes(&config));
    let units = study_units(&study_lengths(256), &head_sizes);
    // Two lengths × two head sizes × two causalities, the first split in exact attention and
    // the methods.
    assert_eq!(units.len(), 2 * 2 * 2 + 1);
    assert_eq!(units[0].kernels, UnitKernels::Exact);
    assert_eq!(units[1].kernels, UnitKernels::Methods);
    let mut merged: Option<LengthsReport> = None;
    for unit in units.iter().rev() {
        let report = measure_unit(&config, &heads, unit).expect("the unit runs");
        assert!(report.dense_rate > 0.0);
        merged = Some(match merged {
            None => LengthsReport::from_unit(report),
            Some(mut merged) => {
                merged.merge_unit(report);
                merged
            }
        });
    }
    let merged = merged.expect("nine units");
    assert!(merged.dense_rate > 0.0 && merged.exact_rate > 0.0);
    for p in merged.series.iter().flat_map(|s| &s.points) {
        assert_eq!(p.model_ms, p.multiply_adds / merged.dense_rate * 1e3);
    }
    assert_eq!(without_clock(merged), without_clock(whole));
}

/// A unit the configuration does not have is an error, not a panic.
#[test]
fn a_unit_outside_the_study_is_an_error() {
    let config = config_with(&[("view", "attention"), ("lmax", "256"), ("methods", "elu")]);
    let heads = stored_heads();
    for (d, len) in [
        (32, 512),
        (48, 128),
        (32, 100),
        (0, 0),
        (usize::MAX, usize::MAX),
    ] {
        let unit = LengthsUnit {
            d,
            len,
            causal: false,
            kernels: UnitKernels::All,
            stopped: Vec::new(),
        };
        assert!(measure_unit(&config, &heads, &unit).is_err(), "{d} {len}");
    }
    let off = config_with(&[("view", "attention"), ("lmax", "0")]);
    let unit = &study_units(&[128], &[32])[0];
    assert!(measure_unit(&off, &heads, unit).is_err());
}

fn point(len: usize, ms: f64) -> LengthPoint {
    LengthPoint {
        len,
        ms,
        runs_ms: vec![ms],
        multiply_adds: (len * len) as f64,
        model_ms: 0.0,
        memory_bytes: 0.0,
        output_error: None,
        row_tv: None,
        bad_rows: 0,
    }
}

fn unit_report(d: usize, points: &[(usize, f64)], stopped_at: Option<usize>) -> LengthsReport {
    LengthsReport {
        layer: 0,
        head: 0,
        lengths: vec![128, 256, 512, 1024],
        head_sizes: vec![32, 64],
        features: vec![4],
        dense_rate: 1e9,
        exact_rate: 0.0,
        budget_ms: POINT_BUDGET_MS,
        series: vec![LengthSeries {
            d,
            kernel: Kernel::Exact,
            form: LinearForm::Bidirectional,
            points: points.iter().map(|&(l, ms)| point(l, ms)).collect(),
            stopped_at,
        }],
        crossovers: Vec::new(),
        skipped: Vec::new(),
    }
}

/// Units arriving out of order: points sorted by length, head sizes in the study's order, the
/// lengths the planned ones up to the longest measured, the best dense rate; a stop found at
/// 256 (so at 512) drops the point another unit measured at 512.
#[test]
fn out_of_order_units_and_a_stop() {
    let mut merged = LengthsReport::from_unit(unit_report(64, &[(256, 3.0)], None));
    assert_eq!(merged.lengths, vec![128, 256]);
    merged.merge_unit(unit_report(32, &[(512, 8.0)], None));
    merged.merge_unit(unit_report(32, &[(128, 1.0)], None));
    let ds: Vec<usize> = merged.series.iter().map(|s| s.d).collect();
    assert_eq!(ds, vec![32, 64]);
    let lens: Vec<usize> = merged.series[0].points.iter().map(|p| p.len).collect();
    assert_eq!(lens, vec![128, 512]);
    assert_eq!(merged.lengths, vec![128, 256, 512]);
    let mut faster = unit_report(32, &[(256, 2.0 * POINT_BUDGET_MS)], Some(512));
    faster.dense_rate = 2e9;
    merged.merge_unit(faster);
    let lens: Vec<usize> = merged.series[0].points.iter().map(|p| p.len).collect();
    assert_eq!(lens, vec![128, 256]);
    assert_eq!(merged.series[0].stopped_at, Some(512));
    assert_eq!(merged.dense_rate, 2e9);
    assert_eq!(
        merged.series[1].points[0].model_ms,
        (256.0 * 256.0) / 2e9 * 1e3
    );
    assert_eq!(merged.lengths, vec![128, 256]);
}
