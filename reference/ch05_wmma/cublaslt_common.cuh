// What chapter 5's two cuBLASLt references (cublaslt_fp8.cu, cublaslt_int8.cu) share: owners
// of cuBLASLt objects, a matrix layout, and the per-device state (handle, workspace
// preference, workspace) that each keeps for the life of the process.
#pragma once
#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <type_traits>

#include "runtime/cublaslt_check.cuh"
#include "runtime/errors.cuh"

namespace ch05::reference::lt {

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

// The current device's State (members handle, preference, workspace: a wb::DeviceBuffer),
// made on first use with a workspace of `workspace_bytes`. One registry per State type,
// never destroyed: tearing it down at exit would call cuBLASLt and cudaFree after the CUDA
// runtime may already have shut down. The caller holds its own mutex.
template <class State>
State& device_state_of(size_t workspace_bytes) {
  static auto* states = new std::map<int, std::unique_ptr<State>>();
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  std::unique_ptr<State>& slot = (*states)[device];
  if (!slot) {
    auto s = std::make_unique<State>();
    cublasLtHandle_t handle = nullptr;
    CUBLASLT_CHECK(cublasLtCreate(&handle));
    s->handle.reset(handle);
    cublasLtMatmulPreference_t pref = nullptr;
    CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    s->preference.reset(pref);
    const uint64_t max_workspace = workspace_bytes;
    CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace,
                                                        sizeof max_workspace));
    s->workspace = decltype(s->workspace)(workspace_bytes);
    slot = std::move(s);
  }
  return *slot;
}

}  // namespace ch05::reference::lt
