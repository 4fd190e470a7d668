// What chapter 5's two cuBLASLt references (cublaslt_int8.cu, cublaslt_fp8.cu) share: owners of
// cuBLASLt's objects, the per-device handle with its 32 MiB workspace, a "TN" matmul
// descriptor, and the heuristic's first algorithm that fits the workspace.
#pragma once
#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <type_traits>

#include "runtime/buffers.cuh"
#include "runtime/cublaslt_check.cuh"
#include "runtime/errors.cuh"

namespace ch05::reference::lt {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;
constexpr int kHeuristicResults = 8;

template <class T, cublasStatus_t (*Destroy)(T)>
struct LtDestroy {
  void operator()(T p) const noexcept { Destroy(p); }  // errors at teardown are not reported
};
template <class T, cublasStatus_t (*Destroy)(T)>
using LtOwner = std::unique_ptr<std::remove_pointer_t<T>, LtDestroy<T, Destroy>>;

using LtHandle = LtOwner<cublasLtHandle_t, cublasLtDestroy>;
using MatmulDesc = LtOwner<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using Layout = LtOwner<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using Preference = LtOwner<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

inline Layout make_layout(cudaDataType_t type, int rows, int cols, int ld) {
  cublasLtMatrixLayout_t layout = nullptr;
  CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&layout, type, rows, cols, ld));
  return Layout(layout);
}

// One device's cuBLASLt handle, a preference that allows kWorkspaceBytes of workspace, and
// that workspace (any shape may use it; calls on one device do not overlap in time).
struct Context {
  LtHandle handle;
  Preference preference;
  wb::DeviceBuffer<unsigned char> workspace;
};

inline void init(Context& c) {
  cublasLtHandle_t handle = nullptr;
  CUBLASLT_CHECK(cublasLtCreate(&handle));
  c.handle.reset(handle);
  cublasLtMatmulPreference_t pref = nullptr;
  CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  c.preference.reset(pref);
  const uint64_t max_workspace = kWorkspaceBytes;
  CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace,
                                                      sizeof max_workspace));
  c.workspace = wb::DeviceBuffer<unsigned char>(kWorkspaceBytes);
}

// The current device's State (a Context and the caches a reference keeps with it), made and
// initialised on first use. Never destroyed: tearing cuBLASLt down at exit (cuBLASLt calls,
// cudaFree) may run after the CUDA runtime has shut down. Callers serialise access.
template <class State>
State& per_device() {
  static auto* states = new std::map<int, std::unique_ptr<State>>();
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  std::unique_ptr<State>& slot = (*states)[device];
  if (!slot) {
    auto s = std::make_unique<State>();
    init(*s);
    slot = std::move(s);
  }
  return *slot;
}

// The "TN" descriptor both references need: cuBLASLt's A transposed, its B as it is.
inline MatmulDesc make_tn_desc(cublasComputeType_t compute, cudaDataType_t scale) {
  cublasLtMatmulDesc_t desc = nullptr;
  CUBLASLT_CHECK(cublasLtMatmulDescCreate(&desc, compute, scale));
  MatmulDesc owner(desc);
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
  CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
  return owner;
}

// The heuristic's first algorithm (of kHeuristicResults) that succeeds within the workspace,
// for D = op(A) op(B) with C laid out as D; nullopt when it offers none, or declines with a
// status `refusal` says is a refusal. Any other failure throws.
inline std::optional<cublasLtMatmulAlgo_t> first_algorithm(const Context& c, cublasLtMatmulDesc_t desc,
                                                           cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                           cublasLtMatrixLayout_t d, bool (*refusal)(cublasStatus_t)) {
  cublasLtMatmulHeuristicResult_t results[kHeuristicResults] = {};
  int count = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(c.handle.get(), desc, a, b, d, d, c.preference.get(),
                                                               kHeuristicResults, results, &count);
  if (refusal(status)) return std::nullopt;
  if (status != CUBLAS_STATUS_SUCCESS)
    wb::throw_cublaslt_error(status, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
  for (int i = 0; i < count; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= kWorkspaceBytes)
      return results[i].algo;
  }
  return std::nullopt;
}

}  // namespace ch05::reference::lt
