// Step 10 — the batch-1 GEMV on INT4 weights (W4A16): v5 reading half its bytes again.
//
// What changes against v5_gemv_w8a16, and why:
//   * W arrives as 4-bit codes in groups of 128 along K, each group with an FP32 scale and a
//     zero point (models/gpt2/quantize.h: W[n][k] ~ (q[n][k] - zero[n][g]) * scale[n][g],
//     g = k / 128). Half a byte per weight, plus 5 bytes per 128 weights for the group's scale
//     and zero: 0.54 bytes per weight against v5's 1 and v4's 2, so the GEMV can run up to
//     about 3.7 times as fast as v4 where DRAM is the limit. x, b and y stay BF16.
//   * The scale is no longer one per row: it changes every 128 weights. A lane's 16-byte load
//     holds 32 codes of ONE group (the quantizer packs them so), so a lane multiplies each
//     piece's sum by its group's scale once: one multiply per 32 weights.
//   * The zero point is taken off each code while it is unpacked, for free: see dot32_w4
//     (epilogue.cuh), which turns a code into an FP32 (q - zero) with one LOP3 and one FADD and
//     no shift per code, because the quantizer stores the codes in the order that function
//     takes them (the layout is drawn in models/gpt2/quantize.h and ch09.cuh).
//   * x is read as FP32 from shared memory, converted once per CTA: at 32 weights per 16-byte
//     load, converting x's BF16 in the loop would cost one more instruction per weight, and the
//     loop is already close to the issue rate at which DRAM speed needs 36 weights per clock
//     per SM (H100/H200). The row is padded (int4_x_slot) so that the lanes' reads of x do not
//     meet on the same banks.
//   * Rows must be whole pieces: K % 32 == 0 (GPT-2's K all are); K <= 8192 (the staged x).
//     Every row then starts 16-byte aligned, so there is no scalar path.
// Run: build/ch09/bin/ch09_bench --op=gemv_w4a16_bias/bf16   (beside gemv_w8a16_bias/bf16 and
//      gemv_bias/bf16 on the same shapes)
#include <cstdint>
#include <stdexcept>
#include <string>

#include "runtime/errors.cuh"
#include "device/reduce.cuh"
#include "device/vec.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"

namespace ch09::solution {
namespace {

constexpr int kWarps = 8;
constexpr int kPiecesPerGroup = kInt4Group / kInt4Piece;  // 4

// grid (ceil(N / kWarps)), block (32 * kWarps), dynamic shared memory int4_x_smem_bytes(K):
// x (K) in FP32, padded. Warp w owns row n = blockIdx.x * kWarps + w; lane l its pieces
// p = l, l + 32, ... (32 codes each, 16 bytes: a warp reads 512 consecutive bytes per step).
__global__ void __launch_bounds__(32 * kWarps)
    gemv_w4a16_kernel(const bf16* x, const uint8_t* q, const float* scale, const uint8_t* zero, const bf16* b, bf16* y,
                      int N, int K, Epilogue epi, bool x16) {
  extern __shared__ float4 s_x[];  // (K / 4 + K / 32) slots: float4 f of x at int4_x_slot(f)
  const int pieces = K / kInt4Piece, G = (K + kInt4Group - 1) / kInt4Group;
  if (x16) {  // 8 BF16 of x per 16-byte load: float4 2i and 2i + 1
    for (int i = threadIdx.x; i < K / 8; i += blockDim.x) {
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(x) + i);
      const auto* p2 = reinterpret_cast<const __nv_bfloat162*>(&v);
      const float2 a = __bfloat1622float2(p2[0]), c = __bfloat1622float2(p2[1]);
      const float2 d = __bfloat1622float2(p2[2]), e = __bfloat1622float2(p2[3]);
      s_x[int4_x_slot(2 * i)] = make_float4(a.x, a.y, c.x, c.y);
      s_x[int4_x_slot(2 * i + 1)] = make_float4(d.x, d.y, e.x, e.y);
    }
  } else {
    float* s = reinterpret_cast<float*>(s_x);
    for (int k = threadIdx.x; k < K; k += blockDim.x) s[4 * int4_x_slot(k / 4) + k % 4] = __bfloat162float(x[k]);
  }
  __syncthreads();
  const int lane = threadIdx.x % 32, n = blockIdx.x * kWarps + threadIdx.x / 32;
  if (n >= N) return;  // a whole warp leaves together, after the barrier
  const uint4* row = reinterpret_cast<const uint4*>(q + size_t(n) * (K / 2));  // (pieces) of 32 codes
  const float* row_scale = scale + size_t(n) * G;                              // (G)
  const uint8_t* row_zero = zero + size_t(n) * G;                              // (G)
  float acc = 0.0f;
#pragma unroll 4
  for (int p = lane; p < pieces; p += 32) {
    const int g = p / kPiecesPerGroup;  // the piece's group: its scale and zero point
    acc += __ldg(row_scale + g) * dot32_w4(__ldg(row + p), s_x + 9 * p, __ldg(row_zero + g));
  }
  acc = wb::warp_sum(acc);
  if (lane == 0) y[n] = epilogue(acc, b, n, epi);
}

}  // namespace

void gemv_w4a16(const bf16* x, const uint8_t* q, const float* scale, const uint8_t* zero, const bf16* b, bf16* y, int N,
                int K, Epilogue epi, cudaStream_t stream) {
  require_valid(1, N, K, epi, b);
  require_int4(K, scale, zero);
  if (K > kInt4MaxK) {
    throw std::invalid_argument("K = " + std::to_string(K) + ": x is staged in shared memory as FP32, which holds " +
                                "at most " + std::to_string(kInt4MaxK) + " elements here");
  }
  if (!wb::aligned16(q)) throw std::invalid_argument("q is not 16-byte aligned: INT4 rows are read in 16-byte loads");
  const size_t smem = int4_x_smem_bytes(K);
  gemv_w4a16_kernel<<<ceil_div(N, kWarps), 32 * kWarps, smem, stream>>>(x, q, scale, zero, b, y, N, K, epi,
                                                                        wb::aligned16(x));
  WB_CHECK_LAUNCH();
}

}  // namespace ch09::solution
