// The Hopper bonus's kernels, built for sm_90a alone (hopper/*.cu, in their own library: see
// chapters/ch05_wmma/extra.cmake). The ladder's v6 launcher (v6_wgmma_tma.cu, through
// hopper_launch.cuh) decides per call whether this path applies and falls back to v5; v11's
// (v11_wgmma_int8.cu) falls back to v8, v14's to v7 and v15's to v8. v9 and v10 (FP8) are launchers themselves
// (declared in ladder.cuh): the FP8 ops' rules (ch05.cuh) are the TMA path's, so they need no fallback.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "ch05.cuh"
#include "runtime/device.cuh"

namespace ch05::solution::hopper {

// Whether the TMA path can take the problem: TMA needs the row strides (K for A, N for B,
// in bytes) to be multiples of 16 and the bases 16-byte aligned. Any M and N, and any K
// (the last tile is zero-filled by TMA), are fine.
bool supports(int M, int N, int K, const void* A, const void* B);

// D = A * B (+ C) with FP16 or BF16 inputs. Only on compute capability 9.0 and when
// supports() is true.
template <class In, class Out>
void gemm(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t stream);

// Throws unless this GPU has wgmma (compute capability 9.0): the sm_90a kernels exist nowhere else.
inline void require_wgmma(const char* who) {
  static const bool hopper = wb::query_device().has_wgmma();
  if (!hopper) {
    throw std::runtime_error(std::string(who) +
                             " needs sm_90a (Hopper, compute capability 9.0): wgmma and TMA do not exist on this GPU");
  }
}

// TMA reads from 16-byte aligned bases (cudaMalloc gives 256).
inline void check_tma_pointers(const void* A, const void* B, const char* who) {
  if (reinterpret_cast<uintptr_t>(A) % 16 != 0 || reinterpret_cast<uintptr_t>(B) % 16 != 0) {
    throw std::invalid_argument(std::string(who) + ": A and B must start on 16-byte boundaries (TMA)");
  }
}

// v11 (hopper/v11_wgmma_int8.cu): INT8 wgmma on B transposed to N x K. Whether the path can
// take the problem (K a positive multiple of 16, A 16-byte aligned); B's transposed copy,
// made by the variant's prepare step (untimed); the GEMM (arranges B itself if need be).
bool int8_supports(int M, int N, int K, const void* A);
void int8_arrange_b(int N, int K, const int8_t* B, cudaStream_t stream);
void int8_gemm(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C, int32_t* D,
               cudaStream_t stream);
// The arranged copy (N x K) of this B, made first if the prepare step has not made it.
const int8_t* int8_arranged_b(int N, int K, const int8_t* B, cudaStream_t stream);

// v14 (hopper/v14_mma_sync_tma.cu): v7's mma.sync tiles fed by TMA, persistent. Only on compute
// capability 9.0, K > 0 and where supports() is true (the same TMA rule as v6).
template <class In, class Out>
void mma_tma_gemm(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t stream);

// v15 (hopper/v15_mma_sync_tma_int8.cu): v14's pipeline on INT8, B read as the arranged copy.
// Only where int8_supports() is true (v11's rule).
void mma_tma_int8_gemm(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C, int32_t* D,
                       cudaStream_t stream);

}  // namespace ch05::solution::hopper
