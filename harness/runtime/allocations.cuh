// Device memory that THIS process allocates, counted as it happens. A leak check that reads
// the GPU's free memory (cudaMemGetInfo) before and after a piece of code sees every other
// process too: one that frees memory meanwhile hides a leak, one that allocates invents one.
// AllocationCount subscribes to CUPTI's callbacks on the CUDA runtime and driver calls that
// allocate and free device memory (cudaMalloc, cudaMallocManaged, cudaMallocPitch,
// cudaMallocAsync and cudaMallocFromPoolAsync, cudaFree, cudaFreeAsync, and their driver
// forms cuMemAlloc* and cuMemFree*), made by any thread of this process while it counts, and
// keeps the pointers not yet freed:
//
//   wb::AllocationCount count;
//   if (count.start()) {
//     program(...);                        // code that should free what it allocates
//     const auto left = count.stop();      // left.count allocations, left.bytes bytes
//   } else {
//     // count.why(): CUPTI could not be loaded, or another tool (a profiler) holds it
//   }
//
// CUPTI is loaded at run time (libcupti ships with the CUDA toolkit), so nothing links it.
// Memory freed during the count that was allocated before it started is not counted.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace wb {

class AllocationCount {
 public:
  struct Left {
    int64_t count = 0;  // allocations made since start() and not freed
    size_t bytes = 0;   // their sizes (a pitched allocation: pitch x height)
  };

  AllocationCount();
  ~AllocationCount();  // stops counting if start() succeeded and stop() was not called
  AllocationCount(const AllocationCount&) = delete;
  AllocationCount& operator=(const AllocationCount&) = delete;

  // Starts counting; false when it cannot (why() says why). One count at a time per process.
  bool start();
  // Stops counting; what was allocated since start() and is still allocated.
  Left stop();
  const std::string& why() const { return why_; }

  struct State;

 private:
  std::unique_ptr<State> state_;
  std::string why_;
  bool running_ = false;
};

}  // namespace wb
