//! `(1 + q·k/n)^n` as a feature map `⊗^n [1, q/√n]` (seed 004).

use crate::numerics::attention::AttentionError;
use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::deterministic::PolynomialKernel;
use crate::numerics::attention::method::{
    AttentionMethod, FitMethod, FittedMethod, MethodFamily, MethodSettings, SharedFits,
};

use super::polynomial;

/// The method.
#[derive(Clone, Copy, Debug)]
pub struct Power;

/// The registry's entry.
pub const POWER: Power = Power;

impl AttentionMethod for Power {
    fn id(&self) -> &'static str {
        "power"
    }

    fn label(&self) -> &'static str {
        "(1 + x/n)^n"
    }

    fn family(&self) -> MethodFamily {
        MethodFamily::Deterministic
    }

    fn colour(&self) -> [u8; 3] {
        [170, 68, 153]
    }

    fn formula(&self) -> &'static str {
        r"k(q, k) = {\Big(1 + \frac{q \cdot k}{n}\Big)}^n,\ \text{feature } {\big[1, q/\sqrt{n}\big]}^{\otimes n} \text{ of size } {(d + 1)}^n"
    }

    fn source(&self) -> &'static str {
        "seed 004"
    }

    fn parameters(&self) -> &'static [&'static str] {
        &["degree"]
    }

    fn is_random(&self) -> bool {
        false
    }

    fn sweeps_budget(&self) -> bool {
        true
    }

    fn feature_size(&self, settings: &MethodSettings, d: usize) -> Option<usize> {
        polynomial::feature_size(PolynomialKernel::power, settings, d)
    }

    fn budget_points(
        &self,
        settings: &MethodSettings,
        d: usize,
        budgets: &[usize],
        _max_samples: usize,
    ) -> Vec<(usize, MethodSettings)> {
        polynomial::budget_points(PolynomialKernel::power, settings, d, budgets)
    }
}

impl FitMethod for Power {
    fn fit(
        &self,
        data: &AttentionData,
        settings: &MethodSettings,
        _shared: SharedFits<'_>,
    ) -> Result<Box<dyn FittedMethod>, AttentionError> {
        let kernel = polynomial::kernel(self.id(), PolynomialKernel::power, settings)?;
        Ok(polynomial::fit(kernel, data, settings))
    }
}
