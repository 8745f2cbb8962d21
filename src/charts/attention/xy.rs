//! The attention view's line charts: series as lines and/or markers, optionally with error
//! bars, on linear or log axes, with a legend beside the plot or in its emptiest corner.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use web_sys::HtmlCanvasElement;

use super::{INK, KeyAxis, css_size, draw_message, rgb};
use crate::chart_geometry::attention::{
    Axis, Corner, LEGEND_LINE, LegendPlace, error_bar, legend_corner, legend_fits_right,
    legend_width,
};
use crate::charts::{ChartError, backend, prepare, styled_mesh};

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

    /// A line series as drawn.
    fn of_series(s: &Series<'a>, axes: (bool, bool)) -> Self {
        Self::new(
            s.label,
            s.colour,
            (s.dashed, s.markers, s.line),
            s.points.iter().map(|&(x, y)| (x, y, None)),
            axes,
        )
    }

    /// Points with error bars as drawn, joined by a line or not.
    fn of_errors(s: &ErrorBarSeries<'a>, line: bool, axes: (bool, bool)) -> Self {
        Self::new(
            s.label,
            s.colour,
            (false, true, line),
            s.points.iter().map(|&(x, y, se)| (x, y, Some(se))),
            axes,
        )
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
        .map(|s| Plotted::of_series(s, (log_x, log_y)))
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
        .map(|s| Plotted::of_errors(s, true, (log_x, log_y)))
        .collect();
    draw_lines(canvas, title, (x_label, y_label), &plotted, (log_x, log_y))
}

/// [`draw_xy`]'s lines and [`draw_xy_with_errors`]'s points with error bars on one chart
/// (the language model's per-layer chart: the bars as they come, the exact perplexity as a
/// line).
pub fn draw_xy_mixed(
    canvas: &HtmlCanvasElement,
    title: &str,
    (x_label, y_label): (&str, &str),
    lines: &[Series<'_>],
    errors: &[ErrorBarSeries<'_>],
    log_x: bool,
    log_y: bool,
) -> Result<(), ChartError> {
    let plotted: Vec<Plotted<'_>> = errors
        .iter()
        .map(|s| Plotted::of_errors(s, false, (log_x, log_y)))
        .chain(lines.iter().map(|s| Plotted::of_series(s, (log_x, log_y))))
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
