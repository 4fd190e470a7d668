// Harness self-tests for chapter 3: reductions with the mistakes learners make. Each must be
// rejected by the same checks the learner's kernels meet, with a message naming the fault.
// If one of these tests fails, the harness has gone soft, not the kernel.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ch03.cuh"
#include "check.cuh"
#include "cuda/errors.cuh"
#include "cuda/gtest_support.cuh"

namespace ch03 {
namespace {

using ::testing::HasSubstr;

constexpr int kThreads = 256;

// partials[b] = the sum of x[b * 256, (b + 1) * 256), with every barrier in place.
__global__ void block_sum_kernel(const float* x, int n, float* partials) {
  __shared__ float tile[kThreads];
  const int t = threadIdx.x;
  const int i = blockIdx.x * kThreads + t;
  tile[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (t < s) tile[t] += tile[t + s];
    __syncthreads();
  }
  if (t == 0) partials[blockIdx.x] = tile[0];
}

// The same, without the barrier between filling the tile and the first step of the tree:
// threads 0..127 read tile[t + 128] whether or not warps 4..7 have stored it yet (their
// loads from DRAM may still be on the way), and pick up whatever an earlier block left
// there. Whether a block gets it wrong depends on timing, so the result changes from run
// to run. compute-sanitizer --tool racecheck reports the hazard.
__global__ void racy_block_sum_kernel(const float* x, int n, float* partials) {
  __shared__ float tile[kThreads];
  const int t = threadIdx.x;
  const int i = blockIdx.x * kThreads + t;
  tile[t] = i < n ? x[i] : 0.0f;
  // missing: __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (t < s) tile[t] += tile[t + s];
    __syncthreads();
  }
  if (t == 0) partials[blockIdx.x] = tile[0];
}

// *out = partials[0] + ... + partials[count - 1], one block (count may be 0).
__global__ void finish_kernel(const float* partials, int count, float* out) {
  __shared__ float tile[kThreads];
  const int t = threadIdx.x;
  float v = 0.0f;
  for (int i = t; i < count; i += kThreads) v += partials[i];
  tile[t] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (t < s) tile[t] += tile[t + s];
    __syncthreads();
  }
  if (t == 0) *out = tile[0];
}

size_t partials_workspace(int n) { return sizeof(float) * (n / kThreads + 1); }

void racy_sum(const float* x, int n, float* out, void* ws, size_t, cudaStream_t s) {
  const int blocks = (n + kThreads - 1) / kThreads;
  float* partials = static_cast<float*>(ws);
  if (blocks > 0) racy_block_sum_kernel<<<blocks, kThreads, 0, s>>>(x, n, partials);
  WB_CHECK_LAUNCH();
  finish_kernel<<<1, kThreads, 0, s>>>(partials, blocks, out);
  WB_CHECK_LAUNCH();
}

// Rounds the grid down: the last n % 256 elements are never read.
void drop_tail_sum(const float* x, int n, float* out, void* ws, size_t, cudaStream_t s) {
  const int blocks = n / kThreads;
  float* partials = static_cast<float*>(ws);
  if (blocks > 0) block_sum_kernel<<<blocks, kThreads, 0, s>>>(x, n, partials);
  WB_CHECK_LAUNCH();
  finish_kernel<<<1, kThreads, 0, s>>>(partials, blocks, out);
  WB_CHECK_LAUNCH();
}

// `i <= n`: one element too many, the first of the guard.
__global__ void one_past_kernel(const float* x, int n, float* partials) {
  __shared__ float tile[kThreads];
  const int t = threadIdx.x;
  const int i = blockIdx.x * kThreads + t;
  tile[t] = i <= n ? x[i] : 0.0f;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (t < s) tile[t] += tile[t + s];
    __syncthreads();
  }
  if (t == 0) partials[blockIdx.x] = tile[0];
}
void one_past_sum(const float* x, int n, float* out, void* ws, size_t, cudaStream_t s) {
  const int blocks = n / kThreads + 1;
  float* partials = static_cast<float*>(ws);
  one_past_kernel<<<blocks, kThreads, 0, s>>>(x, n, partials);
  WB_CHECK_LAUNCH();
  finish_kernel<<<1, kThreads, 0, s>>>(partials, blocks, out);
  WB_CHECK_LAUNCH();
}

// Max with 0 as the starting value instead of -infinity: right only when some value is > 0.
__global__ void max_from_zero_kernel(const float* x, int n, float* out) {
  __shared__ float tile[kThreads];
  const int t = threadIdx.x;
  float v = 0.0f;
  for (int i = t; i < n; i += kThreads) v = fmaxf(v, x[i]);
  tile[t] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (t < s) tile[t] = fmaxf(tile[t], tile[t + s]);
    __syncthreads();
  }
  if (t == 0) *out = tile[0];
}
void max_from_zero(const float* x, int n, float* out, void*, size_t, cudaStream_t s) {
  max_from_zero_kernel<<<1, kThreads, 0, s>>>(x, n, out);
  WB_CHECK_LAUNCH();
}

// One pass with a last-block finish whose counter is never reset: the first call is right,
// and in the second no block draws the last ticket, so nothing writes *out.
__global__ void no_reset_kernel(const float* x, int n, float* out, unsigned* counter, float* partials) {
  __shared__ float tile[kThreads];
  __shared__ bool is_last;
  const int t = threadIdx.x;
  float v = 0.0f;
  for (int i = blockIdx.x * kThreads + t; i < n; i += gridDim.x * kThreads) v += x[i];
  tile[t] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (t < s) tile[t] += tile[t + s];
    __syncthreads();
  }
  if (t == 0) {
    partials[blockIdx.x] = tile[0];
    __threadfence();
    is_last = atomicAdd(counter, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (is_last && t == 0) {
    __threadfence();
    float total = 0.0f;
    for (unsigned b = 0; b < gridDim.x; ++b) total += __ldcg(partials + b);
    *out = total;  // missing: *counter = 0;
  }
}
constexpr int kNoResetBlocks = 64;
size_t no_reset_workspace(int) { return 256 + kNoResetBlocks * sizeof(float); }
void no_reset_sum(const float* x, int n, float* out, void* ws, size_t, cudaStream_t s) {
  auto* base = static_cast<unsigned char*>(ws);
  no_reset_kernel<<<kNoResetBlocks, kThreads, 0, s>>>(x, n, out, reinterpret_cast<unsigned*>(base),
                                                      reinterpret_cast<float*>(base + 256));
  WB_CHECK_LAUNCH();
}

Kernels sum_set(const char* name, ReduceFn* fn, WorkspaceFn* ws) {
  Kernels k;
  k.name = name;
  k.sum_f32 = fn;
  k.workspace_bytes = ws;
  return k;
}

void expect_rejected(const wb::Outcome& o, const std::string& fault) {
  EXPECT_EQ(o.kind, wb::Outcome::Kind::Wrong) << o.message;
  EXPECT_THAT(o.message, HasSubstr(fault));
}

TEST(Ch03Broken, ReductionMissingABarrier) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  // Ten runs on one input: at least one must be wrong (in practice most are).
  const auto o = check_reduce(sum_set("racy", &racy_sum, &partials_workspace), Reduction::SumF32, 1 << 22, rng, 10);
  expect_rejected(o, "wrong");
  std::printf("  rejected as expected:\n  %s\n", o.message.c_str());
}

TEST(Ch03Broken, ReductionThatDropsTheTail) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const Kernels k = sum_set("drop_tail", &drop_tail_sum, &partials_workspace);
  expect_rejected(check_reduce(k, Reduction::SumF32, 1000, rng), "wrong");       // 232 elements dropped
  expect_rejected(check_reduce(k, Reduction::SumF32, (1 << 20) + 1, rng), "wrong");  // just the last one
  EXPECT_TRUE(check_reduce(k, Reduction::SumF32, 4096, rng).passed()) << "right on multiples of 256: that is the trap";
}

TEST(Ch03Broken, ReductionThatReadsPastTheEnd) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto o = check_reduce(sum_set("one_past", &one_past_sum, &partials_workspace), Reduction::SumF32, 1000, rng);
  expect_rejected(o, "wrong");
  EXPECT_THAT(o.message, HasSubstr("past x[n-1]"));
}

TEST(Ch03Broken, MaxThatStartsFromZero) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  Kernels k;
  k.name = "max_from_zero";
  k.max_f32 = &max_from_zero;
  expect_rejected(check_reduce(k, Reduction::MaxF32, 1000, rng, 1, MaxAt::Random), "got 0");
}

TEST(Ch03Broken, OnePassThatNeverResetsItsCounter) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto o = check_reduce(sum_set("no_reset", &no_reset_sum, &no_reset_workspace), Reduction::SumF32, 100000, rng);
  EXPECT_EQ(o.kind, wb::Outcome::Kind::Wrong) << o.message;
  EXPECT_THAT(o.message, HasSubstr("never written"));
  EXPECT_THAT(o.message, HasSubstr("run 1 was right"));
}

}  // namespace
}  // namespace ch03
