// Step 16 — the BF16 fused GEMVs with their rows in flight: each warp holds a batch of rows in
// registers, asks for the whole batch before the kernel waits for the previous one, and asks
// for its NEXT batch before it sums the current one (gpt2 --decode=fused, BF16).
//
// What changes against v6_fused_decode, and why:
//   * The arithmetic of the problem (v14 says it for INT4): DRAM answers after about 0.8 µs, so
//     to move 4.3 TB/s the GPU must keep ~3.4 MB requested and not yet delivered, ~26 KB per SM.
//     v6's row GEMV gives a warp ONE row at a time: lane l loads pieces l, l + 32, ... of the
//     row, sums them, shuffles, stores, and only then asks for the next row. At K = 768 that is
//     1.5 KB per warp per trip to DRAM. The LM head (50257 rows: about 12 rows per warp, one
//     after another) read at 43 % of the DRAM bandwidth on an H200 for that reason: every row is
//     a round trip, and the trip is longer than the row's arithmetic.
//   * Here a warp takes a BATCH: kSlots = 8 pieces of 16 bytes per lane (128 bytes, 4 KB per
//     warp), row r of the batch in slots r * per_row ... (r + 1) * per_row - 1, per_row =
//     ceil(K / 256) (K = 768: 3 slots, 2 rows a batch; K = 1600: 7 slots, 1 row). A lane holds
//     TWO batches: the one it sums and the next one, whose loads are issued before the sums of
//     the current one begin. So a warp always has a batch on its way while it computes, and
//     the row's trip to DRAM overlaps the previous row's arithmetic instead of following it.
//   * The first two batches are requested BEFORE pdl_wait (weights are constants: rule 1 of
//     harness/device/pdl.cuh), with each row's bias, so they travel while the previous kernel
//     drains and while this CTA stages x and runs the LayerNorm. At GPT-2 124M's sizes a layer
//     GEMV's warps have at most one batch each: all of its weights are in flight before the
//     wait. The codes are read with ld.global.nc.L1::no_allocate (wb::load_once16).
//   * Rows longer than 8 pieces per lane (K > 2048: the MLP's projection, K = 4C) are split over
//     `split` = 2 or 4 warps of one CTA, each a contiguous share of at most 8 pieces per lane;
//     the warps' partial sums meet in shared memory and are added in a fixed order. v6 split
//     them too (gemv_residual, 4 or 8 warps a row), but loaded after the wait.
//   * The grid is the resident CTAs (2 of 8 warps per SM: two batches are 64 of a lane's 128
//     registers), and batch b goes to warp b / grid of CTA b % grid, so the batches spread
//     over every SM before they fill a CTA (v14's order). The CTA lets the next kernel start
//     once x is staged (pdl_trigger), not after its rows: the next kernel's CTAs take an SM as
//     soon as one has room and put their own first batches in flight.
//   * The sums: a slot's dot product is dot16 (step 4's order within a piece); then, for a
//     batch of several rows, the 8 slots are summed across the warp in one transposing
//     butterfly (13 shuffles, where one warp_sum per slot is 40): after it lane 4u holds slot
//     u's total, and lane r adds its row's slots, in order. A batch of one row sums its slots
//     in the lane first, then one warp_sum. The order is fixed: the same bits every run.
// What stays: v6's LayerNorm prologue and staged row (stage_row, row_gemv.cuh: the row in
// BF16, h written by CTA 0), the epilogues, the KV-cache store, the argmax keys and their
// merge by the last CTA. Rows that are not whole 16-byte pieces, or weights not 16-byte
// aligned, run v6's kernels (the same results within the ops' tolerances).
//
// Shapes (GPT-2, BF16): ln_gemv_qkv N 3C, C; gemv_residual N C, K C and N C, K 4C; ln_gemv
// N 4C, C (GELU); ln_gemv_argmax N 50257, C. C = 768 (124M), 1600 (1.5B); K <= 8192.
//
// Run: build/ch09/bin/ch09_bench --op=gemv_argmax/bf16 --impl=v6_fused_decode,v16_bf16_rows_ahead
//      (and ln_gemv/bf16, gemv_residual/bf16)
//      build/ch09/bin/gpt2 --weights=124M.safetensors --prompt-len=512 --new=128 --decode=fused
#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "device/pdl.cuh"
#include "device/reduce.cuh"
#include "device/vec.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"
#include "row_gemv.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch_helpers.cuh"

namespace ch09::solution {
namespace {

constexpr int kSlots = 8;                // 16-byte pieces per lane per batch
constexpr int kPiece = 8;                // BF16 weights per piece
constexpr int kMaxK = 8192;              // the staged row's length at most (16 KB)
constexpr int kMaxSplit = 4;             // warps per row at most: K <= 8192 is 1024 pieces
constexpr int kSlotLanes = 32 / kSlots;  // after the butterfly, slot u's total is in lanes 4u .. 4u + 3
enum class Tail { Epilogue, Argmax };    // what a finished row does

// How a row maps onto the warps and their slots (host-computed, the same for every batch).
struct Geometry {
  int pieces;   // 16-byte pieces of a row: K / 8
  int split;    // warps per row: 1, 2 or 4 (a CTA's warps w, w + 1, ... share one row)
  int share;    // pieces of a warp's share of its row: 32 * per_row (the last may be shorter)
  int per_row;  // slots a lane gives a row (its share): 1 .. kSlots
  int rows;     // rows per batch: kSlots / per_row with split 1, else 1
  int units;    // batches a CTA takes per step: kWarps / split
  int count;    // batches: ceil(N / rows)
};

// One lane's share of a batch. Slot u holds piece j * share + 32 * (u % per_row) + lane of the
// batch's row u / per_row (j: the warp's share of the row).
struct Batch {
  uint4 w[kSlots];
  float bias;  // the bias of the batch's row `lane` (lane < rows), 0 without one
};

// Issues every load of batch `b` for this lane (nothing waits for them here); past the last
// batch it loads nothing and leaves zeros.
__device__ __forceinline__ void load_batch(const RowGemvArgs<bf16>& a, const Geometry& g, int b, int share_j, int lane,
                                           Batch& B) {
  const int n0 = b * g.rows;
  const bool live = b < g.count;
  int r = 0, j = 0;  // slot u = r * per_row + j, counted: per_row is known only at run time
#pragma unroll
  for (int u = 0; u < kSlots; ++u) {
    const int p = share_j * g.share + 32 * j + lane;
    B.w[u] = make_uint4(0, 0, 0, 0);
    if (live && r < g.rows && n0 + r < a.N && p < g.pieces) {
      B.w[u] = wb::load_once16(a.w + size_t(n0 + r) * a.K + kPiece * p);
    }
    if (++j == g.per_row) j = 0, ++r;
  }
  const int n = n0 + lane;
  B.bias =
      live && share_j == 0 && lane < g.rows && n < a.N && a.epi != Epilogue::None ? __bfloat162float(a.b[n]) : 0.0f;
}

// The 8 slots' totals over the warp in one butterfly: each exchange sends the half of the
// values this lane does not keep and adds the half it receives, so the values halve while the
// lanes summed double. Returns, in every lane, the total of slot (lane / 4) % 8. Fixed order.
__device__ __forceinline__ float slot_totals(const float (&t)[kSlots], int lane) {
  const bool h16 = lane & 16, h8 = lane & 8, h4 = lane & 4;
  float a[4], b[2];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float keep = h16 ? t[i + 4] : t[i], send = h16 ? t[i] : t[i + 4];
    a[i] = keep + __shfl_xor_sync(0xffffffffu, send, 16);  // slot 4 * h16 + i
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float keep = h8 ? a[i + 2] : a[i], send = h8 ? a[i] : a[i + 2];
    b[i] = keep + __shfl_xor_sync(0xffffffffu, send, 8);  // slot 4 * h16 + 2 * h8 + i
  }
  float c = (h4 ? b[1] : b[0]) + __shfl_xor_sync(0xffffffffu, h4 ? b[0] : b[1], 4);  // slot (lane >> 2) & 7
  c += __shfl_xor_sync(0xffffffffu, c, 2);
  c += __shfl_xor_sync(0xffffffffu, c, 1);  // a + b == b + a: the four lanes of a slot agree
  return c;
}

// The batch's sum for this lane's row: the batch's row `lane` (split 1), or this warp's share of
// its one row (split > 1, in every lane). s_x: the staged row as 16-byte pieces.
__device__ __forceinline__ float batch_sum(const Geometry& g, int share_j, int lane, const Batch& B, const uint4* s_x) {
  // Each slot's piece times x's piece. An empty slot computes too (its weights are 0, its piece
  // of x exists), so no branch separates the 8 dot products and they interleave.
  float t[kSlots];
  int j = 0;
#pragma unroll
  for (int u = 0; u < kSlots; ++u) {
    const int p = min(share_j * g.share + 32 * j + lane, g.pieces - 1);
    t[u] = dot16(B.w[u], s_x[p], bf16{});
    if (++j == g.per_row) j = 0;
  }
  if (g.rows == 1) {  // one row: its slots in order in the lane, then one warp sum
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < kSlots; ++u) s += t[u];
    return wb::warp_sum(s);
  }
  // Several rows (per_row <= 4): the slots' totals, then lane r adds row r's slots in order.
  const float c = slot_totals(t, lane);
  const int first = (lane < g.rows ? lane : 0) * g.per_row;
  float mine = 0.0f;
#pragma unroll
  for (int i = 0; i < kSlots / 2; ++i) {
    const float v = __shfl_sync(0xffffffffu, c, kSlotLanes * (first + min(i, g.per_row - 1)));
    if (i < g.per_row) mine += v;
  }
  return mine;
}

// grid (the resident CTAs at most: launch_rows_ahead), block (kThreads), dynamic shared memory:
// the row, K BF16 (16-byte aligned). Warp w of CTA c is share j = w % split of unit k = w / split;
// at step s it takes batch (s * units + k) * grid + c.
//   kNorm  the LayerNorm in the prologue (ln_gemv, ln_gemv_qkv, ln_gemv_argmax)
//   kTail  Epilogue: epilogue(sum, bias) [+ the KV store]; Argmax: y = sum and the argmax of y as
//          stored
// At most 128 registers (2 CTAs per SM): two batches are 64 of them.
template <bool kNorm, Tail kTail>
__global__ void __launch_bounds__(kThreads, 2) rows_ahead_kernel(const RowGemvArgs<bf16> a, const Geometry g) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* s_row = reinterpret_cast<bf16*>(smem_raw);  // (K) the input row, staged once per CTA
  __shared__ float red[2 * kWarps];                 // block_sum: two exchange arrays
  __shared__ float partial[2][kWarps];              // split > 1: each warp's share, by step parity
  __shared__ Key warp_best[kWarps];                 // Argmax: each warp's best key
  __shared__ bool last_cta;                         // Argmax: this CTA took the last ticket
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int unit = warp / g.split, share_j = warp % g.split;
  const int stride = static_cast<int>(gridDim.x) * g.units;  // batches per step, all CTAs
  int b = unit * static_cast<int>(gridDim.x) + static_cast<int>(blockIdx.x);

  // 1. The first two batches in flight: they do not depend on the previous kernel.
  Batch cur, next;
  load_batch(a, g, b, share_j, lane, cur);
  load_batch(a, g, b + stride, share_j, lane, next);

  // 2. Wait for the previous kernel (x and r are its outputs), stage the input row (with the
  //    LayerNorm), and let the next kernel's CTAs start where there is room.
  wb::pdl_wait();
  stage_row<bf16, bf16, kNorm>(a, s_row, red);
  wb::pdl_trigger();
  const uint4* s_x = reinterpret_cast<const uint4*>(s_row);

  // 3. The steps: sum the current batch while the next one travels, then ask for the one after.
  //    Every warp of a CTA runs the same steps (the split rows meet at a barrier).
  [[maybe_unused]] Key best = 0;  // Argmax: the best key of this lane's rows
  int parity = 0;
  for (int first = blockIdx.x; first < g.count; first += stride, b += stride, parity ^= 1) {
    const int n = b * g.rows + (g.split == 1 ? lane : 0);  // the row this lane may finish
    const bool writer = b < g.count && n < a.N && (g.split == 1 ? lane < g.rows : share_j == 0 && lane == 0);
    float sum = batch_sum(g, share_j, lane, cur, s_x);
    if (g.split > 1) {  // the row's shares meet in shared memory, added in order
      if (lane == 0) partial[parity][warp] = sum;
      __syncthreads();  // (the other parity's slots were read before the previous barrier)
      if (writer) {
        sum = 0.0f;
        for (int i = 0; i < g.split; ++i) sum += partial[parity][warp + i];
      }
    }
    if (writer) {
      const bf16 out = epilogue_value<bf16>(sum, cur.bias, a.epi);  // + bias, GELU, one rounding
      a.y[n] = out;
      if constexpr (kTail == Tail::Argmax) {
        best = key_max(best, make_key(__bfloat162float(out), n));
      } else {
        if (a.kv.k_cache != nullptr) store_kv(a.kv, n, out);
      }
    }
    cur = next;
    load_batch(a, g, b + 2 * stride, share_j, lane, next);
  }
  if constexpr (kTail == Tail::Argmax) {
    best = wb::warp_reduce(best, [](Key x, Key y) { return key_max(x, y); });  // lane 0: the warp's best
    merge_argmax(a, best, warp_best, &last_cta);
  }
}

// --- launchers -----------------------------------------------------------------------------

bool v16_enabled();

// Whether v16's kernels take the row: whole 16-byte pieces of W, 16-byte aligned, K <= kMaxK.
bool takes(const RowGemvArgs<bf16>& a) {
  return a.K % kPiece == 0 && a.K <= kMaxK && wb::aligned16(a.w) && v16_enabled();
}

Geometry geometry_of(int N, int K) {
  Geometry g{};
  g.pieces = K / kPiece;
  g.split = 1;
  while ((g.pieces + 32 * g.split - 1) / (32 * g.split) > kSlots && g.split < kMaxSplit) g.split *= 2;
  g.per_row = (g.pieces + 32 * g.split - 1) / (32 * g.split);
  g.share = 32 * g.per_row;
  g.rows = g.split == 1 ? kSlots / g.per_row : 1;
  g.units = kWarps / g.split;
  g.count = static_cast<int>((static_cast<long long>(N) + g.rows - 1) / g.rows);
  return g;
}

// WORKBOOK_V16=0: every op runs v6's kernel instead (to compare the two in one session).
bool v16_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("WORKBOOK_V16");
    return v == nullptr || std::atoi(v) != 0;
  }();
  return on;
}

template <bool kNorm, Tail kTail>
void launch_rows_ahead(RowGemvArgs<bf16> a, cudaStream_t stream) {
  a.vec = true;
  a.vec_row = (size_t(a.K) * sizeof(bf16)) % 16 == 0 && wb::aligned16(a.x) && (a.r == nullptr || wb::aligned16(a.r)) &&
              (!kNorm || (wb::aligned16(a.gamma) && wb::aligned16(a.beta))) && (a.h == nullptr || wb::aligned16(a.h));
  const Geometry g = geometry_of(a.N, a.K);
  auto* kernel = &rows_ahead_kernel<kNorm, kTail>;
  const size_t smem = size_t(a.K) * sizeof(bf16);  // K % 8 == 0: whole 16-byte pieces, at most 16 KB
  const long long resident = std::clamp<long long>(wb::blocks_per_gpu(kernel, kThreads, smem), 1, kMaxCtas);
  const unsigned grid = static_cast<unsigned>(std::max<long long>(1, std::min<long long>(g.count, resident)));
  wb::launch_chained(kernel, grid, kThreads, smem, stream, a, g);
}

RowGemvArgs<bf16> args_of(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h, const bf16* w,
                          const bf16* b, bf16* y, int N, int K, Epilogue epi, float eps) {
  RowGemvArgs<bf16> a{};
  a.x = x, a.r = r, a.gamma = gamma, a.beta = beta, a.h = h, a.w = w, a.b = b, a.y = y;
  a.N = N, a.K = K, a.epi = epi, a.eps = eps;
  return a;
}

}  // namespace

// Each op: v6's checks and refusals (by calling v6 where v16 does not take the row), else v16.
void ln_gemv_rows_ahead(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const bf16* w, const bf16* b,
                        bf16* h, bf16* y, int N, int C, Epilogue epi, float eps, cudaStream_t stream) {
  const RowGemvArgs<bf16> a = args_of(x, r, gamma, beta, h, w, b, y, N, C, epi, eps);
  if (!takes(a) || N < 1) return ln_gemv<bf16>(x, r, gamma, beta, w, b, h, y, N, C, epi, eps, stream);
  require_valid(1, N, C, epi, b);
  launch_rows_ahead<true, Tail::Epilogue>(a, stream);
}

void ln_gemv_qkv_rows_ahead(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const bf16* w,
                            const bf16* b, bf16* h, bf16* qkv, int C, float eps, const KvCacheTarget<bf16>& kv,
                            cudaStream_t stream) {
  RowGemvArgs<bf16> a = args_of(x, r, gamma, beta, h, w, b, qkv, 3 * C, C, Epilogue::Bias, eps);
  const bool kv_ok =
      kv.k_cache != nullptr && kv.v_cache != nullptr && kv.pos != nullptr && kv.H * kv.D == C && kv.P >= 1;
  if (!takes(a) || !kv_ok || C < 1) return ln_gemv_qkv<bf16>(x, r, gamma, beta, w, b, h, qkv, C, eps, kv, stream);
  require_valid(1, 3 * C, C, Epilogue::Bias, b);
  a.kv = kv;
  launch_rows_ahead<true, Tail::Epilogue>(a, stream);
}

void gemv_argmax_rows_ahead(const bf16* x, const bf16* w, bf16* y, int32_t* index, float* value, int N, int K,
                            void* workspace, cudaStream_t stream) {
  RowGemvArgs<bf16> a = args_of(x, nullptr, nullptr, nullptr, nullptr, w, nullptr, y, N, K, Epilogue::None, 0.0f);
  if (!takes(a) || workspace == nullptr || N < 1) {
    return gemv_argmax<bf16>(x, w, y, index, value, N, K, workspace, stream);
  }
  require_valid(1, N, K, Epilogue::None, nullptr);
  a.index = index, a.value = value, a.ws = static_cast<ArgmaxWorkspace*>(workspace);
  launch_rows_ahead<false, Tail::Argmax>(a, stream);
}

void ln_gemv_argmax_rows_ahead(const bf16* x, const bf16* gamma, const bf16* beta, const bf16* w, bf16* y,
                               int32_t* index, float* value, int N, int C, float eps, void* workspace,
                               cudaStream_t stream) {
  RowGemvArgs<bf16> a = args_of(x, nullptr, gamma, beta, nullptr, w, nullptr, y, N, C, Epilogue::None, eps);
  if (!takes(a) || workspace == nullptr || N < 1) {
    return ln_gemv_argmax<bf16>(x, gamma, beta, w, y, index, value, N, C, eps, workspace, stream);
  }
  require_valid(1, N, C, Epilogue::None, nullptr);
  a.index = index, a.value = value, a.ws = static_cast<ArgmaxWorkspace*>(workspace);
  launch_rows_ahead<true, Tail::Argmax>(a, stream);
}

}  // namespace ch09::solution
