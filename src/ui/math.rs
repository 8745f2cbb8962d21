//! A formula on the page: its LaTeX (the single source, see [`crate::lab::page::mathml`]) as the
//! native MathML that the build script rendered from it.

use leptos::prelude::*;

use crate::lab::page::mathml::{add_formulas, formulas_added, to_mathml};

/// A formula as MathML.
///
/// - `text`: the formula's LaTeX, one of the raw strings `build.rs` renders (`formulas::…`, an
///   estimator's or attention method's `formula`); any other text shows as its source.
/// - `block`: displayed on a line of its own (the "What is computed" lists) instead of inline.
#[component]
pub fn Math(#[prop(into)] text: String, #[prop(optional)] block: bool) -> impl IntoView {
    let class = if block {
        "formula-block"
    } else {
        "formula-inline"
    };
    // A long formula scrolls inside its box; the box takes the focus so that a keyboard can
    // scroll it too. Rendered again when the fetched formulas come in (a view shown before).
    let added = FORMULAS_ADDED.with(Clone::clone);
    view! {
        <span
            class=class
            tabindex="0"
            inner_html=move || {
                added.track();
                to_mathml(&text)
            }
        ></span>
    }
}

thread_local! {
    /// Set when the fetched formulas are in: every formula on the page reads it.
    static FORMULAS_ADDED: ArcTrigger = ArcTrigger::new();
    /// Whether a fetch of them is under way (the tour's step and a panel below can load at once).
    static FETCHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Where the page's split build serves the formulas the first view does not show (scripts/
/// build-page.sh copies build.rs's `view-formulas.txt` there).
const VIEW_FORMULAS_URL: &str = "./view-formulas.txt";

/// Fetches the formulas the first view does not show once (the page's split build, feature
/// `formulas-on-demand`; other builds link them): the attention and language model views',
/// the tour's, those of the panels below the kernel view's first screen. Then re-renders the
/// formulas shown. A failed fetch leaves those formulas as their LaTeX and says why in the
/// console; the next part to load tries again.
pub fn load_view_formulas() {
    if !cfg!(feature = "formulas-on-demand")
        || formulas_added()
        || FETCHING.with(|f| f.replace(true))
    {
        return;
    }
    leptos::task::spawn_local(async {
        let fetched = fetch_text(VIEW_FORMULAS_URL)
            .await
            .and_then(|text| add_formulas(&text));
        FETCHING.with(|f| f.set(false));
        match fetched {
            Ok(_) => FORMULAS_ADDED.with(ArcTrigger::notify),
            Err(message) => web_sys::console::warn_1(&message.into()),
        }
    });
}

/// The body of `url` as text.
async fn fetch_text(url: &str) -> Result<String, String> {
    use wasm_bindgen::JsCast;
    let failed = |_| format!("cannot fetch {url}");
    let window = web_sys::window().ok_or("no window")?;
    let response: web_sys::Response =
        wasm_bindgen_futures::JsFuture::from(window.fetch_with_str(url))
            .await
            .map_err(failed)?
            .dyn_into()
            .map_err(failed)?;
    if !response.ok() {
        return Err(format!("{url}: HTTP status {}", response.status()));
    }
    let text = wasm_bindgen_futures::JsFuture::from(response.text().map_err(failed)?)
        .await
        .map_err(failed)?;
    text.as_string().ok_or_else(|| format!("{url}: not text"))
}
