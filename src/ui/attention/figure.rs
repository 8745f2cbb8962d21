//! What every figure of the attention view shares: the section with its title, formula and
//! what to notice, the error line under a chart, the box a wide table scrolls in, and the
//! effect that redraws a chart when its part changes or the window is resized (also used by
//! the kernel view's data panel and leaderboard).

use leptos::ev;
use leptos::prelude::*;

use crate::lab::config::ExperimentConfig;
use crate::ui::export::PngButton;
use crate::ui::math::Math;
use crate::ui::paced::paced_effect;

/// Redraw trigger on window resizes (the canvases follow their CSS size).
pub(in crate::ui) fn resize_counter() -> ReadSignal<u32> {
    let (resized, set_resized) = signal(0u32);
    let listener = window_event_listener(ev::resize, move |_| set_resized.update(|n| *n += 1));
    on_cleanup(move || listener.remove());
    resized
}

/// A chart drawn by `draw` (`None`: nothing to draw yet) whenever anything it reads changes
/// and when the window is resized, each chart in a task of its own (`paced_effect`); returns
/// the error to show under the chart.
pub(in crate::ui) fn paced_chart(
    draw: impl Fn() -> Option<Result<(), String>> + 'static,
) -> RwSignal<Option<String>> {
    let error = RwSignal::new(None::<String>);
    let resized = resize_counter();
    paced_effect(move || {
        resized.track();
        if let Some(drawn) = draw() {
            error.set(drawn.err());
        }
    });
    error
}

/// Draws `part`'s report with `draw` whenever it (or anything `draw` reads) changes and when
/// the window is resized ([`paced_chart`]); returns the error to show under the chart.
pub(super) fn draw_when<T: 'static>(
    part: RwSignal<Option<Result<T, String>>, LocalStorage>,
    draw: impl Fn(&T) -> Result<(), String> + 'static,
) -> RwSignal<Option<String>> {
    paced_chart(move || {
        part.with(|p| match p {
            Some(Ok(report)) => Some(draw(report)),
            _ => None,
        })
    })
}

/// One figure of the view: its title, its formula, its charts and tables, and what to notice.
///
/// - `class`: the section's extra class (the tests find figures by it).
/// - `title`, `formula`, `notice`: the heading, the formula line, the line on what to notice.
/// - `children`: the canvases, captions and tables.
#[component]
pub(in crate::ui) fn Figure(
    class: &'static str,
    title: &'static str,
    formula: &'static str,
    notice: &'static str,
    children: Children,
) -> impl IntoView {
    view! {
        <section class=format!("figure {class}")>
            <h2>{title} <PngButton/></h2>
            <p class="formula"><Math text=formula/></p>
            {children()}
            <p class="notice-line">"What to notice: " {notice}</p>
        </section>
    }
}

/// A figure's error line (a chart that could not be drawn says why).
pub(in crate::ui) fn chart_error(error: RwSignal<Option<String>>) -> impl IntoView {
    move || {
        error
            .get()
            .map(|e| view! { <p class="error" role="alert">{e}</p> })
    }
}

/// The box of a wide table: on a narrow screen the table scrolls sideways inside it, never the
/// page. Focusable and named (a region), so that a keyboard can scroll it too (axe's
/// `scrollable-region-focusable`).
///
/// - `label`: what the table holds (the region's accessible name).
/// - `children`: the table.
#[component]
pub(in crate::ui) fn TableScroll(label: &'static str, children: Children) -> impl IntoView {
    view! {
        <div class="table-scroll" tabindex="0" role="region" aria-label=label>
            {children()}
        </div>
    }
}

/// "These settings need … multiply-adds: run them?" while the configuration is above the
/// ask-first budget (the full view and an embedded figure alike).
///
/// - `large`: the work of the configuration waiting for a click, if any.
/// - `confirmed`: set to the configuration's query when the reader clicks "Run it".
#[component]
pub(super) fn ConfirmRun(
    config: ReadSignal<ExperimentConfig>,
    large: Memo<Option<f64>>,
    confirmed: RwSignal<Option<String>>,
) -> impl IntoView {
    move || {
        large.get().map(|work| view! {
            <div class="confirm-run" role="alertdialog" aria-label="large computation">
                <p>{format!("These settings need {work:.1e} multiply-adds: several seconds of the workers. Run them?")}</p>
                <button
                    class="run-anyway"
                    type="button"
                    on:click=move |_| confirmed.set(Some(config.with_untracked(ExperimentConfig::to_query)))
                >"Run it"</button>
            </div>
        })
    }
}
