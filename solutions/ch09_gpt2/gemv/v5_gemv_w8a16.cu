// Step 5 — the batch-1 GEMV on INT8 weights (W8A16): v4_gemv_warp reading half the bytes.
//
// What changes against v4_gemv_warp, and why:
//   * W arrives as int8 q [N, K] plus one FP32 scale per output row (models/gpt2/quantize.h:
//     W[n][k] ~ q[n][k] * scale[n]). v4's time is the weight bytes over the DRAM bandwidth;
//     here a weight is 1 byte instead of 2, so a decode step reads half the weight bytes per
//     token and the GEMV can run up to twice as fast. x, b and y stay BF16.
//   * The weights are dequantized in registers, never in memory: each int8 becomes an FP32
//     value right before its multiply-add, and the products are summed in FP32 as in v4.
//   * The scale is applied ONCE per row, after the dot product: scale[n] is the same for all
//     of row n, so sum_k x[k] * (q[n][k] * scale[n]) = scale[n] * sum_k x[k] * q[n][k]. That
//     is one multiply per row instead of K, and the FP32 sum of x[k] * q[n][k] stays exact
//     per term (8 bits of x times 7 bits of q fit FP32's 24-bit mantissa).
//   * One 16-byte load brings 16 weights (v4: 8 BF16). A lane handles pieces l, l + 32, ...
//     of its warp's row: a warp still reads 512 consecutive bytes per step. The matching 16
//     elements of x are two 16-byte loads (x is small and stays in L1/L2, as in v4).
//   * int8 -> FP32 without the int-to-float instruction (16 per clock per SM on sm_80 and
//     sm_90, a quarter or less of the FMA rate: at one weight per byte it would come close to
//     limiting the kernel before DRAM does): see i8x4_to_f32 (epilogue.cuh, with dot16_w8:
//     step 6's fused kernels read INT8 weights with the same two functions).
//   * A row is read with 16-byte loads when it starts 16-byte aligned (always when K % 16 == 0
//     and q is aligned); its last K % 16 weights then take the scalar loop (the K tail). A row
//     that does not start aligned (K % 16 != 0 makes most rows so) runs the scalar loop from
//     k = 0: one weight per lane per step, still coalesced, just more instructions per byte.
//     GPT-2's K (768, 1600, 3072, 6400) are all multiples of 16.
//   * Epilogues None / Bias / BiasGelu exactly as v4 (epilogue.cuh): bias and GELU in FP32,
//     one rounding to BF16.
// Run: build/ch09/bin/ch09_bench --op=gemv_w8a16_bias/bf16   (the reference row is cuBLASLt on
//      BF16 weights dequantized once: the "x ref" column is what INT8 buys)
#include <cstdint>

#include "runtime/errors.cuh"
#include "device/reduce.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"

namespace ch09::solution {
namespace {

constexpr int kWarps = 8;
constexpr int kPer = 16;  // int8 weights per 16-byte load

// grid (ceil(N / kWarps)), block (32 * kWarps): warp w owns row n = blockIdx.x * kWarps + w.
// x16: x starts 16-byte aligned (whether each row of q does is checked per row).
__global__ void __launch_bounds__(32 * kWarps)
    gemv_w8a16_kernel(const bf16* x, const int8_t* q, const float* scale, const bf16* b, bf16* y, int N, int K,
                      Epilogue epi, bool x16) {
  const int lane = threadIdx.x % 32, n = blockIdx.x * kWarps + threadIdx.x / 32;
  if (n >= N) return;                     // a whole warp leaves together: n is the same for its 32 lanes
  const int8_t* row = q + size_t(n) * K;  // (K) int8 weights of output n
  float acc = 0.0f;
  int k_tail = 0;                                           // where the scalar loop starts
  if (x16 && reinterpret_cast<uintptr_t>(row) % 16 == 0) {  // the same for the whole warp
    const int pieces = K / kPer;
    const uint4* q16 = reinterpret_cast<const uint4*>(row);  // piece p: weights 16p .. 16p + 15
    const uint4* x8 = reinterpret_cast<const uint4*>(x);     // 8 BF16 each: pieces 2p and 2p + 1 match
#pragma unroll 4
    for (int p = lane; p < pieces; p += 32) acc += dot16_w8(__ldg(q16 + p), __ldg(x8 + 2 * p), __ldg(x8 + 2 * p + 1));
    k_tail = pieces * kPer;
  }
  for (int k = k_tail + lane; k < K; k += 32) acc += float(row[k]) * __bfloat162float(x[k]);
  acc = wb::warp_sum(acc);
  if (lane == 0) y[n] = epilogue(acc * scale[n], b, n, epi);  // the row's scale, once
}

}  // namespace

void gemv_w8a16(const bf16* x, const int8_t* q, const float* scale, const bf16* b, bf16* y, int N, int K, Epilogue epi,
                cudaStream_t stream) {
  require_valid(1, N, K, epi, b);
  const bool x16 = reinterpret_cast<uintptr_t>(x) % 16 == 0;
  gemv_w8a16_kernel<<<ceil_div(N, kWarps), 32 * kWarps, 0, stream>>>(x, q, scale, b, y, N, K, epi, x16);
  WB_CHECK_LAUNCH();
}

}  // namespace ch09::solution
