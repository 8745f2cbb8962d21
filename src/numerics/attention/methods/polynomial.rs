//! What the two polynomial maps of seed 004 share as attention methods: their evaluation route
//! (materialised features within the budget, the kernel pair by pair beyond it), their work and
//! their points on the equal-budget chart. Taylor ([`super::taylor`]) and `(1 + x/n)^n`
//! ([`super::power`]) differ only in their [`PolynomialKernel`].

use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::deterministic::PolynomialKernel;
use crate::numerics::attention::linear::{linear_attention, quadratic_attention};
use crate::numerics::attention::method::{FittedMethod, MethodRun, MethodSettings, method_error};
use crate::numerics::attention::{AttentionError, Evaluation};
use crate::numerics::estimators::dot;
use crate::numerics::rng::StreamRng;

/// The map of degree `settings.degree`, or the method's error.
pub(super) fn kernel(
    id: &str,
    make: fn(
        usize,
    ) -> Result<
        PolynomialKernel,
        crate::numerics::attention::deterministic::DeterministicError,
    >,
    settings: &MethodSettings,
) -> Result<PolynomialKernel, AttentionError> {
    make(settings.degree).map_err(|e| method_error(id, e))
}

/// Features per token of the map of degree `settings.degree` at dimension d.
pub(super) fn feature_size(
    make: fn(
        usize,
    ) -> Result<
        PolynomialKernel,
        crate::numerics::attention::deterministic::DeterministicError,
    >,
    settings: &MethodSettings,
    d: usize,
) -> Option<usize> {
    make(settings.degree).ok()?.feature_size(d)
}

/// The degrees 1 to 6 whose feature size stays within four times the largest budget.
pub(super) fn budget_points(
    make: fn(
        usize,
    ) -> Result<
        PolynomialKernel,
        crate::numerics::attention::deterministic::DeterministicError,
    >,
    settings: &MethodSettings,
    d: usize,
    budgets: &[usize],
) -> Vec<(usize, MethodSettings)> {
    let limit = budgets.last().copied().unwrap_or(0) * 4;
    (1..=6)
        .filter_map(|degree| {
            let mut at = settings.clone();
            at.degree = degree;
            let size = feature_size(make, &at, d).unwrap_or(usize::MAX);
            (size <= limit).then_some((size, at))
        })
        .collect()
}

/// The fitted route: materialised features when they fit the budget, the kernel pair by pair
/// (O(L²)) otherwise.
pub(super) fn fit(
    kernel: PolynomialKernel,
    data: &AttentionData,
    settings: &MethodSettings,
) -> Box<dyn FittedMethod> {
    let quadratic = !matches!(
        kernel.feature_size(data.d),
        Some(size) if size <= settings.deterministic_feature_budget
    );
    Box::new(FittedPolynomial { kernel, quadratic })
}

struct FittedPolynomial {
    kernel: PolynomialKernel,
    /// Over the budget: evaluated pair by pair.
    quadratic: bool,
}

impl FittedMethod for FittedPolynomial {
    fn draw(
        &self,
        data: &AttentionData,
        settings: &MethodSettings,
        _rng: &mut StreamRng,
        rows: &[usize],
    ) -> Result<MethodRun, AttentionError> {
        let feature_size = self.kernel.feature_size(data.d).unwrap_or(usize::MAX);
        Ok(if self.quadratic {
            let pair = |q: &[f64], k: &[f64]| self.kernel.kernel(dot(q, k));
            MethodRun {
                feature_size,
                attention: quadratic_attention(&pair, data, rows),
                evaluation: Evaluation::QuadraticFallback,
                note: format!(
                    "{}: its features exceed {}, so its kernel is evaluated pair by pair (O(L²))",
                    self.kernel.label(),
                    settings.deterministic_feature_budget
                ),
            }
        } else {
            MethodRun {
                feature_size,
                attention: linear_attention(&self.kernel, data, rows),
                evaluation: Evaluation::Linear,
                note: self.kernel.label(),
            }
        })
    }
}
