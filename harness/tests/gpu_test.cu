// Harness tests that need a GPU: poisoning, buffers, launch outcomes, timing, ceilings.
#include <gtest/gtest.h>

#include "cuda/buffers.cuh"
#include "cuda/ceilings.cuh"
#include "cuda/gtest_support.cuh"
#include "cuda/timing.cuh"

namespace wb {
namespace {

__global__ void write_index(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<float>(i);
}

__global__ void write_out_of_bounds(float* out) { out[threadIdx.x + (1 << 28)] = 1.0f; }

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

TEST(HarnessGpu, PoisonFillsEveryElementAndKernelsOverwriteIt) {
  WB_REQUIRE_GPU();
  const int n = 1000;
  DeviceBuffer<float> b(n);
  b.poison();
  auto host = b.download();
  for (float v : host) ASSERT_TRUE(is_poison(v));
  write_index<<<(n / 2 + 127) / 128, 128>>>(b.data(), n / 2);  // only the first half
  WB_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  host = b.download();
  auto r = check_output(host, Layout::vector(n), [](int64_t i) { return double(i); }, tolerance_for(DType::F32, 1));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.unwritten, n / 2);
  EXPECT_EQ(r.wrong, 0);
}

TEST(HarnessGpu, SixteenBitPoisonIsNaN) {
  WB_REQUIRE_GPU();
  DeviceBuffer<BFloat16> b(33);
  b.poison();
  for (auto v : b.download()) {
    EXPECT_TRUE(is_poison(v));
    EXPECT_TRUE(std::isnan(to_double(v)));
  }
}

TEST(HarnessGpu, NotImplementedIsReportedAsSuch) {
  WB_REQUIRE_GPU();
  Stream s;
  const Outcome o = run_launcher("op n=1", [](cudaStream_t) { WB_NOT_IMPLEMENTED("chapters/x/ex1.cu"); }, s);
  EXPECT_EQ(o.code, Code::NotImplemented);
  EXPECT_NE(o.message.find("not implemented yet"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("chapters/x/ex1.cu"), std::string::npos) << o.message;
}

TEST(HarnessGpu, BadLaunchConfigurationIsALaunchError) {
  WB_REQUIRE_GPU();
  Stream s;
  const Outcome o = run_launcher("op n=1", [](cudaStream_t st) {
    write_index<<<1, 4096, 0, st>>>(nullptr, 0);  // too many threads per block
    WB_CHECK_LAUNCH();
  }, s);
  EXPECT_EQ(o.code, Code::LaunchError);
  EXPECT_NE(o.message.find("1024 threads"), std::string::npos) << o.message;
}

TEST(HarnessGpu, FaultIsReportedWithShapeAndSanitizerHint) {
  WB_REQUIRE_GPU();
  Stream s;
  DeviceBuffer<float> b(32);
  const Outcome o = run_launcher("op n=32", [&](cudaStream_t st) {
    write_out_of_bounds<<<1, 32, 0, st>>>(b.data());
    WB_CHECK_LAUNCH();
  }, s);
  EXPECT_EQ(o.code, Code::Fault);
  EXPECT_NE(o.message.find("op n=32"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("compute-sanitizer"), std::string::npos) << o.message;
}

TEST(HarnessGpu, TimingMeasuresWhatRuns) {
  WB_REQUIRE_GPU();
  const DeviceInfo d = query_device();
  Stream s;
  // About 0.5 ms of spinning at the boost clock: the median must land near it.
  const long long cycles = static_cast<long long>(d.sm_clock_khz * 0.5);
  TimingOptions opt;
  opt.min_samples = 10;
  opt.max_samples = 20;
  const Stats st = time_launcher([&](cudaStream_t st_) { spin<<<1, 1, 0, st_>>>(cycles); }, s, "spin", opt);
  EXPECT_GE(st.n, 10);
  EXPECT_GT(st.median, 0.4);
  EXPECT_LT(st.median, 5.0);
  EXPECT_LE(st.min, st.median);
}

TEST(HarnessGpu, DeviceQueryIsSane) {
  WB_REQUIRE_GPU();
  const DeviceInfo d = query_device();
  EXPECT_FALSE(d.name.empty());
  EXPECT_GT(d.sms, 0);
  EXPECT_GT(d.sm_clock_khz, 1e5);
  EXPECT_GT(d.spec.dram_gbps, 50);
  EXPECT_GT(d.l2_bytes, 0);
}

TEST(HarnessGpu, MeasuredCopyIsBelowSpec) {
  WB_REQUIRE_GPU();
  const DeviceInfo d = query_device();
  const double gbps = measure_copy_gbps();
  EXPECT_GT(gbps, 0.2 * d.spec.dram_gbps);
  EXPECT_LT(gbps, 1.0 * d.spec.dram_gbps) << "a copy faster than the spec bandwidth means the timing is wrong";
}

}  // namespace
}  // namespace wb
