//! What the page asks the model worker for the model swap, and what it reads from the answers:
//! the plan of jobs for a configuration ([`swap_plan`]: every chosen method at every budget of
//! [`SWAP_BUDGETS`] in the chosen layers, the Hedgehog maps' training and swap, the retrieval
//! set under every method) and the answer to the view's question ([`verdict`]: which method, at
//! which m, keeps the sentence embedding within cosine [`KEEPS_COSINE`] of the exact one, and at
//! what cost). No model here: the page links it, the worker and the tests read the same plan.

use crate::lab::config::{
    ExperimentConfig, HEAD_LAYERS, HEADS_PER_LAYER, HEDGEHOG_HALF_FEATURES, HEDGEHOG_LEARNING_RATE,
    HeadSource, SWAP_BUDGETS, parse_retrieval,
};
use crate::lab::models::protocol::{
    HEDGEHOG, HEDGEHOG_EVAL_TEXT, HEDGEHOG_TRAINING_TEXT, HedgehogJob, ModelRequest, Origin,
    RetrievalReport, SwapJob, SwapReport,
};
use crate::numerics::attention::method::MethodFamily;
use crate::numerics::attention::methods::MethodId;

/// The cosine to the exact embedding a method must keep to count as keeping the embedding.
pub const KEEPS_COSINE: f64 = 0.99;

/// The Hedgehog training a configuration asks for (`None` with 0 steps): held out on
/// [`HEDGEHOG_EVAL_TEXT`], so that it does not depend on the user's text.
pub fn hedgehog_job(config: &ExperimentConfig) -> Option<HedgehogJob> {
    (config.attention.hedgehog_steps > 0).then(|| hedgehog_job_on(config, HEDGEHOG_EVAL_TEXT))
}

/// The Hedgehog training of `config` (its steps and seed) on [`HEDGEHOG_TRAINING_TEXT`], held
/// out on `eval_text` (the page's job, and `kernel-lab swap --hedgehog`'s).
pub fn hedgehog_job_on(config: &ExperimentConfig, eval_text: &str) -> HedgehogJob {
    HedgehogJob {
        train_text: HEDGEHOG_TRAINING_TEXT.to_string(),
        eval_text: eval_text.to_string(),
        half_features: HEDGEHOG_HALF_FEATURES,
        steps: config.attention.hedgehog_steps,
        learning_rate: HEDGEHOG_LEARNING_RATE,
        seed: config.seed,
    }
}

/// A swap job: what the method reads of `config` (its settings, the seed, the coupling and
/// the complex A), the rest left at its default, so that moving another control (the head
/// shown, the kernel view's sliders) leaves the plan as it is.
fn job(config: &ExperimentConfig, method: &str, features: usize) -> SwapJob {
    let mut settings = ExperimentConfig {
        seed: config.seed,
        coupling: config.coupling,
        theta: config.theta,
        complex_a: config.complex_a,
        ..ExperimentConfig::default()
    };
    let (from, to) = (&config.attention, &mut settings.attention);
    to.source = from.source;
    to.features = features;
    to.degree = from.degree;
    to.ra_samples = from.ra_samples;
    to.landmarks = from.landmarks;
    to.window = from.window;
    to.top_k = from.top_k;
    if let Some(id) = MethodId::from_id(method) {
        to.methods = vec![id];
    }
    if method == HEDGEHOG {
        // The maps it reads are the ones trained with these steps.
        to.hedgehog_steps = from.hedgehog_steps;
    }
    SwapJob {
        text: from.text.clone(),
        method: method.to_string(),
        layers: from.swap_layers.clone(),
        draws: from.swap_draws,
        config: settings,
    }
}

/// Whether `method`'s cost (so its output) depends on the random projections m: a method
/// without them is run once.
pub fn uses_features(config: &ExperimentConfig, method: MethodId) -> bool {
    let at = |m: usize| {
        let mut settings = config.attention.clone();
        settings.features = m;
        settings.output_work(method, 64, 32, 32)
    };
    at(16) != at(64)
}

/// The dense multiply-adds of one 128-token forward of the model (six layers of width 384 and
/// 1,536: the four attention projections and the feed-forward), per head (72), in the units
/// of a head's attention work.
const DENSE_PER_HEAD: f64 = (HEAD_LAYERS * 128 * (4 * 384 * 384 + 2 * 384 * 1536)) as f64
    / (HEAD_LAYERS * HEADS_PER_LAYER) as f64;

/// A swap job's multiply-adds per head at `features`, to order the plan: each of its forwards
/// (its draws when it is random, one for a deterministic method) is the model's dense layers
/// and the method's outputs on a 128-token head (d = dv = 32).
pub fn job_cost(config: &ExperimentConfig, method: MethodId, features: usize) -> f64 {
    let mut settings = config.attention.clone();
    settings.features = features;
    let draws = if method.is_random() {
        config.attention.swap_draws.max(1)
    } else {
        1
    };
    (DENSE_PER_HEAD + settings.output_work(method, 128, 32, 32)) * draws as f64
}

/// The jobs of the model swap for `config`, in the order the page sends them: every chosen
/// method at every budget (a method without a budget once): first the first budget's cheapest
/// job, [`job_cost`], so that the first answer comes soonest, then every other job dearest
/// first, so that the workers, each taking the next job when free, end together (the cheapest
/// jobs fill the gaps at the end instead of a dear one starting last; ties in budget order);
/// then the Hedgehog maps (trained unless the workers hold the same training, `trained`, and
/// it was computed here or the configuration reuses answers) and their swap, then the
/// retrieval set under every method at the view's m (jobs that do not depend on the text:
/// their `text` is empty). Empty unless the data are the user's text.
pub fn swap_plan(
    config: &ExperimentConfig,
    trained: Option<(&HedgehogJob, Origin)>,
) -> Vec<ModelRequest> {
    if config.attention.source != HeadSource::Text || config.attention.swap_layers.is_empty() {
        return Vec::new();
    }
    let mut jobs: Vec<(f64, MethodId, usize)> = Vec::new();
    for (i, &m) in SWAP_BUDGETS.iter().enumerate() {
        for &method in &config.attention.methods {
            if i == 0 || uses_features(config, method) {
                jobs.push((job_cost(config, method, m), method, m));
            }
        }
    }
    let cheapest_first = jobs
        .iter()
        .enumerate()
        .filter(|(_, (_, _, m))| *m == SWAP_BUDGETS[0])
        .min_by(|(_, a), (_, b)| a.0.total_cmp(&b.0))
        .map(|(at, _)| at);
    let first = cheapest_first.map(|at| jobs.remove(at));
    // Stable: equal costs keep the budgets' order.
    jobs.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut plan: Vec<ModelRequest> = first
        .into_iter()
        .chain(jobs)
        .map(|(_, method, m)| ModelRequest::Swap(job(config, method.id(), m)))
        .collect();
    let hedgehog = hedgehog_job(config);
    if let Some(training) = &hedgehog {
        let held = trained.is_some_and(|(job, origin)| {
            job == training && (config.attention.reuse_answers || origin == Origin::Computed)
        });
        if !held {
            plan.push(ModelRequest::TrainHedgehog {
                job: training.clone(),
                reuse: config.attention.reuse_answers,
            });
        }
        plan.push(ModelRequest::Swap(job(
            config,
            HEDGEHOG,
            2 * HEDGEHOG_HALF_FEATURES,
        )));
    }
    if let Ok((query, candidates)) = parse_retrieval(&config.attention.retrieval) {
        let m = config.attention.features;
        let methods = config.attention.methods.iter().map(|m| m.id());
        for method in methods.chain(hedgehog.as_ref().map(|_| HEDGEHOG)) {
            plan.push(ModelRequest::Retrieve {
                // The retrieval set is not the text: a new text leaves these jobs as they are
                // (and the page keeps their answers).
                job: SwapJob {
                    text: String::new(),
                    ..job(config, method, m)
                },
                query: query.clone(),
                candidates: candidates.clone(),
                reuse: config.attention.reuse_answers,
            });
        }
    }
    plan
}

/// The view's answer from the reports so far.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Reports that keep cosine ≥ [`KEEPS_COSINE`] on every draw's mean, cheapest first (by
    /// the method's multiply-adds).
    pub keeping: Vec<SwapReport>,
    /// The report with the highest mean cosine, when none keeps it.
    pub closest: Option<SwapReport>,
}

/// Which reports keep the embedding, cheapest first, or the closest when none does.
pub fn verdict(reports: &[SwapReport]) -> Verdict {
    let cosine = |r: &SwapReport| r.cosine.as_ref().map(|c| c.mean);
    let mut keeping: Vec<SwapReport> = reports
        .iter()
        .filter(|r| r.failed_draws == 0 && cosine(r).is_some_and(|c| c >= KEEPS_COSINE))
        .cloned()
        .collect();
    keeping.sort_by(|a, b| {
        a.cost
            .attention_multiply_adds
            .total_cmp(&b.cost.attention_multiply_adds)
    });
    let closest = if keeping.is_empty() {
        reports
            .iter()
            .filter(|r| cosine(r).is_some())
            .max_by(|a, b| {
                cosine(a)
                    .unwrap_or(f64::NEG_INFINITY)
                    .total_cmp(&cosine(b).unwrap_or(f64::NEG_INFINITY))
            })
            .cloned()
    } else {
        None
    };
    Verdict { keeping, closest }
}

/// The learned maps against the random feature maps on the same text.
#[derive(Clone, Debug, PartialEq)]
pub struct LearnedAgainstRandom {
    /// The Hedgehog maps' cosine and features m.
    pub learned: (f64, usize),
    /// The best random feature map at the same m: its id and cosine.
    pub best_at_same_m: Option<(String, f64)>,
    /// The best random feature map at any m: its id, m and cosine.
    pub best_at_any_m: Option<(String, usize, f64)>,
}

impl LearnedAgainstRandom {
    /// Whether the learned maps keep more than every random map at the same m.
    pub fn beats_same_m(&self) -> bool {
        self.best_at_same_m
            .as_ref()
            .is_none_or(|(_, c)| self.learned.0 > *c)
    }

    /// Whether they keep more than every random map at any budget run.
    pub fn beats_any_m(&self) -> bool {
        self.best_at_any_m
            .as_ref()
            .is_none_or(|(_, _, c)| self.learned.0 > *c)
    }
}

/// The Hedgehog maps' report against the random feature maps' (`None` before the maps' swap).
pub fn learned_against_random(reports: &[SwapReport]) -> Option<LearnedAgainstRandom> {
    let cosine = |r: &SwapReport| r.cosine.as_ref().map(|c| c.mean);
    let learned = reports.iter().find(|r| r.method == HEDGEHOG)?;
    let m = learned.features.unwrap_or(2 * HEDGEHOG_HALF_FEATURES);
    let random: Vec<&SwapReport> = reports
        .iter()
        .filter(|r| {
            MethodId::from_id(&r.method)
                .is_some_and(|id| id.get().family() == MethodFamily::RandomFeatures)
                && cosine(r).is_some()
                && r.failed_draws == 0
        })
        .collect();
    let best = |rs: &mut dyn Iterator<Item = &&SwapReport>| {
        rs.max_by(|a, b| {
            cosine(a)
                .unwrap_or(f64::NEG_INFINITY)
                .total_cmp(&cosine(b).unwrap_or(f64::NEG_INFINITY))
        })
        .map(|r| {
            (
                r.method.clone(),
                r.features.unwrap_or(0),
                cosine(r).unwrap_or(f64::NAN),
            )
        })
    };
    Some(LearnedAgainstRandom {
        learned: (cosine(learned)?, m),
        best_at_same_m: best(&mut random.iter().filter(|r| r.features == Some(m)))
            .map(|(id, _, c)| (id, c)),
        best_at_any_m: best(&mut random.iter()),
    })
}

/// What the retrieval answers say: how many methods keep the exact top-1 on every draw, and
/// the range of their mean Kendall's τ.
pub fn retrieval_summary(reports: &[RetrievalReport]) -> Option<String> {
    let ran: Vec<&RetrievalReport> = reports.iter().filter(|r| r.top1_kept.is_some()).collect();
    if ran.is_empty() {
        return None;
    }
    let kept = ran.iter().filter(|r| r.top1_kept == Some(1.0)).count();
    let taus: Vec<f64> = ran
        .iter()
        .filter_map(|r| r.kendall_tau.as_ref().map(|t| t.mean))
        .collect();
    let (low, high) = taus
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &t| {
            (l.min(t), h.max(t))
        });
    let stopped = reports.len() - ran.len();
    Some(format!(
        "Retrieval: {kept} of {} methods keep the exact best candidate on every draw; the order \
         below it agrees with Kendall's τ from {low:.2} to {high:.2}{}.",
        ran.len(),
        if stopped > 0 {
            format!(" ({stopped} could not run)")
        } else {
            String::new()
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::models::protocol::{Spread, SwapCost};

    fn text_config() -> ExperimentConfig {
        let mut config = ExperimentConfig::default();
        config.attention.source = HeadSource::Text;
        config.attention.methods = ["prf-pos", "taylor"]
            .iter()
            .filter_map(|id| MethodId::from_id(id))
            .collect();
        config
    }

    #[test]
    fn the_plan_has_every_budget_of_a_random_method_and_one_run_of_a_deterministic_one() {
        let config = text_config();
        let plan = swap_plan(&config, None);
        let swaps: Vec<(String, usize)> = plan
            .iter()
            .filter_map(|r| match r {
                ModelRequest::Swap(j) => Some((j.method.clone(), j.config.attention.features)),
                _ => None,
            })
            .collect();
        let mut prf: Vec<usize> = swaps
            .iter()
            .filter(|(m, _)| m == "prf-pos")
            .map(|s| s.1)
            .collect();
        // Every budget once (their order: `later_budgets_run_the_dearest_jobs_first`).
        prf.sort_unstable();
        assert_eq!(prf, SWAP_BUDGETS.to_vec());
        assert_eq!(swaps.iter().filter(|(m, _)| m == "taylor").count(), 1);
        assert_eq!(swaps.iter().filter(|(m, _)| m == HEDGEHOG).count(), 1);
        let trainings = plan
            .iter()
            .filter(|r| matches!(r, ModelRequest::TrainHedgehog { .. }))
            .count();
        assert_eq!(trainings, 1);
        // The training comes before the learned maps' swap and retrieval.
        let train_at = plan
            .iter()
            .position(|r| matches!(r, ModelRequest::TrainHedgehog { .. }));
        let first_hedgehog = plan.iter().position(|r| match r {
            ModelRequest::Swap(j) | ModelRequest::Retrieve { job: j, .. } => j.method == HEDGEHOG,
            _ => false,
        });
        assert!(train_at < first_hedgehog);
        let retrievals = plan
            .iter()
            .filter(|r| matches!(r, ModelRequest::Retrieve { .. }))
            .count();
        assert_eq!(retrievals, 3, "two methods and Hedgehog");
    }

    /// The first job is the first budget's cheapest (the first answer soonest): for the
    /// defaults a deterministic map of d features, never randomized attention or Taylor-2
    /// (D = 1 + d + d²); every other text job follows dearest first (the workers end together),
    /// so that the plan ends on its cheapest jobs, and every chosen method runs at every budget
    /// it reads (a method without a budget once).
    #[test]
    fn the_cheapest_job_first_then_the_dearest() {
        let mut config = ExperimentConfig::default();
        config.attention.source = HeadSource::Text;
        let jobs: Vec<(MethodId, usize)> = swap_plan(&config, None)
            .iter()
            .filter_map(|r| match r {
                ModelRequest::Swap(job) if job.method != HEDGEHOG => {
                    MethodId::from_id(&job.method).map(|id| (id, job.config.attention.features))
                }
                _ => None,
            })
            .collect();
        let costs: Vec<f64> = jobs
            .iter()
            .map(|&(id, m)| job_cost(&config, id, m))
            .collect();
        let (first, m) = jobs[0];
        assert_eq!(m, SWAP_BUDGETS[0]);
        assert!(["elu", "lln"].contains(&first.id()), "{jobs:?}");
        for &method in &config.attention.methods {
            assert!(costs[0] <= job_cost(&config, method, SWAP_BUDGETS[0]));
        }
        assert!(
            costs[1..].windows(2).all(|w| w[0] >= w[1]),
            "{jobs:?}: {costs:?}"
        );
        let (dearest, m) = jobs[1];
        assert_eq!((dearest.id(), m), ("hcexp-var", 1024), "{jobs:?}");
        for &method in &config.attention.methods {
            let budgets = jobs.iter().filter(|(id, _)| *id == method).count();
            let expected = if uses_features(&config, method) {
                SWAP_BUDGETS.len()
            } else {
                1
            };
            assert_eq!(budgets, expected, "{}", method.id());
        }
    }

    /// The head shown and the kernel view's sliders do not change the jobs; m and the seed do.
    #[test]
    fn only_what_the_methods_read_changes_the_plan() {
        let config = text_config();
        let plan = swap_plan(&config, None);
        let mut other = config.clone();
        other.attention.head = 5;
        other.attention.layer = 3;
        other.d = 7;
        other.m = 16;
        assert_eq!(swap_plan(&other, None), plan);
        other.seed = 9;
        assert_ne!(swap_plan(&other, None), plan);
        let mut other = config.clone();
        other.attention.features = 32;
        assert_ne!(
            swap_plan(&other, None),
            plan,
            "the retrieval runs at the view's m"
        );
    }

    /// Another text changes every swap job and no retrieval job; other Hedgehog steps change
    /// the Hedgehog retrieval (its maps), and only it.
    #[test]
    fn the_retrieval_jobs_do_not_depend_on_the_text() {
        let retrievals = |c: &ExperimentConfig| -> Vec<ModelRequest> {
            swap_plan(c, None)
                .into_iter()
                .filter(|r| matches!(r, ModelRequest::Retrieve { .. }))
                .collect()
        };
        let swaps = |c: &ExperimentConfig| -> Vec<ModelRequest> {
            swap_plan(c, None)
                .into_iter()
                .filter(|r| matches!(r, ModelRequest::Swap(_)))
                .collect()
        };
        let config = text_config();
        let mut other = config.clone();
        other.attention.text = "Another text entirely, about the sea.".into();
        assert_eq!(retrievals(&other), retrievals(&config));
        assert_eq!(
            retrievals(&config).len(),
            config.attention.methods.len() + 1
        );
        let (a, b) = (swaps(&config), swaps(&other));
        assert_eq!(a.len(), b.len());
        assert!(a.iter().zip(&b).all(|(x, y)| x != y));
        let mut steps = config.clone();
        steps.attention.hedgehog_steps = 50;
        let changed: Vec<String> = retrievals(&steps)
            .iter()
            .zip(&retrievals(&config))
            .filter(|(x, y)| x != y)
            .map(|(x, _)| match x {
                ModelRequest::Retrieve { job, .. } => job.method.clone(),
                _ => String::new(),
            })
            .collect();
        assert_eq!(changed, vec![HEDGEHOG.to_string()]);
    }

    #[test]
    fn trained_maps_are_not_trained_again_and_other_data_plan_nothing() {
        let config = text_config();
        let trained = hedgehog_job(&config);
        let trains = |config: &ExperimentConfig, origin| {
            swap_plan(config, trained.as_ref().map(|job| (job, origin)))
                .iter()
                .any(|r| matches!(r, ModelRequest::TrainHedgehog { .. }))
        };
        assert!(!trains(&config, Origin::Computed));
        assert!(!trains(&config, Origin::Shipped));
        // Asked to compute here: shipped maps are trained again, maps trained here are not.
        let mut here = config.clone();
        here.attention.reuse_answers = false;
        assert!(trains(&here, Origin::Shipped));
        assert!(trains(&here, Origin::Kept));
        assert!(!trains(&here, Origin::Computed));
        let mut no_hedgehog = config.clone();
        no_hedgehog.attention.hedgehog_steps = 0;
        assert!(!swap_plan(&no_hedgehog, None).iter().any(|r| match r {
            ModelRequest::Swap(j) => j.method == HEDGEHOG,
            _ => false,
        }));
        let mut synthetic = config;
        synthetic.attention.source = HeadSource::Synthetic;
        assert!(swap_plan(&synthetic, None).is_empty());
    }

    fn report(method: &str, cosine: f64, macs: f64, failed: usize) -> SwapReport {
        SwapReport {
            method: method.into(),
            label: method.into(),
            features: Some(64),
            layers: vec![0],
            tokens: 10,
            draws: 2,
            failed_draws: failed,
            failure: None,
            per_layer: Vec::new(),
            cosine: Spread::of(&[cosine, cosine]),
            cost: SwapCost {
                forward_ms: 1.0,
                exact_forward_ms: 1.0,
                attention_multiply_adds: macs,
                softmax_multiply_adds: 1e6,
                model_multiply_adds: 1e8,
            },
        }
    }

    #[test]
    fn the_verdict_lists_keepers_cheapest_first_or_names_the_closest() {
        let reports = [
            report("a", 0.995, 3e5, 0),
            report("b", 0.999, 1e5, 0),
            report("c", 0.98, 1e4, 0),
            report("d", 0.999, 1e3, 1),
        ];
        let v = verdict(&reports);
        let ids: Vec<&str> = v.keeping.iter().map(|r| r.method.as_str()).collect();
        assert_eq!(ids, ["b", "a"], "a failed draw disqualifies d");
        assert!(v.closest.is_none());
        let v = verdict(&reports[2..3]);
        assert!(v.keeping.is_empty());
        assert_eq!(v.closest.unwrap().method, "c");
    }

    /// The learned maps against the random maps: the best at their m and at any m; a
    /// deterministic method is no random map.
    #[test]
    fn learned_maps_are_compared_with_random_maps_only() {
        let at = |method: &str, cosine: f64, m: Option<usize>| SwapReport {
            features: m,
            ..report(method, cosine, 1.0, 0)
        };
        let reports = [
            at("prf-pos", 0.60, Some(64)),
            at("prf-pos", 0.80, Some(1024)),
            at("hcexp-var", 0.62, Some(64)),
            at("taylor", 0.95, None),
            at(HEDGEHOG, 0.70, Some(64)),
        ];
        let c = learned_against_random(&reports).unwrap();
        assert_eq!(c.learned, (0.70, 64));
        assert_eq!(c.best_at_same_m, Some(("hcexp-var".to_string(), 0.62)));
        assert_eq!(c.best_at_any_m, Some(("prf-pos".to_string(), 1024, 0.80)));
        assert!(c.beats_same_m() && !c.beats_any_m());
        assert!(learned_against_random(&reports[..4]).is_none());
    }
}
