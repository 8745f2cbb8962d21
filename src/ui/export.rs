//! Presets, export and sharing: the preset links, "copy link", the data behind the page as
//! CSV and JSON (byte for byte what `kernel-lab experiment` prints for the same URL), and each
//! figure's charts as PNG at device resolution.
//!
//! The CSV and JSON export computes the experiment again, task by task, and writes it as the
//! command line does: that work ([`run_export`]: the export's tasks, the JSON and CSV writers)
//! is a split part of the page's module (src/main.rs: `export_actions`), fetched on the first
//! click of "Download CSV" or "Download JSON".

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use leptos::ev;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use super::pool::ExportRunner;

use crate::lab::config::ExperimentConfig;
use crate::lab::config::presets::{PRESETS, Preset};
use crate::lab::kernel::experiment::ExperimentResult;
use crate::lab::kernel::export::{experiment_csv, experiment_json};
use crate::lab::page::{ExportRun, ExportStep};

/// Starts a download of `href` (a data URL) as `filename`.
pub(in crate::ui) fn download(filename: &str, href: &str) -> Option<()> {
    let document = web_sys::window()?.document()?;
    let anchor: web_sys::HtmlAnchorElement = document.create_element("a").ok()?.dyn_into().ok()?;
    anchor.set_href(href);
    anchor.set_download(filename);
    document.body()?.append_child(&anchor).ok()?;
    anchor.click();
    anchor.remove();
    Some(())
}

/// Downloads `result` as the command line prints it: `experiment --csv` or `experiment`.
fn download_export(format: &str, result: &ExperimentResult) {
    if format == "csv" {
        download(
            "softmax-kernel-lab.csv",
            &text_url("text/csv", &experiment_csv(result)),
        );
    } else if let Ok(json) = experiment_json(result) {
        download(
            "softmax-kernel-lab.json",
            &text_url("application/json", &json),
        );
    }
}

/// Computes `config`'s experiment (without the curve) in the page's pool, task by task, with
/// unfused arithmetic ([`ExportTaskAsk`](crate::lab::pool::ExportTaskAsk)): the native build's numbers bit for bit, in every
/// build of the workers, and with the datasets and ω they already hold. `progress(done,
/// total)` after each task, then `done` once (unless a newer export superseded this one).
fn compute_exactly(
    runner: ExportRunner,
    config: &ExperimentConfig,
    progress: impl Fn(usize, usize) + 'static,
    done: impl FnOnce(Result<ExperimentResult, String>) + 'static,
) {
    let run = match ExportRun::new(config) {
        Ok(run) => run,
        Err(message) => return done(Err(message)),
    };
    let Some(ticket) = runner.ticket() else {
        return done(Err("the page's worker pool is gone".into()));
    };
    let asks: Vec<_> = (0..run.len()).filter_map(|i| run.ask(i)).collect();
    let run = Rc::new(RefCell::new(run));
    let progress = Rc::new(progress);
    // Told once (ExportRun says when): the first error, or the result.
    let done: Rc<RefCell<Option<ExportDone>>> = Rc::new(RefCell::new(Some(Box::new(done))));
    for (index, ask) in asks.into_iter().enumerate() {
        let (run, progress, done) = (run.clone(), progress.clone(), done.clone());
        runner.run(ticket, ask, move |output| {
            let step = run.borrow_mut().take_answer(index, output);
            match step {
                ExportStep::Progress { done, total } => progress(done, total),
                ExportStep::Finished(outcome) => {
                    if let Some(done) = done.borrow_mut().take() {
                        done(outcome.map(|result| *result));
                    }
                }
                ExportStep::Over => {}
            }
        });
    }
}

/// Told the outcome of an export's computation.
type ExportDone = Box<dyn FnOnce(Result<ExperimentResult, String>)>;

/// One click's export, handed to the split part.
pub struct ExportJob {
    /// `"csv"` or `"json"`.
    pub format: &'static str,
    pub runner: ExportRunner,
    /// The configuration of the results on screen.
    pub config: ExperimentConfig,
    /// Told `(done, total)` after each task.
    pub progress: Box<dyn Fn(usize, usize)>,
    /// Told once: the file's download started, or why there is none.
    pub done: Box<dyn FnOnce(Result<(), String>)>,
}

/// Runs an export: the split part's entry.
pub type ExportAction = fn(ExportJob);

/// Loads the export's split part.
pub type ExportLoad = super::on_demand::Load<ExportAction>;

/// The page's way to the export's split part (a context).
#[derive(Clone, Copy)]
pub struct ExportActions(pub ExportLoad);

/// Computes `job`'s experiment as the command line does, then downloads it: what the split part
/// holds.
pub fn run_export(job: ExportJob) {
    let ExportJob {
        format,
        runner,
        config,
        progress,
        done,
    } = job;
    compute_exactly(runner, &config, progress, move |outcome| {
        done(outcome.map(|exact| download_export(format, &exact)))
    });
}

/// An [`ExportLoad`] for a module that links the export itself (the browser tests).
pub fn export_linked() -> super::on_demand::Loading<ExportAction> {
    Box::pin(std::future::ready(Ok(run_export as ExportAction)))
}

/// A data URL of `text`.
pub(in crate::ui) fn text_url(mime: &str, text: &str) -> String {
    format!(
        "data:{mime};charset=utf-8,{}",
        String::from(js_sys::encode_uri_component(text))
    )
}

/// The drawn charts of the figure around `button`, as one `<chart>+<chart>….png` at the
/// charts' backing-store resolution (CSS size × device pixel ratio), laid out as on screen.
fn download_figure_pngs(button: &web_sys::Element) -> Option<usize> {
    let figure = button.closest("section").ok()??;
    let canvases = figure.query_selector_all("canvas[data-chart]").ok()?;
    // The drawn charts and where they sit on screen (hidden panels have no size).
    let charts: Vec<(web_sys::HtmlCanvasElement, web_sys::DomRect)> = (0..canvases.length())
        .filter_map(|i| {
            canvases
                .item(i)?
                .dyn_into::<web_sys::HtmlCanvasElement>()
                .ok()
        })
        .filter(|c| c.width() > 0 && c.client_width() > 0)
        .map(|c| {
            let rect = c.get_bounding_client_rect();
            (c, rect)
        })
        .collect();
    let first = charts.first()?;
    // Backing-store pixels per CSS pixel (the charts size their stores by devicePixelRatio).
    let scale = f64::from(first.0.width()) / f64::from(first.0.client_width().max(1));
    let left = charts
        .iter()
        .map(|(_, r)| r.left())
        .fold(f64::INFINITY, f64::min);
    let top = charts
        .iter()
        .map(|(_, r)| r.top())
        .fold(f64::INFINITY, f64::min);
    let right = charts
        .iter()
        .map(|(_, r)| r.right())
        .fold(f64::NEG_INFINITY, f64::max);
    let bottom = charts
        .iter()
        .map(|(_, r)| r.bottom())
        .fold(f64::NEG_INFINITY, f64::max);
    let document = web_sys::window()?.document()?;
    let sheet: web_sys::HtmlCanvasElement =
        document.create_element("canvas").ok()?.dyn_into().ok()?;
    sheet.set_width(((right - left) * scale).round().clamp(1.0, 16_384.0) as u32);
    sheet.set_height(((bottom - top) * scale).round().clamp(1.0, 16_384.0) as u32);
    let context: web_sys::CanvasRenderingContext2d =
        sheet.get_context("2d").ok()??.dyn_into().ok()?;
    context.set_fill_style_str("#ffffff");
    context.fill_rect(
        0.0,
        0.0,
        f64::from(sheet.width()),
        f64::from(sheet.height()),
    );
    for (canvas, rect) in &charts {
        context
            .draw_image_with_html_canvas_element(
                canvas,
                ((rect.left() - left) * scale).round(),
                ((rect.top() - top) * scale).round(),
            )
            .ok()?;
    }
    // One file per figure, its charts laid out as on screen: several downloads started at once
    // are not all kept (Firefox keeps the last).
    let name = charts
        .iter()
        .map(|(c, _)| {
            c.get_attribute("data-chart")
                .unwrap_or_else(|| "chart".into())
        })
        .collect::<Vec<_>>()
        .join("+");
    let name: String = name.chars().take(120).collect();
    download(&format!("{name}.png"), &sheet.to_data_url().ok()?)?;
    Some(charts.len())
}

/// A button that downloads every chart of the figure it stands in as PNG.
#[component]
pub fn PngButton() -> impl IntoView {
    let on_click = move |ev: ev::MouseEvent| {
        if let Some(button) = ev
            .current_target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        {
            download_figure_pngs(&button);
        }
    };
    view! {
        <button type="button" class="export-png" title="download this figure's charts as PNG (device resolution)" on:click=on_click>
            "PNG"
        </button>
    }
}

/// How long "Copy link" waits for the browser's clipboard before saying it did not answer.
const CLIPBOARD_PATIENCE: std::time::Duration = std::time::Duration::from_secs(4);

/// "Copy link", "Download CSV" and "Download JSON".
///
/// - `result`: the kernel view's results on screen (the exports are disabled until they are in).
#[component]
pub fn ExportBar(result: Signal<Option<Arc<ExperimentResult>>>) -> impl IntoView {
    let (copied, set_copied) = signal(None::<&'static str>);
    let copy_link = move |_| {
        let Some(window) = web_sys::window() else {
            return;
        };
        let href = window.location().href().unwrap_or_default();
        set_copied.set(None);
        let promise = window.navigator().clipboard().write_text(&href);
        // A browser may leave the clipboard's promise pending (headless Firefox does, now and
        // then): the bar then says so after a few seconds instead of saying nothing. The note
        // was cleared above, so one still empty means no click's clipboard has answered since.
        leptos::prelude::set_timeout(
            move || {
                if copied.try_get_untracked() == Some(None) {
                    set_copied.set(Some(
                        "the browser did not answer the clipboard: copy the address bar",
                    ));
                }
            },
            CLIPBOARD_PATIENCE,
        );
        leptos::task::spawn_local(async move {
            let outcome = wasm_bindgen_futures::JsFuture::from(promise).await;
            set_copied.set(Some(if outcome.is_ok() {
                "link copied"
            } else {
                "the browser refused the clipboard: copy the address bar"
            }));
        });
    };
    // What the export bar says while an export computes (or why one failed).
    let (status, set_status) = signal(None::<String>);
    let busy = RwSignal::new(false);
    let runner = use_context::<ExportRunner>();
    let actions = use_context::<ExportActions>();
    let export = move |format: &'static str| {
        let Some(result) = result.get_untracked() else {
            return;
        };
        if busy.get_untracked() {
            return;
        }
        let (Some(runner), Some(ExportActions(load))) = (runner, actions) else {
            set_status.set(Some("export failed: no worker pool".into()));
            return;
        };
        busy.set(true);
        set_status.set(Some(
            "computing the export as the command line does…".into(),
        ));
        let failed = move |message: String| {
            busy.set(false);
            set_status.set(Some(format!("export failed: {message}")));
        };
        // The export's code is fetched on the first click (then kept).
        let loading = load();
        leptos::task::spawn_local(async move {
            let run = match loading.await {
                Ok(run) => run,
                Err(message) => return failed(format!("its code could not be loaded ({message})")),
            };
            run(ExportJob {
                format,
                runner,
                config: result.config.clone(),
                progress: Box::new(move |done, total| {
                    set_status.set(Some(format!(
                        "computing the export as the command line does: {done} of {total} tasks…"
                    )));
                }),
                done: Box::new(move |outcome| match outcome {
                    Ok(()) => {
                        busy.set(false);
                        set_status.set(None);
                    }
                    Err(message) => failed(message),
                }),
            });
        });
    };
    let missing = move || result.with(Option::is_none) || busy.get();
    view! {
        <div class="export-bar" role="group" aria-label="share and export">
            <button type="button" class="copy-link" on:click=copy_link>"Copy link"</button>
            <button type="button" class="export-csv" disabled=missing on:click=move |_| export("csv")>"Download CSV"</button>
            <button type="button" class="export-json" disabled=missing on:click=move |_| export("json")>"Download JSON"</button>
            <span class="export-note" aria-live="polite">{move || copied.get()}</span>
            <span class="export-status" role="status">{move || status.get()}</span>
        </div>
    }
}

/// The presets as links; choosing one sets its configuration (the rest of the page stays as it
/// is), and its explanation shows while the configuration is the preset's.
///
/// - `config`, `set_config`: the one configuration.
#[component]
pub fn Presets(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
) -> impl IntoView {
    let chosen = Memo::new(move |_| config.with(|c| Preset::matching(c).map(|p| p.id)));
    let links = PRESETS
        .iter()
        .map(|preset| {
            let href = format!("?{}", preset.query);
            let choose = move |ev: ev::MouseEvent| {
                // A plain click applies the preset in place; a modified click opens the link.
                if ev.ctrl_key() || ev.meta_key() || ev.shift_key() || ev.button() != 0 {
                    return;
                }
                ev.prevent_default();
                set_config.set(preset.config());
            };
            view! {
                <a
                    class="preset"
                    data-preset=preset.id
                    href=href
                    aria-current=move || (chosen.get() == Some(preset.id)).then_some("true")
                    on:click=choose
                >
                    {preset.label}
                </a>
            }
        })
        .collect_view();
    let explanation = move || {
        chosen.get().and_then(|id| {
            PRESETS
                .iter()
                .find(|p| p.id == id)
                .map(|p| view! { <p class="preset-explanation" role="note">{p.explanation}</p> })
        })
    };
    view! {
        <nav class="presets" aria-label="presets">
            <span class="presets-title">"Presets:"</span>
            {links}
        </nav>
        {explanation}
    }
}
