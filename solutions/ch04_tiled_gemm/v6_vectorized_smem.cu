// v6 — vectorized loads: float4 from global memory, A's tile transposed in shared memory,
// float4 reads of the register fragments.
//
// What changes over v5 (same 128 x 128 x 8 tiles, 256 threads, 8 x 8 per thread):
//   * global loads are float4: each thread moves its share of a tile in one 16-byte load
//     of A and one of B instead of four 4-byte loads each: 4x fewer load instructions.
//   * A's tile is stored transposed, a_tile[k][m]: the 8 values of A a thread needs for
//     one k are now 8 consecutive floats, read as two float4 (two LDS.128) instead of 8
//     scalar loads 8 floats apart. B's 8 values are two float4 as well. Per k: 4 shared
//     loads for 64 FMAs (v5: 16).
//   * C is written with float4 stores.
// Fewer instructions per FMA is the whole game from here on: the FP32 pipe can take one
// FMA instruction per cycle per SM sub-partition, and every load, address computation and
// barrier competes with it for issue slots.
// What still costs: the float4 reads of B are 2-way bank conflicts (a quarter-warp's 8
// lanes read 16 bytes each, 32 bytes apart), and each tile is loaded, waited for and only
// then computed on: the loads' latency is exposed once per tile. v7 and v8 fix these.
//
// Vector loads need 16-byte alignment: a row is read as float4 only when the matrix's base
// is aligned and its leading dimension is a multiple of 4, and only for groups of four
// that lie inside the matrix; everything else takes the element-by-element path.
//
// From gemm_common.cuh: load_tiles_vec4 (the float4 tile loads, A transposed),
// register_tile_loop and outer_product (as v5), store_row4, launch_checked.
//
// Run: build/ch04/bin/ch04_bench --impl=v6_vectorized_smem,reference
#include "runtime/errors.cuh"
#include "gemm_common.cuh"
#include "ladder.cuh"

namespace ch04::solution {
namespace {

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    vectorized_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                      float* C, int ldc, bool a_vec, bool b_vec, bool c_vec) {
  constexpr int kThreads = (BM / TM) * (BN / TN);
  static_assert(BM % TM == 0 && BN % TN == 0, "the thread tiles must cover the block tile");
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0 && BN % 4 == 0, "float4 everywhere: multiples of 4");
  static_assert(kThreads <= 1024, "at most 1024 threads per block");
  static_assert((BM * BK / 4) % kThreads == 0 && (BK * BN / 4) % kThreads == 0,
                "every thread loads the same number of float4 of each tile");

  __shared__ __align__(16) float a_tile[BK][BM];  // A's (BM, BK) tile, transposed: (BK of K, BM rows of C)
  __shared__ __align__(16) float b_tile[BK][BN];  // (BK of K, BN cols of C)
  const int tid = threadIdx.x;
  const int tcol = tid % (BN / TN);
  const int trow = tid / (BN / TN);
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

  float acc[TM][TN] = {};
  float a_reg[TM], b_reg[TN];
  // Per k: the thread's 8 values of A and 8 of B, each two float4 reads from the tiles.
  const auto load_regs = [&](int k) {
#pragma unroll
    for (int i = 0; i < TM; i += 4) {
      const float4 v = *reinterpret_cast<const float4*>(&a_tile[k][trow * TM + i]);
      a_reg[i + 0] = v.x, a_reg[i + 1] = v.y, a_reg[i + 2] = v.z, a_reg[i + 3] = v.w;
    }
#pragma unroll
    for (int j = 0; j < TN; j += 4) {
      const float4 v = *reinterpret_cast<const float4*>(&b_tile[k][tcol * TN + j]);
      b_reg[j + 0] = v.x, b_reg[j + 1] = v.y, b_reg[j + 2] = v.z, b_reg[j + 3] = v.w;
    }
  };
  const auto load_tiles = [&](int k0) {
    load_tiles_vec4<BM, BN, BK, kThreads>(a_tile, b_tile, A, lda, B, ldb, M, N, K, row0, col0, k0, tid, a_vec, b_vec);
  };
  register_tile_loop<BK>(K, acc, a_reg, b_reg, load_tiles, load_regs);

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = row0 + trow * TM + i;
    if (row >= M) continue;
    float* c_row = C + static_cast<size_t>(row) * ldc;
#pragma unroll
    for (int j = 0; j < TN; j += 4) {
      store_row4(c_row, col0 + tcol * TN + j, N, c_vec,
                 make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), alpha, beta);
    }
  }
}

}  // namespace

void v6_vectorized_smem(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                        float* C, int ldc, cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
  launch_checked(vectorized_kernel<kBM, kBN, kBK, kTM, kTN>, dim3(ceil_div(N, kBN), ceil_div(M, kBM)),
                 dim3((kBM / kTM) * (kBN / kTN)), 0, stream, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                 vector_ok(A, lda), vector_ok(B, ldb), vector_ok(C, ldc));
}

}  // namespace ch04::solution
