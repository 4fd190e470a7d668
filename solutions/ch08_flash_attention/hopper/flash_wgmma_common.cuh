// What chapter 8's two Hopper attention kernels share (v7, hopper/flash_wgmma_kernel.cu, and
// v8, hopper/flash_pingpong_kernel.cu): the tile configuration, the shared-memory layout and
// its mbarriers (Smem, init_barriers), the producer warpgroup (producer_warpgroup, produce), the
// consumers' pieces that both run unchanged (zero_acc, wgmma_qk, mask_keys, update_max,
// rescale_o, pack_bf16, wgmma_pv_tile, store_o_lse), and the host side (the tensor maps, launch).
// Both start their blocks the same way (start_block, consumer_lane). The two kernels' consumer
// warpgroups differ only in how they order these pieces: their wgmma against their softmax.
//
// The pieces were moved here from the kernels; some keep a form only because it left the
// kernels' generated code unchanged, and say so.
//
// Include it only from code built for sm_90a (the chapter's Hopper library).
#pragma once
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <string>

#include "attention_common.cuh"
#include "device/sm90.cuh"
#include "device/tensor_map.cuh"
#include "runtime/launch_helpers.cuh"
#include "wgmma_bf16.cuh"

// Defined in the device pass for sm_90a alone: the kernels' bodies are compiled only there.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CH08_SM90A 1
#endif

namespace ch08::solution::hopper::flash {

template <int kD_>
struct WgCfg {
  static constexpr int kD = kD_;     // the head size the kernel computes: 64 or 128
  static constexpr int kBr = 128;    // query rows per block: 64 per consumer warpgroup
  static constexpr int kBc = 128;    // keys per tile: the N of S = Q K^T
  static constexpr int kStages = 2;  // K and V tiles in flight
  static constexpr int kConsumers = 2;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kBoxes = kD / 64;  // 64-column boxes per row
  static constexpr int kQBoxBytes = kBr * 128;
  static constexpr int kKVBoxBytes = kBc * 128;
  static constexpr int kQBytes = kBoxes * kQBoxBytes;
  static constexpr int kKVBytes = kBoxes * kKVBoxBytes;                       // one stage of K, or of V
  static constexpr int kSmemBytes = kQBytes + 2 * kStages * kKVBytes + 1024;  // + the alignment slack
  static_assert(kD == 64 || kD == 128, "head sizes the wgmma shapes below cover");
};

template <class = void>  // (a template: the host pass, which never sees the kernel's body, does not warn)
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);  // .x (lo) in the low 16 bits
  return *reinterpret_cast<const uint32_t*>(&h);
}

template <int kD>
__device__ __forceinline__ void wgmma_pv(float (&acc_o)[kD / 2], const uint32_t (&a)[4], uint64_t desc_v) {
  if constexpr (kD == 128)
    wgmma_rs_m64n128k16(acc_o, a, desc_v);
  else
    wgmma_rs_m64n64k16(acc_o, a, desc_v);
}

// A block's shared memory, from `base` (1024-byte aligned): Q, then kStages stages of K, then of
// V, each kD / 64 boxes of 128 rows x 128 bytes; and its mbarriers `bars`: q_full, then per stage
// k_full, v_full, k_empty, v_empty.
template <class Cfg>
struct Smem {
  uint32_t base;
  const uint64_t* bars;

  __device__ __forceinline__ uint32_t sQ() const { return base; }
  __device__ __forceinline__ uint32_t sK(int s) const { return base + uint32_t(Cfg::kQBytes + s * Cfg::kKVBytes); }
  __device__ __forceinline__ uint32_t sV(int s) const {
    return base + uint32_t(Cfg::kQBytes + (Cfg::kStages + s) * Cfg::kKVBytes);
  }
  __device__ __forceinline__ uint32_t q_full() const { return wb::ptx::smem_u32(&bars[0]); }
  __device__ __forceinline__ uint32_t k_full(int s) const { return wb::ptx::smem_u32(&bars[1 + s]); }
  __device__ __forceinline__ uint32_t v_full(int s) const { return wb::ptx::smem_u32(&bars[1 + Cfg::kStages + s]); }
  __device__ __forceinline__ uint32_t k_empty(int s) const {
    return wb::ptx::smem_u32(&bars[1 + 2 * Cfg::kStages + s]);
  }
  __device__ __forceinline__ uint32_t v_empty(int s) const {
    return wb::ptx::smem_u32(&bars[1 + 3 * Cfg::kStages + s]);
  }
};

// The block's mbarriers (thread 0, before a __syncthreads): the full ones wait for the
// producer's arrive (plus the TMA bytes), the empty ones for one arrive per consumer warp; the
// fence makes them visible to the copy engine.
template <class Cfg>
__device__ __forceinline__ void init_barriers(const Smem<Cfg>& sm) {
  using namespace wb::sm90;
  mbar_init(sm.q_full(), 1);
  for (int s = 0; s < Cfg::kStages; ++s) {
    mbar_init(sm.k_full(s), 1);
    mbar_init(sm.v_full(s), 1);
    mbar_init(sm.k_empty(s), Cfg::kConsumers * 4);
    mbar_init(sm.v_empty(s), Cfg::kConsumers * 4);
  }
  fence_mbarrier_init();
}

// S and O of a consumer thread, zeroed.
template <int kBc, int kD>
__device__ __forceinline__ void zero_acc(float (&acc_s)[kBc / 2], float (&acc_o)[kD / 2]) {
#pragma unroll
  for (int i = 0; i < kBc / 2; ++i) acc_s[i] = 0.0f;
#pragma unroll
  for (int i = 0; i < kD / 2; ++i) acc_o[i] = 0.0f;
}

// The block whose rows see no key (the mask with Sq > Sk): o = 0, lse = -inf for its rows.
template <class Cfg>
__device__ __forceinline__ void write_empty_rows(bf16* __restrict__ o, float* __restrict__ lse, size_t row_base, int q0,
                                                 int Sq, int D) {
  for (int e = threadIdx.x; e < Cfg::kBr * D; e += Cfg::kThreads) {
    const int r = q0 + e / D;
    if (r < Sq) o[(row_base + r) * D + e % D] = __float2bfloat16_rn(0.0f);
  }
  for (int r = threadIdx.x; r < Cfg::kBr; r += Cfg::kThreads) {
    if (q0 + r < Sq) lse[row_base + q0 + r] = -INFINITY;
  }
}

// Where a consumer lane sits: warpgroup 1 or 2 of the block (cw 0 or 1) owns rows
// 64 cw .. 64 cw + 63 of the block's tile; each lane holds two rows of its warp's 16, and the
// last key each row may see (bottom-right aligned causal mask: key j <= row + Sk - Sq).
struct ConsumerLane {
  int cw, warp, lane, g, qd;  // consumer warpgroup, warp in it, lane, row group, quad
  int wg_row0;                // the warpgroup's first row
  int row_lo, row_hi;         // this lane's two rows
  int last_lo, last_hi;       // the last key each may see
};
__device__ __forceinline__ ConsumerLane consumer_lane(int warpgroup, int q0, int Sq, int Sk, bool causal) {
  const int cw = warpgroup - 1, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, qd = lane % 4;
  const int wg_row0 = q0 + cw * 64;
  const int row_lo = wg_row0 + warp * 16 + g, row_hi = row_lo + 8;
  const int last_lo = causal ? min(row_lo + Sk - Sq, Sk - 1) : Sk - 1;
  const int last_hi = causal ? min(row_hi + Sk - Sq, Sk - 1) : Sk - 1;
  return {cw, warp, lane, g, qd, wg_row0, row_lo, row_hi, last_lo, last_hi};
}

// O *= alpha, rows g (alpha_lo) and g + 8 (alpha_hi) of this lane.
template <int kD>
__device__ __forceinline__ void rescale_o(float (&acc_o)[kD / 2], float alpha_lo, float alpha_hi) {
#pragma unroll
  for (int j = 0; j < kD / 8; ++j) {
    acc_o[4 * j] *= alpha_lo;
    acc_o[4 * j + 1] *= alpha_lo;
    acc_o[4 * j + 2] *= alpha_hi;
    acc_o[4 * j + 3] *= alpha_hi;
  }
}

// The mask (v7's, v8's) on a tile of scores whose first key is kv0: keys past the last one each
// of this lane's rows may see (last_lo for row g, last_hi for g + 8) become -inf. The kernels call
// it only for tiles that can hold such a key.
template <int kBc>
__device__ __forceinline__ void mask_keys(float (&acc_s)[kBc / 2], int kv0, int qd, int last_lo, int last_hi) {
#pragma unroll
  for (int j = 0; j < kBc / 8; ++j) {
    const int key = kv0 + j * 8 + 2 * qd;
    if (key > last_lo) acc_s[4 * j] = -INFINITY;
    if (key + 1 > last_lo) acc_s[4 * j + 1] = -INFINITY;
    if (key > last_hi) acc_s[4 * j + 2] = -INFINITY;
    if (key + 1 > last_hi) acc_s[4 * j + 3] = -INFINITY;
  }
}

// The online softmax's step on the running maxima (v7's, v8's): the tile's max of rows g and
// g + 8 over the quad (lanes 4g .. 4g + 3), the base of exp2 (0 while a row has seen no key),
// alpha = how much O and l shrink; m becomes the new max and l is rescaled.
template <int kBc>
__device__ __forceinline__ void update_max(const float (&acc_s)[kBc / 2], float scale_log2, float& m_lo, float& m_hi,
                                           float& l_lo, float& l_hi, float& base_lo, float& base_hi, float& alpha_lo,
                                           float& alpha_hi) {
  float mx_lo = m_lo, mx_hi = m_hi;
#pragma unroll
  for (int j = 0; j < kBc / 8; ++j) {
    mx_lo = fmaxf(mx_lo, fmaxf(acc_s[4 * j], acc_s[4 * j + 1]));
    mx_hi = fmaxf(mx_hi, fmaxf(acc_s[4 * j + 2], acc_s[4 * j + 3]));
  }
#pragma unroll
  for (int o2 = 1; o2 <= 2; o2 *= 2) {  // the quad: lanes 4g .. 4g + 3
    mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xFFFFFFFFu, mx_lo, o2));
    mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xFFFFFFFFu, mx_hi, o2));
  }
  base_lo = mx_lo == -INFINITY ? 0.0f : mx_lo * scale_log2;  // nothing visible yet: 0
  base_hi = mx_hi == -INFINITY ? 0.0f : mx_hi * scale_log2;
  alpha_lo = fast_exp2(m_lo * scale_log2 - base_lo);
  alpha_hi = fast_exp2(m_hi * scale_log2 - base_hi);
  m_lo = mx_lo;
  m_hi = mx_hi;
  l_lo *= alpha_lo;
  l_hi *= alpha_hi;
}

// S = Q K^T of one tile (v7's, v8's): 64 rows x 128 keys, kD / 16 wgmma (SS; not committed).
// q_rows: the warpgroup's 64 rows in the first Q box; k_stage: the stage's first K box.
template <class Cfg>
__device__ __forceinline__ void wgmma_qk(float (&acc_s)[Cfg::kBc / 2], uint32_t q_rows, uint32_t k_stage) {
  using namespace wb::sm90;
#pragma unroll
  for (int kk = 0; kk < Cfg::kD / 16; ++kk) {
    const uint32_t in_box = uint32_t((kk % 4) * 32);  // 16 columns = 32 bytes along the swizzled row
    const uint64_t desc_q = make_desc(q_rows + (kk / 4) * Cfg::kQBoxBytes + in_box, 16, 1024);
    const uint64_t desc_k = make_desc(k_stage + (kk / 4) * Cfg::kKVBoxBytes + in_box, 16, 1024);
    wgmma_ss_m64n128k16(acc_s, desc_q, desc_k, kk > 0);
  }
}

// O += P V of one tile (v7's, v8's): 64 rows x kD, 128 / 16 wgmma with P from registers (RS;
// not committed). v_stage: the stage's first V box, read MN-major.
template <class Cfg>
__device__ __forceinline__ void wgmma_pv_tile(float (&acc_o)[Cfg::kD / 2], const uint32_t (&pf)[Cfg::kBc / 16][4],
                                              uint32_t v_stage) {
  using namespace wb::sm90;
#pragma unroll
  for (int ks = 0; ks < Cfg::kBc / 16; ++ks) {
    const uint64_t desc_v = make_desc(v_stage + uint32_t(ks * 16 * 128), Cfg::kKVBoxBytes, 1024);
    wgmma_pv<Cfg::kD>(acc_o, pf[ks], desc_v);
  }
}

// Warpgroup 0, the producer: one thread asks for every box; the others only give their
// registers away.
template <class Cfg>
__device__ __forceinline__ void producer_warpgroup(const CUtensorMap* map_q, const CUtensorMap* map_k,
                                                   const CUtensorMap* map_v, const Smem<Cfg> sm, int q0, int bh,
                                                   int tiles) {
  wb::sm90::setmaxnreg_dec<24>();
  if (threadIdx.x == 0) produce<Cfg>(map_q, map_k, map_v, sm, q0, bh, tiles);
}

// The block's query tile and key tiles (with the mask, the grid's first blocks take the tiles
// with the most keys).
struct BlockTiles {
  int q0, bh;       // the tile's first query row; the head (batch x heads)
  size_t row_base;  // this head's first row of o and lse
  int tiles;        // key tiles the block's rows see
};

// How every block of v7 and v8 starts: a block whose rows see no key (the mask with Sq > Sk)
// writes them empty and stops before any barrier is touched; otherwise thread 0 sets up the
// barriers and warpgroup 0 leaves to produce. Returns true for the consumer threads alone.
template <class Cfg>
__device__ __forceinline__ bool start_block(BlockTiles& b, const Smem<Cfg>& sm, const CUtensorMap* map_q,
                                            const CUtensorMap* map_k, const CUtensorMap* map_v, bf16* __restrict__ o,
                                            float* __restrict__ lse, int Sq, int Sk, int D, bool causal) {
  const int q_tile = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  b.q0 = q_tile * Cfg::kBr, b.bh = blockIdx.y;
  b.row_base = static_cast<size_t>(b.bh) * Sq;
  b.tiles = key_tiles(b.q0, Cfg::kBr, Sq, Sk, Cfg::kBc, causal);
  if (b.tiles == 0) {
    write_empty_rows<Cfg>(o, lse, b.row_base, b.q0, Sq, D);
    return false;
  }
  if (threadIdx.x == 0) init_barriers(sm);
  __syncthreads();
  if (threadIdx.x / 128 == 0) {
    producer_warpgroup<Cfg>(map_q, map_k, map_v, sm, b.q0, b.bh, b.tiles);
    return false;
  }
  return true;
}

// The consumers' epilogue (v7's, v8's): the quad's parts of l summed, one division per row, O
// as BF16 pairs straight to global memory, lse = m scale + log l (-inf for a row that saw no key).
template <int kD>
__device__ __forceinline__ void store_o_lse(const float (&acc_o)[kD / 2], float m_lo, float m_hi, float l_lo,
                                            float l_hi, bf16* __restrict__ o, float* __restrict__ lse, size_t row_base,
                                            int row_lo, int row_hi, int qd, int Sq, int D, float scale) {
#pragma unroll
  for (int o2 = 1; o2 <= 2; o2 *= 2) {
    l_lo += __shfl_xor_sync(0xFFFFFFFFu, l_lo, o2);
    l_hi += __shfl_xor_sync(0xFFFFFFFFu, l_hi, o2);
  }
  const float inv_lo = l_lo > 0.0f ? 1.0f / l_lo : 0.0f;  // a row that saw no key: o = 0
  const float inv_hi = l_hi > 0.0f ? 1.0f / l_hi : 0.0f;
#pragma unroll
  for (int j = 0; j < kD / 8; ++j) {
    const int col = j * 8 + 2 * qd;  // D % 8 == 0: col < D means col + 1 < D too
    if (col >= D) continue;
    if (row_lo < Sq) {
      *reinterpret_cast<__nv_bfloat162*>(o + (row_base + row_lo) * D + col) =
          __floats2bfloat162_rn(acc_o[4 * j] * inv_lo, acc_o[4 * j + 1] * inv_lo);
    }
    if (row_hi < Sq) {
      *reinterpret_cast<__nv_bfloat162*>(o + (row_base + row_hi) * D + col) =
          __floats2bfloat162_rn(acc_o[4 * j + 2] * inv_hi, acc_o[4 * j + 3] * inv_hi);
    }
  }
  if (qd == 0) {  // lse = m scale + log(l): natural log, scores in their scaled units
    if (row_lo < Sq) lse[row_base + row_lo] = l_lo > 0.0f ? m_lo * scale + logf(l_lo) : -INFINITY;
    if (row_hi < Sq) lse[row_base + row_hi] = l_hi > 0.0f ? m_hi * scale + logf(l_hi) : -INFINITY;
  }
}

// The producer's thread: Q once into q_full, then per tile t the K box(es) into stage t % 2
// once k_empty says every consumer warp released it, then V likewise.
template <class Cfg>
__device__ __forceinline__ void produce(const CUtensorMap* map_q, const CUtensorMap* map_k, const CUtensorMap* map_v,
                                        const Smem<Cfg> sm, int q0, int bh, int tiles) {
  using namespace wb::sm90;
  constexpr int kStages = Cfg::kStages;
  // (Lambdas, as the producer had before Smem: calling sm's members directly changed v8's code.)
  auto sK = [&](int s) { return sm.sK(s); };
  auto sV = [&](int s) { return sm.sV(s); };
  auto k_full = [&](int s) { return sm.k_full(s); };
  auto v_full = [&](int s) { return sm.v_full(s); };
  auto k_empty = [&](int s) { return sm.k_empty(s); };
  auto v_empty = [&](int s) { return sm.v_empty(s); };
  mbar_arrive_expect_tx(sm.q_full(), Cfg::kQBytes);
#pragma unroll
  for (int b = 0; b < Cfg::kBoxes; ++b) {
    tma_load_3d(sm.sQ() + b * Cfg::kQBoxBytes, map_q, 64 * b, q0, bh, sm.q_full());
  }
  int s = 0;
  uint32_t phase = 0;
  for (int t = 0; t < tiles; ++t) {
    mbar_wait(k_empty(s), phase ^ 1);  // every consumer warp released K of this stage
    mbar_arrive_expect_tx(k_full(s), Cfg::kKVBytes);
#pragma unroll
    for (int b = 0; b < Cfg::kBoxes; ++b) {
      tma_load_3d(sK(s) + b * Cfg::kKVBoxBytes, map_k, 64 * b, t * Cfg::kBc, bh, k_full(s));
    }
    mbar_wait(v_empty(s), phase ^ 1);
    mbar_arrive_expect_tx(v_full(s), Cfg::kKVBytes);
#pragma unroll
    for (int b = 0; b < Cfg::kBoxes; ++b) {
      tma_load_3d(sV(s) + b * Cfg::kKVBoxBytes, map_v, 64 * b, t * Cfg::kBc, bh, v_full(s));
    }
    if (++s == kStages) s = 0, phase ^= 1;
  }
}

// --- host side -------------------------------------------------------------------------

// One head-major BF16 tensor (B * H heads of S rows of D) as a 3-D map (D, S, B * H), read in
// boxes of 64 columns x `rows` rows of one head, 128-byte swizzled; zeros outside. `who` names
// the ladder step in the driver's error message.
inline CUtensorMap make_head_map(const bf16* base, int D, int S, int heads, int rows, const char* who) {
  const cuuint64_t dims[3] = {cuuint64_t(D), cuuint64_t(S), cuuint64_t(heads)};
  const cuuint64_t strides[2] = {cuuint64_t(D) * sizeof(bf16), cuuint64_t(S) * D * sizeof(bf16)};  // bytes
  const cuuint32_t box[3] = {64, cuuint32_t(rows), 1};
  return wb::sm90::bf16_swizzled_map_3d(
      base, dims, strides, box, who,
      "a (" + std::to_string(heads) + ", " + std::to_string(S) + ", " + std::to_string(D) + ") tensor");
}

// The maps of the last call, so that timing a call does not time their encoding.
struct MapCache {
  const bf16 *q = nullptr, *k = nullptr, *v = nullptr;
  int heads = 0, Sq = 0, Sk = 0, D = 0;
  CUtensorMap map_q{}, map_k{}, map_v{};

  // Encodes the maps again when any pointer or size differs from the last call's.
  void update(const bf16* q_, const bf16* k_, const bf16* v_, int heads_, int Sq_, int Sk_, int D_, const char* who) {
    if (q == q_ && k == k_ && v == v_ && heads == heads_ && Sq == Sq_ && Sk == Sk_ && D == D_) return;
    static_assert(WgCfg<64>::kBr == WgCfg<128>::kBr && WgCfg<64>::kBc == WgCfg<128>::kBc, "one box height");
    map_q = make_head_map(q_, D_, Sq_, heads_, WgCfg<128>::kBr, who);
    map_k = make_head_map(k_, D_, Sk_, heads_, WgCfg<128>::kBc, who);
    map_v = make_head_map(v_, D_, Sk_, heads_, WgCfg<128>::kBc, who);
    q = q_, k = k_, v = v_, heads = heads_, Sq = Sq_, Sk = Sk_, D = D_;
  }
};

// Launches one of the kernels (v7's or v8's, instantiated for Cfg) on the cached maps: one block
// per 128 query rows of each head; the dynamic shared memory is raised once per kernel.
template <class Cfg, auto kKernel>
void launch(const MapCache& maps, bf16* o, float* lse, int heads, int Sq, int Sk, int D, float scale, bool causal,
            cudaStream_t stream) {
  [[maybe_unused]] static const bool raised = wb::allow_dynamic_smem(kKernel, Cfg::kSmemBytes);  // once per kernel
  const float scale_log2 = scale * 1.4426950408889634f;                                          // log2(e)
  const dim3 grid(ceil_div(Sq, Cfg::kBr), heads);
  kKernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(maps.map_q, maps.map_k, maps.map_v, o, lse, Sq, Sk, D,
                                                            scale, scale_log2, causal);
  WB_CHECK_LAUNCH();
}

}  // namespace ch08::solution::hopper::flash
