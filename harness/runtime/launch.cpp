#include "runtime/launch.cuh"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "runtime/errors.cuh"

namespace wb {

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

namespace {

// One watchdog thread per process for device_sync_with_deadline: cudaDeviceSynchronize()
// cannot be polled, so the thread ends the process if a wait outlives its deadline. Its
// state is never freed, so it outlives static destruction at exit.
struct Watchdog {
  std::mutex m;
  std::condition_variable cv;
  bool armed = false;
  std::chrono::steady_clock::time_point deadline;
  std::string what;
  double limit_s = 0;

  static Watchdog& get() {
    static Watchdog* w = [] {
      auto* p = new Watchdog;
      std::thread([p] { p->watch(); }).detach();
      return p;
    }();
    return *w;
  }

  void watch() {
    std::unique_lock<std::mutex> lock(m);
    while (true) {
      if (!armed) {
        cv.wait(lock);
        continue;
      }
      if (cv.wait_until(lock, deadline) == std::cv_status::timeout && armed &&
          std::chrono::steady_clock::now() >= deadline) {
        std::fprintf(stderr,
                     "\nkernel-workbook: %s: work on the GPU is still running after %.0f s (waiting for the whole "
                     "device). It probably never finishes. A hung kernel cannot be stopped, so this program exits "
                     "now (code 124). Raise the limit with WORKBOOK_KERNEL_TIMEOUT=<seconds> if it is just slow.\n",
                     what.c_str(), limit_s);
        std::fflush(stderr);
        std::_Exit(124);
      }
    }
  }
};

}  // namespace

double device_sync_with_deadline(const std::string& what) {
  Watchdog& w = Watchdog::get();
  {
    std::lock_guard<std::mutex> lock(w.m);
    w.limit_s = kernel_timeout_s();
    w.deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                        std::chrono::duration<double>(w.limit_s));
    w.what = what;
    w.armed = true;
  }
  w.cv.notify_one();
  const auto start = std::chrono::steady_clock::now();
  const cudaError_t st = cudaDeviceSynchronize();
  const auto end = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(w.m);
    w.armed = false;
  }
  CUDA_CHECK(st);
  return std::chrono::duration<double, std::milli>(end - start).count();
}

Outcome run_launcher(const std::string& what, const std::function<void(cudaStream_t)>& launch, cudaStream_t stream) {
  try {
    launch(stream);
  } catch (const NotImplemented& e) {
    return Outcome::fail(Code::NotImplemented, what + ": " + e.what());
  } catch (const CudaError& e) {
    return Outcome::fail(e.sticky ? Code::Fault : Code::LaunchError,
                         what + ": the launcher failed: " + e.what() +
                             (e.sticky ? ""
                                       : "\n  (check the grid and block sizes: at most 1024 threads per block, and a "
                                         "grid of at least one block)"));
  }
  try {
    sync_with_deadline(stream, what);
  } catch (const CudaError& e) {
    return Outcome::fail(Code::Fault,
                         what + ": the kernel faulted: " + e.what() +
                             "\n  The CUDA context is lost; later GPU calls in this process fail too."
                             "\n  Find the bad access with:"
                             "\n    compute-sanitizer --tool memcheck <test binary> --gtest_filter=<this test>");
  }
  return Outcome::pass();
}

}  // namespace wb
