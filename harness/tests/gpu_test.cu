// Harness tests that need a GPU: poisoning, buffers, launch outcomes, timing and its fairness
// checks, ceilings, the count of this process's device allocations.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "measure/fair.cuh"
#include "runtime/allocations.cuh"
#include "runtime/buffers.cuh"
#include "measure/ceilings.cuh"
#include "check/gtest_support.cuh"
#include "measure/timing.cuh"

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

// Spins, then writes out[i] = i for i in [begin, end): a tail of work finishing late.
__global__ void spin_then_write(float* out, int begin, int end, long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  for (int i = begin + threadIdx.x; i < end; i += blockDim.x) out[i] = static_cast<float>(i);
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
  auto r = check_output(
      host, Layout::vector(n), [](int64_t i) { return double(i); }, tolerance_for(DType::F32, 1));
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
  const Outcome o = run_launcher(
      "op n=1", [](cudaStream_t) { WB_NOT_IMPLEMENTED("chapters/x/ex1.cu"); }, s);
  EXPECT_EQ(o.code, Code::NotImplemented);
  EXPECT_NE(o.message.find("not implemented yet"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("chapters/x/ex1.cu"), std::string::npos) << o.message;
}

TEST(HarnessGpu, BadLaunchConfigurationIsALaunchError) {
  WB_REQUIRE_GPU();
  Stream s;
  const Outcome o = run_launcher(
      "op n=1",
      [](cudaStream_t st) {
        write_index<<<1, 4096, 0, st>>>(nullptr, 0);  // too many threads per block
        WB_CHECK_LAUNCH();
      },
      s);
  EXPECT_EQ(o.code, Code::LaunchError);
  EXPECT_NE(o.message.find("1024 threads"), std::string::npos) << o.message;
}

TEST(HarnessGpu, FaultIsReportedWithShapeAndSanitizerHint) {
  WB_REQUIRE_GPU();
  Stream s;
  DeviceBuffer<float> b(32);
  const Outcome o = run_launcher(
      "op n=32",
      [&](cudaStream_t st) {
        write_out_of_bounds<<<1, 32, 0, st>>>(b.data());
        WB_CHECK_LAUNCH();
      },
      s);
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

// 50 fair samples of `t` (many: one false alarm among them fails the case), then the checks
// that end a case.
Outcome fifty_fair_samples(const bench::Timed& t, int64_t* samples = nullptr) {
  Stream s;
  bench::FairSampler f(t, s, "fairness");
  for (int i = 0; i < 50 && f.sample(); ++i) {
  }
  f.finish();
  if (samples) *samples = f.samples();
  CUDA_CHECK(cudaDeviceSynchronize());
  return f.outcome();
}

// The benchmark's fairness checks (bench::FairSampler) on launchers whose behaviour is known:
// a short kernel on the given stream is timed, work left on another stream is not.
Outcome fair_outcome(const std::function<void(cudaStream_t)>& launch, int64_t* samples) {
  bench::Timed t;
  t.launch = launch;
  t.next_inputs = [](cudaStream_t) {};
  t.check_last = [] { return Outcome::pass(); };
  return fifty_fair_samples(t, samples);
}

TEST(HarnessGpu, FairTimingAcceptsAShortKernelOnItsStream) {
  WB_REQUIRE_GPU();
  DeviceBuffer<float> out(1024);
  int64_t n = 0;
  // A few microseconds, as a library call on a small shape takes: no work anywhere else.
  const Outcome o = fair_outcome([&](cudaStream_t st) { write_index<<<4, 256, 0, st>>>(out.data(), 1024); }, &n);
  EXPECT_TRUE(o.passed()) << o.message;
  EXPECT_EQ(n, 50);
}

// A launcher that does its work on the given stream, then leaves ~0.2 ms of spinning on `other`.
Outcome fair_outcome_leaving_work_on(cudaStream_t other) {
  const long long cycles = static_cast<long long>(query_device().sm_clock_khz * 0.2);
  DeviceBuffer<float> out(1024);
  int64_t n = 0;
  return fair_outcome(
      [&](cudaStream_t st) {
        write_index<<<4, 256, 0, st>>>(out.data(), 1024);
        spin<<<1, 1, 0, other>>>(cycles);
      },
      &n);
}

TEST(HarnessGpu, FairTimingRejectsWorkLeftOnTheLegacyStream) {
  WB_REQUIRE_GPU();
  const Outcome o = fair_outcome_leaving_work_on(cudaStreamLegacy);
  EXPECT_EQ(o.code, Code::OutsideStream) << o.message;
}

TEST(HarnessGpu, FairTimingRejectsWorkOnAStreamOfItsOwn) {
  WB_REQUIRE_GPU();
  Stream own;  // non-blocking: the legacy stream does not wait for it, the whole-device wait does
  const Outcome o = fair_outcome_leaving_work_on(own);
  EXPECT_EQ(o.code, Code::OutsideStream) << o.message;
}

// One sample, then the end of the run, as Google Benchmark's first trial of a case does: the
// launcher leaves ~0.2 ms of spinning on a stream of its own on the calls `leaves` picks (the
// sampler makes 3 warm-up calls first, so call 3 is the first sample).
Outcome one_sample_run(const std::function<bool(int)>& leaves) {
  const long long cycles = static_cast<long long>(query_device().sm_clock_khz * 0.2);
  DeviceBuffer<float> out(1024);
  Stream s, own;
  int calls = 0;
  bench::Timed t;
  t.launch = [&](cudaStream_t st) {
    write_index<<<4, 256, 0, st>>>(out.data(), 1024);
    if (leaves(calls++)) spin<<<1, 1, 0, own>>>(cycles);
  };
  t.next_inputs = [](cudaStream_t) {};
  t.check_last = [] { return Outcome::pass(); };
  bench::FairSampler f(t, s, "fairness");
  if (f.sample()) f.end_run();
  CUDA_CHECK(cudaDeviceSynchronize());
  return f.outcome();
}

TEST(HarnessGpu, FairTimingMeasuresAOneOffLeftoverAgainBeforeRejecting) {
  WB_REQUIRE_GPU();
  // Busy after the first sample only, as a clock change on the first shape can make it look.
  const Outcome o = one_sample_run([](int call) { return call == 3; });
  EXPECT_TRUE(o.passed()) << o.message;
}

TEST(HarnessGpu, FairTimingRejectsALeftoverThatRepeatsWhenMeasuredAgain) {
  WB_REQUIRE_GPU();
  const Outcome o = one_sample_run([](int) { return true; });
  EXPECT_EQ(o.code, Code::OutsideStream) << o.message;
  EXPECT_NE(o.message.find("each time it was measured"), std::string::npos) << o.message;
}

// Fair timing with the per-launch count of unwritten outputs: next_inputs poisons `out`
// (all bits set), unwritten() counts the elements still poisoned, as the spec's does.
Outcome fair_outcome_counting(DeviceBuffer<float>& out, const std::function<void(cudaStream_t)>& launch) {
  bench::Timed t;
  t.launch = launch;
  t.next_inputs = [&](cudaStream_t st) {
    CUDA_CHECK(cudaMemsetAsync(out.data(), 0xFF, out.size() * sizeof(float), st));
  };
  t.check_last = [] { return Outcome::pass(); };
  t.unwritten = [&](cudaStream_t st) {
    std::vector<uint32_t> h(out.size());
    CUDA_CHECK(cudaMemcpyAsync(h.data(), out.data(), h.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost, st));
    CUDA_CHECK(cudaStreamSynchronize(st));
    return static_cast<int64_t>(std::count(h.begin(), h.end(), 0xFFFFFFFFu));
  };
  return fifty_fair_samples(t);
}

TEST(HarnessGpu, FairTimingCountsEveryLaunchNotOnlyTheLast) {
  WB_REQUIRE_GPU();
  DeviceBuffer<float> out(1024);
  int calls = 0;
  // Does the work on every other call only: the last launch may well be a working one.
  const Outcome o = fair_outcome_counting(out, [&](cudaStream_t st) {
    if (calls++ % 2 == 0) write_index<<<4, 256, 0, st>>>(out.data(), 1024);
  });
  EXPECT_EQ(o.code, Code::StaleAfterTiming) << o.message;
  EXPECT_NE(o.message.find("1024 output elements unwritten"), std::string::npos) << o.message;
}

TEST(HarnessGpu, FairTimingCatchesASmallTailOnAnotherStream) {
  WB_REQUIRE_GPU();
  DeviceBuffer<float> out(1024);
  Stream own;
  // The last eighth of the output written by ~20 us of work on a stream of the launcher's own:
  // under the thresholds of the whole-device wait, but its output is missing when the timed
  // stream is done.
  const long long cycles = static_cast<long long>(query_device().sm_clock_khz * 0.02);
  const Outcome o = fair_outcome_counting(out, [&](cudaStream_t st) {
    write_index<<<4, 224, 0, st>>>(out.data(), 896);
    spin_then_write<<<1, 128, 0, own>>>(out.data(), 896, 1024, cycles);
  });
  EXPECT_EQ(o.code, Code::OutsideStream) << o.message;
  EXPECT_NE(o.message.find("work on another stream wrote"), std::string::npos) << o.message;
}

TEST(HarnessGpu, FairTimingAcceptsALauncherThatWritesItsWholeOutputEveryTime) {
  WB_REQUIRE_GPU();
  DeviceBuffer<float> out(1024);
  const Outcome o =
      fair_outcome_counting(out, [&](cudaStream_t st) { write_index<<<4, 256, 0, st>>>(out.data(), 1024); });
  EXPECT_TRUE(o.passed()) << o.message;
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

// --- AllocationCount: what this process allocated and did not free ---------------------------

#define WB_START_COUNT(count)                                                                 \
  do {                                                                                        \
    if (!(count).start()) GTEST_SKIP() << "cannot count allocations here: " << (count).why(); \
  } while (0)

TEST(AllocationCount, CountsWhatIsLeftAllocated) {
  WB_REQUIRE_GPU();
  AllocationCount count;
  WB_START_COUNT(count);
  void *a = nullptr, *b = nullptr, *c = nullptr;
  CUDA_CHECK(cudaMalloc(&a, 1 << 20));
  CUDA_CHECK(cudaMalloc(&b, 3 << 20));
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaMallocAsync(&c, 5 << 20, nullptr));  // stream-ordered, freed: not left
  CUDA_CHECK(cudaFreeAsync(c, nullptr));
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto left = count.stop();
  EXPECT_EQ(left.count, 1);
  EXPECT_EQ(left.bytes, size_t{3} << 20);
  CUDA_CHECK(cudaFree(b));
}

TEST(AllocationCount, SmallLeaksCountToo) {
  WB_REQUIRE_GPU();
  AllocationCount count;
  WB_START_COUNT(count);
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, 4100));  // far below the 2 MB pages a free-memory reading sees
  const auto left = count.stop();
  EXPECT_EQ(left.count, 1);
  EXPECT_EQ(left.bytes, size_t{4100});
  CUDA_CHECK(cudaFree(p));
}

TEST(AllocationCount, FreeOfAnEarlierAllocationIsNotCounted) {
  WB_REQUIRE_GPU();
  void* before = nullptr;
  CUDA_CHECK(cudaMalloc(&before, 1 << 20));
  AllocationCount count;
  WB_START_COUNT(count);
  CUDA_CHECK(cudaFree(before));
  const auto left = count.stop();
  EXPECT_EQ(left.count, 0);
  EXPECT_EQ(left.bytes, size_t{0});
}

// The helper of the next test, run in a process of its own: holds 256 MB of device memory
// for a few seconds. (DISABLED_: only that test runs it.)
TEST(AllocationCount, DISABLED_HelperHoldsMemory) {
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, size_t{256} << 20));
  CUDA_CHECK(cudaMemset(p, 0, size_t{256} << 20));
  CUDA_CHECK(cudaDeviceSynchronize());
  std::printf("holding\n");
  std::fflush(stdout);
  sleep(4);
  CUDA_CHECK(cudaFree(p));
}

// Another process allocates 256 MB while this one counts and frees all it allocates: the
// GPU's free memory drops (a cudaMemGetInfo check would report a leak), the count stays 0.
// The drop is recorded, not asserted: other programs sharing the GPU move it as well.
TEST(AllocationCount, AnotherProcessAllocatingIsNotCounted) {
  WB_REQUIRE_GPU();
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(n, 0);
  self[n] = '\0';
  size_t free_before = 0, free_after = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
  AllocationCount count;
  WB_START_COUNT(count);
  const std::string command =
      std::string("'") + self +
      "' --gtest_also_run_disabled_tests --gtest_filter=AllocationCount.DISABLED_HelperHoldsMemory";
  FILE* child = popen(command.c_str(), "r");
  ASSERT_NE(child, nullptr);
  bool holding = false;
  char line[512];
  while (!holding && std::fgets(line, sizeof line, child)) holding = std::string(line).rfind("holding", 0) == 0;
  void* mine = nullptr;
  CUDA_CHECK(cudaMalloc(&mine, 1 << 20));
  CUDA_CHECK(cudaFree(mine));
  CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
  const auto left = count.stop();
  pclose(child);
  ASSERT_TRUE(holding) << "the helper process did not start";
  // The free memory is only reported: with other test programs on the same GPU it moves by
  // their allocations too, which is the very reason the count does not read it.
  RecordProperty("free_memory_drop_mb",
                 std::to_string((static_cast<long long>(free_before) - static_cast<long long>(free_after)) >> 20));
  EXPECT_EQ(left.count, 0) << "the other process's 256 MB must not show in this process's count";
  EXPECT_EQ(left.bytes, size_t{0});
}

}  // namespace
}  // namespace wb
