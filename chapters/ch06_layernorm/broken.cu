// Harness self-tests for chapter 6: residual + LayerNorm / RMSNorm launchers with the
// mistakes learners make. Each must be rejected by the same checks the learner's kernels
// meet, with a message naming the fault. If one of them passes, the harness has gone soft.
//
// All of them share one simple, otherwise correct kernel (a block of 256 threads per row,
// strided passes, warp shuffles and one shared-memory exchange per sum), with exactly one
// mistake switched on by a template parameter:
//
//   launcher (ln: LayerNorm, rms)     mistake                                   caught by
//   one_pass_variance (ln)            var = E[h^2] - E[h]^2 in FP32             mean 1000 / std 1 rows
//   missing_barrier (ln, rms)         no __syncthreads() between writing the    run-to-run differences,
//                                     warp totals and reading them              racecheck
//   drops_tail (ln, rms)              16-byte packs only: the last C % 8        C = 769, 1000, 127, 3, 1
//                                     elements of a row are never written
//   forgets_h (ln, rms)               h is not written (y is right)             h still poisoned
//   no_beta (ln)                      applies gamma but not beta                y off by beta
//   block_multiple_only (ln, rms)     each thread takes C / 256 consecutive     C = 769, 1000, 5120 ...
//                                     elements: right only when 256 divides C
//   int_row_offset (rms)              the row start n * ld in int               the large_rows inputs:
//                                                                             rows past element 2^31
//   aligned_rows_drop_tail (rms)      16-byte packs only when ld % 8 == 0:      C = 769 in rows of 776 ...
//                                     the tail of C % 8 forgotten there         (aligned rows, ragged C)
//   persistent_missing_end_barrier    a block loops over rows, reusing its      the race pass on the race
//   (rms)                             reduction's shared memory with no         shapes (every block loops)
//                                     barrier at the end of each row
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "ch06.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"
#include "runtime/launch_helpers.cuh"
#include "device/reduce.cuh"

namespace ch06::broken {

ResidualRmsNormFn persistent_missing_end_barrier_rmsnorm;

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// The launchers are layernorm<kM> and rmsnorm<kM> below, one per mistake.
enum class Mistake {
  // The one-pass variance E[h^2] - E[h]^2: catastrophic cancellation on rows of mean 1000
  // and standard deviation 1 (and worse at mean -1e4).
  OnePassVariance,
  // The block reduction reads the warp totals without a __syncthreads() after they are stored.
  MissingBarrier,
  // Handles whole packs of 8 only: the last C % 8 elements of each row are neither counted
  // in the statistics nor written (h and y keep their poison there).
  DropsTail,
  // Computes h = x + r and normalises it, but never stores h: y, mean and rstd are right.
  ForgetsH,
  // y = (h - mean) * rstd * gamma: the shift beta is never added.
  NoBeta,
  // Each thread takes C / 256 consecutive elements: the last C % 256 of every row are
  // skipped, so it is right only when C is a multiple of the block size (768, 1024, 4096 ...)
  // and wrong at 769, 1000, 5120 + 1 ..., and for C < 256 it does nothing at all.
  BlockMultipleOnly,
  // The row start n * ld in int: right until a row starts past element 2^31.
  IntRowOffset,
  // Whole packs of 8 when the rows are 16-byte aligned (ld % 8 == 0), every element otherwise:
  // the tail of a row whose stride is aligned but whose length is not is forgotten.
  AlignedRowsDropTail,
};

// The block's sum, to every thread. With kRacy the barrier between the warp totals' stores
// and their loads is missing: a warp may add up totals that other warps have not stored
// yet (stale values of the previous sum, or whatever the shared memory held).
template <bool kRacy>
__device__ float block_sum(float v, float* ex) {
  v = wb::warp_sum(v);
  if (threadIdx.x % 32 == 0) ex[threadIdx.x / 32] = v;
  if constexpr (!kRacy) __syncthreads();
  float t = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) t += ex[w];
  return t;
}

// Which elements thread t visits: element i of the loop below is column col(i); `count` of
// them. Correct: t, t + 256, ... With BlockMultipleOnly: C / 256 consecutive columns from
// t * (C / 256), which forgets the last C % 256 columns of the row. With DropsTail: only
// whole packs of 8 (C / 8 * 8 columns).
template <Mistake kM>
struct Columns {
  int C, t, ld;
  __device__ int limit() const {
    if constexpr (kM == Mistake::DropsTail) return C / 8 * 8;                              // the packs, and no tail
    if constexpr (kM == Mistake::AlignedRowsDropTail) return ld % 8 == 0 ? C / 8 * 8 : C;  // packs on aligned rows
    return C;
  }
  __device__ int count() const {
    if constexpr (kM == Mistake::BlockMultipleOnly) return C / kThreads;
    const int lim = limit();
    return t < lim ? (lim - 1 - t) / kThreads + 1 : 0;
  }
  __device__ int col(int i) const {
    if constexpr (kM == Mistake::BlockMultipleOnly) return t * (C / kThreads) + i;
    return t + i * kThreads;
  }
};

template <Mistake kM, bool kLayer>
__global__ void __launch_bounds__(kThreads)
    broken_kernel(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h, bf16* y, float* mean_out,
                  float* rstd_out, int C, int ld, float eps) {
  __shared__ float ex[3][kWarps];
  constexpr bool kRacy = kM == Mistake::MissingBarrier;
  size_t base = static_cast<size_t>(blockIdx.x) * ld;
  if constexpr (kM == Mistake::IntRowOffset) {
    const int n = blockIdx.x;
    base = static_cast<size_t>(n * ld);  // should be size_t(n) * ld: wraps past 2^31 elements
  }
  const Columns<kM> cols{C, static_cast<int>(threadIdx.x), ld};
  const int count = cols.count();

  float s = 0.0f, q = 0.0f;  // sum of h, sum of h^2
  for (int i = 0; i < count; ++i) {
    const size_t e = base + cols.col(i);
    const bf16 hv = __float2bfloat16_rn(__bfloat162float(x[e]) + __bfloat162float(r[e]));
    if constexpr (kM != Mistake::ForgetsH) h[e] = hv;
    const float v = __bfloat162float(hv);
    s += v;
    q += v * v;
  }
  float mean = 0.0f, rstd;
  if constexpr (kLayer) {
    mean = block_sum<kRacy>(s, ex[0]) / C;
    float var;
    if constexpr (kM == Mistake::OnePassVariance) {
      // E[h^2] - E[h]^2: two numbers near 10^6 whose difference is near 1, in FP32 (about
      // 7 significant digits): the result is mostly rounding error, and can be negative.
      var = block_sum<kRacy>(q, ex[1]) / C - mean * mean;
    } else {
      float d2 = 0.0f;
      for (int i = 0; i < count; ++i) {
        const float d = __bfloat162float(__float2bfloat16_rn(__bfloat162float(x[base + cols.col(i)]) +
                                                             __bfloat162float(r[base + cols.col(i)]))) -
                        mean;
        d2 += d * d;
      }
      var = block_sum<kRacy>(d2, ex[1]) / C;
    }
    rstd = rsqrtf(var + eps);
  } else {
    rstd = rsqrtf(block_sum<kRacy>(q, ex[0]) / C + eps);
  }
  for (int i = 0; i < count; ++i) {
    const int c = cols.col(i);
    const size_t e = base + c;
    const float hv = __bfloat162float(__float2bfloat16_rn(__bfloat162float(x[e]) + __bfloat162float(r[e])));
    float v = (hv - mean) * rstd * __bfloat162float(gamma[c]);
    if constexpr (kLayer && kM != Mistake::NoBeta) v += __bfloat162float(beta[c]);
    y[e] = __float2bfloat16_rn(v);
  }
  if (threadIdx.x == 0) {
    if constexpr (kLayer) mean_out[blockIdx.x] = mean;
    rstd_out[blockIdx.x] = rstd;
  }
}

template <Mistake kM>
void layernorm(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h, bf16* y, float* mean,
               float* rstd, int N, int C, int ld, float eps, cudaStream_t stream) {
  if (N == 0) return;
  broken_kernel<kM, true><<<N, kThreads, 0, stream>>>(x, r, gamma, beta, h, y, mean, rstd, C, ld, eps);
  WB_CHECK_LAUNCH();
}

template <Mistake kM>
void rmsnorm(const bf16* x, const bf16* r, const bf16* gamma, bf16* h, bf16* y, float* rstd, int N, int C, int ld,
             float eps, cudaStream_t stream) {
  if (N == 0) return;
  broken_kernel<kM, false><<<N, kThreads, 0, stream>>>(x, r, gamma, nullptr, h, y, nullptr, rstd, C, ld, eps);
  WB_CHECK_LAUNCH();
}

// RMSNorm as a persistent kernel: as many blocks as fit on the GPU at once, each looping over
// rows n = blockIdx.x, blockIdx.x + gridDim.x, ... The block sum stores the warp totals,
// waits, and every thread reads them all; the next row's sum stores them again with no
// barrier in between, while slower warps may still be reading this row's.
__global__ void __launch_bounds__(kThreads)
    persistent_rms_kernel(const bf16* x, const bf16* r, const bf16* gamma, bf16* h, bf16* y, float* rstd_out, int N,
                          int C, int ld, float eps) {
  __shared__ float ex[kWarps];
  for (int n = blockIdx.x; n < N; n += gridDim.x) {
    const size_t base = static_cast<size_t>(n) * ld;
    float q = 0.0f;
    for (int c = threadIdx.x; c < C; c += kThreads) {
      const bf16 hv = __float2bfloat16_rn(__bfloat162float(x[base + c]) + __bfloat162float(r[base + c]));
      h[base + c] = hv;
      q += __bfloat162float(hv) * __bfloat162float(hv);
    }
    const float rstd = rsqrtf(block_sum<false>(q, ex) / C + eps);
    for (int c = threadIdx.x; c < C; c += kThreads) {
      const float hv =
          __bfloat162float(__float2bfloat16_rn(__bfloat162float(x[base + c]) + __bfloat162float(r[base + c])));
      y[base + c] = __float2bfloat16_rn(hv * rstd * __bfloat162float(gamma[c]));
    }
    if (threadIdx.x == 0) rstd_out[n] = rstd;
    // missing: __syncthreads();
  }
}

}  // namespace

// The persistent RMSNorm without the barrier at the end of each row.
void persistent_missing_end_barrier_rmsnorm(const bf16* x, const bf16* r, const bf16* gamma, bf16* h, bf16* y,
                                            float* rstd, int N, int C, int ld, float eps, cudaStream_t stream) {
  if (N == 0) return;
  static const int resident = std::max(1, wb::blocks_per_gpu(persistent_rms_kernel, kThreads));
  const int blocks = N < resident ? N : resident;
  persistent_rms_kernel<<<blocks, kThreads, 0, stream>>>(x, r, gamma, h, y, rstd, N, C, ld, eps);
  WB_CHECK_LAUNCH();
}

// --- as the harness sees them: each must be rejected with one of the codes it declares.

WB_VARIANTS(ch06_broken, wb::Role::Broken) {
  using wb::Code;
  const char* ln = "residual_layernorm/bf16";
  const char* rms = "residual_rmsnorm/bf16";
  const std::vector<Code> wrongish = {Code::Wrong, Code::Unwritten, Code::NaN, Code::Nondeterministic};
  // A missing barrier may give right answers on a GPU: the race pass (racecheck) catches it then.
  const std::vector<Code> racy = {Code::Wrong, Code::Unwritten, Code::NaN, Code::Nondeterministic, Code::Race};
  return {
      wb::variant(ln, "one_pass_variance", &layernorm<Mistake::OnePassVariance>)
          .rejected_as({Code::Wrong, Code::NaN}, "E[x^2] - E[x]^2: catastrophic cancellation on a large mean"),
      wb::variant(ln, "missing_barrier", &layernorm<Mistake::MissingBarrier>)
          .rejected_as(racy, "block reduction without __syncthreads"),
      wb::variant(rms, "missing_barrier", &rmsnorm<Mistake::MissingBarrier>)
          .rejected_as(racy, "block reduction without __syncthreads"),
      wb::variant(ln, "drops_tail", &layernorm<Mistake::DropsTail>)
          .rejected_as(wrongish, "drops the tail of a row not a multiple of 8"),
      wb::variant(rms, "drops_tail", &rmsnorm<Mistake::DropsTail>)
          .rejected_as(wrongish, "drops the tail of a row not a multiple of 8"),
      wb::variant(ln, "forgets_h", &layernorm<Mistake::ForgetsH>).rejected_as({Code::Unwritten}, "never writes h"),
      wb::variant(rms, "forgets_h", &rmsnorm<Mistake::ForgetsH>).rejected_as({Code::Unwritten}, "never writes h"),
      wb::variant(ln, "no_beta", &layernorm<Mistake::NoBeta>).rejected_as({Code::Wrong}, "applies gamma but not beta"),
      wb::variant(ln, "block_multiple_only", &layernorm<Mistake::BlockMultipleOnly>)
          .rejected_as(wrongish, "right only when C is a multiple of the block size"),
      wb::variant(rms, "block_multiple_only", &rmsnorm<Mistake::BlockMultipleOnly>)
          .rejected_as(wrongish, "right only when C is a multiple of the block size"),
      // Right below 2^31 elements; the large_rows inputs reach past it.
      wb::variant(rms, "int_row_offset", &rmsnorm<Mistake::IntRowOffset>)
          .rejected_as({Code::Fault, Code::OobRead, Code::OobWrite, Code::Wrong, Code::Unwritten, Code::NaN},
                       "the row start n * ld computed in int")
          .on({wb::Shape{{"N", 33}, {"C", 768}, {"pad", 0}}}),
      // Right on every shape whose stride and length are aligned together; the vector-tail
      // shapes (ld % 8 == 0, C % 8 != 0) leave the tail unwritten.
      wb::variant(rms, "aligned_rows_drop_tail", &rmsnorm<Mistake::AlignedRowsDropTail>)
          .rejected_as(wrongish, "16-byte packs only on 16-byte aligned rows: the tail of C % 8 forgotten there"),
      // Right on an H100 run after run; on the race shapes every block loops, and racecheck
      // reports the next row's stores racing this row's loads.
      wb::variant(rms, "persistent_missing_end_barrier", &persistent_missing_end_barrier_rmsnorm)
          .rejected_as(racy, "no __syncthreads() at the end of each row of a persistent block")
          .on({wb::Shape{{"N", 20011}, {"C", 768}, {"pad", 0}}}),
  };
}

}  // namespace ch06::broken
