//! Seed 002's tensorised-attention claim, computed on a worked example.

use leptos::prelude::*;

use crate::numerics::attention::tensorised::tensorised_example;

/// Seed 002's tensorised-attention claim, computed.
#[component]
pub(super) fn Tensorised() -> impl IntoView {
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
