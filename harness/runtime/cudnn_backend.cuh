// The pieces every graph built on cuDNN's backend API needs (chapters 6 and 8): an owner for
// a backend descriptor, cuDNN's last error text, a tensor descriptor, and the search for an
// execution plan (heuristics mode A, then FALLBACK, each engine configuration in turn until
// one finalizes). Header-only: only the references that include it link cuDNN.
#pragma once
#include <cudnn.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cudnn_check.cuh"

namespace wb::cudnn {

// One backend descriptor, destroyed with its owner.
class Descriptor {
 public:
  explicit Descriptor(cudnnBackendDescriptorType_t type) { CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d_)); }
  ~Descriptor() {
    if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
  }
  Descriptor(Descriptor&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  Descriptor& operator=(Descriptor&& o) noexcept {
    std::swap(d_, o.d_);
    return *this;
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }

  template <class T>
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T* values, int64_t count = 1) {
    CUDNN_CHECK(cudnnBackendSetAttribute(d_, name, type, count, values));
  }
  void set_desc(cudnnBackendAttributeName_t name, const Descriptor& other) {
    cudnnBackendDescriptor_t o = other.get();
    CUDNN_CHECK(cudnnBackendSetAttribute(d_, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o));
  }
  // Finalize's status, not thrown: "not supported" is an answer here, not an error.
  cudnnStatus_t finalize() { return cudnnBackendFinalize(d_); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// The status's name and, where this cuDNN keeps one, the text of its last error.
inline std::string last_message(cudnnStatus_t status) {
  std::string s = cudnnGetErrorString(status);
#if CUDNN_VERSION >= 90000
  char buf[1024] = {};
  cudnnGetLastErrorString(buf, sizeof buf);
  if (buf[0] != '\0') s += std::string(" (") + buf + ")";
#endif
  return s;
}

// A tensor descriptor: `uid` names it in the variant pack; `by_value` for a host scalar.
// Returns the finalize status in `status` (not CUDNN_STATUS_SUCCESS: the caller decides).
inline Descriptor tensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                         const std::vector<int64_t>& strides, cudnnStatus_t* status, bool by_value = false,
                         bool is_virtual = false) {
  Descriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const int64_t alignment = 16;
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type);
  t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.data(), static_cast<int64_t>(dims.size()));
  t.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.data(), static_cast<int64_t>(strides.size()));
  t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid);
  t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &alignment);
  if (by_value) {
    const bool yes = true;
    t.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, &yes);
  }
  if (is_virtual) {
    const bool yes = true;
    t.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &yes);
  }
  *status = t.finalize();
  return t;
}

// A finalized execution plan and the workspace bytes it needs.
struct FoundPlan {
  Descriptor plan{CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR};
  int64_t workspace_bytes = 0;
};

// Whether an engine configuration's engine carries one of the `refused` numerical notes (an
// engine that cannot say is not trusted).
inline bool has_note(cudnnBackendDescriptor_t cfg, const std::vector<cudnnBackendNumericalNote_t>& refused) {
  if (refused.empty()) return false;
  Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t count = 0;
  if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &e) !=
      CUDNN_STATUS_SUCCESS) {
    return true;
  }
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t n = 0;
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes) != CUDNN_STATUS_SUCCESS) {
    return true;
  }
  for (int64_t i = 0; i < n; ++i) {
    for (auto r : refused) {
      if (notes[i] == r) return true;
    }
  }
  return false;
}

// The first engine configuration of a finalized operation graph that finalizes as a plan:
// heuristics mode A first, then FALLBACK, passing over engines with a `refused` numerical
// note (TF32, reduced-precision sums, ...: a reference must not round more than the op
// allows). nullopt when none does; `said` then collects what cuDNN answered at each step,
// for the caller's "no engine" message.
inline std::optional<FoundPlan> first_plan(cudnnHandle_t handle, const Descriptor& op_graph,
                                           const std::vector<cudnnBackendNumericalNote_t>& refused, std::string* said) {
  for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    const char* name = mode == CUDNN_HEUR_MODE_A ? "heuristics A" : "heuristics FALLBACK";
    Descriptor heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, op_graph);
    heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode);
    cudnnStatus_t st = heur.finalize();
    if (st != CUDNN_STATUS_SUCCESS) {
      *said += std::string(" ") + name + ": " + last_message(st) + ";";
      continue;
    }
    int64_t count = 0;
    CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                         &count, nullptr));
    std::vector<Descriptor> configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < count; ++i) {
      configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
      raw.push_back(configs.back().get());
    }
    int64_t got = 0;
    if (count > 0) {
      CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                           count, &got, raw.data()));
    }
    if (got == 0) {
      *said += std::string(" ") + name + ": no engine configuration;";
      continue;
    }
    int skipped = 0;
    for (int64_t i = 0; i < got; ++i) {
      if (has_note(raw[i], refused)) {
        ++skipped;
        continue;
      }
      FoundPlan p;
      p.plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, &handle);
      p.plan.set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, configs[i]);
      st = p.plan.finalize();
      if (st != CUDNN_STATUS_SUCCESS) {
        *said += std::string(" ") + name + " config " + std::to_string(i) + ": " + cudnnGetErrorString(st) + ";";
        continue;
      }
      int64_t n = 0;
      CUDNN_CHECK(cudnnBackendGetAttribute(p.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                           &n, &p.workspace_bytes));
      return p;
    }
    if (skipped > 0) {
      *said += std::string(" ") + name + ": " + std::to_string(got) + " configurations, " + std::to_string(skipped) +
               " passed over for their numerical notes;";
    }
  }
  return std::nullopt;
}

inline std::optional<FoundPlan> first_plan(cudnnHandle_t handle, const Descriptor& op_graph, std::string* said) {
  return first_plan(handle, op_graph, {}, said);
}

}  // namespace wb::cudnn
