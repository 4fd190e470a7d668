// Chapter 5's INT8 reference on cuBLASLt: D = A * B (+ C) with int8 inputs, int32
// accumulation and int32 output, every matrix row-major and packed as in ch05.cuh.
//
// Why not cublasGemmEx: on an H100 its INT8 path ran 4096^3 at about a tenth of the
// measured INT8 mma ceiling, which makes it no yardstick. cuBLASLt's integer tensor-core
// (IMMA) kernels are fast, but with ordinary column-major data they take one form only:
//   * compute type CUBLAS_COMPUTE_32I, scale type CUDA_R_32I (alpha and beta are int32);
//   * "TN": cuBLASLt's A transposed, its B not;
//   * m and k multiples of 4, leading dimensions multiples of 4, pointers aligned (4 bytes
//     at least, 16 or more for speed; the heuristic assumes 256 unless told otherwise).
//
// The mapping. cuBLASLt computes, column-major, D' (m x n) = op(A') (m x k) * op(B') (k x n).
// A row-major M x N matrix is the column-major N x M matrix of its transpose, so the
// harness's D = A * B is, column-major, D^T = B^T * A^T:
//   m = N, n = M, k = K;
//   A' = the harness's B, but stored as B^T (an N x K row-major copy, i.e. a K x N
//        column-major matrix with ld K), used transposed (TRANSA = T)   <- arranged once;
//   B' = the harness's A as it is: row-major M x K is column-major K x M with ld K (N);
//   C', D' = the harness's C and D as they are: column-major N x M with ld N.
// Only B has to be re-arranged: it plays the part of the weights (static), so the copy
// B^T is made by cublaslt_i8_prepare, outside the timed region, and reused by every call
// with the same B pointer and shape. A, C and D are used in place.
//
// Paths (cublaslt_i8_path says which one a shape takes):
//   direct  N and K multiples of 4, A, C and D 256-byte aligned, and cuBLASLt offers an
//           algorithm: one cublasLtMatmul on the caller's buffers (and B^T).
//   padded  otherwise: A (and C) are copied into zero-padded scratch with N and K rounded
//           up to 4 (then, if cuBLASLt still declines, M, N and K to 16, then to 64); B^T is
//           arranged with the same padding, full of zeros outside B. Zeros in K add nothing
//           to a sum, so the M x N corner of the padded product, copied back into D, is exact.
//   kernel  a GPU without integer tensor cores (or a cuBLASLt that declines every padding):
//           a plain tiled integer kernel, exact but slow.
// Edge cases: M == 0 or N == 0 launch nothing; K == 0 writes D = C (or zeros).
//
// Caches, per device: one cuBLASLt handle, one 32 MiB workspace (any shape), plans
// (descriptors, layouts, the heuristic's algorithm) per (M, N, K, with C, aligned), the
// arranged B^T per shape, and the padded scratch per padded size. Scratch holds operands,
// never results. Calls on one device are assumed not to overlap in time (they share the
// workspace and scratch): the chapter runs one GEMM at a time.
#include "cublaslt_int8.cuh"

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>

#include "cublaslt_common.cuh"
#include "runtime/buffers.cuh"
#include "runtime/cublaslt_check.cuh"
#include "runtime/errors.cuh"
#include "device/math.cuh"

namespace ch05::reference {
namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;
constexpr uintptr_t kAlignment = 256;  // what cuBLASLt's heuristic assumes of A, B, C, D by default
constexpr int kHeuristicResults = 8;

using namespace lt;  // cuBLASLt's owners, make_layout, device_state_of: cublaslt_common.cuh

// --- plans ------------------------------------------------------------------------------

enum class Route { Direct, Padded, Kernel };

// The ways to run a shape, tried in this order until cuBLASLt offers an algorithm.
struct Candidate {
  Route route;
  int pad_m, pad_nk;  // round M up to pad_m, N and K up to pad_nk
};
constexpr Candidate kCandidates[] = {{Route::Direct, 1, 1},
                                     {Route::Padded, 1, 4},
                                     {Route::Padded, 16, 16},
                                     {Route::Padded, 64, 64},
                                     {Route::Kernel, 1, 1}};
constexpr int kCandidateCount = sizeof kCandidates / sizeof kCandidates[0];

using Shape = std::tuple<int, int, int>;                // M, N, K
using PlanKey = std::tuple<int, int, int, bool, bool>;  // M, N, K, with C, pointers aligned

// Zero-padded copies of A (Mp x Kp) and of C / the result (Mp x Np) for the padded route.
struct Scratch {
  wb::DeviceBuffer<int8_t> a;
  wb::DeviceBuffer<int32_t> d;
};

struct Plan {
  Route route = Route::Kernel;
  int candidate = kCandidateCount - 1;  // index into kCandidates
  int Mp = 0, Np = 0, Kp = 0;           // the sizes cuBLASLt multiplies (M, N, K when direct)
  MatmulDesc desc;
  Layout bt_layout;  // cuBLASLt's A: B^T, stored Kp x Np column-major (ld Kp), used transposed
  Layout a_layout;   // cuBLASLt's B: the harness's A, Kp x Mp column-major (ld Kp)
  Layout d_layout;   // cuBLASLt's C and D: Np x Mp column-major (ld Np)
  cublasLtMatmulAlgo_t algo{};
  Scratch* scratch = nullptr;  // padded route only; owned by the device state
};

// B^T for one shape, with the padding of the plan that arranged it.
struct Arranged {
  wb::DeviceBuffer<int8_t> bt;  // Np x Kp row-major, zeros outside B^T
  const int8_t* source = nullptr;
  int Np = 0, Kp = 0;
};

struct DeviceState {
  LtHandle handle;
  Preference preference;
  wb::DeviceBuffer<int8_t> workspace;
  std::map<PlanKey, std::unique_ptr<Plan>> plans;
  std::map<Shape, Arranged> arranged;
  std::map<Shape, Scratch> scratch;  // by padded size (Mp, Np, Kp)
};

std::mutex& state_mutex() {
  static std::mutex m;
  return m;
}

// The current device's state (lt::device_state_of: made on first use, never destroyed).
DeviceState& device_state() { return lt::device_state_of<DeviceState>(kWorkspaceBytes); }

bool is_aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kAlignment == 0; }

// Statuses with which cuBLASLt declines a problem (rather than reports a fault).
bool is_refusal(cublasStatus_t status) {
  return status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH;
}

// Descriptors and layouts for the plan's sizes and the heuristic's first usable algorithm;
// false when cuBLASLt has none for them.
bool find_algorithm(DeviceState& s, Plan& p) {
  cublasLtMatmulDesc_t desc = nullptr;
  CUBLASLT_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32I, CUDA_R_32I));
  p.desc.reset(desc);
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
  CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
  p.bt_layout = make_layout(CUDA_R_8I, p.Kp, p.Np, p.Kp);
  p.a_layout = make_layout(CUDA_R_8I, p.Kp, p.Mp, p.Kp);
  p.d_layout = make_layout(CUDA_R_32I, p.Np, p.Mp, p.Np);

  cublasLtMatmulHeuristicResult_t results[kHeuristicResults] = {};
  int count = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(s.handle.get(), desc, p.bt_layout.get(), p.a_layout.get(), p.d_layout.get(),
                                     p.d_layout.get(), s.preference.get(), kHeuristicResults, results, &count);
  if (is_refusal(status)) return false;
  if (status != CUBLAS_STATUS_SUCCESS) {
    wb::throw_cublaslt_error(status, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
  }
  for (int i = 0; i < count; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= kWorkspaceBytes) {
      p.algo = results[i].algo;
      return true;
    }
  }
  return false;
}

Scratch& scratch_for(DeviceState& s, int Mp, int Np, int Kp, cudaStream_t stream) {
  Scratch& x = s.scratch[Shape{Mp, Np, Kp}];
  if (x.a.size() == 0) {
    x.a = wb::DeviceBuffer<int8_t>(size_t(Mp) * Kp);
    x.d = wb::DeviceBuffer<int32_t>(size_t(Mp) * Np);
    // Only B^T's zero padding matters for the sums; A's is zeroed too, so the padded
    // rows and columns hold no leftovers from another shape.
    CUDA_CHECK(cudaMemsetAsync(x.a.data(), 0, x.a.bytes(), stream));
    CUDA_CHECK(cudaMemsetAsync(x.d.data(), 0, x.d.bytes(), stream));
    // Planning is untimed; waiting here also orders the zeros before any later use of the
    // scratch on another stream (cublaslt_i8_path plans on the default stream).
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  return x;
}

// The first way to run `key` from kCandidates[first] on. Never fails: the last is the kernel.
std::unique_ptr<Plan> build_plan(DeviceState& s, const PlanKey& key, int first, cudaStream_t stream) {
  const auto [M, N, K, with_C, aligned] = key;
  for (int c = first; c < kCandidateCount; ++c) {
    const Candidate& cand = kCandidates[c];
    auto p = std::make_unique<Plan>();
    p->route = cand.route;
    p->candidate = c;
    if (cand.route == Route::Kernel) return p;
    if (cand.route == Route::Direct && !(aligned && N % 4 == 0 && K % 4 == 0)) continue;
    p->Mp = wb::round_up(M, cand.pad_m);
    p->Np = wb::round_up(N, cand.pad_nk);
    p->Kp = wb::round_up(K, cand.pad_nk);
    if (!find_algorithm(s, *p)) continue;
    if (cand.route == Route::Padded) p->scratch = &scratch_for(s, p->Mp, p->Np, p->Kp, stream);
    return p;
  }
  return nullptr;  // not reached: the last candidate is the kernel
}

Plan& plan_for(DeviceState& s, const PlanKey& key, cudaStream_t stream) {
  std::unique_ptr<Plan>& slot = s.plans[key];
  if (!slot) slot = build_plan(s, key, 0, stream);
  return *slot;
}

// --- kernels --------------------------------------------------------------------------

constexpr int kTile = 32;

// Bt (Np x Kp, row-major) = B^T, zero outside B's K x N. One 32 x 32 tile per block step,
// through shared memory so that both the reads of B and the writes of Bt are coalesced.
__global__ void transpose_pad_kernel(int N, int K, int Np, int Kp, const int8_t* __restrict__ B,
                                     int8_t* __restrict__ Bt) {
  __shared__ int8_t tile[kTile][kTile + 1];
  const int tiles_k = (Kp + kTile - 1) / kTile;
  const int j0 = blockIdx.x * kTile;
  for (int tk = blockIdx.y; tk < tiles_k; tk += gridDim.y) {
    const int p0 = tk * kTile;
    for (int r = threadIdx.y; r < kTile; r += blockDim.y) {
      const int p = p0 + r, j = j0 + threadIdx.x;
      tile[r][threadIdx.x] = (p < K && j < N) ? B[size_t(p) * N + j] : int8_t(0);
    }
    __syncthreads();
    for (int r = threadIdx.y; r < kTile; r += blockDim.y) {
      const int j = j0 + r, p = p0 + threadIdx.x;
      if (j < Np && p < Kp) Bt[size_t(j) * Kp + p] = tile[threadIdx.x][r];
    }
    __syncthreads();
  }
}

constexpr int kSimpleTile = 16;

// The last resort: D = A * B (+ C) with integer multiply-adds on CUDA cores, row-major
// operands read as they are. Exact; used only when cuBLASLt runs none of the paddings.
__global__ void gemm_i8_simple_kernel(int M, int N, int K, const int8_t* __restrict__ A, const int8_t* __restrict__ B,
                                      const int32_t* __restrict__ C, int32_t* __restrict__ D) {
  __shared__ int a_tile[kSimpleTile][kSimpleTile];
  __shared__ int b_tile[kSimpleTile][kSimpleTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int j = blockIdx.x * kSimpleTile + tx;
  const int tiles_m = (M + kSimpleTile - 1) / kSimpleTile;
  for (int tm = blockIdx.y; tm < tiles_m; tm += gridDim.y) {
    const int i = tm * kSimpleTile + ty;
    int acc = 0;
    for (int p0 = 0; p0 < K; p0 += kSimpleTile) {
      a_tile[ty][tx] = (i < M && p0 + tx < K) ? A[size_t(i) * K + p0 + tx] : 0;
      b_tile[ty][tx] = (p0 + ty < K && j < N) ? B[size_t(p0 + ty) * N + j] : 0;
      __syncthreads();
      for (int q = 0; q < kSimpleTile; ++q) acc += a_tile[ty][q] * b_tile[q][tx];
      __syncthreads();
    }
    if (i < M && j < N) D[size_t(i) * N + j] = acc + (C != nullptr ? C[size_t(i) * N + j] : 0);
  }
}

unsigned capped_grid(long long tiles) { return static_cast<unsigned>(tiles < 65535 ? tiles : 65535); }

void arrange(Arranged& rec, const Plan& p, int N, int K, const int8_t* B, cudaStream_t stream) {
  const size_t count = size_t(p.Np) * p.Kp;
  if (rec.bt.size() != count) rec.bt = wb::DeviceBuffer<int8_t>(count);
  const dim3 block(kTile, 8);
  const dim3 grid((p.Np + kTile - 1) / kTile, capped_grid((p.Kp + kTile - 1) / kTile));
  transpose_pad_kernel<<<grid, block, 0, stream>>>(N, K, p.Np, p.Kp, B, rec.bt.data());
  WB_CHECK_LAUNCH();
  rec.source = B;
  rec.Np = p.Np;
  rec.Kp = p.Kp;
}

// B^T as the plan needs it: the prepared copy if it came from this B with this padding,
// else arranged now (inline: correct, but inside whatever the caller times).
const int8_t* arranged_for(DeviceState& s, const Plan& p, int M, int N, int K, const int8_t* B, cudaStream_t stream) {
  Arranged& rec = s.arranged[Shape{M, N, K}];
  if (rec.source != B || rec.Np != p.Np || rec.Kp != p.Kp) arrange(rec, p, N, K, B, stream);
  return rec.bt.data();
}

cublasStatus_t run_matmul(DeviceState& s, const Plan& p, const int8_t* bt, const int8_t* a, const int32_t* c,
                          int32_t* d, bool with_C, cudaStream_t stream) {
  const int32_t alpha = 1, beta = with_C ? 1 : 0;
  // With beta = 0, C is not read; D stands in for it.
  return cublasLtMatmul(s.handle.get(), p.desc.get(), &alpha, bt, p.bt_layout.get(), a, p.a_layout.get(), &beta,
                        with_C ? c : d, p.d_layout.get(), d, p.d_layout.get(), &p.algo, s.workspace.data(),
                        s.workspace.bytes(), stream);
}

std::string describe(const Plan& p) {
  switch (p.route) {
    case Route::Direct:
      return "cublasLt direct";
    case Route::Padded:
      return "cublasLt on copies padded to " + std::to_string(p.Mp) + " x " + std::to_string(p.Np) + " x " +
             std::to_string(p.Kp);
    case Route::Kernel:
      return "integer kernel (cuBLASLt took no padding)";
  }
  return "?";
}

}  // namespace

void cublaslt_i8_prepare(int M, int N, int K, const int8_t* A, const int8_t* B, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return;
  std::lock_guard<std::mutex> lock(state_mutex());
  DeviceState& s = device_state();
  // Plans for both forms of the call, so that no heuristic query runs in the timed one.
  // C and D are not known here; cudaMalloc'd ones are aligned, as A is checked to be.
  const bool aligned = is_aligned(A);
  plan_for(s, PlanKey{M, N, K, true, aligned}, stream);
  const Plan& p = plan_for(s, PlanKey{M, N, K, false, aligned}, stream);
  if (p.route == Route::Kernel) return;  // reads B as it is
  // Always re-arranged: the contents behind the same pointer may have changed.
  arrange(s.arranged[Shape{M, N, K}], p, N, K, B, stream);
}

void cublaslt_i8(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C, int32_t* D,
                 cudaStream_t stream) {
  if (M <= 0 || N <= 0) return;
  const size_t mn = size_t(M) * N;
  if (K <= 0) {  // an empty sum: D = C, or zeros
    if (C != nullptr) {
      CUDA_CHECK(cudaMemcpyAsync(D, C, sizeof(int32_t) * mn, cudaMemcpyDeviceToDevice, stream));
    } else {
      CUDA_CHECK(cudaMemsetAsync(D, 0, sizeof(int32_t) * mn, stream));
    }
    return;
  }
  std::lock_guard<std::mutex> lock(state_mutex());
  DeviceState& s = device_state();
  const bool with_C = C != nullptr;
  const bool aligned = is_aligned(A) && is_aligned(D) && (!with_C || is_aligned(C));
  const PlanKey key{M, N, K, with_C, aligned};
  for (;;) {
    const Plan& p = plan_for(s, key, stream);
    if (p.route == Route::Kernel) {
      const dim3 block(kSimpleTile, kSimpleTile);
      const dim3 grid((N + kSimpleTile - 1) / kSimpleTile, capped_grid((M + kSimpleTile - 1) / kSimpleTile));
      gemm_i8_simple_kernel<<<grid, block, 0, stream>>>(M, N, K, A, B, C, D);
      WB_CHECK_LAUNCH();
      return;
    }
    const int8_t* bt = arranged_for(s, p, M, N, K, B, stream);
    cublasStatus_t status;
    if (p.route == Route::Direct) {
      status = run_matmul(s, p, bt, A, C, D, with_C, stream);
    } else {
      // Padded: copy A (and C) into the zero-padded scratch, multiply, copy D's part back.
      Scratch& x = *p.scratch;
      CUDA_CHECK(cudaMemcpy2DAsync(x.a.data(), p.Kp, A, K, K, M, cudaMemcpyDeviceToDevice, stream));
      if (with_C) {
        CUDA_CHECK(cudaMemcpy2DAsync(x.d.data(), sizeof(int32_t) * p.Np, C, sizeof(int32_t) * N, sizeof(int32_t) * N, M,
                                     cudaMemcpyDeviceToDevice, stream));
      }
      status = run_matmul(s, p, bt, x.a.data(), x.d.data(), x.d.data(), with_C, stream);
      if (status == CUBLAS_STATUS_SUCCESS) {
        CUDA_CHECK(cudaMemcpy2DAsync(D, sizeof(int32_t) * N, x.d.data(), sizeof(int32_t) * p.Np, sizeof(int32_t) * N, M,
                                     cudaMemcpyDeviceToDevice, stream));
      }
    }
    if (status == CUBLAS_STATUS_SUCCESS) return;
    if (!is_refusal(status)) wb::throw_cublaslt_error(status, "cublasLtMatmul", __FILE__, __LINE__);
    // Declined at run time after all: replace the plan by the next way down the list.
    const int next = p.candidate + 1;
    s.plans[key] = build_plan(s, key, next, stream);
  }
}

std::string cublaslt_i8_path(int M, int N, int K, bool with_C, bool aligned) {
  if (M <= 0 || N <= 0) return "nothing (empty D)";
  if (K <= 0) return with_C ? "copy of C (K == 0)" : "zeros (K == 0)";
  std::lock_guard<std::mutex> lock(state_mutex());
  DeviceState& s = device_state();
  return describe(plan_for(s, PlanKey{M, N, K, with_C, aligned}, nullptr));
}

}  // namespace ch05::reference
