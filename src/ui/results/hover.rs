//! Hover on the kernel view's charts: the layouts each drawing leaves for it, the tooltip and
//! its ring on the hovered point, and a chart canvas in its panel with its tooltip.

use leptos::ev;
use leptos::html::Canvas;
use leptos::prelude::*;

use crate::chart_geometry::hover::HoverLayout;

/// The hover layouts of the boxplots and the theory charts.
#[derive(Clone, Copy)]
pub(super) struct HoverLayouts {
    pub(super) mse: StoredValue<Option<HoverLayout>>,
    pub(super) rel: StoredValue<Option<HoverLayout>>,
    pub(super) curves: StoredValue<Option<HoverLayout>>,
    pub(super) lemma: StoredValue<Option<HoverLayout>>,
    pub(super) theorem: StoredValue<Option<HoverLayout>>,
    pub(super) sweep: StoredValue<Option<HoverLayout>>,
}

impl HoverLayouts {
    pub(super) fn new() -> Self {
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
pub(super) fn keep_hover<L>(
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
pub(super) struct Tip {
    text: String,
    x: f64,
    y: f64,
    width: f64,
    height: f64,
    marker: Option<(f64, f64)>,
}

impl Tip {
    /// The tip for the pointer at `(x, y)` on `canvas`, saying `text`.
    pub(super) fn at(
        canvas: Option<web_sys::HtmlCanvasElement>,
        text: String,
        x: f64,
        y: f64,
    ) -> Self {
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
pub(super) fn Tooltip(tip: ReadSignal<Option<Tip>>) -> impl IntoView {
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
pub(super) fn HoverChart(
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
