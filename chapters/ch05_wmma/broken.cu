// Harness self-tests for chapter 5: tensor-core GEMMs with the mistakes learners make.
// Each must be rejected by the same checks the learner's kernels meet, with the outcome
// code it declares (the harness generates one test per kernel:
// ctest --preset ch05-solution -R broken). If one of these tests fails, the harness has
// gone soft, not the kernel. The two int_offsets are right until A passes 2^31 elements: only
// the large case catches them. The last three are FP8 mistakes (spec_fp8.cu's ops): a scale
// applied twice, a block scale read from the wrong block, a conversion that does not saturate.
#include <mma.h>

#include <algorithm>

#include "ch05.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"

namespace ch05 {
namespace {

using namespace nvcuda;
using wb::Code;

// Copies the 16 x 16 tile at (r0, c0) of a rows x cols row-major matrix into a warp's
// patch (ldm 16), zeros outside the matrix.
template <class T>
__device__ void stage(T* patch, const T* X, int rows, int cols, int r0, int c0) {
  for (int e = threadIdx.x % 32; e < 256; e += 32) {
    const int r = r0 + e / 16, c = c0 + e % 16;
    patch[e] = (r < rows && c < cols) ? X[size_t(r) * cols + c] : zero<T>();
  }
  __syncwarp();
}

// Writes a warp's 16 x 16 accumulator tile at (r0, c0) through its float patch.
template <class Out, class Frag>
__device__ void write(const Frag& acc, float* patch, int r0, int c0, int M, int N, const Out* C, Out* D) {
  wmma::store_matrix_sync(patch, acc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int e = threadIdx.x % 32; e < 256; e += 32) {
    const int r = r0 + e / 16, c = c0 + e % 16;
    if (r < M && c < N) D[size_t(r) * N + c] = to_out<Out>(patch[e] + (C ? to_acc<float>(C[size_t(r) * N + c]) : 0.0f));
  }
}

// One 16-deep step of the block's 16 x 16 tile at (r0, c0): the patches of A and B at k0
// staged in shared memory, loaded, and multiplied into acc (kernels 1 and 4).
template <class Acc>
__device__ __forceinline__ void patch_step(wmma::fragment<wmma::accumulator, 16, 16, 16, Acc>& acc, __half* pa,
                                           __half* pb, const __half* A, const __half* B, int M, int N, int K, int r0,
                                           int c0, int k0) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
  stage(pa, A, M, K, r0, k0);
  stage(pb, B, K, N, k0, c0);
  wmma::load_matrix_sync(a, pa, 16);
  wmma::load_matrix_sync(b, pb, 16);
  wmma::mma_sync(acc, a, b, acc);
  __syncwarp();
}

// --- 1. Ignores the K remainder: the loop stops at the last whole step of 16 -----------

__global__ void k_floor_kernel(int M, int N, int K, const __half* A, const __half* B, const float* C, float* D) {
  if constexpr (has_tensor_cores<__half>()) {
    __shared__ __align__(32) __half pa[256], pb[256];
    __shared__ __align__(32) float pc[256];
    const int r0 = blockIdx.y * 16, c0 = blockIdx.x * 16;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k0 = 0; k0 + 16 <= K; k0 += 16) {  // BUG: the last K % 16 columns of A never enter
      patch_step(acc, pa, pb, A, B, M, N, K, r0, c0, k0);
    }
    write(acc, pc, r0, c0, M, N, C, D);
  }
}
void k_floor(int M, int N, int K, const __half* A, const __half* B, const float* C, float* D, cudaStream_t s) {
  k_floor_kernel<<<dim3((N + 15) / 16, (M + 15) / 16), 32, 0, s>>>(M, N, K, A, B, C, D);
  WB_CHECK_LAUNCH();
}

// --- 2. Reads A as column-major (the BLAS habit): right only when A is symmetric --------
// (Shapes must be multiples of 16: this kernel has no edge handling, the tests see to it.)

__global__ void a_col_major_kernel(int M, int N, int K, const __half* A, const __half* B, const float* C, float* D) {
  if constexpr (has_tensor_cores<__half>()) {
    __shared__ __align__(32) float pc[256];
    const int r0 = blockIdx.y * 16, c0 = blockIdx.x * 16;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k0 = 0; k0 < K; k0 += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::col_major> a;  // BUG: A is row-major
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
      wmma::load_matrix_sync(a, A + r0 + size_t(k0) * M, M);  // element (i, p) taken from A[p * M + i]
      wmma::load_matrix_sync(b, B + size_t(k0) * N + c0, N);
      wmma::mma_sync(acc, a, b, acc);
    }
    write(acc, pc, r0, c0, M, N, C, D);
  }
}
// A plain, right FP16 -> FP32 GEMM (one thread per element): what the two kernels with no
// edge handling fall back to on shapes they cannot take, so that only their mistake shows.
__global__ void plain_kernel(int M, int N, int K, const __half* A, const __half* B, const float* C, float* D) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y;
  if (i >= M || j >= N) return;
  float acc = 0.0f;
  for (int p = 0; p < K; ++p) acc += __half2float(A[size_t(i) * K + p]) * __half2float(B[size_t(p) * N + j]);
  D[size_t(i) * N + j] = acc + (C ? C[size_t(i) * N + j] : 0.0f);
}
void plain(int M, int N, int K, const __half* A, const __half* B, const float* C, float* D, cudaStream_t s) {
  if (M <= 0 || N <= 0) return;
  plain_kernel<<<dim3((N + 127) / 128, M), 128, 0, s>>>(M, N, K, A, B, C, D);
  WB_CHECK_LAUNCH();
}

void a_col_major(int M, int N, int K, const __half* A, const __half* B, const float* C, float* D, cudaStream_t s) {
  if (M % 16 || N % 16 || K % 16 || M == 0 || N == 0) return plain(M, N, K, A, B, C, D, s);
  a_col_major_kernel<<<dim3(N / 16, M / 16), 32, 0, s>>>(M, N, K, A, B, C, D);
  WB_CHECK_LAUNCH();
}

// --- 3. A cp.async pipeline that never waits for its copies -----------------------------
// 64 x 64 block tiles, 2 x 2 warps of 2 x 2 fragments, 3 stages of 32 along K, panels of
// 16 columns with padded rows. M and N multiples of 64, K a multiple of 32 (tests see to it).

[[maybe_unused]] constexpr int kPBM = 64, kPBN = 64, kPBK = 32, kPStages = 3, kPLd = 24;
[[maybe_unused]] constexpr int kPAStage = (kPBK / 16) * kPBM * kPLd, kPBStage = (kPBN / 16) * kPBK * kPLd;

__device__ void cp16(void* dst, const void* src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(dst))),
      "l"(src)
      : "memory");
#endif
}

[[maybe_unused]] __device__ void load_stage(__half* sa, __half* sb, const __half* A, const __half* B, int N, int K,
                                            int r0, int c0, int k0) {
  for (int c = threadIdx.x; c < kPBM * kPBK / 8; c += blockDim.x) {  // A: 64 rows x 4 pieces of 8
    const int r = c / 4, k = (c % 4) * 8;
    cp16(sa + (k / 16) * kPBM * kPLd + r * kPLd + k % 16, A + size_t(r0 + r) * K + k0 + k);
  }
  for (int c = threadIdx.x; c < kPBK * kPBN / 8; c += blockDim.x) {  // B: 32 rows x 8 pieces of 8
    const int k = c / 8, col = (c % 8) * 8;
    cp16(sb + (col / 16) * kPBK * kPLd + k * kPLd + col % 16, B + size_t(k0 + k) * N + c0 + col);
  }
}

__global__ void no_wait_kernel(int M, int N, int K, const __half* A, const __half* B, const float* C, float* D) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  __shared__ __align__(128) __half sa[kPStages * kPAStage];
  __shared__ __align__(128) __half sb[kPStages * kPBStage];
  __shared__ __align__(32) float pc[4][256];
  const int warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
  const int r0 = blockIdx.y * kPBM, c0 = blockIdx.x * kPBN, tiles = K / kPBK;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  for (int s = 0; s < kPStages - 1; ++s) {
    if (s < tiles) load_stage(sa + s * kPAStage, sb + s * kPBStage, A, B, N, K, r0, c0, s * kPBK);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  }
  for (int t = 0; t < tiles; ++t) {
    // BUG: no cp.async.wait_group here: the barrier orders the threads, not the copies.
    __syncthreads();
    const int next = t + kPStages - 1;
    if (next < tiles) {
      load_stage(sa + (next % kPStages) * kPAStage, sb + (next % kPStages) * kPBStage, A, B, N, K, r0, c0, next * kPBK);
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    const __half* ta = sa + (t % kPStages) * kPAStage;
    const __half* tb = sb + (t % kPStages) * kPBStage;
    for (int kk = 0; kk < kPBK / 16; ++kk) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b[2];
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], ta + kk * kPBM * kPLd + (wm * 32 + i * 16) * kPLd, kPLd);
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], tb + (wn * 2 + j) * kPBK * kPLd + kk * 16 * kPLd, kPLd);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
  }
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) write(acc[i][j], pc[warp], r0 + wm * 32 + i * 16, c0 + wn * 32 + j * 16, M, N, C, D);
#endif
}
void no_wait(int M, int N, int K, const __half* A, const __half* B, const float* C, float* D, cudaStream_t s) {
  if (M % kPBM || N % kPBN || K % kPBK || M == 0 || N == 0) return plain(M, N, K, A, B, C, D, s);
  no_wait_kernel<<<dim3(N / kPBN, M / kPBM), 128, 0, s>>>(M, N, K, A, B, C, D);
  WB_CHECK_LAUNCH();
}

// --- 4. Accumulates in FP16: within the FP16 output tolerance on short sums, but far
//        worse than cuBLAS (which accumulates in FP32 and rounds once) ------------------

__global__ void f16_acc_kernel(int M, int N, int K, const __half* A, const __half* B, const __half* C, __half* D) {
  if constexpr (has_tensor_cores<__half>()) {
    __shared__ __align__(32) __half pa[256], pb[256], pc[256];
    const int r0 = blockIdx.y * 16, c0 = blockIdx.x * 16;
    wmma::fragment<wmma::accumulator, 16, 16, 16, __half> acc;  // BUG: an FP16 accumulator
    wmma::fill_fragment(acc, __float2half(0.0f));
    for (int k0 = 0; k0 < K; k0 += 16) {
      patch_step(acc, pa, pb, A, B, M, N, K, r0, c0, k0);
    }
    wmma::store_matrix_sync(pc, acc, 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = threadIdx.x % 32; e < 256; e += 32) {
      const int r = r0 + e / 16, c = c0 + e % 16;
      if (r < M && c < N) D[size_t(r) * N + c] = C ? __hadd(pc[e], C[size_t(r) * N + c]) : pc[e];
    }
  }
}
void f16_acc(int M, int N, int K, const __half* A, const __half* B, const __half* C, __half* D, cudaStream_t s) {
  f16_acc_kernel<<<dim3((N + 15) / 16, (M + 15) / 16), 32, 0, s>>>(M, N, K, A, B, C, D);
  WB_CHECK_LAUNCH();
}

// --- 5. INT8 with the epilogue through float: right while |sums| < 2^24 -----------------

__global__ void i8_float_epilogue_kernel(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C,
                                         int32_t* D) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y;
  if (i >= M || j >= N) return;
  int acc = 0;
  for (int p = 0; p < K; ++p) acc += int(A[size_t(i) * K + p]) * int(B[size_t(p) * N + j]);
  float v = static_cast<float>(acc);  // BUG: a float holds 24 bits; sums past 2^24 lose their low bits
  if (C) v += static_cast<float>(C[size_t(i) * N + j]);
  D[size_t(i) * N + j] = static_cast<int32_t>(v);
}
void i8_float_epilogue(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C, int32_t* D,
                       cudaStream_t s) {
  if (M <= 0 || N <= 0) return;
  i8_float_epilogue_kernel<<<dim3((N + 127) / 128, M), 128, 0, s>>>(M, N, K, A, B, C, D);
  WB_CHECK_LAUNCH();
}

// --- 6. Loads the next element of A before checking that there is one --------------------
// Right values (the value loaded past the end is never used), but the last row reads one
// element past the end of A.

__global__ void a_prefetch_kernel(int M, int N, int K, const __half* A, const __half* B, const float* C, float* D) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y;
  if (i >= M || j >= N) return;
  const __half* a = A + size_t(i) * K;
  float acc = 0.0f;
  __half next = a[0];
  for (int p = 0; p < K; ++p) {
    const float x = __half2float(next);
    next = a[p + 1];  // BUG: p + 1 == K reads past the row, and past A on the last row
    acc += x * __half2float(B[size_t(p) * N + j]);
  }
  D[size_t(i) * N + j] = acc + (C ? C[size_t(i) * N + j] : 0.0f);
}
void a_prefetch(int M, int N, int K, const __half* A, const __half* B, const float* C, float* D, cudaStream_t s) {
  if (M <= 0 || N <= 0) return;
  a_prefetch_kernel<<<dim3((N + 127) / 128, M), 128, 0, s>>>(M, N, K, A, B, C, D);
  WB_CHECK_LAUNCH();
}

// --- 7. INT8: B's rows read 8 bytes at a time when N % 4 == 0 -----------------------------
// Each thread computes 8 neighbouring outputs D[i][j0 .. j0 + 7] and reads B[p][j0 .. j0 + 7]
// as one 8-byte load when N % 4 == 0 (rows of whole 4-byte words) instead of N % 8 == 0: a
// row p of B starts at p * N bytes, 8-byte aligned only when N % 8 == 0 or p is even. Right
// on every shape whose N is a multiple of 8 or not of 4; N = 36 or 44 (4 and 12 bytes past
// 16) make the odd rows' loads misaligned.

__global__ void i8_b_word_rule_kernel(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C,
                                      int32_t* D) {
  const int i = blockIdx.y, j0 = 8 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= M || j0 >= N) return;
  int acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const bool vec = N % 4 == 0 && j0 + 8 <= N;  // should be N % 8 == 0
  for (int p = 0; p < K; ++p) {
    const int a = A[size_t(i) * K + p];
    const int8_t* brow = B + size_t(p) * N + j0;
    if (vec) {
      const int2 w = *reinterpret_cast<const int2*>(brow);  // 8 bytes: misaligned when (p * N) % 8 == 4
      const int8_t* b = reinterpret_cast<const int8_t*>(&w);
      for (int e = 0; e < 8; ++e) acc[e] += a * b[e];
    } else {
      for (int e = 0; e < 8 && j0 + e < N; ++e) acc[e] += a * brow[e];
    }
  }
  for (int e = 0; e < 8 && j0 + e < N; ++e) {
    D[size_t(i) * N + j0 + e] = acc[e] + (C ? C[size_t(i) * N + j0 + e] : 0);
  }
}
void i8_b_word_rule(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C, int32_t* D,
                    cudaStream_t s) {
  if (M <= 0 || N <= 0) return;
  i8_b_word_rule_kernel<<<dim3((N + 8 * 64 - 1) / (8 * 64), M), 64, 0, s>>>(M, N, K, A, B, C, D);
  WB_CHECK_LAUNCH();
}

// --- 8. A's row offset in int: right until A passes 2^31 elements --------------------------
// A right one-thread-per-element GEMM on CUDA cores (any GPU), except that i * K is an int:
// in the large case (K = 16,384) the rows from 131,072 on are read from 2^31 elements before
// A. The product is formed in unsigned 32-bit arithmetic and turned into an int, which is what
// `int off = i * K` does on the GPU; written that way because a signed overflow is undefined,
// and the compiler may then widen the product to 64 bits and hide the mistake. Rows on y in
// blocks of 8 (a grid of M blocks along y would stop at 65,535 rows).

__device__ __forceinline__ int int_product(int a, int b) {
  return static_cast<int>(static_cast<unsigned>(a) * static_cast<unsigned>(b));
}

template <class In, class Out>
__global__ void int_offsets_kernel(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D) {
  using Acc = acc_t<In>;
  const int j = blockIdx.x * 32 + threadIdx.x, i = blockIdx.y * 8 + threadIdx.y;
  if (i >= M || j >= N) return;
  const In* a = A + int_product(i, K);  // BUG: should be size_t(i) * K
  Acc acc = 0;
  for (int p = 0; p < K; ++p) acc += to_acc<Acc>(a[p]) * to_acc<Acc>(B[size_t(p) * N + j]);
  const size_t at = size_t(i) * N + j;
  D[at] = to_out<Out>(acc + (C ? to_acc<Acc>(C[at]) : Acc(0)));
}
template <class In, class Out>
void int_offsets(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t s) {
  if (M <= 0 || N <= 0) return;
  int_offsets_kernel<In, Out><<<dim3((N + 31) / 32, (M + 7) / 8), dim3(32, 8), 0, s>>>(M, N, K, A, B, C, D);
  WB_CHECK_LAUNCH();
}

// --- 9-11. FP8 (the ops of spec_fp8.cu) --------------------------------------------------------
// One thread per element of D on CUDA cores, right but for its one mistake each.

enum class Fp8Mistake { ScaleTwice, ScaleARowMajor };

__global__ void fp8_gemm_kernel(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B,
                                const float* scale_a, const float* scale_b, bool blocked, Fp8Mistake mistake,
                                __nv_bfloat16* D) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y;
  if (i >= M || j >= N) return;
  const int kb_count = fp8_k_blocks(K), ld_b = fp8_scale_b_ld(K);
  float total = 0.0f;
  for (int kb = 0; kb < kb_count; ++kb) {
    float part = 0.0f;
    for (int p = kb * kFp8ScaleBlock; p < min(K, (kb + 1) * kFp8ScaleBlock); ++p) {
      part += float(A[size_t(i) * K + p]) * float(B[size_t(j) * K + p]);
    }
    if (blocked) {
      // BUG (ScaleARowMajor): scale_a read as M x KB row-major, the habit from A itself; it is
      // KB x M (M fastest, cuBLASLt's layout), so every row but the first takes another block's scale.
      const size_t at = mistake == Fp8Mistake::ScaleARowMajor ? size_t(i) * kb_count + kb : size_t(kb) * M + i;
      total += part * scale_a[at] * scale_b[size_t(j / kFp8ScaleBlock) * ld_b + kb];
    } else {
      total += part;
    }
  }
  if (!blocked) {
    total *= scale_a[0] * scale_b[0];
    if (mistake == Fp8Mistake::ScaleTwice) total *= scale_a[0] * scale_b[0];  // BUG: the scales again
  }
  D[size_t(i) * N + j] = __float2bfloat16_rn(total);
}

template <bool kBlocked, Fp8Mistake kMistake>
void fp8_gemm(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
              const float* scale_b, __nv_bfloat16* D, cudaStream_t s) {
  check_fp8_gemm_args(M, N, K, "broken fp8_gemm");
  if (M == 0 || N == 0) return;
  fp8_gemm_kernel<<<dim3((N + 127) / 128, M), 128, 0, s>>>(M, N, K, A, B, scale_a, scale_b, kBlocked, kMistake, D);
  WB_CHECK_LAUNCH();
}

// The conversion without saturation: __NV_NOSAT turns |x| past 464 (448 and half a step) into
// NaN, E4M3 having no infinity. Right wherever X / scale stays in range.
__global__ void quantize_nosat_kernel(size_t n, const __nv_bfloat16* X, const float* scale, __nv_fp8_e4m3* Q) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    Q[i].__x = __nv_cvt_float_to_fp8(__bfloat162float(X[i]) / scale[0], __NV_NOSAT, __NV_E4M3);  // BUG: NOSAT
  }
}
void quantize_nosat(int M, int K, const __nv_bfloat16* X, const float* scale, __nv_fp8_e4m3* Q, cudaStream_t s) {
  if (M <= 0 || K <= 0) return;
  const size_t n = size_t(M) * K;
  quantize_nosat_kernel<<<unsigned(std::min<size_t>((n + 255) / 256, 4096)), 256, 0, s>>>(n, X, scale, Q);
  WB_CHECK_LAUNCH();
}

wb::Shape gemm_shape(int64_t m, int64_t n, int64_t k) {
  wb::Shape s{{"M", m}, {"N", n}, {"K", k}};
  s.set_param("with_c", 0);
  return s;
}

}  // namespace

wb::Shape fp8_shape(int64_t m, int64_t n, int64_t k) { return wb::Shape{{"M", m}, {"N", n}, {"K", k}}; }

WB_VARIANTS(ch05_broken, wb::Role::Broken) {
  const auto f16_f32 = [](const char* name, GemmF16F32* fn) { return wb::variant("gemm/f16_f32", name, fn); };
  const wb::Shape cube4096 = gemm_shape(4096, 4096, 4096);
  // spec.cu's large case (large_shape(): the same numbers), past 2^31 elements of A.
  const wb::Shape large = gemm_shape(150001, 32, 16384).tag("large");
  // What a wrapped offset gives: a fault, or wrong values where the wrapped address happens
  // to be mapped.
  const std::vector<Code> int_overflow = {Code::Fault, Code::OobRead,   Code::OobWrite,
                                          Code::Wrong, Code::Unwritten, Code::NaN};
  return {
      // Right when K % 16 == 0; K = 65 and K = 8 (< 16) show the remainder left out.
      f16_f32("ignores_k_remainder", &k_floor)
          .rejected_as({Code::Wrong}, "the K loop stops at the last whole step of 16")
          .on({gemm_shape(48, 80, 64), gemm_shape(17, 33, 65), gemm_shape(64, 64, 8)}),
      // Right only on symmetric A; the tests' inputs are random. (No edge handling: multiples of 16.)
      f16_f32("reads_a_as_column_major", &a_col_major)
          .rejected_as({Code::Wrong}, "A read as column-major (the BLAS habit)")
          .on({gemm_shape(64, 64, 64), gemm_shape(64, 48, 32)}),
      // A race is not wrong every time: six tries at a size larger than L2, so that copies wait
      // on DRAM and arrive late. Caught as wrong values, NaN, or two runs that differ.
      f16_f32("pipeline_without_cp_async_wait", &no_wait)
          .needs_cc(80)
          .rejected_as({Code::Wrong, Code::NaN, Code::Nondeterministic},
                       "no cp.async.wait_group before reading a stage")
          .on({cube4096, cube4096, cube4096, cube4096, cube4096, cube4096}),
      // Within the FP16 output tolerance on short sums, far worse than cuBLAS on long ones.
      wb::variant("gemm/f16_f16", "accumulates_in_fp16", &f16_acc)
          .rejected_as({Code::Wrong}, "an FP16 accumulator")
          .on({gemm_shape(256, 256, 4096)}),
      // Caught by the INT8 inputs whose sums pass 2^24 (the op's large_sums input set).
      wb::variant("gemm/i8_i32", "epilogue_through_float", &i8_float_epilogue)
          .needs_cc(75)
          .rejected_as({Code::Wrong}, "the INT32 sum converted to float and back")
          .on({gemm_shape(17, 33, 65)}),
      f16_f32("reads_past_end_of_a", &a_prefetch)
          .rejected_as({Code::OobRead}, "loads A[p + 1] before testing p + 1 < K")
          .on({gemm_shape(17, 33, 65), gemm_shape(64, 64, 64)}),
      // Caught by the row-alignment shapes (N = 36, 44: B's odd rows 4 bytes off 8).
      wb::variant("gemm/i8_i32", "b_rows_read_by_the_word_rule", &i8_b_word_rule)
          .needs_cc(75)
          .rejected_as({Code::Fault, Code::Wrong, Code::OobRead},
                       "8-byte loads of B's rows when N % 4 == 0 (an INT8 row is 8-byte aligned only when N % 8 == 0)"),
      // Right on the small shapes (and the op's input sets); the large case wraps the offset.
      f16_f32("int_offsets", &int_offsets<__half, float>)
          .rejected_as(int_overflow, "A's row offset i * K computed in int")
          .on({gemm_shape(17, 33, 65), gemm_shape(130, 96, 132), large}),
      wb::variant("gemm/i8_i32", "int_offsets", &int_offsets<int8_t, int32_t>)
          .rejected_as(int_overflow, "A's row offset i * K computed in int")
          .on({gemm_shape(17, 33, 65), gemm_shape(130, 96, 132), large}),
      // FP8: D comes out multiplied by scale_a * scale_b (2^-11 .. 2^-13) once more.
      wb::variant("gemm_fp8/e4m3_bf16", "scale_applied_twice", &fp8_gemm<false, Fp8Mistake::ScaleTwice>)
          .needs_cc(80)
          .rejected_as({Code::Wrong}, "the per-tensor scales multiplied in twice")
          .on({fp8_shape(17, 48, 64), fp8_shape(127, 144, 272)}),
      // Block scales 16x apart between blocks: a scale from the wrong block is far off. K of 3
      // and 9 blocks, M > 1 (row 0 reads the right scales by chance in either layout).
      wb::variant("gemm_fp8_block/e4m3_bf16", "block_scale_from_wrong_block",
                  &fp8_gemm<true, Fp8Mistake::ScaleARowMajor>)
          .needs_cc(80)
          .rejected_as({Code::Wrong}, "scale_a read as M x KB row-major: another block's scale for most rows")
          .on({fp8_shape(127, 144, 272), fp8_shape(255, 272, 1040)}),
      // |X / scale| passes 448 on 7-30% of the elements: NaN where the op saturates. E4M3 has two
      // NaN patterns, 0x7F and 0xFF, and the harness's poison in Q is 0x7F: an element turned
      // into 0x7F by the conversion reads as never written, one turned into 0xFF as NaN; which
      // is found first depends on the order of the elements, so either code is the right one.
      wb::variant("fp8_quantize/bf16_e4m3", "quantize_without_saturation", &quantize_nosat)
          .needs_cc(80)
          .rejected_as({Code::NaN, Code::Unwritten}, "E4M3 conversion with __NV_NOSAT: NaN instead of +-448")
          .on({wb::Shape{{"M", 17}, {"K", 33}}, wb::Shape{{"M", 64}, {"K", 128}}}),
  };
}

}  // namespace ch05
