// Thread-block clusters (compute capability 9.0 and newer): thin wrappers over the PTX that
// names a CTA's place in its cluster, the cluster-wide barrier, and the mapping of a shared
// memory address to the same variable in another CTA of the cluster (distributed shared
// memory). Each wrapper is one instruction; the host side launches a kernel with a cluster
// shape and asks whether one fits.
//
// Chapter 7 teaches them (v6_cluster_select: one cluster per row, the CTAs of a row meeting
// in each other's shared memory instead of in a global workspace); chapter 10's v11 splits a
// convolution tile's sum over the CTAs of a cluster the same way.
//
// The barrier comes in two halves. arrive() says "my writes so far are done" (release);
// wait() blocks until every thread of the cluster that has not exited has arrived, and then
// sees their writes (acquire). Work placed between the two overlaps the barrier's latency.
// Every thread of every CTA arrives once per phase; a CTA may exit after its last arrive()
// when no other CTA touches its shared memory afterwards.
//
// The device wrappers compile only for compute capability 9.0 and newer: call them from code
// under `#if __CUDA_ARCH__ >= 900`.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "runtime/errors.cuh"

namespace wb::cluster {

// --- device -------------------------------------------------------------------------------

// This CTA's rank in its cluster, 0 .. size() - 1.
__device__ __forceinline__ unsigned rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// The number of CTAs in the cluster.
__device__ __forceinline__ unsigned size() {
  unsigned n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(n));
  return n;
}

// The first half of the cluster barrier: this thread's earlier writes are released.
__device__ __forceinline__ void arrive() { asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory"); }

// The second half: waits for every thread of the cluster to arrive, and acquires their writes.
__device__ __forceinline__ void wait() { asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory"); }

__device__ __forceinline__ void sync() {
  arrive();
  wait();
}

// The address of *p (a variable in this CTA's shared memory) in the shared memory of CTA
// `rank` of the cluster, as a generic pointer: ordinary loads, stores and atomics through it
// reach the other SM.
template <class T>
__device__ __forceinline__ T* map(T* p, unsigned rank) {
  uint64_t out;
  asm volatile("mapa.u64 %0, %1, %2;\n" : "=l"(out) : "l"(reinterpret_cast<uint64_t>(p)), "r"(rank));
  return reinterpret_cast<T*>(out);
}

// --- host ---------------------------------------------------------------------------------

// A launch configuration in clusters of `cluster` CTAs along x (grid.x a multiple of it), with
// `smem` bytes of dynamic shared memory per CTA (chapter 10's v11: its stages).
class Config {
 public:
  Config(dim3 grid, int threads, int cluster, cudaStream_t stream, size_t smem = 0) {
    shape_.id = cudaLaunchAttributeClusterDimension;
    shape_.val.clusterDim.x = cluster, shape_.val.clusterDim.y = 1, shape_.val.clusterDim.z = 1;
    config_.gridDim = grid;
    config_.blockDim = dim3(threads);
    config_.stream = stream;
    config_.dynamicSmemBytes = smem;
    config_.attrs = &shape_;
    config_.numAttrs = 1;
  }
  Config(const Config&) = delete;  // config_ points into this object
  Config& operator=(const Config&) = delete;
  const cudaLaunchConfig_t* get() const { return &config_; }

 private:
  cudaLaunchAttribute shape_{};
  cudaLaunchConfig_t config_{};
};

// How many clusters of `cluster` CTAs of `threads` threads each (and `smem` bytes of dynamic
// shared memory each, which the kernel must already be allowed) the GPU can hold at once; 0
// when none fits, or when the kernel has no binary for this GPU or one older than sm_90 (no
// clusters). Sizes above 8 need the kernel's non-portable opt-in, which this sets.
template <class Kernel>
int max_active(Kernel kernel, int threads, int cluster, size_t smem = 0) {
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, kernel) != cudaSuccess) {
    (void)cudaGetLastError();  // no binary of the kernel for this GPU
    return 0;
  }
  if (attr.binaryVersion < 90) return 0;
  if (cluster > 8) CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  const Config config(dim3(cluster), threads, cluster, nullptr, smem);
  int n = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, kernel, config.get()));
  return n;
}

// Launches kernel<<<grid, threads, 0, stream>>>(args...) in clusters of `cluster` CTAs along
// x (grid.x a multiple of it), and checks the launch.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, int threads, int cluster, cudaStream_t stream, Args&&... args) {
  const Config config(grid, threads, cluster, stream);
  CUDA_CHECK(cudaLaunchKernelEx(config.get(), kernel, std::forward<Args>(args)...));
}

}  // namespace wb::cluster
