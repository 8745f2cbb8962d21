//! The pieces the explicit feature maps φ(x), ψ(y) share: which side a map is for ([`Side`]),
//! the vector it sees under a diagonal A ([`transformed_side`]) and exponential features of
//! that vector ([`exponential_features`], the real-A and GERF maps).

use super::{Projections, dot};
use crate::numerics::portable::Libm;

/// Which side a feature map is for: queries x get φ, keys y get ψ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Query,
    Key,
}

/// The vector a feature map sees: `a∘x` for a query, `y/a` for a key (`A` and `A^-T` of a
/// diagonal A; a complex A applies its phase on top).
pub fn transformed_side(a: &[f64], u: &[f64], side: Side) -> Vec<f64> {
    match side {
        Side::Query => u.iter().zip(a).map(|(u, a)| a * u).collect(),
        Side::Key => u.iter().zip(a).map(|(u, a)| u / a).collect(),
    }
}

/// Positive (or, with `hyperbolic`, the `[exp(ω·w), exp(−ω·w)]` pair of) features of a
/// transformed vector `w`: `scale · exp(−|w|²/2 + log_extra) · exp(±ω_k·w)`, with
/// `scale = m^{-1/2}` (positive) or `(2m)^{-1/2}` (hyperbolic). Shared by the real-A and GERF
/// feature maps.
pub fn exponential_features(
    w: &[f64],
    omega: &Projections,
    hyperbolic: bool,
    ln_extra: &dyn Fn(usize) -> f64,
    projection_scale: f64,
) -> Vec<f64> {
    let m = omega.m();
    let mut t = vec![0.0; m];
    omega.project(w, &mut t);
    let half_norm = 0.5 * dot(w, w);
    let offsets = exponential_offsets(m, hyperbolic, ln_extra);
    let mut out = Vec::with_capacity(if hyperbolic { 2 * m } else { m });
    for (offset, tk) in offsets.iter().zip(&t) {
        out.push((offset - half_norm + projection_scale * tk).libm_exp());
    }
    if hyperbolic {
        for (offset, tk) in offsets.iter().zip(&t) {
            out.push((offset - half_norm - projection_scale * tk).libm_exp());
        }
    }
    out
}

/// An estimator's feature map in the shape that kernels computing it for many tokens at once
/// need ([`crate::numerics::attention::long`], in f32): the projections ω, what each side sees
/// and the elementwise function. `features(x, side)` is this map for one token.
#[derive(Clone, Debug, PartialEq)]
pub enum BatchedForm {
    /// `exp(offset_k − |w|²/2 + s ω_k·w)` for k < m, and with `hyperbolic` the same with
    /// `−s ω_k·w` after them; `w = a∘x` for a query, `y/a` for a key ([`transformed_side`]).
    /// The offsets hold the `m^{-1/2}` (or `(2m)^{-1/2}`) scale and any per-feature term.
    Exponential {
        a: Vec<f64>,
        hyperbolic: bool,
        offsets: Vec<f64>,
        projection_scale: f64,
    },
    /// RFA's `m^{-1/2} e^{|u|²/2} [sin ω_k·u …, cos ω_k·u …]`, the same on both sides.
    Trigonometric,
}

/// The offsets `ln scale + ln_extra(k)` of [`exponential_features`] for m projections.
pub fn exponential_offsets(
    m: usize,
    hyperbolic: bool,
    ln_extra: &dyn Fn(usize) -> f64,
) -> Vec<f64> {
    let ln_scale = if hyperbolic {
        -0.5 * ((2 * m) as f64).libm_ln()
    } else {
        -0.5 * (m as f64).libm_ln()
    };
    (0..m).map(|k| ln_scale + ln_extra(k)).collect()
}
