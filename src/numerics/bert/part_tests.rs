//! The forward split by rows against the whole forward, on a small model with the real one's
//! structure (2 layers, hidden 16, 2 heads of 8, feed-forward 24) and pseudo-random weights:
//! every row-wise step and each query's attention depend on that row alone, so the parts give
//! the whole forward's hidden states, kept projections and layer states bit for bit; only the
//! embedding's f64 column sums are grouped otherwise. Texts run as a batch (`batch.rs`) give
//! each text's own forward bit for bit, embedding included.

use std::ops::Range;

use half::f16;

use super::linear::PackedLinear;
use super::weights::{BertConfig, BertWeights, EncoderLayer, LayerNorm};
use super::{Forward, Keep, KeyValues, ModelError, PartOutput, join_parts};

/// Deterministic values in about [−scale, scale].
fn values(count: usize, seed: usize, scale: f32) -> Vec<f32> {
    (0..count)
        .map(|i| {
            let x = (i * 7919 + seed * 104_729) % 1009;
            (x as f32 / 504.5 - 1.0) * scale
        })
        .collect()
}

fn linear(inputs: usize, outputs: usize, seed: usize) -> PackedLinear {
    let scale = 1.5 / (inputs as f32).sqrt();
    PackedLinear::new(
        &values(inputs * outputs, seed, scale),
        &values(outputs, seed + 1, 0.1),
        inputs,
        outputs,
    )
}

fn norm(h: usize, seed: usize) -> LayerNorm {
    LayerNorm {
        weight: values(h, seed, 0.3).iter().map(|w| 1.0 + w).collect(),
        bias: values(h, seed + 1, 0.1),
    }
}

fn tiny_model() -> BertWeights {
    let (h, inner, vocab, positions) = (16, 24, 30, 20);
    let config = BertConfig {
        vocab_size: vocab,
        hidden_size: h,
        num_hidden_layers: 2,
        num_attention_heads: 2,
        intermediate_size: inner,
        max_position_embeddings: positions,
        type_vocab_size: 1,
        layer_norm_eps: 1e-12,
        hidden_act: "gelu".into(),
    };
    let layers = (0..2)
        .map(|l| EncoderLayer {
            qkv: linear(h, 3 * h, 10 * l),
            attention_output: linear(h, h, 10 * l + 2),
            attention_norm: norm(h, 10 * l + 3),
            intermediate: linear(h, inner, 10 * l + 5),
            output: linear(inner, h, 10 * l + 6),
            output_norm: norm(h, 10 * l + 8),
        })
        .collect();
    BertWeights {
        config,
        word_embeddings: values(vocab * h, 91, 1.0)
            .into_iter()
            .map(f16::from_f32)
            .collect(),
        position_embeddings: values(positions * h, 92, 0.5),
        token_type_embedding: values(h, 93, 0.2),
        embedding_norm: norm(h, 94),
        layers,
        tokenizer_json: String::new(),
    }
}

const KEEP_ALL: Keep = Keep {
    qkv: true,
    layers: true,
};

/// The forward run as parts over `splits`, the parts' keys and values handed over in the
/// order `handover` (indices into `splits`), the outputs joined in reverse.
fn run_parts(
    model: &BertWeights,
    ids: &[u32],
    splits: &[Range<usize>],
    handover: &[usize],
) -> Result<Forward, ModelError> {
    let mut parts = splits
        .iter()
        .map(|rows| model.forward_part(ids, rows.clone(), KEEP_ALL))
        .collect::<Result<Vec<_>, _>>()?;
    while parts[0].next_layer().is_some() {
        let own: Vec<KeyValues> = parts
            .iter_mut()
            .map(|p| p.project())
            .collect::<Result<_, _>>()?;
        let handed: Vec<KeyValues> = handover.iter().map(|&i| own[i].clone()).collect();
        for part in &mut parts {
            part.finish_layer(&handed)?;
        }
    }
    let mut outputs = parts
        .into_iter()
        .map(|p| p.finish())
        .collect::<Result<Vec<_>, _>>()?;
    outputs.reverse();
    join_parts(outputs)
}

/// Two and three parts, uneven, one of a single row, handed over in any order, equal the
/// whole forward: bit for bit but for the embedding, which is within one f32 rounding (its
/// f64 sums regrouped differ by about 10⁻¹⁶ of their size before the rounding to f32).
#[test]
fn parts_equal_the_whole_forward() {
    let model = tiny_model();
    let ids: Vec<u32> = (0..13).map(|i| (i * 11 + 3) % 30).collect();
    let whole = model
        .forward_with(&ids, KEEP_ALL, None)
        .expect("the whole forward runs");
    assert_eq!(whole.qkv.as_ref().map(Vec::len), Some(2 * 3 * 13 * 16));
    let cases: [(&[Range<usize>], &[usize]); 5] = [
        (&[Range { start: 0, end: 13 }], &[0]),
        (&[0..6, 6..13], &[1, 0]),
        (&[0..1, 1..13], &[0, 1]),
        (&[0..4, 4..5, 5..13], &[2, 0, 1]),
        (&[7..13, 0..2, 2..7], &[1, 2, 0]),
    ];
    for (splits, handover) in cases {
        let joined =
            run_parts(&model, &ids, splits, handover).unwrap_or_else(|e| panic!("{splits:?}: {e}"));
        assert_eq!(joined.len, whole.len);
        assert_eq!(joined.hidden, whole.hidden, "{splits:?}: hidden");
        assert_eq!(joined.qkv, whole.qkv, "{splits:?}: projections");
        assert_eq!(joined.layers, whole.layers, "{splits:?}: layer states");
        for (a, b) in joined.embedding.iter().zip(&whole.embedding) {
            assert!(
                (a - b).abs() <= f32::EPSILON * b.abs(),
                "{splits:?}: embedding {a} vs {b}"
            );
        }
    }
}

/// A replacement that keeps softmax everywhere changes nothing, and sees each head's raw Q,
/// K, V as the kept projections hold them.
#[test]
fn a_replacement_that_keeps_softmax_changes_nothing() {
    let model = tiny_model();
    let ids: Vec<u32> = (0..9).map(|i| (i * 5 + 1) % 30).collect();
    let whole = model.forward_with(&ids, KEEP_ALL, None).expect("runs");
    let qkv = whole.qkv.clone().expect("kept");
    let mut seen = 0;
    let mut keep_softmax = |head: &super::HeadInputs| {
        let start = ((head.layer * 2 + head.head) * 3) * 9 * 8;
        assert_eq!(head.q, &qkv[start..start + 72]);
        assert_eq!(head.k, &qkv[start + 72..start + 144]);
        assert_eq!(head.v, &qkv[start + 144..start + 216]);
        seen += 1;
        None
    };
    let replaced = model
        .forward_with(&ids, KEEP_ALL, Some(&mut keep_softmax))
        .expect("runs");
    assert_eq!(seen, 4);
    assert_eq!(replaced, whole);
}

/// Layer 0's projections taken from an earlier forward of the same ids give that forward bit
/// for bit, with softmax and with a replacement (which sees the same inputs); the projections
/// returned are layer 0's kept ones; projections of another length, or for a later layer, are
/// errors.
#[test]
fn layer_zero_projections_taken_from_a_forward_of_the_same_text_change_nothing() {
    let model = tiny_model();
    let ids: Vec<u32> = (0..11).map(|i| (i * 7 + 2) % 30).collect();
    let (whole, first) = model
        .forward_from_first(&ids, KEEP_ALL, None, None)
        .expect("runs");
    assert_eq!(first.len(), 11 * 3 * 16);
    let kept = whole.qkv.clone().expect("kept");
    // Head 0 of layer 0: its queries are the first 8 of each row of the projections.
    let queries: Vec<f32> = first
        .chunks_exact(48)
        .flat_map(|r| r[..8].to_vec())
        .collect();
    assert_eq!(queries, kept[..11 * 8]);
    let (again, same) = model
        .forward_from_first(&ids, KEEP_ALL, None, Some(&first))
        .expect("runs");
    assert_eq!(again, whole);
    assert_eq!(same, first);
    let (mut calls, mut taken_calls) = (Vec::new(), Vec::new());
    let computed = model
        .forward_with(&ids, KEEP_ALL, Some(&mut own_value_replacement(&mut calls)))
        .expect("runs");
    let (taken, _) = model
        .forward_from_first(
            &ids,
            KEEP_ALL,
            Some(&mut own_value_replacement(&mut taken_calls)),
            Some(&first),
        )
        .expect("runs");
    assert_ne!(computed, whole, "the replacement changes the forward");
    assert_eq!(taken, computed);
    assert_eq!(taken_calls, calls);
    let short = model.forward_from_first(&ids, KEEP_ALL, None, Some(&first[1..]));
    assert!(
        matches!(&short, Err(ModelError::Parts(m)) if m.contains("expected 528")),
        "{short:?}"
    );
    let mut part = model.forward_part(&ids, 0..11, KEEP_ALL).expect("starts");
    let own = part.project().expect("projects");
    part.finish_layer(std::slice::from_ref(&own))
        .expect("layer 0");
    let late = part.project_from(&first);
    assert!(matches!(late, Err(ModelError::Parts(_))), "{late:?}");
}

/// A replacement that answers head (layer 0, head 1) with each query's own value scaled by the
/// mean of its query (a deterministic function of the head's inputs alone) and keeps softmax
/// elsewhere; counts its calls.
fn own_value_replacement(
    calls: &mut Vec<(usize, usize, usize)>,
) -> impl FnMut(&super::HeadInputs) -> Option<Result<Vec<f32>, String>> + '_ {
    move |head: &super::HeadInputs| {
        calls.push((head.layer, head.head, head.len));
        (head.layer == 0 && head.head == 1).then(|| {
            Ok(head
                .v
                .chunks_exact(head.dim)
                .zip(head.q.chunks_exact(head.dim))
                .flat_map(|(v, q)| {
                    let mean = q.iter().sum::<f32>() / head.dim as f32;
                    v.iter().map(move |x| x * mean)
                })
                .collect())
        })
    }
}

/// Texts run together give each text's own forward bit for bit (hidden states and embedding),
/// with softmax everywhere and with a replacement, which sees each text's head on its own
/// (layer by layer, head by head, text by text).
#[test]
fn a_batch_of_texts_equals_each_text_alone() {
    let model = tiny_model();
    let texts: Vec<Vec<u32>> = [9usize, 1, 14, 4]
        .iter()
        .enumerate()
        .map(|(t, &len)| {
            (0..len)
                .map(|i| ((i * 5 + t * 3 + 1) % 30) as u32)
                .collect()
        })
        .collect();
    let refs: Vec<&[u32]> = texts.iter().map(Vec::as_slice).collect();
    let alone = |ids: &[u32], replaced: bool| {
        let mut calls = Vec::new();
        let mut replace = own_value_replacement(&mut calls);
        let forward = model
            .forward_with(
                ids,
                Keep::default(),
                replaced.then_some(&mut replace as super::Replacement),
            )
            .expect("runs");
        (forward.hidden, forward.embedding)
    };
    for replaced in [false, true] {
        let mut calls = Vec::new();
        let mut replace = own_value_replacement(&mut calls);
        let batch = model
            .forward_batch(
                &refs,
                replaced.then_some(&mut replace as super::Replacement),
            )
            .expect("runs");
        drop(replace);
        assert_eq!(batch.len(), texts.len());
        for (ids, forward) in refs.iter().zip(&batch) {
            assert_eq!(forward.len, ids.len());
            assert_eq!(
                (forward.hidden.clone(), forward.embedding.clone()),
                alone(ids, replaced)
            );
        }
        if replaced {
            let expected: Vec<(usize, usize, usize)> = (0..2)
                .flat_map(|layer| {
                    (0..2).flat_map(move |head| [9, 1, 14, 4].map(|len| (layer, head, len)))
                })
                .collect();
            assert_eq!(calls, expected);
        }
    }
    // The replacement changes the batch (so the comparison above can fail).
    let plain = model.forward_batch(&refs, None).expect("runs");
    let mut calls = Vec::new();
    let mut replace = own_value_replacement(&mut calls);
    let replaced = model
        .forward_batch(&refs, Some(&mut replace))
        .expect("runs");
    assert_ne!(plain[0].embedding, replaced[0].embedding);
}

/// A batch with a text that cannot run, or whose replacement fails, is an error that says why.
#[test]
fn a_batch_says_why_it_cannot_run() {
    let model = tiny_model();
    let good: &[u32] = &[1, 2, 3];
    assert_eq!(
        model.forward_batch(&[good, &[]], None),
        Err(ModelError::NoTokens)
    );
    assert!(matches!(
        model.forward_batch(&[good, &[1, 99]], None),
        Err(ModelError::Tokenizer(_))
    ));
    let mut fail = |_: &super::HeadInputs| Some(Err("no".to_string()));
    assert_eq!(
        model.forward_batch(&[good], Some(&mut fail)),
        Err(ModelError::Replacement("no".into()))
    );
    assert_eq!(model.forward_batch(&[], None), Ok(Vec::new()));
}

fn parts_error<T: std::fmt::Debug>(result: Result<T, ModelError>) -> String {
    match result {
        Err(ModelError::Parts(reason)) => reason,
        other => panic!("expected a parts error, got {other:?}"),
    }
}

/// Parts that do not fit are errors, not panics: a gap, an overlap, an empty part, rows past
/// the text, keys of the wrong size, steps out of order, and outputs that do not join.
#[test]
fn bad_part_sets_are_errors() {
    let model = tiny_model();
    let ids: Vec<u32> = (0..8).collect();
    let keep = Keep::default();
    assert!(parts_error(model.forward_part(&ids, 3..3, keep)).contains("non-empty"));
    assert!(parts_error(model.forward_part(&ids, 5..9, keep)).contains("non-empty"));
    assert_eq!(
        model.forward_part(&[], 0..1, keep).map(|_| ()),
        Err(ModelError::NoTokens)
    );

    let mut a = model.forward_part(&ids, 0..3, keep).expect("a part");
    let mut b = model.forward_part(&ids, 3..8, keep).expect("a part");
    assert!(parts_error(a.finish_layer(&[])).contains("before project"));
    let (ka, kb) = (
        a.project().expect("projects"),
        b.project().expect("projects"),
    );
    let gap = KeyValues {
        rows: 4..8,
        keys: kb.keys[16..].to_vec(),
        values: kb.values[16..].to_vec(),
    };
    assert!(parts_error(a.finish_layer(&[ka.clone(), gap])).contains("3..4 are in no part"));
    assert!(parts_error(a.finish_layer(std::slice::from_ref(&ka))).contains("3..8 are in no part"));
    assert!(
        parts_error(a.finish_layer(&[ka.clone(), kb.clone(), ka.clone()])).contains("two parts")
    );
    let short = KeyValues {
        keys: kb.keys[1..].to_vec(),
        ..kb.clone()
    };
    assert!(parts_error(a.finish_layer(&[ka.clone(), short])).contains("expected 80"));
    let past = KeyValues {
        rows: 3..9,
        keys: vec![0.0; 96],
        values: vec![0.0; 96],
    };
    assert!(parts_error(a.finish_layer(&[ka.clone(), past])).contains("past"));
    let empty = KeyValues {
        rows: 3..3,
        keys: vec![],
        values: vec![],
    };
    assert!(parts_error(a.finish_layer(&[ka.clone(), empty, kb.clone()])).contains("empty"));

    // The good set still works after the refusals; finishing early is an error.
    a.finish_layer(&[kb.clone(), ka.clone()]).expect("fits");
    b.finish_layer(&[ka, kb]).expect("fits");
    assert_eq!(a.next_layer(), Some(1));
    assert!(parts_error(a.finish()).contains("layer 1"));
    let mut a = model.forward_part(&ids, 0..3, keep).expect("a part");
    let mut b = model.forward_part(&ids, 3..8, keep).expect("a part");
    while a.next_layer().is_some() {
        let kvs = [
            a.project().expect("projects"),
            b.project().expect("projects"),
        ];
        a.finish_layer(&kvs).expect("fits");
        b.finish_layer(&kvs).expect("fits");
    }
    assert!(parts_error(a.project()).contains("after the last layer"));
    assert!(parts_error(a.finish_layer(&[])).contains("after the last layer"));
    let (a, b) = (a.finish().expect("done"), b.finish().expect("done"));

    let join = |parts: Vec<PartOutput>| join_parts(parts).map(|f| f.len);
    assert!(parts_error(join(vec![])).contains("no parts"));
    assert!(parts_error(join(vec![a.clone()])).contains("3..8 are in no part"));
    assert!(parts_error(join(vec![a.clone(), b.clone(), b.clone()])).contains("two parts"));
    let mut misshapen = b.clone();
    misshapen.hidden.pop();
    assert!(parts_error(join(vec![a.clone(), misshapen])).contains("hidden values"));
    let mut other_text = b.clone();
    other_text.len = 9;
    assert!(parts_error(join(vec![a.clone(), other_text])).contains("another text"));
    let mut kept_more = b.clone();
    kept_more.layers = Some(vec![]);
    assert!(parts_error(join(vec![a.clone(), kept_more])).contains("kept other things"));
    assert_eq!(join(vec![b, a]), Ok(8));
}
