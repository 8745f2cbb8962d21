//! `φ = ψ = elu + 1`: the linear transformer's map (Katharopoulos et al., cited in seed 001).

use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::linear::{FeatureMap, linear_attention};
use crate::numerics::attention::long::FeatureMap32;
use crate::numerics::attention::method::{
    AttentionMethod, FitMethod, FittedMethod, MethodFamily, MethodInfo, MethodRun, MethodSettings,
    SharedFits,
};
use crate::numerics::attention::{AttentionError, Evaluation};
use crate::numerics::estimators::Side;
use crate::numerics::rng::StreamRng;

/// `elu(u) + 1` elementwise, on both sides: positive, d features.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EluPlusOne;

impl FeatureMap for EluPlusOne {
    fn features(&self, u: &[f64], _side: Side) -> Vec<f64> {
        u.iter()
            .map(|&x| if x > 0.0 { x + 1.0 } else { x.exp() })
            .collect()
    }

    fn is_positive(&self) -> bool {
        true
    }
}

/// The method.
#[derive(Clone, Copy, Debug)]
pub struct Elu;

/// The registry's entry.
pub const ELU: Elu = Elu;

/// Its description: what the page, the command line and the view's plan read of it.
pub const ELU_INFO: MethodInfo = MethodInfo {
    id: "elu",
    label: "elu + 1",
    family: MethodFamily::Deterministic,
    colour: [119, 119, 119],
    formula: r"\phi(u) = \psi(u) = \mathrm{elu}(u) + 1",
    source: "linear transformer, cited in seed 001",
    parameters: &[],
    is_random: false,
    is_quadratic: false,
    exact_at_full_length: false,
    needs_lln_constants: false,
    sweeps_budget: false,
};

impl AttentionMethod for Elu {
    fn info(&self) -> &MethodInfo {
        &ELU_INFO
    }

    fn feature_size(&self, _settings: &MethodSettings, d: usize) -> Option<usize> {
        Some(d)
    }

    fn budget_points(
        &self,
        settings: &MethodSettings,
        d: usize,
        _budgets: &[usize],
        _max_samples: usize,
    ) -> Vec<(usize, MethodSettings)> {
        vec![(d, settings.clone())]
    }
}

impl FitMethod for Elu {
    fn fit(
        &self,
        _data: &AttentionData,
        _settings: &MethodSettings,
        _shared: SharedFits<'_>,
    ) -> Result<Box<dyn FittedMethod>, AttentionError> {
        Ok(Box::new(EluPlusOne))
    }
}

impl FittedMethod for EluPlusOne {
    fn draw(
        &self,
        data: &AttentionData,
        _settings: &MethodSettings,
        _rng: &mut StreamRng,
        rows: &[usize],
    ) -> Result<MethodRun, AttentionError> {
        Ok(MethodRun {
            feature_size: data.d,
            attention: linear_attention(self, data, rows),
            evaluation: Evaluation::Linear,
            note: String::new(),
        })
    }

    fn batched_map(
        &self,
        d: usize,
        _settings: &MethodSettings,
        _rng: &mut StreamRng,
    ) -> Option<Result<FeatureMap32, AttentionError>> {
        Some(Ok(FeatureMap32::EluPlusOne { d }))
    }
}
