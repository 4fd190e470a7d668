// Chapter 10 reference ("variant 0"): cuDNN's convolution forward through the backend API
// (cudnn.h: cudnnBackendCreateDescriptor / SetAttribute / Finalize / Execute).
//
// Four graphs, each built once per shape and cached with its plan and buffers:
//
//   conv2d/f32           CONVOLUTION_FORWARD, x NCHW, w KCRS, y NKPQ, FP32 data and compute.
//                        Engines that would change the numbers are passed over: tensor cores
//                        (TF32 on Ampere and later), inputs down-converted, reduced-precision
//                        sums, FFT and Winograd, and nondeterministic ones (the checks run
//                        every variant twice and compare the bits).
//   conv2d_bn_relu/bf16  two forms:
//     cudnn_separate     the convolution alone (BF16 NHWC in, BF16 NHWC out, FP32 compute)
//                        into a buffer, then bias_bn_relu_kernel below reads it back and
//                        writes y: the conv's output makes a round trip through DRAM, as in
//                        a framework that runs the layers one by one.
//     cudnn_three_kernels  the layers as a framework runs them one by one (PyTorch eager's
//                        conv2d -> BatchNorm2d (eval) -> ReLU): the convolution alone (the same
//                        graph as cudnn_separate) writes y, then bn_inference_kernel reads y
//                        and writes it back (per channel (v + bias) * scale + shift: the conv's
//                        bias rides in BN's affine, one FMA more, where PyTorch's conv2d with
//                        a bias adds it in a separate kernel of its own), [then residual_add_kernel
//                        reads y and the residual and writes y,] then relu_kernel reads y and
//                        writes it: three (four) passes over y through DRAM, each rounded to
//                        BF16 as a framework's tensors are. The BN and ReLU kernels are written
//                        to run at DRAM speed (16-byte vectors, a resident grid striding
//                        over y, BN's scale and shift folded once per thread), so that the
//                        comparison is with good separate kernels, not slow ones.
//     cudnn_fused        one graph: the convolution's FP32 output (virtual: never stored)
//                        -> + bias -> * scale -> + shift [-> + residual] -> ReLU -> y BF16.
//                        cuDNN's runtime-fusion engines compile it into one kernel where the
//                        GPU has them. scale and shift are folded from gamma, beta, mean and
//                        var by fold_kernel (K threads) before each run.
//   depthwise3x3/bf16    a grouped convolution (C groups of one channel): w [3][3][C] is
//                        transposed to cuDNN's grouped KRSC [C][3][3][1] by a small kernel
//                        first.
// Tensors are described in cuDNN's NCHW order of dimensions, the layout in the strides (NHWC:
// strides (H W C, 1, W C, C)).
//
// A shape no engine takes (cuDNN versions differ; runtime fusion needs a recent GPU) throws
// NoEngine with what cuDNN answered: the case is reported as skipped, never failed. So do the
// large cases (a tensor past 2^31 elements), which are there for the kernels' 64-bit offsets.
#include <cudnn.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <iterator>
#include <tuple>
#include <utility>
#include <vector>

#include "ch10.cuh"
#include "declare/op.cuh"
#include "device/math.cuh"
#include "device/vec.cuh"
#include "runtime/buffers.cuh"
#include "runtime/cudnn_backend.cuh"
#include "runtime/cudnn_check.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"

namespace ch10::reference {
namespace {

using wb::cudnn::Descriptor;
using NoEngine = wb::NoEngine;

enum class Graph { F32, Bf16Conv, Bf16Fused, Bf16FusedResidual, Depthwise };

// What each graph computes, in Graph's order.
constexpr const char* kGraphNames[] = {
    "FP32 NCHW convolution", "BF16 NHWC convolution", "BF16 NHWC convolution + bias + BN + ReLU",
    "BF16 NHWC convolution + bias + BN + residual + ReLU", "BF16 NHWC depthwise 3x3 convolution"};
static_assert(std::size(kGraphNames) == size_t(Graph::Depthwise) + 1, "a name for every graph");

const char* graph_name(Graph g) {
  const auto i = static_cast<size_t>(g);
  return i < std::size(kGraphNames) ? kGraphNames[i] : "?";
}

std::string shape_text(Graph g, const ConvShape& s) {
  return std::string("cuDNN ") + graph_name(g) + " N=" + std::to_string(s.N) + " C=" + std::to_string(s.C) +
         " H=" + std::to_string(s.H) + " W=" + std::to_string(s.W) + " K=" + std::to_string(s.K) +
         " R=" + std::to_string(s.R) + " S=" + std::to_string(s.S) + " stride=" + std::to_string(s.stride) +
         " pad=" + std::to_string(s.pad);
}

// Unique ids of the tensors in the variant pack.
enum Uid : int64_t { kX = 1, kW, kY, kBias, kScale, kShift, kResidual, kConvOut, kT1, kT2, kT3, kT4 };

Descriptor make_tensor(int64_t uid, cudnnDataType_t type, std::vector<int64_t> dims, std::vector<int64_t> strides,
                       const std::string& what, bool is_virtual = false) {
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  Descriptor t = wb::cudnn::tensor(uid, type, dims, strides, &st, false, is_virtual);
  if (st != CUDNN_STATUS_SUCCESS) {
    throw NoEngine(what + ": tensor " + std::to_string(uid) + " refused: " + wb::cudnn::last_message(st));
  }
  return t;
}

// NHWC strides of a tensor whose dims are given in NCHW order.
std::vector<int64_t> nhwc(int64_t n, int64_t c, int64_t h, int64_t w) {
  (void)n;
  return {h * w * c, 1, w * c, c};
}
std::vector<int64_t> nchw(int64_t n, int64_t c, int64_t h, int64_t w) {
  (void)n;
  return {c * h * w, h * w, w, 1};
}

// --- the graphs ----------------------------------------------------------------------------

struct Plan {
  std::vector<Descriptor> keep;  // tensors, operations, graph: alive as long as the plan
  Descriptor plan{CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR};
  std::unique_ptr<wb::DeviceBuffer<unsigned char>> workspace;
  std::unique_ptr<wb::DeviceBuffer<unsigned char>> scratch;  // the conv's output, folded BN, or w transposed
};

// Appends a pointwise operation y = mode(x [, b]) to `ops`, its descriptors kept in `p`.
void pointwise(Plan& p, std::vector<cudnnBackendDescriptor_t>& ops, cudnnPointwiseMode_t mode, const Descriptor& x,
               const Descriptor* b, const Descriptor& y, const std::string& what) {
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  Descriptor pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode);
  pw.set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &f32);
  cudnnStatus_t st = pw.finalize();
  if (st != CUDNN_STATUS_SUCCESS) throw NoEngine(what + ": pointwise mode refused: " + wb::cudnn::last_message(st));
  Descriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
  op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (b) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  st = op.finalize();
  if (st != CUDNN_STATUS_SUCCESS)
    throw NoEngine(what + ": pointwise operation refused: " + wb::cudnn::last_message(st));
  p.keep.push_back(std::move(pw));
  p.keep.push_back(std::move(op));
  ops.push_back(p.keep.back().get());
}

std::unique_ptr<Plan> build_plan(Graph g, const ConvShape& s) {
  cudnnHandle_t handle = wb::cudnn_handle();
  const std::string what = shape_text(g, s);
  // The large cases (an input past 2^31 elements) are there for the kernels' 64-bit offsets.
  // Not every cuDNN engine takes such tensors, and one that accepted them but indexed in 32
  // bits would report the library wrong: the reference skips them, with this reason.
  const int64_t x_count = int64_t(s.N) * s.C * s.H * s.W, y_count = int64_t(s.N) * s.K * s.P() * s.Q();
  if (x_count > INT32_MAX || y_count > INT32_MAX) {
    throw NoEngine(what +
                   ": a tensor of more than 2^31 - 1 elements, not run through cuDNN (the kernels' "
                   "64-bit offsets are checked against the float64 reference)");
  }
  auto p = std::make_unique<Plan>();
  p->keep.reserve(64);  // operations hold references into it while it grows: no reallocation
  const bool f32 = g == Graph::F32, depthwise = g == Graph::Depthwise;
  const bool fused = g == Graph::Bf16Fused || g == Graph::Bf16FusedResidual;
  const cudnnDataType_t io = f32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_BFLOAT16, acc = CUDNN_DATA_FLOAT;
  const int64_t N = s.N, C = s.C, H = s.H, W = s.W, K = s.K, R = s.R, S = s.S, P = s.P(), Q = s.Q();
  const int64_t Cg = depthwise ? 1 : C;  // channels per group of the filter

  // Tensors (dims in NCHW order; the layout in the strides). `keep` may reallocate as it
  // grows, so the descriptors are made first and referred to by index afterwards.
  p->keep.push_back(make_tensor(kX, io, {N, C, H, W}, f32 ? nchw(N, C, H, W) : nhwc(N, C, H, W), what));
  p->keep.push_back(make_tensor(kW, io, {K, Cg, R, S}, f32 ? nchw(K, Cg, R, S) : nhwc(K, Cg, R, S), what));
  // The convolution's output: y itself, or (fused) a virtual FP32 tensor.
  const int64_t conv_uid = fused ? kConvOut : kY;
  p->keep.push_back(
      make_tensor(conv_uid, fused ? acc : io, {N, K, P, Q}, f32 ? nchw(N, K, P, Q) : nhwc(N, K, P, Q), what, fused));
  std::vector<cudnnBackendDescriptor_t> ops;

  Descriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const int64_t dims = 2, one[2] = {1, 1}, stride[2] = {s.stride, s.stride}, pad[2] = {s.pad, s.pad};
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &acc);
  conv.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, &mode);
  conv.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, &dims);
  conv.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, one, 2);
  conv.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, stride, 2);
  conv.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, pad, 2);
  conv.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, pad, 2);
  cudnnStatus_t st = conv.finalize();
  if (st != CUDNN_STATUS_SUCCESS)
    throw NoEngine(what + ": convolution descriptor refused: " + wb::cudnn::last_message(st));

  Descriptor fwd(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  const float alpha = 1.0f, beta = 0.0f;
  fwd.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, &alpha);
  fwd.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, &beta);
  fwd.set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv);
  fwd.set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, p->keep[0]);
  fwd.set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, p->keep[1]);
  fwd.set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, p->keep[2]);
  st = fwd.finalize();
  if (st != CUDNN_STATUS_SUCCESS)
    throw NoEngine(what + ": convolution operation refused: " + wb::cudnn::last_message(st));
  p->keep.push_back(std::move(conv));
  p->keep.push_back(std::move(fwd));
  ops.push_back(p->keep.back().get());

  if (fused) {
    // conv -> + bias -> * scale -> + shift [-> + residual] -> ReLU -> y, intermediates virtual FP32.
    const std::vector<int64_t> act_dims = {N, K, P, Q}, act_strides = nhwc(N, K, P, Q);
    const std::vector<int64_t> par_dims = {1, K, 1, 1}, par_strides = {K, 1, K, K};
    const bool res = g == Graph::Bf16FusedResidual;
    std::vector<Descriptor> t;  // made first, then the operations refer to them
    t.push_back(make_tensor(kBias, acc, par_dims, par_strides, what));
    t.push_back(make_tensor(kScale, acc, par_dims, par_strides, what));
    t.push_back(make_tensor(kShift, acc, par_dims, par_strides, what));
    t.push_back(make_tensor(kT1, acc, act_dims, act_strides, what, true));
    t.push_back(make_tensor(kT2, acc, act_dims, act_strides, what, true));
    t.push_back(make_tensor(kT3, acc, act_dims, act_strides, what, true));
    if (res) {
      t.push_back(make_tensor(kResidual, io, act_dims, act_strides, what));
      t.push_back(make_tensor(kT4, acc, act_dims, act_strides, what, true));
    }
    t.push_back(make_tensor(kY, io, act_dims, act_strides, what));
    const Descriptor& conv_out = p->keep[2];
    pointwise(*p, ops, CUDNN_POINTWISE_ADD, conv_out, &t[0], t[3], what);  // t1 = conv + bias
    pointwise(*p, ops, CUDNN_POINTWISE_MUL, t[3], &t[1], t[4], what);      // t2 = t1 * scale
    pointwise(*p, ops, CUDNN_POINTWISE_ADD, t[4], &t[2], t[5], what);      // t3 = t2 + shift
    if (res) {
      pointwise(*p, ops, CUDNN_POINTWISE_ADD, t[5], &t[6], t[7], what);  // t4 = t3 + residual
      pointwise(*p, ops, CUDNN_POINTWISE_RELU_FWD, t[7], nullptr, t[8], what);
    } else {
      pointwise(*p, ops, CUDNN_POINTWISE_RELU_FWD, t[5], nullptr, t[6], what);
    }
    for (auto& d : t) p->keep.push_back(std::move(d));
  }

  Descriptor op_graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  op_graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, ops.data(), int64_t(ops.size()));
  op_graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle);
  st = op_graph.finalize();
  if (st != CUDNN_STATUS_SUCCESS)
    throw NoEngine(what + ": the operation graph was refused: " + wb::cudnn::last_message(st));

  // Engines whose numbers differ from an FP32 sum in some order, or that are not repeatable.
  std::vector<cudnnBackendNumericalNote_t> refused = {CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION,
                                                      CUDNN_NUMERICAL_NOTE_FFT,
                                                      CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC,
                                                      CUDNN_NUMERICAL_NOTE_WINOGRAD,
                                                      CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4,
                                                      CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6,
                                                      CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13};
  if (f32) {
    refused.push_back(CUDNN_NUMERICAL_NOTE_TENSOR_CORE);  // TF32
    refused.push_back(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS);
  }
  std::string said;
  auto found = wb::cudnn::first_plan(handle, op_graph, refused, &said);
  if (!found) throw NoEngine(what + ": no engine finalizes:" + said);
  p->workspace =
      std::make_unique<wb::DeviceBuffer<unsigned char>>(size_t(std::max<int64_t>(found->workspace_bytes, 1)));
  p->plan = std::move(found->plan);
  p->keep.push_back(std::move(op_graph));
  return p;
}

// --- the plan cache and execution -----------------------------------------------------------

using Key = std::tuple<int, Graph, int, int, int, int, int, int, int, int, int>;

Plan& plan_for(Graph g, const ConvShape& s) {
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<Plan>> cache;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[Key{device, g, s.N, s.H, s.W, s.C, s.K, s.R, s.S, s.stride, s.pad}];
  if (!slot) slot = build_plan(g, s);
  return *slot;
}

void execute(Plan& p, cudaStream_t stream, const std::vector<std::pair<int64_t, const void*>>& tensors) {
  cudnnHandle_t handle = wb::cudnn_handle();
  CUDNN_CHECK(cudnnSetStream(handle, stream));
  std::vector<int64_t> uids;
  std::vector<void*> ptrs;
  for (const auto& [uid, ptr] : tensors) {
    uids.push_back(uid);
    ptrs.push_back(const_cast<void*>(ptr));
  }
  Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  void* ws = p.workspace->data();
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids.data(), int64_t(uids.size()));
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, ptrs.data(), int64_t(ptrs.size()));
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &ws);
  CUDNN_CHECK(pack.finalize());
  CUDNN_CHECK(cudnnBackendExecute(handle, p.plan.get(), pack.get()));
}

// --- the small kernels around the library calls ----------------------------------------------

// The separate pipeline's second kernel: y = relu((conv + bias) * scale + shift + residual),
// BN folded per element (the library's conv has no epilogue to fold it into). conv is the
// convolution's BF16 output, NPQK.
__global__ void bias_bn_relu_kernel(const bf16* conv, BnParams bn, const bf16* residual, bf16* y, int K,
                                    int64_t total) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int k = int(i % K);
  const float scale = bn.gamma[k] / sqrtf(bn.var[k] + bn.eps);
  const float shift = bn.beta[k] - bn.mean[k] * scale;
  float v = (__bfloat162float(conv[i]) + bn.bias[k]) * scale + shift;
  if (residual) v += __bfloat162float(residual[i]);
  y[i] = __float2bfloat16(fmaxf(v, 0.0f));
}

// --- the three-kernel form's passes over y (in place, BF16): each reads and writes all of y --

constexpr int kPassThreads = 256;
constexpr int kPassUnroll = 4;  // 16-byte vectors a thread has in flight at once

// Streams the 16-byte vectors first, first + stride, ... (< vectors) of y through f8, in place:
// f8(float (&v)[8], const float (&r)[8]) rewrites the 8 values v of a vector (r: the same
// vector of the residual, zeros without one). kPassUnroll vectors a thread at a time, all their
// loads issued before the first store.
template <bool kResidual, class F>
__device__ __forceinline__ void stream_vectors(bf16* y, const bf16* residual, int64_t first, int64_t vectors,
                                               int64_t stride, F f8) {
  uint4* v = reinterpret_cast<uint4*>(y);
  const uint4* rv = reinterpret_cast<const uint4*>(residual);
  for (int64_t i = first; i < vectors; i += kPassUnroll * stride) {
    uint4 in[kPassUnroll], res[kPassUnroll];
#pragma unroll
    for (int u = 0; u < kPassUnroll; ++u) {
      if (i + u * stride < vectors) {
        in[u] = v[i + u * stride];
        if constexpr (kResidual) res[u] = rv[i + u * stride];
      }
    }
#pragma unroll
    for (int u = 0; u < kPassUnroll; ++u) {
      if (i + u * stride >= vectors) break;
      float f[8], r[8] = {};
      wb::widen8(f, in[u]);
      if constexpr (kResidual) wb::widen8(r, res[u]);
      f8(f, r);
      v[i + u * stride] = wb::narrow8(f);
    }
  }
}

// BatchNorm at inference, in place: y = (y + bias[k]) * scale[k] + shift[k] on NPQK y, k the
// channel. Vector form (K % 8 == 0, y 16-byte aligned): vectors = M K / 8, and the launch makes
// the grid's thread count a multiple of K / 8, so that every vector a thread strides to holds the
// same 8 channels: the thread folds their parameters once, then streams its vectors.
__global__ void bn_inference_vec_kernel(BnParams bn, bf16* y, int K, int64_t vectors) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (first >= vectors) return;
  const int k0 = int(first % (K / 8)) * 8;
  float bias[8], scale[8], shift[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const int k = k0 + e;
    bias[e] = bn.bias[k];
    scale[e] = bn.gamma[k] / sqrtf(bn.var[k] + bn.eps);
    shift[e] = bn.beta[k] - bn.mean[k] * scale[e];
  }
  stream_vectors<false>(y, nullptr, first, vectors, stride, [&](float(&v)[8], const float(&)[8]) {
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = (v[e] + bias[e]) * scale[e] + shift[e];
  });
}

// The same, one element at a time (K % 8 != 0, or y not 16-byte aligned).
__global__ void bn_inference_kernel(BnParams bn, bf16* y, int K, int64_t total) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int k = int(i % K);
    const float scale = bn.gamma[k] / sqrtf(bn.var[k] + bn.eps);
    const float shift = bn.beta[k] - bn.mean[k] * scale;
    y[i] = __float2bfloat16((__bfloat162float(y[i]) + bn.bias[k]) * scale + shift);
  }
}

// y = op(y[, residual]) element by element over `total` elements, in place: 16-byte vectors
// where y (and residual) are 16-byte aligned, the tail past the last whole vector one element
// at a time. op(float v, float r): r is zero without a residual.
template <bool kResidual, class Op>
__device__ __forceinline__ void elementwise_pass(bf16* y, const bf16* residual, int64_t total, bool vec, Op op) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t vectors = vec ? total / 8 : 0;
  stream_vectors<kResidual>(y, residual, first, vectors, stride, [&](float(&v)[8], const float(&r)[8]) {
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = op(v[e], r[e]);
  });
  for (int64_t i = vectors * 8 + first; i < total; i += stride) {
    const float r = kResidual ? __bfloat162float(residual[i]) : 0.0f;
    y[i] = __float2bfloat16(op(__bfloat162float(y[i]), r));
  }
}

// The residual connection, in place: y = y + residual (both NPQK BF16, the sum rounded).
__global__ void residual_add_kernel(bf16* y, const bf16* residual, int64_t total, bool vec) {
  elementwise_pass<true>(y, residual, total, vec, [](float v, float r) { return v + r; });
}

// ReLU, in place: y = max(y, 0).
__global__ void relu_kernel(bf16* y, int64_t total, bool vec) {
  elementwise_pass<false>(y, nullptr, total, vec, [](float v, float) { return fmaxf(v, 0.0f); });
}

// A resident grid for a pass over `items` (vectors or elements) of kPassThreads-thread blocks,
// each thread taking kPassUnroll at a time; its block count a multiple of `multiple`.
unsigned pass_grid(int64_t items, int multiple) {
  const int64_t want = wb::ceil_div(items, int64_t{kPassThreads} * kPassUnroll);
  const int64_t resident = int64_t(wb::sm_count()) * (2048 / kPassThreads);
  return unsigned(wb::round_up(std::max<int64_t>(std::min(want, resident), 1), int64_t{multiple}));
}

// The fused graph's scale and shift (K of each, FP32), folded before the graph runs.
__global__ void fold_kernel(BnParams bn, float* scale, float* shift, int K) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= K) return;
  const float sc = bn.gamma[k] / sqrtf(bn.var[k] + bn.eps);
  scale[k] = sc;
  shift[k] = bn.beta[k] - bn.mean[k] * sc;
}

// w [3][3][C] -> [C][3][3] (cuDNN's grouped filter, one input channel per group).
__global__ void transpose_dw_kernel(const bf16* w, bf16* out, int C) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;  // i = c * 9 + tap
  if (i >= 9 * C) return;
  out[i] = w[(i % 9) * C + i / 9];
}

constexpr int kThreads = 256;

// --- the launchers ----------------------------------------------------------------------------

void cudnn_conv2d_f32(const float* x, const float* w, float* y, ConvShape s, cudaStream_t stream) {
  require_valid(s);
  Plan& p = plan_for(Graph::F32, s);
  execute(p, stream, {{kX, x}, {kW, w}, {kY, y}});
}

void cudnn_separate(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape s,
                    cudaStream_t stream) {
  require_valid(s);
  Plan& p = plan_for(Graph::Bf16Conv, s);
  const int64_t total = int64_t(s.N) * s.P() * s.Q() * s.K;
  if (!p.scratch) p.scratch = std::make_unique<wb::DeviceBuffer<unsigned char>>(size_t(total) * sizeof(bf16));
  bf16* conv = reinterpret_cast<bf16*>(p.scratch->data());
  execute(p, stream, {{kX, x}, {kW, w}, {kY, conv}});
  bias_bn_relu_kernel<<<unsigned(wb::ceil_div(total, int64_t{kThreads})), kThreads, 0, stream>>>(conv, bn, residual, y,
                                                                                                 s.K, total);
  WB_CHECK_LAUNCH();
}

void cudnn_three_kernels(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape s,
                         cudaStream_t stream) {
  require_valid(s);
  Plan& p = plan_for(Graph::Bf16Conv, s);  // cudnn_separate's graph and plan
  execute(p, stream, {{kX, x}, {kW, w}, {kY, y}});
  const int64_t total = int64_t(s.N) * s.P() * s.Q() * s.K;
  if (s.K % 8 == 0 && wb::aligned16(y)) {
    const int kv = s.K / 8;  // the grid's threads a multiple of kv: a thread's vectors share channels
    const int multiple = kv / std::gcd(kv, kPassThreads);
    bn_inference_vec_kernel<<<pass_grid(total / 8, multiple), kPassThreads, 0, stream>>>(bn, y, s.K, total / 8);
  } else {
    bn_inference_kernel<<<pass_grid(total, 1), kPassThreads, 0, stream>>>(bn, y, s.K, total);
  }
  WB_CHECK_LAUNCH();
  const bool vec = wb::aligned16(y) && (residual == nullptr || wb::aligned16(residual));
  const unsigned grid = pass_grid(vec ? total / 8 : total, 1);
  if (residual) {
    residual_add_kernel<<<grid, kPassThreads, 0, stream>>>(y, residual, total, vec);
    WB_CHECK_LAUNCH();
  }
  relu_kernel<<<grid, kPassThreads, 0, stream>>>(y, total, vec);
  WB_CHECK_LAUNCH();
}

void cudnn_fused(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape s,
                 cudaStream_t stream) {
  require_valid(s);
  Plan& p = plan_for(residual ? Graph::Bf16FusedResidual : Graph::Bf16Fused, s);
  const size_t ld = wb::round_up(size_t(s.K), size_t{64});  // shift starts 256-byte aligned, as the graph declares 16
  if (!p.scratch) p.scratch = std::make_unique<wb::DeviceBuffer<unsigned char>>(2 * ld * sizeof(float));
  float* scale = reinterpret_cast<float*>(p.scratch->data());
  float* shift = scale + ld;
  fold_kernel<<<unsigned(wb::ceil_div(s.K, kThreads)), kThreads, 0, stream>>>(bn, scale, shift, s.K);
  WB_CHECK_LAUNCH();
  std::vector<std::pair<int64_t, const void*>> t = {{kX, x},         {kW, w},         {kBias, bn.bias},
                                                    {kScale, scale}, {kShift, shift}, {kY, y}};
  if (residual) t.push_back({kResidual, residual});
  execute(p, stream, t);
}

void cudnn_depthwise(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  require_valid_depthwise(N, H, W, C);
  const ConvShape s{N, H, W, C, C, 3, 3, 1, 1};
  Plan& p = plan_for(Graph::Depthwise, s);
  if (!p.scratch) p.scratch = std::make_unique<wb::DeviceBuffer<unsigned char>>(9 * size_t(C) * sizeof(bf16));
  bf16* wt = reinterpret_cast<bf16*>(p.scratch->data());
  transpose_dw_kernel<<<unsigned(wb::ceil_div(9 * C, kThreads)), kThreads, 0, stream>>>(w, wt, C);
  WB_CHECK_LAUNCH();
  execute(p, stream, {{kX, x}, {kW, wt}, {kY, y}});
}

}  // namespace

WB_VARIANTS(ch10_reference, wb::Role::Reference) {
  return {
      wb::variant("conv2d/f32", "cudnn_conv", &cudnn_conv2d_f32).is_library(),
      wb::variant("conv2d_bn_relu/bf16", "cudnn_separate", &cudnn_separate)
          .is_library()
          .with_note("cuDNN conv, then a bias + BN + ReLU kernel"),
      wb::variant("conv2d_bn_relu/bf16", "cudnn_three_kernels", &cudnn_three_kernels)
          .is_library()
          .with_note("cuDNN conv, then a BN kernel (the conv's bias in its affine), then a ReLU kernel "
                     "(a residual add kernel before it): PyTorch eager's layers"),
      wb::variant("conv2d_bn_relu/bf16", "cudnn_fused", &cudnn_fused)
          .is_library()
          .with_note("one cuDNN graph: conv + pointwise epilogue"),
      wb::variant("depthwise3x3/bf16", "cudnn_grouped", &cudnn_depthwise).is_library(),
  };
}

}  // namespace ch10::reference
