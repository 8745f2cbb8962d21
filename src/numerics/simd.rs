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
