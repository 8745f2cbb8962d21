//! The data panel of the kernel view: what the estimators are adapted to. Per component, the
//! scatter dataset's query and key means and standard deviations beside each heuristic's
//! diagonal A; histograms of `|x|`, `|y|` and `x·y`; and per chosen estimator histograms of
//! `|Ax|`, `|A⁻¹y|` and `|z|`, whose spread is what the MSE `∝ e^{|z|²}` punishes. Computed in
//! a worker from the configuration ([`crate::lab::kernel::data_view::data_view`], one dataset: it
//! fits every chosen estimator, which the page's module does not link), drawn here next to the
//! data controls; the panel keeps its last view until the next one arrives
//! (`data-status` on the section: `computing`, then `ready` or `error`). It asks once the
//! experiment's job is not computing, so that its request never delays the job's tasks.

use leptos::html::Canvas;
use leptos::prelude::*;

use crate::chart_geometry::attention::HeatScale;
use crate::chart_geometry::data::{
    a_ranges, bin_caption, component_label, component_series, histogram_label, off_log_axis,
};
use crate::charts::{draw_components, draw_heatmap, draw_histogram};
use crate::lab::config::{ExperimentConfig, Param};
use crate::lab::kernel::data_view::{DataView, HistogramSet, MAX_HISTOGRAM_PAIRS};
use crate::lab::pool::DataViewAsk;
use crate::numerics::estimators::off_diagonal_share;

use super::attention::{chart_error, resize_counter};
use super::controls::{NumberControl, SeedControl};
use super::export::PngButton;
use super::math::Math;
use super::pool::DataViewRunner;
use crate::lab::page::formulas;

/// The panel's view: none yet, or the worker's answer.
type ViewState = Signal<Option<Result<DataView, String>>>;

/// The part of the configuration the panel depends on (so that changing m, the boxplot
/// datasets or the probe does not recompute it).
fn data_config(c: &ExperimentConfig) -> ExperimentConfig {
    ExperimentConfig {
        d: c.d,
        n: c.n,
        seed: c.seed,
        mean_scale: c.mean_scale,
        x_mean_scale: c.x_mean_scale,
        y_mean_scale: c.y_mean_scale,
        x_shape: c.x_shape,
        y_shape: c.y_shape,
        x_norm: c.x_norm,
        y_norm: c.y_norm,
        estimators: c.estimators.clone(),
        theta: c.theta,
        complex_a: c.complex_a,
        ..ExperimentConfig::default()
    }
}

/// Draws with `draw` whenever the view (or the window's size) changes; returns the error to
/// show under the chart.
fn draw_on(
    view: ViewState,
    canvas: NodeRef<Canvas>,
    draw: impl Fn(&web_sys::HtmlCanvasElement, &DataView) -> Result<(), String> + 'static,
) -> RwSignal<Option<String>> {
    let error = RwSignal::new(None::<String>);
    let resized = resize_counter();
    Effect::new(move |_| {
        resized.track();
        let Some(c) = canvas.get() else {
            return;
        };
        view.with(|v| match v {
            Some(Ok(v)) => error.set(draw(&c, v).err()),
            Some(Err(e)) => error.set(Some(e.clone())),
            None => {}
        });
    });
    error
}

/// One chart of the panel: its heading, formula, canvas, caption, error and what to notice.
#[component]
fn DataChart(
    key: &'static str,
    title: &'static str,
    formula: &'static str,
    notice: &'static str,
    canvas: NodeRef<Canvas>,
    #[prop(into)] label: Signal<String>,
    #[prop(into)] caption: Signal<String>,
    error: RwSignal<Option<String>>,
) -> impl IntoView {
    view! {
        <div class="data-chart" data-part=key>
            <h3>{title}</h3>
            <p class="formula"><Math text=formula/></p>
            <canvas node_ref=canvas class=format!("chart data-{key}") data-chart=format!("data-{key}") role="img" aria-label=move || label.get()></canvas>
            <p class="caption">{move || caption.get()}</p>
            {chart_error(error)}
            <p class="notice-line">"What to notice: " {notice}</p>
        </div>
    }
}

/// A histogram chart of one of the view's sets.
fn histogram_of(
    view: ViewState,
    canvas: NodeRef<Canvas>,
    title: &'static str,
    what: &'static str,
    set: fn(&DataView) -> &HistogramSet,
) -> (RwSignal<Option<String>>, Signal<String>, Signal<String>) {
    let error = draw_on(view, canvas, move |c, v| {
        draw_histogram(c, title, what, set(v)).map_err(|e| e.to_string())
    });
    let label = Signal::derive(move || {
        view.with(|v| {
            v.as_ref()
                .and_then(|v| v.as_ref().ok())
                .map(|v| histogram_label(what, set(v)))
                .unwrap_or_default()
        })
    });
    let caption = Signal::derive(move || {
        view.with(|v| {
            v.as_ref()
                .and_then(|v| v.as_ref().ok())
                .map(|v| {
                    let cap = if v.histogram_pairs < v.n {
                        format!(
                            " (the first {} of the {} pairs: at most {MAX_HISTOGRAM_PAIRS})",
                            v.histogram_pairs, v.n
                        )
                    } else {
                        String::new()
                    };
                    let left_out: usize = set(v).series.iter().map(|s| s.left_out).sum();
                    let left_out = if left_out > 0 {
                        format!("; {left_out} non-finite values left out")
                    } else {
                        String::new()
                    };
                    format!(
                        "{} pairs of the scatter dataset{cap}; {}{left_out}.",
                        v.histogram_pairs,
                        bin_caption(set(v))
                    )
                })
                .unwrap_or_default()
        })
    });
    (error, label, caption)
}

/// The data panel.
///
/// - `config` / `set_config`: the page's configuration and its setter (for the data controls,
///   which show the same values as the sidebar's).
/// - `job_running`: whether the experiment is computing; the panel asks its worker only once
///   it is not, so that its request never queues in front of the experiment's tasks.
#[component]
pub fn DataPanel(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    #[prop(into)] job_running: Signal<bool>,
) -> impl IntoView {
    let inputs = Memo::new(move |_| config.with(data_config));
    // The latest answer for the latest inputs: the pool delivers no answer to older inputs
    // once newer ones were asked for (its data-panel channel).
    let state = RwSignal::new(None::<Result<DataView, String>>);
    let computing = RwSignal::new(true);
    let runner = use_context::<DataViewRunner>();
    let sent = StoredValue::new(None::<ExperimentConfig>);
    Effect::new(move |_| {
        let request = inputs.get();
        if sent.with_value(|s| s.as_ref() == Some(&request)) {
            return;
        }
        computing.set(true);
        if job_running.get() {
            return;
        }
        sent.set_value(Some(request.clone()));
        let done = move |output: Result<DataView, String>| {
            state.try_set(Some(output));
            computing.try_set(false);
        };
        match runner {
            Some(runner) => runner.run(DataViewAsk(request), done),
            None => done(Err("no worker pool to compute the data panel".into())),
        }
    });
    let view: ViewState = state.into();
    let status = move || {
        if computing.get() {
            "computing"
        } else if state.with(|v| matches!(v, Some(Ok(_)))) {
            "ready"
        } else {
            "error"
        }
    };

    let components: NodeRef<Canvas> = NodeRef::new();
    let components_error = draw_on(view, components, |c, v| {
        draw_components(c, "per component i", &component_series(v)).map_err(|e| e.to_string())
    });
    let components_label = Signal::derive(move || {
        view.with(|v| {
            v.as_ref()
                .and_then(|v| v.as_ref().ok())
                .map(component_label)
                .unwrap_or_default()
        })
    });
    let components_caption = Signal::derive(move || {
        view.with(|v| match v {
            Some(Ok(v)) => {
                let off = off_log_axis(&component_series(v));
                let off = if off > 0 {
                    format!(" {off} values ≤ 0 (a zero variance or mean) are not on the log axis.")
                } else {
                    String::new()
                };
                format!(
                    "Moments of all {} pairs of the scatter dataset. Range of a: {}.{off}",
                    v.n,
                    a_ranges(v)
                )
            }
            _ => String::new(),
        })
    });

    let norms: NodeRef<Canvas> = NodeRef::new();
    let (norms_error, norms_label, norms_caption) =
        histogram_of(view, norms, "|x| and |y|", "|x|, |y|", |v| &v.norms);
    let dots: NodeRef<Canvas> = NodeRef::new();
    let (dots_error, dots_label, dots_caption) =
        histogram_of(view, dots, "x·y = ln SM(x, y)", "x·y", |v| &v.dots);
    let ax: NodeRef<Canvas> = NodeRef::new();
    let (ax_error, ax_label, ax_caption) =
        histogram_of(view, ax, "|Ax| per estimator", "|Ax|", |v| &v.ax);
    let ay: NodeRef<Canvas> = NodeRef::new();
    let (ay_error, ay_label, ay_caption) =
        histogram_of(view, ay, "|A⁻¹y| per estimator", "|A⁻¹y|", |v| &v.ay);
    let z: NodeRef<Canvas> = NodeRef::new();
    let (z_error, z_label, z_caption) =
        histogram_of(view, z, "|z| = |Ax + A⁻ᵀy| per estimator", "|z|", |v| {
            &v.z
        });

    let has_dense = move || view.with(|v| matches!(v, Some(Ok(v)) if !v.dense.is_empty()));

    let notes = move || {
        view.with(|v| match v {
            Some(Ok(v)) if !v.notes.is_empty() => Some(view! {
                <p class="error" role="alert">{format!("Left out of the per-estimator histograms: {}", v.notes.join("; "))}</p>
            }.into_any()),
            Some(Err(e)) => Some(view! { <p class="error" role="alert">{e.clone()}</p> }.into_any()),
            _ => None,
        })
    };

    view! {
        <section class="figure data-panel" aria-label="the data and A" data-status=status>
            <h2>"The data and A" <PngButton/></h2>
            <p class="caption">
                "The queries x and keys y of the scatter dataset (dataset 0), the diagonal A each heuristic picks from their moments, and what the estimators then see. These controls are the sidebar's, shown here too."
            </p>
            <div class="data-controls" role="group" aria-label="data controls">
                <NumberControl param=Param::MeanScale config set_config id_prefix="data-"/>
                <NumberControl param=Param::XMeanScale config set_config id_prefix="data-"/>
                <NumberControl param=Param::YMeanScale config set_config id_prefix="data-"/>
                <NumberControl param=Param::XShape config set_config id_prefix="data-"/>
                <NumberControl param=Param::YShape config set_config id_prefix="data-"/>
                <NumberControl param=Param::XNorm config set_config id_prefix="data-"/>
                <NumberControl param=Param::YNorm config set_config id_prefix="data-"/>
                <NumberControl param=Param::D config set_config id_prefix="data-"/>
                <SeedControl config set_config id_prefix="data-"/>
            </div>
            {notes}
            <DataChart
                key="components"
                title="Moments and A per component"
                formula=formulas::DATA_MOMENTS
                notice="A shrinks the components where queries are large and keys small (a_i < 1) and stretches the others, so that Ax and A⁻¹y come out of similar size; mean-only A ignores the variances and swings much further where a mean is near 0."
                canvas=components
                label=components_label
                caption=components_caption
                error=components_error
            />
            <div class="pair">
                <DataChart
                    key="norms"
                    title="Norms of queries and keys"
                    formula=formulas::DATA_NORMS
                    notice="the generator rescales every query to mean norm xnorm and every key to mean norm ynorm: with A = I the estimators see exactly these."
                    canvas=norms
                    label=norms_label
                    caption=norms_caption
                    error=norms_error
                />
                <DataChart
                    key="dots"
                    title="Inner products"
                    formula=formulas::DATA_DOT
                    notice="the true kernel is exp(x·y): a spread of a few units here is a spread of orders of magnitude in SM."
                    canvas=dots
                    label=dots_label
                    caption=dots_caption
                    error=dots_error
                />
            </div>
            <div class="pair">
                <DataChart
                    key="ax"
                    title="Transformed queries"
                    formula=formulas::DATA_AX_NORM
                    notice="a data-chosen A pulls the long queries in; the identity leaves them at |x|."
                    canvas=ax
                    label=ax_label
                    caption=ax_caption
                    error=ax_error
                />
                <DataChart
                    key="ay"
                    title="Transformed keys"
                    formula=formulas::DATA_AINV_Y_NORM
                    notice="the same A pushes the short keys out: the two sides meet in between."
                    canvas=ay
                    label=ay_label
                    caption=ay_caption
                    error=ay_error
                />
            </div>
            <DataChart
                key="z"
                title="What the MSE grows with"
                formula=formulas::DATA_Z
                notice="the estimator whose |z| sits furthest left has the smallest relative MSE; a unit less of |z| near |z| = 5 is a factor e⁹ less MSE."
                canvas=z
                label=z_label
                caption=z_caption
                error=z_error
            />
            <div class="data-chart dense-ps" data-part="dense" style:display=move || if has_dense() { "" } else { "none" }>
                <h3>"The dense P of the DERF members"</h3>
                <p class="formula"><Math text=formulas::DATA_DENSE_P/></p>
                <div class="pair">
                    <DenseHeatmap view index=0/>
                    <DenseHeatmap view index=1/>
                </div>
                <div class="pair">
                    <DenseHeatmap view index=2/>
                    <DenseHeatmap view index=3/>
                </div>
                <p class="notice-line">"What to notice: the seed paper's A is the diagonal; a DERF member also mixes the components (off-diagonal colour) where queries and keys are correlated across components. Red positive, blue negative, white 0."</p>
            </div>
        </section>
    }
}

/// The heat map of the `index`-th chosen DERF member's dense P (nothing when there is none).
///
/// - `view`: the panel's view.
/// - `index`: which of [`DataView::dense`] to draw.
#[component]
fn DenseHeatmap(view: ViewState, index: usize) -> impl IntoView {
    let canvas: NodeRef<Canvas> = NodeRef::new();
    let shown = move || view.with(|v| matches!(v, Some(Ok(v)) if v.dense.len() > index));
    let error = draw_on(view, canvas, move |c, v| {
        let Some(dense) = v.dense.get(index) else {
            return Ok(());
        };
        draw_heatmap(
            c,
            &format!("P of {} (row i, column j)", dense.label),
            &dense.p,
            dense.d,
            HeatScale::Difference,
            &[],
        )
        .map_err(|e| e.to_string())
    });
    let caption = move || {
        view.with(|v| {
            let dense = v.as_ref()?.as_ref().ok()?.dense.get(index)?;
            Some(format!(
                "{}: the off-diagonal entries carry {:.0} % of Σ|P_ij| (0 % would be a diagonal A).",
                dense.label,
                100.0 * off_diagonal_share(dense.d, &dense.p)
            ))
        })
    };
    // Mounted only while there is a matrix to draw (the canvas's node ref then triggers the
    // drawing), so the panel holds no empty chart.
    view! {
        <Show when=shown>
            <div class="data-chart dense-p" data-part=format!("dense-{index}")>
                <canvas node_ref=canvas class="chart data-dense" data-chart=format!("data-dense-{index}") role="img" aria-label="heat map of a DERF member's dense P"></canvas>
                <p class="caption">{caption}</p>
                {chart_error(error)}
            </div>
        </Show>
    }
}
