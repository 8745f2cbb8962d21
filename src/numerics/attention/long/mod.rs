//! Attention over long sequences, timed fairly: f32 kernels with `simd128` register blocking for
//! exact softmax attention ([`flash`], tiled with an online softmax) and for linear attention
//! with a feature map ([`linear`]: bidirectional, and causal by prefix sums or by chunks), so
//! that the length study (`lab::attention::lengths`) compares like with like. The lab's f64
//! code (`exact`, `linear`) remains the reference: the tests here hold these kernels to it.

pub mod features;
pub mod flash;
pub mod gemm;
pub mod linear;
pub mod recurrent;
#[cfg(test)]
mod tests;

pub use features::FeatureMap32;
pub use flash::{exact_multiply_adds, flash_attention, flash_memory_bytes};
pub use linear::{
    LinearForm, LinearRun, linear_attention_f32, linear_memory_bytes, linear_multiply_adds,
};
pub use recurrent::RecurrentHead;

/// Queries, keys (L × d) and values (L × dv) in f32, row-major, scaled as the model scales them
/// (`P_ij = softmax_j(q_i·k_j)`).
#[derive(Clone, Copy, Debug)]
pub struct Sequence<'a> {
    pub len: usize,
    pub d: usize,
    pub dv: usize,
    pub q: &'a [f32],
    pub k: &'a [f32],
    pub v: &'a [f32],
}

impl<'a> Sequence<'a> {
    /// `None` when a slice does not have the shape's length.
    pub fn new(
        len: usize,
        d: usize,
        dv: usize,
        q: &'a [f32],
        k: &'a [f32],
        v: &'a [f32],
    ) -> Option<Self> {
        (q.len() == len * d && k.len() == len * d && v.len() == len * dv && d > 0 && dv > 0)
            .then_some(Self {
                len,
                d,
                dv,
                q,
                k,
                v,
            })
    }
}
