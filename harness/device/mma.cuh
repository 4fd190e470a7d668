// Tensor cores without WMMA: PTX wrappers for ldmatrix and mma.sync (m16n8k16; INT8 m16n8k32).
//
// Chapter 5 teaches them (v5_mma_sync: a GEMM whose fragments come from swizzled shared
// memory through ldmatrix); chapter 8's flash attention and chapter 9's prefill GEMM use them.
//
// mma.sync.aligned.m16n8k16.row.col (FP16/BF16 in, FP32 accumulate), per lane l of a warp,
// with g = l / 4 and q = l % 4:
//   A (16 x 16, 4 registers of 2 elements): a0 = (row g,   k 2q..2q+1)   a1 = (row g+8, k 2q..)
//                                           a2 = (row g,   k 2q+8..)     a3 = (row g+8, k 2q+8..)
//   B (16 x 8, 2 registers):                b0 = (k 2q..2q+1, col g)     b1 = (k 2q+8.., col g)
//   C/D (16 x 8, 4 floats):                 d0,d1 = (row g, cols 2q, 2q+1)  d2,d3 = (row g+8, ...)
// ldmatrix.x4 loads four 8 x 8 matrices of 16-bit elements; lanes 0-7, 8-15, 16-23, 24-31
// give the row addresses of matrices 0-3, and lane l receives, from matrix i, elements
// (row l / 4, cols 2(l % 4), +1) in register i: exactly the A layout above when the four
// matrices are the four 8 x 8 quarters of a 16 x 16 A tile. With .trans each matrix is
// transposed on the way, which turns rows of a row-major B (k, n) into the B layout.
//
// Before sm_75 (ldmatrix) and sm_80 (mma.sync m16n8k16) these compile to nothing; the kernels
// that use them are never launched there.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace wb::ptx {

// The shared-memory address (a 32-bit offset in the shared window) of a generic pointer into
// shared memory: what ldmatrix, cp.async and the Hopper copies take.
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// The ldmatrix.x4 instruction with qualifier Q ("" or ".trans") into r[0..3] from addr.
#define WB_LDMATRIX_X4(Q, r, addr)                                                       \
  asm volatile("ldmatrix.sync.aligned.m8n8.x4" Q ".shared.b16 {%0, %1, %2, %3}, [%4];\n" \
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])                          \
               : "r"(addr))

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  WB_LDMATRIX_X4("", r, addr);
#endif
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  WB_LDMATRIX_X4(".trans", r, addr);
#endif
}

// d += a * b for one 16 x 8 x 16 step; In is __half or __nv_bfloat16.
template <class In>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<In, __nv_bfloat16>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
#endif
}

// d += a * b for one 16 x 8 x 32 step on signed 8-bit integers, INT32 accumulation (exact;
// sums wrap modulo 2^32 like any int32 add, no saturation). sm_80+. Per lane (g = l / 4,
// q = l % 4), each register holding 4 consecutive k values, lowest k in the lowest byte:
//   A (16 x 32, 4 registers): a0 = (row g, k 4q..4q+3)      a1 = (row g+8, k 4q..4q+3)
//                             a2 = (row g, k 16+4q..)       a3 = (row g+8, k 16+4q..)
//   B (32 x 8, 2 registers):  b0 = (k 4q..4q+3, col g)      b1 = (k 16+4q..16+4q+3, col g)
//   C/D (16 x 8, 4 ints):     as m16n8k16's: d0,d1 = (row g, cols 2q, 2q+1), d2,d3 = row g+8.
// In bytes, A is laid out as m16n8k16's A (16 rows of 32 bytes), so ldmatrix.x4 fetches it
// the same way. Chapter 5 teaches it (v8_mma_sync_int8).
__device__ __forceinline__ void mma_16832_s8(int (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

}  // namespace wb::ptx
