//! A training split by heads put back together ([`merge_heads`]), and the maps in a compact
//! form that one worker sends another ([`CompactMap`]: f32 parameters, validated on the way in).

use serde::{Deserialize, Serialize};

use super::training::{TrainedHeads, TrainingPoint, point_of};
use super::{
    HedgehogError, HedgehogMap, MAX_DIM, MAX_HALF_FEATURES, MapParameters, Projection, require,
};
use crate::numerics::attention::long::FeatureMap32;
use crate::numerics::input::check_finite;
use crate::numerics::portable::Libm;

/// The parts of a training split by heads as one: every head of `0..heads` in exactly one
/// part, every part with the same number of steps. Returns the maps in head order and the
/// curve, each point's means summed in head order, so they equal one [`super::train`] of every
/// head bit for bit.
pub fn merge_heads(
    parts: &[TrainedHeads],
    heads: usize,
) -> Result<(Vec<HedgehogMap>, Vec<TrainingPoint>), HedgehogError> {
    let mut owner: Vec<Option<(usize, usize)>> = vec![None; heads];
    for (p, part) in parts.iter().enumerate() {
        let consistent = part.maps.len() == part.heads.len()
            && part
                .losses
                .iter()
                .all(|step| step.len() == part.heads.len());
        require(consistent, "parts", || {
            format!("part {p}: as many maps and losses per step as heads")
        })?;
        for (i, &head) in part.heads.iter().enumerate() {
            let slot = owner.get_mut(head).filter(|slot| slot.is_none());
            let slot = slot.ok_or_else(|| HedgehogError::InvalidParameter {
                name: "parts",
                reason: format!("head {head} is outside 0..{heads} or in two parts"),
            })?;
            *slot = Some((p, i));
        }
    }
    let owner: Vec<(usize, usize)> = owner
        .iter()
        .enumerate()
        .map(|(head, o)| {
            o.ok_or_else(|| HedgehogError::InvalidParameter {
                name: "parts",
                reason: format!("no part trained head {head}"),
            })
        })
        .collect::<Result<_, _>>()?;
    let steps = parts.first().map_or(0, |p| p.losses.len());
    require(
        steps > 0 && parts.iter().all(|p| p.losses.len() == steps),
        "parts",
        || "every part needs the same steps, at least the initial one".into(),
    )?;
    let maps = owner
        .iter()
        .map(|&(p, i)| parts[p].maps[i].clone())
        .collect();
    let curve = (0..steps)
        .map(|step| {
            let losses: Vec<_> = owner
                .iter()
                .map(|&(p, i)| parts[p].losses[step][i])
                .collect();
            point_of(step, &losses)
        })
        .collect();
    Ok((maps, curve))
}

/// One head's maps with their parameters in f32 (`W` row-major n × d and `b`, for queries and
/// keys): 4·2·(n·d + n) bytes, 8,448 at n = d = 32.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompactMap {
    pub dim: usize,
    pub half_features: usize,
    pub query_weights: Vec<f32>,
    pub query_bias: Vec<f32>,
    pub key_weights: Vec<f32>,
    pub key_bias: Vec<f32>,
}

impl HedgehogMap {
    /// The parameters rounded to f32 (to nearest).
    pub fn to_compact(&self) -> CompactMap {
        let narrow = |v: &[f64]| v.iter().map(|&x| x as f32).collect();
        let (q, k) = (&self.parameters.query, &self.parameters.key);
        CompactMap {
            dim: self.dim,
            half_features: self.half_features,
            query_weights: narrow(&q.weights),
            query_bias: narrow(&q.bias),
            key_weights: narrow(&k.weights),
            key_bias: narrow(&k.bias),
        }
    }

    /// The maps of a compact form, checked: d in `1..=1024`, n in `1..=512`, every vector of its
    /// size and finite. `from_compact(to_compact(m))` is `m` with its parameters rounded to f32.
    pub fn from_compact(compact: &CompactMap) -> Result<Self, HedgehogError> {
        let (dim, n) = (compact.dim, compact.half_features);
        require((1..=MAX_DIM).contains(&dim), "dim", || {
            format!("must be 1 to {MAX_DIM}, got {dim}")
        })?;
        require(
            (1..=MAX_HALF_FEATURES).contains(&n),
            "half_features",
            || format!("must be 1 to {MAX_HALF_FEATURES}, got {n}"),
        )?;
        let widen = |name: &'static str, v: &[f32], size: usize| {
            let wide: Vec<f64> = v.iter().map(|&x| f64::from(x)).collect();
            check_finite(name, &wide, size).map(|()| wide)
        };
        let side = |weights, bias| -> Result<Projection, HedgehogError> {
            Ok(Projection {
                weights: widen("weights", weights, n * dim)?,
                bias: widen("bias", bias, n)?,
            })
        };
        Ok(Self {
            dim,
            half_features: n,
            input_scale: (dim as f64).libm_powf(0.25),
            parameters: MapParameters {
                query: side(&compact.query_weights, &compact.query_bias)?,
                key: side(&compact.key_weights, &compact.key_bias)?,
            },
        })
    }
}

impl CompactMap {
    /// The maps as the f32 kernels run them (`FeatureMap32::Learned`): Wᵀ with the input scale
    /// `d^{1/4}` folded in (the kernels see queries and keys scaled by `d^{-1/4}`, as the
    /// trained maps did).
    pub fn feature_map_32(&self) -> FeatureMap32 {
        let (d, n) = (self.dim, self.half_features);
        let scale = (d as f64).libm_powf(0.25);
        let transposed = |w: &[f32]| {
            let mut out = vec![0.0f32; d * n];
            for (r, row) in w.chunks_exact(d).enumerate() {
                for (i, &x) in row.iter().enumerate() {
                    out[i * n + r] = (f64::from(x) * scale) as f32;
                }
            }
            out
        };
        FeatureMap32::Learned {
            d,
            n,
            query_weights: transposed(&self.query_weights),
            query_bias: self.query_bias.clone(),
            key_weights: transposed(&self.key_weights),
            key_bias: self.key_bias.clone(),
        }
    }
}
