//! The kernel view's figures: Figure 1 (one scatter panel per estimator), Figures 2–3
//! (boxplots) and the theory charts with their formula lines, each part drawn as its data
//! arrives.

use leptos::ev;
use leptos::html::Canvas;
use leptos::prelude::*;

use super::draw::{Canvases, bounded, draw_boxplot_part, draw_highlights, draw_scatter_part};
use super::hover::{HoverChart, HoverLayouts, Tip, Tooltip, keep_hover};
use crate::chart_geometry::hover::HoverLayout;
use crate::chart_geometry::scatter_tooltip;
use crate::charts::{ScatterLayout, describe, draw_mse_curves};
use crate::lab::kernel::experiment::{ExperimentResult, MseCurve};
use crate::lab::kernel::tasks::Part;
use crate::lab::page::formulas;
use crate::lab::page::mode::EmbedFigure;
use crate::numerics::estimators::{DESCRIPTIONS, EstimatorId};
use crate::ui::export::PngButton;
use crate::ui::math::Math;
use crate::ui::{ScatterView, Shown};

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
/// - `only`: a figure embedded alone (`?embed=`): its charts only, without the sections'
///   headings and captions (the frame gives its own); the other parts are still told drawn.
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
    #[prop(optional)] only: Option<EmbedFigure>,
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
                let preview = c
                    .preview_of
                    .map(|whole| {
                        format!(
                            " A preview while the slider moves: the first {} of its {} pairs.",
                            c.n, whole.n
                        )
                    })
                    .unwrap_or_default();
                format!(
                    "Figure 1: one dataset of n = {} pairs (d = {}, m = {}); each dot is one pair, the line is ŜM = SM. Click a dot to probe that pair below.{preview}",
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
    let box_grid = move || {
        view! {
            <div class="box-grid" class:wide=move || summaries.with(|r| r.as_ref().is_some_and(|r| r.value.summaries.len() > 6))>
                <HoverChart canvas=canvases.mse class="chart boxplot" chart="mse" layout=hover.mse/>
                <HoverChart canvas=canvases.rel class="chart boxplot" chart="max-rel-err" layout=hover.rel/>
            </div>
        }
    };
    let curves_chart = move || {
        view! { <HoverChart canvas=canvases.curves class="chart theory-chart" chart="mse-vs-m" layout=hover.curves/> }
    };
    match only {
        None => {}
        Some(EmbedFigure::Scatter) => {
            return view! { <div class="scatter-grid">{panels}</div> }.into_any();
        }
        Some(EmbedFigure::Errors) => return box_grid().into_any(),
        Some(EmbedFigure::MseVsM) => {
            return view! {
                {curves_chart()}
                <p class="formula-line"><Math text=formulas::LEMMA_3_1_HCEXP_MSE/></p>
            }
            .into_any();
        }
        Some(EmbedFigure::Rows | EmbedFigure::Lengths) => return ().into_any(),
    }
    view! {
        <section class="figure">
            <h2>"True against estimated softmax kernel" <PngButton/></h2>
            <div class="scatter-grid">{panels}</div>
            <p class="caption">{scatter_caption}</p>
        </section>
        <section class="figure">
            <h2>"Errors over many random datasets" <PngButton/></h2>
            {box_grid()}
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
                {curves_chart()}
                <div class="explain">
                    <h3>"MSE falls as 1/m"</h3>
                    <p class="formula-line"><Math text=formulas::LEMMA_3_1_HCEXP_MSE block=true/></p>
                    <p>
                        "Lemma 3.1 for HCEXP (the positive form has 1/m and the first power); every other estimator draws its own "
                        "formula (listed under \"What is computed\"), all proportional to 1/m for i.i.d. ω. The line is the formula's "
                        "mean over the first 32 pairs of the scatter dataset; the points are the measured MSE on the same pairs, the "
                        "mean of 4 independent draws of ω with ±1 standard error. Where |z|² is large, the MSE is dominated by draws "
                        "too rare to appear in a few repeats, and the points fall far below the line: the formula is right, the "
                        "sample is not big enough to see it. With a coupling other than i.i.d. (coupling: orthogonal or simplex blocks, "
                        "randomised QMC) the points may lie below the i.i.d. line: that is their advantage."
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
    .into_any()
}
