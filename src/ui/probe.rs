//! The single-pair probe: pick a pair (click a scatter point, or type two vectors) and see the
//! distribution of T independent estimates beside Lemma 3.1.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use leptos::html::Canvas;
use leptos::prelude::*;

use super::attention::resize_counter;
use super::export::PngButton;

use super::controls::NumberControl;
use super::pool::{ProbeRunner, Ticket};
use crate::charts::{PROBE_ROW_HEIGHT, ProbeEntry, describe, draw_probe, probe_grid};
use crate::lab::config::{ExperimentConfig, Param};
use crate::lab::kernel::experiment::{EstimatorId, ExperimentResult};
use crate::lab::kernel::tasks::ProbeRequest;
use crate::lab::pool::ScatterPairAsk;
use crate::numerics::probe::{ProbeResult, probe_draws};

/// Longest vector the probe form accepts.
const MAX_TYPED_DIMENSION: usize = 512;

/// Parses `"1, 2.5 -3"` into numbers; names `which` vector in its messages.
fn parse_vector(which: &str, text: &str) -> Result<Vec<f64>, String> {
    let parts: Vec<&str> = text
        .split(|c: char| c == ',' || c.is_whitespace() || c == ';')
        .filter(|s| !s.is_empty())
        .collect();
    if parts.is_empty() {
        return Err(format!("{which}: type at least one number"));
    }
    if parts.len() > MAX_TYPED_DIMENSION {
        return Err(format!(
            "{which}: at most {MAX_TYPED_DIMENSION} components (got {})",
            parts.len()
        ));
    }
    parts
        .iter()
        .map(|p| {
            p.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && v.abs() <= 1e3)
                .ok_or_else(|| {
                    let shown: String = p.chars().take(16).collect();
                    format!("{which}: \"{shown}\" is not a number from -1000 to 1000")
                })
        })
        .collect()
}

/// Which pair the probe examines.
#[derive(Clone, Debug, PartialEq)]
enum ProbedPair {
    /// Pair `index` of the scatter dataset, with that dataset's A.
    Dataset(usize),
    /// Typed vectors; A from the pair itself (its components as means, variance 0).
    Typed(Vec<f64>, Vec<f64>),
}

/// What the probe computed: a description of the pair and one result per estimator.
#[derive(Clone, Debug, PartialEq)]
struct ProbeView {
    description: String,
    results: Vec<(EstimatorId, ProbeResult)>,
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|c| c * c).sum::<f64>().sqrt()
}

/// Gaussians one probe may draw over all its estimators ([`probe_draws`]): a few seconds in a
/// worker.
const PROBE_DRAW_LIMIT: f64 = 3e8;

/// What to ask the workers for one probe: the description and one request per estimator.
type PreparedProbe = (String, Vec<(EstimatorId, ProbeRequest)>);

/// Checks a probed pair before any request: a dataset pair must exist, typed vectors must have
/// one dimension.
fn check_pair(pair: &ProbedPair, n: usize) -> Result<(), String> {
    match pair {
        ProbedPair::Dataset(index) if *index >= n => Err(format!(
            "pair {index} does not exist: the scatter dataset has n = {n} pairs (0 to {})",
            n.saturating_sub(1)
        )),
        ProbedPair::Typed(x, y) if x.len() != y.len() => Err(format!(
            "x has {} components and y has {}: they need the same dimension",
            x.len(),
            y.len()
        )),
        _ => Ok(()),
    }
}

/// The probe's requests for the pair `(x, y)`: pair `dataset_index` of the scatter dataset
/// (with the result's fit), or a typed pair for `None` (the worker fits the estimators to it).
fn prepare_probe(
    result: &ExperimentResult,
    (x, y): (Vec<f64>, Vec<f64>),
    dataset_index: Option<usize>,
    trials: usize,
) -> Result<PreparedProbe, String> {
    let config = &result.config;
    let typed = dataset_index.is_none();
    let description = match dataset_index {
        Some(index) => format!("pair {index} of the scatter dataset, with that dataset's A"),
        None => "the typed pair, with A from its own components (means = the pair, variance 0)"
            .to_string(),
    };
    let dot: f64 = x.iter().zip(&y).map(|(p, q)| p * q).sum();
    let description = format!(
        "{description}: d = {}, |x| = {:.3}, |y| = {:.3}, x·y = {:.3}, SM = {:.4e}; {} estimates, m = {}",
        x.len(),
        norm(&x),
        norm(&y),
        dot,
        dot.exp(),
        trials,
        config.m
    );
    // A typed pair is its own one-pair dataset: the worker fits the estimators to it (means =
    // the pair, variance 0), as `kernel-lab pair` does.
    let requests: Vec<_> = result
        .scatter
        .iter()
        .map(|series| {
            let estimator = series.estimates.estimator;
            let request = ProbeRequest {
                estimator,
                fit: series.estimates.fit.clone(),
                x: x.clone(),
                y: y.clone(),
                m: config.m,
                trials,
                seed: config.seed,
                coupling: config.coupling,
                fit_to_pair: typed.then(|| config.estimator_params()),
            };
            (estimator, request)
        })
        .collect();
    let draws: f64 = requests.iter().map(|(_, r)| probe_draws(r)).sum();
    if draws > PROBE_DRAW_LIMIT {
        return Err(format!(
            "the probe would draw {draws:.1e} Gaussians (trials × m per estimator, × d where the full ω is needed: GERF, a complex A, a coupling other than i.i.d.), above its limit of {PROBE_DRAW_LIMIT:.0e}: lower trials (or m)"
        ));
    }
    Ok((description, requests))
}

/// Where one probe's outcome goes: the panel's signals. (A newer probe's ticket supersedes
/// this one's, and the pool then delivers none of its answers.)
#[derive(Clone, Copy)]
struct ProbeSink {
    set_probing: WriteSignal<bool>,
    set_view_data: WriteSignal<Option<Result<Arc<ProbeView>, String>>>,
}

impl ProbeSink {
    /// Shows `message` instead of the probe (its other answers then never complete it).
    fn fail(&self, message: String) {
        self.set_probing.set(false);
        self.set_view_data.set(Some(Err(message)));
    }

    fn show(&self, view: ProbeView) {
        self.set_probing.set(false);
        self.set_view_data.set(Some(Ok(Arc::new(view))));
    }
}

/// Sends the probe of `pair` ([`prepare_probe`]) to the workers, one request per estimator,
/// and shows the results once every answer is in.
fn run_probe(
    runner: ProbeRunner,
    ticket: Ticket,
    result: &ExperimentResult,
    pair: (Vec<f64>, Vec<f64>),
    dataset_index: Option<usize>,
    trials: usize,
    sink: ProbeSink,
) {
    let (description, requests) = match prepare_probe(result, pair, dataset_index, trials) {
        Ok(prepared) => prepared,
        Err(message) => return sink.fail(message),
    };
    let count = requests.len();
    // Each answer in its request's slot: the results keep the estimators' order.
    let answers = Rc::new(RefCell::new(vec![None; count]));
    for (slot, (estimator, request)) in requests.into_iter().enumerate() {
        let answers = answers.clone();
        let description = description.clone();
        runner.run(ticket, request, move |outcome| {
            let probe = match outcome {
                Ok(probe) => probe,
                Err(message) => return sink.fail(message),
            };
            let complete = {
                let mut answers = answers.borrow_mut();
                if let Some(answer) = answers.get_mut(slot) {
                    *answer = Some((estimator, probe));
                }
                answers.iter().all(Option::is_some)
            };
            if complete {
                let results = answers.take().into_iter().flatten().collect();
                sink.show(ProbeView {
                    description,
                    results,
                });
            }
        });
    }
}

/// The probe section.
///
/// - `config` / `set_config`: the page's configuration (its `probe` and `trials`) and setter.
/// - `result`: the latest finished experiment (its dataset, A and m).
#[component]
pub fn ProbePanel(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
    result: Signal<Option<Arc<ExperimentResult>>>,
) -> impl IntoView {
    // A typed pair, with the dataset pair that was probed when it was typed: picking another
    // dataset pair (by click or by index) leaves the typed pair, as a derived value, with no
    // effect writing one signal after another.
    let typed = RwSignal::new(None::<(Vec<f64>, Vec<f64>, Option<usize>)>);
    let (x_text, set_x_text) = signal(String::from("0.5, -0.3, 0.8"));
    let (y_text, set_y_text) = signal(String::from("0.2, 0.4, -0.1"));
    let (form_error, set_form_error) = signal(None::<String>);
    let canvas = NodeRef::<Canvas>::new();
    let (chart_error, set_chart_error) = signal(None::<String>);

    let pair = Memo::new(move |_| {
        let probe = config.with(|c| c.probe);
        match typed.get() {
            Some((x, y, typed_at)) if typed_at == probe => Some(ProbedPair::Typed(x, y)),
            _ => probe.map(ProbedPair::Dataset),
        }
    });
    // The probe runs in the workers: each change of pair, trials or result sends one request
    // per estimator; answers to an older request are ignored.
    let runner = use_context::<ProbeRunner>();
    let (view_data, set_view_data) = signal(None::<Result<Arc<ProbeView>, String>>);
    let (probing, set_probing) = signal(false);
    let trials = Memo::new(move |_| config.with(|c| c.trials));
    Effect::new(move |_| {
        let trials = trials.get();
        let (Some(pair), Some(result)) = (pair.get(), result.get()) else {
            set_view_data.set(None);
            return;
        };
        let sink = ProbeSink {
            set_probing,
            set_view_data,
        };
        // A new ticket even for a pair refused below: an older probe's answers stay away.
        let Some((runner, ticket)) = runner.and_then(|r| Some((r, r.ticket()?))) else {
            return sink.fail("the probe needs the lab's worker pool".into());
        };
        if let Err(message) = check_pair(&pair, result.config.n) {
            return sink.fail(message);
        }
        set_probing.set(true);
        match pair {
            ProbedPair::Typed(x, y) => {
                run_probe(runner, ticket, &result, (x, y), None, trials, sink);
            }
            // The worker draws the scatter dataset (it has it cached), so the page's module
            // never links the samplers.
            ProbedPair::Dataset(index) => {
                let ask = ScatterPairAsk {
                    config: result.config.clone(),
                    index,
                };
                runner.scatter_pair(ticket, ask, move |outcome| match outcome {
                    Ok(pair) => run_probe(
                        runner,
                        ticket,
                        &result,
                        (pair.x, pair.y),
                        Some(index),
                        trials,
                        sink,
                    ),
                    Err(message) => sink.fail(message),
                });
            }
        }
    });

    let resized = resize_counter();
    Effect::new(move |_| {
        resized.track();
        let Some(Ok(data)) = view_data.get() else {
            return;
        };
        let Some(canvas) = canvas.get() else {
            return;
        };
        // The panel becomes visible in this same update: draw once the browser has laid it
        // out, so that the canvas has its real size (a hidden canvas measures 0 and blurs).
        request_animation_frame(move || {
            let entries: Vec<ProbeEntry<'_>> = data
                .results
                .iter()
                .map(|(estimator, result)| ProbeEntry {
                    estimator: *estimator,
                    label: estimator.label(),
                    result,
                })
                .collect();
            describe(
                &canvas,
                &format!(
                    "histograms of {} independent estimates of one pair for {}",
                    data.results.first().map_or(0, |(_, r)| r.estimates.len()),
                    data.results
                        .iter()
                        .map(|(e, _)| e.id())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            // One row of panels per PROBE_ROW_HEIGHT: on a phone the panels stack.
            let (rows, _) = probe_grid(f64::from(canvas.client_width()), entries.len());
            let _ = web_sys::HtmlElement::style(&canvas)
                .set_property("height", &format!("{}px", rows as f64 * PROBE_ROW_HEIGHT));
            // An overflowing pair (SM beyond f64) cannot be drawn as a histogram: say so.
            set_chart_error.set(draw_probe(&canvas, &entries).err().map(|e| {
                format!(
                    "The histogram cannot be drawn for this pair ({e}); the numbers overflow f64."
                )
            }));
        });
    });

    let probe_typed = move |_| {
        let parsed = parse_vector("x", &x_text.get_untracked())
            .and_then(|x| parse_vector("y", &y_text.get_untracked()).map(|y| (x, y)));
        match parsed {
            Ok((x, y)) if x.len() != y.len() => set_form_error.set(Some(format!(
                "x has {} components and y has {}: they need the same dimension",
                x.len(),
                y.len()
            ))),
            Ok(pair) => {
                set_form_error.set(None);
                let (x, y) = pair;
                typed.set(Some((x, y, config.with_untracked(|c| c.probe))));
            }
            Err(message) => set_form_error.set(Some(message)),
        }
    };

    let shown = move || view_data.with(|v| matches!(v, Some(Ok(_))));
    view! {
        <section class="figure probe">
            <h2>"Single-pair probe" <PngButton/></h2>
            <div class="probe-controls">
                <NumberControl param=Param::Probe config set_config/>
                <NumberControl param=Param::Trials config set_config/>
                <div class="control typed-pair">
                    <label>"or type a pair (comma-separated)"</label>
                    <div class="control-row">
                        <input type="text" name="probe-x" aria-label="x" prop:value=x_text on:input=move |ev| set_x_text.set(event_target_value(&ev))/>
                        <input type="text" name="probe-y" aria-label="y" prop:value=y_text on:input=move |ev| set_y_text.set(event_target_value(&ev))/>
                        <button type="button" class="reroll" on:click=probe_typed>"probe"</button>
                    </div>
                    <p class="control-error" role="alert">{move || form_error.get()}</p>
                </div>
            </div>
            <p class="caption">
                {move || match view_data.get() {
                    _ if probing.get() => "probing… (in a worker)".to_string(),
                    None => "Click a point in a scatter panel, give a pair index, or type two vectors.".to_string(),
                    Some(Ok(data)) => data.description.clone(),
                    Some(Err(message)) => message,
                }}
            </p>
            <p class="control-error" role="alert">{move || chart_error.get()}</p>
            <div class="panel" style:display=move || if shown() { "block" } else { "none" }>
                <canvas node_ref=canvas class="chart probe-chart" data-chart="probe"></canvas>
            </div>
            <p class="caption">
                "Each histogram holds T independent estimates (fresh ω for every one) of the same SM(x, y). Black: the true "
                "value; dashed: the mean of the estimates; grey band: SM ± √MSE from Lemma 3.1. For one pair only "
                "ωₖ·z matters, and it is N(0, |z|²): the probe draws it directly, which is exactly the estimator's distribution."
            </p>
        </section>
    }
}
