// Chapter 6 reference ("variant 0"): cuDNN's normalisation forward through the backend API
// (cudnn.h: cudnnBackendCreateDescriptor / SetAttribute / Finalize / Execute).
//
// The graph, built once per (mode, type, N, C, ld) and cached with its plan and workspace:
//
//   tensors  x, y        dims (N, C, 1, 1), strides (ld, 1, ld, ld)      BF16 or FP32
//            scale, bias dims (1, C, 1, 1), strides (C, 1, C, C)         same type
//            mean, rstd  dims (N, 1, 1, 1), strides (1, 1, 1, 1)         FP32
//            epsilon     dims (1, 1, 1, 1), FP32, BY VALUE (the variant pack points at a
//                        host float, read when the plan executes)
//   operation NORM_FORWARD: mode LAYER_NORM (scale and bias, mean and inverse standard
//            deviation out) or RMS_NORM (scale only, inverse RMS out)
//   graph -> heuristics (mode A; FALLBACK if mode A gives nothing that finalizes) -> the
//            engine configurations in order until one finalizes as an execution plan.
//
// Phase: the interface wants mean and rstd written, and cuDNN writes them only in the
// TRAINING phase (INFERENCE writes y alone), so the launchers build the TRAINING phase.
// In this forward-only use the two compute the same y.
//
// The residual: cuDNN's norm has no residual input, so h = x + r is computed by a small add
// kernel first (unfused.cu's) and the norm reads h back: 5 passes over N x C, against 4
// for a fused kernel. That is the honest library pipeline. probe_fused_add() asks cuDNN
// for the one-graph alternative (a pointwise ADD whose output h feeds the norm) and says
// whether this version accepts it; the launchers do not depend on the answer.
//
// Versions: every attribute used here exists from cuDNN 9.0 on (checked against the 9.19
// headers; the GPU machines run 9.14). cudnn_version_text() names both versions.
#include <cudnn.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/cudnn_run.cuh"
#include "runtime/buffers.cuh"
#include "runtime/cudnn_backend.cuh"
#include "runtime/cudnn_check.cuh"
#include "runtime/errors.cuh"
#include "reference.cuh"

namespace ch06::reference {
namespace {

using wb::cudnn::Descriptor;

// --- RAII owners -------------------------------------------------------------------------

// --- names for messages ------------------------------------------------------------------

const char* mode_name(NormMode m) { return m == NormMode::LayerNorm ? "LayerNorm" : "RMSNorm"; }
const char* type_name(NormType t) { return t == NormType::F32 ? "FP32" : "BF16"; }

std::string shape_text(NormMode mode, NormType type, int N, int C, int ld) {
  return std::string("cuDNN NORM_FORWARD ") + mode_name(mode) + " " + type_name(type) + " N=" + std::to_string(N) +
         " C=" + std::to_string(C) + " ld=" + std::to_string(ld);
}

// --- the graph ---------------------------------------------------------------------------

// Unique ids of the tensors in the variant pack.
enum Uid : int64_t { kX = 1, kY, kScale, kBias, kMean, kRstd, kEps, kResidual, kSum };

Descriptor make_tensor(int64_t uid, cudnnDataType_t type, const int64_t (&dims)[4], const int64_t (&strides)[4],
                       bool by_value = false) {
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  Descriptor t = wb::cudnn::tensor(uid, type, {dims, dims + 4}, {strides, strides + 4}, &st, by_value);
  if (st != CUDNN_STATUS_SUCCESS) {
    throw NoEngine("tensor " + std::to_string(uid) + " refused: " + wb::cudnn::last_message(st));
  }
  return t;
}

// A finalized execution plan, everything it refers to, and its workspace.
struct Plan {
  std::vector<Descriptor> keep;  // tensors, operations, graph: alive as long as the plan
  Descriptor plan{CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR};
  std::unique_ptr<wb::DeviceBuffer<unsigned char>> workspace;
  NormMode mode{};
  bool fused_add = false;
  float eps = 0.0f;  // the by-value epsilon: its address goes into the variant pack
};

// Builds the graph for one shape and returns the first engine configuration that finalizes
// (heuristics mode A, then FALLBACK). Throws NoEngine with what cuDNN said.
std::unique_ptr<Plan> build_plan(NormMode mode, NormType type, NormGraph graph, int N, int C, int ld) {
  cudnnHandle_t handle = wb::cudnn_handle();
  const std::string what = shape_text(mode, type, N, C, ld) + (graph == NormGraph::FusedAdd ? " (fused add)" : "");
  const bool layer = mode == NormMode::LayerNorm;
  const cudnnDataType_t io = type == NormType::F32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_BFLOAT16;
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  auto p = std::make_unique<Plan>();
  p->mode = mode;
  p->fused_add = graph == NormGraph::FusedAdd;

  const int64_t n = N, c = C, l = ld;
  const int64_t row_dims[4] = {n, c, 1, 1}, row_strides[4] = {l, 1, l, l};
  const int64_t par_dims[4] = {1, c, 1, 1}, par_strides[4] = {c, 1, c, c};
  const int64_t stat_dims[4] = {n, 1, 1, 1}, stat_strides[4] = {1, 1, 1, 1};
  const int64_t one[4] = {1, 1, 1, 1};

  std::vector<cudnnBackendDescriptor_t> ops;
  // With the fused add: x + r -> h (written, the residual stream) feeds the norm as its x.
  const int64_t norm_in_uid = p->fused_add ? kSum : kX;
  if (p->fused_add) {
    p->keep.push_back(make_tensor(kX, io, row_dims, row_strides));
    p->keep.push_back(make_tensor(kResidual, io, row_dims, row_strides));
    p->keep.push_back(make_tensor(kSum, io, row_dims, row_strides));
    const Descriptor& tx = p->keep[p->keep.size() - 3];
    const Descriptor& tr = p->keep[p->keep.size() - 2];
    const Descriptor& th = p->keep[p->keep.size() - 1];
    Descriptor pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    const cudnnPointwiseMode_t add = CUDNN_POINTWISE_ADD;
    pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &add);
    pw.set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &f32);
    if (pw.finalize() != CUDNN_STATUS_SUCCESS) throw NoEngine(what + ": pointwise ADD refused");
    Descriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, tx);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, tr);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, th);
    const cudnnStatus_t st = op.finalize();
    if (st != CUDNN_STATUS_SUCCESS)
      throw NoEngine(what + ": pointwise operation refused: " + wb::cudnn::last_message(st));
    p->keep.push_back(std::move(pw));
    p->keep.push_back(std::move(op));
    ops.push_back(p->keep.back().get());
  }
  // The norm's tensors (with the fused add, its input is h, the tensor the pointwise op
  // writes). `keep` may reallocate as it grows, so they are looked up by id afterwards.
  if (!p->fused_add) p->keep.push_back(make_tensor(kX, io, row_dims, row_strides));
  p->keep.push_back(make_tensor(kY, io, row_dims, row_strides));
  p->keep.push_back(make_tensor(kScale, io, par_dims, par_strides));
  if (layer) p->keep.push_back(make_tensor(kBias, io, par_dims, par_strides));
  if (layer) p->keep.push_back(make_tensor(kMean, f32, stat_dims, stat_strides));
  p->keep.push_back(make_tensor(kRstd, f32, stat_dims, stat_strides));
  p->keep.push_back(make_tensor(kEps, f32, one, one, /*by_value=*/true));
  auto find = [&](int64_t uid) -> const Descriptor& {
    for (const Descriptor& d : p->keep) {
      int64_t got = -1, count = 0;  // operations and the pointwise descriptor have no id: skipped
      if (cudnnBackendGetAttribute(d.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &count, &got) ==
              CUDNN_STATUS_SUCCESS &&
          got == uid) {
        return d;
      }
    }
    throw std::logic_error("ch06 cuDNN graph: no tensor " + std::to_string(uid));
  };

  Descriptor norm(CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR);
  const cudnnBackendNormMode_t norm_mode = layer ? CUDNN_LAYER_NORM : CUDNN_RMS_NORM;
  const cudnnBackendNormFwdPhase_t phase = CUDNN_NORM_FWD_TRAINING;  // mean and rstd are outputs
  norm.set(CUDNN_ATTR_OPERATION_NORM_FWD_MODE, CUDNN_TYPE_NORM_MODE, &norm_mode);
  norm.set(CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, CUDNN_TYPE_NORM_FWD_PHASE, &phase);
  norm.set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, find(norm_in_uid));
  if (layer) norm.set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC, find(kMean));
  norm.set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC, find(kRstd));
  norm.set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, find(kScale));
  if (layer) norm.set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC, find(kBias));
  norm.set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, find(kEps));
  norm.set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_YDESC, find(kY));
  cudnnStatus_t st = norm.finalize();
  if (st != CUDNN_STATUS_SUCCESS)
    throw NoEngine(what + ": the NORM_FORWARD operation was refused: " + wb::cudnn::last_message(st));
  p->keep.push_back(std::move(norm));
  ops.push_back(p->keep.back().get());

  Descriptor op_graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  op_graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, ops.data(),
               static_cast<int64_t>(ops.size()));
  op_graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle);
  st = op_graph.finalize();
  if (st != CUDNN_STATUS_SUCCESS)
    throw NoEngine(what + ": the operation graph was refused: " + wb::cudnn::last_message(st));

  std::string said;  // what the heuristics and the plans answered, for the NoEngine message
  if (auto found = wb::cudnn::first_plan(handle, op_graph, &said)) {
    p->workspace = std::make_unique<wb::DeviceBuffer<unsigned char>>(static_cast<size_t>(found->workspace_bytes));
    p->plan = std::move(found->plan);
    p->keep.push_back(std::move(op_graph));
    return p;
  }
  throw NoEngine(what + ": no engine finalizes:" + said);
}

// --- the plan cache ----------------------------------------------------------------------

using Key = std::tuple<int /*device*/, NormMode, NormType, int /*N*/, int /*C*/, int /*ld*/>;

Plan& plan_for(NormMode mode, NormType type, int N, int C, int ld) {
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<Plan>> cache;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[Key{device, mode, type, N, C, ld}];
  if (!slot) slot = build_plan(mode, type, NormGraph::Separate, N, C, ld);
  return *slot;
}

// Runs a plan on `stream` with the given device pointers (null where the mode has none).
void execute(Plan& p, cudaStream_t stream, float eps, const void* x, const void* scale, const void* bias, void* y,
             float* mean, float* rstd, const void* residual = nullptr, void* sum = nullptr) {
  cudnnHandle_t handle = wb::cudnn_handle();
  CUDNN_CHECK(cudnnSetStream(handle, stream));
  p.eps = eps;
  std::vector<int64_t> uids;
  std::vector<void*> ptrs;
  auto add = [&](int64_t uid, const void* ptr) {
    uids.push_back(uid);
    ptrs.push_back(const_cast<void*>(ptr));
  };
  add(kX, x);
  add(kY, y);
  add(kScale, scale);
  if (p.mode == NormMode::LayerNorm) {
    add(kBias, bias);
    add(kMean, mean);
  }
  add(kRstd, rstd);
  add(kEps, &p.eps);  // by value: a host address
  if (p.fused_add) {
    add(kResidual, residual);
    add(kSum, sum);
  }
  wb::execute_plan(handle, p.plan.get(), uids, ptrs, p.workspace->data());
}

}  // namespace

std::string cudnn_version_text() { return wb::cudnn_version_text(); }

void cudnn_prepare(NormMode mode, NormType type, int N, int C, int ld) {
  if (N > 0) plan_for(mode, type, N, C, ld);
}

std::string probe_fused_add(NormMode mode, int N, int C, int ld) {
  try {
    build_plan(mode, NormType::BF16, NormGraph::FusedAdd, N, C, ld);
    return "";
  } catch (const NoEngine& e) {
    return e.what();
  }
}

void cudnn_layernorm_f32(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                         int N, int C, int ld, float eps, cudaStream_t stream) {
  if (N == 0) return;
  execute(plan_for(NormMode::LayerNorm, NormType::F32, N, C, ld), stream, eps, x, gamma, beta, y, mean, rstd);
}

void cudnn_residual_layernorm(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h, bf16* y,
                              float* mean, float* rstd, int N, int C, int ld, float eps, cudaStream_t stream) {
  if (N == 0) return;
  Plan& p = plan_for(NormMode::LayerNorm, NormType::BF16, N, C, ld);  // may throw NoEngine: before any launch
  residual_add(x, r, h, N, C, ld, stream);
  execute(p, stream, eps, h, gamma, beta, y, mean, rstd);
}

void cudnn_residual_rmsnorm(const bf16* x, const bf16* r, const bf16* gamma, bf16* h, bf16* y, float* rstd, int N,
                            int C, int ld, float eps, cudaStream_t stream) {
  if (N == 0) return;
  Plan& p = plan_for(NormMode::RmsNorm, NormType::BF16, N, C, ld);
  residual_add(x, r, h, N, C, ld, stream);
  execute(p, stream, eps, h, gamma, nullptr, y, nullptr, rstd);
}

}  // namespace ch06::reference
