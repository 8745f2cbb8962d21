//! The computations behind the attention view's parts: one draw of every method
//! ([`main_report`]), bias and variance over R draws ([`bias_variance`]), the temperature sweep
//! ([`temperature`]), the equal-budget chart ([`budget`]) and the table over the 72 real heads
//! ([`heads_table`]). [`crate::lab::attention::report`] holds what they return and dispatches a request.

use crate::lab::config::{BLOCK, BUDGETS, ExperimentConfig, TEMPERATURES, TV_ROWS};
use crate::numerics::stats::mean_and_standard_error;

use crate::lab::attention::methods::{
    Prepared, draw_outputs, method_settings, prepare, prepare_with, run,
};
use crate::lab::attention::outputs::{
    BiasVariance, BiasVarianceReport, BudgetCurve, BudgetReport, HeadRow, HeadsTable, MainReport,
    MethodReport, ProblemShare, TABLE_DRAWS, TABLE_METHODS, TemperatureCurve, TemperatureReport,
};
use crate::numerics::attention::AttentionError;
use crate::numerics::attention::data::AttentionData;
use crate::numerics::attention::exact::{
    mean_row_entropy, numerical_rank, singular_values, softmax_matrix, softmax_output,
    softmax_rows, spectral_gap, total_variation,
};
use crate::numerics::attention::heads::HeadSet;
use crate::numerics::attention::lln::LlnConstants;
use crate::numerics::attention::methods::MethodId;

pub(super) fn main_report(
    config: &ExperimentConfig,
    data: &AttentionData,
    lln: Option<&LlnConstants>,
) -> Result<MainReport, AttentionError> {
    let exact = softmax_output(data);
    let rows = tv_rows(data.len);
    let exact_rows = softmax_rows(data, &rows);
    let block = data.prefix(BLOCK);
    let b = block.len;
    let exact_block = softmax_matrix(&block);
    let exact_singular_values = singular_values(&exact_block, b);
    let all_block_rows: Vec<usize> = (0..b).collect();
    let mut methods = Vec::new();
    for &method in &config.attention.methods {
        let prepared = prepare(method, data, config, lln)?;
        let draw = run(method, &prepared, data, config, 0, &rows)?;
        let row_tv = draw
            .attention
            .rows
            .iter()
            .zip(&exact_rows)
            .filter(|(approx, _)| approx.iter().all(|x| x.is_finite()))
            .map(|(approx, exact)| total_variation(approx, exact))
            .collect();
        let output_error = output_errors(&draw.attention.output, &exact, data.dv);
        let block_prepared = prepare(method, &block, config, lln)?;
        let block_draw = run(method, &block_prepared, &block, config, 0, &all_block_rows)?;
        let block_matrix: Vec<f64> = block_draw.attention.rows.concat();
        let singular = singular_values(&block_matrix, b);
        methods.push(MethodReport {
            method,
            feature_size: draw.feature_size,
            evaluation: draw.evaluation,
            note: draw.note,
            row_tv,
            output_error,
            bad_rows: draw.attention.bad_rows,
            rank: numerical_rank(&singular),
            block: block_matrix,
            singular_values: singular,
        });
    }
    let norms: Vec<f64> = exact.chunks_exact(data.dv).map(norm).collect();
    Ok(MainReport {
        len: data.len,
        d: data.d,
        dv: data.dv,
        block_len: b,
        exact_rank: numerical_rank(&exact_singular_values),
        exact_block,
        exact_singular_values,
        tv_rows: rows,
        mean_output_norm: mean_and_standard_error(&norms).0,
        methods,
        tokens: Vec::new(),
    })
}

/// `|o_i − ô_i|` for every usable row.
fn output_errors(approx: &[f64], exact: &[f64], dv: usize) -> Vec<f64> {
    approx
        .chunks_exact(dv)
        .zip(exact.chunks_exact(dv))
        .filter(|(a, _)| a.iter().all(|x| x.is_finite()))
        .map(|(a, e)| {
            a.iter()
                .zip(e)
                .map(|(a, e)| (a - e) * (a - e))
                .sum::<f64>()
                .sqrt()
        })
        .collect()
}

fn norm(u: &[f64]) -> f64 {
    u.iter().map(|x| x * x).sum::<f64>().sqrt()
}

pub(super) fn bias_variance(
    config: &ExperimentConfig,
    data: &AttentionData,
    lln: Option<&LlnConstants>,
) -> Result<BiasVarianceReport, AttentionError> {
    let exact = softmax_output(data);
    let (len, dv) = (data.len, data.dv);
    let mut methods = Vec::new();
    for &method in &config.attention.methods {
        let prepared = prepare(method, data, config, lln)?;
        let draws = if method.is_random() {
            config.attention.draws
        } else {
            1
        };
        // Only the outputs are read: a batched map's draws in f32 ([`draw_outputs`]).
        let settings = method_settings(config);
        let outputs: Vec<Vec<f64>> = (0..draws)
            .map(|r| draw_outputs(method, &prepared, data, &settings, (config.seed, r as u64)))
            .collect::<Result<_, _>>()?;
        let mut squared_bias = Vec::new();
        let mut variance = Vec::new();
        let mut deviations = Vec::new();
        let mut bad_rows = 0;
        for i in 0..len {
            let row = |r: usize| &outputs[r][i * dv..(i + 1) * dv];
            if (0..draws).any(|r| row(r).iter().any(|x| !x.is_finite())) {
                bad_rows += 1;
                continue;
            }
            let mean: Vec<f64> = (0..dv)
                .map(|c| (0..draws).map(|r| row(r)[c]).sum::<f64>() / draws as f64)
                .collect();
            let var = if draws > 1 {
                (0..draws)
                    .map(|r| {
                        row(r)
                            .iter()
                            .zip(&mean)
                            .map(|(x, m)| (x - m) * (x - m))
                            .sum::<f64>()
                    })
                    .sum::<f64>()
                    / (draws - 1) as f64
            } else {
                0.0
            };
            let deviation: f64 = mean
                .iter()
                .zip(&exact[i * dv..(i + 1) * dv])
                .map(|(m, o)| (m - o) * (m - o))
                .sum();
            deviations.push(deviation);
            squared_bias.push(deviation - var / draws as f64);
            variance.push(var);
        }
        methods.push(BiasVariance {
            method,
            draws,
            squared_bias,
            variance,
            bad_rows,
            mean_squared_deviation: mean_and_standard_error(&deviations).0,
        });
    }
    Ok(BiasVarianceReport { methods })
}

pub(super) fn temperature(
    config: &ExperimentConfig,
    data: &AttentionData,
    lln: Option<&LlnConstants>,
) -> Result<TemperatureReport, AttentionError> {
    let block = data.prefix(BLOCK);
    let b = block.len;
    let all_rows: Vec<usize> = (0..b).collect();
    let mut curves = vec![TemperatureCurve {
        method: None,
        entropy: Vec::new(),
        gap: Vec::new(),
    }];
    curves.extend(config.attention.methods.iter().map(|&m| TemperatureCurve {
        method: Some(m),
        entropy: Vec::new(),
        gap: Vec::new(),
    }));
    for &tau in &TEMPERATURES {
        let hot = block.at_temperature(tau);
        let exact = softmax_matrix(&hot);
        curves[0].entropy.push(mean_row_entropy(&exact, b));
        curves[0].gap.push(spectral_gap(&exact, b));
        for (curve, &method) in curves[1..].iter_mut().zip(&config.attention.methods) {
            // Each method refits to the data at this temperature (LLN matches its moments).
            let prepared = prepare(method, &hot, config, lln)?;
            let draw = run(method, &prepared, &hot, config, 0, &all_rows)?;
            let matrix = draw.attention.rows.concat();
            curve.entropy.push(mean_row_entropy(&matrix, b));
            curve.gap.push(spectral_gap(&matrix, b));
        }
    }
    Ok(TemperatureReport {
        temperatures: TEMPERATURES.to_vec(),
        block_len: b,
        curves,
    })
}

/// Tokens of the budget chart's problem (the first ones), to bound its cost.
pub const BUDGET_TOKENS: usize = 256;
/// Randomized attention's largest sample count in the budget chart (it is O(S·L²)).
const BUDGET_MAX_RA_SAMPLES: usize = 64;

pub(super) fn budget(
    config: &ExperimentConfig,
    data: &AttentionData,
    lln: Option<&LlnConstants>,
) -> Result<BudgetReport, AttentionError> {
    let data = data.prefix(BUDGET_TOKENS);
    let exact = softmax_output(&data);
    let mut curves = Vec::new();
    for &method in &config.attention.methods {
        let mut points = Vec::new();
        // (D, the settings that give it)
        let settings = method.get().budget_points(
            &method_settings(config),
            data.d,
            &BUDGETS,
            BUDGET_MAX_RA_SAMPLES,
        );
        for (size, at) in settings {
            let prepared = prepare_with(method, &data, &at, lln)?;
            let draws = if method.is_random() { 2 } else { 1 };
            let mut means = Vec::new();
            for r in 0..draws {
                let output = draw_outputs(method, &prepared, &data, &at, (config.seed, 100 + r))?;
                let errors = output_errors(&output, &exact, data.dv);
                if !errors.is_empty() {
                    means.push(mean_and_standard_error(&errors).0);
                }
            }
            if !means.is_empty() {
                let (mean, se) = mean_and_standard_error(&means);
                points.push((size, mean, if se.is_finite() { se } else { 0.0 }));
            }
        }
        points.sort_unstable_by_key(|p| p.0);
        curves.push(BudgetCurve { method, points });
    }
    Ok(BudgetReport {
        len: data.len,
        curves,
    })
}

/// The real-head table on `share` of the heads (in layer-then-head order); the shares'
/// tables merge into the whole one ([`HeadsTable::merge`]).
pub(super) fn heads_table(
    config: &ExperimentConfig,
    heads: &dyn HeadSet,
    share: ProblemShare,
) -> Result<HeadsTable, AttentionError> {
    let methods: Vec<MethodId> = TABLE_METHODS
        .iter()
        .filter_map(|id| MethodId::from_id(id))
        .collect();
    let shape = heads.shape();
    let mut rows = Vec::new();
    for (layer, head) in share.heads(shape.layers, shape.heads)? {
        let mut errors = vec![0.0; methods.len()];
        for passage in 0..shape.passages {
            let data = heads
                .head(passage, layer, head)
                .map_err(|e| AttentionError::Data(e.to_string()))?
                .model_scaled()
                .into_data()?;
            let exact = softmax_output(&data);
            for (e, &method) in errors.iter_mut().zip(&methods) {
                let prepared: Prepared = prepare(method, &data, config, None)?;
                for r in 0..TABLE_DRAWS {
                    let draw = run(method, &prepared, &data, config, 1_000 + r as u64, &[])?;
                    let errs = output_errors(&draw.attention.output, &exact, data.dv);
                    *e += mean_and_standard_error(&errs).0 / (TABLE_DRAWS * shape.passages) as f64;
                }
            }
        }
        rows.push(HeadRow {
            layer,
            head,
            errors,
        });
    }
    Ok(HeadsTable::from_rows(
        methods,
        config.attention.features,
        rows,
    ))
}

/// The TV rows: `min(L, TV_ROWS)` rows spread evenly over the sequence.
fn tv_rows(len: usize) -> Vec<usize> {
    let count = len.min(TV_ROWS);
    (0..count).map(|t| t * len / count).collect()
}
