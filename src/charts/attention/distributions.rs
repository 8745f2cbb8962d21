//! The distributions chart: one box per method (quartiles, 5–95 % whiskers, median, every
//! value as a jittered dot), with labels and notes under the boxes.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use web_sys::HtmlCanvasElement;

use super::{INK, KeyAxis, MUTED, css_size, draw_message, rgb};
use crate::chart_geometry::attention::{DistributionStats, box_labels, distribution_axis, jitter};
use crate::charts::{ChartError, backend, prepare, styled_mesh};

/// One box of [`draw_distributions`].
pub struct Distribution<'a> {
    pub label: &'a str,
    pub colour: [u8; 3],
    pub values: &'a [f64],
    /// Small text under the label ("12 bad rows").
    pub note: Option<&'a str>,
}

/// One box per entry: quartiles, whiskers at the 5 % and 95 % quantiles, the median, and
/// every value as a faint dot with a deterministic jitter; the label (vertical if the
/// labels do not fit side by side) and the note under each box. On a log axis values ≤ 0
/// are left out and counted in the note, as are non-finite values everywhere. The axis
/// holds every box's 5–95 % range; values beyond it are counted at an arrow on its edge.
pub fn draw_distributions(
    canvas: &HtmlCanvasElement,
    title: &str,
    y_label: &str,
    entries: &[Distribution<'_>],
    log_y: bool,
) -> Result<(), ChartError> {
    let dpr = prepare(canvas, 360);
    let px = |v: f64| (v * dpr).round() as i32;
    let root = backend(canvas)?.into_drawing_area();
    root.fill(&WHITE)?;
    let stats: Vec<DistributionStats> = entries
        .iter()
        .map(|e| DistributionStats::new(e.values, log_y))
        .collect();
    let Some(axis) = distribution_axis(&stats, log_y) else {
        return draw_message(&root, title, "no finite values", &px);
    };
    let (w, h) = css_size(canvas, dpr);
    let k = entries.len();
    let (margin, y_area) = (8.0, 64.0);
    let slot = (w - 2.0 * margin - y_area) / k as f64;
    let labels: Vec<&str> = entries.iter().map(|e| e.label).collect();
    let notes: Vec<Option<String>> = stats
        .iter()
        .zip(entries)
        .map(|(s, e)| s.note(e.note))
        .collect();
    let labels = box_labels(&labels, &notes, slot, 0.35 * h);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", px(15.0)).into_font())
        .margin(px(margin))
        .x_label_area_size(px(labels.height))
        .y_label_area_size(px(y_area))
        .build_cartesian_2d(-0.5..k as f64 - 0.5, KeyAxis::new(&axis))?;
    styled_mesh(&mut chart, "", &axis.describe(y_label), &px)
        .disable_x_mesh()
        .x_labels(0)
        .x_label_formatter(&|_| String::new())
        .y_label_formatter(&|v| axis.label(*v))
        .draw()?;
    let stroke = px(1.5).max(1) as u32;
    let clamp = |v: f64| v.clamp(axis.lo, axis.hi);
    let dot = px(1.8).max(1);
    let arrow = px(4.0).max(2);
    let small = |colour: &RGBColor| ("sans-serif", px(10.0)).into_font().color(colour);
    for (i, (entry, stat)) in entries.iter().zip(&stats).enumerate() {
        let x = i as f64;
        let colour = rgb(entry.colour);
        let line = ShapeStyle::from(&colour).stroke_width(stroke);
        let half = 0.3;
        chart.draw_series(
            stat.values
                .iter()
                .enumerate()
                .filter(|(_, v)| axis.contains(**v))
                .map(|(j, v)| {
                    Circle::new(
                        (x + 1.2 * half * jitter(j), *v),
                        dot,
                        colour.mix(0.3).filled(),
                    )
                }),
        )?;
        if let Some([q05, q25, median, q75, q95]) = stat.quantiles.map(|q| q.map(clamp)) {
            chart.draw_series([
                Rectangle::new(
                    [(x - half, q25), (x + half, q75)],
                    colour.mix(0.18).filled(),
                ),
                Rectangle::new([(x - half, q25), (x + half, q75)], line),
            ])?;
            let segments = [
                [(x, q75), (x, q95)],
                [(x, q25), (x, q05)],
                [(x - half / 2.0, q95), (x + half / 2.0, q95)],
                [(x - half / 2.0, q05), (x + half / 2.0, q05)],
            ];
            chart.draw_series(
                segments
                    .into_iter()
                    .map(|s| PathElement::new(s.to_vec(), line)),
            )?;
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(x - half, median), (x + half, median)],
                ShapeStyle::from(&BLACK).stroke_width(stroke + 1),
            )))?;
        }
        // Values beyond the axis: an arrow on its edge with their count.
        let (below, above) = stat.beyond(&axis);
        for (count, edge, up) in [(above, axis.hi, true), (below, axis.lo, false)] {
            if count == 0 {
                continue;
            }
            let (cx, cy) = chart.backend_coord(&(x, edge));
            let (tip, base) = if up {
                (cy + px(2.0), cy + px(2.0) + 2 * arrow)
            } else {
                (cy - px(2.0), cy - px(2.0) - 2 * arrow)
            };
            root.draw(&Polygon::new(
                vec![(cx, tip), (cx + arrow, base), (cx - arrow, base)],
                colour.filled(),
            ))?;
            root.draw(&Text::new(
                count.to_string(),
                (cx + arrow + px(2.0), (tip + base) / 2),
                small(&INK).pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
        }
        let (cx, bottom) = chart.backend_coord(&(x, axis.lo));
        let note = labels.notes.get(i).cloned().flatten();
        let label = labels.labels.get(i).cloned().unwrap_or_default();
        if labels.rotated {
            // Label and note as two columns reading upwards, ending just under the plot.
            let shift = if note.is_some() { px(6.0) } else { 0 };
            root.draw(&Text::new(
                label,
                (cx - shift, bottom + px(6.0)),
                ("sans-serif", px(11.0))
                    .into_font()
                    .color(&INK)
                    .transform(FontTransform::Rotate270)
                    .pos(Pos::new(HPos::Right, VPos::Center)),
            ))?;
            if let Some(note) = note {
                root.draw(&Text::new(
                    note,
                    (cx + shift, bottom + px(6.0)),
                    small(&MUTED)
                        .transform(FontTransform::Rotate270)
                        .pos(Pos::new(HPos::Right, VPos::Center)),
                ))?;
            }
        } else {
            root.draw(&Text::new(
                label,
                (cx, bottom + px(6.0)),
                ("sans-serif", px(11.0))
                    .into_font()
                    .color(&INK)
                    .pos(Pos::new(HPos::Center, VPos::Top)),
            ))?;
            if let Some(note) = note {
                root.draw(&Text::new(
                    note,
                    (cx, bottom + px(21.0)),
                    small(&MUTED).pos(Pos::new(HPos::Center, VPos::Top)),
                ))?;
            }
        }
    }
    root.present()?;
    Ok(())
}
