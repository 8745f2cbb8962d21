//! The per-layer chart seen from the page: asked once a text's answer is complete (when a
//! method is chosen), shared by both workers where there are two, its bars gathered as they
//! come into [`LmChart`].

use leptos::prelude::*;

use super::super::spawn::post;
use super::LmClient;
use crate::lab::config::LM_LAYERS;
use crate::lab::models::smollm::{LmFromWorker, LmJob, LmLayerBar, LmToWorker, Share};

/// The per-layer chart of the newest answer's text and method, as its bars come.
#[derive(Clone, Debug, PartialEq)]
pub struct LmChart {
    pub job: LmJob,
    /// In the order they came (deepest layer first), the last one perhaps with some of its
    /// draws still to come.
    pub bars: Vec<LmLayerBar>,
    /// Every bar is in, or `error` says why the chart stopped.
    pub done: bool,
    pub error: Option<String>,
    /// From the request to its first bar, to the first draw of every bar (draws go round by
    /// round), and to its end.
    pub first_bar_ms: Option<f64>,
    pub all_bars_ms: Option<f64>,
    pub total_ms: Option<f64>,
    /// Workers sharing the chart (0 until it is asked, after the swap's last draw), and those
    /// that have ended their share.
    pub parts: usize,
    pub ended: usize,
}

impl LmChart {
    /// The chart of `job` before it is asked (`parts` 0: the swap's draws come first).
    pub(super) fn waiting(job: LmJob) -> Self {
        Self {
            job,
            bars: Vec::new(),
            done: false,
            error: None,
            first_bar_ms: None,
            all_bars_ms: None,
            total_ms: None,
            parts: 0,
            ended: 0,
        }
    }
}

/// Whether `chart` is the chart of `job`'s text and settings (the chart swaps every layer
/// whatever layers the swap itself uses).
pub(super) fn same_chart(chart: &LmChart, job: &LmJob) -> bool {
    let mut asked = job.config.clone();
    asked
        .attention
        .lm_layers
        .clone_from(&chart.job.config.attention.lm_layers);
    chart.job.text == job.text && chart.job.config == asked
}

impl LmClient {
    /// Asks for the per-layer chart of `job` (the job just answered), unless a newer job
    /// waits: its answer will ask for its own.
    pub(super) fn ask_chart(self, job: &LmJob) {
        if job.method().is_none() || !job.config.attention.lm_chart {
            self.chart.set(None);
            return;
        }
        // A complete chart of the same text and settings stays.
        let kept = |chart: &LmChart| chart.done && chart.error.is_none() && same_chart(chart, job);
        if self.chart.with_untracked(|c| c.as_ref().is_some_and(kept)) {
            return;
        }
        let inner = self.inner.get_value();
        let mut inner = inner.borrow_mut();
        if inner.waiting.is_some() {
            return;
        }
        inner.next_id += 1;
        let id = inner.next_id;
        let helper = inner.helper.clone().filter(|_| inner.helper_ready);
        let message = |index, count| LmToWorker::PerLayer {
            id,
            job: job.clone(),
            share: Share { index, count },
        };
        // The second worker's half first: if it cannot take it, the first takes all.
        let parts = match &helper {
            Some(helper) if post(Some(helper), &message(1, 2)).is_some() => 2,
            _ => 1,
        };
        if post(inner.worker.as_ref(), &message(0, parts)).is_none() {
            return;
        }
        inner.chart_id = Some(id);
        drop(inner);
        self.chart.set(Some(LmChart {
            parts,
            ..LmChart::waiting(job.clone())
        }));
    }

    /// Whether `id` is the chart asked last.
    fn is_current_chart(self, id: u64) -> bool {
        self.inner.get_value().borrow().chart_id == Some(id)
    }

    /// A bar, or the end of a worker's share, of the chart asked last (an older chart's are
    /// dropped).
    pub(super) fn on_chart(self, message: LmFromWorker) {
        match message {
            LmFromWorker::LayerBar { id, bar, ms } if self.is_current_chart(id) => {
                self.chart.update(|chart| {
                    if let Some(chart) = chart {
                        chart.first_bar_ms.get_or_insert(ms);
                        // A bar comes after each of its draws: the newest replaces the last.
                        match chart.bars.iter_mut().find(|b| b.layer == bar.layer) {
                            Some(known) => *known = bar,
                            None => chart.bars.push(bar),
                        }
                        if chart.bars.len() == LM_LAYERS {
                            chart.all_bars_ms.get_or_insert(ms);
                        }
                    }
                });
            }
            LmFromWorker::LayersEnded { id, ms, error } if self.is_current_chart(id) => {
                self.chart.update(|chart| {
                    if let Some(chart) = chart {
                        chart.ended += 1;
                        if error.is_some() || chart.ended >= chart.parts {
                            chart.done = true;
                            chart.total_ms = Some(ms);
                            chart.error = chart.error.take().or(error);
                        }
                    }
                });
            }
            _ => {}
        }
    }
}
