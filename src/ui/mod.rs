//! The Leptos page (WebAssembly only). State: one [`ExperimentConfig`] signal, mirrored in the
//! URL query. Effects talk to the outside world only: the URL, the scheduled computation and
//! the canvas drawing.

mod controls;
mod pool;
mod probe;
mod results;

use std::sync::Arc;
use std::time::Duration;

use leptos::prelude::*;

use crate::math::config::{ExperimentConfig, Param, ParamError};
use crate::math::experiment::{ExperimentResult, MseCurve, ScatterSeries};
use crate::math::tasks::Part;
use controls::{EstimatorControls, NumberControl, SeedControl, Slider};
use pool::{Pool, PoolEvent, ProbeRunner};
use probe::ProbePanel;
use results::{Charts, Formulas, ResultsTable};

/// Mounts the app on `<body>`, configured from the page's URL.
pub fn start() {
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        show_panic_banner();
    }));
    mount_to_body(|| view! { <App/> });
}

/// The URL key that makes the page panic on purpose (`?crash=1`), so that the end-to-end
/// test can prove the recovery banner works.
const CRASH_KEY: &str = "crash";

/// After a panic the WebAssembly instance cannot be trusted, so the banner is plain DOM built
/// without Rust state, and "reset to defaults" is a link to the page without a query: it
/// works even though the module has stopped. Text only (no HTML from strings).
fn show_panic_banner() -> Option<()> {
    let document = web_sys::window()?.document()?;
    if document.get_element_by_id("panic-banner").is_some() {
        return Some(());
    }
    let banner = document.create_element("div").ok()?;
    banner.set_id("panic-banner");
    banner.set_class_name("panic-banner");
    banner.set_attribute("role", "alert").ok()?;
    let message = document.create_element("p").ok()?;
    message.set_text_content(Some(
        "The lab hit an internal error and stopped computing. The details are in the browser's \
         console. Your settings are still in the address bar: reload to try again, or reset.",
    ));
    let reset = document.create_element("a").ok()?;
    reset.set_attribute("href", "./").ok()?;
    reset.set_id("panic-reset");
    reset.set_text_content(Some("reset to defaults"));
    banner.append_child(&message).ok()?;
    banner.append_child(&reset).ok()?;
    document.body()?.prepend_with_node_1(&banner).ok()?;
    if let Some(app) = document.query_selector(".app").ok()? {
        app.set_attribute("data-status", "error").ok()?;
    }
    Some(())
}

/// Removes the crash flag from a query; returns whether it was set.
fn take_crash_flag(query: &str) -> (bool, String) {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query.trim_start_matches('?')).unwrap_or_default();
    let crash = pairs.iter().any(|(k, v)| k == CRASH_KEY && v == "1");
    let rest: Vec<_> = pairs.into_iter().filter(|(k, _)| k != CRASH_KEY).collect();
    (crash, serde_urlencoded::to_string(rest).unwrap_or_default())
}

/// What the page is doing; mirrored in the root's `data-status` attribute for tests.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Computing,
    Ready,
    /// The configuration is above the work or memory budget: waiting for the user to confirm.
    Confirm,
    /// The user stopped the computation; the charts show the previous results.
    Cancelled,
    Error(String),
}

impl Status {
    fn as_attr(&self) -> &'static str {
        match self {
            Status::Computing => "computing",
            Status::Ready => "ready",
            Status::Confirm => "confirm",
            Status::Cancelled => "cancelled",
            Status::Error(_) => "error",
        }
    }
}

/// A computed value tagged with the request it answers. Equal when it is the same value of
/// the same request (pointer equality: comparing the contents would cost more than drawing).
#[derive(Debug)]
pub struct Shown<T> {
    pub generation: u64,
    pub value: Arc<T>,
}

impl<T> Clone for Shown<T> {
    fn clone(&self) -> Self {
        Self {
            generation: self.generation,
            value: self.value.clone(),
        }
    }
}

impl<T> PartialEq for Shown<T> {
    fn eq(&self, other: &Self) -> bool {
        self.generation == other.generation && Arc::ptr_eq(&self.value, &other.value)
    }
}

/// Figure 1's data with the configuration it was computed for.
#[derive(Debug)]
pub struct ScatterView {
    pub config: ExperimentConfig,
    pub series: Vec<ScatterSeries>,
}

/// Above this many multiply-adds the page asks before starting (about two seconds on two
/// cores at the measured speed).
pub const BUDGET_WORK: f64 = 1e10;
/// Above this many bytes of working memory (all workers together) the page asks too.
pub const BUDGET_BYTES: f64 = 512e6;
/// Progress and the cancel button appear when a job runs longer than this. Until then the
/// finished parts are held and drawn together when the job ends: a quick recompute redraws
/// once, without a moment where the scatter is new and the boxplots old, and on a two-core
/// machine the drawing does not take the CPU from the workers while they compute (the
/// benchmark's compute time fell by about a sixth). Longer jobs show each part as it lands.
const PROGRESS_DELAY: Duration = Duration::from_millis(200);

/// Parts of the current request that are finished but not yet shown (see [`PROGRESS_DELAY`]).
#[derive(Default)]
struct HeldParts {
    scatter: Option<Shown<ScatterView>>,
    summaries: Option<Shown<ExperimentResult>>,
    curves: Option<Shown<Vec<MseCurve>>>,
}

/// Which charts of the current request are drawn, and whether all its tasks are in.
#[derive(Clone, Copy, Debug, Default)]
struct DrawState {
    generation: u64,
    drawn: [bool; 3],
    finished: bool,
}

fn part_index(part: Part) -> usize {
    match part {
        Part::Scatter => 0,
        Part::Boxplots => 1,
        Part::Curves => 2,
    }
}

/// The query string of the page's URL, without the `?`.
fn url_query() -> String {
    web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default()
}

/// Replaces the URL's query so that the address bar always reproduces the view (no history
/// entry per slider step).
fn replace_url_query(query: &str) {
    if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
        let url = format!("?{query}");
        if url_query() != url {
            let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url));
        }
    }
}

/// The whole lab.
///
/// - `initial`: the configuration to start from; `None` reads it from the URL query (bad
///   values there fall back to defaults and are listed in a notice).
#[component]
pub fn App(#[prop(optional)] initial: Option<ExperimentConfig>) -> impl IntoView {
    let (crash, query) = take_crash_flag(&url_query());
    let (initial, notices): (ExperimentConfig, Vec<ParamError>) = match initial {
        Some(config) => (config, Vec::new()),
        None => ExperimentConfig::from_query(&query),
    };
    if crash {
        Effect::new(|_| {
            panic!("deliberate panic requested by ?crash=1 (tests the recovery banner)")
        });
    }
    let (config, set_config) = signal(initial);
    let (status, set_status) = signal(Status::Computing);
    let (progress, set_progress) = signal(None::<f64>);
    let (scatter, set_scatter) = signal(None::<Shown<ScatterView>>);
    let (summaries, set_summaries) = signal(None::<Shown<ExperimentResult>>);
    let (curves, set_curves) = signal(None::<Shown<Vec<MseCurve>>>);
    let (elapsed, set_elapsed) = signal(None::<(u64, f64)>);
    // The request being computed and the configuration it asks for.
    let current = StoredValue::new_local((0u64, Arc::new(ExperimentConfig::default())));
    let draw_state = StoredValue::new_local(DrawState::default());
    let confirmed = StoredValue::new_local(None::<ExperimentConfig>);

    let mark_ready_if_done = move || {
        let state = draw_state.get_value();
        if state.generation == current.with_value(|c| c.0)
            && state.finished
            && state.drawn.iter().all(|d| *d)
        {
            set_progress.set(None);
            set_status.set(Status::Ready);
        }
    };

    // Whether finished parts are shown as they land (once the job is older than
    // PROGRESS_DELAY) or held until it ends.
    let progressive = StoredValue::new_local(false);
    let held = StoredValue::new_local(HeldParts::default());
    let show_held = move || {
        let parts = std::mem::take(&mut *held.write_value());
        let generation = current.with_value(|c| c.0);
        if let Some(shown) = parts.scatter.filter(|s| s.generation == generation) {
            set_scatter.set(Some(shown));
        }
        if let Some(shown) = parts.summaries.filter(|s| s.generation == generation) {
            set_summaries.set(Some(shown));
        }
        if let Some(shown) = parts.curves.filter(|s| s.generation == generation) {
            set_curves.set(Some(shown));
        }
    };

    // Every finished part goes into `held`; a progressive job shows it at once.
    let show_if_progressive = move || {
        if progressive.get_value() {
            show_held();
        }
    };

    let pool = StoredValue::new_local(Pool::new(move |event| {
        let (generation, request) = current.get_value();
        match event {
            // The bar appears only once a job runs longer than PROGRESS_DELAY.
            PoolEvent::Progress {
                generation: g,
                fraction,
            } if g == generation && progress.get_untracked().is_some() => {
                set_progress.set(Some(fraction));
            }
            PoolEvent::Scatter {
                generation: g,
                scatter,
            } if g == generation => {
                let shown = Shown {
                    generation: g,
                    value: Arc::new(ScatterView {
                        config: (*request).clone(),
                        series: (*scatter).clone(),
                    }),
                };
                held.update_value(|h| h.scatter = Some(shown));
                show_if_progressive();
            }
            PoolEvent::Summaries {
                generation: g,
                summaries,
            } if g == generation => {
                // The table and the boxplots need the scatter too (its A, its clamping),
                // shown or still held.
                let this_request = |s: &Option<Shown<ScatterView>>| {
                    s.as_ref()
                        .filter(|s| s.generation == g)
                        .map(|s| s.value.series.clone())
                };
                let scatter = held
                    .with_value(|h| this_request(&h.scatter))
                    .or_else(|| scatter.with_untracked(this_request));
                if let Some(scatter) = scatter {
                    let shown = Shown {
                        generation: g,
                        value: Arc::new(ExperimentResult {
                            config: (*request).clone(),
                            scatter,
                            summaries: (*summaries).clone(),
                        }),
                    };
                    held.update_value(|h| h.summaries = Some(shown));
                    show_if_progressive();
                }
            }
            PoolEvent::Curves {
                generation: g,
                curves,
            } if g == generation => {
                let shown = Shown {
                    generation: g,
                    value: curves,
                };
                held.update_value(|h| h.curves = Some(shown));
                show_if_progressive();
            }
            PoolEvent::Finished {
                generation: g,
                elapsed_ms,
            } if g == generation => {
                show_held();
                set_elapsed.set(Some((g, elapsed_ms)));
                draw_state.update_value(|s| {
                    if s.generation == g {
                        s.finished = true;
                    }
                });
                mark_ready_if_done();
            }
            PoolEvent::Failed {
                generation: g,
                message,
            } if g == generation => {
                show_held();
                set_status.set(Status::Error(message));
            }
            _ => {}
        }
    }));
    on_cleanup(move || pool.with_value(Pool::cancel));
    provide_context(ProbeRunner(pool));

    // Each configuration starts one job in the workers, superseding the one in flight, unless
    // it is above the budget and not yet confirmed.
    Effect::new(move |_| {
        let request = config.get();
        // Bad URL values were replaced by defaults (and listed in the notice): the address
        // bar shows the configuration actually computed.
        replace_url_query(&request.to_query());
        let ticket = current.with_value(|c| c.0) + 1;
        current.set_value((ticket, Arc::new(request.clone())));
        draw_state.set_value(DrawState {
            generation: ticket,
            ..DrawState::default()
        });
        let workers = pool.with_value(|p| p.borrow().workers()).max(1);
        let over_budget =
            request.work() > BUDGET_WORK || request.memory_bytes(workers) > BUDGET_BYTES;
        if over_budget && confirmed.get_value().as_ref() != Some(&request) {
            // Pause, not cancel: replacing the workers on every value while a slider is
            // dragged across the budget would churn workers for nothing.
            pool.with_value(Pool::pause);
            set_progress.set(None);
            set_status.set(Status::Confirm);
            return;
        }
        set_status.set(Status::Computing);
        progressive.set_value(false);
        held.set_value(HeldParts::default());
        pool.with_value(|p| Pool::submit(p, ticket, &request));
        set_timeout(
            move || {
                if current.with_value(|c| c.0) == ticket
                    && status.get_untracked() == Status::Computing
                {
                    progressive.set_value(true);
                    show_held();
                    set_progress.set(Some(0.0));
                }
            },
            PROGRESS_DELAY,
        );
    });

    // Called by the charts once a part of the latest result is drawn.
    let on_drawn = Callback::new(move |outcome: (u64, Part, Result<(), String>)| {
        let (drawn, part, result) = outcome;
        if drawn != current.with_value(|c| c.0) {
            return;
        }
        if let Err(message) = result {
            set_status.set(Status::Error(message));
            return;
        }
        draw_state.update_value(|s| {
            if s.generation == drawn {
                s.drawn[part_index(part)] = true;
            }
        });
        mark_ready_if_done();
    });

    let run_anyway = move |_| {
        confirmed.set_value(Some(config.get_untracked()));
        set_config.update(|_| {});
    };
    // Back to the configuration whose results are on screen.
    let keep_previous = move |_| {
        let previous = summaries.with_untracked(|s| s.as_ref().map(|s| s.value.config.clone()));
        set_config.set(previous.unwrap_or_default());
    };
    let cancel = move |_| {
        pool.with_value(Pool::cancel);
        set_progress.set(None);
        set_status.set(Status::Cancelled);
    };

    let result = Memo::new(move |_| summaries.get().map(|s| s.value));
    let status_line = move || match status.get() {
        Status::Computing => "computing…".to_string(),
        Status::Ready => elapsed
            .get()
            .map(|(_, ms)| {
                let workers = pool.with_value(|p| p.borrow().workers());
                if workers == 0 {
                    format!("recomputed in {ms:.0} ms on the page")
                } else {
                    format!("recomputed in {ms:.0} ms by {workers} workers")
                }
            })
            .unwrap_or_default(),
        Status::Confirm => "waiting for your go-ahead".to_string(),
        Status::Cancelled => "cancelled: the charts still show the previous settings".to_string(),
        Status::Error(message) => format!("error: {message}"),
    };
    let work = move || config.with(|c| format!("{:.2e} multiply-adds per recompute", c.work()));
    let confirm_text = move || {
        config.with(|c| {
            let workers = pool.with_value(|p| p.borrow().workers()).max(1);
            let throughput = pool.with_value(|p| p.borrow().throughput()).unwrap_or(4e6);
            format!(
                "These settings need {:.1e} multiply-adds and about {:.0} MB of memory: roughly {:.0} s on this machine. Run them?",
                c.work(),
                c.memory_bytes(workers) / 1e6,
                c.work() / throughput / 1e3
            )
        })
    };

    view! {
        <main
            class="app"
            data-status=move || status.with(|s| s.as_attr())
            data-compute-ms=move || elapsed.get().map(|(_, ms)| format!("{ms:.1}"))
            data-generation=move || elapsed.get().map(|(generation, _)| generation)
        >
            <header>
                <h1>"softmax-kernel-lab"</h1>
                <p class="lede">
                    "How well do random features estimate the softmax kernel SM(x, y) = exp(x·y)? "
                    "This page reproduces the experiment of "
                    <em>"Complex Exponential Features"</em>
                    " (section 4, Figures 1–3) live in WebAssembly: change any control and every chart is recomputed."
                </p>
            </header>
            {(!notices.is_empty()).then(|| view! {
                <section class="notice" role="status">
                    <strong>"Some URL parameters were not used:"</strong>
                    <ul>
                        {notices.iter().map(|n| view! { <li><code>{n.key.clone()}</code>": "{n.message.clone()}</li> }).collect_view()}
                    </ul>
                </section>
            })}
            <div class="layout">
                <aside class="controls">
                    <h2>"Estimators"</h2>
                    <EstimatorControls config set_config/>
                    <NumberControl param=Param::M config set_config slider=Slider { min: 16.0, max: 4096.0, step: 16.0 }/>
                    <h2>"Data"</h2>
                    <NumberControl param=Param::D config set_config slider=Slider { min: 2.0, max: 200.0, step: 1.0 }/>
                    <NumberControl param=Param::N config set_config/>
                    <NumberControl param=Param::Datasets config set_config/>
                    <NumberControl param=Param::Pairs config set_config/>
                    <SeedControl config set_config/>
                    <NumberControl param=Param::MeanScale config set_config/>
                    <NumberControl param=Param::XShape config set_config/>
                    <NumberControl param=Param::YShape config set_config/>
                    <NumberControl param=Param::XNorm config set_config slider=Slider { min: 0.1, max: 10.0, step: 0.1 }/>
                    <NumberControl param=Param::YNorm config set_config slider=Slider { min: 0.1, max: 10.0, step: 0.1 }/>
                    <p class="work">{work}</p>
                </aside>
                <section class="results">
                    <p class="status" aria-live="polite">
                        <span class=move || format!("dot {}", status.with(|s| s.as_attr()))></span>
                        {status_line}
                        {move || progress.get().map(|fraction| view! {
                            <progress class="progress" max="1" value=fraction.to_string()></progress>
                            <button class="cancel" type="button" on:click=cancel>"Cancel"</button>
                        })}
                    </p>
                    {move || (status.get() == Status::Confirm).then(|| view! {
                        <div class="confirm-run" role="alertdialog" aria-label="large computation">
                            <p>{confirm_text}</p>
                            <button class="run-anyway" type="button" on:click=run_anyway>"Run it"</button>
                            <button class="keep-previous" type="button" on:click=keep_previous>"Go back to the previous settings"</button>
                        </div>
                    })}
                    <Charts
                        scatter
                        summaries
                        curves
                        on_drawn
                        probe=Signal::from(Memo::new(move |_| config.with(|c| c.probe)))
                        on_pick=Callback::new(move |index: usize| {
                            set_config.update(|c| {
                                let _ = c.set(Param::Probe, &index.to_string());
                            })
                        })
                    />
                    <ResultsTable result/>
                    <ProbePanel config set_config result/>
                    <Formulas/>
                </section>
            </div>
        </main>
    }
}
