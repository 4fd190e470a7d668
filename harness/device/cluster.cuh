// Thread-block clusters (sm_90+): the blocks of a cluster run at the same time on one GPC and
// may read each other's shared memory ("distributed shared memory") through the cluster's
// shared window. Each wrapper is one PTX instruction (two for the barrier).
//
// Chapter 10's v11 (v11_implicit_gemm_cluster_splitk) uses them: the blocks of a cluster sum
// slices of one output tile's K loop, park their partial tiles in their own shared memory, and
// after a cluster barrier each reduces a slice of rows by reading the peers' partials.
//
// Not architecture-specific (sm_90, not only sm_90a), so code built for several architectures
// may include it; before sm_90 the wrappers trap, and a launcher must not reach them there
// (check the compute capability, launch with a cluster dimension: cudaLaunchKernelEx).
#pragma once
#include <cstdint>

namespace wb::ptx {

// This block's rank in its cluster, 0 .. cluster size - 1.
__device__ __forceinline__ uint32_t cluster_rank() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
#else
  __trap();
  return 0;
#endif
}

// Every thread of every block of the cluster arrives, then waits for all of them. The
// release / acquire pair orders memory: shared-memory writes a block made before the barrier
// are visible to every block of the cluster after it (a __syncthreads for the whole cluster).
// Not the .aligned form: a caller may reach it from a branch its warp took apart.
__device__ __forceinline__ void cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "barrier.cluster.arrive.release;\n"
      "barrier.cluster.wait.acquire;\n" ::
          : "memory");
#else
  __trap();
#endif
}

// The address, in the cluster's shared window, of the variable at shared-memory address
// `addr` (smem_u32) in block `rank` of the cluster.
__device__ __forceinline__ uint32_t map_shared_rank(uint32_t addr, uint32_t rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(addr), "r"(rank));
  return out;
#else
  __trap();
  return 0;
#endif
}

// 16 bytes (4 floats) at a cluster shared-window address (map_shared_rank), 16-byte aligned.
__device__ __forceinline__ float4 ld_cluster_f4(uint32_t addr) {
  float4 v = {};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
#else
  __trap();
#endif
  return v;
}

}  // namespace wb::ptx
