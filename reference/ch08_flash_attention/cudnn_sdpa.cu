// Chapter 8 reference ("variant 0"): cuDNN's fused attention forward through the backend API
// (cudnn.h: cudnnBackendCreateDescriptor / SetAttribute / Finalize / Execute).
//
// cuDNN has no single "attention" call here. Its runtime-fusion engines recognise attention
// as a GRAPH of small operations and compile it into one flash-attention kernel; the graph
// built below, once per (B, H, Sq, Sk, D, causal) and cached with its plan and workspace, is
//
//   Q  (B, H, Sq, D)  strides (H Sq D, Sq D, D, 1)                                     BF16
//   Kt (B, H, D, Sk)  strides (H Sk D, Sk D, 1, D)   K's own memory, read as K^T        BF16
//   V  (B, H, Sk, D)  strides (H Sk D, Sk D, D, 1)                                     BF16
//
//   S1   = matmul(Q, Kt)                                  (B, H, Sq, Sk) virtual, FP32
//   S2   = S1 * scale                                     scale: a by-value FP32 scalar
//   with the mask:
//     row  = gen_index(S2, axis 2)   col = gen_index(S2, axis 3)            virtual, INT32
//     row' = row + (Sk - Sq)         (only when Sq != Sk: bottom-right alignment)
//     keep = row' >= col                                                    virtual, BOOLEAN
//     S3   = keep ? S2 : -inf        (binary select; -inf a by-value scalar)
//   M    = reduce_max(S3) over keys                       (B, H, Sq, 1) virtual, FP32
//   E    = exp(S3 - M)
//   L    = reduce_add(E) over keys                        (B, H, Sq, 1) virtual
//   lse  = M + log(L)                                     (B, H, Sq, 1) FP32, an output
//   P    = E / L                                          virtual, BF16 (the second matmul's input)
//   O    = matmul(P, V)                                   (B, H, Sq, D) BF16, an output
//
// then heuristics (mode A, then FALLBACK) and the first engine configuration that finalizes
// as an execution plan (wb::cudnn::first_plan, harness/runtime/cudnn_backend.cuh, shared with
// chapter 6). Softmax "as a reduction plus pointwise operations" is how the graph
// API spells it; the engine never writes S, E or P to memory.
//
// Versions: every descriptor and attribute used here exists from cuDNN 9.0 on (checked
// against the 9.19 headers; the GPU machines run 9.14). 9.19's headers also declare a
// single-operation SDPA descriptor (CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR), but its
// attributes there carry no causal mask (block masks, page tables and sequence lengths only),
// so the graph above serves both versions. cudnn_version_text() names the two versions.
//
// Where cuDNN says no (an old GPU, a head size or a layout no engine takes) the launcher
// throws wb::NoEngine with cuDNN's words and the test is a skip. One case is refused on
// purpose: the mask with Sq > Sk, whose first Sq - Sk rows see no key. The graph's softmax
// is 0 / 0 there (the max of nothing is -inf, and -inf - -inf is NaN), where the chapter
// defines o = 0 and lse = -inf. The harness's float64 check runs on every shape cuDNN does
// take: engines have been known to accept layouts they then get wrong.
#include <cudnn.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
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

namespace ch08::reference {
namespace {

// --- owners -----------------------------------------------------------------------------

using wb::cudnn::Descriptor;  // harness/runtime/cudnn_backend.cuh

// Sets an attribute that refers to another descriptor by its raw handle.
void link(Descriptor& d, cudnnBackendAttributeName_t name, cudnnBackendDescriptor_t other) {
  d.set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &other);
}

std::string shape_text(int B, int H, int Sq, int Sk, int D, bool causal) {
  return "cuDNN fused attention BF16 B=" + std::to_string(B) + " H=" + std::to_string(H) + " Sq=" + std::to_string(Sq) +
         " Sk=" + std::to_string(Sk) + " D=" + std::to_string(D) + (causal ? " causal" : "");
}

// --- the graph ---------------------------------------------------------------------------

// Unique ids of the tensors in the variant pack; virtual tensors count up from kVirtual.
enum Uid : int64_t { kQ = 1, kK, kV, kO, kLse, kScale, kNegInf, kOffset, kVirtual = 100 };

using Dims = std::array<int64_t, 4>;

// A finalized execution plan, everything it refers to, its workspace, and the host values
// of its by-value scalars (their addresses go into the variant pack).
struct Plan {
  std::vector<Descriptor> keep;  // tensors, operations, graph: alive as long as the plan
  Descriptor plan{CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR};
  std::unique_ptr<wb::DeviceBuffer<unsigned char>> workspace;
  bool has_offset = false;
  float scale = 0.0f;
  float neg_inf = -INFINITY;
  int32_t offset = 0;
};

// Adds tensors and operations to a plan's graph; every refusal is a NoEngine naming `what`.
class GraphBuilder {
 public:
  GraphBuilder(Plan& p, std::string what) : p_(p), what_(std::move(what)) {}

  cudnnBackendDescriptor_t tensor(int64_t uid, cudnnDataType_t type, const Dims& dims, const Dims& strides,
                                  bool is_virtual, bool by_value = false) {
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    Descriptor t = wb::cudnn::tensor(uid, type, {dims.begin(), dims.end()}, {strides.begin(), strides.end()}, &st,
                                     by_value, is_virtual);
    if (st != CUDNN_STATUS_SUCCESS) {
      throw wb::NoEngine(what_ + ": tensor " + std::to_string(uid) + " refused: " + wb::cudnn::last_message(st));
    }
    return keep(std::move(t), "tensor " + std::to_string(uid), /*finalized=*/true);
  }
  // A virtual (never stored) tensor with a fresh id.
  cudnnBackendDescriptor_t virt(cudnnDataType_t type, const Dims& dims, const Dims& strides) {
    return tensor(next_virtual_++, type, dims, strides, true);
  }
  // A by-value scalar (1, 1, 1, 1): its value is read from a host address at execution.
  cudnnBackendDescriptor_t scalar(int64_t uid, cudnnDataType_t type) {
    const Dims one = {1, 1, 1, 1};
    return tensor(uid, type, one, one, false, true);
  }

  // y = mode(x[, b][, t]); `axis` for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t prec, cudnnBackendDescriptor_t x,
                 cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y,
                 int64_t axis = -1) {
    Descriptor pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode);
    pw.set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &prec);
    if (axis >= 0) pw.set(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, &axis);
    const cudnnBackendDescriptor_t pwd = keep(std::move(pw), "pointwise mode " + std::to_string(mode));
    Descriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    link(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pwd);
    link(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    if (b != nullptr) link(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
    if (t != nullptr) link(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t);
    link(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    ops_.push_back(keep(std::move(op), "pointwise operation " + std::to_string(mode)));
  }

  // y = reduce(x) over the axes where y has extent 1.
  void reduction(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    Descriptor red(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    red.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &mode);
    red.set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &f32);
    const cudnnBackendDescriptor_t rd = keep(std::move(red), "reduction descriptor");
    add_op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
           {{CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x},
            {CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y},
            {CUDNN_ATTR_OPERATION_REDUCTION_DESC, rd}},
           "reduction operation");
  }

  // c = a b, batched over the first two axes, FP32 accumulation.
  void matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c) {
    Descriptor mm(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    mm.set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &f32);
    const cudnnBackendDescriptor_t md = keep(std::move(mm), "matmul descriptor");
    add_op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
           {{CUDNN_ATTR_OPERATION_MATMUL_ADESC, a},
            {CUDNN_ATTR_OPERATION_MATMUL_BDESC, b},
            {CUDNN_ATTR_OPERATION_MATMUL_CDESC, c},
            {CUDNN_ATTR_OPERATION_MATMUL_DESC, md}},
           "matmul operation");
  }

  const std::vector<cudnnBackendDescriptor_t>& ops() const { return ops_; }

 private:
  // An operation of `type` with each (attribute, descriptor) linked in the order given, kept
  // and added to the graph.
  void add_op(cudnnBackendDescriptorType_t type,
              std::initializer_list<std::pair<cudnnBackendAttributeName_t, cudnnBackendDescriptor_t>> links,
              const std::string& name) {
    Descriptor op(type);
    for (const auto& [attribute, descriptor] : links) link(op, attribute, descriptor);
    ops_.push_back(keep(std::move(op), name));
  }

  cudnnBackendDescriptor_t keep(Descriptor d, const std::string& name, bool finalized = false) {
    const cudnnStatus_t st = finalized ? CUDNN_STATUS_SUCCESS : d.finalize();
    if (st != CUDNN_STATUS_SUCCESS)
      throw wb::NoEngine(what_ + ": " + name + " refused: " + wb::cudnn::last_message(st));
    const cudnnBackendDescriptor_t raw = d.get();
    p_.keep.push_back(std::move(d));
    return raw;
  }

  Plan& p_;
  std::string what_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  int64_t next_virtual_ = kVirtual;
};

// Builds the graph for one shape and returns the first engine configuration that finalizes
// (heuristics mode A, then FALLBACK). Throws NoEngine with what cuDNN said.
std::unique_ptr<Plan> build_plan(int B, int H, int Sq, int Sk, int D, bool causal) {
  cudnnHandle_t handle = wb::cudnn_handle();
  const std::string what = shape_text(B, H, Sq, Sk, D, causal);
  auto p = std::make_unique<Plan>();
  p->has_offset = causal && Sq != Sk;
  GraphBuilder g(*p, what);
  const int64_t b = B, h = H, sq = Sq, sk = Sk, d = D;
  const cudnnDataType_t bf16t = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT, i32 = CUDNN_DATA_INT32,
                        boolean = CUDNN_DATA_BOOLEAN;

  const Dims q_dims = {b, h, sq, d}, q_strides = {h * sq * d, sq * d, d, 1};
  const Dims kt_dims = {b, h, d, sk}, kt_strides = {h * sk * d, sk * d, 1, d};
  const Dims v_dims = {b, h, sk, d}, v_strides = {h * sk * d, sk * d, d, 1};
  const Dims s_dims = {b, h, sq, sk}, s_strides = {h * sq * sk, sq * sk, sk, 1};
  const Dims r_dims = {b, h, sq, 1}, r_strides = {h * sq, sq, 1, 1};

  const auto q = g.tensor(kQ, bf16t, q_dims, q_strides, false);
  const auto kt = g.tensor(kK, bf16t, kt_dims, kt_strides, false);
  const auto v = g.tensor(kV, bf16t, v_dims, v_strides, false);
  const auto o = g.tensor(kO, bf16t, q_dims, q_strides, false);
  const auto lse = g.tensor(kLse, f32, r_dims, r_strides, false);
  const auto scale = g.scalar(kScale, f32);

  const auto s1 = g.virt(f32, s_dims, s_strides);
  g.matmul(q, kt, s1);
  auto s = g.virt(f32, s_dims, s_strides);
  g.pointwise(CUDNN_POINTWISE_MUL, f32, s1, scale, nullptr, s);
  if (causal) {
    auto row = g.virt(i32, s_dims, s_strides);
    const auto col = g.virt(i32, s_dims, s_strides);
    g.pointwise(CUDNN_POINTWISE_GEN_INDEX, i32, s, nullptr, nullptr, row, 2);
    g.pointwise(CUDNN_POINTWISE_GEN_INDEX, i32, s, nullptr, nullptr, col, 3);
    if (p->has_offset) {  // bottom-right: row i sees keys up to i + Sk - Sq
      const auto offset = g.scalar(kOffset, i32);
      const auto shifted = g.virt(i32, s_dims, s_strides);
      g.pointwise(CUDNN_POINTWISE_ADD, i32, row, offset, nullptr, shifted);
      row = shifted;
    }
    const auto keep = g.virt(boolean, s_dims, s_strides);
    g.pointwise(CUDNN_POINTWISE_CMP_GE, boolean, row, col, nullptr, keep);
    const auto neg_inf = g.scalar(kNegInf, f32);
    const auto masked = g.virt(f32, s_dims, s_strides);
    g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, f32, s, neg_inf, keep, masked);
    s = masked;
  }
  const auto mx = g.virt(f32, r_dims, r_strides);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, s, mx);
  const auto centred = g.virt(f32, s_dims, s_strides);
  g.pointwise(CUDNN_POINTWISE_SUB, f32, s, mx, nullptr, centred);
  const auto e = g.virt(f32, s_dims, s_strides);
  g.pointwise(CUDNN_POINTWISE_EXP, f32, centred, nullptr, nullptr, e);
  const auto sum = g.virt(f32, r_dims, r_strides);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum);
  const auto log_sum = g.virt(f32, r_dims, r_strides);
  g.pointwise(CUDNN_POINTWISE_LOG, f32, sum, nullptr, nullptr, log_sum);
  g.pointwise(CUDNN_POINTWISE_ADD, f32, mx, log_sum, nullptr, lse);
  const auto probs = g.virt(bf16t, s_dims, s_strides);
  g.pointwise(CUDNN_POINTWISE_DIV, f32, e, sum, nullptr, probs);
  g.matmul(probs, v, o);

  Descriptor op_graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  op_graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g.ops().data(),
               static_cast<int64_t>(g.ops().size()));
  op_graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle);
  cudnnStatus_t st = op_graph.finalize();
  if (st != CUDNN_STATUS_SUCCESS)
    throw wb::NoEngine(what + ": the operation graph was refused: " + wb::cudnn::last_message(st));

  std::string said;  // what the heuristics and the plans answered, for the NoEngine message
  auto found = wb::cudnn::first_plan(handle, op_graph, &said);
  if (!found) throw wb::NoEngine(what + ": no engine finalizes:" + said);
  p->workspace = std::make_unique<wb::DeviceBuffer<unsigned char>>(static_cast<size_t>(found->workspace_bytes));
  p->plan = std::move(found->plan);
  p->keep.push_back(std::move(op_graph));
  return p;
}

// --- the plan cache ----------------------------------------------------------------------

using Key = std::tuple<int /*device*/, int, int, int, int, int, bool>;

// The refusals that do not need cuDNN to answer (see the header comment).
void refuse_unsupported(int B, int H, int Sq, int Sk, int D, bool causal) {
  if (causal && Sq > Sk) {
    throw wb::NoEngine(shape_text(B, H, Sq, Sk, D, causal) +
                       ": with Sq > Sk the first Sq - Sk rows see no key; "
                       "the graph's softmax is 0/0 (NaN) there, where this chapter defines o = 0 and lse = -inf, "
                       "so cuDNN is not asked");
  }
}

Plan& plan_for(int B, int H, int Sq, int Sk, int D, bool causal) {
  refuse_unsupported(B, H, Sq, Sk, D, causal);
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<Plan>> cache;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[Key{device, B, H, Sq, Sk, D, causal}];
  if (!slot) slot = build_plan(B, H, Sq, Sk, D, causal);
  return *slot;
}

}  // namespace

std::string cudnn_version_text() { return wb::cudnn_version_text(); }

void cudnn_prepare(int B, int H, int Sq, int Sk, int D, bool causal) {
  if (B > 0 && H > 0 && Sq > 0 && Sk > 0) plan_for(B, H, Sq, Sk, D, causal);
}

void cudnn_attention_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H, int Sq,
                          int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  (void)scratch;                                // cuDNN's workspace is the plan's own
  Plan& p = plan_for(B, H, Sq, Sk, D, causal);  // may throw NoEngine: before anything runs
  cudnnHandle_t handle = wb::cudnn_handle();
  CUDNN_CHECK(cudnnSetStream(handle, stream));
  p.scale = scale;
  p.offset = Sk - Sq;
  std::vector<int64_t> uids = {kQ, kK, kV, kO, kLse, kScale};
  std::vector<void*> ptrs = {const_cast<bf16*>(q), const_cast<bf16*>(k), const_cast<bf16*>(v), o, lse, &p.scale};
  if (causal) {
    uids.push_back(kNegInf);
    ptrs.push_back(&p.neg_inf);
  }
  if (p.has_offset) {
    uids.push_back(kOffset);
    ptrs.push_back(&p.offset);
  }
  wb::execute_plan(handle, p.plan.get(), uids, ptrs, p.workspace->data());
}

}  // namespace ch08::reference
