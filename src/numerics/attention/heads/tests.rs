//! The heads asset's tests: round trips of small assets, hostile bytes as errors, the committed
//! asset's documented shape.

use super::*;

/// A well-formed asset of the given shape; value `i` is `i` modulo 64 (exact in f16).
fn blob_with(header: &serde_json::Value, values: usize) -> Vec<u8> {
    let json = serde_json::to_vec(header).unwrap();
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&json);
    for i in 0..values {
        out.extend_from_slice(&f16::from_f32((i % 64) as f32).to_le_bytes());
    }
    out
}

fn small_header() -> serde_json::Value {
    serde_json::json!({
        "model": "test", "license": "MIT",
        "source": {"registry": "none", "package": "none", "version": "0", "file": "none",
                   "sha256": "00"},
        "layers": 2, "heads": 3, "head_dim": 2, "tokens_per_passage": 2,
        "passages": [{"text": "a", "tokens": ["[CLS]", "[SEP]"]}],
        "dtype": "f16", "layout": "test", "scaling": "raw",
        "reference_rows": [{"passage": 0, "layer": 1, "head": 2, "row": 1,
                            "probs": [0.25, 0.75]}],
        "verification": null
    })
}

/// 1 passage × 2 layers × 3 heads × 3 × 2 tokens × 2 dims.
const SMALL_VALUES: usize = 72;

#[test]
fn a_small_asset_round_trips() {
    let heads = RealHeads::parse(&blob_with(&small_header(), SMALL_VALUES)).unwrap();
    assert_eq!(heads.header().reference_rows[0].probs, vec![0.25, 0.75]);
    // Layer 1, head 2 is the last head: values 60..71.
    let h = heads.head(0, 1, 2).unwrap();
    assert_eq!((h.len, h.dim), (2, 2));
    assert_eq!(h.q, vec![60.0, 61.0, 62.0, 63.0]);
    assert_eq!(h.k, vec![0.0, 1.0, 2.0, 3.0]); // 64..67 modulo 64
    assert_eq!(h.v, vec![4.0, 5.0, 6.0, 7.0]);
    let first = heads.head(0, 0, 0).unwrap();
    assert_eq!(first.q, vec![0.0, 1.0, 2.0, 3.0]);
}

#[test]
fn model_scaling_multiplies_q_and_k_by_dim_to_the_minus_quarter() {
    let heads = RealHeads::parse(&blob_with(&small_header(), SMALL_VALUES)).unwrap();
    let raw = heads.head(0, 0, 1).unwrap();
    let scaled = raw.model_scaled();
    let s = 2f64.powf(-0.25);
    for i in 0..4 {
        assert_eq!(scaled.q[i], raw.q[i] * s);
        assert_eq!(scaled.k[i], raw.k[i] * s);
    }
    assert_eq!(scaled.v, raw.v);
    // q·k after scaling is the logit q kᵀ / √dim.
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let logit = dot(&raw.q[..2], &raw.k[..2]) / 2f64.sqrt();
    assert!((dot(&scaled.q[..2], &scaled.k[..2]) - logit).abs() < 1e-12);
}

#[test]
fn out_of_range_indices_are_errors() {
    let heads = RealHeads::parse(&blob_with(&small_header(), SMALL_VALUES)).unwrap();
    assert_eq!(
        heads.head(1, 0, 0),
        Err(HeadsError::OutOfRange {
            what: "passage",
            index: 1,
            count: 1
        })
    );
    assert!(matches!(
        heads.head(0, 2, 0),
        Err(HeadsError::OutOfRange { what: "layer", .. })
    ));
    assert!(matches!(
        heads.head(0, 0, 3),
        Err(HeadsError::OutOfRange { what: "head", .. })
    ));
    assert!(heads.head(usize::MAX, usize::MAX, usize::MAX).is_err());
}

#[test]
fn broken_preambles_are_errors() {
    let good = blob_with(&small_header(), SMALL_VALUES);
    assert_eq!(
        RealHeads::parse(&[]),
        Err(HeadsError::Truncated {
            needed: 16,
            available: 0
        })
    );
    assert_eq!(
        RealHeads::parse(b"SKLH"),
        Err(HeadsError::Truncated {
            needed: 16,
            available: 4
        })
    );
    assert_eq!(RealHeads::parse(b"PK\x03\x04"), Err(HeadsError::BadMagic));
    let mut bad_magic = good.clone();
    bad_magic[0] = b's';
    assert_eq!(RealHeads::parse(&bad_magic), Err(HeadsError::BadMagic));
    let mut version = good.clone();
    version[8] = 2;
    assert_eq!(
        RealHeads::parse(&version),
        Err(HeadsError::UnsupportedVersion(2))
    );
    let mut long_header = good.clone();
    long_header[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        RealHeads::parse(&long_header),
        Err(HeadsError::Truncated { .. })
    ));
}

#[test]
fn data_of_the_wrong_size_is_an_error() {
    let header = small_header();
    let short = blob_with(&header, SMALL_VALUES - 1);
    assert_eq!(
        RealHeads::parse(&short),
        Err(HeadsError::DataLength {
            expected: 144,
            found: 142
        })
    );
    let mut odd = blob_with(&header, SMALL_VALUES);
    odd.push(0);
    assert!(matches!(
        RealHeads::parse(&odd),
        Err(HeadsError::DataLength { .. })
    ));
    // A header claiming more layers than the data holds.
    let mut more = header.clone();
    more["layers"] = 3.into();
    assert!(matches!(
        RealHeads::parse(&blob_with(&more, SMALL_VALUES)),
        Err(HeadsError::DataLength { .. })
    ));
    // Sizes whose product overflows usize.
    let mut huge = header;
    huge["layers"] = (usize::MAX / 2).into();
    huge["heads"] = (usize::MAX / 2).into();
    assert!(matches!(
        RealHeads::parse(&blob_with(&huge, SMALL_VALUES)),
        Err(HeadsError::InvalidHeader { .. })
    ));
}

#[test]
fn bad_headers_are_errors() {
    let mut not_json = blob_with(&small_header(), SMALL_VALUES);
    not_json[PREAMBLE_LEN] = b'[';
    assert!(matches!(
        RealHeads::parse(&not_json),
        Err(HeadsError::BadHeader(_))
    ));
    let mutations: [(&str, serde_json::Value); 6] = [
        ("dtype", "f32".into()),
        ("heads", 0.into()),
        ("tokens_per_passage", 3.into()),
        ("passages", serde_json::json!([])),
        (
            "reference_rows",
            serde_json::json!([{"passage": 0, "layer": 2, "head": 0, "row": 0,
                                "probs": [0.5, 0.5]}]),
        ),
        (
            "reference_rows",
            serde_json::json!([{"passage": 0, "layer": 0, "head": 0, "row": 0,
                                "probs": [0.5]}]),
        ),
    ];
    for (field, value) in mutations {
        let mut header = small_header();
        header[field] = value;
        let err = RealHeads::parse(&blob_with(&header, SMALL_VALUES)).unwrap_err();
        assert!(
            matches!(
                err,
                HeadsError::InvalidHeader { .. } | HeadsError::NonFinite { .. }
            ),
            "{field}: {err}"
        );
    }
    // A probability beyond f32 (serde_json refuses it rather than making it infinite).
    let mut beyond_f32 = small_header();
    beyond_f32["reference_rows"][0]["probs"][1] = 1e300.into();
    assert!(matches!(
        RealHeads::parse(&blob_with(&beyond_f32, SMALL_VALUES)),
        Err(HeadsError::BadHeader(_))
    ));
    let mut missing = small_header();
    missing.as_object_mut().unwrap().remove("passages");
    assert!(matches!(
        RealHeads::parse(&blob_with(&missing, SMALL_VALUES)),
        Err(HeadsError::BadHeader(_))
    ));
}

#[test]
fn non_finite_values_are_errors() {
    for bits in [0x7c00u16, 0xfc00, 0x7e00] {
        // +inf, -inf, NaN as the 10th value.
        let mut blob = blob_with(&small_header(), SMALL_VALUES);
        let at = blob.len() - SMALL_VALUES * 2 + 9 * 2;
        blob[at..at + 2].copy_from_slice(&bits.to_le_bytes());
        assert_eq!(
            RealHeads::parse(&blob),
            Err(HeadsError::NonFinite {
                what: "value",
                index: 9
            })
        );
    }
}

#[test]
fn errors_display_what_went_wrong() {
    let text = HeadsError::OutOfRange {
        what: "layer",
        index: 7,
        count: 6,
    }
    .to_string();
    assert_eq!(text, "layer 7 does not exist (there are 6)");
    assert!(HeadsError::BadMagic.to_string().contains("SKLHEADS"));
}

/// The committed asset: parses, and has the documented shape.
#[test]
fn the_committed_asset_parses_with_its_documented_shape() {
    let path = format!("{}/{HEADS_ASSET_PATH}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).expect("the committed asset is readable");
    assert!(bytes.len() < 1_000_000, "the asset stays under 1 MB");
    let heads = RealHeads::parse(&bytes).unwrap();
    let h = heads.header();
    assert_eq!(h.model, "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(h.license, "Apache-2.0");
    assert_eq!(
        (
            h.passages.len(),
            h.layers,
            h.heads,
            h.tokens_per_passage,
            h.head_dim
        ),
        (2, 6, 12, 32, 32)
    );
    for p in &h.passages {
        assert_eq!(p.tokens.first().map(String::as_str), Some("[CLS]"));
        assert_eq!(p.tokens.last().map(String::as_str), Some("[SEP]"));
    }
    let last = heads.head(1, 5, 11).unwrap();
    assert_eq!((last.len, last.dim, last.q.len()), (32, 32, 1024));
}

#[test]
fn heads_from_values_equal_the_written_and_parsed_asset() {
    let header: HeadsHeader = serde_json::from_value(small_header()).unwrap();
    // Values that f16 rounds (1/3), and large ones: both paths round the same way.
    let values: Vec<f32> = (0..SMALL_VALUES)
        .map(|i| (i as f32 / 3.0 - 7.0) * if i % 5 == 0 { 1000.0 } else { 1.0 })
        .collect();
    let parsed = RealHeads::parse(&write_asset(&header, &values).unwrap()).unwrap();
    assert_eq!(
        RealHeads::from_values(header.clone(), &values).unwrap(),
        parsed
    );
    // The wrong count, a non-finite value (or one beyond f16), a bad header: errors.
    assert!(matches!(
        RealHeads::from_values(header.clone(), &values[1..]),
        Err(HeadsError::DataLength { .. })
    ));
    let mut huge = values.clone();
    huge[3] = 1e6;
    assert!(matches!(
        RealHeads::from_values(header.clone(), &huge),
        Err(HeadsError::NonFinite { index: 3, .. })
    ));
    let mut bad = header;
    bad.layers = 0;
    assert!(RealHeads::from_values(bad, &values).is_err());
}
