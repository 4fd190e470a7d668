#include "cuda/launch.cuh"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "cuda/errors.cuh"

namespace wb {

const char* kind_name(Outcome::Kind k) {
  switch (k) {
    case Outcome::Kind::Pass: return "pass";
    case Outcome::Kind::Wrong: return "wrong";
    case Outcome::Kind::NotImplemented: return "not implemented";
    case Outcome::Kind::LaunchError: return "launch error";
    case Outcome::Kind::Fault: return "fault";
  }
  return "?";
}

namespace {
double kernel_timeout_s() {
  const char* env = std::getenv("WORKBOOK_KERNEL_TIMEOUT");
  const double v = env ? std::atof(env) : 0.0;
  return v > 0 ? v : 60.0;
}
}  // namespace

void sync_with_deadline(cudaStream_t stream, const std::string& what) {
  const auto limit = std::chrono::duration<double>(kernel_timeout_s());
  const auto start = std::chrono::steady_clock::now();
  auto pause = std::chrono::microseconds(2);
  while (true) {
    const cudaError_t st = cudaStreamQuery(stream);
    if (st == cudaSuccess) return;
    if (st != cudaErrorNotReady) CUDA_CHECK(st);
    if (std::chrono::steady_clock::now() - start > limit) {
      std::fprintf(stderr,
                   "\nkernel-workbook: %s is still running after %.0f s. It probably never finishes: an "
                   "endless loop, or a __syncthreads() that not every thread reaches. A hung kernel cannot "
                   "be stopped, so this program exits now (code 124). Raise the limit with "
                   "WORKBOOK_KERNEL_TIMEOUT=<seconds> if the kernel is just slow.\n",
                   what.c_str(), limit.count());
      std::fflush(stderr);
      std::_Exit(124);
    }
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::milliseconds(1)) pause *= 2;
  }
}

Outcome run_launcher(const std::string& what, const std::function<void(cudaStream_t)>& launch,
                     cudaStream_t stream) {
  try {
    launch(stream);
  } catch (const NotImplemented& e) {
    return {Outcome::Kind::NotImplemented, what + ": " + e.what()};
  } catch (const CudaError& e) {
    return {e.sticky ? Outcome::Kind::Fault : Outcome::Kind::LaunchError,
            what + ": the launcher failed: " + e.what() +
                (e.sticky ? "" : "\n  (check the grid and block sizes: at most 1024 threads per block, and a grid of at least one block)")};
  }
  try {
    sync_with_deadline(stream, what);
  } catch (const CudaError& e) {
    return {Outcome::Kind::Fault,
            what + ": the kernel faulted: " + e.what() +
                "\n  The CUDA context is lost; later GPU calls in this process fail too."
                "\n  Find the bad access with:"
                "\n    compute-sanitizer --tool memcheck <test binary> --gtest_filter=<this test>"};
  }
  return Outcome::pass();
}

}  // namespace wb
