//! Randomized attention (seed 003): ω sampled from softmax's own rows,
//! `ω ~ Σ_j P_ij N(q_i + k_j, I)`; unbiased for the output `o_i`, quadratic in L.

use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::linear::ApproximateAttention;
use crate::numerics::attention::method::{
    AttentionMethod, FitMethod, FittedMethod, MethodFamily, MethodInfo, MethodRun, MethodSettings,
    SharedFits, method_error,
};
use crate::numerics::attention::randomized::randomized_attention_rows;
use crate::numerics::attention::{AttentionError, Evaluation};
use crate::numerics::rng::StreamRng;

/// The method.
#[derive(Clone, Copy, Debug)]
pub struct Randomized;

/// The registry's entry.
pub const RANDOMIZED: Randomized = Randomized;

/// Its description: what the page, the command line and the view's plan read of it.
pub const RANDOMIZED_INFO: MethodInfo = MethodInfo {
    id: "ra",
    label: "randomized attention",
    family: MethodFamily::Sampled,
    colour: [17, 119, 51],
    formula: r"\omega \sim \sum_j P_{ij}\, \mathcal{N}(q_i + k_j, I);\ \hat{o}_i = \frac{\sum_j \xi(k_j, \omega)\, v_j}{\sum_l \xi(k_l, \omega)},\ O(L^2)",
    source: "seed 003",
    parameters: &["ra"],
    is_random: true,
    is_quadratic: true,
    exact_at_full_length: false,
    needs_lln_constants: false,
    sweeps_budget: true,
};

impl AttentionMethod for Randomized {
    fn info(&self) -> &MethodInfo {
        &RANDOMIZED_INFO
    }

    fn feature_size(&self, settings: &MethodSettings, _d: usize) -> Option<usize> {
        Some(settings.ra_samples)
    }

    /// One softmax matrix, plus one per sample.
    fn work(
        &self,
        settings: &MethodSettings,
        (len, d, dv): (usize, usize, usize),
        _tv_rows: usize,
    ) -> f64 {
        let quadratic = (len * len) as f64 * (d + dv) as f64;
        settings.ra_samples as f64 * quadratic + quadratic
    }

    fn budget_points(
        &self,
        settings: &MethodSettings,
        _d: usize,
        budgets: &[usize],
        max_samples: usize,
    ) -> Vec<(usize, MethodSettings)> {
        budgets
            .iter()
            .filter(|&&samples| samples <= max_samples)
            .map(|&samples| {
                let mut at = settings.clone();
                at.ra_samples = samples;
                (samples, at)
            })
            .collect()
    }
}

impl FitMethod for Randomized {
    fn fit(
        &self,
        _data: &AttentionData,
        _settings: &MethodSettings,
        _shared: SharedFits<'_>,
    ) -> Result<Box<dyn FittedMethod>, AttentionError> {
        Ok(Box::new(Randomized))
    }
}

impl FittedMethod for Randomized {
    fn draw(
        &self,
        data: &AttentionData,
        settings: &MethodSettings,
        rng: &mut StreamRng,
        rows: &[usize],
    ) -> Result<MethodRun, AttentionError> {
        let samples = settings.ra_samples;
        let (output, rows) = randomized_attention_rows(data, samples, rows, rng)
            .map_err(|e| method_error(self.id(), e))?;
        Ok(MethodRun {
            feature_size: samples,
            attention: ApproximateAttention {
                output,
                denominators: vec![1.0; data.len],
                bad_rows: 0,
                rows,
            },
            evaluation: Evaluation::Quadratic,
            note: format!("{samples} samples ω per query"),
        })
    }
}
