//! Complex exponential features with a complex diagonal `A = e^{iθ}·diag(a)` (CEXP as first
//! defined, Hybrid Random Features; REFERENCE.md, "Complex diagonal A").
//!
//! With the bilinear product, `z = Ax + A⁻¹y = e^{iθ} a∘x + e^{−iθ} y/a` and
//! `s = Σ_i (a_i x_i)² e^{2iθ} + (y_i/a_i)² e^{−2iθ}`, one feature `f = exp(ω·z − s/2)` has
//! `E f = SM(x, y)`; the estimate is `Re f` averaged over m draws (positive form), or
//! `Re (f(ω) + f(−ω))/2` (hyperbolic form). Writing `u = ω·(a∘x + y/a)` and
//! `v = ω·(a∘x − y/a)`: `ω·z = cos θ · u + i sin θ · v`, so
//! `ŜM = (1/m) e^{−Re s/2} Σ_k e^{cos θ u_k} cos(sin θ v_k − Im s/2)`: two projections per pair.
//! θ = 0 is CEXP/HCEXP with the real A; `a = 1`, θ = π/2 is the trigonometric estimator.
//!
//! MSE (REFERENCE.md, Monte Carlo-checked): with `E|f|² = exp(2|Re z|² − Re s)` and
//! `Re E f² = exp(Re s + 4x·y) cos(Im s)`, `Q = (E|f|² + Re E f²)/2`:
//! positive `m·MSE = Q − SM²`; hyperbolic, with
//! `C = (e^{−Re s} cos(Im s) + exp(−2|Im z|² − Re s))/2`, `m·MSE = (Q + C)/2 − SM²`.

use super::{
    Collapsed, Describe, Estimator, EstimatorError, EstimatorParams, Family, FastSum, Fit,
    FitInput, ParameterSweep, Projections, Side, dot, transformed_side,
};
use crate::numerics::dataset::Dataset;
use crate::numerics::portable::Libm;
use crate::numerics::stats::log_mean_exp;

/// Steps of the MSE-against-θ sweep between 0 and π/2.
const THETA_STEPS: usize = 32;
use crate::numerics::heuristics::diagonal_a;
use crate::numerics::logspace::{log_of_median, signed_log_sum};

/// The complex diagonal A with positive or hyperbolic features.
#[derive(Clone, Copy, Debug)]
pub struct ComplexDiagonal {
    pub hyperbolic: bool,
}

/// Positive form.
pub const COMPLEX_POSITIVE: ComplexDiagonal = ComplexDiagonal { hyperbolic: false };
/// Hyperbolic form.
pub const COMPLEX_HYPERBOLIC: ComplexDiagonal = ComplexDiagonal { hyperbolic: true };

/// The pieces of one pair: `|a∘x|²`, `|y/a|²`, `x·y`.
fn pair_norms(a: &[f64], x: &[f64], y: &[f64]) -> (f64, f64, f64) {
    let (mut ax2, mut by2, mut xy) = (0.0, 0.0, 0.0);
    for ((a, x), y) in a.iter().zip(x).zip(y) {
        ax2 += (a * x) * (a * x);
        by2 += (y / a) * (y / a);
        xy += x * y;
    }
    (ax2, by2, xy)
}

impl Describe for ComplexDiagonal {
    fn id(&self) -> &'static str {
        if self.hyperbolic { "hcplx" } else { "cplx" }
    }

    fn label(&self) -> &'static str {
        if self.hyperbolic {
            "HCEXP, complex A = e^(iθ)·diag(a)"
        } else {
            "CEXP, complex A = e^(iθ)·diag(a)"
        }
    }

    fn family(&self) -> Family {
        Family::Complex
    }

    fn colour(&self) -> [u8; 3] {
        if self.hyperbolic {
            [51, 34, 136]
        } else {
            [170, 68, 153]
        }
    }

    #[cfg(estimator_prose)]
    fn docs(&self) -> super::Docs {
        super::Docs {
            formula: if self.hyperbolic {
                r"\widehat{\mathrm{SM}} = \frac{1}{m} e^{-\operatorname{Re} s/2} \sum_k \left[e^{u_k \cos\theta} \cos(v_k \sin\theta - \operatorname{Im} s/2) + e^{-u_k \cos\theta} \cos(-v_k \sin\theta - \operatorname{Im} s/2)\right]/2,\quad u = \omega \cdot (Ax + A^{-1}y),\quad v = \omega \cdot (Ax - A^{-1}y) \text{ for real } \operatorname{diag}(a)"
            } else {
                r"\widehat{\mathrm{SM}} = \frac{1}{m} e^{-\operatorname{Re} s/2} \sum_k e^{u_k \cos\theta} \cos(v_k \sin\theta - \operatorname{Im} s/2),\quad u = \omega \cdot (ax + y/a),\quad v = \omega \cdot (ax - y/a),\quad s = e^{2i\theta}|ax|^2 + e^{-2i\theta}|y/a|^2"
            },
            notice: "θ slides from the real A (θ = 0) to random Fourier features (θ = π/2 with a = 1): watch the MSE-against-θ chart",
            source: "Hybrid Random Features (Choromanski et al. 2022), complex A; seed paper section 2",
        }
    }

    fn twin(&self) -> Option<&'static str> {
        Some(if self.hyperbolic { "cplx" } else { "hcplx" })
    }

    fn is_hyperbolic(&self) -> bool {
        self.hyperbolic
    }

    fn parameter_key(&self, params: &EstimatorParams) -> String {
        format!("theta={} a={}", params.theta, params.complex_a.url_name())
    }

    fn projections_per_pair(&self) -> usize {
        2
    }

    fn draws_full_omega(&self) -> bool {
        true
    }

    fn features_per_projection(&self) -> usize {
        if self.hyperbolic { 4 } else { 2 }
    }
}

impl Estimator for ComplexDiagonal {
    fn fit(&self, input: FitInput<'_>, params: &EstimatorParams) -> Result<Fit, EstimatorError> {
        let diagonal = diagonal_a(params.complex_a, input.moments);
        Ok(Fit {
            theta: params.theta,
            ..Fit::diagonal(diagonal.a, diagonal.clamped)
        })
    }

    fn fast_sum(&self, fit: &Fit) -> FastSum {
        FastSum::Complex {
            cos_theta: fit.theta.libm_cos(),
            sin_theta: fit.theta.libm_sin(),
            hyperbolic: self.hyperbolic,
        }
    }

    fn collapse(&self, fit: &Fit, x: &[f64], y: &[f64], z: &mut [f64]) -> Collapsed {
        let d = x.len();
        let (u, v) = z.split_at_mut(d);
        for (((a, x), y), (u, v)) in fit.a.iter().zip(x).zip(y).zip(u.iter_mut().zip(v)) {
            *u = a * x + y / a;
            *v = a * x - y / a;
        }
        let (ax2, by2, _) = pair_norms(&fit.a, x, y);
        let two_theta = 2.0 * fit.theta;
        Collapsed {
            log_prefactor: -0.5 * two_theta.libm_cos() * (ax2 + by2),
            phase: 0.5 * two_theta.libm_sin() * (ax2 - by2),
        }
    }

    fn log_mse(&self, fit: &Fit, x: &[f64], y: &[f64], m: usize) -> Option<f64> {
        let (ax2, by2, xy) = pair_norms(&fit.a, x, y);
        let (mut u2, mut v2) = (0.0, 0.0);
        for ((a, x), y) in fit.a.iter().zip(x).zip(y) {
            u2 += (a * x + y / a) * (a * x + y / a);
            v2 += (a * x - y / a) * (a * x - y / a);
        }
        let (c, s) = (fit.theta.libm_cos(), fit.theta.libm_sin());
        let two_theta = 2.0 * fit.theta;
        let re_s = two_theta.libm_cos() * (ax2 + by2);
        let im_s = two_theta.libm_sin() * (ax2 - by2);
        let re_z2 = c * c * u2;
        let im_z2 = s * s * v2;
        let cos_im = im_s.libm_cos();
        let ln_cos = cos_im.abs().libm_ln();
        let half = 0.5f64.libm_ln();
        // E|f|²/2 and Re E f²/2: Q.
        let mut terms = vec![
            (false, half + 2.0 * re_z2 - re_s),
            (cos_im < 0.0, half + ln_cos + re_s + 4.0 * xy),
        ];
        if self.hyperbolic {
            // (Q + C)/2: halve Q's terms and add C/2.
            for term in &mut terms {
                term.1 += half;
            }
            let quarter = 0.25f64.libm_ln();
            terms.push((cos_im < 0.0, quarter + ln_cos - re_s));
            terms.push((false, quarter - 2.0 * im_z2 - re_s));
        }
        terms.push((true, 2.0 * xy));
        let per_feature = signed_log_sum(terms);
        Some(if per_feature.negative {
            // Exact zero variance lost to rounding.
            f64::NEG_INFINITY
        } else {
            per_feature.ln_abs - (m as f64).libm_ln()
        })
    }

    fn parameter_sweep(&self, fit: &Fit, data: &Dataset) -> Option<ParameterSweep> {
        let values: Vec<f64> = (0..=THETA_STEPS)
            .map(|i| std::f64::consts::FRAC_PI_2 * i as f64 / THETA_STEPS as f64)
            .collect();
        let (log_mean_mse_one_feature, log_median_mse_one_feature) = values
            .iter()
            .map(|&theta| {
                let at = Fit {
                    theta,
                    ..fit.clone()
                };
                let logs: Vec<f64> = (0..data.n)
                    .map(|i| {
                        self.log_mse(&at, data.query(i), data.key(i), 1)
                            .unwrap_or(f64::NAN)
                    })
                    .collect();
                (log_mean_exp(&logs), log_of_median(&logs))
            })
            .unzip();
        Some(ParameterSweep {
            parameter: "θ".to_string(),
            key: "theta".to_string(),
            values,
            log_mean_mse_one_feature,
            log_median_mse_one_feature,
            current: fit.theta,
        })
    }

    fn features(&self, fit: &Fit, u: &[f64], side: Side, omega: &Projections) -> Vec<f64> {
        // φ(x) = m^{-1/2} exp(e^{iθ} ω·(a∘x) − e^{2iθ}|a∘x|²/2), ψ(y) likewise with e^{−iθ}
        // and y/a; ŜM = Re Σ φ_k ψ_k = Σ Re φ Re ψ − Im φ Im ψ, so ψ stacks −Im ψ.
        let sign = if side == Side::Query { 1.0 } else { -1.0 };
        let w = transformed_side(&fit.a, u, side);
        let m = omega.m();
        let mut t = vec![0.0; m];
        omega.project(&w, &mut t);
        let w2 = dot(&w, &w);
        let (c, s) = (fit.theta.libm_cos(), sign * fit.theta.libm_sin());
        let (c2, s2) = (
            (2.0 * fit.theta).libm_cos(),
            sign * (2.0 * fit.theta).libm_sin(),
        );
        let copies: &[f64] = if self.hyperbolic {
            &[1.0, -1.0]
        } else {
            &[1.0]
        };
        let ln_scale = -0.5 * ((m * copies.len()) as f64).libm_ln();
        let mut real = Vec::with_capacity(m * copies.len());
        let mut imaginary = Vec::with_capacity(m * copies.len());
        for &direction in copies {
            for tk in &t {
                let magnitude = (ln_scale + c * direction * tk - 0.5 * c2 * w2).libm_exp();
                let angle = s * direction * tk - 0.5 * s2 * w2;
                real.push(magnitude * angle.libm_cos());
                imaginary.push(sign * magnitude * angle.libm_sin());
            }
        }
        real.extend(imaginary);
        real
    }
}
