//! The charts, the results table and the formulas beside them.

use std::sync::Arc;

use leptos::ev;
use leptos::html::Canvas;
use leptos::prelude::*;

use crate::chart_geometry::hover::HoverLayout;
use crate::charts::{
    BoxplotEntry, ScatterLayout, SweepEntry, TheoremEntry, describe, draw_boxplots, draw_highlight,
    draw_lemma_3_2, draw_mse_curves, draw_parameter_sweep, draw_scatter, draw_theorem_3_3,
    estimator_css_color,
};
use crate::lab::config::OmegaMode;
use crate::lab::experiment::{DatasetMetrics, ExperimentResult, MseCurve};
use crate::lab::tasks::Part;
use crate::numerics::estimators::{DESCRIPTIONS, EstimatorId};

use super::export::PngButton;
use super::math::Math;
use super::{ScatterView, Shown};
use crate::chart_geometry::scatter_tooltip;
use crate::lab::experiment::ScatterSeries;
use crate::lab::formulas;
use crate::numerics::stats::{format_from_log, order_by_key};

/// Text of a number given as its natural log, for the table: scientific notation that
/// `parseFloat` reads back, with the exponent beyond f64's range when needed.
fn number_text(ln_value: f64) -> String {
    format_from_log(ln_value, 4)
}

/// The canvases of the page.
#[derive(Clone, Copy)]
struct Canvases {
    /// One per registry entry (shown when chosen).
    scatter: StoredValue<Vec<NodeRef<Canvas>>>,
    mse: NodeRef<Canvas>,
    rel: NodeRef<Canvas>,
    curves: NodeRef<Canvas>,
    lemma: NodeRef<Canvas>,
    theorem: NodeRef<Canvas>,
    sweep: NodeRef<Canvas>,
    /// What each chart's last drawing put where, for hover (`None` before it is drawn).
    hover: HoverLayouts,
}

/// The hover layouts of the boxplots and the theory charts.
#[derive(Clone, Copy)]
struct HoverLayouts {
    mse: StoredValue<Option<HoverLayout>>,
    rel: StoredValue<Option<HoverLayout>>,
    curves: StoredValue<Option<HoverLayout>>,
    lemma: StoredValue<Option<HoverLayout>>,
    theorem: StoredValue<Option<HoverLayout>>,
    sweep: StoredValue<Option<HoverLayout>>,
}

impl HoverLayouts {
    fn new() -> Self {
        Self {
            mse: StoredValue::new(None),
            rel: StoredValue::new(None),
            curves: StoredValue::new(None),
            lemma: StoredValue::new(None),
            theorem: StoredValue::new(None),
            sweep: StoredValue::new(None),
        }
    }
}

/// Keeps what a chart's drawing returned for hover, and writes the points hover can reach into
/// the canvas' `data-hover-targets` (what the end-to-end tests point at); a failed drawing
/// leaves no hover.
fn keep_hover<L>(
    canvas: &web_sys::HtmlCanvasElement,
    store: StoredValue<Option<HoverLayout>>,
    drawn: Result<L, crate::charts::ChartError>,
    wrap: fn(L) -> HoverLayout,
) -> Result<(), String> {
    match drawn {
        Ok(layout) => {
            let layout = wrap(layout);
            let _ = canvas.set_attribute("data-hover-targets", &layout.targets_json());
            store.set_value(Some(layout));
            Ok(())
        }
        Err(e) => {
            store.set_value(None);
            Err(e.to_string())
        }
    }
}

/// A tooltip's text and the pointer's place, in CSS pixels of its canvas, with the canvas'
/// size (to keep the tooltip inside its panel), and the hovered point to mark, if any.
#[derive(Clone, Debug, PartialEq)]
struct Tip {
    text: String,
    x: f64,
    y: f64,
    width: f64,
    height: f64,
    marker: Option<(f64, f64)>,
}

impl Tip {
    /// The tip for the pointer at `(x, y)` on `canvas`, saying `text`.
    fn at(canvas: Option<web_sys::HtmlCanvasElement>, text: String, x: f64, y: f64) -> Self {
        let (width, height) = canvas.map_or((0.0, 0.0), |c| {
            (f64::from(c.client_width()), f64::from(c.client_height()))
        });
        Self {
            text,
            x,
            y,
            width,
            height,
            marker: None,
        }
    }

    /// The same tip, with a ring on the hovered point at `marker` (CSS pixels).
    fn marked(self, marker: Option<(f64, f64)>) -> Self {
        Self { marker, ..self }
    }
}

/// The tooltip beside the pointer, inside its `.panel` (which its canvas fills): right of and
/// below the pointer, or left of it in the right half and above it in the lower part; never
/// wider than the panel nor past its sides (CSS `min`/`max` against the panel's width), so
/// it stays in the viewport and adds no horizontal scroll. The numbers it shows are also in
/// the canvas' `aria-label`, the table or the exports: it is not the only way to read them.
///
/// A ring marks the hovered point itself (a curve's point, a dataset's dot), so the tooltip
/// is visibly about that point and not a neighbour.
///
/// - `tip`: what to show and where, `None` for no tooltip.
#[component]
fn Tooltip(tip: ReadSignal<Option<Tip>>) -> impl IntoView {
    move || {
        tip.get().map(|t| {
            // Left (or right) edge 12 px from the pointer, clamped into the panel for a
            // tooltip of the stylesheet's largest width.
            let side = |gap: f64| format!("max(0px, min({gap:.1}px, calc(100% - 260px)))");
            let flip = t.x > 0.5 * t.width;
            let above = t.y > 0.6 * t.height;
            let (left, right) = if flip {
                ("auto".to_string(), side(t.width - t.x + 12.0))
            } else {
                (side(t.x + 12.0), "auto".to_string())
            };
            let (top, bottom) = if above {
                (
                    "auto".to_string(),
                    format!("{:.1}px", t.height - t.y + 12.0),
                )
            } else {
                (format!("{:.1}px", t.y + 14.0), "auto".to_string())
            };
            let marker = t.marker.map(|(x, y)| {
                view! {
                    <div
                        class="hover-marker"
                        aria-hidden="true"
                        style:left=format!("{x:.1}px")
                        style:top=format!("{y:.1}px")
                    ></div>
                }
            });
            view! {
                {marker}
                <div
                    class="tooltip"
                    role="tooltip"
                    style:left=left
                    style:right=right
                    style:top=top
                    style:bottom=bottom
                >{t.text}</div>
            }
        })
    }
}

/// A chart canvas in its panel, with a tooltip for whatever its last drawing put under the
/// pointer.
///
/// - `canvas`: the canvas' node, which the drawing effects draw into.
/// - `class`: the canvas' classes (`chart boxplot`, `chart theory-chart`).
/// - `chart`: its `data-chart` name (the PNG export's file name).
/// - `layout`: what the last drawing put where ([`HoverLayout`]).
#[component]
fn HoverChart(
    canvas: NodeRef<Canvas>,
    class: &'static str,
    chart: &'static str,
    layout: StoredValue<Option<HoverLayout>>,
) -> impl IntoView {
    let (tip, set_tip) = signal(None::<Tip>);
    let on_move = move |ev: ev::MouseEvent| {
        let (x, y) = (f64::from(ev.offset_x()), f64::from(ev.offset_y()));
        let next = layout
            .with_value(|l| l.as_ref()?.hover_at(x, y))
            .map(|h| Tip::at(canvas.get_untracked(), h.text, x, y).marked(h.marker));
        if tip.with_untracked(|t| *t != next) {
            set_tip.set(next);
        }
    };
    view! {
        <div class="panel">
            <canvas
                node_ref=canvas
                class=class
                data-chart=chart
                on:mousemove=on_move
                on:mouseleave=move |_| set_tip.set(None)
            ></canvas>
            <Tooltip tip/>
        </div>
    }
}

/// Rings pair `pair` on the overlay of every drawn scatter panel (clears them for `None`): the
/// same pair highlighted across the estimators, drawing nothing else and computing nothing.
fn draw_highlights(
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
fn bounded(view: &ScatterView) -> impl Iterator<Item = &ScatterSeries> {
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
fn draw_scatter_part(
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
fn draw_boxplot_part(result: &ExperimentResult, canvases: Canvases) -> Result<(), String> {
    type Median = fn(&crate::lab::experiment::EstimatorSummary) -> f64;
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
    let medians = |log_median: fn(&crate::lab::experiment::EstimatorSummary) -> f64| {
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

/// Figure 1 (one scatter panel per estimator), Figures 2–3 (boxplots) and the theory charts.
/// Each part is drawn as soon as its data arrives, in its own effect (so in its own browser
/// task), and the last results stay on screen until newer ones replace them.
///
/// - `scatter`: the scatter dataset's estimates (arrive first).
/// - `summaries`: the whole experiment, once the boxplot datasets are in.
/// - `curves`: MSE against m for the same configuration.
/// - `on_drawn`: told `(generation, part, outcome)` after each part is drawn.
/// - `probe`: the pair to ring on the scatter panels.
/// - `on_pick`: told the index of a scatter point the user clicked.
///
/// Hovering a scatter point shows its numbers beside the pointer and rings the same pair on
/// every panel (on an overlay canvas: nothing is recomputed or redrawn but the rings); each
/// panel says which pair is hovered and which is probed in `data-hovered-pair` and
/// `data-probe-pair`. Hovering a box, a dataset's dot or a theory curve's point shows its
/// numbers too.
#[component]
pub fn Charts(
    scatter: ReadSignal<Option<Shown<ScatterView>>>,
    summaries: ReadSignal<Option<Shown<ExperimentResult>>>,
    curves: ReadSignal<Option<Shown<Vec<MseCurve>>>>,
    on_drawn: Callback<(u64, Part, Result<(), String>)>,
    probe: Signal<Option<usize>>,
    on_pick: Callback<usize>,
) -> impl IntoView {
    let layouts = StoredValue::new(vec![None::<ScatterLayout>; DESCRIPTIONS.len()]);
    let scatter_canvases: Vec<NodeRef<Canvas>> =
        DESCRIPTIONS.iter().map(|_| NodeRef::new()).collect();
    let overlay_canvases: Vec<NodeRef<Canvas>> =
        DESCRIPTIONS.iter().map(|_| NodeRef::new()).collect();
    let overlays = StoredValue::new(overlay_canvases.clone());
    // The scatter pair under the pointer, on whichever panel.
    let (hovered, set_hovered) = signal(None::<usize>);
    let canvases = Canvases {
        scatter: StoredValue::new(scatter_canvases.clone()),
        mse: NodeRef::new(),
        rel: NodeRef::new(),
        curves: NodeRef::new(),
        lemma: NodeRef::new(),
        theorem: NodeRef::new(),
        sweep: NodeRef::new(),
        hover: HoverLayouts::new(),
    };
    let hover = canvases.hover;
    let (resized, set_resized) = signal(0u32);
    let listener = window_event_listener(ev::resize, move |_| set_resized.update(|n| *n += 1));
    on_cleanup(move || listener.remove());

    Effect::new(move |_| {
        resized.track();
        let Some(shown) = scatter.get() else {
            return;
        };
        let outcome =
            draw_scatter_part(&shown.value, canvases, probe.get(), layouts).and_then(|()| {
                draw_highlights(&shown.value, overlays, layouts, hovered.get_untracked())
            });
        on_drawn.run((shown.generation, Part::Scatter, outcome));
    });
    // Hover rings the pair on every panel's overlay: the charts themselves are not redrawn.
    Effect::new(move |_| {
        let pair = hovered.get();
        let outcome = scatter.with_untracked(|r| {
            r.as_ref().map_or(Ok(()), |r| {
                draw_highlights(&r.value, overlays, layouts, pair)
            })
        });
        if let Err(e) = outcome {
            leptos::logging::warn!("the hovered pair could not be ringed: {e}");
        }
    });
    Effect::new(move |_| {
        resized.track();
        let Some(shown) = summaries.get() else {
            return;
        };
        let outcome = draw_boxplot_part(&shown.value, canvases);
        on_drawn.run((shown.generation, Part::Boxplots, outcome));
    });
    Effect::new(move |_| {
        resized.track();
        let Some(shown) = curves.get() else {
            return;
        };
        let outcome = match canvases.curves.get() {
            Some(canvas) => {
                describe(
                    &canvas,
                    &format!(
                        "measured MSE against m from 16 to 8192 for {} and the 1/m line of the formula",
                        shown
                            .value
                            .iter()
                            .map(|c| c.estimator.id())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
                keep_hover(
                    &canvas,
                    hover.curves,
                    draw_mse_curves(&canvas, &shown.value),
                    HoverLayout::Curves,
                )
            }
            None => Ok(()),
        };
        on_drawn.run((shown.generation, Part::Curves, outcome));
    });

    let panels = EstimatorId::all()
        .zip(scatter_canvases)
        .zip(overlay_canvases)
        .map(|((estimator, canvas), overlay)| {
            let pick = move |ev: ev::MouseEvent| {
                let slot = estimator.index();
                let picked = scatter.with_untracked(|r| {
                    let series = r
                        .as_ref()?
                        .value
                        .series
                        .iter()
                        .find(|s| s.estimates.estimator == estimator)?;
                    layouts
                        .with_value(|l| l.get(slot).copied().flatten())?
                        .nearest_pair(series, ev.offset_x() as f64, ev.offset_y() as f64)
                });
                if let Some(index) = picked {
                    on_pick.run(index);
                }
            };
            // Hover: the nearest pair's numbers beside the pointer, and the pair ringed on
            // every panel.
            let (tip, set_tip) = signal(None::<Tip>);
            let on_move = move |ev: ev::MouseEvent| {
                let slot = estimator.index();
                let (x, y) = (f64::from(ev.offset_x()), f64::from(ev.offset_y()));
                let found = scatter.with_untracked(|r| {
                    let series = r
                        .as_ref()?
                        .value
                        .series
                        .iter()
                        .find(|s| s.estimates.estimator == estimator)?;
                    let index = layouts
                        .with_value(|l| l.get(slot).copied().flatten())?
                        .nearest_pair(series, x, y)?;
                    Some((index, scatter_tooltip(series, index)?))
                });
                let pair = found.as_ref().map(|f| f.0);
                if hovered.get_untracked() != pair {
                    set_hovered.set(pair);
                }
                let next = found.map(|(_, text)| Tip::at(canvas.get_untracked(), text, x, y));
                if tip.with_untracked(|t| *t != next) {
                    set_tip.set(next);
                }
            };
            let leave = move |_| {
                set_tip.set(None);
                set_hovered.set(None);
            };
            let shown = move || {
                scatter.with(|r| {
                    r.as_ref().is_some_and(|r| {
                        r.value
                            .series
                            .iter()
                            .any(|s| s.estimates.estimator == estimator)
                    })
                })
            };
            view! {
                <div
                    class="panel"
                    style:display=move || if shown() { "block" } else { "none" }
                    data-hovered-pair=move || hovered.get().map(|i| i.to_string())
                    data-probe-pair=move || probe.get().map(|i| i.to_string())
                >
                    <canvas
                        node_ref=canvas
                        class="chart scatter"
                        title="click a point to probe that pair"
                        data-chart=format!("scatter-{}", estimator.id())
                        data-estimator=estimator.id()
                        on:click=pick
                        on:mousemove=on_move
                        on:mouseleave=leave
                    ></canvas>
                    <canvas node_ref=overlay class="highlight-overlay" aria-hidden="true"></canvas>
                    <Tooltip tip/>
                </div>
            }
        })
        .collect_view();

    let scatter_caption = move || {
        scatter.with(|r| {
            r.as_ref().map(|r| {
                let c = &r.value.config;
                format!(
                    "Figure 1: one dataset of n = {} pairs (d = {}, m = {}); each dot is one pair, the line is ŜM = SM. Click a dot to probe that pair below.",
                    c.n, c.d, c.m
                )
            })
        })
    };

    let has_bounds = move || {
        scatter.with(|r| {
            r.as_ref()
                .is_some_and(|r| bounded(&r.value).next().is_some())
        })
    };
    let has_sweep = move || {
        scatter.with(|r| {
            r.as_ref()
                .is_some_and(|r| r.value.series.iter().any(|s| s.estimates.sweep.is_some()))
        })
    };
    // "" leaves the stylesheet's grid in force.
    let display = |shown: bool| if shown { "" } else { "none" };
    view! {
        <section class="figure">
            <h2>"True against estimated softmax kernel" <PngButton/></h2>
            <div class="scatter-grid">{panels}</div>
            <p class="caption">{scatter_caption}</p>
        </section>
        <section class="figure">
            <h2>"Errors over many random datasets" <PngButton/></h2>
            <div class="box-grid" class:wide=move || summaries.with(|r| r.as_ref().is_some_and(|r| r.value.summaries.len() > 6))>
                <HoverChart canvas=canvases.mse class="chart boxplot" chart="mse" layout=hover.mse/>
                <HoverChart canvas=canvases.rel class="chart boxplot" chart="max-rel-err" layout=hover.rel/>
            </div>
            <p class="caption">
                "Figures 2 and 3: each dot is one dataset's MSE (mean over its pairs of (ŜM − SM)²) or max relative error "
                "(max over its pairs of |ŜM − SM| / SM). Boxes span the quartiles with the median inside; whiskers reach "
                "the furthest value within 1.5 IQR; circles are values beyond. The black diamond is Lemma 3.1's "
                "prediction: the median over the datasets of each dataset's expected MSE (an arrow with its value "
                "when it lies beyond the axis). Where the names do not fit under their boxes, the boxes are labelled by their ids."
            </p>
        </section>
        <section class="figure theory">
            <h2>"Theory beside the measurement" <PngButton/></h2>
            <div class="theory-row">
                <HoverChart canvas=canvases.curves class="chart theory-chart" chart="mse-vs-m" layout=hover.curves/>
                <div class="explain">
                    <h3>"MSE falls as 1/m"</h3>
                    <p class="formula-line"><Math text=formulas::LEMMA_3_1_HCEXP_MSE block=true/></p>
                    <p>
                        "Lemma 3.1 for HCEXP (the positive form has 1/m and the first power); every other estimator draws its own "
                        "formula (listed under \"What is computed\"), all proportional to 1/m for i.i.d. ω. The line is the formula's "
                        "mean over the first 32 pairs of the scatter dataset; the points are the measured MSE on the same pairs, the "
                        "mean of 4 independent draws of ω with ±1 standard error. Where |z|² is large, the MSE is dominated by draws "
                        "too rare to appear in a few repeats, and the points fall far below the line: the formula is right, the "
                        "sample is not big enough to see it. With orthogonal features (orf) the points may lie below the i.i.d. line: "
                        "that is their advantage."
                    </p>
                </div>
            </div>
            <div class="theory-row" style:display=move || display(has_sweep())>
                <HoverChart canvas=canvases.sweep class="chart theory-chart" chart="mse-vs-theta" layout=hover.sweep/>
                <div class="explain">
                    <h3>"From PRF to random Fourier features: the angle θ"</h3>
                    <p class="formula-line"><Math text=formulas::COMPLEX_A_MSE block=true/></p>
                    <p>
                        "The complex A's MSE formula at the page's m for every θ from 0 to π/2: solid, its mean over the scatter "
                        "dataset's pairs (what the measured MSE estimates); dashed, its median over the pairs (the typical pair). "
                        "The dot is the MSE measured at the θ in use. With a = 1, θ = 0 is PRF and θ = π/2 is the trigonometric "
                        "estimator; in between lie estimators none of the sources plot. Where a few pairs have a huge MSE the mean "
                        "is theirs, and the dot falls far below it, as on the MSE-against-m chart: those draws are too rare to be "
                        "seen. Move θ to move the dot."
                    </p>
                </div>
            </div>
            <div class="theory-row" style:display=move || display(has_bounds())>
                <HoverChart canvas=canvases.lemma class="chart theory-chart" chart="lemma-3-2" layout=hover.lemma/>
                <div class="explain">
                    <h3>"A bound from the size of the data"</h3>
                    <p class="formula-line"><Math text=formulas::LEMMA_3_2_BOUND block=true/></p>
                    <p>
                        "Lemma 3.2, corrected: the seed paper prints 1 − e⁴ʳ², which would make the bound negative. It holds for "
                        "HCEXP (hyperbolic features with a real diagonal A; only those are drawn) on any region where |Ax| ≤ r and |A⁻ᵀy| ≤ r, because the relative RMSE grows with |z|² ≤ (2r)². "
                        "The vertical lines mark each estimator's r on the scatter dataset: a good A keeps r small, and the bound "
                        "grows like e²ʳ²."
                    </p>
                </div>
            </div>
            <div class="theory-row" style:display=move || display(has_bounds())>
                <HoverChart canvas=canvases.theorem class="chart theory-chart" chart="theorem-3-3" layout=hover.theorem/>
                <div class="explain">
                    <h3>"A bound that holds with probability p"</h3>
                    <p class="formula-line"><Math text=formulas::THEOREM_3_3_RADIUS block=true/></p>
                    <p>
                        "Theorem 3.3: if queries and keys are Gaussian, then with probability at least p every one of the s pairs has "
                        "relative RMSE at most W(r)/√(2m). λ_Ax = maxᵢ aᵢ² σ²_x,i and λ_A⁻ᵀy = maxᵢ σ²_y,i / aᵢ²; the χ² quantile "
                        "comes from statrs. Computed from the scatter dataset's sample statistics it is an approximation. Dashed: the "
                        "largest √MSE/SM that Lemma 3.1 predicts on the data; dots: the largest relative error actually observed. "
                        "Above 1 (shaded) the bound says nothing."
                    </p>
                </div>
            </div>
        </section>
    }
}

/// What an estimator fitted on the scatter dataset, in words: the range of A's diagonal,
/// θ, α, and the optimiser's iterations and gain.
fn fitted_text(series: &ScatterSeries) -> String {
    let fit = &series.estimates.fit;
    let mut parts = Vec::new();
    let (lo, hi) = fit
        .a
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), a| {
            (lo.min(*a), hi.max(*a))
        });
    if lo.is_finite() && (lo != 1.0 || hi != 1.0) {
        parts.push(format!("a ∈ [{lo:.3}, {hi:.3}]"));
    } else {
        parts.push("A = I".to_string());
    }
    if fit.theta != 0.0 {
        parts.push(format!("θ = {:.3}", fit.theta));
    }
    if fit.alpha != 0.0 {
        parts.push(format!("α = {:.4}", fit.alpha));
    }
    if let Some(report) = fit.optimiser {
        let ratio = (report.log_objective_end - report.log_objective_start).exp();
        parts.push(format!(
            "{} iterations, objective × {:.3} of the variance-adjusted start",
            report.iterations, ratio
        ));
    }
    parts.join(", ")
}

/// The leaderboard: one row per estimator, sorted by median MSE, with what each fitted.
///
/// - `result`: the latest finished experiment.
#[component]
pub fn ResultsTable(result: Signal<Option<Arc<ExperimentResult>>>) -> impl IntoView {
    move || {
        result.get().map(|r| {
            let c = &r.config;
            let caption = format!(
                "Sorted by median MSE over {} datasets of {} pairs · d = {} · m = {} · {} ω {}",
                c.datasets,
                c.pairs,
                c.d,
                c.m,
                if c.orthogonal { "orthogonal" } else { "i.i.d." },
                match c.omega {
                    OmegaMode::Shared => "shared by each dataset's pairs",
                    OmegaMode::Fresh => "fresh for every pair",
                }
            );
            let medians: Vec<f64> = r.summaries.iter().map(|s| s.log_median_mse).collect();
            let order = order_by_key(&medians);
            let rows = order
                .into_iter()
                .enumerate()
                .filter_map(|(rank, i)| {
                    let (s, scatter) = (r.summaries.get(i)?, r.scatter.get(i)?);
                    let id = s.estimator.id();
                    let swatch = format!("background:{}", estimator_css_color(s.estimator));
                    Some(view! {
                        <tr data-estimator=id>
                            <td class="num">{rank + 1}</td>
                            <td><span class="swatch" style=swatch></span>{s.estimator.label()}</td>
                            <td class="fitted" title=s.estimator.info().docs().formula>{fitted_text(scatter)}</td>
                            <td class="num" data-metric="median-mse">{number_text(s.log_median_mse)}</td>
                            <td class="num" data-metric="median-max-rel-err">{number_text(s.log_median_max_rel_err)}</td>
                            <td class="num" data-metric="scatter-mse">{number_text(scatter.metrics.log_mse)}</td>
                            <td class="num" data-metric="clamped">{s.clamped}</td>
                        </tr>
                    })
                })
                .collect_view();
            let paired = paired_comparison(&r);
            view! {
                <section class="figure">
                    <h2>"Results: the leaderboard"</h2>
                    <table class="results-table">
                        <caption>{caption}</caption>
                        <thead>
                            <tr>
                                <th>"#"</th>
                                <th>"estimator"</th>
                                <th>"fitted on the scatter dataset"</th>
                                <th>"median MSE"</th>
                                <th>"median max rel. error"</th>
                                <th>"MSE on the scatter dataset"</th>
                                <th title="diagonal entries of A clamped into [0.001, 1000], summed over the boxplot datasets">"clamped a_i"</th>
                            </tr>
                        </thead>
                        <tbody>{rows}</tbody>
                    </table>
                    {paired.map(|text| view! { <p class="caption">{text}</p> })}
                </section>
            }
        })
    }
}

/// "Variance-adjusted A has the lower MSE in k of N datasets", when both heuristics ran.
fn paired_comparison(r: &ExperimentResult) -> Option<String> {
    let find = |id: &str| r.summaries.iter().find(|s| s.estimator.id() == id);
    let (mean, var) = crate::cli::PAIRED_HEURISTICS
        .iter()
        .find_map(|(mean, var)| find(mean).zip(find(var)))?;
    let wins = mean
        .per_dataset
        .iter()
        .zip(&var.per_dataset)
        .filter(|(m, v)| v.mse < m.mse)
        .count();
    Some(format!(
        "Paired by dataset (same data and ω): variance-adjusted A has the lower MSE in {wins} of {} datasets.",
        var.per_dataset.len()
    ))
}

/// The estimators' definitions, beside the charts: every registry entry's formula, what to
/// notice and source, then the data and the heuristics.
#[component]
pub fn Formulas() -> impl IntoView {
    let estimators = DESCRIPTIONS
        .iter()
        .map(|e| {
            let docs = e.docs();
            let [r, g, b] = e.colour();
            view! {
                <dt data-estimator=e.id()>
                    <span class="swatch" style=format!("background:rgb({r},{g},{b})")></span>
                    {e.label()} " " <code class="param-key">{e.id()}</code>
                </dt>
                <dd>
                    <Math text=docs.formula block=true/>
                    <span class="what-to-notice">"What to notice: " {docs.notice} "."</span>
                    <span class="source">"Source: " {docs.source} "."</span>
                </dd>
            }
        })
        .collect_view();
    view! {
        <section class="figure formulas">
            <h2>"What is computed"</h2>
            <dl>
                <dt>"Softmax kernel"</dt>
                <dd>
                    <Math text=formulas::SOFTMAX_KERNEL block=true/>
                    "for queries x and keys y; ω drawn i.i.d. (or in orthogonal blocks with orf = 1)."
                </dd>
                {estimators}
                <dt>"MSE (seed paper, Lemma 3.1)"</dt>
                <dd>
                    <Math text=formulas::CEXP_HCEXP_MSE block=true/>
                    "A good A makes |z| small on the data. The other estimators' formulas: ../shared/REFERENCE.md, each checked here "
                    "by the statistical harness (tests/estimators.rs)."
                </dd>
                <dt>"Choosing A from sample means μ and variances σ²"</dt>
                <dd>
                    "mean-only: aᵢ = √(|μ_y,i| / |μ_x,i|); variance-adjusted (Lemma 3.4): "
                    "aᵢ = ((σ²_y,i + μ²_y,i) / (σ²_x,i + μ²_x,i))^¼, the minimiser of E|Ax|² + E|A⁻ᵀy|²; optimised: the minimiser "
                    "of the mean relative MSE meanᵢ (cosh|zᵢ|² − 1)/m over diagonal A, convex in ln a. "
                    "Entries are clamped into [0.001, 1000] (a zero mean would make mean-only A infinite)."
                </dd>
                <dt>"Data (seed paper, section 4)"</dt>
                <dd>
                    "μ_x,j, μ_y,j ~ Laplace(0, b); σ²_x,j ~ Gamma(k_x, 1), σ²_y,j ~ Gamma(k_y, 1); "
                    "xᵢ ~ N(μ_x, diag σ²_x), yᵢ ~ N(μ_y, diag σ²_y), rescaled so the mean norms are the targets. "
                    "Only the diagonal pairs SM(xᵢ, yᵢ) are estimated; A uses the rescaled samples' statistics."
                </dd>
            </dl>
        </section>
    }
}
