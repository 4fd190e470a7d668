// Step 14 — the INT4 GEMVs with their weights in flight before the input exists: every lane
// asks for all of its rows' codes, scales and zero points at the kernel's first instruction,
// then waits for the previous kernel (gpt2 --int4 --decode=fused).
//
// What changes against v10_gemv_w4a16 and v11_fused_decode_w4a16, and why:
//   * The arithmetic of the problem. DRAM answers a load after about 0.8 µs; to move 4.3 TB/s
//     the GPU must keep 4.3 TB/s x 0.8 µs = 3.4 MB requested and not yet delivered, 26 KB per
//     SM (132 SMs). A whole INT4 GEMV of GPT-2 1.5B is about that size: QKV 3.8 MB of codes,
//     the fc 5.1 MB, the MLP's projection 5.1 MB, the attention's projection 1.3 MB, 10 to 39 KB
//     per SM. So the GEMV is one or two trips to DRAM long, and it is fast only if every SM
//     has ALL of its share requested at once, early, and little else on the critical path.
//   * v10 and v11 do not. A lane there loads one 16-byte piece of its row per loop step (at K
//     = 1600, 50 pieces: one or two per lane), sums the row, and only then asks for the next
//     row's: a round trip per row, 0.5 to 1.6 KB in flight per warp. Before the first load each
//     CTA waits for the previous kernel and stages x (and the LayerNorm: two block sums and two
//     trips to L2), and v10 pays that for every 8 rows.
//   * Here a warp takes a batch of rows at a time and holds it in registers: kSlots = 8 pieces
//     per lane (128 bytes, 4 KB a warp), row r of the batch in slots r * per_row ...; per_row =
//     ceil(K / 1024) slots a row, so a batch is 8 rows at K <= 1024, 4 at K = 1600, 1 at K = 6400.
//     The lane issues the 8 loads (and the pieces' scales and zero points, and its row's bias)
//     back to back, BEFORE pdl_wait: the weights are constants (rule 1 of device/pdl.cuh), so
//     they travel while the previous kernel drains, while this CTA waits for it and while it
//     stages x and the LayerNorm. Only then are they used. The codes are read with
//     ld.global.nc.L1::no_allocate (wb::load_once16): read once, they need no room in L1.
//   * The grid is the GPU's resident CTAs (the occupancy calculator, __launch_bounds__ for 2
//     CTAs of 8 warps per SM), and batch b goes to warp b / grid of CTA b % grid: the batches
//     spread over every SM first, then over a CTA's warps. GPT-2 1.5B has 1200 (QKV), 400
//     (attention's projection), 1600 (fc) and 1600 (the MLP's projection: one row a batch)
//     batches for 2112 warps, so every warp has at most one and all of an SM's weights are in
//     flight at once: 29, 10, 39 and 39 KB per SM, at or above the 26 KB. Larger shapes take
//     more batches per warp, each one's loads issued before its sums.
//   * A row's sums: each slot's dot product (dot32_w4, as v10) times its group's scale, with
//     no branch between the 8 slots (an empty one computes zeros), so a lane's 8 chains of
//     FMAs interleave; then the 8 slots' warp_sums side by side, and each row's slots added in
//     order. Lane r finishes row r (its bias loaded ahead, gemv_residual's residual requested
//     before the dot products). No split of a row over warps, and the order is fixed. (A first
//     form put a branch around each slot and one warp_sum after each row: each warp then ran
//     its 8 dot products and up to 8 shuffle chains one after another, and the standalone
//     benchmark measured it slower than v10 and v11 on most shapes.)
//   * The CTA lets the next kernel start (pdl_trigger) once x is staged, not at its end: the
//     next kernel's CTAs then take an SM as soon as one has room and put their own weights in
//     flight, the same overlap one level up. (v6 measured an early trigger as no gain for the
//     BF16 GEMVs, whose early work was an L2 prefetch; here it is the loads themselves.)
//   * The row is staged as v11 stages it (stage_row, w4_row.cuh), but a thread requests up to
//     kRowAhead = 4 of its 16-byte pieces of x before storing any: the MLP projection's x (K =
//     6400, 800 pieces for 256 threads) is one trip to L2 instead of four.
// What stays: the staged row (FP32, padded: int4_x_slot), the LayerNorm and the residual pair,
// the epilogues, the KV store, the refusals (K % 32 != 0, K > 8192).
//
// Measured (NVIDIA H200, GPT-2 1.5B random weights, prompt 512, 128 new, --decode=fused):
// 646.1 tok/s with --int4 against BF16's 494.5, 1.31x (v11: 542.4, 1.09x; the target, 1.6x,
// is missed). In the graph the step lost about 300 µs per token; the eager per-op times
// barely moved (docs/ch09-transformer.md, "v14: the weights in flight before the wait").
//
// Run: build/ch09/bin/ch09_bench --impl=v14_w4a16_loads_ahead     (the ops beside v10's and v11's:
//      --impl=v10_gemv_w4a16 and --impl=v11_fused_decode_w4a16 on the same shapes)
//      build/ch09/bin/gpt2 --weights=1.5B.safetensors --prompt-len=512 --new=128 --decode=fused --int4
#include <algorithm>
#include <cstdint>

#include "runtime/errors.cuh"
#include "device/pdl.cuh"
#include "device/reduce.cuh"
#include "device/vec.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"
#include "w4_row.cuh"
#include "runtime/launch_helpers.cuh"

namespace ch09::solution {
namespace {

using namespace w4;  // W4Args, stage_row, kWarps, kThreads (w4_row.cuh)

constexpr int kSlots = 8;       // 16-byte loads per lane per batch, all issued before any is used
constexpr int kMaxCtas = 1024;  // a grid at most
constexpr int kRowAhead = 4;    // 16-byte pieces of x per thread per trip to L2: K <= 8192 in one trip

// How a row of K codes maps onto a warp's slots (host-computed, the same for every batch).
struct Geometry {
  int pieces;   // 16-byte pieces of a row: K / 32 (at most 256)
  int per_row;  // slots a row takes per lane: ceil(pieces / 32), 1 .. kSlots
  int rows;     // rows per batch: kSlots / per_row
};

// One lane's share of a batch, in registers. Slot u holds piece p = 32 (u % per_row) + lane of
// the batch's row u / per_row, with that piece's group's scale and zero point.
struct Batch {
  uint4 w[kSlots];
  float s[kSlots];
  uint32_t z[kSlots];
  float bias;  // the bias of the batch's row `lane` (lane < rows), 0 without one
};

// Issues every load of batch `batch` for this lane; nothing waits for them here.
__device__ __forceinline__ void load_batch(const W4Args& a, const Geometry& g, long long batch, int lane, Batch& B) {
  const int G = (a.K + kInt4Group - 1) / kInt4Group;
  const long long n0 = batch * g.rows;
  int r = 0, j = 0;  // slot u's row in the batch and share of the row: u = r * per_row + j
#pragma unroll
  for (int u = 0; u < kSlots; ++u) {
    const int p = j * 32 + lane;
    const long long n = n0 + r;
    B.w[u] = make_uint4(0, 0, 0, 0);
    B.s[u] = 0.0f;
    B.z[u] = 0;
    if (r < g.rows && n < a.N && p < g.pieces) {
      B.w[u] = wb::load_once16(a.q + n * (a.K / 2) + 16 * p);
      const long long grp = n * G + p / kPiecesPerGroup;
      B.s[u] = __ldg(a.scale + grp);
      B.z[u] = __ldg(a.zero + grp);
    }
    if (++j == g.per_row) j = 0, ++r;  // counted, not divided: per_row is known only at run time
  }
  const long long n = n0 + lane;
  B.bias = lane < g.rows && n < a.N && a.epi != Epilogue::None ? __bfloat162float(a.b[n]) : 0.0f;
}

// The batch's rows from the registers and the staged row: lane r stores row n0 + r.
template <bool kResidual>
__device__ __forceinline__ void finish_batch(const W4Args& a, const Geometry& g, long long batch, int lane,
                                             const Batch& B, const float4* s_x) {
  const long long n0 = batch * g.rows, n = n0 + lane;
  const bool writer = lane < g.rows && n < a.N;
  const float resid = kResidual && writer ? __bfloat162float(a.res[n]) : 0.0f;  // in flight during the sums
  // Each slot's share of its row, scale x dot product. An empty slot computes too (its codes,
  // zero point and scale are 0; it reads a piece of x that exists), so no branch separates the
  // 8 dot products and the compiler interleaves them: a lane's chains of FMAs run side by side
  // instead of one after another.
  float t[kSlots];
  int j = 0;  // slot u's share of its row, counted as in load_batch
#pragma unroll
  for (int u = 0; u < kSlots; ++u) {
    const int p = min(j * 32 + lane, g.pieces - 1);
    t[u] = B.s[u] * dot32_w4(B.w[u], s_x + 9 * p, B.z[u]);
    if (++j == g.per_row) j = 0;
  }
  // The 8 warp sums side by side (independent shuffle chains), then each row's slots in order.
#pragma unroll
  for (int u = 0; u < kSlots; ++u) t[u] = wb::warp_sum(t[u]);
  float acc = 0.0f, mine = 0.0f;  // row r's sum so far; the sum of row n0 + lane
  int r = 0;
  j = 0;
#pragma unroll
  for (int u = 0; u < kSlots; ++u) {
    acc += t[u];
    if (++j == g.per_row) {  // row r is complete (the same for the whole warp)
      if (lane == r) mine = acc;
      acc = 0.0f, j = 0, ++r;
    }
  }
  if (!writer) return;
  if constexpr (kResidual) {
    a.y[n] = __float2bfloat16(resid + (mine + B.bias));  // one rounding
  } else {
    const bf16 out = epilogue_value<bf16>(mine, B.bias, a.epi);  // + bias, GELU, one rounding
    a.y[n] = out;
    if (a.kv.k_cache != nullptr) store_kv(a.kv, static_cast<int>(n), out);
  }
}

// grid (the resident CTAs at most: launch_ahead), block (kThreads), dynamic shared memory
// int4_x_smem_bytes(K): the row in FP32, padded. Warp w of CTA c takes the batches
// b = w * grid + c, then + 8 * grid, ...
//   kNorm      the LayerNorm in the prologue (ln_gemv, ln_gemv_qkv)
//   kResidual  y = res + (sum + b), one rounding (gemv_residual); else epilogue(sum, b)
// At most 128 registers (2 CTAs per SM): a lane's batch alone is 49 of them.
template <bool kNorm, bool kResidual>
__global__ void __launch_bounds__(kThreads, 2) w4_ahead_kernel(const W4Args a, const Geometry g, long long batches) {
  extern __shared__ float4 s_x[];    // the staged row: float4 f at int4_x_slot(f)
  __shared__ float red[2 * kWarps];  // block_sum: two exchange arrays
  const int lane = threadIdx.x % 32;
  const long long stride = static_cast<long long>(gridDim.x) * kWarps;
  long long batch = static_cast<long long>(threadIdx.x / 32) * gridDim.x + blockIdx.x;

  // 1. The first batch's weights in flight: they do not depend on the previous kernel.
  Batch B;
  if (batch < batches) load_batch(a, g, batch, lane, B);

  // 2. Wait for the previous kernel (x, r and res are its outputs), stage the input row (the
  //    LayerNorm with kNorm), and let the next kernel's CTAs start where there is room.
  wb::pdl_wait();
  stage_row<kNorm, kRowAhead>(a, reinterpret_cast<float*>(s_x), red);
  wb::pdl_trigger();

  // 3. The batches: the first from the registers loaded in 1, the others loaded here, each one's
  //    loads all issued before its sums.
  for (bool first = true; batch < batches; batch += stride, first = false) {
    if (!first) load_batch(a, g, batch, lane, B);
    finish_batch<kResidual>(a, g, batch, lane, B, s_x);
  }
}

// --- launchers -----------------------------------------------------------------------------

// As many CTAs as are resident at once (the occupancy calculator's count, at most kMaxCtas),
// but no more than there are batches.
template <bool kNorm, bool kResidual>
void launch_ahead(W4Args a, cudaStream_t stream) {
  a.vec = vec_ok(a, kNorm);
  Geometry g{};
  g.pieces = a.K / kInt4Piece;
  g.per_row = (g.pieces + 31) / 32;  // K <= 8192 (require_w4): at most 8
  g.rows = kSlots / g.per_row;
  const long long batches = (static_cast<long long>(a.N) + g.rows - 1) / g.rows;
  auto* kernel = &w4_ahead_kernel<kNorm, kResidual>;
  const size_t smem = int4_x_smem_bytes(a.K);  // at most 36 KB: no opt-in needed
  const long long resident = std::clamp<long long>(wb::blocks_per_gpu(kernel, kThreads, smem), 1, kMaxCtas);
  const unsigned grid = static_cast<unsigned>(std::min(batches, resident));
  wb::launch_chained(kernel, grid, kThreads, smem, stream, a, g, batches);
}

}  // namespace

void gemv_w4a16_ahead(const bf16* x, const uint8_t* q, const float* scale, const uint8_t* zero, const bf16* b, bf16* y,
                      int N, int K, Epilogue epi, cudaStream_t stream) {
  require_valid(1, N, K, epi, b);
  require_w4("K", K, scale, zero, q);
  launch_ahead<false, false>(w4_args(x, nullptr, nullptr, nullptr, nullptr, q, scale, zero, b, y, N, K, epi, 0.0f),
                             stream);
}

void ln_gemv_w4a16_ahead(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const uint8_t* q,
                         const float* scale, const uint8_t* zero, const bf16* b, bf16* h, bf16* y, int N, int C,
                         Epilogue epi, float eps, cudaStream_t stream) {
  launch_ahead<true, false>(ln_gemv_w4_args(x, r, gamma, beta, q, scale, zero, b, h, y, N, C, epi, eps), stream);
}

void ln_gemv_qkv_w4a16_ahead(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const uint8_t* q,
                             const float* scale, const uint8_t* zero, const bf16* b, bf16* h, bf16* qkv, int C,
                             float eps, const KvCacheTarget<bf16>& kv, cudaStream_t stream) {
  launch_ahead<true, false>(
      ln_gemv_qkv_w4_args("ln_gemv_qkv_w4a16_ahead", x, r, gamma, beta, q, scale, zero, b, h, qkv, C, eps, kv), stream);
}

void gemv_residual_w4a16_ahead(const bf16* x, const uint8_t* q, const float* scale, const uint8_t* zero, const bf16* b,
                               const bf16* res, bf16* y, int N, int K, cudaStream_t stream) {
  launch_ahead<false, true>(gemv_residual_w4_args("gemv_residual_w4a16_ahead", x, q, scale, zero, b, res, y, N, K),
                            stream);
}

}  // namespace ch09::solution
