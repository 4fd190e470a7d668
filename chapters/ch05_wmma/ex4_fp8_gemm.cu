// Exercise 4 — FP8 (E4M3): the conversion, and the scaled GEMM.
//
// Goal: the three FP8 ops of ch05.cuh, right first, on any GPU from sm_80 (compute the sums
// on CUDA cores; the Hopper steps v9-v10 of the ladder show the tensor-core version):
//   fp8_quantize            Q = E4M3(X / scale[0]), rounded to nearest even, SATURATING:
//                           __nv_fp8_e4m3(float) saturates (it is __NV_SATFINITE); so does
//                           __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3). With
//                           __NV_NOSAT, anything past 464 becomes NaN (E4M3 has no infinity).
//   fp8_gemm                D = scale_a[0] * scale_b[0] * sum over p of A[i][p] * B[j][p]:
//                           B is N x K (both operands K-major). Decode with float(q); the
//                           product of two E4M3 values is exact in FP32. Add in FP32, multiply
//                           by the two scales once at the end, round to BF16 once.
//   fp8_gemm_block_scaled   per block of 128 along K: partial = the FP32 sum over the block;
//                           total += partial * scale_a[kb * M + i] * scale_b[(j / 128) *
//                           fp8_scale_b_ld(K) + kb]. Mind the layouts: scale_a has M running
//                           fastest, scale_b's rows are padded to a multiple of 4.
// Both GEMM launchers go through launch_fp8_gemm below, which first calls
// check_fp8_gemm_args(M, N, K, who) (ch05.cuh): K must be a positive multiple of 16 and N a
// multiple of 16; it throws std::invalid_argument otherwise.
//
// A tensor-core version (optional, sm_89+: guard the asm with __CUDA_ARCH__ >= 890) would use
// mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32, whose B fragment is K-major ("col"),
// which is how B is stored. The tensor core's own sums keep only about 14 bits: add its
// accumulator into an FP32 sum every 128 of K (docs/ch05-wmma.md, "Exercise 4").
//
// What the tests check, and the outcome code a failure gets:
//   * D within FP32 accumulation + one BF16 rounding of the float64 result on the same E4M3
//     inputs [wrong] (chapters/ch05_wmma/spec_fp8.cu derives the tolerance); Q within one E4M3
//     step of E4M3(X / scale), +-448 where X / scale is past the range [wrong, or nan /
//     unwritten for a conversion that writes NaN: the poison the harness fills Q with is
//     E4M3's NaN pattern 0x7F];
//   * shapes with M anything, N and K multiples of 16 down to 1 x 16 x 16, partial blocks of
//     128 along K and N; A and B over the whole E4M3 range, and over every binade (subnormals
//     too). After them the large cases, on sampled rows: 2048^3 (both GEMMs), 150,001 x 32 x
//     16,384 (fp8_gemm: A past 2^31 elements, so offsets in size_t), and a 4096 x 4096 X for
//     the quantizer;
//   * K = 8, K = 40 or N = 24 refused with std::invalid_argument before any launch
//     [accepted_bad_args];
//   * every element written [unwritten], nothing outside D or Q [oob_write], nothing read past
//     the inputs [oob_read]; the same bits on a repeated run [nondeterministic]; all work on
//     `stream` [outside_stream]; a second call with new inputs [cached].
//
// Test:  ctest --preset ch05 -R ex4_fp8_gemm
// Guide: docs/ch05-wmma.md, section "Exercise 4".
#include "ch05.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch05 {
namespace {

constexpr int kThreads = 256;

__global__ void quantize_kernel(int M, int K, const __nv_bfloat16* X, const float* scale, __nv_fp8_e4m3* Q) {
  // TODO: one thread per element (a grid-stride loop over M * K, in size_t): Q = E4M3(X / scale).
}

__global__ void fp8_gemm_kernel(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B,
                                const float* scale_a, const float* scale_b, bool blocked, __nv_bfloat16* D) {
  // TODO: D[i][j] from row i of A and row j of B (N x K); per-tensor or per-block scales.
}

// The launch of both GEMMs (`blocked`: the per-block scales); `who` names the launcher in a refusal.
void launch_fp8_gemm(const char* who, int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B,
                     const float* scale_a, const float* scale_b, bool blocked, __nv_bfloat16* D, cudaStream_t stream) {
  check_fp8_gemm_args(M, N, K, who);
  if (M == 0 || N == 0) return;
  const dim3 grid(1);  // TODO
  fp8_gemm_kernel<<<grid, kThreads, 0, stream>>>(M, N, K, A, B, scale_a, scale_b, blocked, D);
  WB_CHECK_LAUNCH();
}

}  // namespace

void student::fp8_quantize(int M, int K, const __nv_bfloat16* X, const float* scale, __nv_fp8_e4m3* Q,
                           cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch05_wmma/ex4_fp8_gemm.cu");  // delete this line when you start

  if (M <= 0 || K <= 0) return;
  const dim3 grid(1);  // TODO
  quantize_kernel<<<grid, kThreads, 0, stream>>>(M, K, X, scale, Q);
  WB_CHECK_LAUNCH();
}

void student::fp8_gemm(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
                       const float* scale_b, __nv_bfloat16* D, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch05_wmma/ex4_fp8_gemm.cu");  // delete this line when you start

  launch_fp8_gemm("fp8_gemm", M, N, K, A, B, scale_a, scale_b, false, D, stream);
}

void student::fp8_gemm_block_scaled(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B,
                                    const float* scale_a, const float* scale_b, __nv_bfloat16* D, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch05_wmma/ex4_fp8_gemm.cu");  // delete this line when you start

  launch_fp8_gemm("fp8_gemm_block_scaled", M, N, K, A, B, scale_a, scale_b, true, D, stream);
}

}  // namespace ch05
