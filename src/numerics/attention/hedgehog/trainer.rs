//! The Hedgehog training one step at a time ([`Trainer`]): what [`super::train_heads`] runs to
//! its end, and what a worker steps between its messages, so that a training can be stopped
//! after any step and its curve shown as it grows.

use crate::numerics::input::InputError;

use super::products::Products;
use super::training::{
    Adam, HeadLoss, SoftmaxTarget, TrainedHeads, TrainingPoint, Workspace, evaluate, point_of,
};
use super::{HeadSample, HedgehogError, HedgehogMap, HedgehogSettings, MapParameters, require};

/// A training of one map per head, all heads in step, taken one step at a time.
pub struct Trainer {
    settings: HedgehogSettings,
    heads: Vec<usize>,
    eval_every: usize,
    precision: Products,
    train: Vec<HeadSample>,
    eval: Vec<HeadSample>,
    train_targets: Vec<SoftmaxTarget>,
    eval_targets: Vec<SoftmaxTarget>,
    maps: Vec<HedgehogMap>,
    gradients: Vec<MapParameters>,
    optimisers: Vec<Adam>,
    workspace: Workspace,
    losses: Vec<Vec<HeadLoss>>,
    /// The next step's number (0: the initial maps' losses), past `settings.steps` when done.
    next: usize,
}

impl Trainer {
    /// A training of the heads `heads` of `train` and `eval` as [`super::train_heads`] does it
    /// (the same checks, maps, streams and steps), with its products in f32.
    pub fn new(
        settings: &HedgehogSettings,
        (train, eval): (&[HeadSample], &[HeadSample]),
        heads: &[usize],
        eval_every: usize,
    ) -> Result<Self, HedgehogError> {
        Self::at(settings, (train, eval), heads, eval_every, Products::Single)
    }

    /// [`Trainer::new`] with its products at `precision`.
    pub(super) fn at(
        settings: &HedgehogSettings,
        (train, eval): (&[HeadSample], &[HeadSample]),
        heads: &[usize],
        eval_every: usize,
        precision: Products,
    ) -> Result<Self, HedgehogError> {
        settings.validate()?;
        require(!train.is_empty(), "train", || {
            "needs at least one head".into()
        })?;
        require(eval_every > 0, "eval_every", || "must be at least 1".into())?;
        if !eval.is_empty() && eval.len() != train.len() {
            return Err(InputError::LengthMismatch {
                what: "eval heads",
                expected: train.len(),
                got: eval.len(),
            }
            .into());
        }
        let other_dim = train.iter().zip(eval).find(|(t, e)| t.dim != e.dim);
        require(other_dim.is_none(), "eval", || {
            "an eval head's d differs from its train head's".into()
        })?;
        let ordered = heads.windows(2).all(|p| p[0] < p[1]);
        let inside = heads.last().is_some_and(|&h| h < train.len());
        require(ordered && inside, "heads", || {
            format!(
                "must be increasing indices below {}, at least one, got {heads:?}",
                train.len()
            )
        })?;
        let chosen = |samples: &[HeadSample]| -> Vec<HeadSample> {
            match samples.is_empty() {
                true => Vec::new(),
                false => heads.iter().map(|&h| samples[h].clone()).collect(),
            }
        };
        let (train, eval) = (chosen(train), chosen(eval));
        let maps = (train.iter().zip(heads))
            .map(|(s, &h)| HedgehogMap::initial(s.dim, settings, h as u64))
            .collect::<Result<Vec<_>, _>>()?;
        let targets = |samples: &[HeadSample]| -> Result<Vec<SoftmaxTarget>, HedgehogError> {
            samples.iter().map(SoftmaxTarget::new).collect()
        };
        let (train_targets, eval_targets) = (targets(&train)?, targets(&eval)?);
        let n = settings.half_features;
        Ok(Self {
            gradients: train
                .iter()
                .map(|s| MapParameters::zeros(n, s.dim))
                .collect(),
            optimisers: train.iter().map(|s| Adam::new(n, s.dim)).collect(),
            settings: *settings,
            heads: heads.to_vec(),
            eval_every,
            precision,
            train,
            eval,
            train_targets,
            eval_targets,
            maps,
            workspace: Workspace::default(),
            losses: Vec::with_capacity(settings.steps + 1),
            next: 0,
        })
    }

    /// Whether every step is taken.
    pub fn is_done(&self) -> bool {
        self.next > self.settings.steps
    }

    /// The next step: the maps' losses (step 0: the initial maps'), then, unless it is the
    /// last, one Adam update; `None` once done.
    pub fn step(&mut self) -> Result<Option<TrainingPoint>, HedgehogError> {
        if self.is_done() {
            return Ok(None);
        }
        let step = self.next;
        let last = step == self.settings.steps;
        let evaluated = !self.eval.is_empty() && (step.is_multiple_of(self.eval_every) || last);
        let mut step_losses = Vec::with_capacity(self.heads.len());
        let parts = self
            .maps
            .iter()
            .zip(&self.train)
            .zip(&self.train_targets)
            .zip(&mut self.gradients)
            .enumerate();
        for (i, (((map, sample), target), gradient)) in parts {
            let diverged = HedgehogError::Diverged {
                step,
                head: self.heads[i],
            };
            let workspace = &mut self.workspace;
            let gradient = (!last).then_some(gradient);
            let loss = evaluate(map, sample, target, workspace, gradient, self.precision)
                .ok()
                .filter(|l| l.cross_entropy.is_finite())
                .ok_or(diverged.clone())?;
            let eval_kl = match evaluated {
                true => Some(
                    evaluate(
                        map,
                        &self.eval[i],
                        &self.eval_targets[i],
                        workspace,
                        None,
                        self.precision,
                    )
                    .ok()
                    .filter(|l| l.kl.is_finite())
                    .ok_or(diverged)?
                    .kl,
                ),
                false => None,
            };
            step_losses.push(HeadLoss {
                train_cross_entropy: loss.cross_entropy,
                train_kl: loss.kl,
                eval_kl,
            });
        }
        let point = point_of(step, &step_losses);
        self.losses.push(step_losses);
        if !last {
            let parts = self.maps.iter_mut().zip(&self.gradients);
            for ((map, gradient), adam) in parts.zip(&mut self.optimisers) {
                adam.update(&mut map.parameters, gradient, self.settings.learning_rate);
            }
        }
        self.next += 1;
        Ok(Some(point))
    }

    /// The maps as they are (trained when done) and the losses of the steps taken.
    pub fn finish(self) -> TrainedHeads {
        TrainedHeads {
            heads: self.heads,
            maps: self.maps,
            losses: self.losses,
        }
    }
}

/// Trains one map per head, all heads in step. `on_step` sees the maps after every step
/// (`step` = 0 for the initial maps, then 1 to `settings.steps`): the mean train CE and KL over
/// heads and, at step 0, every `eval_every` steps and at the last, the mean eval KL on `eval`
/// (`eval[h]` pairs with `train[h]`, same d; `eval` may be empty). Head h's initial noise is
/// stream `(seed, Hedgehog, h, ·)`.
///
/// Errors: invalid settings, no training heads, `eval_every` = 0, `eval` neither empty nor as
/// long as `train`, mismatched d, scores that overflow, or a diverging run.
pub fn train(
    settings: &HedgehogSettings,
    train: &[HeadSample],
    eval: &[HeadSample],
    eval_every: usize,
    on_step: &mut dyn FnMut(&TrainingPoint),
) -> Result<Vec<HedgehogMap>, HedgehogError> {
    let all: Vec<usize> = (0..train.len()).collect();
    Ok(train_heads(settings, train, eval, &all, eval_every, on_step)?.maps)
}

/// [`train`] for the heads `heads` of `train` and `eval` only (indices into them, increasing,
/// no repeats, at least one): each head's map trains on its own sample with its own optimiser
/// and its own stream, so a training split by heads and merged ([`super::merge_heads`]) gives
/// the maps and the curve of one training of every head, bit for bit. `on_step` sees these
/// heads' means.
pub fn train_heads(
    settings: &HedgehogSettings,
    train: &[HeadSample],
    eval: &[HeadSample],
    heads: &[usize],
    eval_every: usize,
    on_step: &mut dyn FnMut(&TrainingPoint),
) -> Result<TrainedHeads, HedgehogError> {
    let single = Products::Single;
    train_heads_at(settings, train, eval, heads, eval_every, on_step, single)
}

/// [`train_heads`] with its products at `precision` (the tests compare the two): a
/// [`Trainer`] stepped to its end.
#[allow(clippy::too_many_arguments)]
pub(super) fn train_heads_at(
    settings: &HedgehogSettings,
    train: &[HeadSample],
    eval: &[HeadSample],
    heads: &[usize],
    eval_every: usize,
    on_step: &mut dyn FnMut(&TrainingPoint),
    precision: Products,
) -> Result<TrainedHeads, HedgehogError> {
    let mut trainer = Trainer::at(settings, (train, eval), heads, eval_every, precision)?;
    while let Some(point) = trainer.step()? {
        on_step(&point);
    }
    Ok(trainer.finish())
}
