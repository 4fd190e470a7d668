// Chapter 5 — GEMM on tensor cores: the interface between your kernels and the harness.
//
// You write the same GEMM three times, one file per exercise:
//   ex1_wmma_global.cu   one warp per 16 x 16 tile of D, WMMA fragments loaded from global
//                        memory (FP16 and BF16 inputs)
//   ex2_wmma_smem.cu     tiles of A and B staged in shared memory, several warps per block
//                        (FP16 and BF16 inputs)
//   ex3_wmma_int8.cu     the same on INT8 inputs with INT32 accumulation
//   ex4_fp8_gemm.cu      FP8 (E4M3): quantizing BF16 activations with a scale, and the scaled
//                        GEMM, per tensor and per block (the FP8 ops below)
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
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
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
// One row per combination, in the enum's order: its name, and the compute capability
// (major * 10 + minor) its tensor-core path needs.
struct TypesInfo {
  Types types;
  const char* name;
  int min_cc;
};
inline constexpr TypesInfo kTypesTable[] = {
    {Types::F16_F32, "f16_f32", 70},     {Types::F16_F16, "f16_f16", 70}, {Types::BF16_F32, "bf16_f32", 80},
    {Types::BF16_BF16, "bf16_bf16", 80}, {Types::I8_I32, "i8_i32", 75},
};
inline const TypesInfo* types_info(Types t) {
  for (const TypesInfo& row : kTypesTable) {
    if (row.types == t) return &row;
  }
  return nullptr;
}
inline const char* types_name(Types t) {
  const TypesInfo* row = types_info(t);
  return row != nullptr ? row->name : "?";
}
inline const std::vector<Types>& all_types() {
  static const std::vector<Types> all = [] {
    std::vector<Types> v;
    for (const TypesInfo& row : kTypesTable) v.push_back(row.types);
    return v;
  }();
  return all;
}
// Compute capability (major * 10 + minor) the tensor-core path of a type needs.
inline int types_min_cc(Types t) {
  const TypesInfo* row = types_info(t);
  return row != nullptr ? row->min_cc : 0;
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

// A value as another element type: FP16 and BF16 widen exactly to float, a value becomes FP16
// or BF16 rounded to nearest even, and anything else is a static_cast.
template <class To, class From>
__device__ __forceinline__ To convert(From v) {
  if constexpr (std::is_same_v<From, __half>)
    return __half2float(v);
  else if constexpr (std::is_same_v<From, __nv_bfloat16>)
    return __bfloat162float(v);
  else if constexpr (std::is_same_v<To, __half>)
    return __float2half_rn(v);
  else if constexpr (std::is_same_v<To, __nv_bfloat16>)
    return __float2bfloat16_rn(v);
  else
    return static_cast<To>(v);
}
// An element of C as an accumulator value, and an accumulator rounded to the output type.
template <class Acc, class Out>
__device__ __forceinline__ Acc to_acc(Out v) {
  return convert<Acc>(v);
}
template <class Out, class Acc>
__device__ __forceinline__ Out to_out(Acc v) {
  return convert<Out>(v);
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

// --- FP8 (E4M3) ---------------------------------------------------------------------------
//
// FP8 E4M3 keeps 3 mantissa bits and tops out at 448 (docs/precision.md), so FP8 data always
// travels with a scale: the stored value q stands for scale * q. Three ops, all on
// __nv_fp8_e4m3 (cuda_fp8.h):
//
//   fp8_quantize/bf16_e4m3     Q = E4M3(X / scale[0]), X (M x K) BF16 -> Q (M x K) E4M3,
//                              rounded to nearest even and SATURATED: |X / scale| past 448
//                              becomes +-448 (E4M3 has no infinity; a conversion that does not
//                              saturate writes NaN). This is how activations reach the GEMM
//                              below with a static (per-tensor) scale.
//
//   gemm_fp8/e4m3_bf16         D = scale_a[0] * scale_b[0] * (A * B^T), FP32 accumulation,
//                              BF16 output (rounded once, at the end)
//   gemm_fp8_block/e4m3_bf16   the same with one FP32 scale per 1 x 128 block of A and per
//                              128 x 128 block of B (DeepSeek-V3's recipe): for each block of
//                              128 along K, the partial sum over that block is multiplied by
//                              its two scales and added into an FP32 running sum.
//
//   A is M x K, row-major: element (i, p) at A[i * K + p]           (activations)
//   B is N x K, row-major: element (j, p) at B[j * K + p]           (weights, "N x K": the
//     GEMM multiplies by B^T; both operands are K-major, the only layout FP8 wgmma reads)
//   D is M x N, row-major BF16: element (i, j) at D[i * N + j]
//   Block scales (gemm_fp8_block), with KB = ceil(K / 128) blocks along K:
//     scale_a: KB x M, element (kb, i) at scale_a[kb * M + i]       (M runs fastest)
//     scale_b: ceil(N / 128) rows of fp8_scale_b_ld(K) = KB rounded up to a multiple of 4,
//              element (nb, kb) at scale_b[nb * fp8_scale_b_ld(K) + kb]
//   (the layouts cuBLASLt's VEC128_32F and BLK128x128_32F scale modes read: the reference
//   passes them through untouched). The last block along K or N may be partial.
//   D[i][j] = sum over kb of scale_a[kb][i] * scale_b[j / 128][kb] * (sum over p in block kb
//             of A[i][p] * B[j][p])
//
// Requirements of the two GEMMs (refused with std::invalid_argument otherwise, before any
// work: check_fp8_gemm_args below): K >= 16 and a multiple of 16, N a multiple of 16, M >= 0.
// Why: a row of A or B is then a whole number of 16-byte pieces (the unit of TMA copies and
// vector loads), and cuBLASLt's FP8 kernels ask the same of their dimensions. M is free.
// All pointers are device pointers; the scales too (they may be computed on the GPU).
using Fp8GemmFn = void(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
                       const float* scale_b, __nv_bfloat16* D, cudaStream_t stream);
using Fp8QuantizeFn = void(int M, int K, const __nv_bfloat16* X, const float* scale, __nv_fp8_e4m3* Q,
                           cudaStream_t stream);

constexpr int kFp8ScaleBlock = 128;  // elements of K (and rows of B) per block scale
// Blocks of 128 along K, and the row length of the block-scaled op's scale_b.
__host__ __device__ inline int fp8_k_blocks(int K) { return (K + kFp8ScaleBlock - 1) / kFp8ScaleBlock; }
__host__ __device__ inline int fp8_scale_b_ld(int K) { return (fp8_k_blocks(K) + 3) / 4 * 4; }

// The FP8 GEMMs' argument rule, one owner for every launcher (exercise, solutions, reference).
inline void check_fp8_gemm_args(int M, int N, int K, const char* who) {
  std::string why;
  if (M < 0 || N < 0)
    why = "M and N must be >= 0";
  else if (K < 16 || K % 16 != 0)
    why = "K must be a positive multiple of 16";
  else if (N % 16 != 0)
    why = "N must be a multiple of 16";
  if (!why.empty()) {
    throw std::invalid_argument(std::string(who) + ": " + why + " (got M=" + std::to_string(M) +
                                " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                                "); FP8 rows must be whole 16-byte pieces");
  }
}

// Defines the four FP16/BF16 entry points of an exercise, student::name_f16_f32, _f16_f16,
// _bf16_f32 and _bf16_bf16, each a call of the exercise file's own launch<In, Out> template
// (exercises 1 and 2). Plumbing only: the work is in launch and its kernel.
#define CH05_STUDENT_ENTRY(fn, In, Out)                                                                        \
  void student::fn(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t stream) { \
    launch<In, Out>(M, N, K, A, B, C, D, stream);                                                              \
  }
#define CH05_STUDENT_16BIT(name)                            \
  CH05_STUDENT_ENTRY(name##_f16_f32, __half, float)         \
  CH05_STUDENT_ENTRY(name##_f16_f16, __half, __half)        \
  CH05_STUDENT_ENTRY(name##_bf16_f32, __nv_bfloat16, float) \
  CH05_STUDENT_ENTRY(name##_bf16_bf16, __nv_bfloat16, __nv_bfloat16)

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
// ex4_fp8_gemm.cu
Fp8QuantizeFn fp8_quantize;
Fp8GemmFn fp8_gemm;
Fp8GemmFn fp8_gemm_block_scaled;
}  // namespace student

}  // namespace ch05
