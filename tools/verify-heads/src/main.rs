//! Independent check of `scripts/extract-heads.py`: candle's `BertModel` (candle-transformers
//! 0.11.1) runs the same all-MiniLM-L6-v2 safetensors on the same token ids, and every head's Q,
//! K, V, every attention probability and the final hidden states are compared with the NumPy
//! forward's float64 dumps. candle runs in f32, the model's own precision (its fused layer norm
//! has no f64 kernel, so a float64 candle run is not possible).
//!
//! candle keeps per-layer outputs private, so layer l's input comes from a `BertModel` built
//! with `num_hidden_layers = l`; layer l's query/key/value `Linear`s are then applied here.
//!
//! Usage: `cargo run --release -- WORK_DIR` where WORK_DIR holds what the script wrote
//! (`inputs.json`, `qkv-f64.bin`, `probs-f64.bin`, `hidden-f64.bin`, `model/`). Writes
//! `WORK_DIR/verification.json`, which the script folds into the asset's header; exits non-zero
//! if any difference exceeds the tolerance below.

use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};

use candle_core::{D, DType, Device, Module, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

/// Fail above this: f32 agreement is expected near 1e-5 for Q, K, V (values up to about 8).
const TOLERANCE_F32: f64 = 1e-4;

#[derive(Deserialize)]
struct Inputs {
    model_dir: PathBuf,
    passages: Vec<PassageIds>,
    layers: usize,
    heads: usize,
    head_dim: usize,
    tokens_per_passage: usize,
    dump_sha256: String,
}

#[derive(Deserialize)]
struct PassageIds {
    ids: Vec<u32>,
}

/// Largest absolute differences found, one per compared quantity.
#[derive(Default, Debug)]
struct MaxDiff {
    q: f64,
    k: f64,
    v: f64,
    probs: f64,
    hidden: f64,
}

impl MaxDiff {
    fn max(&self) -> f64 {
        [self.q, self.k, self.v, self.probs, self.hidden]
            .into_iter()
            .fold(0.0, f64::max)
    }

    fn to_json(&self) -> serde_json::Value {
        json!({
            "q_max_abs_diff": self.q,
            "k_max_abs_diff": self.k,
            "v_max_abs_diff": self.v,
            "probs_max_abs_diff": self.probs,
            "hidden_max_abs_diff": self.hidden,
        })
    }
}

fn read_f64s(path: &Path, hasher: &mut Sha256) -> Result<Vec<f64>, Box<dyn Error>> {
    let bytes = fs::read(path)?;
    hasher.update(&bytes);
    if bytes.len() % 8 != 0 {
        return Err(format!("{}: not a whole number of f64", path.display()).into());
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("chunks of 8")))
        .collect())
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "compared slices differ in length");
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// A [1, tokens] tensor of the passage's ids and one of zeros (token types).
fn inputs(ids: &[u32], device: &Device) -> candle_core::Result<(Tensor, Tensor)> {
    let input_ids = Tensor::new(ids, device)?.unsqueeze(0)?;
    let type_ids = input_ids.zeros_like()?;
    Ok((input_ids, type_ids))
}

fn to_f64_vec(t: &Tensor) -> candle_core::Result<Vec<f64>> {
    t.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()
}

fn compare(
    inputs_meta: &Inputs,
    config: &Config,
    weights: &Path,
    dtype: DType,
    qkv_ref: &[f64],
    probs_ref: &[f64],
    hidden_ref: &[f64],
) -> Result<MaxDiff, Box<dyn Error>> {
    let device = Device::Cpu;
    // SAFETY: the safetensors file is not modified while mapped (it is ours, in the work dir).
    let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[weights], dtype, &device)? };
    let (tokens, d, heads) = (
        inputs_meta.tokens_per_passage,
        inputs_meta.head_dim,
        inputs_meta.heads,
    );
    let hidden = heads * d;
    let mut diff = MaxDiff::default();
    for (p, passage) in inputs_meta.passages.iter().enumerate() {
        let (input_ids, type_ids) = inputs(&passage.ids, &device)?;
        // The whole encoder: last hidden states.
        let full = BertModel::load(vb.clone(), config)?;
        let out = to_f64_vec(&full.forward(&input_ids, &type_ids, None)?)?;
        let offset = p * tokens * hidden;
        diff.hidden = diff.hidden.max(max_abs_diff(
            &out,
            &hidden_ref[offset..offset + tokens * hidden],
        ));

        for l in 0..inputs_meta.layers {
            let truncated = Config {
                num_hidden_layers: l,
                ..config.clone()
            };
            let x =
                BertModel::load(vb.clone(), &truncated)?.forward(&input_ids, &type_ids, None)?;
            let prefix = format!("encoder.layer.{l}.attention.self");
            let project = |name: &str| -> candle_core::Result<Tensor> {
                let linear = candle_nn::linear(hidden, hidden, vb.pp(format!("{prefix}.{name}")))?;
                linear.forward(&x)?.squeeze(0) // [tokens, hidden]
            };
            let (q, k, v) = (project("query")?, project("key")?, project("value")?);
            for h in 0..heads {
                let qh = q.narrow(1, h * d, d)?.contiguous()?;
                let kh = k.narrow(1, h * d, d)?.contiguous()?;
                let vh = v.narrow(1, h * d, d)?.contiguous()?;
                let block = tokens * d;
                let base = ((p * inputs_meta.layers + l) * heads + h) * 3 * block;
                let slots = [(&qh, &mut diff.q), (&kh, &mut diff.k), (&vh, &mut diff.v)];
                for (i, (t, worst)) in slots.into_iter().enumerate() {
                    let got = to_f64_vec(t)?;
                    let want = &qkv_ref[base + i * block..base + (i + 1) * block];
                    *worst = worst.max(max_abs_diff(&got, want));
                }
                let scores = (qh.matmul(&kh.t()?)? / (d as f64).sqrt())?;
                let probs = to_f64_vec(&candle_nn::ops::softmax(&scores, D::Minus1)?)?;
                let pbase = ((p * inputs_meta.layers + l) * heads + h) * tokens * tokens;
                diff.probs = diff.probs.max(max_abs_diff(
                    &probs,
                    &probs_ref[pbase..pbase + tokens * tokens],
                ));
            }
        }
    }
    Ok(diff)
}

fn main() -> Result<(), Box<dyn Error>> {
    let work = PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: verify-heads WORK_DIR (the folder scripts/extract-heads.py wrote)")?,
    );
    let meta: Inputs = serde_json::from_str(&fs::read_to_string(work.join("inputs.json"))?)?;
    let mut hasher = Sha256::new();
    let qkv_ref = read_f64s(&work.join("qkv-f64.bin"), &mut hasher)?;
    let probs_ref = read_f64s(&work.join("probs-f64.bin"), &mut hasher)?;
    let hidden_ref = read_f64s(&work.join("hidden-f64.bin"), &mut hasher)?;
    let dump_sha256 = format!("{:x}", hasher.finalize());
    if dump_sha256 != meta.dump_sha256 {
        return Err("the dumps changed since inputs.json was written".into());
    }
    let config: Config =
        serde_json::from_str(&fs::read_to_string(meta.model_dir.join("config.json"))?)?;
    let weights = meta.model_dir.join("model.safetensors");
    let (p, l, h, t, d) = (
        meta.passages.len(),
        meta.layers,
        meta.heads,
        meta.tokens_per_passage,
        meta.head_dim,
    );
    if qkv_ref.len() != p * l * h * 3 * t * d
        || probs_ref.len() != p * l * h * t * t
        || hidden_ref.len() != p * t * h * d
        || meta.passages.iter().any(|x| x.ids.len() != t)
    {
        return Err("dump sizes do not match inputs.json".into());
    }

    let mut report = serde_json::Map::new();
    report.insert(
        "implementation".into(),
        json!("candle-transformers 0.11.1 BertModel on CPU (tools/verify-heads), same safetensors and token ids"),
    );
    let diff = compare(
        &meta,
        &config,
        &weights,
        DType::F32,
        &qkv_ref,
        &probs_ref,
        &hidden_ref,
    )?;
    println!("candle f32 against NumPy float64: {diff:?}");
    report.insert("candle_f32".into(), diff.to_json());
    report.insert("dump_sha256".into(), json!(dump_sha256));
    let path = work.join("verification.json");
    fs::write(&path, serde_json::to_string_pretty(&report)? + "\n")?;
    println!("wrote {}", path.display());
    if diff.max() > TOLERANCE_F32 {
        return Err("a difference exceeds its tolerance".into());
    }
    Ok(())
}
