//! The attention heatmap: an `n × n` matrix as coloured cells in a square plot, with index
//! labels and a colour bar.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use web_sys::HtmlCanvasElement;

use super::{INK, MUTED, css_size, draw_message, rgb};
use crate::chart_geometry::attention::{HeatScale, HeatmapLayout, index_ticks, tick_label};
use crate::charts::{ChartError, backend, prepare};

/// A heatmap of the `n × n` row-major `matrix`: rows are queries i (top to bottom), columns
/// keys j, in a square plot, with a colour bar and three labelled values at the right. Cells
/// missing from a short `matrix` or without a finite value are grey. `tokens`, when the rows
/// are a text's tokens, label the axes' ticks instead of the indices.
pub fn draw_heatmap(
    canvas: &HtmlCanvasElement,
    title: &str,
    matrix: &[f64],
    n: usize,
    scale: HeatScale,
    tokens: &[String],
) -> Result<(), ChartError> {
    let dpr = prepare(canvas, 420);
    let px = |v: f64| (v * dpr).round() as i32;
    let root = backend(canvas)?.into_drawing_area();
    root.fill(&WHITE)?;
    let Some(cells) = n.checked_mul(n).filter(|c| *c > 0) else {
        return draw_message(&root, title, "no finite values", &px);
    };
    let (w, h) = css_size(canvas, dpr);
    let layout = HeatmapLayout::new(w, h);
    let present = &matrix[..cells.min(matrix.len())];
    let max = scale.max_of(present);
    let any_missing = present.len() < cells || present.iter().any(|v| v.is_nan());
    let text = |size: f64| ("sans-serif", px(size)).into_font().color(&INK);
    root.draw(&Text::new(
        title.to_string(),
        (px(layout.left + layout.side / 2.0), px(6.0)),
        ("sans-serif", px(15.0))
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    let (left, top, side) = (px(layout.left), px(layout.top), px(layout.side));
    // Integer cell edges shared by neighbours: no gaps, no overlaps.
    let edge = |k: usize| (k as f64 * f64::from(side) / n as f64).round() as i32;
    for i in 0..n {
        let (y0, y1) = (top + edge(i), top + edge(i + 1));
        if y1 <= y0 {
            continue;
        }
        for j in 0..n {
            let (x0, x1) = (left + edge(j), left + edge(j + 1));
            if x1 <= x0 {
                continue;
            }
            let value = matrix.get(i * n + j).copied().unwrap_or(f64::NAN);
            root.draw(&Rectangle::new(
                [(x0, y0), (x1, y1)],
                rgb(scale.colour(value, max)).filled(),
            ))?;
        }
    }
    root.draw(&Rectangle::new(
        [(left, top), (left + side, top + side)],
        ShapeStyle::from(&RGBColor(120, 120, 120)).stroke_width(1),
    ))?;
    // Index labels at the centres of their cells, and the axes' names.
    let tick_len = px(4.0);
    let grey = ShapeStyle::from(&RGBColor(120, 120, 120)).stroke_width(1);
    for k in index_ticks(n) {
        let centre = (edge(k) + edge(k + 1)) / 2;
        root.draw(&PathElement::new(
            vec![
                (left + centre, top + side),
                (left + centre, top + side + tick_len),
            ],
            grey,
        ))?;
        root.draw(&Text::new(
            tick_label(k, tokens),
            (left + centre, top + side + tick_len + px(2.0)),
            text(11.0).pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
        root.draw(&PathElement::new(
            vec![(left - tick_len, top + centre), (left, top + centre)],
            grey,
        ))?;
        root.draw(&Text::new(
            tick_label(k, tokens),
            (left - tick_len - px(3.0), top + centre),
            text(11.0).pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    root.draw(&Text::new(
        "key j",
        (left + side / 2, top + side + px(22.0)),
        text(12.0).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    root.draw(&Text::new(
        "query i",
        (left - px(38.0), top + side / 2),
        text(12.0)
            .transform(FontTransform::Rotate270)
            .pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    // The colour bar: the scale from bottom to top, with three labelled values.
    let (bar_left, bar_right) = (px(layout.bar_left), px(layout.bar_left + layout.bar_width));
    let steps = 64;
    let bar_y = |p: f64| top + side - (p * f64::from(side)).round() as i32;
    for s in 0..steps {
        let (p0, p1) = (s as f64 / steps as f64, (s + 1) as f64 / steps as f64);
        let colour = scale.colour_at((p0 + p1) / 2.0);
        root.draw(&Rectangle::new(
            [(bar_left, bar_y(p1)), (bar_right, bar_y(p0))],
            rgb(colour).filled(),
        ))?;
    }
    root.draw(&Rectangle::new(
        [(bar_left, top), (bar_right, top + side)],
        grey,
    ))?;
    for (p, label) in scale.bar_labels(max) {
        let y = bar_y(p);
        root.draw(&PathElement::new(
            vec![(bar_right, y), (bar_right + tick_len, y)],
            grey,
        ))?;
        root.draw(&Text::new(
            label,
            (bar_right + tick_len + px(3.0), y),
            text(11.0).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    for (line, caption) in scale.bar_caption(any_missing).into_iter().enumerate() {
        root.draw(&Text::new(
            caption,
            (bar_left, top + side + px(6.0 + 13.0 * line as f64)),
            ("sans-serif", px(10.0))
                .into_font()
                .color(&MUTED)
                .pos(Pos::new(HPos::Left, VPos::Top)),
        ))?;
    }
    root.present()?;
    Ok(())
}
