// Shared-memory barriers that count bytes (mbarrier) and the bulk copies that complete on them
// (compute capability 9.0). The copy engine, not the threads, moves the data: one thread asks
// for a whole block of global memory to land in shared memory, the barrier is told how many
// bytes to expect, and every thread that needs the data waits on the barrier's phase.
//
//   thread 0:  mbar_arrive_expect_tx(bar, bytes); bulk_load(dst, src, bytes, bar);
//   all:       mbar_wait(bar, phase);           // the bytes have landed
//
// A barrier alternates between phase 0 and 1; a wait names the parity of the phase it waits
// to see completed. Addresses are shared-memory addresses (smem_u32, mma_common.cuh).
// Before 9.0 these compile to nothing; the kernels that use them are not launched there.
#pragma once
#include <cstdint>

namespace ch05::solution {

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#endif
}

// After initialising barriers: makes them visible to the copy engine.
__device__ __forceinline__ void fence_mbarrier_init() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

// Arrives once and adds `bytes` to the transactions the current phase waits for.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#endif
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#endif
}

// Spins until the phase with the given parity has completed. A fresh barrier is in phase
// 0, so waiting for parity 1 returns at once: the producer's first pass over the "empty"
// barriers needs no consumer to have arrived.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
#endif
}

// `bytes` contiguous bytes of global memory at `src` into shared memory at `dst`, completing on
// barrier `bar`. Both addresses 16-byte aligned, bytes a multiple of 16.
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
#endif
}

// Makes this thread's ordinary shared-memory accesses ordered with the copy engine's: before a
// bulk copy overwrites memory that threads have just read, or reads what they just wrote.
__device__ __forceinline__ void fence_async_shared() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

}  // namespace ch05::solution
