//! One text's forward split by rows over the model workers (feature `text-model`): each worker
//! runs a contiguous share of the text's tokens ([`TextPart`], on `numerics::bert::part`) and,
//! per layer, sends the others its rows' keys and values ([`PeerMessage::KeyValues`]); after
//! the last layer each sends its rows' hidden states and queries ([`PeerMessage::Output`]), so
//! that every worker ends with the whole forward and keeps the text's heads (the attention
//! view's parts on the text then run in any of them). Every part sends one message per step,
//! a part without rows (more workers than tokens) an empty one, so a receiver always waits for
//! as many as there are other parts. How the messages travel (`MessagePort`s) is
//! `worker::model`'s; tests/model_fabric.rs passes them by hand and finds the same tokens,
//! heads and embedding as one worker's forward.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::lab::models::protocol::TextRun;
use crate::lab::models::swap::ExactRun;
use crate::lab::models::text_model::TextModel;
use crate::numerics::attention::heads::RealHeads;
use crate::numerics::bert::{
    Encoded, Forward, ForwardPart, Keep, KeptLayer, KeyValues, LayerStates, ModelError, PartOutput,
    embedding_of_sums, join_parts,
};

/// The rows of part `index` of `count` on a text of `len` tokens: contiguous, in order, sizes
/// differing by at most one; parts beyond the text's length get none.
pub fn part_rows(len: usize, index: usize, count: usize) -> Range<usize> {
    let count = count.clamp(1, len.max(1));
    if index >= count {
        return len..len;
    }
    let (base, extra) = (len / count, len % count);
    let start = index * base + index.min(extra);
    start..start + base + usize::from(index < extra)
}

/// Floats as they travel between workers: their little-endian bytes, copied in one piece
/// (postcard would write them one by one).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Floats(pub Vec<f32>);

impl Serialize for Floats {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = self.0.iter().flat_map(|v| v.to_le_bytes()).collect();
        serializer.serialize_bytes(&bytes)
    }
}

impl<'de> Deserialize<'de> for Floats {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let bytes = serde_bytes::ByteBuf::deserialize(deserializer)?;
        if bytes.len() % 4 != 0 {
            return Err(serde::de::Error::custom(format!(
                "{} bytes are not a whole number of f32s",
                bytes.len()
            )));
        }
        Ok(Floats(
            bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        ))
    }
}

/// What a part sends the other parts at one step (step `layer` for a layer's keys and values,
/// step [`TextPart::layers`] for the outputs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum PeerMessage {
    /// A part without rows: nothing to add.
    Empty,
    /// One layer's keys and values of rows `start..end` (`rows × hidden` each, heads side by
    /// side).
    KeyValues {
        start: usize,
        end: usize,
        keys: Floats,
        values: Floats,
    },
    /// After the last layer: rows `start..end`'s hidden states, their column sums (f64, in row
    /// order) and, per layer, their raw queries.
    Output {
        start: usize,
        end: usize,
        hidden: Floats,
        column_sums: Vec<f64>,
        queries: Vec<Floats>,
    },
    /// After the text's answer (step [`TextPart::layers`] + 1): per layer, rows
    /// `start..end`'s attention outputs and hidden states, what the text's exact run keeps, so
    /// that no worker runs the text again for its swap (sent apart, so that the answer does not
    /// wait for them).
    States {
        start: usize,
        end: usize,
        states: Vec<(Floats, Floats)>,
    },
}

/// A part's rows (start, end) and, per layer, their attention outputs and hidden states, as
/// [`PeerMessage::States`] carries them.
type RowStates = (usize, usize, Vec<(Floats, Floats)>);

/// One worker's share of a text's forward in progress.
pub struct TextPart<'m> {
    model: &'m TextModel,
    text: String,
    encoded: Encoded,
    /// `None` when this part has no rows: it only listens.
    part: Option<ForwardPart<'m>>,
    /// Every layer's keys and values as they came (this part's and the others').
    key_values: Vec<Vec<KeyValues>>,
    /// This part's output once finished.
    own: Option<PartOutput>,
}

impl<'m> TextPart<'m> {
    /// Part `index` of `count` on `text` (the same tokens in every part: the same tokenizer).
    pub fn start(
        model: &'m TextModel,
        text: &str,
        index: usize,
        count: usize,
    ) -> Result<Self, ModelError> {
        Self::from_encoded(model, text, model.encode(text)?, index, count)
    }

    /// [`TextPart::start`] on the text's tokens already encoded.
    pub fn from_encoded(
        model: &'m TextModel,
        text: &str,
        encoded: Encoded,
        index: usize,
        count: usize,
    ) -> Result<Self, ModelError> {
        let rows = part_rows(encoded.ids.len(), index, count);
        let keep = Keep {
            qkv: true,
            layers: true,
        };
        let part = if rows.is_empty() {
            None
        } else {
            Some(model.weights.forward_part(&encoded.ids, rows, keep)?)
        };
        Ok(TextPart {
            model,
            text: text.to_string(),
            encoded,
            part,
            key_values: Vec::new(),
            own: None,
        })
    }

    /// The text's tokens.
    pub fn tokens(&self) -> usize {
        self.encoded.ids.len()
    }

    /// The model's layers: the steps of keys and values before the outputs' step.
    pub fn layers(&self) -> usize {
        self.model.weights.layers.len()
    }

    /// The next layer's projection: this part's keys and values, to send the others (they are
    /// kept here too, for [`TextPart::finish_layer`]).
    pub fn project(&mut self) -> Result<PeerMessage, ModelError> {
        let Some(part) = self.part.as_mut() else {
            return Ok(PeerMessage::Empty);
        };
        let kv = part.project()?;
        let message = PeerMessage::KeyValues {
            start: kv.rows.start,
            end: kv.rows.end,
            keys: Floats(kv.keys.clone()),
            values: Floats(kv.values.clone()),
        };
        self.key_values.push(vec![kv]);
        Ok(message)
    }

    /// Finishes the layer last projected with the other parts' messages of its step.
    pub fn finish_layer(&mut self, others: Vec<PeerMessage>) -> Result<(), ModelError> {
        let mut layer = if self.part.is_some() {
            self.key_values.pop().unwrap_or_default()
        } else {
            Vec::new()
        };
        for message in others {
            match message {
                PeerMessage::Empty => {}
                PeerMessage::KeyValues {
                    start,
                    end,
                    keys,
                    values,
                } => layer.push(KeyValues {
                    rows: start..end,
                    keys: keys.0,
                    values: values.0,
                }),
                PeerMessage::Output { .. } | PeerMessage::States { .. } => {
                    return Err(ModelError::Parts(
                        "a part's output came while a layer was running".into(),
                    ));
                }
            }
        }
        layer.sort_by_key(|kv| kv.rows.start);
        if let Some(part) = self.part.as_mut() {
            part.finish_layer(&layer)?;
        }
        self.key_values.push(layer);
        Ok(())
    }

    /// After the last layer: this part's output, to send the others.
    pub fn finish(&mut self) -> Result<PeerMessage, ModelError> {
        let Some(part) = self.part.take() else {
            return Ok(PeerMessage::Empty);
        };
        let output = part.finish()?;
        let queries = output
            .qkv
            .as_deref()
            .unwrap_or_default()
            .iter()
            .map(|layer| Floats(layer.queries.clone()))
            .collect();
        let message = PeerMessage::Output {
            start: output.rows.start,
            end: output.rows.end,
            hidden: Floats(output.hidden.clone()),
            column_sums: output.column_sums.clone(),
            queries,
        };
        self.own = Some(output);
        Ok(message)
    }

    /// After [`TextPart::finish`]: this part's every layer's states, to send the others once
    /// the text is answered.
    pub fn states(&self) -> PeerMessage {
        let Some(output) = &self.own else {
            return PeerMessage::Empty;
        };
        PeerMessage::States {
            start: output.rows.start,
            end: output.rows.end,
            states: output
                .layers
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|layer| {
                    (
                        Floats(layer.attention.clone()),
                        Floats(layer.hidden.clone()),
                    )
                })
                .collect(),
        }
    }

    /// The text's run (tokens and sentence embedding, without its heads) from this part's output
    /// and the others' messages of the outputs' step: what the page waits for, ready before
    /// the heads are laid out. The embedding is [`join_parts`]'s (the column sums added in row
    /// order).
    pub fn run(&self, others: &[PeerMessage]) -> Result<TextRun, ModelError> {
        let mut sums: Vec<(usize, &[f64])> = self
            .own
            .iter()
            .map(|o| (o.rows.start, o.column_sums.as_slice()))
            .collect();
        for message in others {
            if let PeerMessage::Output {
                start, column_sums, ..
            } = message
            {
                sums.push((*start, column_sums.as_slice()));
            }
        }
        sums.sort_by_key(|s| s.0);
        let hidden = self.model.weights.config.hidden_size;
        let mut total = vec![0.0f64; hidden];
        for (_, part) in &sums {
            if part.len() != hidden {
                return Err(ModelError::Parts(format!(
                    "a part's {} column sums for a hidden size of {hidden}",
                    part.len()
                )));
            }
            total.iter_mut().zip(*part).for_each(|(t, &v)| *t += v);
        }
        Ok(self
            .model
            .run_of(&self.text, self.encoded.clone(), embedding_of_sums(&total)))
    }

    /// The whole run and the text's heads (see [`TextPart::run`] and
    /// [`TextPart::exact_and_heads`]).
    pub fn join(
        self,
        others: Vec<PeerMessage>,
        states: Vec<PeerMessage>,
    ) -> Result<(TextRun, RealHeads), ModelError> {
        let run = self.run(&others)?;
        Ok((run, self.exact_and_heads(others, states, 0.0)?.1))
    }

    /// The text's exact run, as each worker keeps it for the text's swap, and its heads, as
    /// the attention view reads them, from this part's output and the others' messages of the
    /// outputs' step and of the states' step (`states`); `ms` is the split forward's time. The
    /// exact run is one worker's [`crate::lab::models::swap::exact_run`] bit for bit: every
    /// state is the same product row by row, and its embedding is made again from the last
    /// layer's rows in row order as one worker's forward makes it (the heads' run keeps
    /// [`join_parts`]' embedding, the text's answer's).
    pub fn exact_and_heads(
        self,
        others: Vec<PeerMessage>,
        states: Vec<PeerMessage>,
        ms: f64,
    ) -> Result<(ExactRun, RealHeads), ModelError> {
        let mut states_by_rows: Vec<RowStates> = Vec::new();
        for message in states {
            match message {
                PeerMessage::Empty => {}
                PeerMessage::States { start, end, states } => {
                    states_by_rows.push((start, end, states));
                }
                _ => {
                    return Err(ModelError::Parts(
                        "a part's output came where its states were expected".into(),
                    ));
                }
            }
        }
        let len = self.encoded.ids.len();
        let heads = self.model.weights.config.num_attention_heads;
        let h = self.model.weights.config.hidden_size;
        // Every layer's keys and values of every row, in row order.
        let full: Vec<(Vec<f32>, Vec<f32>)> = self
            .key_values
            .iter()
            .map(|layer| {
                (
                    layer
                        .iter()
                        .flat_map(|kv| kv.keys.iter().copied())
                        .collect(),
                    layer
                        .iter()
                        .flat_map(|kv| kv.values.iter().copied())
                        .collect(),
                )
            })
            .collect();
        if full.len() != self.layers() {
            return Err(ModelError::Parts(format!(
                "{} layers' keys and values for a model of {}",
                full.len(),
                self.layers()
            )));
        }
        let mut parts: Vec<PartOutput> = self.own.into_iter().collect();
        for message in others {
            match message {
                PeerMessage::Empty => {}
                PeerMessage::Output {
                    start,
                    end,
                    hidden,
                    column_sums,
                    queries,
                } => {
                    let at = states_by_rows
                        .iter()
                        .position(|(s, e, _)| (*s, *e) == (start, end))
                        .ok_or_else(|| {
                            ModelError::Parts(format!("rows {start}..{end}: no states came"))
                        })?;
                    let (_, _, states) = states_by_rows.swap_remove(at);
                    if queries.len() != full.len() || states.len() != full.len() {
                        return Err(ModelError::Parts(format!(
                            "a part's output has {} layers' queries and {} layers' states, the model {}",
                            queries.len(),
                            states.len(),
                            full.len()
                        )));
                    }
                    let qkv = queries
                        .into_iter()
                        .zip(&full)
                        .map(|(queries, (keys, values))| KeptLayer {
                            queries: queries.0,
                            keys: keys.clone(),
                            values: values.clone(),
                        })
                        .collect();
                    let layers = states
                        .into_iter()
                        .map(|(attention, hidden)| LayerStates {
                            attention: attention.0,
                            hidden: hidden.0,
                        })
                        .collect();
                    parts.push(PartOutput {
                        len,
                        heads,
                        rows: start..end,
                        hidden: hidden.0,
                        column_sums,
                        qkv: Some(qkv),
                        layers: Some(layers),
                    });
                }
                PeerMessage::KeyValues { .. } | PeerMessage::States { .. } => {
                    return Err(ModelError::Parts(
                        "a layer's keys and values or a part's states came with the outputs".into(),
                    ));
                }
            }
        }
        let first_projections = first_projections(&parts, &full, h)?;
        let mut forward = join_parts(parts)?;
        // One worker's forward sums the last layer's columns over every row in row order.
        let mut sums = vec![0.0f64; h];
        for row in forward.hidden.chunks_exact(h) {
            sums.iter_mut()
                .zip(row)
                .for_each(|(s, &v)| *s += f64::from(v));
        }
        let exact_forward = Forward {
            len,
            hidden: forward.hidden.clone(),
            embedding: embedding_of_sums(&sums),
            qkv: None,
            layers: forward.layers.take(),
        };
        let exact = ExactRun::from_forward(
            &self.text,
            &self.encoded.ids,
            exact_forward,
            first_projections,
            ms,
        );
        let heads = self.model.text_run(&self.text, self.encoded, forward)?.1;
        Ok((exact, heads))
    }
}

/// Layer 0's projections of every row (`L × 3·hidden`: each row's query, key and value, as
/// one worker's forward keeps them) from the parts' kept queries (`parts`, any order) and
/// every row's keys and values (`full`).
fn first_projections(
    parts: &[PartOutput],
    full: &[(Vec<f32>, Vec<f32>)],
    h: usize,
) -> Result<Vec<f32>, ModelError> {
    let (keys, values) = full
        .first()
        .ok_or_else(|| ModelError::Parts("a model without layers".into()))?;
    let len = keys.len() / h;
    let mut order: Vec<&PartOutput> = parts.iter().collect();
    order.sort_by_key(|p| p.rows.start);
    let mut projections = Vec::with_capacity(len * 3 * h);
    for part in order {
        let queries = part
            .qkv
            .as_deref()
            .and_then(<[KeptLayer]>::first)
            .map(|layer| layer.queries.as_slice())
            .filter(|q| q.len() == part.rows.len() * h)
            .ok_or_else(|| {
                ModelError::Parts(format!("rows {:?}: no queries of layer 0", part.rows))
            })?;
        for (row, query) in part.rows.clone().zip(queries.chunks_exact(h)) {
            let (Some(key), Some(value)) = (
                keys.get(row * h..(row + 1) * h),
                values.get(row * h..(row + 1) * h),
            ) else {
                return Err(ModelError::Parts(format!(
                    "row {row}: no key or value of layer 0"
                )));
            };
            projections.extend_from_slice(query);
            projections.extend_from_slice(key);
            projections.extend_from_slice(value);
        }
    }
    Ok(projections)
}

#[cfg(test)]
mod tests {
    use super::{Floats, PeerMessage, part_rows};

    #[test]
    fn messages_round_trip_their_floats_bit_for_bit() {
        let message = PeerMessage::KeyValues {
            start: 3,
            end: 5,
            keys: Floats(vec![1.5, -0.0, f32::MIN_POSITIVE, 1e-42, f32::MAX]),
            values: Floats(vec![f32::NAN, -7.25]),
        };
        let bytes = postcard::to_allocvec(&message).expect("encodes");
        // Two varint lengths and 4 bytes a float (plus the variant and the rows).
        assert_eq!(bytes.len(), 1 + 1 + 1 + 1 + 20 + 1 + 8);
        let back: PeerMessage = postcard::from_bytes(&bytes).expect("decodes");
        let (
            PeerMessage::KeyValues { keys, values, .. },
            PeerMessage::KeyValues {
                keys: k, values: v, ..
            },
        ) = (&back, &message)
        else {
            panic!("another message: {back:?}");
        };
        let bits = |f: &Floats| f.0.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!((bits(keys), bits(values)), (bits(k), bits(v)));
        let cut = &bytes[..bytes.len() - 1];
        assert!(postcard::from_bytes::<PeerMessage>(cut).is_err());
    }

    #[test]
    fn parts_cover_the_rows_once_in_order() {
        for len in 1..20 {
            for count in 1..6 {
                let ranges: Vec<_> = (0..count).map(|i| part_rows(len, i, count)).collect();
                let mut next = 0;
                for r in ranges.iter().filter(|r| !r.is_empty()) {
                    assert_eq!(r.start, next, "len {len}, count {count}: {ranges:?}");
                    next = r.end;
                }
                assert_eq!(next, len);
                let sizes: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
                let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
                assert!(hi - lo <= 1 || *lo == 0 && len < count, "{sizes:?}");
            }
        }
        assert_eq!(part_rows(5, 0, 2), 0..3);
        assert_eq!(part_rows(5, 1, 2), 3..5);
        assert_eq!(part_rows(2, 3, 4), 2..2);
    }
}
