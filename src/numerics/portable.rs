//! Floating-point functions that give the same bits natively and in WebAssembly.
//!
//! `f64::exp`, `ln`, `powf`, `sin`, … call the platform's C library natively (glibc on Linux)
//! and Rust's port of musl's libm in `wasm32-unknown-unknown`; both are accurate to about an
//! ulp, but they round differently in the last bit for some arguments. Every number the
//! experiment reports goes through such functions (the datasets' Gamma variances, ω's Gaussian
//! tails, the estimators' logs), so the page's export would differ from `kernel-lab experiment`
//! in the last digits. Everything on the experiment's path therefore calls the `libm` crate
//! explicitly ([`Libm`]) and draws its random numbers with copies of `rand_distr`'s samplers
//! that do the same ([`StandardNormal`], [`Exp1`], [`Gamma`]): the same algorithms, the same
//! draws from the stream in the same order, so the numbers are `rand_distr`'s wherever the
//! two libraries agree. Square roots and the arithmetic operators are exactly rounded
//! (IEEE 754) everywhere and need nothing.

mod ziggurat_tables;

use rand::distr::Open01;
use rand::{Rng, RngExt};

use ziggurat_tables::{
    ZIG_EXP_F, ZIG_EXP_R, ZIG_EXP_X, ZIG_NORM_F, ZIG_NORM_R, ZIG_NORM_X, ZigTable,
};

/// The `libm` crate's functions as methods of `f64`, named apart from the standard library's
/// (an inherent method would win over a trait method of the same name).
pub trait Libm {
    fn libm_exp(self) -> f64;
    fn libm_exp_m1(self) -> f64;
    fn libm_ln(self) -> f64;
    fn libm_ln_1p(self) -> f64;
    fn libm_powf(self, exponent: f64) -> f64;
    fn libm_sin(self) -> f64;
    fn libm_cos(self) -> f64;
    fn libm_sinh(self) -> f64;
    fn libm_cosh(self) -> f64;
}

impl Libm for f64 {
    #[inline]
    fn libm_exp(self) -> f64 {
        libm::exp(self)
    }
    #[inline]
    fn libm_exp_m1(self) -> f64 {
        libm::expm1(self)
    }
    #[inline]
    fn libm_ln(self) -> f64 {
        libm::log(self)
    }
    #[inline]
    fn libm_ln_1p(self) -> f64 {
        libm::log1p(self)
    }
    #[inline]
    fn libm_powf(self, exponent: f64) -> f64 {
        libm::pow(self, exponent)
    }
    #[inline]
    fn libm_sin(self) -> f64 {
        libm::sin(self)
    }
    #[inline]
    fn libm_cos(self) -> f64 {
        libm::cos(self)
    }
    #[inline]
    fn libm_sinh(self) -> f64 {
        libm::sinh(self)
    }
    #[inline]
    fn libm_cosh(self) -> f64 {
        libm::cosh(self)
    }
}

/// `ln x` for a positive normal finite x, the very bits of `libm::log` (FreeBSD's `e_log.c`:
/// `x = 2^k (1 + f)` with `1 + f` in `[√2/2, √2)`, `s = f/(2 + f)` and a degree-14 polynomial in
/// s), without its branches for zero, negative, subnormal, infinite and NaN arguments: a loop of
/// it has no call and no branch, so LLVM can vectorise it, where `libm::log` is a call per value.
/// Other arguments give a meaningless number (the callers pass sums of positive floored terms).
#[inline(always)]
pub fn ln_positive_normal(x: f64) -> f64 {
    // e_log.c's constants, by their bits.
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    const LG1: f64 = f64::from_bits(0x3fe5_5555_5555_5593);
    const LG2: f64 = f64::from_bits(0x3fd9_9999_9997_fa04);
    const LG3: f64 = f64::from_bits(0x3fd2_4924_9422_9359);
    const LG4: f64 = f64::from_bits(0x3fcc_71c5_1d8e_78af);
    const LG5: f64 = f64::from_bits(0x3fc7_4664_96cb_03de);
    const LG6: f64 = f64::from_bits(0x3fc3_9a09_d078_c69f);
    const LG7: f64 = f64::from_bits(0x3fc2_f112_df3e_5244);
    let ui = x.to_bits();
    // Reduce x into [√2/2, √2): k from the high word shifted by √2/2's, as e_log.c does.
    let hx = ((ui >> 32) as u32).wrapping_add(0x3ff0_0000 - 0x3fe6_a09e);
    let k = ((hx >> 20) as i32) - 0x3ff;
    let hx = (hx & 0x000f_ffff) + 0x3fe6_a09e;
    let f = f64::from_bits((u64::from(hx) << 32) | (ui & 0xffff_ffff)) - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    let r = t2 + t1;
    let dk = f64::from(k);
    s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI
}

/// A float in `[2^e, 2^(e+1))` from 52 random mantissa bits (rand's `into_float_with_exponent`).
#[inline(always)]
fn with_exponent(bits: u64, exponent: i32) -> f64 {
    f64::from_bits(bits | (((1023 + exponent) as u64) << 52))
}

/// rand_distr 0.6's ziggurat (`utils::ziggurat`), unchanged but for `pdf`, which callers
/// compute with libm.
#[inline(always)]
fn ziggurat<R: Rng + ?Sized>(
    rng: &mut R,
    symmetric: bool,
    x_tab: ZigTable,
    f_tab: ZigTable,
    pdf: impl Fn(f64) -> f64,
    zero_case: impl Fn(&mut R, f64) -> f64,
) -> f64 {
    loop {
        let bits = rng.next_u64();
        let i = bits as usize & 0xff;
        let u = if symmetric {
            with_exponent(bits >> 12, 1) - 3.0
        } else {
            with_exponent(bits >> 12, 0) - (1.0 - f64::EPSILON / 2.0)
        };
        let x = u * x_tab[i];
        let test_x = if symmetric { x.abs() } else { x };
        if test_x < x_tab[i + 1] {
            return x;
        }
        if i == 0 {
            return zero_case(rng, u);
        }
        if f_tab[i + 1] + (f_tab[i] - f_tab[i + 1]) * rng.random::<f64>() < pdf(x) {
            return x;
        }
    }
}

/// `rand_distr::StandardNormal` (f64) with libm's `exp` and `ln`.
#[derive(Clone, Copy, Debug)]
pub struct StandardNormal;

impl StandardNormal {
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        ziggurat(
            rng,
            true,
            &ZIG_NORM_X,
            &ZIG_NORM_F,
            |x| (-x * x / 2.0).libm_exp(),
            |rng, u| {
                // The tail, by hand (Marsaglia's method).
                let (mut x, mut y) = (1.0f64, 0.0f64);
                while -2.0 * y < x * x {
                    let x_: f64 = rng.sample(Open01);
                    let y_: f64 = rng.sample(Open01);
                    x = x_.libm_ln() / ZIG_NORM_R;
                    y = y_.libm_ln();
                }
                if u < 0.0 {
                    x - ZIG_NORM_R
                } else {
                    ZIG_NORM_R - x
                }
            },
        )
    }
}

/// `rand_distr::Exp1` (f64) with libm's `exp` and `ln`.
#[derive(Clone, Copy, Debug)]
pub struct Exp1;

impl Exp1 {
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        ziggurat(
            rng,
            false,
            &ZIG_EXP_X,
            &ZIG_EXP_F,
            |x| (-x).libm_exp(),
            |rng, _| ZIG_EXP_R - rng.random::<f64>().libm_ln(),
        )
    }
}

/// `rand_distr::Gamma::new(shape, scale)` (f64) with libm's `ln` and `pow`: Marsaglia and
/// Tsang for a shape above 1, boosted by `U^(1/shape)` below 1, an exponential at 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gamma {
    shape: f64,
    scale: f64,
}

/// Why a [`Gamma`] cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GammaError {
    ShapeTooSmall,
    ScaleTooSmall,
    /// An infinite shape or scale (rand_distr would give a degenerate distribution).
    Infinite,
}

impl std::fmt::Display for GammaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GammaError::ShapeTooSmall => "shape is not positive in gamma distribution",
            GammaError::ScaleTooSmall => "scale is not positive in gamma distribution",
            GammaError::Infinite => "shape or scale is infinite in gamma distribution",
        })
    }
}

impl Gamma {
    pub fn new(shape: f64, scale: f64) -> Result<Self, GammaError> {
        if shape.is_nan() || shape <= 0.0 {
            return Err(GammaError::ShapeTooSmall);
        }
        if scale.is_nan() || scale <= 0.0 {
            return Err(GammaError::ScaleTooSmall);
        }
        if shape.is_infinite() || scale.is_infinite() {
            return Err(GammaError::Infinite);
        }
        Ok(Self { shape, scale })
    }

    /// rand_distr's `GammaLargeShape::sample_unscaled` for shape `d + 1/3`.
    fn large_unscaled<R: Rng + ?Sized>(rng: &mut R, d: f64) -> f64 {
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = StandardNormal.sample(rng);
            let v_cbrt = 1.0 + c * x;
            if v_cbrt <= 0.0 {
                continue;
            }
            let v = v_cbrt * v_cbrt * v_cbrt;
            let u: f64 = rng.sample(Open01);
            let x_sqr = x * x;
            if u < 1.0 - 0.0331 * x_sqr * x_sqr
                || u.libm_ln() < 0.5 * x_sqr + d * (1.0 - v + v.libm_ln())
            {
                return v;
            }
        }
    }

    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        let third = 1.0 / 3.0;
        if self.shape == 1.0 {
            // rand_distr's Exp::new(1 / scale): Exp1 times 1 / (1 / scale).
            return Exp1.sample(rng) * (1.0 / (1.0 / self.scale));
        }
        if self.shape < 1.0 {
            let inv_shape = 1.0 / self.shape;
            let d = (self.shape + 1.0) - third;
            let u: f64 = rng.sample(Open01);
            let a = Self::large_unscaled(rng, d);
            let b = u.libm_powf(inv_shape);
            return (a * b * d) * self.scale;
        }
        let d = self.shape - third;
        Self::large_unscaled(rng, d) * (d * self.scale)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numerics::rng::{StreamPurpose, stream_rng};
    use rand_distr::Distribution;

    /// The copies draw rand_distr's numbers: on this platform they may differ from rand_distr
    /// only where the platform's `exp`/`ln`/`pow` and libm round differently, by an ulp or so.
    #[test]
    fn samplers_follow_rand_distr_draw_for_draw() {
        let close = |a: f64, b: f64| (a - b).abs() <= 4.0 * f64::EPSILON * a.abs().max(b.abs());
        let mut ours = stream_rng(7, StreamPurpose::Trial, 1, 2);
        let mut theirs = stream_rng(7, StreamPurpose::Trial, 1, 2);
        let mut exact = 0;
        for _ in 0..200_000 {
            let (a, b): (f64, f64) = (
                StandardNormal.sample(&mut ours),
                rand_distr::StandardNormal.sample(&mut theirs),
            );
            assert!(close(a, b), "{a} {b}");
            exact += usize::from(a == b);
            let (a, b): (f64, f64) = (Exp1.sample(&mut ours), rand_distr::Exp1.sample(&mut theirs));
            assert!(close(a, b), "{a} {b}");
        }
        assert!(exact > 199_000, "{exact}");
        for shape in [0.001, 0.01, 0.5, 1.0, 1.5, 100.0] {
            let g = Gamma::new(shape, 2.0).unwrap();
            let h = rand_distr::Gamma::new(shape, 2.0).unwrap();
            for _ in 0..20_000 {
                let (a, b): (f64, f64) = (g.sample(&mut ours), h.sample(&mut theirs));
                // pow(u, 1/shape) at a tiny shape magnifies an ulp of u into several.
                assert!(
                    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()),
                    "{shape}: {a} {b}"
                );
            }
        }
        assert!(Gamma::new(0.0, 1.0).is_err() && Gamma::new(1.0, f64::NAN).is_err());
        assert!(Gamma::new(f64::INFINITY, 1.0).is_err());
    }

    #[test]
    fn ln_positive_normal_is_libm_log_bit_for_bit() {
        let mut rng = stream_rng(11, StreamPurpose::Trial, 3, 4);
        let check = |x: f64| {
            assert_eq!(
                ln_positive_normal(x).to_bits(),
                libm::log(x).to_bits(),
                "{x:e}"
            );
        };
        for x in [
            f64::MIN_POSITIVE,
            1e-300,
            1e-24,
            0.5,
            1.0,
            2.0,
            1e300,
            f64::MAX,
        ] {
            check(x);
            check(f64::from_bits(x.to_bits() - 1).max(f64::MIN_POSITIVE));
        }
        // Every exponent, random mantissas, and the neighbours of 1 and of √2/2's boundary.
        for _ in 0..1_000_000 {
            let bits: u64 = rng.random();
            let exponent = 1 + bits % 2046;
            check(f64::from_bits((exponent << 52) | (bits >> 12)));
        }
        for ulps in 0..2_000u64 {
            check(f64::from_bits(1f64.to_bits() + ulps));
            check(f64::from_bits(1f64.to_bits() - ulps - 1));
            check(f64::from_bits(std::f64::consts::FRAC_1_SQRT_2.to_bits() + ulps) - 1e-300);
        }
    }

    #[test]
    fn libm_functions_are_the_libm_crates() {
        for x in [0.1f64, 1.0, 2.5, 700.0] {
            assert_eq!(x.libm_exp().to_bits(), libm::exp(x).to_bits());
            assert_eq!(x.libm_ln().to_bits(), libm::log(x).to_bits());
            assert_eq!(x.libm_powf(0.3).to_bits(), libm::pow(x, 0.3).to_bits());
        }
        assert!((1.0f64.libm_exp() - std::f64::consts::E).abs() < 1e-15);
    }
}
