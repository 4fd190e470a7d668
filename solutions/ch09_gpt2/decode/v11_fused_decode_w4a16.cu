// Step 11 — the fused decode step on INT4 weights (W4A16): v6's ln_gemv, ln_gemv_qkv and
// gemv_residual reading step 10's 4-bit codes (gpt2 --int4 --decode=fused).
//
// What changes against v6_fused_decode's INT8 forms, and why:
//   * The weights are step 10's: 32 codes of one group per 16-byte load, a scale and a zero
//     point per group of 128 (models/gpt2/quantize.h), unpacked by dot32_w4 (epilogue.cuh) with
//     the zero point taken off in the same instruction that makes the code a float. Each
//     piece's sum is multiplied by its group's scale (v6 on INT8: one scale per row, once).
//   * The input row is staged in shared memory as FP32, not as BF16: the values are the same
//     (the residual stream x + r rounded to BF16 once, the LayerNorm's output rounded to BF16,
//     both as v6 stores them), widened once per CTA instead of once per weight. At 32 weights
//     per 16-byte load the loop has no room for a conversion per weight (step 10 says why).
//     The row is padded (int4_x_slot) so that the lanes' reads of it meet no bank twice.
//   * Every kernel here (gemv_residual too) is a single wave of CTAs that loop over groups of
//     rows: each CTA stages the row once however many rows it then takes, as v6's row GEMV
//     does. v6's gemv_residual instead splits each row over 4 or 8 warps in many small CTAs,
//     which would stage x once per row here. gemv_residual may still split a long row over
//     kSplit warps (K >= 4096: the MLP's projection, 2 warps a row), whose sums meet in shared
//     memory in a fixed order.
//   * Before waiting for the previous kernel (PDL, harness/device/pdl.cuh) a CTA asks L2 for
//     its first group of rows, as v6 does; it keeps no pieces in registers across the
//     LayerNorm (v6's kAhead): the staged row and the unpacking leave too few registers.
//   * The LM head stays BF16 (wte is the embedding too): v6's ln_gemv_argmax.
// Rows must be whole pieces (K % 32 == 0, every GPT-2's) and K <= 8192.
//
// Run: build/ch09/bin/ch09_bench --op=ln_gemv_w4a16/bf16   (and gemv_residual_w4a16/bf16:
//      beside the BF16 and INT8 ops' rows on the same shapes)
//      build/ch09/bin/gpt2 --weights=1.5B.safetensors --prompt-len=512 --new=128 --decode=fused --int4
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "runtime/errors.cuh"
#include "device/pdl.cuh"
#include "device/reduce.cuh"
#include "device/vec.cuh"
#include "w4_row.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"
#include "runtime/launch_helpers.cuh"

namespace ch09::solution {
namespace {

using namespace w4;  // W4Args, stage_row, kWarps, kThreads: shared with step 14 (w4_row.cuh)
using wb::warp_sum;

constexpr int kMaxCtas = 1024;  // a grid at most

// grid (a wave at most: launch_w4), block (kThreads), dynamic shared memory
// int4_x_smem_bytes(K): the row in FP32, padded. CTA c takes the groups of kRows = kWarps /
// kSplit rows g = c, c + grid, ...; warp w of a group works on row n = g * kRows + w / kSplit,
// share j = w % kSplit of it: the pieces p = 32 j + lane, then every 32 kSplit-th.
//   kNorm      the LayerNorm in the prologue (ln_gemv, ln_gemv_qkv)
//   kResidual  y = res + (sum + b), one rounding (gemv_residual); else epilogue(sum, b)
// At most 64 registers (__launch_bounds__'s 4 CTAs per SM): 32 warps per SM stream W.
template <bool kNorm, bool kResidual, int kSplit>
__global__ void __launch_bounds__(kThreads, 4) w4_row_kernel(const W4Args a) {
  static_assert(kWarps % kSplit == 0, "whole rows per group");
  constexpr int kRows = kWarps / kSplit;
  extern __shared__ float4 s_x[];       // the staged row: float4 f at int4_x_slot(f)
  __shared__ float red[2 * kWarps];     // block_sum: two exchange arrays
  __shared__ float partial[2][kWarps];  // kSplit > 1: each warp's share of its row, two buffers by parity
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, j = warp % kSplit;
  const int pieces = a.K / kInt4Piece, G = (a.K + kInt4Group - 1) / kInt4Group;
  const size_t row_bytes = size_t(a.K) / 2;

  // 0. Before waiting for the previous kernel: the CTA's first group of rows into L2, one
  //    128-byte line per thread and step (the weights are constants: rule 1 of pdl.cuh).
  {
    const long long n0 = static_cast<long long>(blockIdx.x) * kRows;
    const long long end = std::min<long long>(n0 + kRows, a.N);
    const char* first = reinterpret_cast<const char*>(a.q) + n0 * row_bytes;
    for (long long off = static_cast<long long>(threadIdx.x) * 128; off < (end - n0) * (long long)row_bytes;
         off += 128LL * kThreads) {
      wb::pdl_prefetch_l2(first + off);
    }
  }

  // 1. Wait for the previous kernel: x, r and res are its outputs.
  wb::pdl_wait();

  // 2. The input row (normalised with kNorm) into shared memory.
  stage_row<kNorm>(a, reinterpret_cast<float*>(s_x), red);

  // 3. The rows. With kSplit == 1 no barrier in this loop (a warp past N skips its row); with
  //    kSplit > 1 every warp reaches the one barrier of each group.
  int parity = 0;
  for (long long g = blockIdx.x; g * kRows < a.N; g += gridDim.x) {
    const int n = static_cast<int>(g * kRows) + warp / kSplit;
    const bool live = n < a.N;
    const bool writer = live && j == 0 && lane == 0;  // the thread that finishes row n
    // The epilogue's operands are requested now, used after the sum: their trips to L2 overlap the row's.
    const float bias = writer && a.epi != Epilogue::None ? __bfloat162float(a.b[n]) : 0.0f;
    const float resid = kResidual && writer ? __bfloat162float(a.res[n]) : 0.0f;
    float acc = 0.0f;
    if (live) {
      const uint4* row = reinterpret_cast<const uint4*>(a.q + size_t(n) * row_bytes);  // (pieces) of 32 codes
      const float* row_scale = a.scale + size_t(n) * G;                                // (G)
      const uint8_t* row_zero = a.zero + size_t(n) * G;                                // (G)
#pragma unroll 4
      for (int p = j * 32 + lane; p < pieces; p += 32 * kSplit) {
        const int grp = p / kPiecesPerGroup;
        acc += __ldg(row_scale + grp) * dot32_w4(__ldg(row + p), s_x + 9 * p, __ldg(row_zero + grp));
      }
      acc = warp_sum(acc);
    }
    if constexpr (kSplit > 1) {
      if (lane == 0) partial[parity][warp] = acc;
      __syncthreads();
      if (writer) {
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < kSplit; ++i) sum += partial[parity][warp + i];  // a fixed order: the same bits every run
        acc = sum;
      }
      parity ^= 1;
    }
    if (writer) {
      if constexpr (kResidual) {
        a.y[n] = __float2bfloat16(resid + (acc + bias));  // one rounding
      } else {
        const bf16 out = epilogue_value<bf16>(acc, bias, a.epi);  // + bias, GELU, one rounding
        a.y[n] = out;
        if (a.kv.k_cache != nullptr) store_kv(a.kv, n, out);
      }
    }
  }
  wb::pdl_trigger();  // this CTA's rows are done: the next kernel may start its CTAs
}

// --- launchers -----------------------------------------------------------------------------

using wb::aligned16;

// One wave: one CTA per group of rows, but no more CTAs than fit on the GPU at once (the
// occupancy calculator's count, at most kMaxCtas), as v6's launch_row_gemv.
template <bool kNorm, bool kResidual, int kSplit>
void launch_w4(W4Args a, cudaStream_t stream) {
  a.vec = vec_ok(a, kNorm);
  auto* kernel = &w4_row_kernel<kNorm, kResidual, kSplit>;
  const size_t smem = int4_x_smem_bytes(a.K);  // at most 36 KB: no opt-in needed
  constexpr int kRows = kWarps / kSplit;
  const long long groups = (static_cast<long long>(a.N) + kRows - 1) / kRows;
  const long long resident = std::clamp<long long>(wb::blocks_per_gpu(kernel, kThreads, smem), 1, kMaxCtas);
  const unsigned grid = static_cast<unsigned>(std::min(groups, resident));
  wb::launch_chained(kernel, grid, kThreads, smem, stream, a);
}

}  // namespace

void ln_gemv_w4a16(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const uint8_t* q,
                   const float* scale, const uint8_t* zero, const bf16* b, bf16* h, bf16* y, int N, int C, Epilogue epi,
                   float eps, cudaStream_t stream) {
  launch_w4<true, false, 1>(ln_gemv_w4_args(x, r, gamma, beta, q, scale, zero, b, h, y, N, C, epi, eps), stream);
}

void ln_gemv_qkv_w4a16(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const uint8_t* q,
                       const float* scale, const uint8_t* zero, const bf16* b, bf16* h, bf16* qkv, int C, float eps,
                       const KvCacheTarget<bf16>& kv, cudaStream_t stream) {
  launch_w4<true, false, 1>(
      ln_gemv_qkv_w4_args("ln_gemv_qkv_w4a16", x, r, gamma, beta, q, scale, zero, b, h, qkv, C, eps, kv), stream);
}

// Rows of K >= 4096 (the MLP's projection, K = 4C) are shared by 2 warps: with N = C rows, one
// warp a row would leave most of the GPU's warp slots empty (GPT-2 1.5B: 1600 warps). Not
// tuned on a GPU yet: the split is a template parameter for that.
void gemv_residual_w4a16(const bf16* x, const uint8_t* q, const float* scale, const uint8_t* zero, const bf16* b,
                         const bf16* res, bf16* y, int N, int K, cudaStream_t stream) {
  const W4Args a = gemv_residual_w4_args("gemv_residual_w4a16", x, q, scale, zero, b, res, y, N, K);
  if (K >= 4096) {
    launch_w4<false, true, 2>(a, stream);
  } else {
    launch_w4<false, true, 1>(a, stream);
  }
}

}  // namespace ch09::solution
