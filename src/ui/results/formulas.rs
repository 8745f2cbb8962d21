//! The kernel view's "What is computed": every estimator's formula, what to notice and
//! source, then the data and the heuristics.

use leptos::prelude::*;

use crate::lab::page::formulas;
use crate::numerics::estimators::DESCRIPTIONS;
use crate::ui::math::Math;

/// The estimators' definitions, beside the charts: every registry entry's formula, what to
/// notice and source, then the data and the heuristics.
#[component]
pub fn Formulas() -> impl IntoView {
    let estimators = DESCRIPTIONS
        .iter()
        .map(|e| {
            let docs = e.docs();
            let [r, g, b] = e.colour();
            view! {
                <dt data-estimator=e.id()>
                    <span class="swatch" style=format!("background:rgb({r},{g},{b})")></span>
                    {e.label()} " " <code class="param-key">{e.id()}</code>
                </dt>
                <dd>
                    <Math text=docs.formula block=true/>
                    <span class="what-to-notice">"What to notice: " {docs.notice} "."</span>
                    <span class="source">"Source: " {docs.source} "."</span>
                </dd>
            }
        })
        .collect_view();
    view! {
        <section class="figure formulas">
            <h2>"What is computed"</h2>
            <dl>
                <dt>"Softmax kernel"</dt>
                <dd>
                    <Math text=formulas::SOFTMAX_KERNEL block=true/>
                    "for queries x and keys y; ω drawn i.i.d., or coupled (orthogonal or simplex blocks, randomised QMC: coupling)."
                </dd>
                {estimators}
                <dt>"MSE (seed paper, Lemma 3.1)"</dt>
                <dd>
                    <Math text=formulas::CEXP_HCEXP_MSE block=true/>
                    "A good A makes |z| small on the data. The other estimators' formulas: ../shared/REFERENCE.md, each checked here "
                    "by the statistical harness (tests/estimators.rs)."
                </dd>
                <dt>"Choosing A from sample means μ and variances σ²"</dt>
                <dd>
                    "mean-only: aᵢ = √(|μ_y,i| / |μ_x,i|); variance-adjusted (Lemma 3.4): "
                    "aᵢ = ((σ²_y,i + μ²_y,i) / (σ²_x,i + μ²_x,i))^¼, the minimiser of E|Ax|² + E|A⁻ᵀy|²; optimised: the minimiser "
                    "of the mean relative MSE meanᵢ (cosh|zᵢ|² − 1)/m over diagonal A, convex in ln a. "
                    "Entries are clamped into [0.001, 1000] (a zero mean would make mean-only A infinite)."
                </dd>
                <dt>"Data (seed paper, section 4)"</dt>
                <dd>
                    "μ_x,j, μ_y,j ~ Laplace(0, b); σ²_x,j ~ Gamma(k_x, 1), σ²_y,j ~ Gamma(k_y, 1); "
                    "xᵢ ~ N(μ_x, diag σ²_x), yᵢ ~ N(μ_y, diag σ²_y), rescaled so the mean norms are the targets. "
                    "Only the diagonal pairs SM(xᵢ, yᵢ) are estimated; A uses the rescaled samples' statistics."
                </dd>
            </dl>
        </section>
    }
}
