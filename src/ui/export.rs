//! Presets, export and sharing: the preset links, "copy link", the data behind the page as
//! CSV and JSON (byte for byte what `kernel-lab experiment` prints for the same URL), and each
//! figure's charts as PNG at device resolution.

use std::sync::Arc;

use leptos::ev;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use crate::cli::{experiment_csv, experiment_json};
use crate::math::config::ExperimentConfig;
use crate::math::experiment::ExperimentResult;
use crate::math::presets::{PRESETS, Preset};

/// Starts a download of `href` (a data URL) as `filename`.
fn download(filename: &str, href: &str) -> Option<()> {
    let document = web_sys::window()?.document()?;
    let anchor: web_sys::HtmlAnchorElement = document.create_element("a").ok()?.dyn_into().ok()?;
    anchor.set_href(href);
    anchor.set_download(filename);
    document.body()?.append_child(&anchor).ok()?;
    anchor.click();
    anchor.remove();
    Some(())
}

/// A data URL of `text`.
fn text_url(mime: &str, text: &str) -> String {
    format!(
        "data:{mime};charset=utf-8,{}",
        String::from(js_sys::encode_uri_component(text))
    )
}

/// The canvases of the figure around `button`, each downloaded as `<data-chart>.png` at the
/// canvas's backing-store size (CSS size × device pixel ratio).
fn download_figure_pngs(button: &web_sys::Element) -> Option<usize> {
    let figure = button.closest("section").ok()??;
    let canvases = figure.query_selector_all("canvas[data-chart]").ok()?;
    let mut count = 0;
    for i in 0..canvases.length() {
        let Some(canvas) = canvases
            .item(i)
            .and_then(|n| n.dyn_into::<web_sys::HtmlCanvasElement>().ok())
        else {
            continue;
        };
        if canvas.width() == 0 || canvas.client_width() == 0 {
            continue;
        }
        let name = canvas
            .get_attribute("data-chart")
            .unwrap_or_else(|| "chart".into());
        if let Ok(url) = canvas.to_data_url() {
            download(&format!("{name}.png"), &url)?;
            count += 1;
        }
    }
    Some(count)
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
        let promise = window.navigator().clipboard().write_text(&href);
        leptos::task::spawn_local(async move {
            let outcome = wasm_bindgen_futures::JsFuture::from(promise).await;
            set_copied.set(Some(if outcome.is_ok() {
                "link copied"
            } else {
                "the browser refused the clipboard: copy the address bar"
            }));
        });
    };
    let export = move |format: &'static str| {
        result.with_untracked(|r| {
            let Some(result) = r else { return };
            match format {
                "csv" => {
                    download(
                        "softmax-kernel-lab.csv",
                        &text_url("text/csv", &experiment_csv(result)),
                    );
                }
                _ => {
                    if let Ok(json) = experiment_json(result) {
                        download(
                            "softmax-kernel-lab.json",
                            &text_url("application/json", &json),
                        );
                    }
                }
            }
        });
    };
    let missing = move || result.with(Option::is_none);
    view! {
        <div class="export-bar" role="group" aria-label="share and export">
            <button type="button" class="copy-link" on:click=copy_link>"Copy link"</button>
            <button type="button" class="export-csv" disabled=missing on:click=move |_| export("csv")>"Download CSV"</button>
            <button type="button" class="export-json" disabled=missing on:click=move |_| export("json")>"Download JSON"</button>
            <span class="export-note" aria-live="polite">{move || copied.get()}</span>
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
