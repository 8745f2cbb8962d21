//! The attention view's charts: heatmaps of attention matrices, distributions per method, and
//! line charts (with or without error bars) on linear or log axes. Their data are plain
//! slices; ranges, ticks, colour maps and layouts come from
//! [`crate::chart_geometry::attention`]. With nothing plottable a chart draws its title and
//! "no finite values" and returns `Ok`.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_canvas::CanvasBackend;
use web_sys::HtmlCanvasElement;

use super::{ChartError, backend, prepare, styled_mesh};
pub use crate::chart_geometry::attention::HeatScale;
use crate::chart_geometry::attention::{
    Axis, Corner, DistributionStats, HeatmapLayout, LEGEND_LINE, LegendPlace, box_labels,
    distribution_axis, error_bar, index_ticks, jitter, legend_corner, legend_fits_right,
    legend_width,
};

type Root = DrawingArea<CanvasBackend, plotters::coord::Shift>;

pub(super) const INK: RGBColor = RGBColor(40, 40, 40);
const MUTED: RGBColor = RGBColor(100, 100, 100);

fn rgb([r, g, b]: [u8; 3]) -> RGBColor {
    RGBColor(r, g, b)
}

/// The canvas's size in CSS pixels after [`prepare`].
pub(super) fn css_size(canvas: &HtmlCanvasElement, dpr: f64) -> (f64, f64) {
    (
        f64::from(canvas.width()) / dpr,
        f64::from(canvas.height()) / dpr,
    )
}

/// A plotters coordinate for an [`Axis`]: its range, with its ticks and light grid lines.
/// (plotters' `WithKeyPoints` does the same but takes no label formatter.)
pub(super) struct KeyAxis {
    range: RangedCoordf64,
    ticks: Vec<f64>,
    light: Vec<f64>,
}

impl KeyAxis {
    pub(super) fn new(axis: &Axis) -> Self {
        Self {
            range: (axis.lo..axis.hi).into(),
            ticks: axis.ticks(),
            light: axis.light_ticks(),
        }
    }
}

impl Ranged for KeyAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.range.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.range()
    }
}

/// The title centred at the top and `message` centred on the canvas: what a chart shows
/// when it has nothing to plot.
pub(super) fn draw_message(
    root: &Root,
    title: &str,
    message: &str,
    px: &impl Fn(f64) -> i32,
) -> Result<(), ChartError> {
    let (w, h) = root.dim_in_pixel();
    root.draw(&Text::new(
        title.to_string(),
        (w as i32 / 2, px(6.0)),
        ("sans-serif", px(15.0))
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    root.draw(&Text::new(
        message.to_string(),
        (w as i32 / 2, h as i32 / 2),
        ("sans-serif", px(13.0))
            .into_font()
            .color(&MUTED)
            .pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    root.present()?;
    Ok(())
}

/// A heatmap of the `n × n` row-major `matrix`: rows are queries i (top to bottom), columns
/// keys j, in a square plot, with a colour bar and three labelled values at the right. Cells
/// missing from a short `matrix` or without a finite value are grey.
pub fn draw_heatmap(
    canvas: &HtmlCanvasElement,
    title: &str,
    matrix: &[f64],
    n: usize,
    scale: HeatScale,
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
            k.to_string(),
            (left + centre, top + side + tick_len + px(2.0)),
            text(11.0).pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
        root.draw(&PathElement::new(
            vec![(left - tick_len, top + centre), (left, top + centre)],
            grey,
        ))?;
        root.draw(&Text::new(
            k.to_string(),
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

/// One series of [`draw_xy`].
pub struct Series<'a> {
    pub label: &'a str,
    pub colour: [u8; 3],
    pub points: &'a [(f64, f64)],
    pub dashed: bool,
    pub markers: bool,
    pub line: bool,
}

/// One series of [`draw_xy_with_errors`]: `(x, y, standard error)`.
pub struct ErrorBarSeries<'a> {
    pub label: &'a str,
    pub colour: [u8; 3],
    pub points: &'a [(f64, f64, f64)],
}

/// A series as drawn: on-axis points in runs without a gap, and error bars.
struct Plotted<'a> {
    label: &'a str,
    colour: RGBColor,
    dashed: bool,
    markers: bool,
    line: bool,
    /// Runs of consecutive plottable points (a left-out point breaks the line).
    runs: Vec<Vec<(f64, f64)>>,
    /// `(x, low, y, high)` on the axes.
    bars: Vec<(f64, f64, f64, f64)>,
}

impl<'a> Plotted<'a> {
    fn new(
        label: &'a str,
        colour: [u8; 3],
        (dashed, markers, line): (bool, bool, bool),
        points: impl Iterator<Item = (f64, f64, Option<f64>)>,
        (log_x, log_y): (bool, bool),
    ) -> Self {
        let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        let mut bars = Vec::new();
        for (x, y, se) in points {
            match (Axis::on_axis(log_x, x), Axis::on_axis(log_y, y)) {
                (Some(ax), Some(ay)) => {
                    if let Some((low, high)) = se.and_then(|se| error_bar(y, se, log_y)) {
                        bars.push((ax, low, ay, high));
                    }
                    if let Some(run) = runs.last_mut() {
                        run.push((ax, ay));
                    }
                }
                _ => {
                    if runs.last().is_some_and(|r| !r.is_empty()) {
                        runs.push(Vec::new());
                    }
                }
            }
        }
        runs.retain(|r| !r.is_empty());
        Self {
            label,
            colour: rgb(colour),
            dashed,
            markers,
            line,
            runs,
            bars,
        }
    }

    fn points(&self) -> impl Iterator<Item = &(f64, f64)> {
        self.runs.iter().flatten()
    }
}

/// Lines and/or markers of each series; non-finite points (and non-positive ones on a log
/// axis) are left out and break the line. A legend right of the plot if there is room, else
/// inside it in the corner that hides the fewest points, on a translucent white background.
/// With nothing to plot, "no finite values" in the middle of the canvas.
pub fn draw_xy(
    canvas: &HtmlCanvasElement,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series<'_>],
    log_x: bool,
    log_y: bool,
) -> Result<(), ChartError> {
    let plotted: Vec<Plotted<'_>> = series
        .iter()
        .map(|s| {
            Plotted::new(
                s.label,
                s.colour,
                (s.dashed, s.markers, s.line),
                s.points.iter().map(|&(x, y)| (x, y, None)),
                (log_x, log_y),
            )
        })
        .collect();
    draw_lines(canvas, title, (x_label, y_label), &plotted, (log_x, log_y))
}

/// [`draw_xy`] with markers and lines, and a vertical error bar y ± se at each point (on a
/// log axis cut at y/100, as a log axis has no zero).
pub fn draw_xy_with_errors(
    canvas: &HtmlCanvasElement,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[ErrorBarSeries<'_>],
    log_x: bool,
    log_y: bool,
) -> Result<(), ChartError> {
    let plotted: Vec<Plotted<'_>> = series
        .iter()
        .map(|s| {
            Plotted::new(
                s.label,
                s.colour,
                (false, true, true),
                s.points.iter().map(|&(x, y, se)| (x, y, Some(se))),
                (log_x, log_y),
            )
        })
        .collect();
    draw_lines(canvas, title, (x_label, y_label), &plotted, (log_x, log_y))
}

fn draw_lines(
    canvas: &HtmlCanvasElement,
    title: &str,
    (x_label, y_label): (&str, &str),
    series: &[Plotted<'_>],
    (log_x, log_y): (bool, bool),
) -> Result<(), ChartError> {
    let dpr = prepare(canvas, 340);
    let px = |v: f64| (v * dpr).round() as i32;
    let root = backend(canvas)?.into_drawing_area();
    root.fill(&WHITE)?;
    let xs = series.iter().flat_map(|s| s.points().map(|p| p.0));
    let ys = series.iter().flat_map(|s| {
        s.points()
            .map(|p| p.1)
            .chain(s.bars.iter().flat_map(|b| [b.1, b.3]))
    });
    let (Some(x_axis), Some(y_axis)) =
        (Axis::around(log_x, xs, 0.04), Axis::around(log_y, ys, 0.06))
    else {
        return draw_message(&root, title, "no finite values", &px);
    };
    let (w, _) = css_size(canvas, dpr);
    let labels: Vec<&str> = series.iter().map(|s| s.label).collect();
    let legend_w = legend_width(&labels);
    let right = legend_fits_right(w, legend_w);
    let plot_root = if right {
        root.split_horizontally(px(w - legend_w - 8.0)).0
    } else {
        root.clone()
    };
    let mut chart = ChartBuilder::on(&plot_root)
        .caption(title, ("sans-serif", px(15.0)).into_font())
        .margin(px(8.0))
        .x_label_area_size(px(40.0))
        .y_label_area_size(px(60.0))
        .build_cartesian_2d(KeyAxis::new(&x_axis), KeyAxis::new(&y_axis))?;
    styled_mesh(
        &mut chart,
        &x_axis.describe(x_label),
        &y_axis.describe(y_label),
        &px,
    )
    .x_label_formatter(&|v| x_axis.label(*v))
    .y_label_formatter(&|v| y_axis.label(*v))
    .draw()?;
    let stroke = px(1.5).max(1) as u32;
    for s in series {
        let style = ShapeStyle::from(&s.colour).stroke_width(stroke);
        chart.draw_series(s.bars.iter().map(|&(x, low, y, high)| {
            ErrorBar::new_vertical(x, low, y, high, style, px(6.0).max(2) as u32)
        }))?;
        if s.line {
            for run in s.runs.iter().filter(|r| r.len() > 1) {
                if s.dashed {
                    chart.draw_series(DashedLineSeries::new(
                        run.iter().copied(),
                        px(6.0).max(2) as u32,
                        px(4.0).max(2) as u32,
                        style,
                    ))?;
                } else {
                    chart.draw_series(LineSeries::new(run.iter().copied(), style))?;
                }
            }
        }
        // A lone point of a line-only series would vanish: mark it.
        let lone = |r: &&Vec<(f64, f64)>| !s.markers && r.len() == 1;
        chart.draw_series(
            s.runs
                .iter()
                .filter(|r| s.markers || lone(r))
                .flatten()
                .map(|p| Circle::new(*p, px(3.0).max(2), s.colour.filled())),
        )?;
    }
    // The legend.
    let (x_range, y_range) = chart.plotting_area().get_pixel_range();
    let height = series.len() as f64 * LEGEND_LINE + 8.0;
    let (lx, ly, place) = if right {
        let x = px(w - legend_w);
        (x, y_range.start, LegendPlace::Right)
    } else {
        let plot_w = f64::from(x_range.end - x_range.start).max(1.0);
        let plot_h = f64::from(y_range.end - y_range.start).max(1.0);
        let fraction = |a: &Axis, v: f64| (v - a.lo) / (a.hi - a.lo);
        let points: Vec<(f64, f64)> = series
            .iter()
            .flat_map(|s| s.points())
            .map(|p| (fraction(&x_axis, p.0), fraction(&y_axis, p.1)))
            .collect();
        let size = (
            f64::from(px(legend_w)) / plot_w,
            f64::from(px(height)) / plot_h,
        );
        let corner = legend_corner(&points, size);
        let inset = px(6.0);
        let x = match corner {
            Corner::TopLeft | Corner::BottomLeft => x_range.start + inset,
            Corner::TopRight | Corner::BottomRight => x_range.end - inset - px(legend_w),
        };
        let y = match corner {
            Corner::TopLeft | Corner::TopRight => y_range.start + inset,
            Corner::BottomLeft | Corner::BottomRight => y_range.end - inset - px(height),
        };
        (x, y, LegendPlace::Inside(corner))
    };
    if matches!(place, LegendPlace::Inside(_)) && !series.is_empty() {
        root.draw(&Rectangle::new(
            [(lx, ly), (lx + px(legend_w), ly + px(height))],
            WHITE.mix(0.8).filled(),
        ))?;
        root.draw(&Rectangle::new(
            [(lx, ly), (lx + px(legend_w), ly + px(height))],
            ShapeStyle::from(&RGBColor(210, 210, 210)).stroke_width(1),
        ))?;
    }
    for (i, s) in series.iter().enumerate() {
        let y = ly + px(4.0 + LEGEND_LINE * i as f64 + LEGEND_LINE / 2.0);
        let (x0, x1) = (lx + px(4.0), lx + px(24.0));
        let style = ShapeStyle::from(&s.colour).stroke_width(stroke);
        if s.line && s.dashed {
            root.draw(&PathElement::new(vec![(x0, y), (x0 + px(7.0), y)], style))?;
            root.draw(&PathElement::new(vec![(x1 - px(7.0), y), (x1, y)], style))?;
        } else if s.line {
            root.draw(&PathElement::new(vec![(x0, y), (x1, y)], style))?;
        }
        if s.markers || !s.line {
            root.draw(&Circle::new(
                ((x0 + x1) / 2, y),
                px(3.0).max(2),
                s.colour.filled(),
            ))?;
        }
        root.draw(&Text::new(
            s.label.to_string(),
            (x1 + px(4.0), y),
            ("sans-serif", px(11.0))
                .into_font()
                .color(&INK)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    root.present()?;
    Ok(())
}
