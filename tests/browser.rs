//! Browser tests (wasm-bindgen-test in headless Chromium and Firefox): the app mounts, computes,
//! fills its table and draws its charts; a chart function draws the data it is given. The
//! computations whose code differs in the workers' build are in tests/browser_worker.rs.
#![cfg(all(target_arch = "wasm32", feature = "page"))]

use leptos::prelude::*;
use plotters::style::RGBColor;
use softmax_kernel_lab::charts::{draw_scatter, estimator_color};
use softmax_kernel_lab::lab::config::Param;
use softmax_kernel_lab::lab::kernel::experiment::run_experiment;
use softmax_kernel_lab::lab::kernel::tasks::Workspace;
use softmax_kernel_lab::lab::pool::handle_request;
use softmax_kernel_lab::numerics::estimators::EstimatorId;
use softmax_kernel_lab::ui::{App, Splits, compute_on_page_without_workers};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, HtmlElement};

mod support;

use support::small_config;

wasm_bindgen_test_configure!(run_in_browser);

fn document() -> web_sys::Document {
    web_sys::window().unwrap().document().unwrap()
}

async fn sleep_ms(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        web_sys::window()
            .unwrap()
            .set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms)
            .unwrap();
    });
    wasm_bindgen_futures::JsFuture::from(promise).await.unwrap();
}

/// The canvas's RGBA bytes.
fn rgba(canvas: &HtmlCanvasElement) -> Vec<u8> {
    let context: CanvasRenderingContext2d = canvas
        .get_context("2d")
        .unwrap()
        .unwrap()
        .dyn_into()
        .unwrap();
    let data = context
        .get_image_data(0.0, 0.0, canvas.width() as f64, canvas.height() as f64)
        .unwrap()
        .data();
    data.to_vec()
}

/// Counts pixels of `canvas` near `rgb` drawn opaque or at the charts' 50 % opacity on white
/// (overlapping dots fall between the two).
fn pixels_near(canvas: &HtmlCanvasElement, rgb: (u8, u8, u8)) -> usize {
    let blend = |c: u8| ((c as u16 + 255) / 2) as u8;
    let half = (blend(rgb.0), blend(rgb.1), blend(rgb.2));
    let data = rgba(canvas);
    data.chunks_exact(4)
        .filter(|p| {
            let d = |a: u8, b: u8| (a as i32 - b as i32).abs();
            let near = |c: (u8, u8, u8)| d(p[0], c.0) + d(p[1], c.1) + d(p[2], c.2) < 40;
            p[3] > 0 && (near(rgb) || near(half))
        })
        .count()
}

/// A 400 × 300 CSS-pixel canvas in the document.
fn new_canvas() -> HtmlCanvasElement {
    let canvas: HtmlCanvasElement = document()
        .create_element("canvas")
        .unwrap()
        .dyn_into()
        .unwrap();
    canvas
        .set_attribute("style", "display: block; width: 400px; height: 300px")
        .unwrap();
    document().body().unwrap().append_child(&canvas).unwrap();
    canvas
}

fn non_white_pixels(canvas: &HtmlCanvasElement) -> usize {
    let data = rgba(canvas);
    data.chunks_exact(4)
        .filter(|p| p[0] < 250 || p[1] < 250 || p[2] < 250)
        .count()
}

#[wasm_bindgen_test]
async fn app_mounts_computes_and_draws_every_chart() {
    let host: HtmlElement = document()
        .create_element("div")
        .unwrap()
        .dyn_into()
        .unwrap();
    host.set_attribute("style", "width: 1200px").unwrap();
    document().body().unwrap().append_child(&host).unwrap();
    let config = small_config();
    let expected = run_experiment(&config).unwrap();
    // This test page has no worker files: the pool runs its tasks here instead (the lab's own
    // page never installs this runner, so its module does not contain the computation).
    let workspace = RefCell::new(Workspace::new());
    compute_on_page_without_workers(Rc::new(move |bytes: &[u8]| {
        handle_request(&mut workspace.borrow_mut(), bytes)
    }));
    let handle = leptos::mount::mount_to(
        host.clone(),
        move || view! { <App initial=config.clone() splits=Splits::linked()/> },
    );

    let status = || {
        host.query_selector(".app")
            .unwrap()
            .and_then(|e| e.get_attribute("data-status"))
            .unwrap_or_default()
    };
    let mut waited = 0;
    while status() != "ready" && waited < 60_000 {
        assert_ne!(status(), "error", "the app reported an error");
        sleep_ms(50).await;
        waited += 50;
    }
    assert_eq!(status(), "ready", "not ready after {waited} ms");

    // The table shows the medians that the pure computation gives, one row per estimator.
    for summary in &expected.summaries {
        let cell = host
            .query_selector(&format!(
                "tr[data-estimator='{}'] [data-metric='median-mse']",
                summary.estimator.id()
            ))
            .unwrap()
            .expect("a row per estimator");
        let shown: f64 = cell.text_content().unwrap().trim().parse().unwrap();
        assert!(
            (shown / summary.median_mse - 1.0).abs() < 1e-4,
            "{} shows {shown}, computed {}",
            summary.estimator.id(),
            summary.median_mse
        );
    }

    // Every chart has ink: each scatter panel in its estimator's colour, both boxplots.
    for summary in &expected.summaries {
        let estimator = summary.estimator;
        let canvas: HtmlCanvasElement = host
            .query_selector(&format!("canvas[data-chart='scatter-{}']", estimator.id()))
            .unwrap()
            .unwrap()
            .dyn_into()
            .unwrap();
        let RGBColor(r, g, b) = estimator_color(estimator);
        assert!(
            pixels_near(&canvas, (r, g, b)) > 50,
            "{estimator:?} panel has no points"
        );
    }
    for chart in ["mse", "max-rel-err"] {
        let canvas: HtmlCanvasElement = host
            .query_selector(&format!("canvas[data-chart='{chart}']"))
            .unwrap()
            .unwrap()
            .dyn_into()
            .unwrap();
        assert!(non_white_pixels(&canvas) > 1000, "{chart} boxplot is blank");
    }
    drop(handle);
}

#[wasm_bindgen_test]
fn scatter_chart_draws_in_the_estimators_colour_and_counts_clipped_points() {
    let canvas = new_canvas();
    let mut config = small_config();
    config.set(Param::Estimators, "hcexp-var").unwrap();
    let result = run_experiment(&config).unwrap();
    let series = &result.scatter[0];
    let RGBColor(r, g, b) = estimator_color(series.estimates.estimator);
    let before = pixels_near(&canvas, (r, g, b));
    let layout = draw_scatter(&canvas, series, Some(3)).unwrap();
    assert_eq!(before, 0);
    assert!(pixels_near(&canvas, (r, g, b)) > 100);
    assert!(layout.outside <= series.estimates.log_true.len() / 10 + 1);
    // A click on a point maps back to that pair (or one drawn on the same pixel).
    let e = &series.estimates;
    let target = layout.position(e.log_true[3], e.estimates[3]);
    let picked = layout
        .nearest_pair(series, target.0, target.1)
        .expect("a pair under the click");
    let at = layout.position(e.log_true[picked], e.estimates[picked]);
    assert!((at.0 - target.0).abs() < 1.0 && (at.1 - target.1).abs() < 1.0);
    assert_eq!(layout.nearest_pair(series, -500.0, -500.0), None);
    // The backing store follows the CSS size × devicePixelRatio.
    let dpr = web_sys::window().unwrap().device_pixel_ratio();
    assert_eq!(canvas.width(), (400.0 * dpr).round() as u32);
}

/// A signed estimator's scatter: random Fourier features at the paper's norms go negative,
/// and the panel extends its axis below 0 to show them (linear axes) instead of hiding them.
#[wasm_bindgen_test]
fn negative_estimates_are_drawn_below_zero() {
    let canvas = new_canvas();
    let mut config = small_config();
    config.set(Param::Estimators, "rff").unwrap();
    let result = run_experiment(&config).unwrap();
    let series = &result.scatter[0];
    let negative = series
        .estimates
        .estimates
        .iter()
        .filter(|e| e.negative)
        .count();
    assert!(
        negative > 0,
        "RFF at the paper's norms has negative estimates"
    );
    let layout = draw_scatter(&canvas, series, None).unwrap();
    assert!(!layout.log_axes);
    let RGBColor(r, g, b) = estimator_color(EstimatorId::from_id("rff").unwrap());
    assert!(pixels_near(&canvas, (r, g, b)) > 50);
    // A negative estimate sits below the point of a zero estimate of the same pair.
    let e = &series.estimates;
    let i = e.estimates.iter().position(|v| v.negative).unwrap();
    let below = layout.position(e.log_true[i], e.estimates[i]);
    let zero = layout.position(
        e.log_true[i],
        softmax_kernel_lab::numerics::logspace::SignedLog::ZERO,
    );
    assert!(below.1 >= zero.1, "{below:?} vs {zero:?}");
}

/// The attention view's five charts draw realistic data, including NaN, ±inf, empty and
/// all-equal entries, without failing; `draw_xy` with nothing finite says so and returns Ok.
#[wasm_bindgen_test]
fn attention_charts_draw_realistic_and_degenerate_data() {
    use softmax_kernel_lab::charts::{
        Distribution, ErrorBarSeries, HeatScale, Series, draw_distributions, draw_heatmap, draw_xy,
        draw_xy_with_errors,
    };

    let colours: [[u8; 3]; 4] = [[0, 114, 178], [213, 94, 0], [0, 158, 115], [204, 121, 167]];
    // Softmax rows over n = 48 keys, an estimate of them, and their difference with a NaN.
    let n = 48;
    let mut p = vec![0.0; n * n];
    for i in 0..n {
        let scores: Vec<f64> = (0..n)
            .map(|j| -((i as f64 - j as f64) / 6.0).powi(2))
            .collect();
        let total: f64 = scores.iter().map(|s| s.exp()).sum();
        for j in 0..n {
            p[i * n + j] = scores[j].exp() / total;
        }
    }
    let estimate: Vec<f64> = p
        .iter()
        .enumerate()
        .map(|(k, v)| v * (1.0 + 0.3 * ((k as f64) * 0.7).sin()))
        .collect();
    let mut difference: Vec<f64> = estimate.iter().zip(&p).map(|(a, b)| a - b).collect();
    difference[5] = f64::NAN;
    difference[6] = f64::INFINITY;
    for (matrix, scale) in [
        (&p, HeatScale::Probability),
        (&estimate, HeatScale::Probability),
        (&difference, HeatScale::Difference),
    ] {
        let canvas = new_canvas();
        draw_heatmap(&canvas, "attention P", matrix, n, scale, &[]).unwrap();
        assert!(
            non_white_pixels(&canvas) > 5000,
            "{scale:?} heatmap is blank"
        );
    }
    // Degenerate heatmaps: empty, short and all-NaN matrices draw without failing.
    let canvas = new_canvas();
    draw_heatmap(&canvas, "empty", &[], 0, HeatScale::Probability, &[]).unwrap();
    draw_heatmap(
        &canvas,
        "short",
        &[0.5, 0.5],
        96,
        HeatScale::Probability,
        &[],
    )
    .unwrap();
    draw_heatmap(
        &canvas,
        "NaN",
        &[f64::NAN; 9],
        3,
        HeatScale::Difference,
        &[],
    )
    .unwrap();
    // Token labels, one longer than the axis holds, and fewer tokens than rows.
    let tokens: Vec<String> = ["[CLS]", "transformers", "[SEP]"]
        .map(String::from)
        .to_vec();
    draw_heatmap(
        &canvas,
        "tokens",
        &[0.2; 16],
        4,
        HeatScale::Probability,
        &tokens,
    )
    .unwrap();
    assert!(non_white_pixels(&canvas) > 1000);

    // Fourteen methods' per-row total variations and output errors (log), one with NaN and
    // non-positive values, one empty, one all equal.
    let names = [
        "positive random features",
        "trigonometric RFF",
        "orthogonal PRF",
        "hyperbolic PRF",
        "Nyström",
        "Performer FAVOR+",
        "linear (elu + 1)",
        "cosFormer",
        "random Maclaurin",
        "tensor sketch",
        "quasi-Monte Carlo PRF",
        "learned A",
        "optimal A",
        "empty",
    ];
    let values: Vec<Vec<f64>> = (0..14)
        .map(|m| match m {
            13 => Vec::new(),
            12 => vec![0.25; 96],
            3 => (0..96)
                .map(|i| match i % 10 {
                    0 => f64::NAN,
                    1 => -0.1,
                    2 => 0.0,
                    _ => 0.05 + 0.01 * f64::from(i),
                })
                .collect(),
            _ => (0..96)
                .map(|i| 0.02 * f64::from(m + 1) * (1.0 + 0.5 * (f64::from(i) * 1.3).sin()))
                .collect(),
        })
        .collect();
    for log_y in [false, true] {
        let entries: Vec<Distribution<'_>> = names
            .iter()
            .zip(&values)
            .enumerate()
            .map(|(m, (label, values))| Distribution {
                label,
                colour: colours[m % 4],
                values,
                note: (m == 3).then_some("12 bad rows"),
            })
            .collect();
        let canvas = new_canvas();
        canvas
            .set_attribute("style", "display: block; width: 600px; height: 360px")
            .unwrap();
        draw_distributions(&canvas, "total variation per row", "TV", &entries, log_y).unwrap();
        assert!(
            non_white_pixels(&canvas) > 3000,
            "distributions (log {log_y})"
        );
    }
    let canvas = new_canvas();
    let nothing = [f64::NAN, f64::INFINITY];
    let empty = [Distribution {
        label: "nothing",
        colour: colours[0],
        values: &nothing,
        note: None,
    }];
    draw_distributions(&canvas, "no data", "TV", &empty, true).unwrap();
    draw_distributions(&canvas, "no entries", "TV", &[], false).unwrap();

    // Singular values by index (linear x, log y), 14 series and softmax's dashed, one with
    // zeros and NaN; entropy against τ (log x); bias² against variance (log-log markers).
    let singular: Vec<Vec<(f64, f64)>> = (0..15)
        .map(|s| {
            (0..96)
                .map(|i| {
                    let v = (-(f64::from(i)) / (4.0 + f64::from(s))).exp();
                    let v = if s == 2 && i % 7 == 0 { f64::NAN } else { v };
                    (f64::from(i + 1), if s == 3 && i > 40 { 0.0 } else { v })
                })
                .collect()
        })
        .collect();
    let series: Vec<Series<'_>> = singular
        .iter()
        .enumerate()
        .map(|(s, points)| Series {
            label: if s == 14 { "softmax" } else { names[s] },
            colour: if s == 14 { [0, 0, 0] } else { colours[s % 4] },
            points,
            dashed: s == 14,
            markers: false,
            line: true,
        })
        .collect();
    let canvas = new_canvas();
    draw_xy(
        &canvas,
        "singular values",
        "index",
        "σ",
        &series,
        false,
        true,
    )
    .unwrap();
    assert!(non_white_pixels(&canvas) > 3000, "singular values");
    let wide = new_canvas();
    wide.set_attribute("style", "display: block; width: 800px; height: 340px")
        .unwrap();
    draw_xy(&wide, "singular values", "index", "σ", &series, false, true).unwrap();
    assert!(
        non_white_pixels(&wide) > 3000,
        "singular values, legend on the right"
    );
    let taus = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0];
    let entropy: Vec<(f64, f64)> = taus
        .iter()
        .map(|t| (*t, (48.0f64).ln() * t / (1.0 + t)))
        .collect();
    let gap: Vec<(f64, f64)> = taus.iter().map(|t| (*t, 1.0 / (1.0 + t))).collect();
    let canvas = new_canvas();
    draw_xy(
        &canvas,
        "entropy and spectral gap against τ",
        "temperature τ",
        "nats",
        &[
            Series {
                label: "entropy",
                colour: colours[0],
                points: &entropy,
                dashed: false,
                markers: true,
                line: true,
            },
            Series {
                label: "spectral gap",
                colour: colours[1],
                points: &gap,
                dashed: true,
                markers: true,
                line: true,
            },
        ],
        true,
        false,
    )
    .unwrap();
    assert!(non_white_pixels(&canvas) > 2000, "entropy against τ");
    let bias_variance: Vec<[(f64, f64); 1]> = (0..14)
        .map(|m| [(1e-6 * 3f64.powi(m), 1e-4 / (1.0 + f64::from(m)))])
        .collect();
    let markers: Vec<Series<'_>> = bias_variance
        .iter()
        .enumerate()
        .map(|(m, points)| Series {
            label: names[m],
            colour: colours[m % 4],
            points,
            dashed: false,
            markers: true,
            line: false,
        })
        .collect();
    let canvas = new_canvas();
    draw_xy(
        &canvas,
        "bias² against variance",
        "variance",
        "bias²",
        &markers,
        true,
        true,
    )
    .unwrap();
    assert!(non_white_pixels(&canvas) > 1500, "bias against variance");

    // Output error against the feature budget D with error bars (log-log), one bar reaching
    // below zero and one point NaN.
    let budgets: [f64; 6] = [16.0, 32.0, 64.0, 128.0, 256.0, 512.0];
    let errors: Vec<Vec<(f64, f64, f64)>> = (0..3)
        .map(|m| {
            budgets
                .iter()
                .map(|d| {
                    let y = (1.0 + f64::from(m)) / d.sqrt();
                    (*d, y, if *d == 16.0 { 2.0 * y } else { 0.2 * y })
                })
                .chain([(1024.0, f64::NAN, 0.1)])
                .collect()
        })
        .collect();
    let error_series: Vec<ErrorBarSeries<'_>> = errors
        .iter()
        .enumerate()
        .map(|(m, points)| ErrorBarSeries {
            label: names[m],
            colour: colours[m],
            points,
        })
        .collect();
    let canvas = new_canvas();
    draw_xy_with_errors(
        &canvas,
        "output error against D",
        "features D",
        "|o − ô|",
        &error_series,
        true,
        true,
    )
    .unwrap();
    assert!(non_white_pixels(&canvas) > 2000, "output error against D");

    // Nothing finite: a message, and Ok.
    let canvas = new_canvas();
    let nan = [(f64::NAN, 1.0), (1.0, f64::INFINITY)];
    let non_positive = [(-1.0, 1.0)];
    let empty_series = [
        Series {
            label: "empty",
            colour: colours[0],
            points: &[],
            dashed: false,
            markers: true,
            line: true,
        },
        Series {
            label: "NaN",
            colour: colours[1],
            points: &nan,
            dashed: true,
            markers: false,
            line: true,
        },
        Series {
            label: "≤ 0",
            colour: colours[2],
            points: &non_positive,
            dashed: false,
            markers: true,
            line: false,
        },
    ];
    draw_xy(&canvas, "nothing", "x", "y", &empty_series, true, true).unwrap();
    assert!(non_white_pixels(&canvas) > 50, "the message is drawn");
    draw_xy(&canvas, "no series", "x", "y", &[], false, false).unwrap();
    draw_xy_with_errors(&canvas, "no series", "x", "y", &[], true, true).unwrap();
}
