//! A formula on the page: its LaTeX (the single source, see [`crate::lab::page::mathml`]) as the
//! native MathML that the build script rendered from it.

use leptos::prelude::*;

use crate::lab::page::mathml::to_mathml;

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
    // scroll it too.
    view! { <span class=class tabindex="0" inner_html=to_mathml(&text)></span> }
}
