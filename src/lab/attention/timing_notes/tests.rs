use super::*;
use crate::lab::attention::lengths::{LengthPoint, Skipped, crossovers};

fn method(id: &str) -> MethodId {
    MethodId::from_id(id).expect("a registered method")
}

/// A series with `times` (L, ms); exact attention's multiply-adds grow like L², a method's
/// like L; the method's row TV is `tv` at every length (bidirectional only).
fn series(
    d: usize,
    kernel: Kernel,
    form: LinearForm,
    times: &[(usize, f64)],
    tv: f64,
) -> LengthSeries {
    let exact = kernel == Kernel::Exact;
    LengthSeries {
        d,
        kernel,
        form,
        points: times
            .iter()
            .map(|&(len, ms)| LengthPoint {
                len,
                ms,
                runs_ms: vec![ms],
                multiply_adds: if exact {
                    64.0 * (len * len) as f64
                } else {
                    6400.0 * len as f64
                },
                model_ms: ms / 2.0,
                memory_bytes: if exact { 1000.0 } else { 2048.0 },
                output_error: (!exact).then_some(0.3),
                row_tv: (!exact && form == LinearForm::Bidirectional).then_some(tv),
                bad_rows: 0,
            })
            .collect(),
        stopped_at: None,
    }
}

/// At d = 32: exact attention 4× per doubling; Performer at m = 4 crosses between 256 and 512
/// (row TV 0.45), at m = 16 never (up to 512); elu + 1 is faster from the start (row TV 0.08).
fn report() -> LengthsReport {
    let d = 32;
    let prf = |m| Kernel::Method {
        method: method("prf-pos"),
        m,
        features: m,
    };
    let elu = Kernel::Method {
        method: method("elu"),
        m: 4,
        features: 32,
    };
    let exact_times = [(128, 1.0), (256, 4.0), (512, 16.0)];
    let mut all = vec![
        series(
            d,
            Kernel::Exact,
            LinearForm::Bidirectional,
            &exact_times,
            0.0,
        ),
        series(
            d,
            Kernel::Exact,
            LinearForm::CausalChunked,
            &exact_times,
            0.0,
        ),
    ];
    for form in [
        LinearForm::Bidirectional,
        LinearForm::CausalPrefix,
        LinearForm::CausalChunked,
    ] {
        all.push(series(
            d,
            prf(4),
            form,
            &[(128, 4.0), (256, 8.0), (512, 12.0)],
            0.45,
        ));
        all.push(series(
            d,
            prf(16),
            form,
            &[(128, 40.0), (256, 80.0), (512, 160.0)],
            0.2,
        ));
        all.push(series(
            d,
            elu,
            form,
            &[(128, 0.5), (256, 1.0), (512, 2.0)],
            0.08,
        ));
    }
    all[1].stopped_at = Some(512);
    let crossovers = crossovers(&all);
    LengthsReport {
        layer: 1,
        head: 2,
        lengths: vec![128, 256, 512],
        head_sizes: vec![32, 64],
        features: vec![4, 16],
        dense_rate: 7.25e9,
        exact_rate: 6.5e9,
        budget_ms: 2500.0,
        series: all,
        crossovers,
        skipped: vec![Skipped {
            method: method("ra"),
            reason: "quadratic by construction".into(),
        }],
    }
}

#[test]
fn numbers_as_the_page_writes_them() {
    assert_eq!(grouped(0), "0");
    assert_eq!(grouped(128), "128");
    assert_eq!(grouped(1234), "1,234");
    assert_eq!(grouped(16_384), "16,384");
    assert_eq!(grouped(1_000_000), "1,000,000");
    assert_eq!(crossover_cell(CrossoverLength::AtOrBelow(128)), "≤ 128");
    assert_eq!(crossover_cell(CrossoverLength::At(1234.4)), "≈ 1,234");
    assert_eq!(crossover_cell(CrossoverLength::Beyond(16_384)), "> 16,384");
    assert_eq!(crossover_cell(CrossoverLength::At(f64::NAN)), "≈ –");
    assert_eq!(model_cell(32.5), "≈ 33");
    assert_eq!(model_cell(f64::NAN), "–");
    assert_eq!(model_cell(-3.0), "–");
    assert_eq!(bytes_text(512.0), "512 B");
    assert_eq!(bytes_text(24_832.0), "24.2 KB");
    assert_eq!(bytes_text(532_684.0), "520 KB");
    assert_eq!(bytes_text(1023.0 * 1024.0 * 1024.0), "1023 MB");
    assert_eq!(bytes_text(4.0 * 16_384.0 * 16_384.0), "1.0 GB");
    assert_eq!(bytes_text(f64::INFINITY), "–");
    assert_eq!(error_text(Some(0.4657)), "0.47");
    assert_eq!(error_text(Some(112.2)), "112.20");
    assert_eq!(error_text(Some(0.0012)), "1.2e-3");
    assert_eq!(error_text(None), "–");
    assert_eq!(threshold_text(0.05), "0.05");
    assert_eq!(threshold_text(0.1), "0.1");
}

#[test]
fn one_row_per_method_series_with_its_crossover() {
    let report = report();
    let rows = crossover_rows(&report);
    // (2 Performer sizes + elu) × 3 forms.
    assert_eq!(rows.len(), 9);
    let find = |id: &str, m: &str, form| {
        rows.iter()
            .find(|r| r.method.id() == id && r.m == m && r.form == form)
            .expect("a row")
    };
    let crossing = find("prf-pos", "4", LinearForm::Bidirectional);
    assert_eq!(crossing.kind, "at");
    assert!(
        crossing.crossover.starts_with("≈ "),
        "{}",
        crossing.crossover
    );
    assert_eq!(crossing.error_len, Some(512));
    assert_eq!(crossing.row_tv, "0.45");
    assert_eq!(crossing.output_error, "0.30");
    // 6400 L = 64 L² at L = 100.
    assert_eq!(crossing.model, "≈ 100");
    assert_eq!(crossing.longest, Some(512));
    assert_eq!(crossing.memory, "2.0 KB");
    assert_eq!(crossing.exact_memory, "1000 B");
    assert_eq!(crossing.dense_memory, "1.0 MB");
    let never = find("prf-pos", "16", LinearForm::CausalPrefix);
    assert_eq!((never.kind, never.crossover.as_str()), ("beyond", "> 512"));
    assert_eq!(never.row_tv, "–", "no row TV in a causal form");
    let elu = find("elu", "–", LinearForm::CausalChunked);
    assert_eq!((elu.kind, elu.crossover.as_str()), ("at-or-below", "≤ 128"));
    assert_eq!(elu.features, 32);
}

#[test]
fn the_threshold_sentence_reads_the_report() {
    let report = report();
    let strict = threshold_sentence(&report, 32, 0.1).expect("a sentence at d = 32");
    assert!(strict.starts_with("At d = 32 (bidirectional), against exact attention: Performer (PRF) at m = 4 is faster from L ≈ "), "{strict}");
    assert!(
        strict.contains("but its row error at L = 512 is 0.45, above 0.1"),
        "{strict}"
    );
    assert!(strict.contains("Performer (PRF) at m = 16 is not faster up to L = 512 (its row error there is 0.20, above 0.1)"), "{strict}");
    assert!(strict.contains("elu + 1 is faster already at L = 128 (the shortest length measured), and its row error there is 0.08, within 0.1"), "{strict}");
    // A crossover "at or below" a longer length: the shorter ones read 0 ms.
    let mut coarse = report.clone();
    coarse.lengths.insert(0, 64);
    let coarse = threshold_sentence(&coarse, 32, 0.1).expect("a sentence");
    assert!(coarse.contains("elu + 1 is faster already at L = 128 (the shortest where both times were above zero on this clock)"), "{coarse}");
    assert!(
        strict.ends_with(
            "Faster than exact attention and within a row error of 0.1: elu + 1 (from L ≤ 128)."
        ),
        "{strict}"
    );
    let loose = threshold_sentence(&report, 32, 0.5).expect("a sentence");
    assert!(
        loose.contains("and its row error at L = 512 is 0.45, within 0.5"),
        "{loose}"
    );
    assert!(
        loose.contains(": Performer (PRF) at m = 4 (from L ≈ "),
        "{loose}"
    );
    let none = threshold_sentence(&report, 32, 0.05).expect("a sentence");
    assert!(none.ends_with("No method is both faster than exact attention and within a row error of 0.05 at d = 32, up to L = 512."), "{none}");
    assert_eq!(
        threshold_sentence(&report, 64, 0.1),
        None,
        "no series at d = 64"
    );
    let note = threshold_note(&report, 32, 0.1).expect("a note");
    assert_eq!(
        note.clauses.len(),
        3,
        "one clause per bidirectional method series"
    );
    assert!(
        note.clauses.iter().all(|c| !c.contains(';')),
        "{:?}",
        note.clauses
    );
    assert_eq!(note.sentence(), strict);
}

#[test]
fn rates_stops_and_skips() {
    let report = report();
    assert_eq!(
        rates_sentence(&report),
        "Exact attention ran at 6.50 GMAC/s (best over L); the model forward's dense kernel at 7.25 GMAC/s on this device."
    );
    assert_eq!(
        stopped_sentences(&report),
        vec!["exact attention (causal (chunks)) at d = 32 stopped at L = 512: one run took over 2.5 s".to_string()]
    );
    let mut later = report.clone();
    // A stop past the longest length asked for is no stop.
    later.series[1].stopped_at = Some(1024);
    assert!(stopped_sentences(&later).is_empty());
    assert_eq!(
        skipped_sentence(&report).as_deref(),
        Some("Not timed: randomized attention (quadratic by construction).")
    );
    later.skipped.clear();
    assert_eq!(skipped_sentence(&later), None);
}

#[test]
fn error_length_is_the_first_measured_length_at_or_above() {
    let report = report();
    let s = &report.series[2];
    assert_eq!(error_length(s, CrossoverLength::At(300.0)), Some(512));
    assert_eq!(error_length(s, CrossoverLength::At(256.0)), Some(256));
    assert_eq!(error_length(s, CrossoverLength::At(600.0)), None);
    assert_eq!(error_length(s, CrossoverLength::AtOrBelow(128)), Some(128));
}

#[test]
fn an_empty_or_hostile_report_never_panics() {
    let mut report = report();
    report.lengths.clear();
    for s in &mut report.series {
        for p in &mut s.points {
            p.ms = f64::NAN;
            p.memory_bytes = f64::NEG_INFINITY;
        }
    }
    report.crossovers.clear();
    report.budget_ms = f64::NAN;
    report.exact_rate = f64::INFINITY;
    let rows = crossover_rows(&report);
    assert!(rows.iter().all(|r| r.kind == "none" && r.memory == "–"));
    let sentence = threshold_sentence(&report, 32, 0.1).expect("a sentence");
    assert!(sentence.contains("was not measured at a length exact attention also reached"));
    assert!(rates_sentence(&report).contains("– GMAC/s"));
    report.series.clear();
    assert!(crossover_rows(&report).is_empty());
    assert!(stopped_sentences(&report).is_empty());
}
