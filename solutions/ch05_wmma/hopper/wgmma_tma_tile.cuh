// The 16-bit Hopper GEMM's block tile, shared by v6 (hopper/wgmma_tma_kernel.cu, which explains
// each piece) and v14 (hopper/v14_wgmma_store_overlap.cu): the 128 x 256 tile, 64 deep per stage,
// two consumer warpgroups of 64 rows, B row-major (MN-major) in four 64-column TMA boxes; one
// stage's wgmmas; the output's 64 x 64 store boxes; the tensor maps and their cache. Built for
// sm_90a alone, like every file of this folder (chapters/ch05_wmma/extra.cmake).
#pragma once
#include <cuda.h>

#include <cstdint>

#include "device/sm90.cuh"
#include "device/wgmma_gemm.cuh"

namespace ch05::solution::hopper::tile16 {

using namespace wb::sm90;

constexpr int kBM = 128, kBN = 256, kBK = 64;
constexpr int kConsumers = 2;                     // consumer warpgroups, 64 rows each
constexpr int kThreads = (1 + kConsumers) * 128;  // + the producer warpgroup
constexpr int kBoxN = 64;                         // columns of B per TMA box (128 bytes)
constexpr int kABytes = kBM * kBK * 2;            // 16 KB per stage
constexpr int kBBoxBytes = kBK * kBoxN * 2;       // 8 KB
constexpr int kBBytes = kBK * kBN * 2;            // 32 KB per stage
// The output staged for a TMA store (16-bit outputs without C): a consumer warpgroup's 64 x 256
// is 4 boxes of 64 columns, each 64 rows x 128 bytes, in the same 128-byte swizzle as B.
constexpr int kDBoxBytes = 64 * 128;                  // 8 KB
constexpr int kDHalfBytes = (kBN / 64) * kDBoxBytes;  // 32 KB: one consumer's 64 x 256
constexpr int kGroupM = 8;
static_assert(kBM == 64 * kConsumers, "each consumer warpgroup owns 64 rows");
static_assert(kBK * 2 == 128, "one A row per 128-byte swizzle row");
static_assert(kBN % kBoxN == 0, "B is loaded in 64-column boxes");

// d (64 x 256 per warpgroup, 128 FP32 per thread) += A (64 x 16, K-major, imm-trans-a = 0)
// * B (16 x 256, MN-major, imm-trans-b = 1), both from shared memory through descriptors
// (wgmma_ss, harness/device/wgmma_gemm.cuh).
template <class In>
__device__ __forceinline__ void wgmma_step(float (&d)[128], uint64_t desc_a, uint64_t desc_b) {
  wgmma_ss<In, 256, 0, 1>(d, desc_a, desc_b);
}

// One stage's four wgmmas (k = 0, 16, 32, 48) for consumer warpgroup cw: its 64 rows of A's
// stage at a_stage(stage) (K-major: 8-row groups 1024 bytes apart, 16 more k = 32 bytes on)
// times B's stage at b_stage(stage) (MN-major: 64-column boxes kBBoxBytes apart, 8 k rows 1024
// bytes apart, 16 more k = 16 rows of 128 bytes on). a_stage, b_stage: stage -> address.
template <class In, class AStage, class BStage>
__device__ __forceinline__ void mma_stage(float (&d)[128], AStage&& a_stage, BStage&& b_stage, int stage, int cw) {
#pragma unroll
  for (int kk = 0; kk < kBK / 16; ++kk) {
    const uint64_t desc_a = make_desc(a_stage(stage) + cw * 64 * 128 + kk * 32, 16, 1024);
    const uint64_t desc_b = make_desc(b_stage(stage) + kk * 16 * 128, kBBoxBytes, 1024);
    wgmma_step<In>(d, desc_a, desc_b);
  }
}

// The stage's copies (one thread): A's (64 K x 128 rows) box and B's four (64 N x 64 K) boxes,
// all completing on `bar`.
__device__ __forceinline__ void load_stage(uint32_t a, uint32_t b, const CUtensorMap* map_a, const CUtensorMap* map_b,
                                           int bm, int bn, int kt, uint32_t bar) {
  tma_load_2d(a, map_a, kt * kBK, bm * kBM, bar);
#pragma unroll
  for (int j = 0; j < kBN / kBoxN; ++j) {
    tma_load_2d(b + j * kBBoxBytes, map_b, bn * kBN + j * kBoxN, kt * kBK, bar);
  }
}

// --- host ----------------------------------------------------------------------------------

// The maps of the last problem, so that timing a call does not time their encoding. map_d (the
// output, for the TMA-store epilogue) is made only for 16-bit outputs.
template <class In>
struct MapCache {
  const In* a = nullptr;
  const In* b = nullptr;
  const void* d = nullptr;
  int m = 0, n = 0, k = 0;
  CUtensorMap map_a{}, map_b{}, map_d{};
  // Re-encodes A's and B's maps when the problem changed (A: M rows of K in (64, 128) boxes;
  // B: K rows of N in (64, 64) boxes); `who` names the step in errors.
  void update(const In* A, const In* B, int M, int N, int K, const char* who) {
    if (a != A || b != B || m != M || n != N || k != K) {
      map_a = make_tensor_map_2d(A, uint64_t(K), uint64_t(M), kBK, kBM, who);
      map_b = make_tensor_map_2d(B, uint64_t(N), uint64_t(K), kBoxN, kBK, who);
      a = A, b = B, m = M, n = N, k = K;
      d = nullptr;  // M or N may have changed
    }
  }
  // D's map (M rows of N in 64 x 64 boxes), when D changed.
  void update_d(const In* D, int M, int N, const char* who) {
    if (d != D) {
      map_d = make_tensor_map_2d(D, uint64_t(N), uint64_t(M), 64, 64, who);
      d = D;
    }
  }
};

}  // namespace ch05::solution::hopper::tile16
