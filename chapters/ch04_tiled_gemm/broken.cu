// Harness self-tests for chapter 4: SGEMMs with the mistakes learners make. Each must be
// rejected by the same checks the learner's kernels meet, with the outcome code it declares
// (the harness generates one test per kernel: ctest --preset ch04-solution -R broken). If
// one of these tests fails, the harness has gone soft, not the kernel.
//
// Most of them stay inside the test's allocations and are wrong in their values, leave
// elements unwritten, or write into C's padding. Two go out of bounds on purpose: one
// reads past the end of A and B (the fenced second call must fault, reported as an
// out-of-bounds read), one writes one row past the end of C (into the guard band). A third
// is right until A passes 2^31 elements: its row offset wraps in the large case.
#include "ch04.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"

namespace ch04 {
namespace {

using wb::Code;

__device__ __forceinline__ void put(float* c, float acc, float alpha, float beta) {
  *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}

// --- Right only on tile multiples ----------------------------------------------------------
// A shared-memory tiled SGEMM without edge handling: the grid is rounded down (M / T, N / T)
// and K is walked in whole tiles only. Every access stays inside the matrices, so nothing
// faults: the last partial rows and columns of C are never written and K's tail is dropped.
constexpr int kT = 16;

// kernel over C's M x N, a thread per element (kCols neighbouring columns per thread), in
// blocks of kBx x kBy threads, the grid rounded up; nothing is launched when C is empty.
template <auto kKernel, int kBx, int kBy, int kCols = 1>
void launch_2d(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
               int ldc, cudaStream_t s) {
  if (M == 0 || N == 0) return;
  kKernel<<<dim3((N + kBx * kCols - 1) / (kBx * kCols), (M + kBy - 1) / kBy), dim3(kBx, kBy), 0, s>>>(
      M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  WB_CHECK_LAUNCH();
}

__global__ void whole_tiles_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                                   float beta, float* C, int ldc) {
  __shared__ float a[kT][kT], b[kT][kT];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kT + ty, col = blockIdx.x * kT + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 + kT <= K; k0 += kT) {
    a[ty][tx] = A[static_cast<size_t>(row) * lda + k0 + tx];
    b[ty][tx] = B[static_cast<size_t>(k0 + ty) * ldb + col];
    __syncthreads();
    for (int k = 0; k < kT; ++k) acc += a[ty][k] * b[k][tx];
    __syncthreads();
  }
  put(C + static_cast<size_t>(row) * ldc + col, acc, alpha, beta);
}
void whole_tiles(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                 float* C, int ldc, cudaStream_t s) {
  const dim3 grid(N / kT, M / kT);  // the bug: rounds down
  if (grid.x == 0 || grid.y == 0) return;
  whole_tiles_kernel<<<grid, dim3(kT, kT), 0, s>>>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  WB_CHECK_LAUNCH();
}

// --- M and N swapped ------------------------------------------------------------------------
// Rows run to N and columns to M (and the grid follows the same mistake): right when
// M == N. The loads and stores are clamped to the allocations the checks make, so the
// mistake shows as wrong and unwritten elements instead of a fault.
__device__ __forceinline__ float at(const float* p, size_t i, size_t count) { return i < count ? p[i] : 0.0f; }

__global__ void swapped_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                               float beta, float* C, int ldc, size_t a_count, size_t b_count, size_t c_count) {
  const int col = blockIdx.x * 32 + threadIdx.x;
  const int row = blockIdx.y * 8 + threadIdx.y;
  if (row >= N || col >= M) return;  // the bug
  float acc = 0.0f;
  for (int p = 0; p < K; ++p) {
    acc += at(A, static_cast<size_t>(row) * lda + p, a_count) * at(B, static_cast<size_t>(p) * ldb + col, b_count);
  }
  const size_t i = static_cast<size_t>(row) * ldc + col;
  if (i < c_count) put(C + i, acc, alpha, beta);
}
void swapped(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
             int ldc, cudaStream_t s) {
  if (M == 0 || N == 0) return;
  const dim3 grid((M + 31) / 32, (N + 7) / 8);
  swapped_kernel<<<grid, dim3(32, 8), 0, s>>>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                                              static_cast<size_t>(M) * lda, static_cast<size_t>(K) * ldb,
                                              static_cast<size_t>(M) * ldc);
  WB_CHECK_LAUNCH();
}

// --- A race between loading a shared tile and using it -----------------------------------
// The __syncthreads() between storing the tiles and reading them is missing (kSync false).
// Races show only now and then when every warp runs at the same pace, so to make this one
// show every time, each warp but the first waits about 10 microseconds before loading its
// rows of the tiles: warp 0 then multiplies rows of B's tile that are not there yet.
// With kSync true the same kernel is right: the barrier alone makes the difference.
template <bool kSync>
__global__ void racy_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                            float beta, float* C, int ldc) {
  constexpr int T = 32;
  __shared__ float a[T][T], b[T][T];
  const int tx = threadIdx.x, ty = threadIdx.y;  // warp number == ty
  const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += T) {
    if (ty != 0) {  // every warp but the first spins for about 10 microseconds
      const long long start = clock64();
      while (clock64() - start < 20000) {
      }
    }
    a[ty][tx] = (row < M && k0 + tx < K) ? A[static_cast<size_t>(row) * lda + k0 + tx] : 0.0f;
    b[ty][tx] = (k0 + ty < K && col < N) ? B[static_cast<size_t>(k0 + ty) * ldb + col] : 0.0f;
    if (kSync) __syncthreads();  // the bug when kSync is false
    for (int k = 0; k < T; ++k) acc += a[ty][k] * b[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) put(C + static_cast<size_t>(row) * ldc + col, acc, alpha, beta);
}
template <bool kSync>
void racy(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
          int ldc, cudaStream_t s) {
  if (M == 0 || N == 0) return;
  const dim3 grid((N + 31) / 32, (M + 31) / 32);
  racy_kernel<kSync><<<grid, dim3(32, 32), 0, s>>>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  WB_CHECK_LAUNCH();
}

// --- beta handled wrongly -------------------------------------------------------------------
// reads_c: always computes alpha * acc + beta * C, so with beta == 0 it reads C's NaN.
// ignores_beta: never reads C, so it is wrong whenever beta != 0.
template <bool kReadsC>
__global__ void beta_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                            float beta, float* C, int ldc) {
  const int col = blockIdx.x * 32 + threadIdx.x, row = blockIdx.y * 8 + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int p = 0; p < K; ++p) acc += A[static_cast<size_t>(row) * lda + p] * B[static_cast<size_t>(p) * ldb + col];
  float* c = C + static_cast<size_t>(row) * ldc + col;
  *c = kReadsC ? alpha * acc + beta * *c : alpha * acc;
}

// --- Writes past the last column, into C's padding ---------------------------------------
// Each thread computes 4 neighbouring columns and stores all 4 whenever the first is inside
// C. Only used with padded C (ldc >= N + 3), so the stray stores land in the padding.
__global__ void four_wide_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                                 float beta, float* C, int ldc) {
  const int col = (blockIdx.x * 32 + threadIdx.x) * 4, row = blockIdx.y * 8 + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc[4] = {};
  for (int p = 0; p < K; ++p) {
    const float a = A[static_cast<size_t>(row) * lda + p];
    for (int c = 0; c < 4; ++c) acc[c] += col + c < N ? a * B[static_cast<size_t>(p) * ldb + col + c] : 0.0f;
  }
  for (int c = 0; c < 4; ++c) put(C + static_cast<size_t>(row) * ldc + col + c, acc[c], alpha, beta);  // the bug
}

// --- Loads before the bounds check ---------------------------------------------------------
// Every thread of the rounded-up grid runs the dot product, and only then asks whether its
// element is inside C. The values past the edges are never used, so the output is right,
// but the threads past the last row read beyond the end of A (and those past the last
// column beyond the end of B): the fenced second call faults.
__global__ void early_load_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                                  float beta, float* C, int ldc) {
  const int col = blockIdx.x * 32 + threadIdx.x, row = blockIdx.y * 8 + threadIdx.y;
  float acc = 0.0f;
  for (int p = 0; p < K; ++p) acc += A[static_cast<size_t>(row) * lda + p] * B[static_cast<size_t>(p) * ldb + col];
  if (row < M && col < N) put(C + static_cast<size_t>(row) * ldc + col, acc, alpha, beta);  // the check comes too late
}

// --- One row too many -----------------------------------------------------------------------
// The row check is `row <= M`: the threads of row M write a zero one row past the end of C.
__global__ void one_row_past_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                                    float beta, float* C, int ldc) {
  const int col = blockIdx.x * 32 + threadIdx.x, row = blockIdx.y * 8 + threadIdx.y;
  if (row > M || col >= N) return;  // the bug: row == M gets through
  float* c = C + static_cast<size_t>(row) * ldc + col;
  if (row == M) {
    *c = 0.0f;
    return;
  }
  float acc = 0.0f;
  for (int p = 0; p < K; ++p) acc += A[static_cast<size_t>(row) * lda + p] * B[static_cast<size_t>(p) * ldb + col];
  put(c, acc, alpha, beta);
}
void writes_past_rows(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                      float* C, int ldc, cudaStream_t s) {
  if (M == 0 || N == 0) return;
  one_row_past_kernel<<<dim3((N + 31) / 32, M / 8 + 1), dim3(32, 8), 0, s>>>(M, N, K, alpha, A, lda, B, ldb, beta, C,
                                                                             ldc);
  WB_CHECK_LAUNCH();
}

// --- The barrier after the multiply-adds is missing -----------------------------------------
// Without the second __syncthreads(), a warp that finishes its multiply-adds early goes on
// to store its rows of the NEXT tiles while the other warps still read the current ones.
// As in racy_kernel, every warp but the first waits about 10 microseconds (here before its
// multiply-adds), so warp 0 always gets ahead: the others multiply row 0 of B's next tile.
__global__ void no_trailing_sync_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                                        int ldb, float beta, float* C, int ldc) {
  constexpr int T = 32;
  __shared__ float a[T][T], b[T][T];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += T) {
    a[ty][tx] = (row < M && k0 + tx < K) ? A[static_cast<size_t>(row) * lda + k0 + tx] : 0.0f;
    b[ty][tx] = (k0 + ty < K && col < N) ? B[static_cast<size_t>(k0 + ty) * ldb + col] : 0.0f;
    __syncthreads();
    if (ty != 0) {
      const long long start = clock64();
      while (clock64() - start < 20000) {
      }
    }
    for (int k = 0; k < T; ++k) acc += a[ty][k] * b[k][tx];
    // the bug: no __syncthreads() here
  }
  if (row < M && col < N) put(C + static_cast<size_t>(row) * ldc + col, acc, alpha, beta);
}

// --- The row offset of A in int ----------------------------------------------------------
// A right one-thread-per-element SGEMM, except that row * lda is an int: right while A holds
// fewer than 2^31 elements; in the large case (lda = 16,388) the rows from 131,041 on are read
// from about 8 GB before A. The product is formed in unsigned 32-bit arithmetic and turned
// into an int, which is what `int off = row * lda` does on the GPU; written that way because a
// signed overflow is undefined, and the compiler may then widen the product to 64 bits and
// hide the mistake.
__device__ __forceinline__ int int_product(int a, int b) {
  return static_cast<int>(static_cast<unsigned>(a) * static_cast<unsigned>(b));
}

__global__ void int_offsets_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                                   float beta, float* C, int ldc) {
  const int col = blockIdx.x * 32 + threadIdx.x, row = blockIdx.y * 8 + threadIdx.y;
  if (row >= M || col >= N) return;
  const float* a = A + int_product(row, lda);  // the bug: should be static_cast<size_t>(row) * lda
  float acc = 0.0f;
  for (int p = 0; p < K; ++p) acc += a[p] * B[static_cast<size_t>(p) * ldb + col];
  put(C + static_cast<size_t>(row) * ldc + col, acc, alpha, beta);
}

wb::Shape gemm(int64_t m, int64_t n, int64_t k, int64_t pad, double alpha, double beta) {
  wb::Shape s{{"M", m}, {"N", n}, {"K", k}, {"pad", pad}};
  s.set_param("alpha", alpha).set_param("beta", beta);
  return s;
}

}  // namespace

WB_VARIANTS(ch04_broken, wb::Role::Broken) {
  const auto v = [](const char* name, SgemmFn* fn) { return wb::variant("sgemm/f32", name, fn); };
  // Several tiles in every direction and more than one tile of K: where the races show.
  const std::vector<wb::Shape> racy_shapes = {gemm(128, 96, 160, 0, 1.0, 0.0), gemm(128, 96, 160, 4, -1.5, 0.75)};
  return {
      // The grid rounded down: right on multiples of 16, partial tiles never written (with
      // beta == 0 C still holds the poison; with beta != 0 it keeps its starting values).
      v("right_only_on_tile_multiples", &whole_tiles)
          .rejected_as({Code::Unwritten, Code::Wrong}, "grid rounded down, K walked in whole tiles only"),
      v("m_and_n_swapped", &swapped)
          .rejected_as({Code::Unwritten, Code::Wrong, Code::NaN, Code::OobWrite, Code::WrotePadding},
                       "rows bounded by N and columns by M"),
      v("missing_sync_before_use", &racy<false>)
          .rejected_as({Code::Wrong, Code::NaN, Code::Nondeterministic, Code::Race},
                       "no __syncthreads() between storing the shared tiles and reading them")
          .on(racy_shapes),
      v("missing_sync_after_use", &launch_2d<no_trailing_sync_kernel, 32, 32>)
          .rejected_as({Code::Wrong, Code::NaN, Code::Nondeterministic, Code::Race},
                       "no __syncthreads() between reading the shared tiles and overwriting them")
          .on(racy_shapes),
      v("reads_c_when_beta_is_zero", &launch_2d<beta_kernel<true>, 32, 8>)
          .rejected_as({Code::NaN}, "reads C when beta == 0 (0 * NaN = NaN)"),
      v("ignores_beta", &launch_2d<beta_kernel<false>, 32, 8>)
          .rejected_as({Code::Wrong}, "never reads C, even when beta != 0"),
      // Four columns per thread, all four stored: with ldc >= N + 3 the stray stores land
      // in C's padding (the in-out padding must come back with the bits it had).
      v("writes_into_padding", &launch_2d<four_wide_kernel, 32, 8, 4>)
          .rejected_as({Code::WrotePadding}, "stores 4 columns past the last one")
          .on({gemm(33, 66, 20, 4, 1.0, 0.0), gemm(33, 66, 20, 4, 1.0, 0.5)}),
      v("reads_past_end", &launch_2d<early_load_kernel, 32, 8>)
          .rejected_as({Code::OobRead}, "loads before the bounds check"),
      v("writes_past_rows", &writes_past_rows).rejected_as({Code::OobWrite}, "row check row <= M"),
      // Right on the small shapes (each argument set); the large case (spec.cu's large_shape(),
      // the same numbers here) wraps the offset: a fault, or wrong values where the wrapped
      // address happens to be mapped.
      v("int_offsets", &launch_2d<int_offsets_kernel, 32, 8>)
          .rejected_as({Code::Fault, Code::OobRead, Code::OobWrite, Code::Wrong, Code::Unwritten, Code::NaN},
                       "A's row offset row * lda computed in int")
          .on({gemm(127, 131, 137, 0, 1.0, 0.0), gemm(257, 255, 263, 4, -1.5, 0.75), gemm(33, 65, 96, 3, 0.75, -1.25),
               gemm(150001, 32, 16384, 4, -1.5, 0.75).tag("large")}),
  };
}

}  // namespace ch04
