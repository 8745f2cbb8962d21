use super::*;
use crate::numerics::attention::exact::{softmax_matrix, softmax_output};
use crate::numerics::attention::methods::test_problems::{gaussian, max_difference, settings};
use crate::numerics::rng::{StreamPurpose, stream_rng};

fn run(data: &AttentionData, landmarks: usize, rows: &[usize]) -> MethodRun {
    let mut at = settings();
    at.landmarks = landmarks;
    let mut rng = stream_rng(0, StreamPurpose::Attention, 0, 0);
    NYSTROM
        .fit(data, &at, SharedFits::default())
        .and_then(|fitted| fitted.draw(data, &at, &mut rng, rows))
        .expect("Nyström computes on finite data")
}

#[test]
fn as_many_landmarks_as_tokens_give_exact_softmax() {
    // c = L: every segment is one token, F = A = B = P and P P⁺ P = P.
    let data = gaussian(12, 3, 2, 0.7, 1);
    let all: Vec<usize> = (0..12).collect();
    let exact = softmax_output(&data);
    let p = softmax_matrix(&data);
    for landmarks in [12, 24] {
        let run = run(&data, landmarks, &all);
        assert_eq!(run.attention.bad_rows, 0);
        assert_eq!(run.feature_size, 12);
        let output_gap = max_difference(&run.attention.output, &exact);
        let row_gap = max_difference(&run.attention.rows.concat(), &p);
        println!("c = {landmarks}: output gap {output_gap:e}, P̂ gap {row_gap:e}");
        assert!(
            output_gap < 1e-9,
            "c = {landmarks}: output off by {output_gap}"
        );
        assert!(row_gap < 1e-9, "c = {landmarks}: P̂ off by {row_gap}");
        assert_eq!(
            run.note.contains("clamped"),
            landmarks > 12,
            "c = {landmarks}: {}",
            run.note
        );
    }
}

#[test]
fn fewer_landmarks_give_finite_outputs_and_report_each_rows_sum() {
    // L = 40, c = 6 (segments of 6 or 7 tokens): a rank-6 approximation of P.
    let data = gaussian(40, 4, 3, 0.8, 2);
    let all: Vec<usize> = (0..40).collect();
    let run = run(&data, 6, &all);
    assert_eq!(run.attention.bad_rows, 0);
    assert!(run.attention.output.iter().all(|x| x.is_finite()));
    let mut negative_rows = 0;
    for (i, row) in run.attention.rows.iter().enumerate() {
        // The reported denominator is the row's sum, computed in O(L·c) without the row.
        let sum: f64 = row.iter().sum();
        let reported = run.attention.denominators[i];
        assert!(
            (sum - reported).abs() < 1e-12,
            "row {i}: {sum} vs {reported}"
        );
        // softmax(Q̃K̃ᵀ) is invertible here, so each row sums to 1 (A·1 = 1 ⇒ A⁻¹·1 = 1).
        assert!((sum - 1.0).abs() < 1e-9, "row {i} sums to {sum}");
        // ô = P̂ V: the formed row reproduces the output computed as (F A⁺)(B V).
        for c in 0..data.dv {
            let o: f64 = row
                .iter()
                .enumerate()
                .map(|(j, p)| p * data.value(j)[c])
                .sum();
            let fast = run.attention.output[i * data.dv + c];
            assert!((o - fast).abs() < 1e-12, "row {i}: {o} vs {fast}");
        }
        negative_rows += usize::from(row.iter().any(|p| *p < 0.0));
    }
    // The note counts the rows with negative entries (the pseudo-inverse is signed).
    assert!(
        run.note
            .contains(&format!("{negative_rows} of the 40 rows formed")),
        "{} (counted {negative_rows})",
        run.note
    );
    // The same P̂ from the three softmaxes formed here and A's inverse (LU, not the SVD).
    let landmarks = |rows: &[f64]| segment_means(rows, 40, 4, 6);
    let (q_marks, k_marks) = (landmarks(&data.q), landmarks(&data.k));
    let softmax = |scores: Vec<f64>| {
        let mut row = scores;
        softmax_in_place(&mut row);
        row
    };
    let mark = |m: &[f64], t: usize| m[t * 4..(t + 1) * 4].to_vec();
    let a = DMatrix::from_fn(6, 6, |s, t| {
        softmax(
            (0..6)
                .map(|u| dot(&mark(&q_marks, s), &mark(&k_marks, u)))
                .collect(),
        )[t]
    });
    let a_inverse = a.try_inverse().expect("softmax(Q̃K̃ᵀ) is invertible here");
    for (i, row) in run.attention.rows.iter().enumerate() {
        let f = softmax(
            (0..6)
                .map(|t| dot(data.query(i), &mark(&k_marks, t)))
                .collect(),
        );
        let f_a = DMatrix::from_row_slice(1, 6, &f) * &a_inverse;
        for (j, p) in row.iter().enumerate() {
            let b: Vec<f64> = (0..6)
                .map(|s| {
                    softmax(
                        (0..40)
                            .map(|l| dot(&mark(&q_marks, s), data.key(l)))
                            .collect(),
                    )[j]
                })
                .collect();
            let direct: f64 = (0..6).map(|t| f_a[(0, t)] * b[t]).sum();
            assert!((p - direct).abs() < 1e-9, "({i}, {j}): {p} vs {direct}");
        }
    }
    // Low rank, not exact: the output differs from softmax's.
    let gap = max_difference(&run.attention.output, &softmax_output(&data));
    assert!(gap > 1e-3, "rank 6 matched softmax to {gap}");
}

#[test]
fn segments_are_as_equal_as_possible() {
    // L = 7 rows of width 1 in c = 3 segments: tokens 0..2, 2..4, 4..7.
    let rows = [1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0];
    assert_eq!(segment_means(&rows, 7, 1, 3), vec![2.0, 6.0, 11.0]);
    // Width 2: each coordinate averaged on its own.
    let rows = [1.0, 10.0, 3.0, 30.0];
    assert_eq!(segment_means(&rows, 2, 2, 1), vec![2.0, 20.0]);
}

#[test]
fn a_single_landmark_or_none_never_panics() {
    // c = 1: A = [1], so P̂ = F B = 1 · mean-landmark softmax: every row is B's one row.
    let data = gaussian(9, 2, 2, 1.0, 3);
    for landmarks in [0, 1] {
        let run = run(&data, landmarks, &[0, 8]);
        assert_eq!(run.feature_size, 1);
        assert_eq!(run.attention.bad_rows, 0);
        assert_eq!(run.note.contains("clamped"), landmarks == 0, "{}", run.note);
        assert!(max_difference(&run.attention.rows[0], &run.attention.rows[1]) < 1e-15);
    }
}

#[test]
fn a_seeds_numbers_are_pinned() {
    let data = gaussian(20, 4, 2, 0.9, 4);
    let run = run(&data, 5, &[]);
    let first = &run.attention.output[..4];
    println!("{first:?}");
    let pinned = PINNED;
    for (got, want) in first.iter().zip(pinned) {
        assert!((got - want).abs() < 1e-12, "{first:?} vs {pinned:?}");
    }
}

/// What `a_seeds_numbers_are_pinned` printed when written.
const PINNED: [f64; 4] = [
    -3.51161993488214,
    -0.1440016694004287,
    4.040218000136764,
    -0.1544165177318666,
];
