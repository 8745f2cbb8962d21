//! The forward split by rows: a part computes the hidden states of some of a text's rows
//! (tokens), and per layer needs only every row's keys and values from the other parts. The
//! whole forward is one part over every row ([`BertWeights::forward_with`] goes through here),
//! so two workers that each run half of a text's rows get the whole forward's numbers bit for
//! bit (every step is row by row, and attention of a query depends only on it and the keys),
//! except the sentence embedding, which sums the parts' f64 column sums in another order (see
//! [`join_parts`]).
//!
//! Per layer: [`ForwardPart::project`] gives this part's rows' keys and values (to send to the
//! other parts), [`ForwardPart::finish_layer`] takes every part's (its own included) and runs
//! the rest of the layer on its rows. After the last layer, [`ForwardPart::finish`], then
//! [`join_parts`] on every part's output.

use std::ops::Range;

use super::ModelError;
use super::forward_io::{Forward, HeadInputs, Keep, LayerStates, Replacement};
use super::head_attention::{HeadAttention, Rows};
use super::rows::{embed, finish_rows, layer_norm};
use super::weights::BertWeights;

/// One part's keys and values of one layer: rows `rows` of the text, each `rows.len() × hidden`
/// (heads side by side, as the query-key-value product gives them). Plain vectors, so that a
/// worker can transfer their buffers.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyValues {
    pub rows: Range<usize>,
    pub keys: Vec<f32>,
    pub values: Vec<f32>,
}

/// One layer's raw projections `x Wᵀ + b` (before the `1/√dh` scaling) as a part keeps them:
/// its own rows' queries (`rows × hidden`) and every row's keys and values (`L × hidden`),
/// heads side by side.
#[derive(Clone, Debug, PartialEq)]
pub struct KeptLayer {
    pub queries: Vec<f32>,
    pub keys: Vec<f32>,
    pub values: Vec<f32>,
}

/// What a part returns after the last layer.
#[derive(Clone, Debug, PartialEq)]
pub struct PartOutput {
    /// The text's tokens L.
    pub len: usize,
    /// Heads per layer (to lay out [`Forward::qkv`]).
    pub heads: usize,
    /// This part's rows.
    pub rows: Range<usize>,
    /// The last layer's hidden states of these rows, `rows × hidden`.
    pub hidden: Vec<f32>,
    /// Per column, the f64 sum of `hidden` over these rows (in row order).
    pub column_sums: Vec<f64>,
    /// When kept: per layer, its projections ([`KeptLayer`]).
    pub qkv: Option<Vec<KeptLayer>>,
    /// When kept: per layer, these rows' attention outputs and hidden states.
    pub layers: Option<Vec<LayerStates>>,
}

/// One part of a forward in progress ([`BertWeights::forward_part`]).
#[derive(Debug)]
pub struct ForwardPart<'w> {
    weights: &'w BertWeights,
    len: usize,
    rows: Range<usize>,
    /// The next layer.
    layer: usize,
    /// Whether the next layer's projections are in `qkv`.
    projected: bool,
    /// These rows' hidden states, `rows × hidden`.
    x: Vec<f32>,
    /// These rows' queries, keys and values, `rows × 3·hidden`.
    qkv: Vec<f32>,
    /// Every row's keys and values when they come in several parts, `L × hidden` each.
    keys: Vec<f32>,
    values: Vec<f32>,
    head: HeadAttention,
    queries: Vec<f32>,
    head_out: Vec<f32>,
    context: Vec<f32>,
    projected_rows: Vec<f32>,
    inner: Vec<f32>,
    kept: Option<Vec<KeptLayer>>,
    states: Option<Vec<LayerStates>>,
}

fn parts_error(reason: String) -> ModelError {
    ModelError::Parts(reason)
}

/// The order in which `ranges` (each non-empty) cover `0..len` once, or why they do not.
fn cover_order(ranges: &[Range<usize>], len: usize) -> Result<Vec<usize>, ModelError> {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|&i| (ranges[i].start, ranges[i].end));
    let mut next = 0;
    for &i in &order {
        let r = &ranges[i];
        if r.start >= r.end {
            return Err(parts_error(format!("part {i}: rows {r:?} are empty")));
        }
        if r.start != next {
            return Err(parts_error(if r.start > next {
                format!("rows {next}..{} are in no part", r.start)
            } else {
                format!("rows {}..{} are in two parts", r.start, next.min(r.end))
            }));
        }
        next = r.end;
    }
    if next != len {
        return Err(parts_error(if next < len {
            format!("rows {next}..{len} are in no part")
        } else {
            format!("the parts reach row {next}, past the text's {len} tokens")
        }));
    }
    Ok(order)
}

impl BertWeights {
    /// Why the model cannot run on `ids` (none, more than its positions, outside its
    /// vocabulary), if it cannot.
    pub(super) fn check_ids(&self, ids: &[u32]) -> Result<(), ModelError> {
        let c = &self.config;
        if ids.is_empty() {
            return Err(ModelError::NoTokens);
        }
        if ids.len() > c.max_position_embeddings {
            return Err(ModelError::TooManyTokens {
                tokens: ids.len(),
                limit: c.max_position_embeddings,
            });
        }
        if let Some(&id) = ids.iter().find(|&&id| id as usize >= c.vocab_size) {
            return Err(ModelError::Tokenizer(format!(
                "token id {id} is outside the vocabulary of {}",
                c.vocab_size
            )));
        }
        Ok(())
    }

    /// This worker's share of a forward: rows `rows` of the text `ids` (all the ids: the
    /// positions and the attention need them), keeping what `keep` asks.
    pub fn forward_part(
        &self,
        ids: &[u32],
        rows: Range<usize>,
        keep: Keep,
    ) -> Result<ForwardPart<'_>, ModelError> {
        let c = &self.config;
        let len = ids.len();
        self.check_ids(ids)?;
        if rows.start >= rows.end || rows.end > len {
            return Err(parts_error(format!(
                "rows {rows:?} are not a non-empty part of the text's {len} tokens"
            )));
        }
        let (h, n) = (c.hidden_size, rows.len());
        let mut x = vec![0.0f32; n * h];
        embed(self, &ids[rows.clone()], rows.start, &mut x);
        layer_norm(&mut x, &self.embedding_norm, c.layer_norm_eps as f32);
        let layers = self.layers.len();
        Ok(ForwardPart {
            weights: self,
            len,
            rows,
            layer: 0,
            projected: false,
            x,
            qkv: vec![0.0; n * 3 * h],
            keys: Vec::new(),
            values: Vec::new(),
            head: HeadAttention::default(),
            queries: Vec::new(),
            head_out: Vec::new(),
            context: vec![0.0; n * h],
            projected_rows: vec![0.0; n * h],
            inner: vec![0.0; n * c.intermediate_size],
            kept: keep.qkv.then(|| Vec::with_capacity(layers)),
            states: keep.layers.then(|| Vec::with_capacity(layers)),
        })
    }
}

impl ForwardPart<'_> {
    /// The layer that [`Self::project`] computes next; `None` after the last.
    pub fn next_layer(&self) -> Option<usize> {
        (self.layer < self.weights.layers.len()).then_some(self.layer)
    }

    /// This part's rows.
    pub fn rows(&self) -> Range<usize> {
        self.rows.clone()
    }

    /// The next layer's queries, keys and values for this part's rows; returns its keys and
    /// values (to send to the other parts, and to pass back to [`Self::finish_layer`]).
    pub fn project(&mut self) -> Result<KeyValues, ModelError> {
        let layer = self.next_layer().ok_or_else(|| {
            parts_error("project after the last layer: the forward is done".into())
        })?;
        let n = self.rows.len();
        self.weights.layers[layer]
            .qkv
            .apply(&self.x, n, &mut self.qkv);
        self.projected = true;
        Ok(self.key_values())
    }

    /// Layer 0's projections taken from `qkv` (this part's rows × 3·hidden, what
    /// [`Self::projections`] gave after layer 0 of a forward of the same ids and rows) instead
    /// of computed: the embeddings are all layer 0 reads. Only layer 0; another length is an
    /// error.
    pub fn project_from(&mut self, qkv: &[f32]) -> Result<KeyValues, ModelError> {
        if self.next_layer() != Some(0) || self.projected {
            return Err(parts_error(
                "projections can be taken only for layer 0, before it runs".into(),
            ));
        }
        let expected = self.rows.len() * 3 * self.weights.config.hidden_size;
        if qkv.len() != expected {
            return Err(parts_error(format!(
                "layer 0's projections: {} values, expected {expected}",
                qkv.len()
            )));
        }
        self.qkv.clear();
        self.qkv.extend_from_slice(qkv);
        self.projected = true;
        Ok(self.key_values())
    }

    /// The projections of the layer just projected (this part's rows × 3·hidden: queries,
    /// keys, values), before it is finished.
    pub fn projections(&self) -> &[f32] {
        &self.qkv
    }

    /// This part's keys and values from its projections.
    fn key_values(&self) -> KeyValues {
        let (h, n) = (self.weights.config.hidden_size, self.rows.len());
        let mut keys = Vec::with_capacity(n * h);
        let mut values = Vec::with_capacity(n * h);
        for row in self.qkv.chunks_exact(3 * h) {
            keys.extend_from_slice(&row[h..2 * h]);
            values.extend_from_slice(&row[2 * h..]);
        }
        KeyValues {
            rows: self.rows.clone(),
            keys,
            values,
        }
    }

    /// Every part's keys and values of this layer (this part's included, together covering
    /// `0..L` once, in any order): attention of this part's queries, the output projection,
    /// the feed-forward and both norms.
    pub fn finish_layer(&mut self, parts: &[KeyValues]) -> Result<(), ModelError> {
        self.finish_layer_with(parts, &mut None)
    }

    /// [`Self::finish_layer`] with the heads that `replace` answers for computed by it (only
    /// for a part over every row: a replacement sees a head's every query).
    pub(crate) fn finish_layer_with(
        &mut self,
        parts: &[KeyValues],
        replace: &mut Option<Replacement>,
    ) -> Result<(), ModelError> {
        let layer = self.next_layer().ok_or_else(|| {
            parts_error("finish_layer after the last layer: the forward is done".into())
        })?;
        if !self.projected {
            return Err(parts_error(format!(
                "finish_layer before project: layer {layer}'s queries are not computed"
            )));
        }
        let c = &self.weights.config;
        let (h, len, n) = (c.hidden_size, self.len, self.rows.len());
        let ranges: Vec<Range<usize>> = parts.iter().map(|p| p.rows.clone()).collect();
        let order = cover_order(&ranges, len)?;
        for (i, p) in parts.iter().enumerate() {
            let expected = p.rows.len() * h;
            if p.keys.len() != expected || p.values.len() != expected {
                return Err(parts_error(format!(
                    "part {i} (rows {:?}): {} keys and {} values, expected {expected} each",
                    p.rows,
                    p.keys.len(),
                    p.values.len()
                )));
            }
        }
        if replace.is_some() && n != len {
            return Err(parts_error(
                "a replacement of attention needs a part over every row".into(),
            ));
        }
        let (keys, values): (&[f32], &[f32]) = if let [only] = parts {
            (&only.keys, &only.values)
        } else {
            self.keys.clear();
            self.values.clear();
            for &i in &order {
                self.keys.extend_from_slice(&parts[i].keys);
                self.values.extend_from_slice(&parts[i].values);
            }
            (&self.keys, &self.values)
        };
        if let Some(kept) = self.kept.as_mut() {
            let mut queries = Vec::with_capacity(n * h);
            for row in self.qkv.chunks_exact(3 * h) {
                queries.extend_from_slice(&row[..h]);
            }
            kept.push(KeptLayer {
                queries,
                keys: keys.to_vec(),
                values: values.to_vec(),
            });
        }
        let (heads, dh) = (c.num_attention_heads, c.head_dim());
        let scale = 1.0 / (dh as f32).sqrt();
        for head in 0..heads {
            // This head's queries, raw (a replacement gets them so).
            self.queries.clear();
            for row in self.qkv.chunks_exact(3 * h) {
                self.queries
                    .extend_from_slice(&row[head * dh..(head + 1) * dh]);
            }
            self.head_out.resize(n * dh, 0.0);
            let head_keys = Rows {
                values: &keys[head * dh..],
                stride: h,
            };
            let head_values = Rows {
                values: &values[head * dh..],
                stride: h,
            };
            let replaced = match replace.as_mut() {
                Some(replace) => replacement(
                    replace,
                    (layer, head, len, dh),
                    &self.queries,
                    head_keys,
                    head_values,
                )?,
                None => None,
            };
            match replaced {
                Some(output) => self.head_out.copy_from_slice(&output),
                None => {
                    // The queries carry the 1/√dh, so that q·k is the logit.
                    self.queries.iter_mut().for_each(|x| *x *= scale);
                    self.head.pack(head_keys, head_values, len, dh);
                    self.head.attend(&self.queries, n, &mut self.head_out);
                }
            }
            for (i, row) in self.head_out.chunks_exact(dh).enumerate() {
                self.context[i * h + head * dh..i * h + (head + 1) * dh].copy_from_slice(row);
            }
        }
        finish_rows(
            &self.weights.layers[layer],
            c.layer_norm_eps as f32,
            n,
            &self.context,
            &mut self.x,
            (&mut self.projected_rows, &mut self.inner),
        );
        if let Some(states) = self.states.as_mut() {
            states.push(LayerStates {
                attention: self.context.clone(),
                hidden: self.x.clone(),
            });
        }
        self.layer += 1;
        self.projected = false;
        Ok(())
    }

    /// After the last layer: this part's hidden rows, their column sums and what was kept.
    pub fn finish(self) -> Result<PartOutput, ModelError> {
        if let Some(layer) = self.next_layer() {
            return Err(parts_error(format!(
                "finish before the last layer: layer {layer} is still to run"
            )));
        }
        let h = self.weights.config.hidden_size;
        let mut column_sums = vec![0.0f64; h];
        for row in self.x.chunks_exact(h) {
            column_sums
                .iter_mut()
                .zip(row)
                .for_each(|(m, &v)| *m += f64::from(v));
        }
        Ok(PartOutput {
            len: self.len,
            heads: self.weights.config.num_attention_heads,
            rows: self.rows,
            hidden: self.x,
            column_sums,
            qkv: self.kept,
            layers: self.states,
        })
    }
}

/// What `replace` gives for one head (`None`: softmax), checked; `q` is the head's raw queries,
/// `keys` and `values` its rows in the layer's.
pub(super) fn replacement(
    replace: &mut Replacement,
    (layer, head, len, dh): (usize, usize, usize, usize),
    q: &[f32],
    keys: Rows,
    values: Rows,
) -> Result<Option<Vec<f32>>, ModelError> {
    let gather = |m: Rows| -> Vec<f32> {
        (0..len)
            .flat_map(|j| &m.values[j * m.stride..][..dh])
            .copied()
            .collect()
    };
    let (k, v) = (gather(keys), gather(values));
    let inputs = HeadInputs {
        layer,
        head,
        len,
        dim: dh,
        q,
        k: &k,
        v: &v,
    };
    match replace(&inputs) {
        None => Ok(None),
        Some(Err(reason)) => Err(ModelError::Replacement(reason)),
        Some(Ok(output)) if output.len() == len * dh => Ok(Some(output)),
        Some(Ok(output)) => Err(ModelError::Replacement(format!(
            "layer {layer} head {head}: {} values, expected {}",
            output.len(),
            len * dh
        ))),
    }
}

/// The whole forward from its parts (any order; together covering the text's rows once): the
/// hidden states and what was kept, row by row, and the sentence embedding, the parts' column
/// sums added (in row order) and normalised. With one part this is the whole forward's
/// arithmetic; with several, the embedding's f64 sums are grouped otherwise, which can move it
/// by about one f32 rounding.
pub fn join_parts(mut parts: Vec<PartOutput>) -> Result<Forward, ModelError> {
    let first = parts
        .first()
        .ok_or_else(|| parts_error("no parts to join".into()))?;
    let (len, heads, h) = (first.len, first.heads, first.column_sums.len());
    let (keeps_qkv, keeps_layers) = (first.qkv.is_some(), first.layers.is_some());
    for (i, p) in parts.iter().enumerate() {
        if (p.len, p.heads, p.column_sums.len()) != (len, heads, h) {
            return Err(parts_error(format!(
                "part {i} is of another text or model ({} tokens, {} heads, hidden {})",
                p.len,
                p.heads,
                p.column_sums.len()
            )));
        }
        if p.hidden.len() != p.rows.len() * h {
            return Err(parts_error(format!(
                "part {i}: {} hidden values for rows {:?}",
                p.hidden.len(),
                p.rows
            )));
        }
        if (p.qkv.is_some(), p.layers.is_some()) != (keeps_qkv, keeps_layers) {
            return Err(parts_error(format!(
                "part {i} kept other things than part 0"
            )));
        }
    }
    let ranges: Vec<Range<usize>> = parts.iter().map(|p| p.rows.clone()).collect();
    cover_order(&ranges, len)?;
    parts.sort_by_key(|p| p.rows.start);

    let mut sums = vec![0.0f64; h];
    let mut hidden = Vec::with_capacity(len * h);
    for p in &parts {
        sums.iter_mut()
            .zip(&p.column_sums)
            .for_each(|(s, &v)| *s += v);
        hidden.extend_from_slice(&p.hidden);
    }
    let embedding = embedding_of_sums(&sums);
    let layers = if keeps_layers {
        Some(join_layers(&parts, len * h)?)
    } else {
        None
    };
    let qkv = if keeps_qkv {
        Some(join_qkv(&parts, len, heads, h)?)
    } else {
        None
    };
    Ok(Forward {
        len,
        hidden,
        embedding,
        qkv,
        layers,
    })
}

/// The sentence embedding from the last layer's column sums over every row (the mean pooling's
/// sums, normalised: the mean's `1/L` cancels).
pub fn embedding_of_sums(sums: &[f64]) -> Vec<f32> {
    let norm = sums.iter().map(|m| m * m).sum::<f64>().sqrt().max(1e-300);
    sums.iter().map(|m| (m / norm) as f32).collect()
}

/// Every layer's states, the parts' rows one after the other.
fn join_layers(parts: &[PartOutput], size: usize) -> Result<Vec<LayerStates>, ModelError> {
    let count = parts[0].layers.as_ref().map_or(0, Vec::len);
    let mut joined: Vec<LayerStates> = (0..count)
        .map(|_| LayerStates {
            attention: Vec::with_capacity(size),
            hidden: Vec::with_capacity(size),
        })
        .collect();
    for (i, p) in parts.iter().enumerate() {
        let states = p.layers.as_deref().unwrap_or_default();
        if states.len() != count {
            return Err(parts_error(format!(
                "part {i} kept {} layers, part 0 {count}",
                states.len()
            )));
        }
        for (all, own) in joined.iter_mut().zip(states) {
            all.attention.extend_from_slice(&own.attention);
            all.hidden.extend_from_slice(&own.hidden);
        }
    }
    if joined
        .iter()
        .any(|s| s.attention.len() != size || s.hidden.len() != size)
    {
        return Err(parts_error(
            "a part's kept layer states are misshapen".into(),
        ));
    }
    Ok(joined)
}

/// Every head's raw Q, K, V in [`Forward::qkv`]'s layout, `[layer][head][q, k, v][token][dim]`:
/// the queries from each part's own rows, the keys and values from the first part (every part
/// has every row's).
fn join_qkv(
    parts: &[PartOutput],
    len: usize,
    heads: usize,
    h: usize,
) -> Result<Vec<f32>, ModelError> {
    let count = parts[0].qkv.as_ref().map_or(0, Vec::len);
    let dh = h.checked_div(heads).unwrap_or(0);
    for (i, p) in parts.iter().enumerate() {
        let kept = p.qkv.as_deref().unwrap_or_default();
        let fits = kept.len() == count
            && kept.iter().all(|k| {
                k.queries.len() == p.rows.len() * h
                    && k.keys.len() == len * h
                    && k.values.len() == len * h
            });
        if !fits {
            return Err(parts_error(format!(
                "part {i}'s kept projections are misshapen"
            )));
        }
    }
    let mut out = Vec::with_capacity(count * 3 * len * h);
    fn kept(p: &PartOutput) -> &[KeptLayer] {
        p.qkv.as_deref().unwrap_or_default()
    }
    for layer in 0..count {
        for head in 0..heads {
            let columns = head * dh..(head + 1) * dh;
            for p in parts {
                for row in kept(p)[layer].queries.chunks_exact(h) {
                    out.extend_from_slice(&row[columns.clone()]);
                }
            }
            let first = &kept(&parts[0])[layer];
            for matrix in [&first.keys, &first.values] {
                for row in matrix.chunks_exact(h) {
                    out.extend_from_slice(&row[columns.clone()]);
                }
            }
        }
    }
    Ok(out)
}
