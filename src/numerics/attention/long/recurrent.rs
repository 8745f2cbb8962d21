//! Causal linear attention run as a recurrent network: one head's state `S = Σ_j ψ(k_j) v_jᵀ`
//! and `z = Σ_j ψ(k_j)` (D × dv and D floats, with the running key maximum M of
//! [`super::linear`]) carried from token to token, so that a token costs the same whatever the
//! position: its features, `S += ψ(k) vᵀ`, `z += ψ(k)`, and `ô = φ(q)·S / φ(q)·z`
//! (Katharopoulos et al. 2020, "Transformers are RNNs", eq. 16–20; REFERENCE.md, "The attention
//! level"). The state's size does not grow: decoding with it needs no key/value cache.
//!
//! A prompt ([`RecurrentHead::prefill`]) and a token ([`RecurrentHead::step`]) run the same
//! prefix sums as [`LinearForm::CausalPrefix`](super::LinearForm::CausalPrefix), so a prompt
//! followed by its tokens one at a time gives that form's outputs bit for bit.

use super::Sequence;
use super::features::FeatureMap32;
use super::linear::{KeyState, normalise, prefix_into};

/// One head's feature map and its state after the tokens it has seen.
#[derive(Clone, Debug)]
pub struct RecurrentHead {
    map: FeatureMap32,
    dv: usize,
    state: KeyState,
    tokens: usize,
}

impl RecurrentHead {
    /// A head with no token yet, for values of `dv` floats.
    pub fn new(map: FeatureMap32, dv: usize) -> Self {
        let state = KeyState::new(map.size(), dv);
        Self {
            map,
            dv,
            state,
            tokens: 0,
        }
    }

    /// The map's input dimension d.
    pub fn dim(&self) -> usize {
        self.map.dim()
    }

    /// Tokens absorbed so far.
    pub fn tokens(&self) -> usize {
        self.tokens
    }

    /// Multiply-adds of one step: both sides' features, `S += ψ vᵀ`, `z += ψ`, `φ·S` and
    /// `φ·z`, whatever the position.
    pub fn step_multiply_adds(&self) -> f64 {
        let (size, dv) = (self.map.size() as f64, self.dv as f64);
        2.0 * self.map.multiply_adds_per_token() + 2.0 * size * dv + 2.0 * size
    }

    /// Bytes the head carries between tokens (S, z, the norm sum and M): constant in the
    /// position.
    pub fn state_bytes(&self) -> usize {
        self.state.bytes()
    }

    /// The outputs of `seq`'s tokens (len × dv), each reading every key up to it, the state
    /// before `seq` included; the state then holds `seq`'s keys too. A row whose denominator is
    /// not usable is NaN; the count of such rows is returned with the outputs.
    pub fn prefill(&mut self, seq: &Sequence<'_>) -> (Vec<f32>, usize) {
        let mut output = vec![0.0f32; seq.len * seq.dv];
        if seq.len == 0 {
            return (output, 0);
        }
        let dens = prefix_into(&self.map, seq, &mut self.state, &mut output);
        let bad = normalise(&mut output, &dens, seq.dv);
        self.tokens += seq.len;
        (output, bad)
    }

    /// One token: its key and value absorbed, then its query read into `out` (dv floats).
    /// False (and `out` NaN) when the denominator is not usable.
    pub fn step(&mut self, q: &[f32], k: &[f32], v: &[f32], out: &mut [f32]) -> bool {
        let d = self.map.dim();
        let seq = match Sequence::new(1, d, self.dv, q, k, v) {
            Some(seq) if out.len() == self.dv => seq,
            _ => {
                out.fill(f32::NAN);
                return false;
            }
        };
        let (output, bad) = self.prefill(&seq);
        out.copy_from_slice(&output);
        bad == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numerics::attention::long::{LinearForm, linear_attention_f32};

    fn tokens(len: usize, width: usize, salt: usize) -> Vec<f32> {
        (0..len * width)
            .map(|i| (((i * 37 + salt * 11) % 101) as f32 - 50.0) / 60.0)
            .collect()
    }

    /// A prompt, then its remaining tokens one at a time, gives the prefix-sum form's outputs
    /// bit for bit, for a positive map (elu + 1) and an exponential one whose keys raise M.
    #[test]
    fn steps_after_a_prompt_equal_the_prefix_sums() {
        let (len, d, dv, prompt) = (70, 4, 3, 66);
        let exponential = FeatureMap32::ElementwiseExponential {
            d,
            query_scale: 0.7,
            key_scale: 1.3,
        };
        for map in [FeatureMap32::EluPlusOne { d }, exponential] {
            let (q, k, v) = (tokens(len, d, 1), tokens(len, d, 2), tokens(len, dv, 3));
            let seq = Sequence::new(len, d, dv, &q, &k, &v).expect("shapes");
            let whole = linear_attention_f32(&map, &seq, LinearForm::CausalPrefix).output;
            let mut head = RecurrentHead::new(map.clone(), dv);
            let first = Sequence::new(
                prompt,
                d,
                dv,
                &q[..prompt * d],
                &k[..prompt * d],
                &v[..prompt * dv],
            )
            .expect("shapes");
            let (mut got, bad) = head.prefill(&first);
            assert_eq!(bad, 0);
            let before = head.state_bytes();
            for i in prompt..len {
                let mut out = vec![0.0; dv];
                let (qi, ki, vi) = (
                    &q[i * d..(i + 1) * d],
                    &k[i * d..(i + 1) * d],
                    &v[i * dv..(i + 1) * dv],
                );
                assert!(head.step(qi, ki, vi, &mut out));
                got.extend(out);
            }
            assert_eq!(got, whole, "{map:?}");
            assert_eq!(head.tokens(), len);
            assert_eq!(head.state_bytes(), before, "the state does not grow");
            assert_eq!(before, 4 * (d * dv + d + 2));
        }
    }

    /// Wrong shapes give NaN and false, not a panic.
    #[test]
    fn a_step_of_the_wrong_shape_is_refused() {
        let mut head = RecurrentHead::new(FeatureMap32::EluPlusOne { d: 2 }, 2);
        let mut out = vec![0.0; 2];
        assert!(!head.step(&[1.0], &[1.0, 2.0], &[1.0, 2.0], &mut out));
        assert!(out.iter().all(|x| x.is_nan()));
        assert_eq!(head.tokens(), 0);
    }
}
