//! The attention view's data for a configuration: synthetic queries, keys and values drawn from
//! the kernel view's distributions, or one real head (the stored passages, the reader's text
//! in the encoder, or in the causal language model, masked).

use rand_distr::{Distribution, StandardNormal};

use crate::lab::config::{ExperimentConfig, HeadSource};
use crate::numerics::attention::AttentionError;
use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::heads::HeadSet;
use crate::numerics::dataset;
use crate::numerics::rng::{StreamPurpose, stream_rng};

/// The data a configuration names: synthetic (the kernel view's distributions with L pairs;
/// values standard Gaussian), or a real head from `heads` with the model's scaling.
pub fn attention_data(
    config: &ExperimentConfig,
    heads: Option<&dyn HeadSet>,
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
        HeadSource::Minilm | HeadSource::Text | HeadSource::Lm => {
            let heads = heads
                .ok_or_else(|| AttentionError::Data("the real heads are not loaded yet".into()))?;
            let head = heads
                .head(
                    settings.real_passage().unwrap_or(0),
                    settings.layer,
                    settings.head,
                )
                .map_err(|e| AttentionError::Data(e.to_string()))?;
            head.model_scaled().into_data()
        }
    }
}
