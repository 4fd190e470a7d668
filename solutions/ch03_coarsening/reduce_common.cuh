// Pieces every step of the chapter 3 ladder shares: the two operations, element loads,
// warp and block reductions, the grid size of a "resident" grid, and the workspace layout.
// Each step's own idea lives in its vK_*.cu file; this header holds only the plumbing.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "ch03.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch_helpers.cuh"
#include "device/math.cuh"
#include "device/vec.cuh"

namespace ch03::solution {

constexpr int kThreads = 256;     // threads per block in every step
constexpr int kMaxBlocks = 4096;  // the most partial results a resident grid writes

using wb::ceil_div;  // grids: harness/device/math.cuh

// --- the two operations: a combine and its identity (what an empty input reduces to) ----

struct SumOp {
  __device__ static float identity() { return 0.0f; }
  __device__ float operator()(float a, float b) const { return a + b; }
};

struct MaxOp {
  __device__ static float identity() { return -INFINITY; }
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// --- loads -------------------------------------------------------------------------------

using wb::to_float;  // FP32 or BF16 to FP32 (harness/device/vec.cuh)

// Four elements in one load: a float4 (16 bytes) for FP32, a uint2 (8 bytes) for BF16.
template <class T>
struct Vec4;
template <>
struct Vec4<float> {
  using type = float4;
};
template <>
struct Vec4<__nv_bfloat16> {
  using type = uint2;
};

__device__ __forceinline__ float4 widen(float4 v) { return v; }
// A BF16 is the top half of an FP32: shifting its 16 bits up is an exact conversion.
// The element at the lower address sits in the low half of each 32-bit word.
__device__ __forceinline__ float4 widen(uint2 v) {
  return make_float4(__uint_as_float(v.x << 16), __uint_as_float(v.x & 0xFFFF0000u), __uint_as_float(v.y << 16),
                     __uint_as_float(v.y & 0xFFFF0000u));
}

template <class Op>
__device__ __forceinline__ float4 combine4(Op op, float4 a, float4 b) {
  return make_float4(op(a.x, b.x), op(a.y, b.y), op(a.z, b.z), op(a.w, b.w));
}

// --- warp and block reductions -----------------------------------------------------------

// The 32 lanes' values combined; the result is in lane 0. Every lane must call it.
template <class Op>
__device__ __forceinline__ float warp_reduce(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v = Op{}(v, __shfl_down_sync(0xFFFFFFFFu, v, offset));
  return v;
}

// The block's values combined; the result is in thread 0. Every thread must call it.
// Calling it twice in one kernel needs a __syncthreads() between the calls: both use the
// same shared array.
template <class Op, int kBlock>
__device__ __forceinline__ float block_reduce(float v) {
  static_assert(kBlock % 32 == 0 && kBlock >= 64 && kBlock <= 1024, "a whole number of warps, 2 to 32");
  constexpr int kWarps = kBlock / 32;
  __shared__ float warp_totals[kWarps];  // (kWarps) one value per warp
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  v = warp_reduce<Op>(v);
  if (lane == 0) warp_totals[warp] = v;
  __syncthreads();
  if (warp == 0) v = warp_reduce<Op>(lane < kWarps ? warp_totals[lane] : Op::identity());
  return v;
}

// --- grid size ---------------------------------------------------------------------------

// How many blocks of `kernel` fit on the GPU at once: SMs x blocks per SM (from the
// occupancy calculator, which knows the kernel's registers and shared memory; the query is
// wb::blocks_per_gpu in harness/runtime/launch_helpers.cuh), capped at kMaxBlocks. A grid this size
// runs in one wave; each block then loops over its share.
template <class Kernel>
int resident_blocks(Kernel kernel, int threads) {
  return std::clamp(wb::blocks_per_gpu(kernel, threads), 1, kMaxBlocks);
}

// --- workspace ---------------------------------------------------------------------------

// Counters first (zero between calls: whoever increments one resets it), then partials.
//   [ counters: `counters` x uint32, rounded up to 256 bytes | partials: float ... ]
struct Workspace {
  unsigned* counters;
  float* partials;
};

inline size_t workspace_bytes_for(int counters, int64_t partials) {
  const size_t header = (static_cast<size_t>(counters) * sizeof(unsigned) + 255) / 256 * 256;
  return header + static_cast<size_t>(partials) * sizeof(float);
}

inline Workspace split_workspace(void* ws, size_t bytes, int counters, int64_t partials, const char* who) {
  if (bytes < workspace_bytes_for(counters, partials)) {
    throw std::length_error(std::string(who) + ": the workspace holds " + std::to_string(bytes) + " bytes, " +
                            std::to_string(workspace_bytes_for(counters, partials)) + " are needed");
  }
  auto* base = static_cast<unsigned char*>(ws);
  const size_t header = workspace_bytes_for(counters, 0);
  return {reinterpret_cast<unsigned*>(base), reinterpret_cast<float*>(base + header)};
}

}  // namespace ch03::solution
