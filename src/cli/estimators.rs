//! `kernel-lab estimators`: the registry as JSON, one object per estimator.

use serde::Serialize;

use crate::numerics::estimators::{EstimatorParams, Fit, REGISTRY};

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EstimatorListing {
    pub id: &'static str,
    pub label: &'static str,
    pub family: &'static str,
    pub formula: &'static str,
    pub source: &'static str,
    /// `+` and `hyp+` twins for the legacy `hyp` parameter.
    pub twin: Option<&'static str>,
    /// Whether the estimate can be negative.
    pub signed: bool,
    /// Whether Lemma 3.2 and Theorem 3.3 hold for it.
    pub seed_paper_bounds: bool,
}

/// The registry as [`EstimatorListing`]s.
pub fn estimator_listing() -> Vec<EstimatorListing> {
    let params = EstimatorParams::default();
    REGISTRY
        .iter()
        .map(|e| {
            let fit = Fit {
                theta: params.theta,
                ..Fit::identity(1)
            };
            EstimatorListing {
                id: e.id(),
                label: e.label(),
                family: e.family().label(),
                formula: e.docs().formula,
                source: e.docs().source,
                twin: e.twin(),
                signed: e.fast_sum(&fit).is_signed(),
                seed_paper_bounds: e.bounds().hyperbolic_real_a,
            }
        })
        .collect()
}
