//! The dense DERF members on the page's own MSE-against-m chart: the theory line (each member's
//! exact second moment, averaged over the curve's 32 pairs) against the measured points (the
//! mean of 4 independent draws of ω, ± its standard error), on the default data.

use softmax_kernel_lab::lab::config::ExperimentConfig;
use softmax_kernel_lab::lab::kernel::experiment::mse_against_m;

#[test]
fn the_positive_derf_theory_lines_sit_on_the_measurement() {
    // Measured (release build): derf-dense z = −1.35, −0.72, −0.65, 0.20, 1.07 and derf-fit
    // z = −1.28, −0.76, −0.82, 0.00, 1.00 at m = 16, 64, 256, 1024, 4096, with z the gap in
    // standard errors of the 4 repeats. The hyperbolic members sit within 1.4 SE at m = 16, 64
    // and 4096 and below the line at 256 and 1024, as hcexp-var and oprf-var do: their MSE is
    // ruled by draws too rare for 4 repeats (the page's note under the chart says so).
    // 3 SE here: with 4 repeats the standard error itself is uncertain by about 40 %.
    let (config, notices) = ExperimentConfig::from_query("est=derf-dense,derf-fit");
    assert!(notices.is_empty(), "{notices:?}");
    let curves = mse_against_m(&config, &[16, 64, 256, 1024]).expect("the curve runs");
    for curve in curves {
        for p in &curve.points {
            let z = (p.log_measured_mse.exp() - p.log_theoretical_mse.exp())
                / p.log_standard_error.exp();
            assert!(
                z.abs() < 3.0,
                "{} at m = {}: measured {:.4e} ± {:.1e}, theory {:.4e} ({z:.2} SE)",
                curve.estimator.id(),
                p.m,
                p.log_measured_mse.exp(),
                p.log_standard_error.exp(),
                p.log_theoretical_mse.exp()
            );
        }
    }
}
