// Planted bugs for the sanitizer: scripts/sanitize.sh --planted runs each one under the
// compute-sanitizer tool that must catch it, and fails if the tool stays silent.
//
//   planted_bugs --oob     a global write past the end of a buffer        (memcheck)
//   planted_bugs --race    a shared-memory read with no barrier before it (racecheck)
//   planted_bugs --uninit  a read of device memory nobody wrote           (initcheck)
//   planted_bugs --clean   the same kernels written correctly: every tool must stay silent
//
// Each bug is the quiet kind: without the sanitizer the program runs to the end and exits 0.
// The out-of-bounds write lands in the slack of the allocation (cudaMalloc rounds sizes up),
// and the race usually reads the right value because the neighbouring warp is often done.
// That is the point: the tests can pass while the kernel is wrong.
//
// This program is not part of any test preset; it runs only under the `sanitize` ctest label.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/buffers.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "device/math.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kElements = 1000;  // not a multiple of kThreads: the last block has 24 idle threads

// Bug 1: no bounds check, so threads 1000..1023 write 24 floats past the end of `out`.
__global__ void planted_oob_write(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = 2.0f * static_cast<float>(i) + static_cast<float>(n);  // BUG: should be guarded by i < n
}

__global__ void fixed_write(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * static_cast<float>(i) + static_cast<float>(n);
}

// Bug 2: each thread stores its element in the shared tile, then reads the element one warp
// further on, which another warp stored, with no __syncthreads() in between: a read-after-
// write hazard between warps.
template <bool kWithBarrier>
__global__ void neighbour_sum(const float* in, float* out, int n) {
  __shared__ float tile[kThreads];  // one float per thread of the block
  const int t = threadIdx.x;
  const int i = blockIdx.x * kThreads + t;
  tile[t] = i < n ? in[i] : 0.0f;
  if constexpr (kWithBarrier) __syncthreads();    // BUG when false: the barrier is missing
  const float right = tile[(t + 32) % kThreads];  // written by the next warp
  if (i < n) out[i] = tile[t] + right;
}

// Bug 3: `in` was allocated but never written; the kernel reads it anyway.
__global__ void copy_kernel(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

int blocks_for(int n) { return wb::ceil_div(n, kThreads); }

void run_oob(bool planted) {
  wb::DeviceBuffer<float> out(kElements);
  if (planted) {
    planted_oob_write<<<blocks_for(kElements), kThreads>>>(out.data(), kElements);
  } else {
    fixed_write<<<blocks_for(kElements), kThreads>>>(out.data(), kElements);
  }
  WB_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
}

void run_race(bool planted) {
  std::vector<float> host(kElements);
  for (int i = 0; i < kElements; ++i) host[i] = 0.5f + static_cast<float>(i % 17);
  wb::DeviceBuffer<float> in(host), out(kElements);
  if (planted) {
    neighbour_sum<false><<<blocks_for(kElements), kThreads>>>(in.data(), out.data(), kElements);
  } else {
    neighbour_sum<true><<<blocks_for(kElements), kThreads>>>(in.data(), out.data(), kElements);
  }
  WB_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
}

void run_uninit(bool planted) {
  std::vector<float> host(kElements, 1.5f);
  wb::DeviceBuffer<float> in(kElements), out(kElements);
  if (!planted) in.upload(host);  // the fix: give the input its values
  copy_kernel<<<blocks_for(kElements), kThreads>>>(in.data(), out.data(), kElements);
  WB_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
}

int usage(const char* why) {
  if (why) std::fprintf(stderr, "planted_bugs: %s\n", why);
  std::fprintf(stderr,
               "usage: planted_bugs --oob | --race | --uninit | --clean\n"
               "  Kernels with bugs planted on purpose, for scripts/sanitize.sh --planted.\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return usage(argc < 2 ? "which bug? (one switch)" : "one switch at a time");
  const std::string what = argv[1];
  if (what == "-h" || what == "--help") {
    usage(nullptr);
    return 0;
  }
  if (what != "--oob" && what != "--race" && what != "--uninit" && what != "--clean") {
    return usage(("unknown switch '" + what + "'").c_str());
  }
  if (const auto reason = wb::gpu_missing_reason()) {
    std::fprintf(stderr, "planted_bugs: cannot run: %s\n", reason->c_str());
    return 77;
  }
  try {
    if (what == "--oob") {
      run_oob(true);
      std::printf("planted_bugs: wrote %d floats into a %d-float buffer and nothing complained.\n",
                  blocks_for(kElements) * kThreads, kElements);
    } else if (what == "--race") {
      run_race(true);
      std::printf("planted_bugs: read shared memory written by another warp, without a barrier.\n");
    } else if (what == "--uninit") {
      run_uninit(true);
      std::printf("planted_bugs: copied %d floats that were never initialised.\n", kElements);
    } else {
      run_oob(false);
      run_race(false);
      run_uninit(false);
      std::printf("planted_bugs: the fixed kernels ran.\n");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "planted_bugs: %s\n", e.what());
    return 1;
  }
  std::printf("planted_bugs: run it under compute-sanitizer to see the bug (scripts/sanitize.sh --planted).\n");
  return 0;
}
