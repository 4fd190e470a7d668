// Harness self-tests for chapter 11: programs and launchers with the stream mistakes
// learners make. Each must be rejected by the same checks the learner's code meets, with the
// outcome code it declares (one test per kernel: ctest --preset ch11-solution -R broken). If
// one of these tests fails, the harness has gone soft, not the kernel.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

#include "ch11.cuh"
#include "host_io.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"
#include "serial_kernels.cuh"

namespace ch11 {
namespace {

using wb::Code;

// axpb_kernel, gemv_kernel and step_kernel: the serial reference's (serial_kernels.cuh).
unsigned blocks_for(int64_t n) { return static_cast<unsigned>(std::clamp<int64_t>((n + 255) / 256, 1, 4096)); }

// axpb_kernel's work, after idling about `ns` nanoseconds: a copy queued behind it surely lands
// late.
__global__ void slow_axpb_kernel(float* v, int64_t n, float a, float b, unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    v[i] = a * v[i] + b;
  }
}

// --- exercise 1: the program ------------------------------------------------------------------

// chunk(at, len) for the pieces [at, at + len) of n elements that fit the staging, in order.
template <class Chunk>
void for_each_chunk(int64_t n, const Staging& s, Chunk chunk) {
  for (int64_t at = 0; at < n; at += static_cast<int64_t>(s.count)) {
    chunk(at, std::min<int64_t>(static_cast<int64_t>(s.count), n - at));
  }
}

// Staging of `count` floats: the device buffer from cudaMalloc, the host buffer pinned
// (cudaMallocHost), or, for the "malloc_staging" mistake, pageable memory from malloc.
enum class Host { Pinned, Malloc };
template <Host host>
Staging staging_create(size_t count) {
  Staging s;
  s.count = count;
  if constexpr (host == Host::Pinned) {
    CUDA_CHECK(cudaMallocHost(&s.pinned, sizeof(float) * count));
  } else {
    s.pinned = static_cast<float*>(std::malloc(sizeof(float) * std::max<size_t>(count, 1)));
  }
  CUDA_CHECK(cudaMalloc(&s.device, sizeof(float) * count));
  return s;
}
template <Host host>
void staging_destroy(Staging& s) {
  if constexpr (host == Host::Pinned) {
    CUDA_CHECK(cudaFreeHost(s.pinned));
  } else {
    std::free(s.pinned);
  }
  CUDA_CHECK(cudaFree(s.device));
  s.pinned = s.device = nullptr;
}
constexpr StagingCreateFn* pinned_create = &staging_create<Host::Pinned>;
constexpr StagingDestroyFn* pinned_destroy = &staging_destroy<Host::Pinned>;

void good_run(const float* hx, float* hy, int64_t n, float a, float b, const Staging& s, cudaStream_t st) {
  for_each_chunk(n, s, [&](int64_t at, int64_t len) {
    const size_t bytes = sizeof(float) * len;
    std::memcpy(s.pinned, hx + at, bytes);
    CUDA_CHECK(cudaMemcpyAsync(s.device, s.pinned, bytes, cudaMemcpyHostToDevice, st));
    axpb_kernel<<<blocks_for(len), 256, 0, st>>>(s.device, s.device, len, a, b);
    CUDA_CHECK(cudaMemcpyAsync(s.pinned, s.device, bytes, cudaMemcpyDeviceToHost, st));
    CUDA_CHECK(cudaStreamSynchronize(st));
    std::memcpy(hy + at, s.pinned, bytes);
  });
}

// Forgets to wait for the stream before reading the staging: host_y gets what the staging held
// before the copy back arrived (a slow kernel makes sure it has not).
void reads_early_run(const float* hx, float* hy, int64_t n, float a, float b, const Staging& s, cudaStream_t st) {
  for_each_chunk(n, s, [&](int64_t at, int64_t len) {
    const size_t bytes = sizeof(float) * len;
    std::memcpy(s.pinned, hx + at, bytes);
    CUDA_CHECK(cudaMemcpyAsync(s.device, s.pinned, bytes, cudaMemcpyHostToDevice, st));
    slow_axpb_kernel<<<blocks_for(len), 256, 0, st>>>(s.device, len, a, b, 5000000ull);
    CUDA_CHECK(cudaMemcpyAsync(s.pinned, s.device, bytes, cudaMemcpyDeviceToHost, st));
    std::memcpy(hy + at, s.pinned, bytes);  // no cudaStreamSynchronize before this
  });
  CUDA_CHECK(cudaStreamSynchronize(st));
}

// Copies straight from and to the pageable arrays, the staging left unused.
void around_run(const float* hx, float* hy, int64_t n, float a, float b, const Staging& s, cudaStream_t st) {
  for_each_chunk(n, s, [&](int64_t at, int64_t len) {
    CUDA_CHECK(cudaMemcpyAsync(s.device, hx + at, sizeof(float) * len, cudaMemcpyHostToDevice, st));
    axpb_kernel<<<blocks_for(len), 256, 0, st>>>(s.device, s.device, len, a, b);
    CUDA_CHECK(cudaMemcpyAsync(hy + at, s.device, sizeof(float) * len, cudaMemcpyDeviceToHost, st));
    CUDA_CHECK(cudaStreamSynchronize(st));
  });
}

// Synchronous copies: cudaMemcpy runs on the legacy default stream and waits for it.
void legacy_run(const float* hx, float* hy, int64_t n, float a, float b, const Staging& s, cudaStream_t st) {
  for_each_chunk(n, s, [&](int64_t at, int64_t len) {
    const size_t bytes = sizeof(float) * len;
    std::memcpy(s.pinned, hx + at, bytes);
    CUDA_CHECK(cudaMemcpy(s.device, s.pinned, bytes, cudaMemcpyHostToDevice));
    axpb_kernel<<<blocks_for(len), 256, 0, st>>>(s.device, s.device, len, a, b);
    CUDA_CHECK(cudaStreamSynchronize(st));
    CUDA_CHECK(cudaMemcpy(s.pinned, s.device, bytes, cudaMemcpyDeviceToHost));
    std::memcpy(hy + at, s.pinned, bytes);
  });
}

// Frees the device buffer and forgets the pinned one.
void leaky_destroy(Staging& s) {
  CUDA_CHECK(cudaFree(s.device));
  s.device = nullptr;
}

const StagedProgram kReadsEarly{pinned_create, pinned_destroy, &reads_early_run};
// "Pinned" staging from malloc: pageable.
const StagedProgram kMallocStaging{&staging_create<Host::Malloc>, &staging_destroy<Host::Malloc>, &good_run};
const StagedProgram kAroundStaging{pinned_create, pinned_destroy, &around_run};
const StagedProgram kLegacyCopies{pinned_create, pinned_destroy, &legacy_run};
const StagedProgram kLeaksPinned{pinned_create, &leaky_destroy, &good_run};

// --- exercises 2 and 3: streams of their own -------------------------------------------------

struct Side {
  cudaStream_t s[4] = {};
  cudaEvent_t fork = nullptr, done[4] = {};
};
const Side& side() {
  static Side x = [] {
    Side made;
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    CUDA_CHECK(cudaEventCreateWithFlags(&made.fork, cudaEventDisableTiming));
    for (int i = 0; i < 4; ++i) {
      CUDA_CHECK(cudaStreamCreateWithFlags(&made.s[i], cudaStreamNonBlocking));
      CUDA_CHECK(cudaEventCreateWithFlags(&made.done[i], cudaEventDisableTiming));
    }
    CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    return made;
  }();
  return x;
}

enum class Slip { JoinOnGiven, NoFork, NoJoin, KernelOnLegacy };

template <Slip slip>
void slipped_pipeline(const float* hx, float* hy, float* dx, float* dy, int64_t n, float a, float b, cudaStream_t st) {
  const Side& sd = side();
  constexpr int kStreams = 3;
  if (slip != Slip::NoFork) {
    CUDA_CHECK(cudaEventRecord(sd.fork, st));
    for (int i = 0; i < kStreams; ++i) CUDA_CHECK(cudaStreamWaitEvent(sd.s[i], sd.fork, 0));
  }
  const int64_t chunk = std::max<int64_t>(1, (n + 5) / 6);
  int c = 0;
  for (int64_t at = 0; at < n; at += chunk, ++c) {
    const int64_t len = std::min(chunk, n - at);
    const size_t bytes = sizeof(float) * len;
    cudaStream_t s = sd.s[c % kStreams];
    CUDA_CHECK(cudaMemcpyAsync(dx + at, hx + at, bytes, cudaMemcpyHostToDevice, s));
    axpb_kernel<<<blocks_for(len), 256, 0, slip == Slip::KernelOnLegacy ? cudaStreamLegacy : s>>>(dx + at, dy + at, len,
                                                                                                  a, b);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpyAsync(hy + at, dy + at, bytes, cudaMemcpyDeviceToHost, s));
  }
  if constexpr (slip != Slip::NoJoin) {
    for (int i = 0; i < kStreams; ++i) {
      // The join event belongs on the stream that did the work; recorded on `st` it joins nothing.
      CUDA_CHECK(cudaEventRecord(sd.done[i], slip == Slip::JoinOnGiven ? st : sd.s[i]));
      CUDA_CHECK(cudaStreamWaitEvent(st, sd.done[i], 0));
    }
  }
}

template <Slip slip>
void slipped_fork_join(const float* A1, const float* x1, float* y1, const float* A2, const float* x2, float* y2, int m,
                       int k, cudaStream_t st) {
  const Side& sd = side();
  cudaStream_t other = slip == Slip::KernelOnLegacy ? cudaStreamLegacy : sd.s[0];
  if (slip != Slip::NoFork && slip != Slip::KernelOnLegacy) {
    CUDA_CHECK(cudaEventRecord(sd.fork, st));
    CUDA_CHECK(cudaStreamWaitEvent(other, sd.fork, 0));
  }
  gemv_kernel<<<m, 256, 0, st>>>(A1, x1, y1, k);
  gemv_kernel<<<m, 256, 0, other>>>(A2, x2, y2, k);
  CUDA_CHECK(cudaGetLastError());
  if constexpr (slip != Slip::NoJoin && slip != Slip::KernelOnLegacy) {
    CUDA_CHECK(cudaEventRecord(sd.done[0], slip == Slip::JoinOnGiven ? st : other));
    CUDA_CHECK(cudaStreamWaitEvent(st, sd.done[0], 0));
  }
}

// --- exercise 4: graphs ----------------------------------------------------------------------

cudaGraphExec_t capture_chain(const float* x, const float* w, float* y, int n, int steps, float c, cudaStream_t st) {
  CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int s = 0; s < steps; ++s) step_kernel<<<(n + 255) / 256, 256, 0, st>>>(s == 0 ? x : y, y, w, s, n, c);
  cudaGraph_t g = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(st, &g));
  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
  cudaGraphDestroy(g);
  return exec;
}

// Captures once per (n, steps) and replays that graph ever after: the next call's pointers and
// c never reach it.
void never_updated(const float* x, const float* w, float* y, int n, int steps, float c, cudaStream_t st) {
  static std::map<std::pair<int, int>, cudaGraphExec_t> seen;
  cudaGraphExec_t& exec = seen[{n, steps}];
  if (!exec) exec = capture_chain(x, w, y, n, steps, c, st);
  CUDA_CHECK(cudaGraphLaunch(exec, st));
}

// Replays its graph on the legacy default stream instead of the given one.
void replays_on_legacy(const float* x, const float* w, float* y, int n, int steps, float c, cudaStream_t st) {
  cudaGraphExec_t exec = capture_chain(x, w, y, n, steps, c, st);
  CUDA_CHECK(cudaGraphLaunch(exec, cudaStreamLegacy));
  CUDA_CHECK(cudaGraphExecDestroy(exec));
}

}  // namespace

WB_VARIANTS(ch11_broken, wb::Role::Broken) {
  const std::vector<Code> outside = {Code::OutsideStream};
  // What reading a pipeline's poison, or its result too early, looks like.
  const std::vector<Code> outside_or_poison = {Code::OutsideStream, Code::NaN, Code::Wrong, Code::Unwritten};
  const auto program = [](const char* name, const StagedProgram* p) { return wb::variant("staged_axpb/f32", name, p); };
  const auto fj = [](const char* name, ForkJoinFn* fn) { return wb::variant("fork_join/f32", name, fn); };
  const auto small = [](int64_t n) { return wb::Shape{{"n", n}}.set_param("a", 1.5).set_param("b", -0.25); };
  return {
      program("reads_staging_before_the_copy", &kReadsEarly)
          .rejected_as({Code::Wrong, Code::Unwritten}, "no cudaStreamSynchronize before reading the staging"),
      program("malloc_staging", &kMallocStaging).rejected_as({Code::Pageable}, "staging from malloc"),
      program("copies_around_the_staging", &kAroundStaging)
          .rejected_as({Code::Pageable}, "cudaMemcpyAsync straight from the pageable arrays"),
      program("synchronous_copies", &kLegacyCopies)
          .rejected_as(outside, "cudaMemcpy on the legacy default stream")
          .on({small(1000)}),
      program("leaks_pinned", &kLeaksPinned).rejected_as({Code::LaunchError}, "no cudaFreeHost"),
      pipeline_variant("join_event_on_the_given_stream", &slipped_pipeline<Slip::JoinOnGiven>)
          .rejected_as(outside, "the join event recorded on the given stream, not the worker's"),
      pipeline_variant("no_fork", &slipped_pipeline<Slip::NoFork>)
          .rejected_as(outside_or_poison, "the streams do not wait for the given stream"),
      pipeline_variant("no_join", &slipped_pipeline<Slip::NoJoin>)
          .rejected_as(outside, "the given stream does not wait for the workers"),
      pipeline_variant("kernels_on_legacy", &slipped_pipeline<Slip::KernelOnLegacy>)
          .rejected_as(outside_or_poison, "kernels launched on the legacy default stream"),
      fj("join_event_on_the_given_stream", &slipped_fork_join<Slip::JoinOnGiven>)
          .rejected_as(outside, "the join event recorded on the given stream"),
      fj("no_fork", &slipped_fork_join<Slip::NoFork>).rejected_as(outside, "the side stream does not wait"),
      fj("no_join", &slipped_fork_join<Slip::NoJoin>).rejected_as(outside, "never joined back"),
      fj("second_on_legacy", &slipped_fork_join<Slip::KernelOnLegacy>)
          .rejected_as(outside, "the second GEMV on the legacy default stream"),
      wb::variant("chain/f32", "never_updated", &never_updated)
          .rejected_as({Code::Wrong, Code::Fault, Code::Cached},
                       "replays the first graph of a size without updating it"),
      wb::variant("chain/f32", "replays_on_legacy", &replays_on_legacy)
          .rejected_as(outside, "cudaGraphLaunch on the legacy default stream"),
  };
}

}  // namespace ch11
