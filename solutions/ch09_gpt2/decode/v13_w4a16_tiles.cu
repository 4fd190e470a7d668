// Step 13 — the INT4 GEMVs (W4A16) as balanced tiles whose loads are all issued at once:
// step 10's GEMV and step 11's fused decode kernels (ln_gemv, ln_gemv_qkv, gemv_residual) on
// one kernel, sized from the SM count (gpt2 --int4, both decode paths).
//
// What step 11 measured (GPT-2 1.5B, batch 1, H200): its INT4 kernels moved 200-460 GB/s,
// 4-10% of DRAM speed, while step 6's BF16 kernels moved 750-1,830 GB/s on twice the bytes;
// the INT4 step ran at 1.09x the BF16 step's tokens per second. An INT4 row of K = 1600 is 800
// bytes: one warp a row (steps 10 and 11) gives each lane one or two 16-byte loads, issued
// after the CTA has waited for the previous kernel and staged (and normalised) its input row.
// The kernels then cost a few DRAM round trips one after the other, not their bytes. What
// changes, and why:
//   * A CTA's work is a TILE: `rows` consecutive rows of q, which are one contiguous range of
//     rows * K / 32 16-byte pieces. Thread t takes the tile's pieces t, t + 256, ... (at most
//     kPer = 6): every load instruction of a warp reads 512 consecutive bytes, and every thread
//     has the same number of pieces (+-1) whatever K is — no lane sits idle because a row's 50
//     pieces do not divide by 32, and a row of K = 6400 (200 pieces) is shared by about 8 warps
//     (split K inside the CTA) without a template parameter per shape. A piece's row and place
//     in it come from a multiply and a shift (row_of), not a division per piece.
//   * All of a tile's loads (codes, and the group's scale and zero point beside each piece) are
//     issued first, into registers, BEFORE waiting for the previous kernel (the weights are
//     constants: rule 1 of harness/device/pdl.cuh) and before the row is staged and normalised:
//     the whole matrix is in flight while the CTA waits and runs its LayerNorm. The next tile's
//     loads are issued before the current tile's sums are reduced. The tile's biases are asked
//     into L2 then too, and a row's bias and residual are read before its sum is formed.
//   * The grid is sized from the SM count: 2 CTAs of 8 warps per SM (kCtasPerSm), and `rows`
//     chosen so that ceil(N / rows) tiles about fill them (GPT-2 1.5B on 132 SMs: 7 rows of
//     K = 6400 or 1600, 19 of the QKV, 25 of the MLP's first matrix, each one tile per CTA).
//     At most 64 registers a thread and two CTAs a SM leave half of the register file free:
//     each CTA lets the next kernel start (pdl_trigger) as soon as its own wait is over, so the
//     next kernel's CTAs fit beside it and issue THEIR weight loads while this kernel computes.
//     (ptxas spills a few words at kPer = 6; 5 would not, but GPT-2 1.5B's mlp_proj would then
//     need 267 tiles of 6 rows for 264 CTAs: a second round for three of them.)
//   * A piece's sum (scale * dot32_w4: step 10's unpacking, unchanged: one LOP3 and one FADD a
//     code, no shift per code) goes to shared memory; after a barrier warp w sums rows w, w + 8,
//     ... of the tile: lane l adds pieces l, l + 32, ... of the row, then the shuffle sum. The
//     order depends on K alone (not on the grid, the tile or the GPU): the same bits every run.
//   * The prologue and epilogues are step 11's: the input row staged in FP32 (x + r rounded
//     to BF16 once, h stored by CTA 0; the LayerNorm rounded to BF16 as step 6 stores it), bias
//     (+ GELU), the residual add, the QKV row's key and value into the cache.
// Rows must be whole pieces (K % 32 == 0) and K <= 8192, as in steps 10 and 11.
//
// Run: build/ch09/bin/ch09_bench --op=gemv_w4a16_bias/bf16 --impl=v13_w4a16_tiles (and the ops
//      ln_gemv_w4a16/bf16, gemv_residual_w4a16/bf16, beside v10's and v11's rows)
//      build/ch09/bin/gpt2 --weights=1.5B.safetensors --prompt-len=512 --new=128 --decode=fused --int4
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "runtime/errors.cuh"
#include "device/pdl.cuh"
#include "device/reduce.cuh"
#include "device/vec.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"

namespace ch09::solution {
namespace {

using wb::block_sum;
using wb::warp_sum;

constexpr int kWarps = 8, kThreads = 32 * kWarps;         // a CTA: 8 warps
constexpr int kPer = 6;                                   // pieces a thread holds per tile
constexpr int kTilePieces = kThreads * kPer;              // a tile's pieces at most (1536: 48 KB of codes)
constexpr int kCtasPerSm = 2;                             // the grid: this many CTAs per SM at most
constexpr int kPiecesPerGroup = kInt4Group / kInt4Piece;  // 4 pieces of 32 codes make a group
// f / P by a multiply and a shift (no division per piece): with m = ceil(2^21 / P), f * m / 2^21
// exceeds f / P by less than f / 2^21 < 2^-10 < 1 / P (P <= 256), too little to reach the next
// integer, and f * m < 2^32.
constexpr int kMagicShift = 21;
static_assert(kTilePieces <= 2048, "f < 2^11: f * ceil(2^21 / P) fits 32 bits and errs by less than 1 / P");

enum class Prologue { Stage, Norm };  // the input row staged as it is, or normalised (LayerNorm)

struct TileArgs {
  const bf16* x;        // (K) the input
  const bf16* r;        // (K) added to x first (the residual pair), or null
  const bf16* gamma;    // (K) the LayerNorm's scale (Prologue::Norm)
  const bf16* beta;     // (K) the LayerNorm's shift (Prologue::Norm)
  bf16* h;              // (K) h = bf16(x + r), written by CTA 0; or null
  const uint8_t* q;     // (N, K / 2) codes, the layout of ch09.cuh
  const float* scale;   // (N, G) per group
  const uint8_t* zero;  // (N, G) per group
  const bf16* b;        // (N), or null for Epilogue::None
  const bf16* res;      // (N) kResidual: y = res + (W~ · x + b); y may be res itself
  bf16* y;              // (N)
  int N, K;
  int rows;          // rows per tile: rows * K / 32 <= kTilePieces
  uint32_t p_magic;  // ceil(2^21 / P), P = K / 32: f / P = (f * p_magic) >> 21 for f < kTilePieces
  Epilogue epi;
  float eps;
  bool vec;                // 16-byte loads of x, r, gamma, beta and stores of h (all 16-byte aligned)
  KvCacheTarget<bf16> kv;  // kv.k_cache not null: y is the QKV row, its keys and values go to the cache too
};

// A thread's pieces of one tile, with each piece's group scale and zero point.
struct Held {
  uint4 w[kPer];
  float scale[kPer];
  uint32_t zero[kPer];
};

// Tile t: rows n0 = t * rows .. n0 + rows - 1 (fewer in the last tile), pieces 0 .. count - 1.
struct Tile {
  long long n0;
  int rows, count;
};
// Piece f of a tile: row f / P of the tile, piece f % P of that row.
__device__ __forceinline__ int row_of(int f, uint32_t magic) {
  return static_cast<int>((static_cast<uint32_t>(f) * magic) >> kMagicShift);
}

__device__ __forceinline__ Tile tile_of(const TileArgs& a, long long t, int P) {
  const long long n0 = t * a.rows;
  const int rows = static_cast<int>(a.N - n0 < a.rows ? a.N - n0 : a.rows);
  return {n0, rows, rows * P};
}

// Every load of the thread's pieces of tile `tl`, issued before any is used; and the tile's
// biases asked into L2 (constants too: the epilogue then finds them there).
__device__ __forceinline__ void load_tile(const TileArgs& a, const Tile& tl, int P, int G, Held& hd) {
  const uint4* first = reinterpret_cast<const uint4*>(a.q) + tl.n0 * P;  // the tile: one contiguous range
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int f = threadIdx.x + kThreads * i;
    if (f < tl.count) {
      const int row = row_of(f, a.p_magic), p = f - row * P;
      const size_t g = static_cast<size_t>(tl.n0 + row) * G + p / kPiecesPerGroup;
      hd.w[i] = __ldg(first + f);
      hd.scale[i] = __ldg(a.scale + g);
      hd.zero[i] = __ldg(a.zero + g);
    }
  }
  if (a.epi != Epilogue::None && threadIdx.x < (tl.rows + 63) / 64) wb::pdl_prefetch_l2(a.b + tl.n0 + 64 * threadIdx.x);
}

// Each held piece's sum, scaled by its group's scale, into s_dot[f] (f: its place in the tile).
__device__ __forceinline__ void dot_tile(const Tile& tl, int P, uint32_t magic, const Held& hd, const float4* s_x,
                                         float* s_dot) {
  // The same row_of as load_tile's, computed again: kept from there, the six values would stay
  // live across the wait and the LayerNorm, past the 64 registers (the opaque copy stops that).
  uint32_t m;
  asm volatile("mov.b32 %0, %1;" : "=r"(m) : "r"(magic));
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int f = threadIdx.x + kThreads * i;
    if (f < tl.count) {
      const int p = f - row_of(f, m) * P;
      s_dot[f] = hd.scale[i] * dot32_w4(hd.w[i], s_x + 9 * p, hd.zero[i]);
    }
  }
}

// Where element k of the staged row lives, as a float index into the padded slots.
__device__ __forceinline__ int slot_of(int k) { return 4 * int4_x_slot(k / 4) + k % 4; }

// kE consecutive elements of a BF16 row from element kE * i: one 16-byte load (kE = 8), or one element.
template <int kE>
__device__ __forceinline__ void load_elems(const bf16* p, int i, bf16 (&e)[kE]) {
  if constexpr (kE == 8) {
    const uint4 v = reinterpret_cast<const uint4*>(p)[i];
    const bf16* pe = reinterpret_cast<const bf16*>(&v);
#pragma unroll
    for (int j = 0; j < 8; ++j) e[j] = pe[j];
  } else {
    e[0] = p[i];
  }
}

// The input row into shared memory as FP32, as step 11 stages it: v = bf16(x + r) (or x), CTA 0
// stores it to h; with Prologue::Norm the LayerNorm of v (two passes over the thread's own
// elements), each value rounded to BF16. kE = 8: 16-byte loads and stores (TileArgs::vec).
// Ends with a barrier.
template <Prologue kPro, int kE>
__device__ __forceinline__ void stage_row(const TileArgs& a, float* s, float* red) {
  constexpr bool kNorm = kPro == Prologue::Norm;
  const int count = a.K / kE;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < count; i += kThreads) {
    bf16 xe[kE], re[kE], oe[kE];
    load_elems<kE>(a.x, i, xe);
    if (a.r != nullptr) load_elems<kE>(a.r, i, re);
#pragma unroll
    for (int e = 0; e < kE; ++e) {
      float v = __bfloat162float(xe[e]);
      if (a.r != nullptr) v += __bfloat162float(re[e]);
      oe[e] = __float2bfloat16(v);
      const float vr = __bfloat162float(oe[e]);
      s[slot_of(kE * i + e)] = vr;
      if constexpr (kNorm) sum += vr;
    }
    if (a.h != nullptr && blockIdx.x == 0) {
      if constexpr (kE == 8) {
        uint4 out;
        bf16* po = reinterpret_cast<bf16*>(&out);
#pragma unroll
        for (int e = 0; e < 8; ++e) po[e] = oe[e];
        reinterpret_cast<uint4*>(a.h)[i] = out;
      } else {
        a.h[i] = oe[0];
      }
    }
  }
  if constexpr (kNorm) {
    const float mean = block_sum<kThreads>(sum, red) / static_cast<float>(a.K);
    float sq = 0.0f;
    for (int i = threadIdx.x; i < count; i += kThreads) {
#pragma unroll
      for (int e = 0; e < kE; ++e) {
        const float d = s[slot_of(kE * i + e)] - mean;
        sq += d * d;
      }
    }
    const float rstd = rsqrtf(block_sum<kThreads>(sq, red + kWarps) / static_cast<float>(a.K) + a.eps);
    for (int i = threadIdx.x; i < count; i += kThreads) {
      bf16 ge[kE], be[kE];
      load_elems<kE>(a.gamma, i, ge);
      load_elems<kE>(a.beta, i, be);
#pragma unroll
      for (int e = 0; e < kE; ++e) {
        float& v = s[slot_of(kE * i + e)];
        v = __bfloat162float(__float2bfloat16((v - mean) * rstd * __bfloat162float(ge[e]) + __bfloat162float(be[e])));
      }
    }
  }
  __syncthreads();
}

// Row n's output from its FP32 sum: step 11's epilogues. The bias and the residual are read
// before the row's sum is formed, so their trips overlap it.
template <bool kResidual>
__device__ __forceinline__ void finish_row(const TileArgs& a, int n, float acc, float bias, float res) {
  if constexpr (kResidual) {
    a.y[n] = __float2bfloat16(res + (acc + bias));  // one rounding
  } else {
    const bf16 out = epilogue_value<bf16>(acc, bias, a.epi);  // + bias, GELU, one rounding
    a.y[n] = out;
    if (a.kv.k_cache != nullptr) store_kv(a.kv, n, out);
  }
}

// grid (at most kCtasPerSm per SM, at most the tiles), block (kThreads), dynamic shared memory
// int4_x_smem_bytes(K) (the row in FP32, padded) + kTilePieces floats (the pieces' sums).
// CTA c takes tiles c, c + grid, ...
template <Prologue kPro, bool kResidual>
__global__ void __launch_bounds__(kThreads, 4) w4_tiles_kernel(const TileArgs a) {
  extern __shared__ float4 s_x[];
  __shared__ float red[2 * kWarps];                                   // block_sum: two exchange arrays
  float* s_dot = reinterpret_cast<float*>(s_x + a.K / 4 + a.K / 32);  // (kTilePieces), after the row's slots
  const int P = a.K / kInt4Piece, G = (a.K + kInt4Group - 1) / kInt4Group;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const long long tiles = (static_cast<long long>(a.N) + a.rows - 1) / a.rows;

  // 1. The first tile's codes, scales and zero points into registers: constants, so before
  //    the wait.
  long long t = blockIdx.x;
  Tile tl = tile_of(a, t, P);
  Held hd;
  load_tile(a, tl, P, G, hd);

  // 2. Wait for the previous kernel (x, r and res are its outputs), then let the next one start
  //    its CTAs: they take the other half of the SM and request their own weights.
  wb::pdl_wait();
  wb::pdl_trigger();

  // 3. The input row (normalised with Prologue::Norm) into shared memory.
  if (a.vec) {
    stage_row<kPro, 8>(a, reinterpret_cast<float*>(s_x), red);
  } else {
    stage_row<kPro, 1>(a, reinterpret_cast<float*>(s_x), red);
  }

  // 4. The tiles: the pieces' sums, the next tile's loads, the rows' sums.
  for (; t < tiles; t += gridDim.x) {
    dot_tile(tl, P, a.p_magic, hd, s_x, s_dot);
    const Tile now = tl;
    if (t + gridDim.x < tiles) {
      tl = tile_of(a, t + gridDim.x, P);
      load_tile(a, tl, P, G, hd);  // in flight while this tile's rows are summed
    }
    __syncthreads();
    for (int r = warp; r < now.rows; r += kWarps) {
      const int n = static_cast<int>(now.n0) + r;
      const bool writer = lane == 0;
      const float bias = writer && a.epi != Epilogue::None ? __bfloat162float(a.b[n]) : 0.0f;
      const float res = kResidual && writer ? __bfloat162float(a.res[n]) : 0.0f;
      float acc = 0.0f;
      for (int p = lane; p < P; p += 32) acc += s_dot[r * P + p];
      acc = warp_sum(acc);
      if (writer) finish_row<kResidual>(a, n, acc, bias, res);
    }
    __syncthreads();  // s_dot is the next tile's
  }
}

// --- launchers -----------------------------------------------------------------------------

using wb::aligned16;

void require_w4(const char* name, int K, const float* scale, const uint8_t* zero, const uint8_t* q) {
  require_int4(K, scale, zero);
  if (K > kInt4MaxK) {
    throw std::invalid_argument(std::string(name) + " = " + std::to_string(K) + ": the input row is staged in " +
                                "shared memory as FP32, which holds at most " + std::to_string(kInt4MaxK) +
                                " elements here");
  }
  if (!aligned16(q)) throw std::invalid_argument("q is not 16-byte aligned: INT4 rows are read in 16-byte loads");
}

// rows per tile: ceil(N / CTAs) so that the tiles about fill kCtasPerSm CTAs per SM, at most
// what a tile holds (K <= 8192: at least 6 rows); the grid: the tiles, at most those CTAs.
template <Prologue kPro, bool kResidual>
void launch_tiles(TileArgs a, cudaStream_t stream) {
  a.vec = aligned16(a.x) && (a.r == nullptr || aligned16(a.r)) &&
          (kPro != Prologue::Norm || (aligned16(a.gamma) && aligned16(a.beta))) &&
          (a.h == nullptr || aligned16(a.h));  // K % 32 == 0: the row is whole 16-byte pieces
  auto* kernel = &w4_tiles_kernel<kPro, kResidual>;
  const size_t smem = int4_x_smem_bytes(a.K) + kTilePieces * sizeof(float);  // at most 42 KB: no opt-in
  int device = 0, sms = 0, per_sm = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem));
  const long long ctas = static_cast<long long>(std::max(sms, 1)) * std::clamp(per_sm, 1, kCtasPerSm);
  const int P = a.K / kInt4Piece;
  const long long want = (static_cast<long long>(a.N) + ctas - 1) / ctas;
  a.rows = static_cast<int>(std::clamp<long long>(want, 1, kTilePieces / P));
  a.p_magic = ((1u << kMagicShift) + P - 1) / P;
  const long long tiles = (static_cast<long long>(a.N) + a.rows - 1) / a.rows;
  const unsigned grid = static_cast<unsigned>(std::min(tiles, ctas));
  wb::launch_chained(kernel, grid, kThreads, smem, stream, a);
}

TileArgs tile_args(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h, const uint8_t* q,
                   const float* scale, const uint8_t* zero, const bf16* b, bf16* y, int N, int K, Epilogue epi,
                   float eps) {
  TileArgs a{};
  a.x = x, a.r = r, a.gamma = gamma, a.beta = beta, a.h = h, a.q = q, a.scale = scale, a.zero = zero, a.b = b;
  a.y = y, a.N = N, a.K = K, a.epi = epi, a.eps = eps;
  return a;
}

}  // namespace

void gemv_w4a16_tiles(const bf16* x, const uint8_t* q, const float* scale, const uint8_t* zero, const bf16* b, bf16* y,
                      int N, int K, Epilogue epi, cudaStream_t stream) {
  require_valid(1, N, K, epi, b);
  require_w4("K", K, scale, zero, q);
  launch_tiles<Prologue::Stage, false>(
      tile_args(x, nullptr, nullptr, nullptr, nullptr, q, scale, zero, b, y, N, K, epi, 0.0f), stream);
}

void ln_gemv_w4a16_tiles(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const uint8_t* q,
                         const float* scale, const uint8_t* zero, const bf16* b, bf16* h, bf16* y, int N, int C,
                         Epilogue epi, float eps, cudaStream_t stream) {
  require_valid(1, N, C, epi, b);
  require_w4("C", C, scale, zero, q);
  launch_tiles<Prologue::Norm, false>(tile_args(x, r, gamma, beta, h, q, scale, zero, b, y, N, C, epi, eps), stream);
}

void ln_gemv_qkv_w4a16_tiles(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const uint8_t* q,
                             const float* scale, const uint8_t* zero, const bf16* b, bf16* h, bf16* qkv, int C,
                             float eps, const KvCacheTarget<bf16>& kv, cudaStream_t stream) {
  require_valid(1, 3 * C, C, Epilogue::Bias, b);
  require_w4("C", C, scale, zero, q);
  if (kv.k_cache == nullptr || kv.v_cache == nullptr || kv.pos == nullptr || kv.H * kv.D != C || kv.P < 1) {
    throw std::invalid_argument(
        "ln_gemv_qkv_w4a16_tiles: the cache needs k and v, a position, and H * D = C (H = " + std::to_string(kv.H) +
        ", D = " + std::to_string(kv.D) + ", C = " + std::to_string(C) + ")");
  }
  TileArgs a = tile_args(x, r, gamma, beta, h, q, scale, zero, b, qkv, 3 * C, C, Epilogue::Bias, eps);
  a.kv = kv;
  launch_tiles<Prologue::Norm, false>(a, stream);
}

void gemv_residual_w4a16_tiles(const bf16* x, const uint8_t* q, const float* scale, const uint8_t* zero, const bf16* b,
                               const bf16* res, bf16* y, int N, int K, cudaStream_t stream) {
  require_valid(1, N, K, Epilogue::Bias, b);
  require_w4("K", K, scale, zero, q);
  if (res == nullptr) throw std::invalid_argument("res is null: gemv_residual_w4a16 adds the residual in its epilogue");
  TileArgs a = tile_args(x, nullptr, nullptr, nullptr, nullptr, q, scale, zero, b, y, N, K, Epilogue::Bias, 0.0f);
  a.res = res;
  launch_tiles<Prologue::Stage, true>(a, stream);
}

}  // namespace ch09::solution
