//! One share of a text's forward split by rows over several workers (the page's two model
//! workers run one forward together): each part holds a contiguous range of the text's
//! positions, and per layer computes its rows' queries, keys and values ([`LmPart::project`]),
//! hands them to the others, and, with every part's ([`LmPart::finish_layer`]), computes each
//! head's causal attention over the whole text and keeps its own rows of it, then the rest of
//! the layer on its rows alone. The dense products, two thirds and more of a forward, are so
//! divided between the parts; the attention (a fiftieth of a 128-token forward under softmax,
//! about a sixth with 256 random features) is computed whole by each, so that a method whose
//! numbers depend on every row (a diagonal A fitted to the queries' and keys' statistics) gives
//! the one-worker forward's answer. Each row's numbers are the one-worker forward's bit for
//! bit (`forward`'s products do the same operations for a row whatever rows surround it).
//!
//! How the shares travel is the caller's (the model worker's ports, tests by hand).

use std::ops::Range;

use super::forward::{LmScores, Rope, Scratch};
use super::{LlamaModel, LmError};
use crate::numerics::bert::Replacement;

/// One layer's rotated queries (`rows × heads·d`), keys and values (`rows × kv_heads·d`) of
/// rows `rows`: what a part hands the others.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerShare {
    pub rows: Range<usize>,
    pub q: Vec<f32>,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
}

/// A part's share of a forward under way.
pub struct LmPart<'m> {
    model: &'m LlamaModel,
    ids: Vec<u32>,
    rows: Range<usize>,
    /// The next layer to run.
    next: usize,
    /// The part's rows' hidden states entering layer `next`.
    x: Vec<f32>,
    rope: Rope,
    scratch: Scratch,
}

impl LlamaModel {
    /// The part of `ids`' forward over rows `rows`, entering layer `from` with those rows'
    /// hidden states `entering` (`rows.len() × width`; `None`: the embeddings, `from` = 0).
    pub fn part(
        &self,
        ids: &[u32],
        rows: Range<usize>,
        (from, entering): (usize, Option<Vec<f32>>),
    ) -> Result<LmPart<'_>, LmError> {
        self.check_ids(ids)?;
        let n = ids.len();
        let width = self.config.width;
        if rows.is_empty() || rows.end > n || from > self.config.layers {
            return Err(LmError::Replacement(format!(
                "rows {rows:?} of {n} tokens entering layer {from} are not a part of the text"
            )));
        }
        let x = match entering {
            Some(x) if x.len() == rows.len() * width => x,
            Some(x) => {
                return Err(LmError::Replacement(format!(
                    "{} hidden values for {} rows entering layer {from}",
                    x.len(),
                    rows.len()
                )));
            }
            None if from == 0 => self.embed(&ids[rows.clone()])?,
            None => {
                return Err(LmError::Replacement(format!(
                    "no hidden states to enter layer {from} with"
                )));
            }
        };
        Ok(LmPart {
            model: self,
            ids: ids.to_vec(),
            rope: self.rope(n),
            rows,
            next: from,
            x,
            scratch: Scratch::default(),
        })
    }
}

impl LmPart<'_> {
    /// The part's rows.
    pub fn rows(&self) -> Range<usize> {
        self.rows.clone()
    }

    /// The part's rows' hidden states entering the next layer (`rows × width`).
    pub fn states(&self) -> &[f32] {
        &self.x
    }

    /// The layer [`LmPart::project`] runs next; `None` once every layer has run.
    pub fn next_layer(&self) -> Option<usize> {
        (self.next < self.model.config.layers).then_some(self.next)
    }

    /// The next layer's first half on the part's rows: their share, to hand the others and
    /// to pass back to [`LmPart::finish_layer`].
    pub fn project(&mut self) -> Result<LayerShare, LmError> {
        let layer = self
            .next_layer()
            .ok_or_else(|| LmError::Replacement("every layer has run".into()))?;
        let s = &mut self.scratch;
        self.model
            .project(layer, &self.x, self.rows.clone(), &self.rope, s);
        Ok(LayerShare {
            rows: self.rows.clone(),
            q: s.take_q(),
            k: s.take_k(),
            v: s.take_v(),
        })
    }

    /// The rest of the layer projected last, from this part's share (`mine`) and the other
    /// parts' (`others`, in any order): together they must cover the text's rows once.
    pub fn finish_layer(
        &mut self,
        mine: LayerShare,
        others: Vec<LayerShare>,
        mut replace: Option<Replacement>,
    ) -> Result<(), LmError> {
        let layer = self
            .next_layer()
            .ok_or_else(|| LmError::Replacement("every layer has run".into()))?;
        let n = self.ids.len();
        let mut shares: Vec<LayerShare> = others;
        shares.push(mine);
        shares.sort_by_key(|share| share.rows.start);
        let c = &self.model.config;
        let (w, kv) = (c.width, c.kv_heads * c.head_dim);
        let mut next_row = 0;
        for share in &shares {
            let rows = share.rows.len();
            let fits = share.rows.start == next_row
                && share.q.len() == rows * w
                && share.k.len() == rows * kv
                && share.v.len() == rows * kv;
            if !fits {
                return Err(LmError::Replacement(format!(
                    "layer {layer}: a share of rows {:?} does not fit the text's {n} rows after \
                     row {next_row}",
                    share.rows
                )));
            }
            next_row = share.rows.end;
        }
        if next_row != n {
            return Err(LmError::Replacement(format!(
                "layer {layer}: the shares cover {next_row} of the text's {n} rows"
            )));
        }
        let join = |pick: fn(&LayerShare) -> &[f32]| -> Vec<f32> {
            shares
                .iter()
                .flat_map(|s| pick(s).iter().copied())
                .collect()
        };
        let (q, k, v) = (join(|s| &s.q), join(|s| &s.k), join(|s| &s.v));
        self.model.attend_and_feed(
            layer,
            &mut self.x,
            (self.rows.clone(), n),
            (&q, &k, &v),
            &mut replace,
            &mut self.scratch,
        )?;
        self.next += 1;
        Ok(())
    }

    /// After the last layer: the losses of the tokens after the part's rows and, with `top`
    /// > 0, the rows' predictions.
    pub fn scores(&self, top: usize) -> Result<LmScores, LmError> {
        if self.next_layer().is_some() {
            return Err(LmError::Replacement(format!(
                "scored before layer {} ran",
                self.next
            )));
        }
        Ok(self
            .model
            .scores_of_rows(&self.x, self.rows.clone(), &self.ids, top))
    }
}

/// The whole text's scores from its parts' (each with its first row), in any order.
pub fn join_scores(mut parts: Vec<(usize, LmScores)>) -> LmScores {
    parts.sort_by_key(|(start, _)| *start);
    let mut joined = LmScores {
        losses: Vec::new(),
        predictions: Vec::new(),
    };
    for (_, part) in parts {
        joined.losses.extend(part.losses);
        joined.predictions.extend(part.predictions);
    }
    joined
}
