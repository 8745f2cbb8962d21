//! The f32 kernel checked against the f64 reference on the same data and ω, pair by pair,
//! against the Monte Carlo error: shared by the native tests and the browser tests.

use super::plan::generate_dataset;
use super::task::{Piece, Task, TaskOutput};
use super::workspace::Workspace;
use crate::lab::config::ExperimentConfig;
use crate::lab::kernel::results::ExperimentError;
use crate::numerics::estimators::{EstimatorId, Fit, FitInput, Projections, reference_estimate};
use crate::numerics::logspace::SignedLog;
use crate::numerics::portable::Libm;
use crate::numerics::rng::{StreamPurpose, stream_rng};

/// One pair's estimate from the f32 kernel (through [`Workspace::run`]) beside the f64
/// reference ([`reference_estimate`]) on the same data and ω, with the formula's relative
/// RMSE `√MSE/SM`: the Monte Carlo error the difference is judged against.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelCheck {
    pub estimator: EstimatorId,
    pub pair: usize,
    pub f32: SignedLog,
    pub f64: SignedLog,
    /// `ln SM(x, y)`.
    pub log_true: f64,
    pub relative_rmse: f64,
}

impl KernelCheck {
    /// `|ŜM_f32 − ŜM_f64| / SM`, from the logs (exact where the values overflow).
    pub fn difference(&self) -> f64 {
        let scale = self.f64.ln_abs.max(self.f32.ln_abs);
        let value = |s: SignedLog| s.scaled(-scale).value();
        ((value(self.f32) - value(self.f64)).abs().libm_ln() + scale - self.log_true).libm_exp()
    }

    /// Whether f32 costs less than 1 % of the Monte Carlo error, and, for the positive
    /// estimators, less than 1e-4 relative to SM. (A signed estimator's prefactor, such as
    /// RFF's `e^{(|x|²+|y|²)/2}`, can exceed SM by orders of magnitude, and so does its Monte
    /// Carlo error: there only the relative criterion means anything.)
    pub fn is_far_below_the_monte_carlo_error(&self) -> bool {
        let difference = self.difference();
        let signed = self.estimator.get().fast_sum(&Fit::identity(1)).is_signed();
        difference <= 0.01 * self.relative_rmse && (signed || difference < 1e-4)
    }
}

/// [`KernelCheck`]s for the first `pairs` pairs of the scatter dataset, every estimator of
/// `config`, with the configuration's shared ω. The kernel's tests share it: natively, and in
/// WebAssembly built like the worker (`tests/browser_worker.rs`).
pub fn check_kernel_against_f64(
    config: &ExperimentConfig,
    pairs: usize,
) -> Result<Vec<KernelCheck>, ExperimentError> {
    let data = generate_dataset(config, 0)?;
    let pairs = pairs.clamp(1, data.n);
    let mut rng = stream_rng(config.seed, StreamPurpose::SharedOmega, 0, 0);
    let omega = Projections::sample_coupled(config.coupling, config.m, config.d, &mut rng)?;
    let moments = data.moments();
    let mut workspace = Workspace::new();
    // The page's kernel: fused where the module allows.
    workspace.set_fused(true);
    let mut checks = Vec::with_capacity(pairs * config.estimators.len());
    for &estimator in &config.estimators {
        let task = Task {
            estimator,
            piece: Piece::ScatterPairs {
                start: 0,
                end: pairs,
            },
        };
        let TaskOutput::ScatterPairs {
            log_true,
            estimates,
            log_theoretical_mse,
            ..
        } = workspace.run(config, &task)?
        else {
            return Err(ExperimentError::InvalidTask(
                "a scatter task answered".into(),
            ));
        };
        let fit = estimator.get().fit(
            FitInput {
                data: &data,
                moments: &moments,
            },
            &config.estimator_params(),
        )?;
        for pair in 0..pairs {
            checks.push(KernelCheck {
                estimator,
                pair,
                f32: estimates[pair],
                f64: reference_estimate(
                    estimator.get(),
                    &fit,
                    data.query(pair),
                    data.key(pair),
                    &omega,
                )?,
                log_true: log_true[pair],
                relative_rmse: (0.5 * log_theoretical_mse[pair] - log_true[pair]).libm_exp(),
            });
        }
    }
    Ok(checks)
}
