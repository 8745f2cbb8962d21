//! A formula on the page: its one line of text (the single source, see
//! [`crate::lab::mathml`]) rendered as native MathML.

use leptos::prelude::*;

use crate::lab::mathml::to_mathml;

/// A formula as MathML.
///
/// - `text`: the formula in the lab's plain notation (`e^{|z|²}`, `A⁻ᵀy`).
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
