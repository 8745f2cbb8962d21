//! The attention view's temperature charts: row entropy and spectral gap against τ.

use leptos::html::Canvas;
use leptos::prelude::*;

use super::figure::draw_when;
use super::{Figure, chart_error};
use crate::charts::{Series, describe, draw_xy};
use crate::lab::attention::report::TemperatureReport;
use crate::lab::page::formulas;
use crate::numerics::attention::methods::MethodId;

/// Row entropy and spectral gap against the temperature.
#[component]
pub(super) fn TemperatureCharts(
    temperature: RwSignal<Option<Result<TemperatureReport, String>>, LocalStorage>,
) -> impl IntoView {
    let entropy: NodeRef<Canvas> = NodeRef::new();
    let gap: NodeRef<Canvas> = NodeRef::new();
    let error = draw_when(temperature, move |report| {
        let points = |values: &[Option<f64>]| -> Vec<(f64, f64)> {
            report
                .temperatures
                .iter()
                .zip(values)
                .filter_map(|(t, v)| v.map(|v| (*t, v)))
                .collect()
        };
        let entropy_points: Vec<Vec<(f64, f64)>> =
            report.curves.iter().map(|c| points(&c.entropy)).collect();
        let gap_points: Vec<Vec<(f64, f64)>> =
            report.curves.iter().map(|c| points(&c.gap)).collect();
        let labels: Vec<String> = report
            .curves
            .iter()
            .map(|c| {
                c.method
                    .map_or("softmax".to_string(), |m| m.id().to_string())
            })
            .collect();
        fn series<'a>(
            report: &'a TemperatureReport,
            pts: &'a [Vec<(f64, f64)>],
            labels: &'a [String],
        ) -> Vec<Series<'a>> {
            report
                .curves
                .iter()
                .zip(pts)
                .zip(labels)
                .map(|((c, p), label)| Series {
                    label: label.as_str(),
                    colour: c.method.map_or([0, 0, 0], MethodId::colour),
                    points: p,
                    dashed: c.method.is_none(),
                    markers: true,
                    line: true,
                })
                .collect()
        }
        if let Some(c) = entropy.get() {
            describe(
                &c,
                &format!(
                    "mean row entropy of softmax from τ = 0.25 to 16: {}",
                    report.curves[0]
                        .entropy
                        .iter()
                        .map(|e| e.map_or("–".to_string(), |e| format!("{e:.2}")))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            draw_xy(
                &c,
                "mean row entropy",
                "temperature τ",
                "entropy (nats)",
                &series(report, &entropy_points, &labels),
                true,
                false,
            )
            .map_err(|e| e.to_string())?;
        }
        if let Some(c) = gap.get() {
            describe(
                &c,
                &format!(
                    "spectral gap of softmax from τ = 0.25 to 16: {}",
                    report.curves[0]
                        .gap
                        .iter()
                        .map(|e| e.map_or("–".to_string(), |e| format!("{e:.3}")))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            draw_xy(
                &c,
                "spectral gap 1 − |λ₂|",
                "temperature τ",
                "gap",
                &series(report, &gap_points, &labels),
                true,
                false,
            )
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    view! {
        <Figure class="temperature" title="Concentration against temperature (seed 001)" formula=formulas::ATTENTION_TEMPERATURE notice="softmax's entropy and gap grow with τ (seed 001's claim); seed 001 says LLN with moment matching follows softmax: see whether it does on this data; signed maps have no entropy where a weight is negative (missing points).">
            <div class="pair">
                <canvas node_ref=entropy class="chart" data-chart="entropy"></canvas>
                <canvas node_ref=gap class="chart" data-chart="spectral-gap"></canvas>
            </div>
            {chart_error(error)}
        </Figure>
    }
}
