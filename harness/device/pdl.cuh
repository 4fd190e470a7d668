// Programmatic dependent launch (PDL): letting a kernel start while the one before it on the
// stream is still finishing.
//
// Two kernels on one stream normally run strictly one after the other: the second is
// launched only when the first has ended and its writes are visible, and between the two
// the GPU idles for a few microseconds (the last CTAs of the first drain, the second's CTAs
// are scheduled and start loading). A decode step of a language model is a chain of many
// short kernels, and those gaps add up to a large part of it. On compute capability 9.0 and
// later a kernel can be launched as a *programmatic dependent* of the one before it:
//
//   kernel A (launched as usual)   ...work...  pdl_trigger()  ...last writes...  | end
//   kernel B (launch_pdl)                       CTAs start: prefetch to L2, then
//                                               pdl_wait()  ------------------------> A ended,
//                                                                                    its writes
//                                                                                    visible: go on
//
// The rules a kernel launched this way keeps:
//   1. Before pdl_wait() it reads nothing the kernels before it may write, and writes nothing.
//      What it may do there: read data that no kernel writes (weights) into registers or
//      shared memory, and pdl_prefetch_l2 of data that is constant here (weights, a cache).
//      A prefetch only moves lines from DRAM into L2, which every SM reads through, so even a
//      line an earlier kernel is still writing is read correctly after the wait.
//   2. It calls pdl_trigger() only after its own pdl_wait() (so the kernel after it cannot
//      start before the one before it ended: the chain stays ordered), typically once its CTA
//      has done its main work. The kernel after it still waits for ALL of this one to end.
//   3. Every CTA calls pdl_wait() before its first dependent read.
// Without the attribute (GPUs before 9.0, or an ordinary launch) the three calls do nothing.
//
// Two ways to launch:
//   launch_dependent  the kernel before it on the stream is the same launcher's own (a merge
//                     after its partial pass): always programmatic where the GPU has it.
//   launch_chained    the kernel before it is somebody else's: programmatic only inside a
//                     PdlChain scope, which a caller opens around a sequence of kernels it
//                     owns (a model's decode step). Outside one it is an ordinary launch, so
//                     a benchmark that records an event and then calls one launcher times
//                     the launcher alone, with nothing of it started before the event.
// WORKBOOK_PDL=0 in the environment turns the attribute off everywhere (to measure its gain).
//
// Chapter 8 meets it (v6_split_kv_mma: the merge launched as a dependent of the chunk kernel);
// chapter 9 teaches the chain (v6_fused_decode and the model's decode step).
#pragma once
#include <cuda_runtime.h>

#include <utility>

#include "runtime/errors.cuh"

namespace wb {

// Waits until every kernel this one depends on has ended and its writes are visible.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next kernel on the stream (if launched with launch_pdl) be scheduled now.
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Asks L2 for the 128-byte line holding p (no register result, no ordering: a hint).
__device__ __forceinline__ void pdl_prefetch_l2(const void* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#endif
}

// True when the current device has programmatic launches (compute capability 9.0 or later)
// and WORKBOOK_PDL is not 0.
bool pdl_enabled();

// While one is alive on this thread, launch_chained launches programmatic dependents.
class PdlChain {
 public:
  PdlChain();
  ~PdlChain();
  PdlChain(const PdlChain&) = delete;
  PdlChain& operator=(const PdlChain&) = delete;
  static bool active();
};

namespace detail {
template <class... Params, class... Args>
void launch(bool programmatic, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
            Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  if (programmatic && pdl_enabled()) {
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
  }
  CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}
}  // namespace detail

// kernel<<<grid, block, smem, stream>>>(args...), a programmatic dependent of the kernel before
// it (the caller's own). Checks the launch.
template <class... Params, class... Args>
void launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                      Args&&... args) {
  detail::launch(true, kernel, grid, block, smem, stream, std::forward<Args>(args)...);
}

// The same, programmatic only inside a PdlChain.
template <class... Params, class... Args>
void launch_chained(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                    Args&&... args) {
  detail::launch(PdlChain::active(), kernel, grid, block, smem, stream, std::forward<Args>(args)...);
}

}  // namespace wb
