//! Seeded, independent random streams.
//!
//! Every random draw of an experiment comes from a stream named by `(seed, purpose, index,
//! sub_index)`, so any piece (one dataset, one pair's ω) can be regenerated on its own: a Web
//! Worker given only the configuration reproduces the page's numbers exactly.
//!
//! The four numbers form the 256-bit key of a ChaCha12 generator (`StdRng`), whose first 256
//! bits seed the stream's xoshiro256++ generator. ChaCha's output makes the seeds of different
//! keys independent; xoshiro256++ then draws the millions of Gaussians of one page (ω, the
//! datasets) at a fraction of ChaCha's cost in WebAssembly (`examples/kernel_wasm.rs`,
//! `omega`), with a period of 2^256 − 1, far beyond any stream's length.

use rand::SeedableRng;
use rand::rngs::{StdRng, Xoshiro256PlusPlus};

/// The generator of one stream.
pub type StreamRng = Xoshiro256PlusPlus;

/// What a stream is used for; part of its key, so different purposes never share draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u64)]
pub enum StreamPurpose {
    /// Means, variances and samples of one dataset.
    Dataset = 1,
    /// The projections ω shared by every pair of one dataset.
    SharedOmega = 2,
    /// The projections ω drawn afresh for one pair.
    PairOmega = 3,
    /// Independent repetitions: the MSE-against-m curve, tests, the command line.
    Trial = 4,
    /// The single-pair probe's independent estimates.
    Probe = 5,
    /// The attention view: synthetic data (index 0 queries and keys, 1 values), the feature
    /// maps' ω (index 2 + method, sub-index the draw) and randomized attention's samples.
    Attention = 6,
    /// The Hedgehog maps' initial noise (index the head, sub-index 0 queries, 1 keys).
    Hedgehog = 7,
    /// The language model's sampled continuation (index 0): one uniform draw per token, the
    /// same for the exact and the linear continuation.
    Generation = 8,
}

/// The generator for stream `(seed, purpose, index, sub_index)`.
pub fn stream_rng(seed: u64, purpose: StreamPurpose, index: u64, sub_index: u64) -> StreamRng {
    let mut key = [0u8; 32];
    for (chunk, word) in key
        .chunks_exact_mut(8)
        .zip([seed, purpose as u64, index, sub_index])
    {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    StreamRng::from_rng(&mut StdRng::from_seed(key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn same_key_same_stream_and_different_keys_differ() {
        let a: u64 = stream_rng(7, StreamPurpose::Dataset, 0, 0).next_u64();
        let b: u64 = stream_rng(7, StreamPurpose::Dataset, 0, 0).next_u64();
        let c: u64 = stream_rng(7, StreamPurpose::Dataset, 1, 0).next_u64();
        let e: u64 = stream_rng(7, StreamPurpose::SharedOmega, 0, 0).next_u64();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, e);
    }
}
