//! Every kernel estimator of the estimator registry as an attention method: its φ, ψ in the
//! linear attention ratio `ô_i = φ(q_i)·Σ_j ψ(k_j) v_jᵀ / φ(q_i)·Σ_l ψ(k_l)` (`prf-pos` is
//! Performer, `rff` is RFA, `hcexp-var` a data-chosen A, `oprf` the optimal positive features).

use std::cell::RefCell;

use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::linear::{FeatureMap, linear_attention};
use crate::numerics::attention::long::FeatureMap32;
use crate::numerics::attention::method::{
    AttentionMethod, FitMethod, FittedMethod, MethodFamily, MethodInfo, MethodRun, MethodSettings,
    SharedFits, method_error,
};
use crate::numerics::attention::{AttentionError, Evaluation};
use crate::numerics::dataset::Dataset;
use crate::numerics::estimators::{EstimatorId, Fit, FitInput, Projections, Side, dot};
use crate::numerics::projections::Coupling;
use crate::numerics::rng::StreamRng;

/// One draw of ω: the stream's state before and after it, and what it gave.
struct OmegaDraw {
    before: StreamRng,
    coupling: Coupling,
    m: usize,
    d: usize,
    omega: Projections,
    after: StreamRng,
}

thread_local! {
    /// The last ω [`draw_features`] drew. Texts that run through one swapped model (the
    /// retrieval set's dozen) draw each head's ω from the same stream state once per text; the
    /// later texts get the first one's (the same bits, the stream left where the draw leaves
    /// it) instead of drawing it again, which was 7 % of the retrieval's time in V8.
    static LAST_OMEGA: RefCell<Option<OmegaDraw>> = const { RefCell::new(None) };
}

/// A registry estimator's explicit features with its fit and one draw of ω.
#[derive(Clone, Debug)]
pub struct EstimatorFeatures {
    pub id: EstimatorId,
    pub fit: Fit,
    pub omega: Projections,
}

impl FeatureMap for EstimatorFeatures {
    fn features(&self, u: &[f64], side: Side) -> Vec<f64> {
        self.id.get().features(&self.fit, u, side, &self.omega)
    }

    fn is_positive(&self) -> bool {
        !self.id.get().fast_sum(&self.fit).is_signed()
    }
}

/// One registry estimator as an attention method.
#[derive(Clone, Copy, Debug)]
pub struct RandomFeatureMethod {
    estimator: EstimatorId,
    info: MethodInfo,
}

impl RandomFeatureMethod {
    /// The method of `estimator`: its id and colour, and its label but for the two estimators
    /// the attention literature knows by another name.
    pub fn new(estimator: EstimatorId) -> Self {
        let described = estimator.info();
        let label = match described.id() {
            "prf-pos" => "Performer (PRF)",
            "rff" => "RFA (trigonometric)",
            _ => described.label(),
        };
        let info = MethodInfo {
            id: described.id(),
            label,
            family: MethodFamily::RandomFeatures,
            colour: described.colour(),
            formula: r"\hat{o}_i = \frac{{\phi(q_i)}^\top \sum_j \psi(k_j)\, v_j^\top}{{\phi(q_i)}^\top \sum_l \psi(k_l)},\ \phi, \psi \text{ the estimator's features}",
            source: "seed 000 (CEXP, A), seed 002 (PRF, RFA), REFERENCE.md",
            parameters: &["features", "coupling", "theta", "cplxa"],
            is_random: true,
            is_quadratic: false,
            exact_at_full_length: false,
            needs_lln_constants: false,
            sweeps_budget: true,
        };
        Self { estimator, info }
    }

    fn features_per_projection(&self) -> usize {
        self.estimator.info().features_per_projection()
    }
}

impl AttentionMethod for RandomFeatureMethod {
    fn info(&self) -> &MethodInfo {
        &self.info
    }

    fn estimator(&self) -> Option<EstimatorId> {
        Some(self.estimator)
    }

    fn feature_size(&self, settings: &MethodSettings, _d: usize) -> Option<usize> {
        settings
            .features
            .checked_mul(self.features_per_projection())
    }

    fn projection_work(&self, settings: &MethodSettings, len: usize, d: usize) -> f64 {
        2.0 * len as f64 * settings.features as f64 * d as f64 * self.estimator.info().cost_factor()
    }

    fn budget_points(
        &self,
        settings: &MethodSettings,
        _d: usize,
        budgets: &[usize],
        _max_samples: usize,
    ) -> Vec<(usize, MethodSettings)> {
        let per = self.features_per_projection();
        budgets
            .iter()
            .map(|&budget| budget / per)
            .filter(|&m| m >= 1)
            .map(|m| {
                let mut at = settings.clone();
                at.features = m;
                (m * per, at)
            })
            .collect()
    }
}

impl FitMethod for RandomFeatureMethod {
    fn fit(
        &self,
        data: &AttentionData,
        settings: &MethodSettings,
        _shared: SharedFits<'_>,
    ) -> Result<Box<dyn FittedMethod>, AttentionError> {
        let fit = fit_estimator(self.estimator, data, settings)?;
        Ok(Box::new(FittedRandomFeatures {
            estimator: self.estimator,
            per: self.features_per_projection(),
            fit,
        }))
    }
}

/// An estimator's fit on one problem; each draw samples a fresh ω.
struct FittedRandomFeatures {
    estimator: EstimatorId,
    per: usize,
    fit: Fit,
}

impl FittedMethod for FittedRandomFeatures {
    fn draw(
        &self,
        data: &AttentionData,
        settings: &MethodSettings,
        rng: &mut StreamRng,
        rows: &[usize],
    ) -> Result<MethodRun, AttentionError> {
        let m = settings.features;
        let map = draw_features(self.estimator, &self.fit, settings, data.d, rng)?;
        Ok(MethodRun {
            feature_size: m * self.per,
            attention: linear_attention(&map, data, rows),
            evaluation: Evaluation::Linear,
            note: fit_note(&self.fit),
        })
    }

    fn batched_map(
        &self,
        d: usize,
        settings: &MethodSettings,
        rng: &mut StreamRng,
    ) -> Option<Result<FeatureMap32, AttentionError>> {
        let map = match draw_features(self.estimator, &self.fit, settings, d, rng) {
            Ok(map) => map,
            Err(e) => return Some(Err(e)),
        };
        let form = self.estimator.get().batched_form(&map.fit, &map.omega)?;
        Some(Ok(FeatureMap32::from_form(&form, &map.omega)))
    }

    /// The estimator's MSE formula over `SM²`, averaged over every query-key pair.
    fn kernel_relative_mse(&self, data: &AttentionData, settings: &MethodSettings) -> Option<f64> {
        mean_relative_mse_formula(
            self.estimator,
            &self.fit,
            data,
            settings.features,
            |_, _| false,
        )
    }
}

/// Fits `estimator` to the queries and keys of `data`, as its attention method does: every
/// query paired with the key half a sequence away (each token once in the optimiser's pair
/// objective; the heuristics read only the two sides' moments). Shared with the methods that
/// use an estimator's features inside another scheme (`sparse`).
pub fn fit_estimator(
    estimator: EstimatorId,
    data: &AttentionData,
    settings: &MethodSettings,
) -> Result<Fit, AttentionError> {
    let shift = data.len / 2;
    let y: Vec<f64> = (0..data.len)
        .flat_map(|i| data.key((i + shift) % data.len).to_vec())
        .collect();
    let pairs = Dataset {
        d: data.d,
        n: data.len,
        x: data.q.clone(),
        y,
    };
    let moments = pairs.moments();
    estimator
        .get()
        .fit(
            FitInput {
                data: &pairs,
                moments: &moments,
            },
            &settings.estimator_params,
        )
        .map_err(|e| method_error(estimator.id(), e))
}

/// One draw of ω (`settings.features` projections, coupled as `settings.coupling` says) and
/// `estimator`'s features with it, from `rng`.
pub fn draw_features(
    estimator: EstimatorId,
    fit: &Fit,
    settings: &MethodSettings,
    d: usize,
    rng: &mut StreamRng,
) -> Result<EstimatorFeatures, AttentionError> {
    let m = settings.features;
    let omega = LAST_OMEGA.with(|last| {
        let mut last = last.borrow_mut();
        if let Some(kept) = last
            .as_ref()
            .filter(|k| (k.coupling, k.m, k.d) == (settings.coupling, m, d) && k.before == *rng)
        {
            *rng = kept.after.clone();
            return Ok(kept.omega.clone());
        }
        let before = rng.clone();
        let omega = Projections::sample_coupled(settings.coupling, m, d, rng)
            .map_err(|e| method_error(estimator.id(), e))?;
        *last = Some(OmegaDraw {
            before,
            coupling: settings.coupling,
            m,
            d,
            omega: omega.clone(),
            after: rng.clone(),
        });
        Ok(omega)
    })?;
    Ok(EstimatorFeatures {
        id: estimator,
        fit: fit.clone(),
        omega,
    })
}

/// The mean over every query-key pair (i, j) of `data` of `estimator`'s MSE formula
/// (`Estimator::log_mse`, i.i.d. ω, m projections) over `SM²`, counting 0 where `exact(i, j)`
/// (a pair a method computes exactly); `None` where the estimator has no formula.
pub fn mean_relative_mse_formula(
    estimator: EstimatorId,
    fit: &Fit,
    data: &AttentionData,
    m: usize,
    exact: impl Fn(usize, usize) -> bool,
) -> Option<f64> {
    let estimator = estimator.get();
    let m = m.max(1);
    let mut total = 0.0;
    for i in 0..data.len {
        let q = data.query(i);
        for j in (0..data.len).filter(|&j| !exact(i, j)) {
            let k = data.key(j);
            let log_mse = estimator.log_mse(fit, q, k, m)?;
            total += (log_mse - 2.0 * dot(q, k)).exp();
        }
    }
    Some(total / (data.len * data.len).max(1) as f64)
}

/// What was fitted, in words: A's range, θ, α, the optimiser's iterations.
fn fit_note(fit: &Fit) -> String {
    let (lo, hi) = fit
        .a
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), a| {
            (lo.min(*a), hi.max(*a))
        });
    let mut note = if let Some(dense) = &fit.dense {
        format!(
            "dense P, {:.0} % of Σ|P_ij| off the diagonal",
            100.0 * dense.off_diagonal_share()
        )
    } else if lo == hi {
        format!("A = {lo:.3}·I")
    } else {
        format!("A diagonal in [{lo:.3}, {hi:.3}]")
    };
    if fit.theta != 0.0 {
        note.push_str(&format!(", θ = {:.3}", fit.theta));
    }
    if fit.alpha != 0.0 {
        note.push_str(&format!(", α = {:.3}", fit.alpha));
    }
    if let Some(report) = fit.optimiser {
        note.push_str(&format!(", {} L-BFGS iterations", report.iterations));
    }
    note
}
