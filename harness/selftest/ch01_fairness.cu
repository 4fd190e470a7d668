// Harness self-tests of fair timing, on chapter 1's timed problems (prepare_timed_* in
// chapters/ch01_indexing/check.cu): a launcher that reuses an earlier result must fail the
// check after timing, honest launchers must pass it, and work a launcher leaves running on a
// stream of its own must show up in the wait for the whole device.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ch01.cuh"
#include "check.cuh"
#include "cuda/buffers.cuh"
#include "cuda/errors.cuh"
#include "cuda/gtest_support.cuh"

namespace ch01 {
namespace {

using ::testing::HasSubstr;

__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
void honest_add(const float* a, const float* b, float* c, int n, cudaStream_t s) {
  add_kernel<<<(n + 255) / 256, 256, 0, s>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}

// Remembers the pointers and size of its last call and does nothing when they repeat: right
// on the first call, stale ever after.
void caching_add(const float* a, const float* b, float* c, int n, cudaStream_t s) {
  static const void* last[3] = {nullptr, nullptr, nullptr};
  static int last_n = -1;
  if (last[0] == a && last[1] == b && last[2] == c && last_n == n) return;
  last[0] = a, last[1] = b, last[2] = c, last_n = n;
  honest_add(a, b, c, n, s);
}

__global__ void grey_kernel(const float* rgb, float* grey, int height, int width, int pitch) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  const size_t plane = static_cast<size_t>(height) * pitch, at = static_cast<size_t>(y) * pitch + x;
  grey[at] = kRedWeight * rgb[at] + kGreenWeight * rgb[plane + at] + kBlueWeight * rgb[2 * plane + at];
}
void honest_grey(const float* rgb, float* grey, int height, int width, int pitch, cudaStream_t s) {
  const dim3 block(32, 8), grid((width + 31) / 32, (height + 7) / 8);
  grey_kernel<<<grid, block, 0, s>>>(rgb, grey, height, width, pitch);
  WB_CHECK_LAUNCH();
}

__global__ void matrix_kernel(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows, int cols) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= rows || col >= cols) return;
  const size_t r = static_cast<size_t>(row);
  c[r * ldc + col] = a[r * lda + col] + b[r * ldb + col];
}
void honest_matrix(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows, int cols,
                   cudaStream_t s) {
  const dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);
  matrix_kernel<<<grid, block, 0, s>>>(a, lda, b, ldb, c, ldc, rows, cols);
  WB_CHECK_LAUNCH();
}

// Spins for about `ns` nanoseconds of GPU time.
__global__ void spin_kernel(long long ns) {
  const long long start = clock64();
  // clock64 counts SM cycles; 2 GHz is above every clock this runs on, so this is at least ns.
  while (clock64() - start < 2 * ns) {
  }
}

// The timed-problem protocol as the benchmark uses it: new inputs, a launch, a wait.
void timed_launches(const wb::bench::Timed& t, int count) {
  wb::Stream s;
  for (int i = 0; i < count; ++i) {
    t.next_inputs(s);
    t.launch(s);
    wb::sync_with_deadline(s, "timed launch");
  }
}

TEST(Ch01Fairness, HonestLaunchersPassTheCheckAfterTiming) {
  WB_REQUIRE_GPU();
  const uint64_t seed = wb::run_seed();
  for (int n : {1, 1025, (1 << 20) + 3}) {
    const auto t = prepare_timed_vector_add(&honest_add, n, seed);
    timed_launches(t, 3);
    WB_EXPECT_PASS(t.check_last());
  }
  const auto grey = prepare_timed_rgb_to_grey(&honest_grey, 33, 65, seed);
  timed_launches(grey, 2);
  WB_EXPECT_PASS(grey.check_last());
  const auto matrix = prepare_timed_matrix_add(&honest_matrix, 127, 31, seed);
  timed_launches(matrix, 2);
  WB_EXPECT_PASS(matrix.check_last());
}

TEST(Ch01Fairness, ReusedResultFailsTheCheckAfterTiming) {
  WB_REQUIRE_GPU();
  const auto t = prepare_timed_vector_add(&caching_add, 4099, wb::run_seed());
  timed_launches(t, 1);
  WB_EXPECT_PASS(t.check_last());  // the first call computes
  timed_launches(t, 2);            // later calls with the same pointers return at once
  const wb::Outcome o = t.check_last();
  EXPECT_EQ(o.kind, wb::Outcome::Kind::Wrong) << o.message;
  EXPECT_THAT(o.message, HasSubstr("4099 unwritten"));
}

TEST(Ch01Fairness, WorkLeftOnAnotherStreamShowsInTheDeviceWait) {
  WB_REQUIRE_GPU();
  wb::Stream given, own;
  wb::device_sync_with_deadline("idle");
  const double idle_ms = wb::device_sync_with_deadline("idle");
  spin_kernel<<<1, 1, 0, own>>>(20'000'000);  // 20 ms on a stream the caller never sees
  CUDA_CHECK(cudaGetLastError());
  wb::sync_with_deadline(given, "the given stream");  // finishes at once: nothing on it
  const double waited_ms = wb::device_sync_with_deadline("the whole device");
  EXPECT_GT(waited_ms, 5.0) << "idle wait " << idle_ms << " ms";
  EXPECT_LT(idle_ms, 5.0);
}

}  // namespace
}  // namespace ch01
