// Running a cuDNN backend graph, as the references of chapters 6 and 8 do: the plan executed
// on a variant pack of device pointers, and the versions of cuDNN a run used.
//
// The cuDNN library found at run time may be newer than the headers a program was built
// against (the backend API keeps working across 9.x), so a benchmark names both versions
// beside its cuDNN reference.
#pragma once
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cudnn_backend.cuh"
#include "runtime/cudnn_check.cuh"

namespace wb {

// For example "cuDNN 9.14.0 (runtime), built against 9.19.0".
inline std::string cudnn_version_text() {
  const size_t v = cudnnGetVersion();  // major * 10000 + minor * 100 + patch from 9.0 on
  auto text = [](size_t x) {
    return std::to_string(x / 10000) + "." + std::to_string(x / 100 % 100) + "." + std::to_string(x % 100);
  };
  return "cuDNN " + text(v) + " (runtime), built against " + text(CUDNN_VERSION);
}

// Executes a finalized plan: tensor uids[i] at ptrs[i] (a by-value scalar: a host address),
// with `workspace` as the plan's scratch, on the stream the handle is set to.
inline void execute_plan(cudnnHandle_t handle, cudnnBackendDescriptor_t plan, const std::vector<int64_t>& uids,
                         const std::vector<void*>& ptrs, void* workspace) {
  cudnn::Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids.data(), static_cast<int64_t>(uids.size()));
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, ptrs.data(), static_cast<int64_t>(ptrs.size()));
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace);
  CUDNN_CHECK(pack.finalize());
  CUDNN_CHECK(cudnnBackendExecute(handle, plan, pack.get()));
}

}  // namespace wb
