// The wgmma shapes chapter 8's Hopper attention uses, BF16 inputs and FP32 accumulators, one
// warpgroup each (sm_90a only). The accumulator layout is mma.sync's, per warp: warp w of the
// warpgroup holds rows 16 w .. 16 w + 15, and in each 8-column chunk j, d[4 j], d[4 j + 1] are
// row g, columns 8 j + 2 c, + 1 and d[4 j + 2], d[4 j + 3] row g + 8 (g = lane / 4,
// c = lane % 4). PTX ISA, "wgmma.mma_async": d, a (descriptor or registers), b-desc,
// scale-d, imm-scale-a, imm-scale-b[, imm-trans-a], imm-trans-b.
#pragma once
#include <cstdint>

#include "device/sm90.cuh"  // WB_WGMMA_D*

namespace ch08::solution::hopper {

// The accumulators' places in the asm templates below: "%0, ..., %31" or "%0, ..., %63".
#define WB_ACC32                                                           \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define WB_ACC64                                                                       \
  WB_ACC32                                                                             \
  ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"

// d (64 x 128, 64 FP32 per thread) = (accumulate ? d : 0) + A (64 x 16) * B (16 x 128), A and B
// both K-major in shared memory (imm-trans-a = imm-trans-b = 0).
__device__ __forceinline__ void wgmma_ss_m64n128k16(float (&d)[64], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16\n"
      "{" WB_ACC64
      "},\n"
      "%64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      : WB_WGMMA_D64(d)
      : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)));
}

// d (64 x 128, 64 FP32 per thread) += A (64 x 16, from registers: a[0..3], the mma.sync A
// fragment of the warp's 16 rows) * B (16 x 128, MN-major in shared memory, imm-trans-b = 1).
__device__ __forceinline__ void wgmma_rs_m64n128k16(float (&d)[64], const uint32_t (&a)[4], uint64_t desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16\n"
      "{" WB_ACC64
      "},\n"
      "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n"
      "}\n"
      : WB_WGMMA_D64(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

// d (64 x 64, 32 FP32 per thread) += A (64 x 16, from registers: a[0..3], the mma.sync A
// fragment of the warp's 16 rows) * B (16 x 64, MN-major in shared memory, imm-trans-b = 1).
__device__ __forceinline__ void wgmma_rs_m64n64k16(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16\n"
      "{" WB_ACC32
      "},\n"
      "{%32, %33, %34, %35}, %36, p, 1, 1, 1;\n"
      "}\n"
      : WB_WGMMA_D32(d, 0)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

}  // namespace ch08::solution::hopper
