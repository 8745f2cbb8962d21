//! Running one attention method on one problem as a configuration asks: the configuration's
//! settings for the methods ([`method_settings`]), fitting once ([`prepare`]), drawing as often
//! as asked ([`run`]) from the method's own stream ([`draw_rng`], keyed by its id).

use crate::lab::config::{DETERMINISTIC_FEATURE_BUDGET, ExperimentConfig};
use crate::numerics::attention::AttentionError;
use crate::numerics::attention::data::AttentionData;
use std::sync::Mutex;

use crate::numerics::attention::lln::{LlnConstants, fit_moment_matching};
use crate::numerics::attention::long::{FeatureMap32, LinearForm, Sequence, linear_attention_f32};
pub use crate::numerics::attention::method::MethodRun;
use crate::numerics::attention::method::{FittedMethod, MethodSettings, SharedFits};
use crate::numerics::attention::methods::MethodId;
use crate::numerics::rng::{StreamPurpose, StreamRng, stream_rng};

/// A method fitted to one problem, ready to be drawn.
pub type Prepared = Box<dyn FittedMethod>;

/// What the methods read of a configuration.
pub fn method_settings(config: &ExperimentConfig) -> MethodSettings {
    MethodSettings {
        features: config.attention.features,
        coupling: config.coupling,
        degree: config.attention.degree,
        ra_samples: config.attention.ra_samples,
        landmarks: config.attention.landmarks,
        window: config.attention.window,
        top_k: config.attention.top_k,
        estimator_params: config.estimator_params(),
        deterministic_feature_budget: DETERMINISTIC_FEATURE_BUDGET,
    }
}

/// Fits `method` to `data` with the configuration's settings.
pub fn prepare(
    method: MethodId,
    data: &AttentionData,
    config: &ExperimentConfig,
    lln: Option<&LlnConstants>,
) -> Result<Prepared, AttentionError> {
    prepare_with(method, data, &method_settings(config), lln)
}

/// Fits `method` to `data` with explicit settings (the budget chart's points).
pub fn prepare_with(
    method: MethodId,
    data: &AttentionData,
    settings: &MethodSettings,
    lln: Option<&LlnConstants>,
) -> Result<Prepared, AttentionError> {
    method.fit(data, settings, SharedFits { lln })
}

/// The stream of draw `draw` of `method`: independent across methods and draws, and keyed by
/// the method's id ([`MethodId::stream_index`]).
pub fn draw_rng(seed: u64, method: MethodId, draw: u64) -> StreamRng {
    stream_rng(seed, StreamPurpose::Attention, method.stream_index(), draw)
}

/// One draw of a prepared method with the configuration's settings, returning P̂'s `rows`.
pub fn run(
    method: MethodId,
    prepared: &Prepared,
    data: &AttentionData,
    config: &ExperimentConfig,
    draw: u64,
    rows: &[usize],
) -> Result<MethodRun, AttentionError> {
    run_with(
        method,
        prepared,
        data,
        &method_settings(config),
        config.seed,
        draw,
        rows,
    )
}

/// One draw with explicit settings.
pub fn run_with(
    method: MethodId,
    prepared: &Prepared,
    data: &AttentionData,
    settings: &MethodSettings,
    seed: u64,
    draw: u64,
    rows: &[usize],
) -> Result<MethodRun, AttentionError> {
    prepared.draw(data, settings, &mut draw_rng(seed, method, draw), rows)
}

/// The outputs (L × dv) of one draw with explicit settings: in the long-sequence f32 kernels
/// when the method has a batched map (the random features, Taylor, LLN, `elu + 1`: the same
/// stream gives the same ω as [`run_with`]'s f64 draw, so the same estimate to f32 rounding,
/// at a tenth of its time), else its f64 draw. For the charts that read only the outputs (the
/// error against the feature budget), not P̂'s rows.
pub fn draw_outputs(
    method: MethodId,
    prepared: &Prepared,
    data: &AttentionData,
    settings: &MethodSettings,
    (seed, draw): (u64, u64),
) -> Result<Vec<f64>, AttentionError> {
    let mut rng = draw_rng(seed, method, draw);
    if let Some(map) = prepared.batched_map(data.d, settings, &mut rng) {
        let v: Vec<f32> = data.v.iter().map(|&x| x as f32).collect();
        let form = if data.causal {
            LinearForm::CausalChunked
        } else {
            LinearForm::Bidirectional
        };
        let output = batched_outputs(&map?, data, &v, form)
            .ok_or_else(|| AttentionError::Data(format!("{}: shapes do not match", method.id())))?;
        return Ok(output.iter().map(|&x| f64::from(x)).collect());
    }
    Ok(run_with(method, prepared, data, settings, seed, draw, &[])?
        .attention
        .output)
}

/// `map`'s outputs (L × dv) on `data`'s queries and keys (in f32) and the values `v`, in the
/// long-sequence f32 kernels; `None` when the shapes disagree. The attention view's f32 draws
/// ([`draw_outputs`]) and the model swap's heads (`lab::models::head_swap`) both run here.
pub fn batched_outputs(
    map: &FeatureMap32,
    data: &AttentionData,
    v: &[f32],
    form: LinearForm,
) -> Option<Vec<f32>> {
    let narrow = |x: &[f64]| x.iter().map(|&x| x as f32).collect::<Vec<f32>>();
    let (q, k) = (narrow(&data.q), narrow(&data.k));
    let sequence = Sequence::new(data.len, data.d, data.dv, &q, &k, v)?;
    Some(linear_attention_f32(map, &sequence, form).output)
}

/// LLN's constants a, b for dimension d, fitted on the seed's own stream (only when LLN is
/// chosen: the fit costs about 16 softmax matrices of 256 tokens).
pub fn lln_constants(
    config: &ExperimentConfig,
    d: usize,
) -> Result<Option<LlnConstants>, AttentionError> {
    if !config
        .attention
        .methods
        .iter()
        .any(|m| m.get().needs_lln_constants())
    {
        return Ok(None);
    }
    if let Some(stored) = STORED_LLN_FITS.iter().find(|c| c.d == d) {
        return Ok(Some(*stored));
    }
    // The fit depends on d alone (its stream is fixed) and costs about 2·10⁸ exponentials:
    // each process (a worker, the command line) fits a dimension once.
    static FITTED: Mutex<Vec<LlnConstants>> = Mutex::new(Vec::new());
    if let Some(found) = FITTED
        .lock()
        .ok()
        .and_then(|fitted| fitted.iter().find(|c| c.d == d).copied())
    {
        return Ok(Some(found));
    }
    let constants = fit_lln(d)?;
    if let Ok(mut fitted) = FITTED.lock() {
        fitted.push(constants);
    }
    Ok(Some(constants))
}

/// LLN's fit at dimension d on its fixed stream ([`fit_moment_matching`]).
fn fit_lln(d: usize) -> Result<LlnConstants, AttentionError> {
    let mut rng = stream_rng(0, StreamPurpose::Attention, 1_000, d as u64);
    fit_moment_matching(d, &mut rng).map_err(|e| AttentionError::Method {
        method: "lln".into(),
        message: e.to_string(),
    })
}

/// [`fit_lln`]'s answers at the dimensions the lab meets on its first screens, as the native
/// fit gives them (the test below fits again and compares): d = 32, every head of
/// all-MiniLM-L6-v2 (the real heads, the text view and the model swap), and d = 50, the kernel
/// view's default d that the synthetic attention view reads. Without them every worker that
/// runs LLN fits first: about 0.7 s of a core on a two-core machine, paid by each model worker
/// and each attention worker while the reader waits for the page's first answers.
const STORED_LLN_FITS: [LlnConstants; 2] = [
    LlnConstants {
        a: 0.1759548838558348,
        b: -0.362163284888114,
        d: 32,
    },
    LlnConstants {
        a: 0.15568451582911966,
        b: -0.35508026613622734,
        d: 50,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Fitted again: the same numbers. Not compared bit for bit: `exp` and `ln` come from the
    /// platform's libm natively (glibc) and from Rust's in wasm, which may round a value one ulp
    /// apart; through 2·10⁸ of them into a least-squares line that moves a and b by about 10⁻¹⁵
    /// relatively, so 10⁻¹² still catches any change to the fit, its stream or its grid.
    #[test]
    fn the_stored_lln_fits_are_the_fits() {
        for stored in STORED_LLN_FITS {
            let fitted = fit_lln(stored.d).expect("the fit");
            let near = |x: f64, y: f64| (x - y).abs() <= 1e-12 * y.abs();
            assert!(
                near(fitted.a, stored.a) && near(fitted.b, stored.b),
                "d = {}: fitted {fitted:?}, stored {stored:?}",
                stored.d
            );
            assert!(LlnConstants::new(stored.a, stored.b, stored.d).is_ok());
        }
    }
}
