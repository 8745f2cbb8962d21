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
    fill_cells(canvas, (left, top, side), n, |i, j| {
        let value = matrix.get(i * n + j).copied().unwrap_or(f64::NAN);
        scale.colour(value, max)
    })?;
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

/// Fills the `side × side` device-pixel square at `(left, top)` with the `n × n` cells'
/// colours, as one image: a rectangle per cell (9,216 canvas paths for a 96-token block) kept
/// the page's thread busy for tens of milliseconds on every redraw. Cell `k` covers the pixels
/// from `round(k · side / n)` to `round((k + 1) · side / n)`, as the ticks assume.
fn fill_cells(
    canvas: &HtmlCanvasElement,
    (left, top, side): (i32, i32, i32),
    n: usize,
    colour: impl Fn(usize, usize) -> [u8; 3],
) -> Result<(), ChartError> {
    use wasm_bindgen::JsCast;
    let side_px = usize::try_from(side).unwrap_or(0);
    if side_px == 0 || n == 0 {
        return Ok(());
    }
    // The cell of each pixel along one axis.
    let cell_of: Vec<usize> = (0..side_px)
        .map(|p| ((p as f64 + 0.5) * n as f64 / side_px as f64).floor() as usize)
        .map(|k| k.min(n - 1))
        .collect();
    let colours: Vec<[u8; 3]> = (0..n * n).map(|c| colour(c / n, c % n)).collect();
    let mut rgba = vec![255u8; side_px * side_px * 4];
    for (py, row) in rgba.chunks_exact_mut(side_px * 4).enumerate() {
        let i = cell_of[py];
        for (px, pixel) in row.chunks_exact_mut(4).enumerate() {
            let [r, g, b] = colours[i * n + cell_of[px]];
            pixel[..3].copy_from_slice(&[r, g, b]);
        }
    }
    let context = canvas
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<web_sys::CanvasRenderingContext2d>().ok())
        .ok_or(ChartError::NoContext)?;
    let image = web_sys::ImageData::new_with_u8_clamped_array_and_sh(
        wasm_bindgen::Clamped(&rgba),
        side_px as u32,
        side_px as u32,
    )
    .map_err(|_| ChartError::Draw("cannot make the heatmap's image".into()))?;
    context
        .put_image_data(&image, f64::from(left), f64::from(top))
        .map_err(|_| ChartError::Draw("cannot draw the heatmap's image".into()))
}
