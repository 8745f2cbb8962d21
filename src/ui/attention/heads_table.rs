//! The real-head table: every head of all-MiniLM-L6-v2 (or of SmolLM2-135M on the reader's
//! text), data-chosen A and OPRF against Performer's PRF at equal m, with its CSV download.

use leptos::prelude::*;

use super::TableScroll;
use super::text::sci;
use crate::lab::attention::report::{HeadsTable, TABLE_DRAWS};
use crate::lab::config::{ExperimentConfig, HeadSource};
use crate::lab::page::formulas;
use crate::ui::math::Math;

/// The real-head table: data-chosen A and OPRF against Performer's PRF at equal m.
#[component]
pub(super) fn HeadsTableView(
    config: ReadSignal<ExperimentConfig>,
    table: RwSignal<Option<Result<HeadsTable, String>>, LocalStorage>,
) -> impl IntoView {
    let minilm = move || config.with(|c| c.attention.source.is_real());
    let body = move || {
        table.with(|t| match t {
            Some(Ok(t)) => {
                // Built for each of the two tables (a view is not `Clone` when components are
                // erased, .cargo/config.toml).
                let header = || {
                    t.methods
                        .iter()
                        .map(|m| view! { <th>{m.id()}</th> })
                        .collect_view()
                };
                let wins = t
                    .wins
                    .iter()
                    .zip(&t.methods)
                    .map(|(w, m)| view! { <td class="num" data-method=m.id()>{*w}</td> })
                    .collect_view();
                let ratios = t
                    .median_ratio
                    .iter()
                    .map(|r| view! { <td class="num">{format!("{r:.3}")}</td> })
                    .collect_view();
                let rows = t
                    .rows
                    .iter()
                    .map(|r| {
                        let cells = r
                            .errors
                            .iter()
                            .map(|e| view! { <td class="num">{sci(*e)}</td> })
                            .collect_view();
                        view! { <tr><td>{r.layer}</td><td>{r.head}</td>{cells}</tr> }
                    })
                    .collect_view();
                let csv = t.to_csv();
                let href = format!(
                    "data:text/csv;charset=utf-8,{}",
                    String::from(js_sys::encode_uri_component(&csv))
                );
                let heads = t.rows.len();
                // Built before their scroll boxes, whose children must own what they show.
                let summary = view! {
                    <table class="leaderboard heads-summary">
                        <thead><tr><th scope="col">"measure"</th>{header()}</tr></thead>
                        <tbody>
                            <tr class="wins"><th scope="row">{format!("heads won against prf-pos (of {heads})")}</th>{wins}</tr>
                            <tr><th scope="row">"median error ratio to prf-pos"</th>{ratios}</tr>
                        </tbody>
                    </table>
                };
                let every_head = view! {
                    <table class="small-table">
                        <thead><tr><th>"layer"</th><th>"head"</th>{header()}</tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                };
                view! {
                    <p class="caption">{format!("m = {} projections for every method, {} draws of ω per head and passage; error: mean over rows of |o_i − ô_i|.", t.features, TABLE_DRAWS)}</p>
                    <TableScroll label="every real head: summary">{summary}</TableScroll>
                    <a class="download" download="real-heads.csv" href=href>"Download the table as CSV"</a>
                    <details>
                        <summary>"every head"</summary>
                        <TableScroll label="every real head">{every_head}</TableScroll>
                    </details>
                }
                .into_any()
            }
            Some(Err(e)) => view! { <p class="error">{e.clone()}</p> }.into_any(),
            None => view! { <p>"computing every head…"</p> }.into_any(),
        })
    };
    view! {
        <Show when=minilm>
            <section class="figure heads-table">
                <h2>"Every real head: does a data-chosen A or OPRF beat Performer?"</h2>
                <Show
                    when=move || config.with(|c| c.attention.source == HeadSource::Lm)
                    fallback=|| view! {
                        <p class="formula">"all 6 layers × 12 heads of all-MiniLM-L6-v2, both passages, q and k scaled by " <Math text=formulas::MODEL_SCALING/> "; same m for every method"</p>
                    }
                >
                    <p class="formula">"all 30 layers × 9 query heads of SmolLM2-135M on your text, causal (each row over its own and the earlier tokens), q and k scaled by " <Math text=formulas::MODEL_SCALING_D/> " with d = 64; same m for every method"</p>
                </Show>
                {body}
            </section>
        </Show>
    }
}
