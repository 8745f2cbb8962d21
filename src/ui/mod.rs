//! The Leptos page (WebAssembly only). State: one [`ExperimentConfig`] signal, mirrored in the
//! URL query. Effects talk to the outside world only: the URL, the scheduled computation and
//! the canvas drawing.

mod controls;
mod probe;
mod results;

use std::sync::Arc;
use std::time::Duration;

use leptos::prelude::*;

use crate::math::config::{ExperimentConfig, Param, ParamError};
use crate::math::experiment::{
    CURVE_MS, CURVE_PAIRS, CURVE_REPEATS, ExperimentError, ExperimentResult, MseCurve,
    mse_against_m, run_experiment,
};
use controls::{EstimatorControls, NumberControl, SeedControl, Slider};
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
    Error(String),
}

impl Status {
    fn as_attr(&self) -> &'static str {
        match self {
            Status::Computing => "computing",
            Status::Ready => "ready",
            Status::Error(_) => "error",
        }
    }
}

/// A finished computation, tagged with the request it answers.
#[derive(Clone, Debug)]
pub struct Computed {
    generation: u64,
    result: Arc<ExperimentResult>,
    curves: Arc<Vec<MseCurve>>,
    elapsed_ms: f64,
}

/// Everything the page shows for one configuration: the experiment and the MSE-against-m
/// curves.
fn compute_all(
    config: &ExperimentConfig,
) -> Result<(ExperimentResult, Vec<MseCurve>), ExperimentError> {
    let result = run_experiment(config)?;
    let curves = mse_against_m(config, &CURVE_MS, CURVE_PAIRS, CURVE_REPEATS)?;
    Ok((result, curves))
}

fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0)
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
    let (computed, set_computed) = signal(None::<Computed>);
    let generation = StoredValue::new(0u64);

    // Each configuration schedules one computation after the browser has painted the
    // "computing" state. A newer configuration bumps the generation, so a scheduled run whose
    // configuration is outdated never starts: dragging a slider leaves no backlog.
    Effect::new(move |_| {
        let request = config.get();
        // Bad URL values were replaced by defaults (and listed in the notice): the address
        // bar shows the configuration actually computed.
        replace_url_query(&request.to_query());
        let ticket = generation.get_value() + 1;
        generation.set_value(ticket);
        set_status.set(Status::Computing);
        request_animation_frame(move || {
            set_timeout(
                move || {
                    if generation.get_value() != ticket {
                        return;
                    }
                    let started = now_ms();
                    match compute_all(&request) {
                        Ok((result, curves)) => set_computed.set(Some(Computed {
                            generation: ticket,
                            result: Arc::new(result),
                            curves: Arc::new(curves),
                            elapsed_ms: now_ms() - started,
                        })),
                        Err(error) => set_status.set(Status::Error(error.to_string())),
                    }
                },
                Duration::ZERO,
            )
        });
    });

    // Called by the charts once the latest result is drawn.
    let on_drawn = Callback::new(move |outcome: (u64, Result<(), String>)| {
        let (drawn, result) = outcome;
        if drawn == generation.get_value() {
            set_status.set(match result {
                Ok(()) => Status::Ready,
                Err(message) => Status::Error(message),
            });
        }
    });

    let result = Memo::new(move |_| computed.get().map(|c| c.result));
    let curves = Memo::new(move |_| computed.get().map(|c| c.curves));
    let status_line = move || match status.get() {
        Status::Computing => "computing…".to_string(),
        Status::Ready => computed
            .with(|c| c.as_ref().map(|c| c.elapsed_ms))
            .map(|ms| format!("recomputed in {ms:.0} ms"))
            .unwrap_or_default(),
        Status::Error(message) => format!("error: {message}"),
    };
    let work = move || config.with(|c| format!("{:.2e} multiply-adds per recompute", c.work()));

    view! {
        <main
            class="app"
            data-status=move || status.with(|s| s.as_attr())
            data-compute-ms=move || computed.with(|c| c.as_ref().map(|c| format!("{:.1}", c.elapsed_ms)))
            data-generation=move || computed.with(|c| c.as_ref().map(|c| c.generation))
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
                    </p>
                    <Charts
                        result
                        curves
                        generation=Signal::derive(move || computed.with(|c| c.as_ref().map(|c| c.generation)))
                        on_drawn
                        probe=Signal::derive(move || config.with(|c| c.probe))
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
