//! One share of a text's forward split by rows over several workers (the page's two model
//! workers run one forward together): each part holds a contiguous range of the text's
//! positions, and per layer computes its rows' queries, keys and values ([`LmPart::project`]),
//! hands them to the others, and, with every part's ([`LmPart::finish_layer`]), computes each
//! head's causal attention over the whole text and keeps its own rows of it, then the rest of
//! the layer on its rows alone. The dense products, two thirds and more of a forward, are so
//! divided between the parts. The attention is a fiftieth of a 128-token forward under
//! softmax, and each part computes it whole; with 256 random features it is about a sixth, and
//! the parts split the heads instead ([`LmPart::attend_heads`], then each hands the others its
//! heads' outputs of their rows, [`LmPart::finish_heads`]). Either way each head is computed
//! whole by one part, so that a method whose numbers depend on every row (a diagonal A fitted
//! to the queries' and keys' statistics) gives the one-worker forward's answer. Each row's numbers are the one-worker forward's bit for
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

/// Heads `heads` of one layer's attention as a part computed them for the whole text, of
/// every row but the part's own (`rows`): what it hands the others when the heads are split
/// between the parts ([`LmPart::attend_heads`]). `values` holds, row after row (the rows
/// before `rows`, then those after), each head's `d` outputs in order.
#[derive(Clone, Debug, PartialEq)]
pub struct HeadShare {
    pub heads: Range<usize>,
    pub rows: Range<usize>,
    pub values: Vec<f32>,
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
    /// After [`LmPart::attend_heads`]: the heads this part computed, whose outputs for its
    /// own rows are in the scratch's attention already.
    attended: Option<Range<usize>>,
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
            attended: None,
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
        let (layer, whole) = self.joined(mine, others)?;
        self.model.attend_and_feed(
            layer,
            &mut self.x,
            (self.rows.clone(), self.ids.len()),
            (&whole.q, &whole.k, &whole.v),
            &mut replace,
            &mut self.scratch,
        )?;
        self.next += 1;
        Ok(())
    }

    /// The layer projected last when its heads are split between the parts (a costly method's
    /// layer): from the parts' shares as for [`LmPart::finish_layer`], heads `heads` of its
    /// attention over the whole text. The part keeps its own rows' outputs and returns the
    /// others', to hand them; [`LmPart::finish_heads`] then takes the other parts' heads and
    /// runs the rest of the layer. Each head is computed whole by one part, so a method whose
    /// numbers depend on every row gives the one-worker forward's bits.
    pub fn attend_heads(
        &mut self,
        mine: LayerShare,
        others: Vec<LayerShare>,
        heads: Range<usize>,
        mut replace: Option<Replacement>,
    ) -> Result<HeadShare, LmError> {
        let (layer, whole) = self.joined(mine, others)?;
        let c = &self.model.config;
        let (n, w, d) = (self.ids.len(), c.width, c.head_dim);
        if heads.is_empty() || heads.end > c.heads {
            return Err(LmError::Replacement(format!(
                "layer {layer}: heads {heads:?} are not among the model's {}",
                c.heads
            )));
        }
        let own = self.rows.clone();
        let outside = n - own.len();
        let mut attention = std::mem::take(&mut self.scratch.attention);
        attention.resize(own.len() * w, 0.0);
        let mut values = vec![0.0f32; outside * heads.len() * d];
        let first = heads.start;
        let count = heads.len();
        let attended = self.model.attend(
            layer,
            n,
            (&whole.q, &whole.k, &whole.v),
            heads.clone(),
            &mut replace,
            &mut self.scratch,
            &mut |head, out| {
                for (row, o) in out.chunks_exact(d).enumerate() {
                    if own.contains(&row) {
                        let at = (row - own.start) * w + head * d;
                        attention[at..at + d].copy_from_slice(o);
                    } else {
                        let index = if row < own.start {
                            row
                        } else {
                            row - own.len()
                        };
                        let at = (index * count + head - first) * d;
                        values[at..at + d].copy_from_slice(o);
                    }
                }
            },
        );
        self.scratch.attention = attention;
        attended?;
        self.attended = Some(heads.clone());
        Ok(HeadShare {
            heads,
            rows: own,
            values,
        })
    }

    /// The rest of the layer whose heads [`LmPart::attend_heads`] split, from the other
    /// parts' heads (`others`, in any order): with this part's they must cover every head once.
    pub fn finish_heads(&mut self, others: Vec<HeadShare>) -> Result<(), LmError> {
        let layer = self.next;
        let Some(mine) = self.attended.take() else {
            return Err(LmError::Replacement(format!(
                "layer {layer}: no heads were attended to finish"
            )));
        };
        let c = &self.model.config;
        let (n, w, d) = (self.ids.len(), c.width, c.head_dim);
        let own = self.rows.clone();
        let mut covered = vec![false; c.heads];
        covered[mine].fill(true);
        for share in &others {
            let outside = n.saturating_sub(share.rows.len());
            let fits = share.heads.end <= c.heads
                && share.rows.end <= n
                && (share.rows.end <= own.start || share.rows.start >= own.end)
                && share.values.len() == outside * share.heads.len() * d
                && covered[share.heads.clone()].iter().all(|&c| !c);
            if !fits {
                return Err(LmError::Replacement(format!(
                    "layer {layer}: heads {:?} of rows outside {:?} do not fit",
                    share.heads, share.rows
                )));
            }
            covered[share.heads.clone()].fill(true);
            let count = share.heads.len();
            for row in own.clone() {
                let index = if row < share.rows.start {
                    row
                } else {
                    row - share.rows.len()
                };
                for (l, head) in share.heads.clone().enumerate() {
                    let from = (index * count + l) * d;
                    let at = (row - own.start) * w + head * d;
                    self.scratch.attention[at..at + d]
                        .copy_from_slice(&share.values[from..from + d]);
                }
            }
        }
        if covered.iter().any(|&c| !c) {
            return Err(LmError::Replacement(format!(
                "layer {layer}: the parts' heads do not cover the model's {}",
                c.heads
            )));
        }
        self.model
            .feed(layer, &mut self.x, own.len(), &mut self.scratch);
        self.next += 1;
        Ok(())
    }

    /// The layer projected last and the whole text's share, joined from this part's and the
    /// others', which must cover the text's rows once.
    fn joined(
        &self,
        mine: LayerShare,
        others: Vec<LayerShare>,
    ) -> Result<(usize, LayerShare), LmError> {
        let layer = self
            .next_layer()
            .ok_or_else(|| LmError::Replacement("every layer has run".into()))?;
        if self.attended.is_some() {
            return Err(LmError::Replacement(format!(
                "layer {layer}: its heads are not finished"
            )));
        }
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
        let whole = LayerShare {
            rows: 0..n,
            q: join(|s| &s.q),
            k: join(|s| &s.k),
            v: join(|s| &s.v),
        };
        Ok((layer, whole))
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
