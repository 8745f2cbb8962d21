//! Taylor's `Σ_{j≤n} (q·k)^j / j!` as a feature map `[⊗^j q / √j!]_{j≤n}` (seed 004).

use crate::numerics::attention::AttentionError;
use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::deterministic::PolynomialKernel;
use crate::numerics::attention::method::{
    AttentionMethod, FitMethod, FittedMethod, MethodFamily, MethodSettings, SharedFits,
};

use super::polynomial;

/// The method.
#[derive(Clone, Copy, Debug)]
pub struct Taylor;

/// The registry's entry.
pub const TAYLOR: Taylor = Taylor;

impl AttentionMethod for Taylor {
    fn id(&self) -> &'static str {
        "taylor"
    }

    fn label(&self) -> &'static str {
        "Taylor"
    }

    fn family(&self) -> MethodFamily {
        MethodFamily::Deterministic
    }

    fn colour(&self) -> [u8; 3] {
        [102, 37, 6]
    }

    fn formula(&self) -> &'static str {
        r"k(q, k) = \sum_{j \le n} \frac{{(q \cdot k)}^j}{j!},\ \text{feature } {\Big[\tfrac{q^{\otimes j}}{\sqrt{j!}}\Big]}_{j \le n} \text{ of size } \sum_{j \le n} d^j"
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
        polynomial::feature_size(PolynomialKernel::taylor, settings, d)
    }

    fn budget_points(
        &self,
        settings: &MethodSettings,
        d: usize,
        budgets: &[usize],
        _max_samples: usize,
    ) -> Vec<(usize, MethodSettings)> {
        polynomial::budget_points(PolynomialKernel::taylor, settings, d, budgets)
    }
}

impl FitMethod for Taylor {
    fn fit(
        &self,
        data: &AttentionData,
        settings: &MethodSettings,
        _shared: SharedFits<'_>,
    ) -> Result<Box<dyn FittedMethod>, AttentionError> {
        let kernel = polynomial::kernel(self.id(), PolynomialKernel::taylor, settings)?;
        Ok(polynomial::fit(kernel, data, settings))
    }
}
