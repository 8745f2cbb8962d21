//! The attention view: softmax attention against every linear approximation, on synthetic data
//! or a real head of all-MiniLM-L6-v2. Its parts are computed in the worker pool
//! ([`AttentionRunner`]), each shown as it arrives; a part's newer request waits for the one in
//! flight and replaces any older waiting one, so dragging a slider never queues stale work.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use leptos::ev;
use leptos::html::Canvas;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use crate::charts::{
    Distribution, ErrorBarSeries, HeatScale, Series, describe, draw_distributions, draw_heatmap,
    draw_xy, draw_xy_with_errors,
};
use crate::lab::attention::report::{
    AttentionOutput, AttentionPart, AttentionRequest, BiasVarianceReport, BudgetReport, HeadsTable,
    MainReport, TABLE_DRAWS, TemperatureReport,
};
use crate::lab::config::{ATTENTION_ASK_WORK, ExperimentConfig, HeadSource, Param};
use crate::numerics::attention::heads::HEADS_ASSET_PATH;
use crate::numerics::attention::method::MethodId;
use crate::numerics::attention::tensorised::tensorised_example;
use crate::numerics::estimators::Family;
use crate::numerics::stats::order_by_key;

use super::controls::{NumberControl, SeedControl, Slider, commit};
use super::export::PngButton;
use super::math::Math;
use super::pool::AttentionRunner;
use crate::lab::formulas;

/// Where the real heads stand.
#[derive(Clone, Debug, PartialEq)]
enum HeadsState {
    /// Not asked for yet (synthetic data).
    NotLoaded,
    Loading,
    Ready(Rc<Vec<u8>>),
    Failed(String),
}

/// The latest outcome of each part (`None`: not computed yet), and how long the last main
/// part took from request to answer.
#[derive(Clone, Copy)]
struct Parts {
    main: RwSignal<Option<Result<MainReport, String>>, LocalStorage>,
    bias: RwSignal<Option<Result<BiasVarianceReport, String>>, LocalStorage>,
    temperature: RwSignal<Option<Result<TemperatureReport, String>>, LocalStorage>,
    budget: RwSignal<Option<Result<BudgetReport, String>>, LocalStorage>,
    table: RwSignal<Option<Result<HeadsTable, String>>, LocalStorage>,
    /// Parts in flight.
    busy: RwSignal<usize>,
    main_ms: RwSignal<Option<f64>>,
    /// Answers of the main part so far (the benchmark waits for the next one).
    main_answers: RwSignal<u64>,
}

impl Parts {
    fn new() -> Self {
        Self {
            main: RwSignal::new_local(None),
            bias: RwSignal::new_local(None),
            temperature: RwSignal::new_local(None),
            budget: RwSignal::new_local(None),
            table: RwSignal::new_local(None),
            busy: RwSignal::new(0),
            main_ms: RwSignal::new(None),
            main_answers: RwSignal::new(0),
        }
    }

    /// Stores an answer in its part's signal.
    fn store(&self, part: AttentionPart, answer: Result<AttentionOutput, String>) {
        fn pick<T>(
            answer: Result<AttentionOutput, String>,
            f: impl FnOnce(AttentionOutput) -> Option<T>,
        ) -> Result<T, String> {
            answer.and_then(|o| f(o).ok_or_else(|| "unexpected answer".to_string()))
        }
        match part {
            AttentionPart::Main => self.main.set(Some(pick(answer, |o| match o {
                AttentionOutput::Main(r) => Some(r),
                _ => None,
            }))),
            AttentionPart::BiasVariance => self.bias.set(Some(pick(answer, |o| match o {
                AttentionOutput::BiasVariance(r) => Some(r),
                _ => None,
            }))),
            AttentionPart::Temperature => self.temperature.set(Some(pick(answer, |o| match o {
                AttentionOutput::Temperature(r) => Some(r),
                _ => None,
            }))),
            AttentionPart::Budget => self.budget.set(Some(pick(answer, |o| match o {
                AttentionOutput::Budget(r) => Some(r),
                _ => None,
            }))),
            AttentionPart::HeadsTable => self.table.set(Some(pick(answer, |o| match o {
                AttentionOutput::HeadsTable(r) => Some(r),
                _ => None,
            }))),
        }
    }
}

/// One part's queue: at most one request in flight and one waiting (the newest).
#[derive(Default)]
struct PartQueue {
    in_flight: bool,
    waiting: Option<AttentionRequest>,
    /// What the last request sent computes (the configuration without what only the display
    /// reads), so an unchanged part is not recomputed.
    last_key: Option<String>,
}

/// What a part's numbers depend on: for the real-head table only m, the seed and the
/// estimators' parameters; for the others everything but the heatmaps' method.
fn part_key(part: AttentionPart, config: &ExperimentConfig) -> String {
    let mut c = config.clone();
    c.attention.focus = MethodId::first();
    c.probe = None;
    if part == AttentionPart::HeadsTable {
        return format!(
            "{} {} {} {} {:?}",
            c.attention.features, c.seed, c.orthogonal, c.theta, c.complex_a
        );
    }
    c.to_query()
}

fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0)
}

/// Sends `request` for `part`, or leaves it waiting behind the one in flight.
fn submit(
    runner: AttentionRunner,
    queues: Rc<RefCell<HashMap<AttentionPart, PartQueue>>>,
    parts: Parts,
    request: AttentionRequest,
) {
    let part = request.part;
    {
        let mut all = queues.borrow_mut();
        let queue = all.entry(part).or_default();
        if queue.in_flight {
            queue.waiting = Some(request);
            return;
        }
        queue.in_flight = true;
    }
    parts.busy.update(|n| *n += 1);
    let started = now_ms();
    let queues_after = queues.clone();
    runner.run(
        request,
        Box::new(move |answer| {
            parts.busy.update(|n| *n = n.saturating_sub(1));
            if part == AttentionPart::Main {
                parts.main_ms.set(Some(now_ms() - started));
                parts.main_answers.update(|n| *n += 1);
            }
            parts.store(part, answer);
            let next = {
                let mut all = queues_after.borrow_mut();
                let queue = all.entry(part).or_default();
                queue.in_flight = false;
                queue.waiting.take()
            };
            if let Some(next) = next {
                submit(runner, queues_after, parts, next);
            }
        }),
    );
}

/// Fetches the real heads' asset (served beside the page, never inside the wasm).
async fn fetch_heads() -> Result<Vec<u8>, String> {
    use wasm_bindgen_futures::JsFuture;
    let window = web_sys::window().ok_or("no window")?;
    let response = JsFuture::from(window.fetch_with_str(HEADS_ASSET_PATH))
        .await
        .map_err(|_| format!("cannot fetch {HEADS_ASSET_PATH}"))?;
    let response: web_sys::Response = response
        .dyn_into()
        .map_err(|_| "the fetch did not give a response".to_string())?;
    if !response.ok() {
        return Err(format!(
            "{HEADS_ASSET_PATH}: HTTP status {}",
            response.status()
        ));
    }
    let buffer = JsFuture::from(
        response
            .array_buffer()
            .map_err(|_| "cannot read the response".to_string())?,
    )
    .await
    .map_err(|_| "cannot read the response".to_string())?;
    Ok(js_sys::Uint8Array::new(&buffer).to_vec())
}

/// The attention view: its controls beside its charts.
///
/// - `config`, `set_config`: the one configuration (this view reads and writes its
///   `attention` settings, the data parameters and the seed).
#[component]
pub fn AttentionView(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
) -> impl IntoView {
    let runner = use_context::<AttentionRunner>();
    let parts = Parts::new();
    let heads = RwSignal::new_local(HeadsState::NotLoaded);
    let queues: Rc<RefCell<HashMap<AttentionPart, PartQueue>>> = Rc::default();
    let queues = StoredValue::new_local(queues);
    // A configuration above the ask-first budget waits for a click; this is the last one
    // confirmed (its query).
    let confirmed = RwSignal::new(None::<String>);
    let large = Memo::new(move |_| {
        config.with(|c| {
            let work = c.attention.work(c.d);
            (work > ATTENTION_ASK_WORK && confirmed.get().as_deref() != Some(c.to_query().as_str()))
                .then_some(work)
        })
    });

    // Load the real heads when they are chosen (once).
    Effect::new(move |_| {
        let wanted = config.with(|c| c.attention.source == HeadSource::Minilm);
        if wanted && heads.get_untracked() == HeadsState::NotLoaded {
            heads.set(HeadsState::Loading);
            leptos::task::spawn_local(async move {
                heads.set(match fetch_heads().await {
                    Ok(bytes) => HeadsState::Ready(Rc::new(bytes)),
                    Err(message) => HeadsState::Failed(message),
                });
            });
        }
    });

    // Every part follows the configuration (a part whose inputs did not change is kept).
    Effect::new(move |_| {
        let config = config.get();
        if large.get().is_some() {
            return;
        }
        let bytes = match (config.attention.source, heads.get()) {
            (HeadSource::Synthetic, _) => None,
            (HeadSource::Minilm, HeadsState::Ready(bytes)) => Some(bytes),
            // Waiting for the asset (or it failed: the view says so).
            _ => return,
        };
        let Some(runner) = runner else {
            return;
        };
        let queues = queues.get_value();
        for part in AttentionPart::ALL {
            if !part.applies(&config) {
                continue;
            }
            let key = part_key(part, &config);
            {
                let mut all = queues.borrow_mut();
                let queue = all.entry(part).or_default();
                if queue.last_key.as_deref() == Some(key.as_str()) {
                    continue;
                }
                queue.last_key = Some(key);
            }
            let request = AttentionRequest {
                config: config.clone(),
                part,
                heads: bytes.as_ref().map(|b| b.as_ref().clone()),
            };
            submit(runner, queues.clone(), parts, request);
        }
    });

    let status = move || {
        if let HeadsState::Failed(message) = heads.get() {
            return format!("the real heads could not be loaded: {message}");
        }
        if heads.get() == HeadsState::Loading {
            return "loading the real heads (860 KB)…".to_string();
        }
        match (parts.busy.get(), parts.main_ms.get()) {
            (0, Some(ms)) => format!("attention recomputed; main part in {ms:.0} ms"),
            (0, None) => String::new(),
            (n, _) => format!("computing… ({n} parts in flight)"),
        }
    };
    let status_attr = move || {
        if matches!(heads.get(), HeadsState::Failed(_)) {
            "error"
        } else if parts.busy.get() > 0 || heads.get() == HeadsState::Loading {
            "computing"
        } else if parts.main.with(|m| matches!(m, Some(Err(_)))) {
            "error"
        } else if parts.main.with(Option::is_some) {
            "ready"
        } else {
            "computing"
        }
    };

    view! {
        <div
            class="layout attention-view"
            data-attention-status=status_attr
            data-attention-ms=move || parts.main_ms.get().map(|ms| format!("{ms:.1}"))
            data-attention-answers=move || parts.main_answers.get()
        >
            <aside class="controls">
                <AttentionControls config set_config/>
            </aside>
            <section class="results">
                <p class="status" aria-live="polite">
                    <span class=move || format!("dot {}", status_attr())></span>
                    {status}
                </p>
                {move || large.get().map(|work| view! {
                    <div class="confirm-run" role="alertdialog" aria-label="large computation">
                        <p>{format!("These settings need {work:.1e} multiply-adds: several seconds of the workers. Run them?")}</p>
                        <button
                            class="run-anyway"
                            type="button"
                            on:click=move |_| confirmed.set(Some(config.with_untracked(ExperimentConfig::to_query)))
                        >"Run it"</button>
                    </div>
                })}
                <MethodTable main=parts.main/>
                <Heatmaps config main=parts.main/>
                <RowErrors main=parts.main/>
                <BiasVarianceChart bias=parts.bias/>
                <TemperatureCharts temperature=parts.temperature/>
                <SingularValues main=parts.main/>
                <BudgetChart budget=parts.budget/>
                <HeadsTableView config table=parts.table/>
                <Tensorised/>
                <AttentionFormulas/>
            </section>
        </div>
    }
}

/// The view's controls: data, methods and their sizes.
#[component]
fn AttentionControls(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
) -> impl IntoView {
    let (error, set_error) = signal(None::<String>);
    let synthetic = move || config.with(|c| c.attention.source == HeadSource::Synthetic);
    let set_source = move |ev: ev::Event| {
        let value = event_target_value(&ev);
        set_error.set(commit(config, set_config, Param::Source, &value).map(|e| e.to_string()));
    };
    let toggle = move |method: MethodId, on: bool| {
        let mut chosen = config.with_untracked(|c| c.attention.methods.clone());
        chosen.retain(|m| *m != method);
        if on {
            chosen.push(method);
        }
        let list: Vec<&str> = chosen.iter().map(|m| m.id()).collect();
        set_error.set(
            commit(config, set_config, Param::Methods, &list.join(",")).map(|e| e.to_string()),
        );
    };
    let method_box = move |method: MethodId| {
        let checked = move || config.with(|c| c.attention.methods.contains(&method));
        let [r, g, b] = method.colour();
        view! {
            <label class="check" title=format!("{} ({})", method.formula(), method.id())>
                <input
                    type="checkbox"
                    name=format!("method-{}", method.id())
                    data-method=method.id()
                    prop:checked=checked
                    on:change=move |ev| toggle(method, event_target_checked(&ev))
                />
                <span class="swatch" style=format!("background:rgb({r},{g},{b})")></span>
                <span>{method.label()} {method.is_quadratic().then_some(" (O(L²))")}</span>
            </label>
        }
    };
    let kernel_groups = Family::ALL
        .into_iter()
        .map(|family| {
            let boxes = MethodId::all()
                .filter(|m| m.estimator().is_some_and(|e| e.info().family() == family))
                .map(method_box)
                .collect_view();
            view! { <fieldset class="group"><legend>{family.label()}</legend>{boxes}</fieldset> }
        })
        .collect_view();
    let others = MethodId::all()
        .filter(|m| m.estimator().is_none())
        .map(method_box)
        .collect_view();
    let set_focus = move |ev: ev::Event| {
        let value = event_target_value(&ev);
        set_error.set(commit(config, set_config, Param::Focus, &value).map(|e| e.to_string()));
    };
    view! {
        <h2>"Data"</h2>
        <label class="field">
            <span>"queries, keys, values"</span>
            <select name="src" on:change=set_source prop:value=move || config.with(|c| c.get(Param::Source))>
                <option value="synthetic">"synthetic (the kernel view's distributions)"</option>
                <option value="minilm">"real heads: all-MiniLM-L6-v2"</option>
            </select>
        </label>
        <Show
            when=synthetic
            fallback=move || view! {
                <NumberControl param=Param::Passage config set_config slider=Slider { min: 0.0, max: 1.0, step: 1.0 }/>
                <NumberControl param=Param::Layer config set_config slider=Slider { min: 0.0, max: 5.0, step: 1.0 }/>
                <NumberControl param=Param::Head config set_config slider=Slider { min: 0.0, max: 11.0, step: 1.0 }/>
            }
        >
            <NumberControl param=Param::Len config set_config slider=Slider { min: 16.0, max: 1024.0, step: 16.0 }/>
            <NumberControl param=Param::D config set_config slider=Slider { min: 2.0, max: 128.0, step: 1.0 }/>
            <NumberControl param=Param::ValueDim config set_config/>
            <NumberControl param=Param::XNorm config set_config slider=Slider { min: 0.1, max: 10.0, step: 0.1 }/>
            <NumberControl param=Param::YNorm config set_config slider=Slider { min: 0.1, max: 10.0, step: 0.1 }/>
            <NumberControl param=Param::MeanScale config set_config/>
        </Show>
        <SeedControl config set_config/>
        <h2>"Methods"</h2>
        <NumberControl param=Param::Features config set_config slider=Slider { min: 1.0, max: 1024.0, step: 1.0 }/>
        {kernel_groups}
        <fieldset class="group"><legend>"attention level (seeds 001, 003, 004)"</legend>{others}</fieldset>
        <NumberControl param=Param::Degree config set_config slider=Slider { min: 1.0, max: 6.0, step: 1.0 }/>
        <NumberControl param=Param::Draws config set_config/>
        <NumberControl param=Param::RaSamples config set_config/>
        <label class="field">
            <span>"method in the heatmaps"</span>
            <select name="focus" on:change=set_focus prop:value=move || config.with(|c| c.get(Param::Focus))>
                {move || config.with(|c| c.attention.methods.iter().map(|m| view! {
                    <option value=m.id()>{m.label()}</option>
                }).collect_view())}
            </select>
        </label>
        {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        <p class="work">{move || config.with(|c| format!("{:.2e} multiply-adds per attention recompute", c.attention.work(c.d)))}</p>
    }
}

/// `method value` for every method of the main part, for a chart's text alternative.
fn summary(
    report: &MainReport,
    value: impl Fn(&crate::lab::attention::report::MethodReport) -> f64,
) -> String {
    report
        .methods
        .iter()
        .map(|m| format!("{} {}", m.method.id(), sci(value(m))))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The mean of `values`, NaN when empty (shown as "–").
fn mean_of(values: &[f64]) -> f64 {
    if values.is_empty() {
        f64::NAN
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

fn css_colour(method: MethodId) -> String {
    let [r, g, b] = method.colour();
    format!("rgb({r},{g},{b})")
}

fn sci(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3e}")
    } else {
        "–".to_string()
    }
}

/// Redraw trigger on window resizes (the canvases follow their CSS size).
pub(super) fn resize_counter() -> ReadSignal<u32> {
    let (resized, set_resized) = signal(0u32);
    let listener = window_event_listener(ev::resize, move |_| set_resized.update(|n| *n += 1));
    on_cleanup(move || listener.remove());
    resized
}

/// Draws `part`'s report with `draw` whenever it (or anything `draw` reads) changes and when
/// the window is resized; returns the error to show under the chart.
fn draw_when<T: 'static>(
    part: RwSignal<Option<Result<T, String>>, LocalStorage>,
    draw: impl Fn(&T) -> Result<(), String> + 'static,
) -> RwSignal<Option<String>> {
    let error = RwSignal::new(None::<String>);
    let resized = resize_counter();
    Effect::new(move |_| {
        resized.track();
        part.with(|p| {
            if let Some(Ok(report)) = p {
                error.set(draw(report).err());
            }
        });
    });
    error
}

/// One figure of the view: its title, its formula, its charts and tables, and what to notice.
///
/// - `class`: the section's extra class (the tests find figures by it).
/// - `title`, `formula`, `notice`: the heading, the formula line, the line on what to notice.
/// - `children`: the canvases, captions and tables.
#[component]
pub(super) fn Figure(
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
pub(super) fn chart_error(error: RwSignal<Option<String>>) -> impl IntoView {
    move || {
        error
            .get()
            .map(|e| view! { <p class="error" role="alert">{e}</p> })
    }
}

/// The per-method numbers, sorted by mean output error.
#[component]
fn MethodTable(main: RwSignal<Option<Result<MainReport, String>>, LocalStorage>) -> impl IntoView {
    let rows = move || {
        main.with(|m| match m {
            Some(Ok(report)) => {
                let errors: Vec<f64> =
                    report.methods.iter().map(|m| m.mean_output_error()).collect();
                order_by_key(&errors)
                    .into_iter()
                    .filter_map(|i| report.methods.get(i))
                    .map(|m| {
                        view! {
                            <tr data-method=m.method.id()>
                                <td><span class="swatch" style=format!("background:{}", css_colour(m.method))></span>{m.method.label()}</td>
                                <td class="num">{m.feature_size}</td>
                                <td>{m.evaluation.label()}</td>
                                <td class="num mean-error">{sci(m.mean_output_error())}</td>
                                <td class="num">{sci(m.median_tv())}</td>
                                <td class="num bad-rows">{m.bad_rows}</td>
                                <td class="num">{if m.singular_values.is_empty() { "–".to_string() } else { m.rank.to_string() }}</td>
                                <td class="note">{m.note.clone()}</td>
                            </tr>
                        }
                    })
                    .collect_view()
                    .into_any()
            }
            Some(Err(e)) => view! { <tr><td colspan="8" class="error">{e.clone()}</td></tr> }.into_any(),
            None => view! { <tr><td colspan="8">"computing…"</td></tr> }.into_any(),
        })
    };
    let caption = move || {
        main.with(|m| match m {
            Some(Ok(r)) => format!(
                "L = {} tokens, d = {}, dv = {}; mean |o| = {:.3}; rank of P on the first {} tokens: {}",
                r.len, r.d, r.dv, r.mean_output_norm, r.block_len, r.exact_rank
            ),
            _ => String::new(),
        })
    };
    view! {
        <Figure class="attention-table" title="Every method against softmax attention" formula=formulas::ATTENTION_LINEAR_RATIO notice="bad rows are rows whose denominator φ(q_i)·Σψ(k_l) is ≤ 0 or nearly 0 (trigonometric features, odd-degree polynomials); their output is left out, never divided by.">
            <p class="caption">{caption}</p>
            <table class="leaderboard">
                <thead><tr>
                    <th>"method"</th><th>"features D"</th><th>"cost"</th><th>"mean |o − ô|"</th>
                    <th>"median row TV"</th><th>"bad rows"</th><th>"rank of P̂ (block)"</th><th>"fitted"</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </Figure>
    }
}

/// P, P̂ and P̂ − P on the first tokens, for the chosen method.
#[component]
fn Heatmaps(
    config: ReadSignal<ExperimentConfig>,
    main: RwSignal<Option<Result<MainReport, String>>, LocalStorage>,
) -> impl IntoView {
    let exact: NodeRef<Canvas> = NodeRef::new();
    let approx: NodeRef<Canvas> = NodeRef::new();
    let diff: NodeRef<Canvas> = NodeRef::new();
    let focus = Memo::new(move |_| config.with(|c| c.attention.focus));
    let error = draw_when(main, move |report| {
        let focus = focus.get();
        let n = report.block_len;
        let shown = report
            .methods
            .iter()
            .find(|r| r.method == focus)
            .or_else(|| report.methods.first());
        let Some(shown) = shown else { return Ok(()) };
        let difference: Vec<f64> = shown
            .block
            .iter()
            .zip(&report.exact_block)
            .map(|(a, e)| a - e)
            .collect();
        if let Some(c) = exact.get() {
            describe(
                &c,
                &format!(
                    "softmax attention matrix P on the first {n} tokens, rank {}",
                    report.exact_rank
                ),
            );
            draw_heatmap(
                &c,
                "softmax P",
                &report.exact_block,
                n,
                HeatScale::Probability,
            )
            .map_err(|e| e.to_string())?;
        }
        if let Some(c) = approx.get() {
            describe(
                &c,
                &format!(
                    "P̂ of {} on the first {n} tokens, rank {}, mean |o − ô| {}",
                    shown.method.label(),
                    shown.rank,
                    sci(shown.mean_output_error())
                ),
            );
            draw_heatmap(
                &c,
                &format!("P̂: {}", shown.method.label()),
                &shown.block,
                n,
                HeatScale::Probability,
            )
            .map_err(|e| e.to_string())?;
        }
        if let Some(c) = diff.get() {
            describe(
                &c,
                &format!(
                    "P̂ − P for {}, largest |difference| {}",
                    shown.method.label(),
                    sci(difference.iter().fold(0.0f64, |m, d| m.max(d.abs())))
                ),
            );
            draw_heatmap(&c, "P̂ − P", &difference, n, HeatScale::Difference)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    let caption = move || {
        main.with(|m| match m {
            Some(Ok(r)) => format!(
                "The first {} tokens taken as a sequence of their own (rows: queries, columns: keys).",
                r.block_len
            ),
            _ => String::new(),
        })
    };
    view! {
        <Figure class="heatmaps" title="Attention matrices" formula=formulas::ATTENTION_MATRICES notice="positive features keep P̂ ≥ 0 but blur the sharp rows; trigonometric features and odd polynomials put negative weights where P is near 0.">
            <p class="caption">{caption}</p>
            <div class="heatmap-row">
                <canvas node_ref=exact class="chart heatmap" data-chart="heatmap-exact"></canvas>
                <canvas node_ref=approx class="chart heatmap" data-chart="heatmap-approx"></canvas>
                <canvas node_ref=diff class="chart heatmap" data-chart="heatmap-diff"></canvas>
            </div>
            {chart_error(error)}
        </Figure>
    }
}

/// Distributions over rows of the total variation and the output error.
#[component]
fn RowErrors(main: RwSignal<Option<Result<MainReport, String>>, LocalStorage>) -> impl IntoView {
    let tv: NodeRef<Canvas> = NodeRef::new();
    let out: NodeRef<Canvas> = NodeRef::new();
    let error = draw_when(main, move |report| {
        let notes: Vec<String> = report
            .methods
            .iter()
            .map(|r| format!("{} bad rows", r.bad_rows))
            .collect();
        let entries = |values: fn(&crate::lab::attention::report::MethodReport) -> &[f64]| {
            report
                .methods
                .iter()
                .zip(&notes)
                .map(|(r, note)| Distribution {
                    label: r.method.id(),
                    colour: r.method.colour(),
                    values: values(r),
                    note: (r.bad_rows > 0).then_some(note.as_str()),
                })
                .collect::<Vec<_>>()
        };
        if let Some(c) = tv.get() {
            describe(
                &c,
                &format!(
                    "median row total variation per method: {}",
                    summary(report, |m| m.median_tv())
                ),
            );
            draw_distributions(
                &c,
                &format!("row total variation ({} rows)", report.tv_rows.len()),
                "½ Σ_j |P̂_ij − P_ij|",
                &entries(|r| &r.row_tv),
                false,
            )
            .map_err(|e| e.to_string())?;
        }
        if let Some(c) = out.get() {
            describe(
                &c,
                &format!(
                    "mean output error per method: {}",
                    summary(report, |m| m.mean_output_error())
                ),
            );
            draw_distributions(
                &c,
                &format!("output error per row ({} rows)", report.len),
                "|o_i − ô_i|",
                &entries(|r| &r.output_error),
                true,
            )
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    view! {
        <Figure class="row-errors" title="Errors per row" formula=formulas::ATTENTION_ROW_ERRORS notice="a data-chosen A or OPRF narrows the spread of the random maps at the same m; deterministic maps have no spread over draws but a fixed error.">
            <div class="pair">
                <canvas node_ref=tv class="chart" data-chart="row-tv"></canvas>
                <canvas node_ref=out class="chart" data-chart="output-error"></canvas>
            </div>
            {chart_error(error)}
        </Figure>
    }
}

/// Squared bias against variance of ô over R draws, one point per method.
#[component]
fn BiasVarianceChart(
    bias: RwSignal<Option<Result<BiasVarianceReport, String>>, LocalStorage>,
) -> impl IntoView {
    let canvas: NodeRef<Canvas> = NodeRef::new();
    let rows = move || {
        bias.with(|b| match b {
            Some(Ok(report)) => report
                .methods
                .iter()
                .map(|m| {
                    let mean = |v: &[f64]| mean_of(v);
                    view! {
                        <tr data-method=m.method.id()>
                            <td><span class="swatch" style=format!("background:{}", css_colour(m.method))></span>{m.method.label()}</td>
                            <td class="num">{m.draws}</td>
                            <td class="num squared-bias">{sci(mean(&m.squared_bias))}</td>
                            <td class="num variance">{sci(mean(&m.variance))}</td>
                            <td class="num">{m.bad_rows}</td>
                        </tr>
                    }
                })
                .collect_view()
                .into_any(),
            Some(Err(e)) => view! { <tr><td colspan="5" class="error">{e.clone()}</td></tr> }.into_any(),
            None => view! { <tr><td colspan="5">"computing…"</td></tr> }.into_any(),
        })
    };
    let error = draw_when(bias, move |report| {
        let means: Vec<(f64, f64)> = report
            .methods
            .iter()
            .map(|m| (mean_of(&m.variance), mean_of(&m.squared_bias)))
            .collect();
        // Deterministic maps (variance 0) have no place on a log axis: the table lists
        // them. A squared bias ≤ 0 (unbiased within noise) sits at a floor a decade
        // under the smallest positive one.
        let floor = means
            .iter()
            .map(|(_, b)| *b)
            .filter(|b| *b > 0.0)
            .fold(f64::INFINITY, f64::min)
            / 10.0;
        let floor = if floor.is_finite() { floor } else { 1e-6 };
        let points: Vec<[(f64, f64); 1]> = means
            .iter()
            .map(|&(v, b)| [(if v > 0.0 { v } else { f64::NAN }, b.max(floor))])
            .collect();
        let series: Vec<Series> = report
            .methods
            .iter()
            .zip(&points)
            .map(|(m, p)| Series {
                label: m.method.id(),
                colour: m.method.colour(),
                points: p,
                dashed: false,
                markers: true,
                line: false,
            })
            .collect();
        if let Some(c) = canvas.get() {
            describe(
                &c,
                &format!(
                    "squared bias against variance per method: {}",
                    report
                        .methods
                        .iter()
                        .map(|m| format!(
                            "{} bias² {} variance {}",
                            m.method.id(),
                            sci(mean_of(&m.squared_bias)),
                            sci(mean_of(&m.variance))
                        ))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            );
            draw_xy(
                &c,
                "squared bias against variance of ô (mean over rows)",
                "variance over draws",
                "squared bias",
                &series,
                true,
                true,
            )
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    view! {
        <Figure class="bias-variance" title="Bias and variance over repeated draws" formula=formulas::ATTENTION_BIAS_VARIANCE notice="RFA and Performer are ratios of unbiased estimates, so they are biased (seed 003: self-normalised importance sampling); randomized attention's bias² stays at 0 within noise (it is unbiased for o_i), at O(L²) cost. Points at the bottom edge have bias² ≤ 0 within noise; deterministic maps (variance 0) are only in the table.">
            <canvas node_ref=canvas class="chart" data-chart="bias-variance"></canvas>
            {chart_error(error)}
            <table class="small-table">
                <thead><tr><th>"method"</th><th>"draws R"</th><th>"mean bias²"</th><th>"mean variance"</th><th>"rows left out"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </Figure>
    }
}

/// Row entropy and spectral gap against the temperature.
#[component]
fn TemperatureCharts(
    temperature: RwSignal<Option<Result<TemperatureReport, String>>, LocalStorage>,
) -> impl IntoView {
    let entropy: NodeRef<Canvas> = NodeRef::new();
    let gap: NodeRef<Canvas> = NodeRef::new();
    let error = draw_when(temperature, move |report| {
        let points = |values: &[Option<f64>]| -> Vec<(f64, f64)> {
            report
                .temperatures
                .iter()
                .zip(values)
                .filter_map(|(t, v)| v.map(|v| (*t, v)))
                .collect()
        };
        let entropy_points: Vec<Vec<(f64, f64)>> =
            report.curves.iter().map(|c| points(&c.entropy)).collect();
        let gap_points: Vec<Vec<(f64, f64)>> =
            report.curves.iter().map(|c| points(&c.gap)).collect();
        let labels: Vec<String> = report
            .curves
            .iter()
            .map(|c| {
                c.method
                    .map_or("softmax".to_string(), |m| m.id().to_string())
            })
            .collect();
        fn series<'a>(
            report: &'a TemperatureReport,
            pts: &'a [Vec<(f64, f64)>],
            labels: &'a [String],
        ) -> Vec<Series<'a>> {
            report
                .curves
                .iter()
                .zip(pts)
                .zip(labels)
                .map(|((c, p), label)| Series {
                    label: label.as_str(),
                    colour: c.method.map_or([0, 0, 0], MethodId::colour),
                    points: p,
                    dashed: c.method.is_none(),
                    markers: true,
                    line: true,
                })
                .collect()
        }
        if let Some(c) = entropy.get() {
            describe(
                &c,
                &format!(
                    "mean row entropy of softmax from τ = 0.25 to 16: {}",
                    report.curves[0]
                        .entropy
                        .iter()
                        .map(|e| e.map_or("–".to_string(), |e| format!("{e:.2}")))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            draw_xy(
                &c,
                "mean row entropy",
                "temperature τ",
                "entropy (nats)",
                &series(report, &entropy_points, &labels),
                true,
                false,
            )
            .map_err(|e| e.to_string())?;
        }
        if let Some(c) = gap.get() {
            describe(
                &c,
                &format!(
                    "spectral gap of softmax from τ = 0.25 to 16: {}",
                    report.curves[0]
                        .gap
                        .iter()
                        .map(|e| e.map_or("–".to_string(), |e| format!("{e:.3}")))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            draw_xy(
                &c,
                "spectral gap 1 − |λ₂|",
                "temperature τ",
                "gap",
                &series(report, &gap_points, &labels),
                true,
                false,
            )
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    view! {
        <Figure class="temperature" title="Concentration against temperature (seed 001)" formula=formulas::ATTENTION_TEMPERATURE notice="softmax's entropy and gap grow with τ (seed 001's claim); seed 001 says LLN with moment matching follows softmax: see whether it does on this data; signed maps have no entropy where a weight is negative (missing points).">
            <div class="pair">
                <canvas node_ref=entropy class="chart" data-chart="entropy"></canvas>
                <canvas node_ref=gap class="chart" data-chart="spectral-gap"></canvas>
            </div>
            {chart_error(error)}
        </Figure>
    }
}

/// Singular values of P and of each P̂ on the block.
#[component]
fn SingularValues(
    main: RwSignal<Option<Result<MainReport, String>>, LocalStorage>,
) -> impl IntoView {
    let canvas: NodeRef<Canvas> = NodeRef::new();
    let error = draw_when(main, move |report| {
        let indexed = |values: &[f64]| -> Vec<(f64, f64)> {
            values
                .iter()
                .enumerate()
                .map(|(i, s)| ((i + 1) as f64, *s))
                .collect()
        };
        let exact = indexed(&report.exact_singular_values);
        let methods: Vec<Vec<(f64, f64)>> = report
            .methods
            .iter()
            .map(|r| indexed(&r.singular_values))
            .collect();
        let mut series = vec![Series {
            label: "softmax",
            colour: [0, 0, 0],
            points: &exact,
            dashed: true,
            markers: false,
            line: true,
        }];
        series.extend(report.methods.iter().zip(&methods).map(|(r, p)| Series {
            label: r.method.id(),
            colour: r.method.colour(),
            points: p,
            dashed: false,
            markers: false,
            line: true,
        }));
        if let Some(c) = canvas.get() {
            describe(
                &c,
                &format!(
                    "singular values on the first {} tokens; rank of P {}, of P̂: {}",
                    report.block_len,
                    report.exact_rank,
                    report
                        .methods
                        .iter()
                        .map(|m| format!("{} {}", m.method.id(), m.rank))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            draw_xy(
                &c,
                &format!("singular values on the first {} tokens", report.block_len),
                "index k",
                "σ_k",
                &series,
                false,
                true,
            )
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    view! {
        <Figure class="singular" title="Rank (seed 004)" formula=formulas::ATTENTION_RANK notice="elu + 1 and LLN have D = d features, so their singular values drop to rounding beyond index d; the random maps need D well above the block's size to follow softmax's tail.">
            <canvas node_ref=canvas class="chart" data-chart="singular-values"></canvas>
            {chart_error(error)}
        </Figure>
    }
}

/// Output error against the feature budget D.
#[component]
fn BudgetChart(
    budget: RwSignal<Option<Result<BudgetReport, String>>, LocalStorage>,
) -> impl IntoView {
    let canvas: NodeRef<Canvas> = NodeRef::new();
    let error = draw_when(budget, move |report| {
        let points: Vec<Vec<(f64, f64, f64)>> = report
            .curves
            .iter()
            .map(|c| {
                c.points
                    .iter()
                    .map(|&(d, e, se)| (d as f64, e, se))
                    .collect()
            })
            .collect();
        let series: Vec<ErrorBarSeries> = report
            .curves
            .iter()
            .zip(&points)
            .map(|(c, p)| ErrorBarSeries {
                label: c.method.id(),
                colour: c.method.colour(),
                points: p,
            })
            .collect();
        if let Some(c) = canvas.get() {
            describe(
                &c,
                &format!(
                    "mean output error against features D for {}",
                    report
                        .curves
                        .iter()
                        .map(|c| c.method.id())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            draw_xy_with_errors(
                &c,
                &format!(
                    "mean output error against features D ({} tokens)",
                    report.len
                ),
                "features per token D",
                "mean |o_i − ô_i|",
                &series,
                true,
                true,
            )
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    view! {
        <Figure class="budget" title="Error at equal feature budget" formula=formulas::ATTENTION_BUDGET notice="random maps improve like 1/√D; deterministic maps jump with their degree and their size explodes with d (seed 004).">
            <canvas node_ref=canvas class="chart" data-chart="budget"></canvas>
            {chart_error(error)}
        </Figure>
    }
}

/// The real-head table: data-chosen A and OPRF against Performer's PRF at equal m.
#[component]
fn HeadsTableView(
    config: ReadSignal<ExperimentConfig>,
    table: RwSignal<Option<Result<HeadsTable, String>>, LocalStorage>,
) -> impl IntoView {
    let minilm = move || config.with(|c| c.attention.source == HeadSource::Minilm);
    let body = move || {
        table.with(|t| match t {
            Some(Ok(t)) => {
                // Built for each of the two tables (a view is not `Clone` when components are
                // erased, .cargo/config.toml).
                let header = || {
                    t.methods
                        .iter()
                        .map(|m| view! { <th>{m.id()}</th> })
                        .collect_view()
                };
                let wins = t
                    .wins
                    .iter()
                    .zip(&t.methods)
                    .map(|(w, m)| view! { <td class="num" data-method=m.id()>{*w}</td> })
                    .collect_view();
                let ratios = t
                    .median_ratio
                    .iter()
                    .map(|r| view! { <td class="num">{format!("{r:.3}")}</td> })
                    .collect_view();
                let rows = t
                    .rows
                    .iter()
                    .map(|r| {
                        let cells = r
                            .errors
                            .iter()
                            .map(|e| view! { <td class="num">{sci(*e)}</td> })
                            .collect_view();
                        view! { <tr><td>{r.layer}</td><td>{r.head}</td>{cells}</tr> }
                    })
                    .collect_view();
                let csv = t.to_csv();
                let href = format!(
                    "data:text/csv;charset=utf-8,{}",
                    String::from(js_sys::encode_uri_component(&csv))
                );
                let heads = t.rows.len();
                view! {
                    <p class="caption">{format!("m = {} projections for every method, {} draws of ω per head and passage; error: mean over rows of |o_i − ô_i|.", t.features, TABLE_DRAWS)}</p>
                    <table class="leaderboard heads-summary">
                        <thead><tr><th></th><th></th>{header()}</tr></thead>
                        <tbody>
                            <tr class="wins"><td colspan="2">{format!("heads won against prf-pos (of {heads})")}</td>{wins}</tr>
                            <tr><td colspan="2">"median error ratio to prf-pos"</td>{ratios}</tr>
                        </tbody>
                    </table>
                    <a class="download" download="real-heads.csv" href=href>"Download the table as CSV"</a>
                    <details>
                        <summary>"every head"</summary>
                        <table class="small-table">
                            <thead><tr><th>"layer"</th><th>"head"</th>{header()}</tr></thead>
                            <tbody>{rows}</tbody>
                        </table>
                    </details>
                }
                .into_any()
            }
            Some(Err(e)) => view! { <p class="error">{e.clone()}</p> }.into_any(),
            None => view! { <p>"computing every head…"</p> }.into_any(),
        })
    };
    view! {
        <Show when=minilm>
            <section class="figure heads-table">
                <h2>"Every real head: does a data-chosen A or OPRF beat Performer?"</h2>
                <p class="formula">"all 6 layers × 12 heads of all-MiniLM-L6-v2, both passages, q and k scaled by " <Math text=formulas::MODEL_SCALING/> "; same m for every method"</p>
                {body}
            </section>
        </Show>
    }
}

/// Seed 002's tensorised-attention claim, computed.
#[component]
fn Tensorised() -> impl IntoView {
    let example = tensorised_example();
    let holds = example.claim_holds();
    view! {
        <section class="figure tensorised">
            <h2>"The tensorised-attention claim (seed 002), on a worked example"</h2>
            <p class="formula">"Theorem 3.1's proof needs softmax(U A Uᵀ) = U softmax(A) Uᵀ, and eq. 16 writes Attention = Θ ∘ (Q Kᵀ V)."</p>
            <ul class="facts">
                <li>{format!("With U the 4 × 4 Hadamard matrix / 2: max |softmax(UAUᵀ) − U softmax(A) Uᵀ| = {:.4} (0 would be needed).", example.max_abs_difference_similarity)}</li>
                <li>{format!("Θ = X / (QKᵀV) elementwise exists for one V, but reusing it for another V′ misses the true attention by {:.3}; where QKᵀV ≈ {:.4}, Θ reaches {:.1}.", example.error_with_other_values, example.min_abs_denominator, example.max_abs_theta)}</li>
                <li class="verdict">{if holds { "The claim holds on this example." } else { "The claim does not hold: the identity is false and Θ depends on the values, so it is not a normalisation." }}</li>
            </ul>
        </section>
    }
}

/// The attention view's formulas and sources.
#[component]
fn AttentionFormulas() -> impl IntoView {
    let methods = MethodId::all()
        .filter(|m| m.estimator().is_none() || m.id() == "prf-pos" || m.id() == "rff")
        .map(|m| {
            view! {
                <dt data-method=m.id()><span class="swatch" style=format!("background:{}", css_colour(m))></span>{m.label()}" "<code class="param-key">{m.id()}</code></dt>
                <dd><Math text=m.formula() block=true/><span class="source">"Source: "{m.source()}"."</span></dd>
            }
        })
        .collect_view();
    view! {
        <section class="figure formulas">
            <h2>"What is computed"</h2>
            <dl>
                <dt>"Softmax attention"</dt>
                <dd><Math text=formulas::SOFTMAX_ATTENTION block=true/><span>"A model scales q and k by " <Math text=formulas::MODEL_SCALING_D/> " each (real heads: d = 32)."</span></dd>
                {methods}
                <dt>"Every other estimator"</dt>
                <dd>"Its features φ(q), ψ(k) from the kernel view's registry, with A fitted to these queries and keys."</dd>
            </dl>
        </section>
    }
}
