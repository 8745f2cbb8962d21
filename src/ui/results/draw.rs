//! Drawing the kernel view's parts into their canvases: Figure 1's scatter panels and their
//! highlight rings, the bounds and the θ sweep drawn from the scatter dataset, and Figures 2–3's
//! boxplots, each with its text alternative and hover layout.

use leptos::html::Canvas;
use leptos::prelude::*;

use super::hover::{HoverLayouts, keep_hover};
use super::number_text;
use crate::chart_geometry::hover::HoverLayout;
use crate::charts::{
    BoxplotEntry, ScatterLayout, SweepEntry, TheoremEntry, describe, draw_boxplots, draw_highlight,
    draw_lemma_3_2, draw_parameter_sweep, draw_scatter, draw_theorem_3_3,
};
use crate::lab::kernel::experiment::{DatasetMetrics, ExperimentResult, ScatterSeries};
use crate::numerics::estimators::DESCRIPTIONS;
use crate::ui::ScatterView;

/// The canvases of the page.
#[derive(Clone, Copy)]
pub(super) struct Canvases {
    /// One per registry entry (shown when chosen).
    pub(super) scatter: StoredValue<Vec<NodeRef<Canvas>>>,
    pub(super) mse: NodeRef<Canvas>,
    pub(super) rel: NodeRef<Canvas>,
    pub(super) curves: NodeRef<Canvas>,
    pub(super) lemma: NodeRef<Canvas>,
    pub(super) theorem: NodeRef<Canvas>,
    pub(super) sweep: NodeRef<Canvas>,
    /// What each chart's last drawing put where, for hover (`None` before it is drawn).
    pub(super) hover: HoverLayouts,
}

/// Rings pair `pair` on the overlay of every drawn scatter panel (clears them for `None`): the
/// same pair highlighted across the estimators, drawing nothing else and computing nothing.
pub(super) fn draw_highlights(
    view: &ScatterView,
    overlays: StoredValue<Vec<NodeRef<Canvas>>>,
    layouts: StoredValue<Vec<Option<ScatterLayout>>>,
    pair: Option<usize>,
) -> Result<(), String> {
    for series in &view.series {
        let slot = series.estimates.estimator.index();
        let Some(overlay) = overlays.with_value(|o| o.get(slot).and_then(|o| o.get_untracked()))
        else {
            continue;
        };
        let at = pair.and_then(|i| {
            layouts
                .with_value(|l| l.get(slot).copied().flatten())?
                .pair_position(series, i)
        });
        draw_highlight(&overlay, at).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The series Lemma 3.2 and Theorem 3.3 hold for (hyperbolic features, real diagonal A).
pub(super) fn bounded(view: &ScatterView) -> impl Iterator<Item = &ScatterSeries> {
    view.series
        .iter()
        .filter(|s| s.estimates.estimator.info().bounds().hyperbolic_real_a)
}

/// The sweep chart's lines: every chosen estimator that has a parameter sweep.
fn sweep_entries(view: &ScatterView) -> Vec<SweepEntry> {
    let ln_m = (view.config.m.max(1) as f64).ln();
    let ln10 = std::f64::consts::LN_10;
    view.series
        .iter()
        .filter_map(|s| {
            let sweep = s.estimates.sweep.as_ref()?;
            Some(SweepEntry {
                estimator: s.estimates.estimator,
                values: sweep.values.clone(),
                log10_mse: sweep
                    .log_mean_mse_one_feature
                    .iter()
                    .map(|l| (l - ln_m) / ln10)
                    .collect(),
                log10_median_mse: sweep
                    .log_median_mse_one_feature
                    .iter()
                    .map(|l| (l - ln_m) / ln10)
                    .collect(),
                measured: (sweep.current, s.metrics.log_mse / ln10),
            })
        })
        .collect()
}

/// Figure 1's panels and the two bounds drawn from the scatter dataset.
pub(super) fn draw_scatter_part(
    view: &ScatterView,
    canvases: Canvases,
    probe: Option<usize>,
    layouts: StoredValue<Vec<Option<ScatterLayout>>>,
) -> Result<(), String> {
    let mut drawn = vec![None; DESCRIPTIONS.len()];
    for series in &view.series {
        let slot = series.estimates.estimator.index();
        if let Some(canvas) = canvases
            .scatter
            .with_value(|c| c.get(slot).and_then(|c| c.get()))
        {
            drawn[slot] = Some(draw_scatter(&canvas, series, probe).map_err(|e| e.to_string())?);
            describe(
                &canvas,
                &format!(
                    "{}: true against estimated SM for {} pairs; MSE {}, max relative error {}",
                    series.estimates.estimator.label(),
                    view.config.n,
                    number_text(series.metrics.log_mse),
                    number_text(series.metrics.log_max_rel_err)
                ),
            );
        }
    }
    layouts.set_value(drawn);
    let m = view.config.m;
    let radii: Vec<_> = bounded(view)
        .map(|s| {
            (
                s.estimates.estimator,
                s.estimates.estimator.label(),
                s.estimates.data_radius,
            )
        })
        .collect();
    if let (Some(canvas), false) = (canvases.lemma.get(), radii.is_empty()) {
        keep_hover(
            &canvas,
            canvases.hover.lemma,
            draw_lemma_3_2(&canvas, m, &radii),
            HoverLayout::Curves,
        )?;
        describe(
            &canvas,
            &format!("Lemma 3.2's bound on the relative error against the data radius, m = {m}"),
        );
    }
    let entries: Vec<TheoremEntry> = bounded(view)
        .filter_map(|s| {
            Some(TheoremEntry {
                estimator: s.estimates.estimator,
                label: s.estimates.estimator.label(),
                inputs: s.estimates.theorem_3_3.clone()?,
                observed_max_rel_err: s.metrics.max_rel_err,
                log_predicted_max_rel_rmse: s.estimates.max_log_relative_rmse(),
            })
        })
        .collect();
    if let (Some(canvas), false) = (canvases.theorem.get(), entries.is_empty()) {
        keep_hover(
            &canvas,
            canvases.hover.theorem,
            draw_theorem_3_3(&canvas, m, &entries),
            HoverLayout::Curves,
        )?;
        describe(
            &canvas,
            &format!("Theorem 3.3's predicted against observed max relative error, m = {m}"),
        );
    }
    let sweeps = sweep_entries(view);
    if let (Some(canvas), false) = (canvases.sweep.get(), sweeps.is_empty()) {
        keep_hover(
            &canvas,
            canvases.hover.sweep,
            draw_parameter_sweep(&canvas, "θ", &sweeps),
            HoverLayout::Curves,
        )?;
        describe(
            &canvas,
            "MSE formula against the angle θ of the complex A, with the measured value at the current θ",
        );
    }
    Ok(())
}

/// Figures 2 and 3.
pub(super) fn draw_boxplot_part(
    result: &ExperimentResult,
    canvases: Canvases,
) -> Result<(), String> {
    type Median = fn(&crate::lab::kernel::experiment::EstimatorSummary) -> f64;
    let entries = |metric: fn(&DatasetMetrics) -> f64,
                   log_median: Median,
                   with_theory: bool|
     -> Vec<BoxplotEntry> {
        result
            .summaries
            .iter()
            .map(|s| BoxplotEntry {
                // The chart falls back to the ids where the names do not fit.
                label: s.estimator.label(),
                estimator: s.estimator,
                values: s
                    .per_dataset
                    .iter()
                    .map(|d| metric(d) / std::f64::consts::LN_10)
                    .collect(),
                theory: with_theory
                    .then_some(s.log_median_theoretical_mse / std::f64::consts::LN_10),
                log_median: Some(log_median(s)),
            })
            .collect()
    };
    let datasets = result.config.datasets;
    let medians = |log_median: fn(&crate::lab::kernel::experiment::EstimatorSummary) -> f64| {
        result
            .summaries
            .iter()
            .map(|s| format!("{} {}", s.estimator.id(), number_text(log_median(s))))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(canvas) = canvases.mse.get() {
        describe(
            &canvas,
            &format!(
                "MSE per dataset over {datasets} datasets, medians: {}",
                medians(|s| s.log_median_mse)
            ),
        );
        keep_hover(
            &canvas,
            canvases.hover.mse,
            draw_boxplots(
                &canvas,
                &format!("MSE per dataset ({datasets} datasets)"),
                "mean squared error (log scale)",
                "MSE",
                &entries(|m| m.log_mse, |s| s.log_median_mse, true),
            ),
            HoverLayout::Boxes,
        )?;
    }
    if let Some(canvas) = canvases.rel.get() {
        describe(
            &canvas,
            &format!(
                "max relative error per dataset over {datasets} datasets, medians: {}",
                medians(|s| s.log_median_max_rel_err)
            ),
        );
        keep_hover(
            &canvas,
            canvases.hover.rel,
            draw_boxplots(
                &canvas,
                &format!("max relative error per dataset ({datasets} datasets)"),
                "max |ŜM − SM| / SM (log scale)",
                "max relative error",
                &entries(|m| m.log_max_rel_err, |s| s.log_median_max_rel_err, false),
            ),
            HoverLayout::Boxes,
        )?;
    }
    Ok(())
}
