//! The attention view's method table: every method's numbers against softmax attention,
//! sorted by mean output error.

use leptos::prelude::*;

use super::text::{css_colour, sci};
use super::{Figure, TableScroll};
use crate::lab::attention::report::MainReport;
use crate::lab::page::formulas;
use crate::numerics::stats::order_by_key;

/// The per-method numbers, sorted by mean output error.
#[component]
pub(super) fn MethodTable(
    main: RwSignal<Option<Result<MainReport, String>>, LocalStorage>,
) -> impl IntoView {
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
            <TableScroll label="every method against softmax attention">
                <table class="leaderboard">
                    <thead><tr>
                        <th>"method"</th><th>"features D"</th><th>"cost"</th><th>"mean |o − ô|"</th>
                        <th>"median row TV"</th><th>"bad rows"</th><th>"rank of P̂ (block)"</th><th>"fitted"</th>
                    </tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </TableScroll>
        </Figure>
    }
}
