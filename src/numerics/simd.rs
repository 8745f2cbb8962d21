//! Four f32 lanes for the hand-blocked matrix products (the model's dense layers, the
//! long-sequence attention kernels): WebAssembly `simd128` with relaxed SIMD's fused
//! multiply-add when the build has it, SSE on x86-64, plain arrays elsewhere. LLVM left the
//! plain-array form of these loops scalar, with spills; this type keeps them in registers.

/// Four f32 lanes: WebAssembly `simd128` (with relaxed SIMD's fused multiply-add when the build
/// has it), SSE on x86-64, plain arrays elsewhere.
#[derive(Clone, Copy)]
pub struct F4(
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))] core::arch::wasm32::v128,
    #[cfg(target_arch = "x86_64")] core::arch::x86_64::__m128,
    #[cfg(not(any(
        all(target_arch = "wasm32", target_feature = "simd128"),
        target_arch = "x86_64"
    )))]
    [f32; 4],
);

impl F4 {
    /// The first four values of `v` (which has at least four).
    #[inline(always)]
    pub fn load(v: &[f32]) -> F4 {
        let v: &[f32; 4] = v[..4].try_into().unwrap_or(&[0.0; 4]);
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        // SAFETY: `v` holds four f32; WebAssembly loads need no alignment.
        unsafe {
            F4(core::arch::wasm32::v128_load(
                v.as_ptr().cast::<core::arch::wasm32::v128>(),
            ))
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE is part of the x86-64 baseline; `v` holds four f32 (unaligned load).
        unsafe {
            F4(core::arch::x86_64::_mm_loadu_ps(v.as_ptr()))
        }
        #[cfg(not(any(
            all(target_arch = "wasm32", target_feature = "simd128"),
            target_arch = "x86_64"
        )))]
        {
            F4(*v)
        }
    }

    #[inline(always)]
    pub fn splat(x: f32) -> F4 {
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        {
            F4(core::arch::wasm32::f32x4_splat(x))
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE is part of the x86-64 baseline.
        unsafe {
            F4(core::arch::x86_64::_mm_set1_ps(x))
        }
        #[cfg(not(any(
            all(target_arch = "wasm32", target_feature = "simd128"),
            target_arch = "x86_64"
        )))]
        {
            F4([x; 4])
        }
    }

    /// `self + a · b`.
    #[inline(always)]
    pub fn mul_add(self, a: F4, b: F4) -> F4 {
        #[cfg(all(
            target_arch = "wasm32",
            target_feature = "simd128",
            target_feature = "relaxed-simd"
        ))]
        {
            F4(core::arch::wasm32::f32x4_relaxed_madd(a.0, b.0, self.0))
        }
        #[cfg(all(
            target_arch = "wasm32",
            target_feature = "simd128",
            not(target_feature = "relaxed-simd")
        ))]
        {
            use core::arch::wasm32::{f32x4_add, f32x4_mul};
            F4(f32x4_add(self.0, f32x4_mul(a.0, b.0)))
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE is part of the x86-64 baseline.
        unsafe {
            use core::arch::x86_64::{_mm_add_ps, _mm_mul_ps};
            F4(_mm_add_ps(self.0, _mm_mul_ps(a.0, b.0)))
        }
        #[cfg(not(any(
            all(target_arch = "wasm32", target_feature = "simd128"),
            target_arch = "x86_64"
        )))]
        {
            F4(std::array::from_fn(|l| self.0[l] + a.0[l] * b.0[l]))
        }
    }

    /// Writes the four lanes to `out[..4]`.
    #[inline(always)]
    pub fn store(self, out: &mut [f32]) {
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        let lanes: [f32; 4] = {
            use core::arch::wasm32::f32x4_extract_lane;
            [
                f32x4_extract_lane::<0>(self.0),
                f32x4_extract_lane::<1>(self.0),
                f32x4_extract_lane::<2>(self.0),
                f32x4_extract_lane::<3>(self.0),
            ]
        };
        #[cfg(target_arch = "x86_64")]
        let lanes: [f32; 4] = {
            let mut lanes = [0.0f32; 4];
            // SAFETY: SSE is part of the x86-64 baseline; `lanes` holds four f32.
            unsafe { core::arch::x86_64::_mm_storeu_ps(lanes.as_mut_ptr(), self.0) };
            lanes
        };
        #[cfg(not(any(
            all(target_arch = "wasm32", target_feature = "simd128"),
            target_arch = "x86_64"
        )))]
        let lanes = self.0;
        out[..4].copy_from_slice(&lanes);
    }
}

/// The transpose of four rows of four lanes: `out[j]` holds lane `j` of each row, in order
/// (`[a₀ b₀ c₀ d₀]`, …). Eight shuffles, where a scalar copy is sixteen loads and stores.
#[inline(always)]
pub fn transpose4([a, b, c, d]: [F4; 4]) -> [F4; 4] {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        use core::arch::wasm32::i32x4_shuffle;
        let (ab_low, ab_high) = (
            i32x4_shuffle::<0, 4, 1, 5>(a.0, b.0),
            i32x4_shuffle::<2, 6, 3, 7>(a.0, b.0),
        );
        let (cd_low, cd_high) = (
            i32x4_shuffle::<0, 4, 1, 5>(c.0, d.0),
            i32x4_shuffle::<2, 6, 3, 7>(c.0, d.0),
        );
        [
            F4(i32x4_shuffle::<0, 1, 4, 5>(ab_low, cd_low)),
            F4(i32x4_shuffle::<2, 3, 6, 7>(ab_low, cd_low)),
            F4(i32x4_shuffle::<0, 1, 4, 5>(ab_high, cd_high)),
            F4(i32x4_shuffle::<2, 3, 6, 7>(ab_high, cd_high)),
        ]
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of the x86-64 baseline.
    unsafe {
        use core::arch::x86_64::{_mm_movehl_ps, _mm_movelh_ps, _mm_unpackhi_ps, _mm_unpacklo_ps};
        let (ab_low, ab_high) = (_mm_unpacklo_ps(a.0, b.0), _mm_unpackhi_ps(a.0, b.0));
        let (cd_low, cd_high) = (_mm_unpacklo_ps(c.0, d.0), _mm_unpackhi_ps(c.0, d.0));
        [
            F4(_mm_movelh_ps(ab_low, cd_low)),
            F4(_mm_movehl_ps(cd_low, ab_low)),
            F4(_mm_movelh_ps(ab_high, cd_high)),
            F4(_mm_movehl_ps(cd_high, ab_high)),
        ]
    }
    #[cfg(not(any(
        all(target_arch = "wasm32", target_feature = "simd128"),
        target_arch = "x86_64"
    )))]
    {
        let rows = [a.0, b.0, c.0, d.0];
        std::array::from_fn(|j| F4(std::array::from_fn(|i| rows[i][j])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lane `j` of row `i` lands in lane `i` of output `j`.
    #[test]
    fn transpose4_moves_each_lane() {
        let rows: [F4; 4] = std::array::from_fn(|i| {
            let v: Vec<f32> = (0..4).map(|j| (10 * i + j) as f32).collect();
            F4::load(&v)
        });
        for (j, column) in transpose4(rows).into_iter().enumerate() {
            let mut lanes = [0.0f32; 4];
            column.store(&mut lanes);
            assert_eq!(lanes, std::array::from_fn(|i| (10 * i + j) as f32));
        }
    }
}
