//! What the two polynomial maps of seed 004 share as attention methods: their evaluation route
//! (materialised features within the budget, the kernel pair by pair beyond it), their work and
//! their points on the equal-budget chart. Taylor ([`super::taylor`]) and `(1 + x/n)^n`
//! ([`super::power`]) differ only in their [`PolynomialKernel`].

use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::deterministic::{DeterministicError, PolynomialKernel};
use crate::numerics::attention::linear::{linear_attention, quadratic_attention};
use crate::numerics::attention::long::FeatureMap32;
use crate::numerics::attention::method::{
    AttentionMethod, FitMethod, FittedMethod, MethodInfo, MethodRun, MethodSettings, SharedFits,
    method_error,
};
use crate::numerics::attention::{AttentionError, Evaluation};
use crate::numerics::estimators::dot;
use crate::numerics::rng::StreamRng;

/// The constructor of a map from its degree ([`PolynomialKernel::taylor`] or
/// [`PolynomialKernel::power`]).
pub(super) type MakeKernel = fn(usize) -> Result<PolynomialKernel, DeterministicError>;

/// A polynomial map as an attention method: what tells Taylor and `(1 + x/n)^n` apart is data
/// (each declares its const in its own file: its description and its map's constructor); the
/// trait impls are here, once.
#[derive(Clone, Copy)]
pub struct PolynomialMethod {
    pub(super) info: MethodInfo,
    pub(super) make: MakeKernel,
}

impl AttentionMethod for PolynomialMethod {
    fn info(&self) -> &MethodInfo {
        &self.info
    }

    fn feature_size(&self, settings: &MethodSettings, d: usize) -> Option<usize> {
        feature_size(self.make, settings, d)
    }

    fn budget_points(
        &self,
        settings: &MethodSettings,
        d: usize,
        budgets: &[usize],
        _max_samples: usize,
    ) -> Vec<(usize, MethodSettings)> {
        budget_points(self.make, settings, d, budgets)
    }
}

impl FitMethod for PolynomialMethod {
    fn fit(
        &self,
        data: &AttentionData,
        settings: &MethodSettings,
        _shared: SharedFits<'_>,
    ) -> Result<Box<dyn FittedMethod>, AttentionError> {
        let kernel = kernel(self.info.id, self.make, settings)?;
        Ok(fit(kernel, data, settings))
    }
}

/// The map of degree `settings.degree`, or the method's error.
fn kernel(
    id: &str,
    make: MakeKernel,
    settings: &MethodSettings,
) -> Result<PolynomialKernel, AttentionError> {
    make(settings.degree).map_err(|e| method_error(id, e))
}

/// Features per token of the map of degree `settings.degree` at dimension d.
fn feature_size(make: MakeKernel, settings: &MethodSettings, d: usize) -> Option<usize> {
    make(settings.degree).ok()?.feature_size(d)
}

/// The degrees 1 to 6 whose feature size stays within four times the largest budget.
fn budget_points(
    make: MakeKernel,
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
fn fit(
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

    /// The explicit features when they fit the budget (built per token in f64, as `draw`'s
    /// map, and stored as f32: O(D) per token against the O(D·dv) that S and the outputs
    /// cost, so the f64 build does not change the timing).
    fn batched_map(
        &self,
        d: usize,
        settings: &MethodSettings,
        _rng: &mut StreamRng,
    ) -> Option<Result<FeatureMap32, AttentionError>> {
        let size = self.kernel.feature_size(d)?;
        Some(if size <= settings.deterministic_feature_budget {
            Ok(FeatureMap32::Polynomial {
                kernel: self.kernel,
                d,
                size,
            })
        } else {
            Err(AttentionError::Method {
                method: self.kernel.label(),
                message: format!(
                    "its {size} features exceed {}: evaluated pair by pair (O(L²))",
                    settings.deterministic_feature_budget
                ),
            })
        })
    }

    /// Deterministic: the squared relative error `((k̂ − SM)/SM)²` of its kernel, averaged over
    /// every query-key pair.
    fn kernel_relative_mse(&self, data: &AttentionData, _settings: &MethodSettings) -> Option<f64> {
        let mut total = 0.0;
        for i in 0..data.len {
            for j in 0..data.len {
                let s = dot(data.query(i), data.key(j));
                let relative = self.kernel.kernel(s) * (-s).exp() - 1.0;
                total += relative * relative;
            }
        }
        Some(total / (data.len * data.len).max(1) as f64)
    }
}
