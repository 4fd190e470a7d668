// Exercise 1 — tensor cores with WMMA: one warp per 16 x 16 tile of D.
//
// Goal: D = A * B (+ C) for FP16 and BF16 inputs with FP32 accumulation, the output FP32 or
// the input type, for ANY M, N, K >= 1 (1 x 1 x 1, 17 x 33 x 65, 4097 ...). One kernel
// template serves all four launchers below.
//
// What the tests check, and the outcome code a failure gets:
//   * D within the output type's rounding plus an FP32 sum over K (+1 with C) of a float64
//     reference [wrong], and its largest error at most 4x cuBLAS's on the same inputs, plus
//     a rounding step [wrong]: accumulate in FP32, round once. Inputs of +-256 (products past
//     FP16's range) are among them.
//   * every element of D written [unwritten], nothing outside D [oob_write], no NaN [nan].
//   * 1 x 1 x 1 ... 1024^3: primes, one past 16, 128 and 256, K = 1 and 4097, with and
//     without C; the BF16 pairs skip below sm_80 [skipped]. After them the large cases,
//     checked on sampled rows: 2048^3 (f16_f32, bf16_bf16), 4096^3 (bf16_bf16), and
//     150,001 x 32 x 16,384 (f16_f32, bf16_bf16), whose A passes 2^31 elements (i * K passes
//     2^31 from row 131,072: offsets in 64 bits, size_t).
//   * the same bits on a repeated run [nondeterministic]: one warp owns each tile of D and
//     adds K in a fixed order, so a difference is a race.
//   * all work on `stream` [outside_stream]; a second call on the same buffers with new
//     inputs [cached], in which A, B and C end where unmapped memory begins [oob_read].
//
// Test:  cmake --preset ch05 && ctest --preset ch05 -R ex1_wmma_global
// Bench: build/ch05/bin/ch05_bench --impl=student,reference
// Guide: docs/ch05-wmma.md, section "Exercise 1".
#include <mma.h>

#include "ch05.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch05 {
namespace {

using namespace nvcuda;

constexpr int kWarpsPerBlock = 4;

template <class In, class Out>
__global__ void wmma_global_kernel(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D) {
  if constexpr (has_tensor_cores<In>()) {  // BF16 fragments exist from sm_80 on (ch05.cuh)
    // TODO: which 16 x 16 tile of D is this warp's? (blockIdx, threadIdx.x / 32)
    // TODO: wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc; fill it with zeros.
    // TODO: for k0 = 0, 16, 32 ... < K: load a matrix_a fragment (16 rows of the tile,
    //       columns k0 .. k0+15 of A) and a matrix_b fragment (rows k0 .. k0+15 of B, the
    //       tile's 16 columns), both wmma::row_major, ldm = K for A and N for B; mma_sync.
    //       (The tile of A starts at A + row * K + k0: row * K in size_t, it passes 2^31.)
    //       load_matrix_sync needs the whole 16 x 16 inside the matrix, a 32-byte aligned
    //       pointer and ldm a multiple of 8 elements. Where that fails (the last tiles; K or
    //       N not a multiple of 8), copy the tile into a 16 x 16 __shared__ patch first,
    //       with zeros outside the matrix, and load the fragment from the patch (ldm 16).
    // TODO: store_matrix_sync acc into a 16 x 16 float patch in shared memory, then let the
    //       32 lanes write the elements that lie inside M x N: to_out<Out>(v + C value).
  }
}

template <class In, class Out>
void launch(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch05_wmma/ex1_wmma_global.cu");  // delete this line when you start

  if (M <= 0 || N <= 0) return;
  const dim3 block(32 * kWarpsPerBlock);
  const dim3 grid(1, 1);  // TODO: one warp per 16 x 16 tile of D, rounding up in both directions
  wmma_global_kernel<In, Out><<<grid, block, 0, stream>>>(M, N, K, A, B, C, D);
  WB_CHECK_LAUNCH();
}

}  // namespace

// student::wmma_global_f16_f32, _f16_f16, _bf16_f32 and _bf16_bf16: each calls launch<In, Out> above.
CH05_STUDENT_16BIT(wmma_global)

}  // namespace ch05
