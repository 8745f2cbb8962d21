//! The attention view's inputs: L queries, keys and values, synthetic or from a real head.

use crate::math::config::{ExperimentConfig, HeadSource};
use crate::math::dataset;
use crate::math::rng::{StreamPurpose, stream_rng};
use rand_distr::{Distribution, StandardNormal};

use super::AttentionError;
use super::heads::RealHeads;

/// Queries, keys (L × d) and values (L × dv), row-major, already scaled the way the model
/// scales them (so `P_ij = softmax_j(q_i·k_j)`).
#[derive(Clone, Debug, PartialEq)]
pub struct AttentionData {
    pub len: usize,
    pub d: usize,
    pub dv: usize,
    pub q: Vec<f64>,
    pub k: Vec<f64>,
    pub v: Vec<f64>,
}

impl AttentionData {
    /// Validates the shapes and that every value is finite.
    pub fn new(
        len: usize,
        d: usize,
        dv: usize,
        q: Vec<f64>,
        k: Vec<f64>,
        v: Vec<f64>,
    ) -> Result<Self, AttentionError> {
        if len == 0 || d == 0 || dv == 0 {
            return Err(AttentionError::Data("empty queries, keys or values".into()));
        }
        if q.len() != len * d || k.len() != len * d || v.len() != len * dv {
            return Err(AttentionError::Data(format!(
                "shapes do not match L = {len}, d = {d}, dv = {dv}"
            )));
        }
        if q.iter().chain(&k).chain(&v).any(|x| !x.is_finite()) {
            return Err(AttentionError::Data("a value is not finite".into()));
        }
        Ok(Self {
            len,
            d,
            dv,
            q,
            k,
            v,
        })
    }

    /// Query i.
    pub fn query(&self, i: usize) -> &[f64] {
        &self.q[i * self.d..(i + 1) * self.d]
    }

    /// Key j.
    pub fn key(&self, j: usize) -> &[f64] {
        &self.k[j * self.d..(j + 1) * self.d]
    }

    /// Value j.
    pub fn value(&self, j: usize) -> &[f64] {
        &self.v[j * self.dv..(j + 1) * self.dv]
    }

    /// The first `n` tokens as a sequence of their own.
    pub fn prefix(&self, n: usize) -> AttentionData {
        let n = n.clamp(1, self.len);
        AttentionData {
            len: n,
            d: self.d,
            dv: self.dv,
            q: self.q[..n * self.d].to_vec(),
            k: self.k[..n * self.d].to_vec(),
            v: self.v[..n * self.dv].to_vec(),
        }
    }

    /// The same data at temperature τ: `softmax(q·k / τ)` is the softmax of the queries and
    /// keys each scaled by `τ^{-1/2}`.
    pub fn at_temperature(&self, tau: f64) -> AttentionData {
        let factor = tau.max(f64::MIN_POSITIVE).sqrt().recip();
        AttentionData {
            q: self.q.iter().map(|x| x * factor).collect(),
            k: self.k.iter().map(|x| x * factor).collect(),
            ..self.clone()
        }
    }
}

/// The data a configuration names: synthetic (the kernel view's distributions with L pairs;
/// values standard Gaussian), or a real head from `heads` with the model's scaling.
pub fn attention_data(
    config: &ExperimentConfig,
    heads: Option<&RealHeads>,
) -> Result<AttentionData, AttentionError> {
    let settings = &config.attention;
    match settings.source {
        HeadSource::Synthetic => {
            let (len, d, dv) = settings.shape(config.d);
            let params = config
                .dataset_params(d, len)
                .map_err(|e| AttentionError::Data(e.to_string()))?;
            let mut rng = stream_rng(config.seed, StreamPurpose::Attention, 0, 0);
            let data = dataset::generate(&params, &mut rng)
                .map_err(|e| AttentionError::Data(e.to_string()))?;
            let mut rng = stream_rng(config.seed, StreamPurpose::Attention, 1, 0);
            let v = (0..len * dv)
                .map(|_| StandardNormal.sample(&mut rng))
                .collect();
            AttentionData::new(len, d, dv, data.x, data.y, v)
        }
        HeadSource::Minilm => {
            let heads = heads
                .ok_or_else(|| AttentionError::Data("the real heads are not loaded yet".into()))?;
            let head = heads
                .head(settings.passage, settings.layer, settings.head)
                .map_err(|e| AttentionError::Data(e.to_string()))?
                .model_scaled();
            AttentionData::new(head.len, head.dim, head.dim, head.q, head.k, head.v)
        }
    }
}
