//! Linear log-normal attention with moment matching (seed 001): `φ(q) = exp(αq)`,
//! `ψ(k) = exp(βk)`, α and β chosen so that the spread of `log P̂` matches softmax's.

use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::linear::linear_attention;
use crate::numerics::attention::lln::{LogNormalFeatures, lln_fit};
use crate::numerics::attention::long::FeatureMap32;
use crate::numerics::attention::method::{
    AttentionMethod, FitMethod, FittedMethod, MethodFamily, MethodInfo, MethodRun, MethodSettings,
    SharedFits, method_error,
};
use crate::numerics::attention::{AttentionError, Evaluation};
use crate::numerics::rng::StreamRng;

/// The method.
#[derive(Clone, Copy, Debug)]
pub struct LinearLogNormal;

/// The registry's entry.
pub const LLN: LinearLogNormal = LinearLogNormal;

/// Its description: what the page, the command line and the view's plan read of it.
pub const LLN_INFO: MethodInfo = MethodInfo {
    id: "lln",
    label: "LLN (moment matching)",
    family: MethodFamily::Deterministic,
    colour: [51, 34, 136],
    formula: r"\phi(q) = e^{\alpha q},\ \psi(k) = e^{\beta k},\ \alpha, \beta \text{ matching the spread of } \log P",
    source: "seed 001",
    parameters: &[],
    is_random: false,
    is_quadratic: false,
    exact_at_full_length: false,
    needs_lln_constants: true,
    sweeps_budget: false,
};

impl AttentionMethod for LinearLogNormal {
    fn info(&self) -> &MethodInfo {
        &LLN_INFO
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

impl FitMethod for LinearLogNormal {
    fn fit(
        &self,
        data: &AttentionData,
        _settings: &MethodSettings,
        shared: SharedFits<'_>,
    ) -> Result<Box<dyn FittedMethod>, AttentionError> {
        let constants = shared.lln.ok_or_else(|| {
            method_error(self.id(), "its moment-matching constants were not fitted")
        })?;
        let fit = lln_fit(&data.q, &data.k, data.len, data.d, constants)
            .map_err(|e| method_error(self.id(), e))?;
        Ok(Box::new(FittedLogNormal {
            map: LogNormalFeatures {
                alpha: fit.alpha,
                beta: fit.beta,
            },
            note: format!(
                "σ_q = {:.3}, σ_k = {:.3}, σ̃ = {:.3}{}",
                fit.sigma_q,
                fit.sigma_k,
                fit.sigma_tilde,
                if fit.clamped { " (clamped)" } else { "" }
            ),
        }))
    }
}

struct FittedLogNormal {
    map: LogNormalFeatures,
    note: String,
}

impl FittedMethod for FittedLogNormal {
    fn draw(
        &self,
        data: &AttentionData,
        _settings: &MethodSettings,
        _rng: &mut StreamRng,
        rows: &[usize],
    ) -> Result<MethodRun, AttentionError> {
        Ok(MethodRun {
            feature_size: data.d,
            attention: linear_attention(&self.map, data, rows),
            evaluation: Evaluation::Linear,
            note: format!(
                "α = {:.3}, β = {:.3}; {}",
                self.map.alpha, self.map.beta, self.note
            ),
        })
    }

    fn batched_map(
        &self,
        d: usize,
        _settings: &MethodSettings,
        _rng: &mut StreamRng,
    ) -> Option<Result<FeatureMap32, AttentionError>> {
        Some(Ok(FeatureMap32::ElementwiseExponential {
            d,
            query_scale: self.map.alpha as f32,
            key_scale: self.map.beta as f32,
        }))
    }
}
