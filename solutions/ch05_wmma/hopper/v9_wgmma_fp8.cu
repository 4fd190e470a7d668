// v9 (bonus, Hopper sm_90a only) — FP8 E4M3 GEMM on wgmma, per-tensor scales.
//
// What changes over v6 (the BF16 wgmma kernel): the operands are one byte wide and both
// K-major, the stage is 128 deep (one 128-byte swizzle row), and the FP32 accumulator is kept
// apart from the tensor core's: every 128 of K the tensor core's partial sum is added into an
// FP32 register sum ("promotion"), because Hopper's FP8 tensor-core sums keep only about 14
// bits (chapters/ch05_wmma/spec_fp8.cu). The scales are applied once, in the epilogue:
// D = scale_a * scale_b * total, rounded to BF16. The pipeline itself, and why each piece,
// is hopper/wgmma_8bit_kernel.cuh.
//
// Why it is faster than exercise 4's CUDA-core loop: twice the tensor-core rate of BF16 (FP8
// products, 1,979 TFLOPS dense on an H100 SXM) on half the bytes; the promotion costs 64
// FP32 adds per thread per 128 of K, hidden behind the other warpgroup's wgmmas.
//
// Run: build/all/bin/ch05_bench --op=gemm_fp8/e4m3_bf16 --impl=v9_wgmma_fp8,reference
#include "hopper.cuh"
#include "runtime/device.cuh"
#include "wgmma_8bit_kernel.cuh"

namespace ch05::solution {

void v9_wgmma_fp8(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
                  const float* scale_b, __nv_bfloat16* D, cudaStream_t stream) {
  hopper::k8::run_fp8<hopper::k8::Epi::Fp8Tensor>(M, N, K, A, B, scale_a, scale_b, D, stream, "v9_wgmma_fp8");
}

}  // namespace ch05::solution
