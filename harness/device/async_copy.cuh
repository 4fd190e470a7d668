// cp.async (sm_80+): copies from global to shared memory that do not pass through
// registers and complete in the background. A thread issues copies, closes them into a
// group with commit, and later waits until at most N of its groups are still in flight.
// The waits cover only the calling thread's copies: a __syncthreads() after the wait makes
// every thread's copies visible to the whole block.
//
// Chapter 5 teaches it (v4_cp_async_pipeline: a GEMM's tiles through a 3-stage pipeline);
// chapters 8 and 9 feed their tensor-core kernels with it.
//
// On architectures before sm_80 these compile to nothing; the kernels that use them are
// never launched there (the tests skip, the benchmark leaves them out).
#pragma once
#include <cstdint>

namespace wb::ptx {

// 16 bytes from `gmem` to `smem` (both 16-byte aligned). When `valid` is false nothing is
// read and the 16 bytes are filled with zeros (the "src-size" operand is 0): the edge of
// a matrix needs no separate path. .cg: cache in L2 only, the data is used once per block.
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_bytes) : "memory");
#endif
}

// The same on a 32-bit shared-memory address (wb::ptx::smem_u32), in both cache modes:
// .ca keeps the line in L1 as well (an operand that neighbouring copies read again, such as
// chapter 10's im2col rows, where the taps (r, s) and (r, s + 1) read nearly the same pixels);
// .cg goes through L2 only (read once per block).
__device__ __forceinline__ void cp_async_ca_16(uint32_t smem, const void* gmem, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem), "r"(valid ? 16 : 0)
               : "memory");
#endif
}
__device__ __forceinline__ void cp_async_cg_16(uint32_t smem, const void* gmem, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem), "r"(valid ? 16 : 0)
               : "memory");
#endif
}

// 4 bytes from `gmem` to `smem` (both 4-byte aligned), through L1 (.ca: the only cache mode
// the PTX allows below 16 bytes): a short row of scales, say, whose start is not 16-byte aligned.
__device__ __forceinline__ void cp_async_4(void* smem, const void* gmem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(gmem) : "memory");
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most `kPending` of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

}  // namespace wb::ptx
