// Launch plumbing that the solution ladders share: picking a kernel template's constant from
// a runtime value, sizing a grid to what is resident at once, and the opt-in above 48 KB of
// dynamic shared memory. Host code; the kernels themselves are not touched.
//
// Chapter 3 teaches the resident grid (v4_coarsened: as many blocks as fit at once, each then
// looping over its share); chapter 6 reuses it for its persistent kernel. Chapters 5, 8 and 10
// opt their large-tile kernels into more shared memory. Chapters 7, 8 and 10 dispatch a tuned
// or shape-derived value to a template argument.
#pragma once
#include <cuda_runtime.h>

#include <type_traits>

#include "runtime/device.cuh"
#include "runtime/errors.cuh"

namespace wb {

// Calls f(std::integral_constant<int, v>{}) for the v among kValues that equals `value` and
// returns true; returns false, calling nothing, when none does. A launcher turns a runtime
// choice (a tuned thread count, a head size) into the constant a kernel template takes:
//   if (!wb::with_constant<128, 256>(threads, [&](auto t) { launch<t.value>(...); })) throw ...;
template <int... kValues, class F>
bool with_constant(int value, F&& f) {
  return ((value == kValues ? (f(std::integral_constant<int, kValues>{}), true) : false) || ...);
}

// How many blocks of `threads` threads of `kernel` the GPU holds at once: SMs x blocks per SM,
// from the occupancy calculator (which knows the kernel's registers and shared memory; a
// kernel that takes more than 48 KB of dynamic shared memory opts in before it asks).
// A grid this size runs in one wave. May be 0 (a kernel that does not fit); callers clamp.
template <class Kernel>
int blocks_per_gpu(Kernel kernel, int threads, size_t dynamic_smem = 0) {
  int per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, dynamic_smem));
  return sm_count() * per_sm;
}

// Lets `kernel` launch with up to `bytes` of dynamic shared memory (above 48 KB a kernel must
// opt in). Returns true, so that a launcher does it once per kernel with a static:
//   [[maybe_unused]] static const bool raised = wb::allow_dynamic_smem(kernel, Cfg::kSmem);
template <class Kernel>
bool allow_dynamic_smem(Kernel kernel, int bytes) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  return true;
}

}  // namespace wb
