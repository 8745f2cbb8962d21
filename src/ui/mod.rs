//! The Leptos page (WebAssembly only). State: one [`ExperimentConfig`] signal, mirrored in the
//! URL query. Effects talk to the outside world only: the URL, the scheduled computation and
//! the canvas drawing.

mod address_bar;
mod attention;
mod below;
pub use below::{BelowInputs, BelowLoad, BelowMount, BelowPart, below_linked, mount_below};
mod controls;
mod data;
mod embed;
mod export;
pub use export::{ExportAction, ExportJob, ExportLoad, export_linked, run_export};
mod lazy_attention;
mod lazy_lm;
mod lm;
mod math;
pub use lazy_attention::{
    AttentionLoad, AttentionLoading, AttentionMount, attention_linked, mount_attention,
};
pub use lazy_lm::{LmLoad, LmLoading, LmMount, lm_linked, mount_lm};
pub use math::load_view_formulas;
mod on_demand;
mod paced;
mod pool;
pub use pool::{PageRunner, compute_on_page_without_workers};
mod probe;
mod results;
mod tour;
pub use tour::{TourLoad, TourMount, TourStepInputs, mount_tour_step, tour_linked};

use std::time::Duration;

use leptos::prelude::*;

use std::cell::RefCell;
use std::rc::Rc;

use crate::lab::config::{ExperimentConfig, Param, ParamError, View};
use crate::lab::kernel::experiment::{ExperimentResult, MseCurve};
use crate::lab::kernel::tasks::Part;
use crate::lab::page::job::{Job, JobCommand, JobInput, PROGRESS_DELAY_MS};
use crate::lab::page::mode::PageMode;
use crate::lab::page::tour::{STEP_COUNT, step_config};
use below::{BelowLoader, LazyBelow};
use controls::{EstimatorControls, NumberControl, SeedControl, Slider};
use export::{ExportActions, ExportBar, Presets};
use lazy_attention::{AttentionLoader, LazyAttentionView};
use pool::{
    AttentionRunner, DataViewRunner, ExportRunner, ModelPool, Pool, ProbeRunner, WorkerKind,
};
use results::{Charts, ResultsTable};
use tour::{StartTour, TourAttentionEvidence, TourLoader, TourPanel};

/// The page's split parts, each loaded when first needed (src/main.rs).
#[derive(Clone, Copy)]
pub struct Splits {
    /// The attention view ([`AttentionLoad`]).
    pub attention: AttentionLoad,
    /// The tour's step panel ([`TourLoad`]).
    pub tour: TourLoad,
    /// The kernel view's panels below its first screen ([`BelowLoad`]).
    pub below: BelowLoad,
    /// The CSV and JSON export's work ([`ExportLoad`]).
    pub export: ExportLoad,
    /// The language model's view ([`LmLoad`]).
    pub lm: LmLoad,
}

impl Splits {
    /// Every part linked in the module itself (the browser tests).
    pub fn linked() -> Self {
        Splits {
            attention: attention_linked,
            tour: tour_linked,
            below: below_linked,
            export: export_linked,
            lm: lm_linked,
        }
    }
}

/// Mounts the app on `<body>`, configured from the page's URL; `splits` get the split parts'
/// code when each is first needed (src/main.rs).
pub fn start(splits: Splits) {
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        show_panic_banner();
    }));
    mount_to_body(move || view! { <App splits/> });
}

/// The URL key that makes the page panic on purpose (`?crash=1`), so that the end-to-end
/// test can prove the recovery banner works.
const CRASH_KEY: &str = "crash";

/// After a panic the WebAssembly instance cannot be trusted, so the banner is plain DOM built
/// without Rust state, and "reset to defaults" is a link to the page without a query: it
/// works even though the module has stopped. Text only (no HTML from strings).
/// A size in megabytes, one decimal ("98.4 MB"), as the model views say their files' sizes.
pub(in crate::ui) fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

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

/// Whether a result computed for `shown` is the experiment of `config` (the probed pair and
/// the view do not change it).
fn same_experiment(config: &ExperimentConfig, shown: &ExperimentConfig) -> bool {
    let mut a = config.clone();
    let mut b = shown.clone();
    (a.probe, b.probe) = (None, None);
    (a.view, b.view) = (View::Kernel, View::Kernel);
    a == b
}

/// Removes the crash flag from a query; returns whether it was set.
fn take_crash_flag(query: &str) -> (bool, String) {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query.trim_start_matches('?')).unwrap_or_default();
    let crash = pairs.iter().any(|(k, v)| k == CRASH_KEY && v == "1");
    let rest: Vec<_> = pairs.into_iter().filter(|(k, _)| k != CRASH_KEY).collect();
    (crash, serde_urlencoded::to_string(rest).unwrap_or_default())
}

/// The page's presentation (tour step, presenter mode, embedded figure), for the components
/// that show or change it; the URL follows it.
#[derive(Clone, Copy)]
pub struct PageModeContext {
    pub mode: ReadSignal<PageMode>,
    pub set_mode: WriteSignal<PageMode>,
}

pub use crate::lab::page::job::{BUDGET_BYTES, BUDGET_WORK, ScatterView, Shown, Status};

/// See [`crate::lab::page::job::PROGRESS_DELAY_MS`].
const PROGRESS_DELAY: Duration = Duration::from_millis(PROGRESS_DELAY_MS);

/// The query string of the page's URL, without the `?`.
fn url_query() -> String {
    web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default()
}

/// The whole lab.
///
/// - `initial`: the configuration to start from; `None` reads it from the URL query (bad
///   values there fall back to defaults and are listed in a notice).
/// - `splits`: get the split parts' code (the attention view, the tour's step panel, the
///   kernel view's panels below its first screen), loaded on demand by the page ([`Splits`];
///   the browser tests pass [`Splits::linked`]).
#[component]
pub fn App(#[prop(optional)] initial: Option<ExperimentConfig>, splits: Splits) -> impl IntoView {
    let (crash, query) = take_crash_flag(&url_query());
    // The presentation keys (tour, present, embed) apart from what is computed; `?tour=N`
    // alone opens on the step's own state.
    let split = PageMode::split(&query, STEP_COUNT);
    let step_state = split
        .mode
        .tour
        .filter(|_| split.rest.is_empty())
        .and_then(step_config);
    let (initial, mut notices): (ExperimentConfig, Vec<ParamError>) = match initial.or(step_state) {
        Some(config) => (config, Vec::new()),
        None => ExperimentConfig::from_query(&split.rest),
    };
    // An embedded figure opens on the view that computes it (src/ui/embed.rs).
    let initial = match split.mode.embed {
        Some(figure) => ExperimentConfig {
            view: figure.view(),
            ..initial
        },
        None => initial,
    };
    notices.extend(split.errors.into_iter().map(ParamError::from));
    let (mode, set_mode) = signal(split.mode);
    provide_context(PageModeContext { mode, set_mode });
    let attention_loader = AttentionLoader::new(splits.attention);
    provide_context(attention_loader);
    provide_context(TourLoader::new(splits.tour));
    provide_context(BelowLoader::new(splits.below));
    provide_context(ExportActions(splits.export));
    let lm_loader = lazy_lm::LmLoader::new(splits.lm);
    if crash {
        Effect::new(|_| {
            panic!("deliberate panic requested by ?crash=1 (tests the recovery banner)")
        });
    }
    let (config, set_config) = signal(initial);
    // What the charts, the table and the status show: written only when the job state
    // machine says so (`send` below), never to mirror another signal.
    let (status, set_status) = signal(Status::Computing);
    let (progress, set_progress) = signal(None::<f64>);
    let (elapsed, set_elapsed) = signal(None::<(u64, f64)>);
    let (scatter, set_scatter) = signal(None::<Shown<ScatterView>>);
    let (summaries, set_summaries) = signal(None::<Shown<ExperimentResult>>);
    let (curves, set_curves) = signal(None::<Shown<Vec<MseCurve>>>);
    let job = StoredValue::new_local(Job::new());
    let pool_cell = StoredValue::new_local(None::<Rc<RefCell<Pool>>>);

    // Feeds one input to the job state machine and carries out its commands (which may feed
    // it more: the pool reports synchronously), then shows its state.
    let send = StoredValue::new_local(None::<Rc<dyn Fn(JobInput)>>);
    // A timer's input to the state machine, fed after `delay`.
    let send_later = move |input: JobInput, delay: Duration| {
        set_timeout(
            move || {
                if let Some(send) = send.get_value() {
                    send(input);
                }
            },
            delay,
        )
    };
    let run: Rc<dyn Fn(JobInput)> = Rc::new(move |input: JobInput| {
        let commands = job
            .try_update_value(|j| j.handle(input))
            .unwrap_or_default();
        let with_pool = |f: &dyn Fn(&Rc<RefCell<Pool>>)| {
            if let Some(pool) = pool_cell.get_value() {
                f(&pool);
            }
        };
        for command in commands {
            match command {
                JobCommand::Submit { generation, config } => {
                    with_pool(&|p| Pool::submit(p, generation, &config));
                }
                JobCommand::Pause => with_pool(&Pool::pause),
                JobCommand::Cancel => with_pool(&Pool::cancel),
                JobCommand::StartProgressTimer { generation } => {
                    send_later(JobInput::ProgressDelay { generation }, PROGRESS_DELAY);
                }
                JobCommand::StartFollowTimer {
                    generation,
                    delay_ms,
                } => send_later(
                    JobInput::FollowDelay { generation },
                    Duration::from_secs_f64(delay_ms.max(0.0) / 1e3),
                ),
                JobCommand::Show(Part::Scatter) => {
                    set_scatter.set(job.with_value(|j| j.scatter().cloned()));
                }
                JobCommand::Show(Part::Boxplots) => {
                    set_summaries.set(job.with_value(|j| j.summaries().cloned()));
                }
                JobCommand::Show(Part::Curves) => {
                    set_curves.set(job.with_value(|j| j.curves().cloned()));
                }
            }
        }
        let (now_status, now_progress, now_elapsed) =
            job.with_value(|j| (j.status().clone(), j.progress(), j.elapsed()));
        if status.get_untracked() != now_status {
            set_status.set(now_status);
        }
        if progress.get_untracked() != now_progress {
            set_progress.set(now_progress);
        }
        if elapsed.get_untracked() != now_elapsed {
            set_elapsed.set(now_elapsed);
        }
    });
    send.set_value(Some(run.clone()));
    let dispatch = move |input: JobInput| {
        if let Some(send) = send.get_value() {
            send(input);
        }
    };

    // The workers the first view needs: `full-worker`s at once for the attention view (so
    // that no `kernel-worker` is replaced while its script still loads), else the kernel
    // view's configuration's.
    let first_kind = config.with_untracked(|c| match c.view {
        View::Attention => WorkerKind::Full,
        View::Kernel | View::Lm => WorkerKind::for_config(c),
    });
    let pool = StoredValue::new_local(Pool::of(first_kind, move |event| {
        dispatch(JobInput::Pool(event))
    }));
    pool_cell.set_value(Some(pool.get_value()));
    on_cleanup(move || pool.with_value(Pool::cancel));
    provide_context(ProbeRunner(pool));
    // Kept across views: the language model loads once per page.
    let lm_client = lazy_lm::LmSlot::new();
    let shown_view = Memo::new(move |_| config.with(|c| c.view));
    let model_pool = ModelPool::idle();
    provide_context(model_pool);
    provide_context(AttentionRunner {
        main: pool,
        model: model_pool,
        lm: ModelPool::idle_of(WorkerKind::LmHeads),
    });
    provide_context(DataViewRunner(pool));
    provide_context(ExportRunner(pool));

    // What the attention view publishes for a tour step that reads it (src/ui/tour.rs).
    let tour_evidence = TourAttentionEvidence::new();
    provide_context(tour_evidence);
    let revealed = RwSignal::new(false);

    // The outside world follows the configuration: the address bar shows it (bad URL values
    // were replaced by defaults and listed in the notice), and the job state machine decides
    // whether to compute it, ask first, or reuse what is stored.
    address_bar::follow(config, mode);
    Effect::new(move |_| {
        let request = config.get();
        // The attention view computes its own parts (src/ui/attention.rs).
        if request.view != View::Kernel {
            return;
        }
        let workers = pool.with_value(|p| p.borrow().workers()).max(1);
        dispatch(JobInput::Configured {
            config: Box::new(request),
            workers,
            now_ms: pool::now_ms(),
        });
    });

    // The newest request whose scatter (the first figure, new with every setting) is on
    // screen (`data-drawn-generation`): while a slider is dragged, the page draws answers
    // before it is ready (the benchmark and a test read it).
    let (drawn_generation, set_drawn_generation) = signal(None::<u64>);
    // Called by the charts once a part of the latest result is drawn.
    let on_drawn = Callback::new(move |outcome: (u64, Part, Result<(), String>)| {
        let (generation, part, outcome) = outcome;
        let newer = drawn_generation.get_untracked() < Some(generation);
        if part == Part::Scatter && outcome.is_ok() && newer {
            set_drawn_generation.set(Some(generation));
        }
        dispatch(JobInput::Drawn {
            generation,
            part,
            outcome,
        });
    });

    let run_anyway = move |_| dispatch(JobInput::RunAnyway);
    // Back to the configuration whose results are on screen.
    let keep_previous = move |_| {
        let previous = job.with_value(|j| j.shown_config());
        set_config.set(previous.unwrap_or_default());
    };
    let cancel = move |_| dispatch(JobInput::Cancel);

    // The whole result on screen, compared by identity (Shown's pointer equality).
    let result = Signal::derive(move || summaries.get().map(|s| s.value));
    // What the panels below the first screen read (src/ui/below.rs).
    let below = BelowInputs {
        config,
        set_config,
        job_running: Signal::derive(move || status.get() == Status::Computing),
        result,
    };
    // The whole answer's sizes when the charts show a preview (a slider moving).
    let preview = move || {
        summaries.with(|s| {
            s.as_ref().and_then(|s| {
                let c = &s.value.config;
                c.preview_of.map(|whole| (c.n, c.datasets, whole))
            })
        })
    };
    // Status::shown: a quick job changes nothing on screen at its start.
    let shown_status = Memo::new(move |previous: Option<&Status>| {
        let past_delay_or_preview = progress.with(Option::is_some) || preview().is_some();
        status.get().shown(previous, past_delay_or_preview)
    });
    let status_line = move || match shown_status.get() {
        Status::Computing => match preview() {
            Some((n, datasets, whole)) => format!(
                "preview while the slider moves: {n} of {} scatter pairs, {datasets} of {} datasets, the curve of the last whole answer; computing the whole answer…",
                whole.n, whole.datasets
            ),
            None => "computing…".to_string(),
        },
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

    // One figure alone for an <iframe>: the same job and pool, drawn by the same charts.
    if let Some(figure) = split.mode.embed {
        let kernel = embed::KernelJob {
            status,
            elapsed,
            status_line: Signal::derive(status_line),
            shown_status,
            scatter,
            summaries,
            curves,
            on_drawn,
            run_anyway: Callback::new(move |()| dispatch(JobInput::RunAnyway)),
            probe: Signal::from(Memo::new(move |_| config.with(|c| c.probe))),
            on_pick: Callback::new(move |index: usize| {
                set_config.update(|c| {
                    let _ = c.set(Param::Probe, &index.to_string());
                })
            }),
        };
        return view! { <embed::EmbedPage figure config set_config notices kernel/> }.into_any();
    }
    view! {
        <main
            class="app"
            class:present=move || mode.with(|m| m.present)
            data-tour=move || mode.with(|m| m.tour.map(|i| i + 1))
            data-tour-predicting=move || (mode.with(|m| m.tour.is_some()) && !revealed.get()).then_some("")
            data-status=move || status.with(|s| s.as_attr())
            // A job past the progress delay: only then are the charts dimmed (a quick job's
            // dimming was a repaint of every chart at its start, a frame of compositing beside
            // the workers, and a flicker at every step of a dragged slider).
            data-long=move || {
                (progress.with(Option::is_some) && status.with(|s| *s == Status::Computing))
                    .then_some("")
            }
            data-compute-ms=move || elapsed.get().map(|(_, ms)| format!("{ms:.1}"))
            data-generation=move || elapsed.get().map(|(generation, _)| generation)
            data-drawn-generation=move || drawn_generation.get()
            data-preview=move || preview().map(|_| "")
        >
            <header>
                <h1>"softmax-kernel-lab"</h1>
                <p class="lede">
                    "How well do random features estimate the softmax kernel SM(x, y) = exp(x·y)? "
                    "This page reproduces the experiment of "
                    <em>"Complex Exponential Features"</em>
                    " (section 4, Figures 1–3) live in WebAssembly: change any control and every chart is recomputed."
                </p>
                <StartTour set_config/>
            </header>
            <Presets config set_config/>
            {(!notices.is_empty()).then(|| view! {
                <section class="notice" role="status">
                    <strong>"Some URL parameters were not used:"</strong>
                    <ul>
                        {notices.iter().map(|n| view! { <li><code>{n.key.clone()}</code>": "{n.message.clone()}</li> }).collect_view()}
                    </ul>
                </section>
            })}
            <TourPanel config set_config summaries curves revealed/>
            <nav class="tabs" role="tablist" aria-label="views">
                <button
                    type="button"
                    role="tab"
                    class="tab"
                    data-view="kernel"
                    aria-selected=move || config.with(|c| c.view == View::Kernel).to_string()
                    on:click=move |_| set_config.update(|c| c.view = View::Kernel)
                >"Kernel values"</button>
                <button
                    type="button"
                    role="tab"
                    class="tab"
                    data-view="attention"
                    aria-selected=move || config.with(|c| c.view == View::Attention).to_string()
                    // Its code is fetched on first use: start as the pointer or focus gets here.
                    on:pointerenter=move |_| attention_loader.start()
                    on:focus=move |_| attention_loader.start()
                    on:click=move |_| set_config.update(|c| c.view = View::Attention)
                >"Attention rows"</button>
                <button
                    type="button"
                    role="tab"
                    class="tab"
                    data-view="lm"
                    aria-selected=move || config.with(|c| c.view == View::Lm).to_string()
                    on:pointerenter=move |_| lm_loader.start()
                    on:focus=move |_| lm_loader.start()
                    on:click=move |_| set_config.update(|c| c.view = View::Lm)
                >"Language model"</button>
            </nav>
            <Show
                when=move || config.with(|c| c.view == View::Kernel)
                // Rebuilt when the view changes, not with every setting.
                fallback=move || move || if shown_view.get() == View::Lm {
                    view! { <lazy_lm::LazyLmView config set_config kept=lm_client loader=lm_loader/> }.into_any()
                } else {
                    view! { <LazyAttentionView config set_config/> }.into_any()
                }
            >
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
                        <span class=move || format!("dot {}", shown_status.with(|s| s.as_attr()))></span>
                        {status_line}
                        // Rendered once per job and updated in place: a button rebuilt on
                        // every progress report could not be clicked.
                        <Show when=move || progress.with(Option::is_some)>
                            <progress
                                class="progress"
                                max="1"
                                value=move || progress.get().unwrap_or(0.0).to_string()
                            ></progress>
                            <button class="cancel" type="button" on:click=cancel>"Cancel"</button>
                        </Show>
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
                    // What the reader clicks comes before the panels mounted as they near the
                    // window: a panel mounting above the export bar pushed it down under the
                    // pointer, and the click landed on the panel (an export that never started).
                    <ExportBar result/>
                    <ResultsTable result/>
                    // After the figures and the table: a projector's first screen shows Figure 1.
                    <LazyBelow part=BelowPart::Data inputs=below/>
                    <LazyBelow part=BelowPart::ProbeAndFormulas inputs=below/>
                </section>
            </div>
            </Show>
        </main>
    }
    .into_any()
}
