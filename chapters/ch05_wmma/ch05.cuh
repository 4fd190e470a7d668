// Chapter 5 — GEMM on tensor cores: the interface between your kernels and the harness.
//
// You write the same GEMM three times, one file per exercise:
//   ex1_wmma_global.cu   one warp per 16 x 16 tile of D, WMMA fragments loaded from global
//                        memory (FP16 and BF16 inputs)
//   ex2_wmma_smem.cu     tiles of A and B staged in shared memory, several warps per block
//                        (FP16 and BF16 inputs)
//   ex3_wmma_int8.cu     the same on INT8 inputs with INT32 accumulation
// Each launcher receives device pointers and a stream, picks a grid with a ceiling division,
// launches its kernel on that stream and checks the launch.
//
// The operation, every matrix row-major and packed (no padding between rows):
//
//   D = A * B  (+ C)
//
//   A is M x K, element (i, p) at A[i * K + p]
//   B is K x N, element (p, j) at B[p * N + j]       (row-major: NOT the BLAS column-major)
//   C, D are M x N, element (i, j) at D[i * N + j]
//   C may be nullptr: then D = A * B. Otherwise C holds M x N values of D's type, is read
//   once per element and added in the accumulator precision; C and D do not overlap.
//
// Types (input -> accumulator -> output):
//   FP16 (__half)          -> FP32 -> FP32 or FP16      tensor cores from sm_70
//   BF16 (__nv_bfloat16)   -> FP32 -> FP32 or BF16      tensor cores from sm_80
//   INT8 (int8_t)          -> INT32 -> INT32            tensor cores from sm_72 (tested from sm_75)
// The output is the FP32 accumulator rounded once (round to nearest even) to the output type.
//
// Rules the tests hold you to:
//   * any M, N, K >= 1: 1 x 1 x 1, primes, and sizes that are no multiple of 16 or of your
//     tile sizes. A WMMA fragment is always 16 x 16 (x 16): the edges are yours to handle,
//     for instance by copying a partial tile into shared memory with zeros around it.
//   * M == 0 or N == 0: nothing to do (launch nothing: a grid of zero blocks is an error).
//   * only the M x N elements of D are written.
//   * the inputs are random and not symmetric: reading A or B as column-major is wrong.
// Pointers come from cudaMalloc (256-byte aligned); row starts are aligned only as far as
// K and N allow (a 16-byte vector load of A needs K % 8 == 0 for 16-bit types).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace ch05 {

// One GEMM launcher for input type In and output type Out (see the table above).
template <class In, class Out>
using GemmFn = void(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t stream);

using GemmF16F32 = GemmFn<__half, float>;
using GemmF16F16 = GemmFn<__half, __half>;
using GemmBF16F32 = GemmFn<__nv_bfloat16, float>;
using GemmBF16BF16 = GemmFn<__nv_bfloat16, __nv_bfloat16>;
using GemmI8I32 = GemmFn<int8_t, int32_t>;

// The five type combinations, as the tests and the benchmark name them (gemm/bf16_bf16 ...).
enum class Types { F16_F32, F16_F16, BF16_F32, BF16_BF16, I8_I32 };
inline const char* types_name(Types t) {
  switch (t) {
    case Types::F16_F32:
      return "f16_f32";
    case Types::F16_F16:
      return "f16_f16";
    case Types::BF16_F32:
      return "bf16_f32";
    case Types::BF16_BF16:
      return "bf16_bf16";
    case Types::I8_I32:
      return "i8_i32";
  }
  return "?";
}
inline const std::vector<Types>& all_types() {
  static const std::vector<Types> all = {Types::F16_F32, Types::F16_F16, Types::BF16_F32, Types::BF16_BF16,
                                         Types::I8_I32};
  return all;
}
// Compute capability (major * 10 + minor) the tensor-core path of a type needs.
inline int types_min_cc(Types t) {
  switch (t) {
    case Types::F16_F32:
    case Types::F16_F16:
      return 70;
    case Types::BF16_F32:
    case Types::BF16_BF16:
      return 80;
    case Types::I8_I32:
      return 75;
  }
  return 0;
}

// --- device helpers for your kernels --------------------------------------------------

// The accumulator type of an input type: float for FP16/BF16, int for INT8.
template <class In>
struct AccumulatorOf {
  using type = float;
};
template <>
struct AccumulatorOf<int8_t> {
  using type = int;
};
template <class In>
using acc_t = typename AccumulatorOf<In>::type;

// Whether the architecture being compiled has WMMA for In. The build compiles every kernel
// for several architectures (sm_75 among them, which has no BF16 tensor cores), so wrap the
// body of a kernel templated on In in `if constexpr (has_tensor_cores<In>()) { ... }`:
// the tests skip on GPUs that lack the type, and the build needs the guard.
template <class In>
__host__ __device__ constexpr bool has_tensor_cores() {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<In, __nv_bfloat16>)
    return __CUDA_ARCH__ >= 800;
  else if constexpr (std::is_same_v<In, int8_t>)
    return __CUDA_ARCH__ >= 720;
  else
    return __CUDA_ARCH__ >= 700;
#else
  return true;
#endif
}

// An element of C as an accumulator value, and an accumulator rounded to the output type.
template <class Acc, class Out>
__device__ __forceinline__ Acc to_acc(Out v) {
  if constexpr (std::is_same_v<Out, __half>)
    return __half2float(v);
  else if constexpr (std::is_same_v<Out, __nv_bfloat16>)
    return __bfloat162float(v);
  else
    return static_cast<Acc>(v);
}
template <class Out, class Acc>
__device__ __forceinline__ Out to_out(Acc v) {
  if constexpr (std::is_same_v<Out, __half>)
    return __float2half_rn(v);
  else if constexpr (std::is_same_v<Out, __nv_bfloat16>)
    return __float2bfloat16_rn(v);
  else
    return static_cast<Out>(v);
}

// A zero of a device element type (the 16-bit float types have no constructor from 0).
template <class T>
__device__ __forceinline__ T zero() {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(0.0f);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(0.0f);
  else
    return T(0);
}

namespace student {
// ex1_wmma_global.cu
GemmF16F32 wmma_global_f16_f32;
GemmF16F16 wmma_global_f16_f16;
GemmBF16F32 wmma_global_bf16_f32;
GemmBF16BF16 wmma_global_bf16_bf16;
// ex2_wmma_smem.cu
GemmF16F32 wmma_smem_f16_f32;
GemmF16F16 wmma_smem_f16_f16;
GemmBF16F32 wmma_smem_bf16_f32;
GemmBF16BF16 wmma_smem_bf16_bf16;
// ex3_wmma_int8.cu
GemmI8I32 wmma_int8;
}  // namespace student

}  // namespace ch05
