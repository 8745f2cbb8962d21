//! The retrieval set under the swapped model: the set (editable), every method's agreement
//! with the exact ranking, and the exact ranking beside one method's.

use leptos::prelude::*;

use super::{css_colour_of, label_of};
use crate::lab::config::{ExperimentConfig, Param};
use crate::lab::models::protocol::{Origin, Ranking, RetrievalReport};
use crate::ui::attention::TableScroll;
use crate::ui::attention::model_client::RetrievalCell;
use crate::ui::controls::commit;

/// One ranking as an ordered list: each candidate with its cosine to the query.
fn ranked_list(ranking: &Ranking, candidates: &[String], exact: &Ranking) -> AnyView {
    ranking
        .order
        .iter()
        .enumerate()
        .map(|(rank, &i)| {
            let moved = exact.order.iter().position(|&e| e == i).map(|e| e as i64 - rank as i64);
            let mark = match moved {
                Some(0) | None => String::new(),
                Some(up) if up > 0 => format!(" ↑{up}"),
                Some(down) => format!(" ↓{}", -down),
            };
            view! {
                <li data-candidate=i>
                    <span class="num">{format!("{:.3}", ranking.cosines.get(i).copied().unwrap_or(f64::NAN))}</span>
                    " "{candidates.get(i).cloned().unwrap_or_default()}
                    <span class="moved">{mark}</span>
                </li>
            }
        })
        .collect_view()
        .into_any()
}

/// The retrieval set, every method's agreement and two rankings side by side.
///
/// - `retrieval`: the answers so far.
/// - `config`, `set_config`: the configuration (this reads m and writes `retrieval`).
#[component]
pub(super) fn RetrievalView(
    retrieval: RwSignal<Vec<RetrievalCell>, LocalStorage>,
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
) -> impl IntoView {
    let (error, set_error) = signal(None::<String>);
    let chosen = RwSignal::new(None::<String>);
    let on_change = move |ev: leptos::ev::Event| {
        let value = event_target_value(&ev);
        set_error.set(commit(config, set_config, Param::Retrieval, &value).map(|e| e.to_string()));
    };
    let rows = move || {
        retrieval.with(|cells| {
            cells
                .iter()
                .map(|cell| {
                    let method = cell.job.method.clone();
                    let (kept, tau, title) = match &cell.report {
                        Ok(r) => (
                            r.top1_kept.map_or("stopped".to_string(), |k| format!("{:.0}%", 100.0 * k)),
                            r.kendall_tau.as_ref().map_or("–".to_string(), |t| {
                                if r.draws > 1 { format!("{:.3} ± {:.3}", t.mean, t.sd) } else { format!("{:.3}", t.mean) }
                            }),
                            format!("{} draws, {} stopped{}", r.draws, r.failed_draws, r.failure.as_ref().map(|f| format!(": {f}")).unwrap_or_default()),
                        ),
                        Err(e) => ("–".to_string(), "–".to_string(), e.clone()),
                    };
                    let pick = method.clone();
                    let origin = cell.report.as_ref().ok().map(|r| r.origin.key());
                    view! {
                        <tr data-method=method.clone() data-origin=origin title=title>
                            <td>
                                <button type="button" class="link" on:click=move |_| chosen.set(Some(pick.clone()))>
                                    <span class="swatch" style=format!("background:{}", css_colour_of(&method))></span>{label_of(&method)}
                                </button>
                            </td>
                            <td class="num top1">{kept}</td>
                            <td class="num tau">{tau}</td>
                        </tr>
                    }
                })
                .collect_view()
        })
    };
    // Which rows the lab's build computed (checked here against this model's exact ranking).
    let shipped_note = move || {
        retrieval.with(|cells| {
            let shipped = cells
                .iter()
                .filter(|c| c.report.as_ref().is_ok_and(|r| r.origin == Origin::Shipped))
                .count();
            (shipped > 0).then(|| {
                format!(
                    ". {shipped} of {} rows are shipped with the lab: computed by its build with the same code and seed, used here because this model's exact ranking of the set agrees with theirs (untick “reuse answers” to compute them here)",
                    cells.len()
                )
            })
        })
    };
    let side_by_side = move || {
        retrieval.with(|cells| {
            let ok: Vec<&RetrievalReport> =
                cells.iter().filter_map(|c| c.report.as_ref().ok()).collect();
            let wanted = chosen.get();
            let report = ok
                .iter()
                .find(|r| Some(&r.method) == wanted.as_ref())
                .or_else(|| ok.first())?;
            let approximate = report.approximate.as_ref().map_or_else(
                || view! { <p class="error">{report.failure.clone().unwrap_or_default()}</p> }.into_any(),
                |a| view! { <ol class="ranking">{ranked_list(a, &report.candidates, &report.exact)}</ol> }.into_any(),
            );
            Some(view! {
                <p class="caption">{format!("query: “{}”", report.query)}</p>
                <div class="rankings">
                    <div>
                        <h3>"exact attention"</h3>
                        <ol class="ranking exact">{ranked_list(&report.exact, &report.candidates, &report.exact)}</ol>
                    </div>
                    <div>
                        <h3>{format!("{} (first draw)", label_of(&report.method))}</h3>
                        {approximate}
                    </div>
                </div>
            })
        })
    };
    view! {
        <label class="field retrieval-set">
            <span>"retrieval set: the query on the first line, then the candidates"</span>
            <textarea
                name="retrieval"
                rows="6"
                prop:value=move || config.with(|c| c.attention.retrieval.clone())
                on:change=on_change
            ></textarea>
        </label>
        {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        <TableScroll label="retrieval ranking kept">
            <table class="leaderboard retrieval-table">
                <caption>{move || config.with(|c| format!("every method at m = {} in the chosen layers; click a method to rank with it below", c.attention.features))}{shipped_note}</caption>
                <thead><tr><th>"method"</th><th>"top-1 kept"</th><th>"Kendall's τ"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </TableScroll>
        {side_by_side}
    }
}
