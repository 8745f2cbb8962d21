//! Deterministic polynomial feature maps for the softmax kernel (seed 004, "Taylor Expansion"
//! and "Exponential Definition"; REFERENCE.md, "The attention level", "Deterministic maps").
//!
//! Two approximations of `e^{q·k}` that are exact inner products of explicit, finite features:
//!
//! - **Taylor** of degree n: `Σ_{k=0}^{n} (q·k)^k / k!`, with
//!   `φ(u) = [⊗^k u / √k!]_{k=0..n}` of size `Σ_{k=0}^{n} d^k`.
//! - **Power** (the limit definition of `e^x`) of degree n: `(1 + q·k/n)^n`, with
//!   `φ(u) = ⊗^n [1, u/√n]` of size `(d + 1)^n`.
//!
//! Both feature sizes grow like `d^n`, usually far beyond the sequence length (seed 004,
//! "Result Analysis"), so [`PolynomialKernel::features`] refuses to build a map larger than a
//! caller's budget; [`PolynomialKernel::kernel`] evaluates the same number as the polynomial in
//! `q·k` at any size, which is what a caller should use beyond the budget.
//!
//! **Both can go negative** (REFERENCE.md): a Taylor polynomial of odd degree has exactly one
//! real root `r_n < 0` and is negative below it (`r_1 = −1`, `r_3 ≈ −1.596`); `(1 + x/n)^n` with
//! odd n is negative for `x < −n`. Even degrees are never negative (the even Taylor polynomials
//! have no real root; an even power is a square). A linear attention built on an odd degree can
//! therefore have row sums `≤ 0`: see [`PolynomialKernel::negative_below`].

use std::fmt;

use crate::numerics::input::InputError;

/// The largest degree the constructors accept (`d^8` features are already astronomically many
/// for any useful d; the kernel itself works at any degree).
pub const MAX_DEGREE: usize = 8;

/// Why a polynomial kernel could not be built or its features could not be produced.
#[derive(Clone, Debug, PartialEq)]
pub enum DeterministicError {
    /// The degree is outside `1..=MAX_DEGREE`.
    InvalidDegree { degree: usize },
    /// The explicit feature map would exceed the budget. `size` is `None` when the size does not
    /// even fit in a `usize`.
    TooLarge { size: Option<usize>, budget: usize },
    /// An input coordinate is NaN or infinite (`InputError::NonFinite` of `u`).
    Input(InputError),
}

impl fmt::Display for DeterministicError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeterministicError::InvalidDegree { degree } => write!(
                f,
                "polynomial degree must be between 1 and {MAX_DEGREE}, got {degree}"
            ),
            DeterministicError::TooLarge {
                size: Some(size),
                budget,
            } => write!(
                f,
                "the feature map has {size} coordinates, over the budget of {budget}: evaluate the kernel as a polynomial in q·k instead"
            ),
            DeterministicError::TooLarge { size: None, budget } => write!(
                f,
                "the feature map has more coordinates than a usize can count (budget {budget}): evaluate the kernel as a polynomial in q·k instead"
            ),
            DeterministicError::Input(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DeterministicError {}

impl From<InputError> for DeterministicError {
    fn from(e: InputError) -> Self {
        DeterministicError::Input(e)
    }
}

/// A deterministic polynomial approximation of `e^x`, `x = q·k` (seed 004).
///
/// Build with [`PolynomialKernel::taylor`] or [`PolynomialKernel::power`], which validate the
/// degree. The variants are public for matching; a variant built by hand with another degree
/// still never panics (degree 0 is the constant kernel 1 with the one feature `[1]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolynomialKernel {
    /// `Σ_{k=0}^{n} x^k / k!` (seed 004, "Taylor Expansion").
    Taylor { degree: usize },
    /// `(1 + x/n)^n` (seed 004, "Exponential Definition").
    Power { degree: usize },
}

fn check_degree(degree: usize) -> Result<usize, DeterministicError> {
    if (1..=MAX_DEGREE).contains(&degree) {
        Ok(degree)
    } else {
        Err(DeterministicError::InvalidDegree { degree })
    }
}

impl PolynomialKernel {
    /// The truncated Taylor series `Σ_{k≤n} x^k/k!`, `n = degree` in `1..=8`.
    pub fn taylor(degree: usize) -> Result<Self, DeterministicError> {
        Ok(PolynomialKernel::Taylor {
            degree: check_degree(degree)?,
        })
    }

    /// The limit-definition power `(1 + x/n)^n`, `n = degree` in `1..=8`.
    pub fn power(degree: usize) -> Result<Self, DeterministicError> {
        Ok(PolynomialKernel::Power {
            degree: check_degree(degree)?,
        })
    }

    /// The degree n.
    pub fn degree(&self) -> usize {
        match *self {
            PolynomialKernel::Taylor { degree } | PolynomialKernel::Power { degree } => degree,
        }
    }

    /// The kernel as a polynomial in `x = q·k`: `Σ_{k≤n} x^k/k!` (Taylor) or `(1 + x/n)^n`
    /// (power; 1 for n = 0), seed 004. Cost O(n), at any feature size. IEEE semantics: a NaN
    /// `x` gives NaN, and a huge `|x|` gives ±∞ rather than a panic.
    pub fn kernel(&self, x: f64) -> f64 {
        match *self {
            PolynomialKernel::Taylor { degree } => {
                // Horner: 1 + x(1 + x/2(1 + x/3(… (1 + x/n)))).
                let mut acc = 1.0;
                for k in (1..=degree).rev() {
                    acc = 1.0 + x / k as f64 * acc;
                }
                acc
            }
            PolynomialKernel::Power { degree: 0 } => 1.0,
            PolynomialKernel::Power { degree } => {
                let base = 1.0 + x / degree as f64;
                match i32::try_from(degree) {
                    Ok(n) => base.powi(n),
                    Err(_) => base.powf(degree as f64),
                }
            }
        }
    }

    /// The feature size for inputs of dimension d: `Σ_{k=0}^{n} d^k` (Taylor) or `(d + 1)^n`
    /// (power), seed 004; `None` if it overflows `usize`.
    pub fn feature_size(&self, d: usize) -> Option<usize> {
        match *self {
            PolynomialKernel::Taylor { degree } => {
                let mut total: usize = 0;
                let mut block: usize = 1;
                for k in 0..=degree {
                    if k > 0 {
                        block = block.checked_mul(d)?;
                    }
                    total = total.checked_add(block)?;
                }
                Some(total)
            }
            PolynomialKernel::Power { degree } => {
                let base = d.checked_add(1)?;
                let mut total: usize = 1;
                for _ in 0..degree {
                    total = total.checked_mul(base)?;
                }
                Some(total)
            }
        }
    }

    /// The explicit feature map `φ(u)` with `φ(q)·φ(k) = kernel(q·k)` (the same map for queries
    /// and keys), seed 004:
    ///
    /// - Taylor: `[1, u, vec(u⊗u)/√2!, …, vec(⊗^n u)/√n!]`, blocks in increasing k, each block
    ///   in row-major order of its multi-index `(i_1, …, i_k)`.
    /// - Power: `vec(⊗^n [1, u/√n])`, row-major in `(i_1, …, i_n)`, index 0 being the `1`.
    ///
    /// `Err(TooLarge)` when [`feature_size`](Self::feature_size)`(u.len())` exceeds `budget` or
    /// overflows (checked before any allocation, so nothing beyond the budget is ever allocated);
    /// `Err(Input(NonFinite))` for a NaN or infinite coordinate. An empty `u` (d = 0) gives
    /// `[1]`.
    pub fn features(&self, u: &[f64], budget: usize) -> Result<Vec<f64>, DeterministicError> {
        let size = self.feature_size(u.len());
        match size {
            Some(s) if s <= budget => {}
            _ => return Err(DeterministicError::TooLarge { size, budget }),
        }
        if let Some(index) = u.iter().position(|v| !v.is_finite()) {
            return Err(InputError::NonFinite { what: "u", index }.into());
        }
        let size = size.unwrap_or(0);
        let mut out = Vec::with_capacity(size);
        match *self {
            PolynomialKernel::Taylor { degree } => {
                // block_k = ⊗^k u / √k!, built as block_{k-1} ⊗ u / √k.
                let mut block = vec![1.0];
                out.push(1.0);
                for k in 1..=degree {
                    let scale = 1.0 / (k as f64).sqrt();
                    block = kronecker(&block, u, scale);
                    out.extend_from_slice(&block);
                }
            }
            PolynomialKernel::Power { degree } => {
                let mut base = Vec::with_capacity(u.len() + 1);
                base.push(1.0);
                if degree > 0 {
                    let s = 1.0 / (degree as f64).sqrt();
                    base.extend(u.iter().map(|v| v * s));
                }
                let mut acc = vec![1.0];
                for _ in 0..degree {
                    acc = kronecker(&acc, &base, 1.0);
                }
                out = acc;
            }
        }
        Ok(out)
    }

    /// Where the kernel turns negative: `Some(r)` with `kernel(x) < 0` exactly for `x < r`, or
    /// `None` when it is never negative (even degrees, and degree 0).
    ///
    /// Power with odd n: `r = −n`. Taylor with odd n: the polynomial's only real root (its
    /// derivative is the even Taylor polynomial of degree n − 1, which is positive, so it is
    /// increasing with one root), found by bisection on `[−n − 1, 0]` (`kernel(−n − 1) < 0`:
    /// REFERENCE.md's "odd n, q·k < −n" is a sufficient condition for both maps).
    pub fn negative_below(&self) -> Option<f64> {
        let n = self.degree();
        if n.is_multiple_of(2) {
            return None;
        }
        match self {
            PolynomialKernel::Power { .. } => Some(-(n as f64)),
            PolynomialKernel::Taylor { .. } => {
                let (mut lo, mut hi) = (-(n as f64) - 1.0, 0.0);
                for _ in 0..200 {
                    let mid = 0.5 * (lo + hi);
                    if self.kernel(mid) < 0.0 {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                Some(0.5 * (lo + hi))
            }
        }
    }

    /// A short label: `"Taylor, degree 2"` or `"(1 + q·k/2)^2"`.
    pub fn label(&self) -> String {
        match *self {
            PolynomialKernel::Taylor { degree } => format!("Taylor, degree {degree}"),
            PolynomialKernel::Power { degree } => format!("(1 + q·k/{degree})^{degree}"),
        }
    }
}

/// `vec(a ⊗ b) · scale`, row-major (a's index varies slowest).
fn kronecker(a: &[f64], b: &[f64], scale: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(a.len() * b.len());
    for x in a {
        let xs = x * scale;
        out.extend(b.iter().map(|y| xs * y));
    }
    out
}

/// Materialised features of the map (the caller keeps its size within the budget).
impl super::linear::FeatureMap for PolynomialKernel {
    fn features(&self, u: &[f64], _side: crate::numerics::estimators::Side) -> Vec<f64> {
        PolynomialKernel::features(self, u, usize::MAX).unwrap_or_default()
    }

    fn is_positive(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numerics::rng::{StreamPurpose, stream_rng};
    use rand_distr::{Distribution, StandardNormal};

    fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    fn gaussian(d: usize, scale: f64, rng: &mut crate::numerics::rng::StreamRng) -> Vec<f64> {
        (0..d)
            .map(|_| {
                let z: f64 = StandardNormal.sample(rng);
                scale * z
            })
            .collect()
    }

    /// The sum of the absolute values of the polynomial's terms at x: the scale of the rounding
    /// error of both evaluations (each term is computed to a few ulps), so the tolerance below is
    /// relative to it. For x ≥ 0 it equals the kernel itself, so there it is plain relative error.
    fn term_scale(kernel: &PolynomialKernel, x: f64) -> f64 {
        match *kernel {
            PolynomialKernel::Taylor { .. } => kernel.kernel(x.abs()),
            PolynomialKernel::Power { degree } => {
                (1.0 + x.abs() / degree as f64).powi(degree as i32)
            }
        }
    }

    #[test]
    fn features_reproduce_the_kernel() {
        let mut rng = stream_rng(4, StreamPurpose::Trial, 0, 0);
        for d in [1, 2, 3, 5] {
            for degree in 1..=4 {
                for kernel in [
                    PolynomialKernel::taylor(degree).unwrap(),
                    PolynomialKernel::power(degree).unwrap(),
                ] {
                    for _ in 0..5 {
                        let q = gaussian(d, 0.8, &mut rng);
                        let k = gaussian(d, 0.8, &mut rng);
                        let fq = kernel.features(&q, 1 << 20).unwrap();
                        let fk = kernel.features(&k, 1 << 20).unwrap();
                        assert_eq!(Some(fq.len()), kernel.feature_size(d));
                        let x = dot(&q, &k);
                        let exact = kernel.kernel(x);
                        let err = (dot(&fq, &fk) - exact).abs();
                        assert!(
                            err <= 1e-12 * term_scale(&kernel, x),
                            "{} d={d} x={x}: {} vs {exact}",
                            kernel.label(),
                            dot(&fq, &fk)
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn kernels_match_their_formulas_and_approach_exp() {
        let t = PolynomialKernel::taylor(3).unwrap();
        let x: f64 = 0.7;
        assert!((t.kernel(x) - (1.0 + x + x * x / 2.0 + x.powi(3) / 6.0)).abs() < 1e-15);
        let p = PolynomialKernel::power(4).unwrap();
        assert!((p.kernel(x) - (1.0 + x / 4.0).powi(4)).abs() < 1e-15);
        // Taylor's remainder at degree 8 and x = 1 is about 1/9! · e ≈ 7.5e-6.
        let t8 = PolynomialKernel::taylor(8).unwrap();
        assert!((t8.kernel(1.0) - 1f64.exp()).abs() < 1e-5);
        // (1 + 1/8)^8 = 2.5658, below e by about e/(2·8) = 0.17.
        let p8 = PolynomialKernel::power(8).unwrap();
        assert!((p8.kernel(1.0) - 2.565_784_513_950_348).abs() < 1e-12);
    }

    #[test]
    fn feature_sizes() {
        let t2 = PolynomialKernel::taylor(2).unwrap();
        assert_eq!(t2.feature_size(3), Some(1 + 3 + 9));
        assert_eq!(t2.feature_size(0), Some(1));
        let p3 = PolynomialKernel::power(3).unwrap();
        assert_eq!(p3.feature_size(4), Some(125));
        assert_eq!(
            PolynomialKernel::taylor(8).unwrap().feature_size(64),
            Some((0..=8).map(|k| 64usize.pow(k)).sum())
        );
        assert_eq!(
            PolynomialKernel::taylor(8)
                .unwrap()
                .feature_size(usize::MAX / 2),
            None
        );
        assert_eq!(
            PolynomialKernel::power(8).unwrap().feature_size(usize::MAX),
            None
        );
        assert_eq!(
            PolynomialKernel::taylor(2).unwrap().features(&[], 10),
            Ok(vec![1.0])
        );
    }

    #[test]
    fn over_budget_is_an_error_not_an_allocation() {
        let t8 = PolynomialKernel::taylor(8).unwrap();
        let u = vec![0.1; 64];
        let size = t8.feature_size(64);
        assert_eq!(
            t8.features(&u, 1_000_000),
            Err(DeterministicError::TooLarge {
                size,
                budget: 1_000_000
            })
        );
        let p2 = PolynomialKernel::power(2).unwrap();
        assert!(p2.features(&[1.0, 2.0], 8).is_err()); // 9 > 8
        assert_eq!(p2.features(&[1.0, 2.0], 9).map(|f| f.len()), Ok(9));
        // A hand-built variant with a huge degree overflows and is refused, without a panic.
        let huge = PolynomialKernel::Taylor { degree: 1000 };
        assert_eq!(
            huge.features(&[1.0, 2.0], usize::MAX),
            Err(DeterministicError::TooLarge {
                size: None,
                budget: usize::MAX
            })
        );
        // Its kernel is still Σ_{k≤1000} 0.5^k/k! = e^0.5 up to a tail below 0.5^1001/1001!
        // (nothing in f64) and Horner's rounding: within 1e-15 relative (about 4.5 ulp).
        let e_half = 0.5f64.exp();
        assert!(
            (huge.kernel(0.5) - e_half).abs() <= 1e-15 * e_half,
            "{} vs e^0.5 = {e_half}",
            huge.kernel(0.5)
        );
    }

    #[test]
    fn invalid_degrees_and_inputs_are_errors() {
        assert!(PolynomialKernel::taylor(0).is_err());
        assert!(PolynomialKernel::power(9).is_err());
        assert_eq!(
            PolynomialKernel::taylor(2)
                .unwrap()
                .features(&[1.0, f64::NAN], 1000),
            Err(DeterministicError::Input(InputError::NonFinite {
                what: "u",
                index: 1
            }))
        );
        assert!(PolynomialKernel::Power { degree: 0 }.kernel(-5.0) == 1.0);
        assert_eq!(
            PolynomialKernel::Power { degree: 0 }.features(&[3.0], 10),
            Ok(vec![1.0])
        );
        assert!(
            DeterministicError::InvalidDegree { degree: 9 }
                .to_string()
                .contains("between 1 and 8")
        );
    }

    #[test]
    fn odd_degrees_go_negative_even_degrees_do_not() {
        // Taylor degree 1: 1 + x < 0 for x < −1; degree 3: root near −1.596.
        let t1 = PolynomialKernel::taylor(1).unwrap();
        assert!((t1.negative_below().unwrap() + 1.0).abs() < 1e-12);
        let t3 = PolynomialKernel::taylor(3).unwrap();
        let r3 = t3.negative_below().unwrap();
        assert!((r3 + 1.596_071_637).abs() < 1e-8, "{r3}");
        assert!(t3.kernel(r3 - 0.01) < 0.0 && t3.kernel(r3 + 0.01) > 0.0);
        // φ(q)·φ(k) is negative too: q = (−1.2, −0.6), k = (1, 1), q·k = −1.8 < r3.
        let fq = t3.features(&[-1.2, -0.6], 100).unwrap();
        let fk = t3.features(&[1.0, 1.0], 100).unwrap();
        assert!(dot(&fq, &fk) < 0.0);
        for n in [1, 3, 5, 7] {
            let p = PolynomialKernel::power(n).unwrap();
            assert_eq!(p.negative_below(), Some(-(n as f64)));
            assert!(p.kernel(-(n as f64) - 0.5) < 0.0);
            assert!(p.kernel(-(n as f64) + 0.5) > 0.0);
            let t = PolynomialKernel::taylor(n).unwrap();
            let r = t.negative_below().unwrap();
            assert!(r < 0.0 && r > -(n as f64) - 1.0);
            assert!(t.kernel(r - 1e-3) < 0.0 && t.kernel(r + 1e-3) > 0.0);
        }
        for n in [2, 4, 6, 8] {
            let t = PolynomialKernel::taylor(n).unwrap();
            let p = PolynomialKernel::power(n).unwrap();
            assert_eq!(t.negative_below(), None);
            assert_eq!(p.negative_below(), None);
            for i in 0..400 {
                let x = -20.0 + 0.1 * i as f64;
                assert!(t.kernel(x) > 0.0 && p.kernel(x) >= 0.0, "{n} {x}");
            }
        }
    }

    #[test]
    fn labels() {
        assert_eq!(
            PolynomialKernel::taylor(2).unwrap().label(),
            "Taylor, degree 2"
        );
        assert_eq!(PolynomialKernel::power(2).unwrap().label(), "(1 + q·k/2)^2");
    }

    #[test]
    fn feature_values_are_pinned() {
        // The map's layout is part of its contract (callers index into it).
        let t = PolynomialKernel::taylor(2).unwrap();
        let s = 1.0 / 2f64.sqrt();
        let expected = [1.0, 2.0, 3.0, 4.0 * s, 6.0 * s, 6.0 * s, 9.0 * s];
        let got = t.features(&[2.0, 3.0], 100).unwrap();
        assert_eq!(got.len(), expected.len());
        for (g, e) in got.iter().zip(expected) {
            assert!((g - e).abs() < 1e-15, "{got:?}");
        }
        let p = PolynomialKernel::power(2).unwrap();
        let a = 2.0 * s;
        assert_eq!(p.features(&[2.0], 100).unwrap(), vec![1.0, a, a, a * a]);
    }
}
