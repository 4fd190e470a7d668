// Chapter 5's FP8 library references on cuBLASLt (the ops: ch05.cuh, "FP8"):
//   gemm_fp8/e4m3_bf16        cublaslt_fp8        per-tensor scales (A_SCALE_POINTER / B_SCALE_POINTER)
//   gemm_fp8_block/e4m3_bf16  cublaslt_fp8_block  VEC128_32F for the activations, BLK128x128_32F
//                                                 for the weights (cuBLASLt 12.9+, Hopper only)
//
// cuBLASLt's FP8 matmul takes one form only: "TN" (its A transposed, its B not), FP32 compute
// (CUBLAS_COMPUTE_32F, scale type CUDA_R_32F), E4M3 inputs, here a BF16 C and D. Fast
// accumulation stays off (CUBLASLT_MATMUL_DESC_FAST_ACCUM = 0, the default): cuBLASLt then
// adds the tensor core's partial sums into FP32 at intervals, the promotion spec_fp8.cu's
// error model assumes.
//
// The mapping. cuBLASLt is column-major: D' (m x n) = op(A') * op(B'). The op's D = A * B^T
// (row-major) is, column-major, D^T = B * A^T:
//   m = N, n = M, k = K;
//   A' = the op's B: N x K row-major is K x N column-major (ld K), used transposed (TRANSA = T);
//   B' = the op's A: M x K row-major is K x M column-major (ld K), used as it is (TRANSB = N);
//   D' = the op's D: M x N row-major is N x M column-major (ld N).
// So the operands are used in place (no copies: both are K-major, what FP8 needs), and the
// scales swap sides: cuBLASLt's A scale is the op's scale_b, its B scale the op's scale_a.
// The block layouts of ch05.cuh are the ones cuBLASLt reads: VEC128 on B' (K x M, inner K):
// one scale per 128 of K per column, the M columns running fastest; BLK128x128 on A' (K x N):
// one per 128 x 128 block, K's blocks fastest, rows of ceil(K / 128) rounded up to 4.
//
// When cuBLASLt offers no algorithm for a shape (or declines it when called), or the GPU has
// no FP8 tensor cores, a plain CUDA-core kernel computes the same thing (exact products, FP32
// sums, block by block): correct and slow; the variant's note says so. Edge cases: M == 0 or
// N == 0 launch nothing; bad K or N are refused (check_fp8_gemm_args) before any work.
//
// Caches, per device: one handle, one 32 MiB workspace, one plan (descriptor, layouts, the
// heuristic's algorithm) per (M, N, K, blocked). The scale pointers are set on the descriptor
// at each call (they may change between calls).
#include <cublasLt.h>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "ch05.cuh"
#include "declare/op.cuh"
#include "cublaslt_common.cuh"
#include "runtime/buffers.cuh"
#include "runtime/cublaslt_check.cuh"
#include "runtime/errors.cuh"

namespace ch05::reference {
namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;
constexpr int kHeuristicResults = 8;

using namespace lt;  // cuBLASLt's owners, make_layout, device_state_of: cublaslt_common.cuh

struct Plan {
  bool usable = false;  // false: the CUDA-core kernel
  MatmulDesc desc;
  Layout a, b, d;  // cuBLASLt's A' (the op's B), B' (the op's A), C and D
  cublasLtMatmulAlgo_t algo{};
};

using PlanKey = std::tuple<int, int, int, bool>;  // M, N, K, blocked

struct DeviceState {
  LtHandle handle;
  Preference preference;
  wb::DeviceBuffer<unsigned char> workspace;
  std::map<PlanKey, std::unique_ptr<Plan>> plans;
};

std::mutex& state_mutex() {
  static std::mutex m;
  return m;
}

// The current device's state (lt::device_state_of: made on first use, never destroyed).
DeviceState& device_state() { return lt::device_state_of<DeviceState>(kWorkspaceBytes); }

bool is_refusal(cublasStatus_t status) {
  return status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH ||
         status == CUBLAS_STATUS_INVALID_VALUE;
}

// The scale pointers go on the descriptor: at planning time any non-null device pointer will
// do (the heuristic looks at the modes, not the values); each call sets the real ones.
void set_scales(cublasLtMatmulDesc_t desc, const float* scale_a, const float* scale_b) {
  const void* a_side = scale_b;  // cuBLASLt's A is the op's B
  const void* b_side = scale_a;
  CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_side, sizeof a_side));
  CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_side, sizeof b_side));
}

std::unique_ptr<Plan> build_plan(DeviceState& s, const PlanKey& key, const float* scale_a, const float* scale_b) {
  const auto [M, N, K, blocked] = key;
  auto p = std::make_unique<Plan>();
  int device = 0, major = 0, minor = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (major * 10 + minor < 89) return p;  // no FP8 tensor cores

  cublasLtMatmulDesc_t desc = nullptr;
  CUBLASLT_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  p->desc.reset(desc);
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
  CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
  if (blocked) {
    const int32_t a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;  // the weights (the op's B)
    const int32_t b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;      // the activations (the op's A)
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &a_mode, sizeof a_mode));
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &b_mode, sizeof b_mode));
  }
  set_scales(desc, scale_a, scale_b);
  p->a = make_layout(CUDA_R_8F_E4M3, K, N, K);
  p->b = make_layout(CUDA_R_8F_E4M3, K, M, K);
  p->d = make_layout(CUDA_R_16BF, N, M, N);

  cublasLtMatmulHeuristicResult_t results[kHeuristicResults] = {};
  int count = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(s.handle.get(), desc, p->a.get(), p->b.get(), p->d.get(), p->d.get(),
                                     s.preference.get(), kHeuristicResults, results, &count);
  if (is_refusal(status)) return p;
  if (status != CUBLAS_STATUS_SUCCESS)
    wb::throw_cublaslt_error(status, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
  for (int i = 0; i < count; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= kWorkspaceBytes) {
      p->algo = results[i].algo;
      p->usable = true;
      break;
    }
  }
  return p;
}

// --- the CUDA-core fallback --------------------------------------------------------------------

constexpr int kTile = 16;  // 16 x 16 outputs per block, K in steps of 16 (128 is a multiple)

// D = A * B^T with per-tensor or per-block scales: products of decoded E4M3 values (exact in
// FP32), FP32 sums per block of 128 along K, scaled and added into an FP32 total.
__global__ void fp8_gemm_simple_kernel(int M, int N, int K, const __nv_fp8_e4m3* __restrict__ A,
                                       const __nv_fp8_e4m3* __restrict__ B, const float* __restrict__ scale_a,
                                       const float* __restrict__ scale_b, bool blocked, __nv_bfloat16* __restrict__ D) {
  __shared__ float a_tile[kTile][kTile + 1];  // (16 rows of A, 16 along K)
  __shared__ float b_tile[kTile][kTile + 1];  // (16 rows of B, 16 along K)
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int i = blockIdx.y * kTile + ty, j = blockIdx.x * kTile + tx;
  const int ld_b = fp8_scale_b_ld(K);
  float total = 0.0f, part = 0.0f;
  for (int p0 = 0; p0 < K; p0 += kTile) {  // K is a multiple of 16
    const int ra = blockIdx.y * kTile + ty, rb = blockIdx.x * kTile + ty;
    a_tile[ty][tx] = ra < M ? float(A[size_t(ra) * K + p0 + tx]) : 0.0f;
    b_tile[ty][tx] = rb < N ? float(B[size_t(rb) * K + p0 + tx]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int q = 0; q < kTile; ++q) part += a_tile[ty][q] * b_tile[tx][q];
    __syncthreads();
    const bool block_end = (p0 + kTile) % kFp8ScaleBlock == 0 || p0 + kTile == K;
    if (block_end) {
      const int kb = p0 / kFp8ScaleBlock;
      if (blocked && i < M && j < N) {
        total += part * scale_a[size_t(kb) * M + i] * scale_b[size_t(j / kFp8ScaleBlock) * ld_b + kb];
      } else {
        total += part;
      }
      part = 0.0f;
    }
  }
  if (i < M && j < N) D[size_t(i) * N + j] = __float2bfloat16_rn(blocked ? total : total * scale_a[0] * scale_b[0]);
}

void run_simple(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
                const float* scale_b, bool blocked, __nv_bfloat16* D, cudaStream_t stream) {
  const dim3 grid((N + kTile - 1) / kTile, (M + kTile - 1) / kTile), block(kTile, kTile);
  fp8_gemm_simple_kernel<<<grid, block, 0, stream>>>(M, N, K, A, B, scale_a, scale_b, blocked, D);
  WB_CHECK_LAUNCH();
}

void run(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
         const float* scale_b, bool blocked, __nv_bfloat16* D, cudaStream_t stream) {
  check_fp8_gemm_args(M, N, K, blocked ? "cublaslt_fp8_block" : "cublaslt_fp8");
  if (M == 0 || N == 0) return;
  std::lock_guard<std::mutex> lock(state_mutex());
  DeviceState& s = device_state();
  const PlanKey key{M, N, K, blocked};
  std::unique_ptr<Plan>& slot = s.plans[key];
  if (!slot) slot = build_plan(s, key, scale_a, scale_b);
  Plan& p = *slot;
  if (p.usable) {
    set_scales(p.desc.get(), scale_a, scale_b);
    const float alpha = 1.0f, beta = 0.0f;  // beta = 0: C is not read; D stands in for it
    const cublasStatus_t status =
        cublasLtMatmul(s.handle.get(), p.desc.get(), &alpha, B, p.a.get(), A, p.b.get(), &beta, D, p.d.get(), D,
                       p.d.get(), &p.algo, s.workspace.data(), s.workspace.bytes(), stream);
    if (status == CUBLAS_STATUS_SUCCESS) return;
    if (!is_refusal(status)) wb::throw_cublaslt_error(status, "cublasLtMatmul", __FILE__, __LINE__);
    p.usable = false;  // declined at run time: the kernel from now on
  }
  run_simple(M, N, K, A, B, scale_a, scale_b, blocked, D, stream);
}

}  // namespace

void cublaslt_fp8(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
                  const float* scale_b, __nv_bfloat16* D, cudaStream_t stream) {
  run(M, N, K, A, B, scale_a, scale_b, false, D, stream);
}

void cublaslt_fp8_block(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
                        const float* scale_b, __nv_bfloat16* D, cudaStream_t stream) {
  run(M, N, K, A, B, scale_a, scale_b, true, D, stream);
}

}  // namespace ch05::reference

namespace ch05 {

// cuBLASLt's FP8 kernels need FP8 tensor cores (compute capability 8.9 and 9.x); its block
// scaling modes are Hopper's (9.0): before it the block-scaled reference is skipped, naming
// the compute capability; on a newer GPU cuBLASLt declines them and the plain kernel runs
// (the note says so).
WB_VARIANTS(ch05_reference_fp8, wb::Role::Reference) {
  return {
      wb::variant("gemm_fp8/e4m3_bf16", "cublaslt_fp8", &reference::cublaslt_fp8)
          .is_library()
          .needs_cc(89)
          .with_note("cuBLASLt FP8 (TN, per-tensor scale pointers); a CUDA-core kernel where it declines a shape"),
      wb::variant("gemm_fp8_block/e4m3_bf16", "cublaslt_fp8_block", &reference::cublaslt_fp8_block)
          .is_library()
          .needs_cc(90)
          .with_note("cuBLASLt VEC128_32F / BLK128x128_32F scales (Hopper); a CUDA-core kernel where it declines"),
  };
}

}  // namespace ch05
