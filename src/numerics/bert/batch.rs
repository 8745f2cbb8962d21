//! Several texts through the forward at once ([`BertWeights::forward_batch`]): their rows
//! stacked for the dense layers, attention text by text. A dense layer's result for a row does
//! not depend on the other rows of the product (`panel_product`), nor does the layer norm's or
//! the GELU's, so each text's hidden states and embedding are its own forward's bit for bit;
//! what changes is that a batch of short texts (the retrieval set's dozen sentences of about a
//! dozen tokens) streams each weight matrix from memory once instead of once per text, which at
//! a dozen rows is most of a product's time.

use std::ops::Range;

use super::ModelError;
use super::forward_io::{Forward, Replacement};
use super::head_attention::{HeadAttention, Rows};
use super::part::{embedding_of_sums, replacement};
use super::rows::{embed, finish_rows, layer_norm};
use super::weights::BertWeights;

impl BertWeights {
    /// The forwards of `texts` (each `[CLS]` … `[SEP]` token ids), each equal to
    /// [`BertWeights::forward_with`] on it alone with nothing kept; the heads `replace` answers
    /// for are computed by it (called layer by layer, then head by head, then text by text),
    /// and a replacement's failure stops the whole batch. The first text that cannot run says
    /// why.
    pub fn forward_batch(
        &self,
        texts: &[&[u32]],
        mut replace: Option<Replacement>,
    ) -> Result<Vec<Forward>, ModelError> {
        for ids in texts {
            self.check_ids(ids)?;
        }
        let c = &self.config;
        let (h, heads, dh) = (c.hidden_size, c.num_attention_heads, c.head_dim());
        let eps = c.layer_norm_eps as f32;
        let mut spans: Vec<Range<usize>> = Vec::with_capacity(texts.len());
        let mut n = 0;
        for ids in texts {
            spans.push(n..n + ids.len());
            n += ids.len();
        }
        let mut x = vec![0.0f32; n * h];
        for (ids, span) in texts.iter().zip(&spans) {
            embed(self, ids, 0, &mut x[span.start * h..span.end * h]);
        }
        layer_norm(&mut x, &self.embedding_norm, eps);
        let mut qkv = vec![0.0f32; n * 3 * h];
        let mut context = vec![0.0f32; n * h];
        let mut projected = vec![0.0f32; n * h];
        let mut inner = vec![0.0f32; n * c.intermediate_size];
        let mut head_attention = HeadAttention::default();
        let (mut queries, mut head_out) = (Vec::new(), Vec::new());
        let scale = 1.0 / (dh as f32).sqrt();
        for (layer, weights) in self.layers.iter().enumerate() {
            weights.qkv.apply(&x, n, &mut qkv);
            for head in 0..heads {
                for span in &spans {
                    let len = span.len();
                    let rows = &qkv[span.start * 3 * h..span.end * 3 * h];
                    // This head's queries, raw (a replacement gets them so).
                    queries.clear();
                    for row in rows.chunks_exact(3 * h) {
                        queries.extend_from_slice(&row[head * dh..(head + 1) * dh]);
                    }
                    let keys = Rows {
                        values: &rows[h + head * dh..],
                        stride: 3 * h,
                    };
                    let values = Rows {
                        values: &rows[2 * h + head * dh..],
                        stride: 3 * h,
                    };
                    head_out.resize(len * dh, 0.0);
                    let replaced = match replace.as_mut() {
                        Some(replace) => {
                            replacement(replace, (layer, head, len, dh), &queries, keys, values)?
                        }
                        None => None,
                    };
                    match replaced {
                        Some(output) => head_out.copy_from_slice(&output),
                        None => {
                            // The queries carry the 1/√dh, so that q·k is the logit.
                            queries.iter_mut().for_each(|x| *x *= scale);
                            head_attention.pack(keys, values, len, dh);
                            head_attention.attend(&queries, len, &mut head_out);
                        }
                    }
                    for (i, row) in head_out.chunks_exact(dh).enumerate() {
                        let at = (span.start + i) * h + head * dh;
                        context[at..at + dh].copy_from_slice(row);
                    }
                }
            }
            finish_rows(
                weights,
                eps,
                n,
                &context,
                &mut x,
                (&mut projected, &mut inner),
            );
        }
        Ok(spans
            .iter()
            .map(|span| {
                let hidden = x[span.start * h..span.end * h].to_vec();
                let mut sums = vec![0.0f64; h];
                for row in hidden.chunks_exact(h) {
                    sums.iter_mut()
                        .zip(row)
                        .for_each(|(s, &v)| *s += f64::from(v));
                }
                Forward {
                    len: span.len(),
                    embedding: embedding_of_sums(&sums),
                    hidden,
                    qkv: None,
                    layers: None,
                }
            })
            .collect())
    }
}
