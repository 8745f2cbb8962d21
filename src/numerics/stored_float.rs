//! The model file's numbers as stored: little-endian f16 or f32 bytes, widened to f32 exactly
//! ([`widen`], [`f16_bits_to_f32`]: branch-free, so that a row's conversion vectorises; `half`'s
//! own conversion is a branchy scalar function in WebAssembly), non-finite values refused by
//! their bits. The dense layers pack their panels from these
//! ([`PackedLinear::from_stored`](crate::numerics::packed_linear::PackedLinear::from_stored)).

/// How a matrix is stored in the model file: little-endian f16 or f32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoredFloat {
    F16,
    F32,
}

impl StoredFloat {
    /// Bytes per value.
    pub const fn size(self) -> usize {
        match self {
            StoredFloat::F16 => 2,
            StoredFloat::F32 => 4,
        }
    }
}

/// Why stored bytes could not be packed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PackError {
    /// The blocks are not `outputs` whole rows of `inputs` values, or the bias is not `outputs`
    /// long.
    Shape {
        inputs: usize,
        outputs: usize,
        found_bytes: usize,
    },
    /// A weight is infinite or NaN.
    NonFinite,
}

impl std::fmt::Display for PackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PackError::Shape {
                inputs,
                outputs,
                found_bytes,
            } => write!(
                f,
                "{found_bytes} bytes (or a bias) that are not {outputs} rows of {inputs} values"
            ),
            PackError::NonFinite => write!(f, "a non-finite value"),
        }
    }
}

/// An f16 (its bits) widened to f32 exactly and without a branch, so that a row's conversion
/// vectorises: a normal number's exponent is rebiased from 15 to 127; a subnormal m · 2⁻²⁴ is
/// the normal f32 2⁻¹⁴ + m · 2⁻²⁴ minus 2⁻¹⁴, a subtraction that Sterbenz's lemma makes exact.
/// Infinities and NaNs come out as large finite numbers: callers refuse them by their bits
/// ([`f16_is_special`]).
#[inline(always)]
pub fn f16_bits_to_f32(bits: u16) -> f32 {
    let bits = u32::from(bits);
    let sign = (bits & 0x8000) << 16;
    let magnitude = (bits & 0x7fff) << 13;
    let normal = f32::from_bits(magnitude + ((127 - 15) << 23));
    let two_to_minus_14 = f32::from_bits(113 << 23);
    let subnormal = f32::from_bits(magnitude + (113 << 23)) - two_to_minus_14;
    let value = if bits & 0x7c00 == 0 {
        subnormal
    } else {
        normal
    };
    f32::from_bits(value.to_bits() | sign)
}

/// Whether f16 `bits` are an infinity or a NaN (exponent bits all ones).
#[inline(always)]
pub fn f16_is_special(bits: u16) -> bool {
    bits & 0x7c00 == 0x7c00
}

/// Widens stored values into `out` (`out.len()` of them, `bytes` holding at least as many);
/// false when one is not finite.
pub fn widen(bytes: &[u8], format: StoredFloat, out: &mut [f32]) -> bool {
    match format {
        StoredFloat::F16 => {
            let mut special = false;
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                let bits = u16::from_le_bytes([c[0], c[1]]);
                special |= f16_is_special(bits);
                *o = f16_bits_to_f32(bits);
            }
            !special
        }
        StoredFloat::F32 => {
            let mut finite = true;
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                let value = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                finite &= value.is_finite();
                *o = value;
            }
            finite
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    /// Every one of the 65,536 f16 bit patterns: the branch-free widening equals `half`'s (bit
    /// for bit, signed zeros and subnormals included) wherever the value is finite, and
    /// exactly the infinities and NaNs are flagged.
    #[test]
    fn f16_widening_is_exact_on_every_bit_pattern() {
        for bits in 0..=u16::MAX {
            let reference = f16::from_bits(bits);
            assert_eq!(f16_is_special(bits), !reference.is_finite(), "{bits:#06x}");
            if reference.is_finite() {
                assert_eq!(
                    f16_bits_to_f32(bits).to_bits(),
                    reference.to_f32().to_bits(),
                    "{bits:#06x}"
                );
            }
        }
    }
}
