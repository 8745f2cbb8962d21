//! The attention view's formulas and sources ("What is computed").

use leptos::prelude::*;

use super::text::css_colour;
use crate::lab::page::formulas;
use crate::numerics::attention::methods::MethodId;
use crate::ui::math::Math;

/// The attention view's formulas and sources.
#[component]
pub(super) fn AttentionFormulas() -> impl IntoView {
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
                <dd><Math text=formulas::SOFTMAX_ATTENTION block=true/><span>"A model scales q and k by " <Math text=formulas::MODEL_SCALING_D/> " each (all-MiniLM-L6-v2's heads: d = 32; SmolLM2-135M's: d = 64, after the rotary position embedding, and causal: each query over its own and the earlier keys)."</span></dd>
                {methods}
                <dt>"Every other estimator"</dt>
                <dd>"Its features φ(q), ψ(k) from the kernel view's registry, with A fitted to these queries and keys."</dd>
            </dl>
        </section>
    }
}
