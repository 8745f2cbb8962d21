//! The attention view's inputs: L queries, keys and values, synthetic or from a real head.

use super::AttentionError;

/// Queries, keys (L × d) and values (L × dv), row-major, already scaled the way the model
/// scales them (so `P_ij = softmax_j(q_i·k_j)`), and whether attention is causal (a decoder's
/// head: query i sees keys 0..=i only, `P_ij = 0` for j > i).
#[derive(Clone, Debug, PartialEq)]
pub struct AttentionData {
    pub len: usize,
    pub d: usize,
    pub dv: usize,
    pub q: Vec<f64>,
    pub k: Vec<f64>,
    pub v: Vec<f64>,
    /// Each query attends to its own and the earlier keys only.
    pub causal: bool,
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
            causal: false,
        })
    }

    /// The same data under the causal mask (`causal = true`) or without it.
    pub fn with_causal_mask(self, causal: bool) -> AttentionData {
        AttentionData { causal, ..self }
    }

    /// How many keys query `i` sees: all L, or `i + 1` under the causal mask.
    pub fn keys_seen_by(&self, i: usize) -> usize {
        if self.causal {
            (i + 1).min(self.len)
        } else {
            self.len
        }
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
            causal: self.causal,
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
