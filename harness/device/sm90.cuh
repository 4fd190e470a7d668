// Hopper (sm_90a) building blocks: thin wrappers over the PTX of mbarriers, TMA copies, the
// async proxy fence, setmaxnreg and wgmma's fence / commit / wait, the shared-memory matrix
// descriptor, and the host's way to the driver's tensor-map encoder. Each wrapper is one
// instruction.
//
// Chapter 5 teaches them in its Hopper bonus (v6_wgmma_tma, hopper/wgmma_tma_kernel.cu, which
// explains what each is for and the descriptor's fields); chapter 8's Hopper attention
// (v7_flash_wgmma_tma) and chapter 10's Hopper convolution (v8_implicit_gemm_wgmma) use them
// too. The wgmma instructions of chapter 8's attention and chapter 10's convolution stay with
// their kernels; the GEMM's (wgmma_ss, any N) and the pipeline built from these wrappers are
// in device/wgmma_gemm.cuh (chapter 5's v6, chapter 9's v12).
//
// Include it only from code built for sm_90a (the chapters' Hopper libraries,
// workbook_add_hopper_library in cmake/Workbook.cmake).
#pragma once
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <stdexcept>

#include "device/mma.cuh"  // wb::ptx::smem_u32: the addresses the wrappers below take
#include "runtime/errors.cuh"

namespace wb::sm90 {

// --- device: mbarriers, TMA, fences, wgmma ---------------------------------------------

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes the barriers just initialised visible to the copy engine (after the last mbar_init).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// Arrives once and adds `bytes` to the transactions the current phase waits for.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Spins until the phase with the given parity has completed. A fresh barrier is in phase
// 0, so waiting for parity 1 returns at once: the producer's first pass over the "empty"
// barriers needs no consumer to have arrived.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
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
}
// Arrives once on `bar` when every cp.async this thread issued before it has landed (the
// arrival is counted in the barrier's expected count: .noinc). Lets threads that fill a stage
// with ordinary cp.async copies (an im2col gather, which no TMA box describes) signal a "full"
// barrier without waiting for their own copies. The copies are generic-proxy writes: a thread
// that waits on the barrier and then hands the stage to wgmma (the async proxy) must execute
// fence_async_shared() between the two. Chapter 10's v8 uses it.
__device__ __forceinline__ void cp_async_mbar_arrive_noinc(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// A 2-D box whose corner is at element (c0 inner, c1 outer) of the tensor map, into shared
// memory at `dst`, completing on barrier `bar`.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// A 3-D box whose corner is at (c0 inner, c1, c2 outer): chapter 8 maps (D, S, B * H) so that
// a box of rows never runs from one head into the next (rows past S arrive as zeros).
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::
          "r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}

// A 4-D box whose corner is at (c0 inner, c1, c2, c3 outer): chapter 10's v10 maps an NHWC
// activation (C, W, H, N) and asks for a (slab, 18 columns, 18 rows, 1 image) tile with its
// halo; the coordinates may be negative, and elements outside arrive as zeros (the padding).
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2, int c3,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}

// The reverse: a 2-D box from shared memory at `src` to the tensor at (c0, c1); elements
// outside the tensor are not written. Tracked per thread in "bulk groups".
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, uint32_t src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(src)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Waits until this thread's earlier bulk stores have read their shared memory (it may be
// written again) ...
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
// ... or until they are complete.
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
// Makes this thread's ordinary shared-memory writes visible to the copy engine.
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// The warpgroup's registers per thread lowered (a producer that only issues copies) or
// raised (the consumers that hold the accumulators) to kRegs, a multiple of 8 from 24 to 256.
// Every thread of the warpgroup must call it.
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
// A barrier for the 128 threads of one warpgroup (ids 1, 2; 0 is __syncthreads).
__device__ __forceinline__ void warpgroup_barrier(int id) { asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory"); }
// A barrier for `threads` threads (a multiple of 32: the consumer warpgroups of a block,
// while the producer has gone), id 1 .. 15.
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

// The accumulator operands of a wgmma's inline asm, in order: "+f"(d[i]) ... for 32, 64 or 128
// FP32 registers (the asm's own "%0, %1, ..." list must match).
#define WB_WGMMA_D8(d, i)                                                                                     \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])
#define WB_WGMMA_D32(d, i) WB_WGMMA_D8(d, i), WB_WGMMA_D8(d, i + 8), WB_WGMMA_D8(d, i + 16), WB_WGMMA_D8(d, i + 24)
#define WB_WGMMA_D64(d) WB_WGMMA_D32(d, 0), WB_WGMMA_D32(d, 32)
#define WB_WGMMA_D128(d) WB_WGMMA_D32(d, 0), WB_WGMMA_D32(d, 32), WB_WGMMA_D32(d, 64), WB_WGMMA_D32(d, 96)

// Keeps the compiler from moving accumulator registers while a wgmma may write them.
template <int N>
__device__ __forceinline__ void pin(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The 128-byte swizzle, the layout TMA writes with CU_TENSOR_MAP_SWIZZLE_128B and wgmma reads
// through a descriptor with swizzle mode 1: a tile of 128-byte rows (64 BF16 values of K per
// row, "K-major"), its base 1024-byte aligned. The 16-byte chunk c (values 8c .. 8c + 7) of
// row r is stored at chunk position c ^ (r % 8) of its row:
//
//   chunk at position 0 .. 7
//   row 0:  0 1 2 3 4 5 6 7        the hardware XORs address bits 4-6 (the chunk) with
//   row 1:  1 0 3 2 5 4 7 6        bits 7-9 (the row within its 1024-byte group of 8 rows),
//   row 2:  2 3 0 1 6 7 4 5        so the pattern repeats every 8 rows; a column of chunks
//   ...                            (the same c in 8 rows) lands in 8 different groups of 4
//   row 7:  7 6 5 4 3 2 1 0        banks, which is what lets the tensor cores read it at speed
//
// Code that writes such a tile itself (cp.async, st.shared) must use the same formula, or
// wgmma reads the values in the wrong places. Returns the byte offset of (row, chunk).
__host__ __device__ constexpr uint32_t swizzle128_offset(int row, int chunk) {
  return uint32_t(row) * 128u + (uint32_t(chunk ^ (row & 7)) << 4);
}

// A shared-memory matrix descriptor with the 128-byte swizzle.
__device__ __forceinline__ uint64_t make_desc(uint32_t smem_addr, uint32_t leading_bytes, uint32_t stride_bytes) {
  uint64_t desc = 0;
  desc |= uint64_t((smem_addr & 0x3FFFF) >> 4);
  desc |= uint64_t((leading_bytes & 0x3FFFF) >> 4) << 16;
  desc |= uint64_t((stride_bytes & 0x3FFFF) >> 4) << 32;
  desc |= uint64_t(1) << 62;  // 128-byte swizzle
  return desc;
}

// --- host ------------------------------------------------------------------------------

// cuTensorMapEncodeTiled, reached through the runtime (no link against libcuda).
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || p == nullptr) {
      throw std::runtime_error("the driver has no cuTensorMapEncodeTiled (needs a CUDA 12 driver)");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

}  // namespace wb::sm90
