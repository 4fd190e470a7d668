// gpt2::Model (model.h): the weights and the KV cache on the device, the ops of ops.h with
// the kernel chosen per op, the prefill step, the decode step (one of decode/, which
// decode_once runs) and its CUDA Graph, the per-op timing, and the --check comparisons
// (op_check.cu).
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "ch06.cuh"
#include "ch07.cuh"
#include "ch09.cuh"
#include "runtime/buffers.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"
#include "kernels.cuh"
#include "model.h"
#include "model_impl.cuh"
#include "ops.h"
#include "quantize.h"
#include "reference/ch06_layernorm/reference.cuh"
#include "reference/ch09_gpt2/reference.cuh"
#include "solutions/ch06_layernorm/ladder.cuh"
#include "solutions/ch07_softmax_topk/ladder.cuh"
#include "solutions/ch08_flash_attention/ladder.cuh"
#include "solutions/ch09_gpt2/ladder.cuh"
#include "declare/op.cuh"

namespace gpt2 {

using bf16 = __nv_bfloat16;

namespace {

// Chapter 7's library top-k lives in an unnamed namespace: it is reached through the
// variant it registers with the harness, which also says how much workspace it needs.
const wb::Variant& library_topk() {
  for (const wb::Variant& v : wb::all_variants()) {
    if (v.op == "topk/f32" && v.role == wb::Role::Reference) return v;
  }
  throw std::runtime_error("chapter 7's library top-k (topk/f32, reference) is not linked into this program");
}

}  // namespace

// --- construction ----------------------------------------------------------------------

Model::Impl::Impl(const Weights& w, const Options& o) : opt(o), cfg(w.config) {
  validate(opt);  // the rules between the options' fields (options.cu)
  if (w.dtype != opt.dtype) throw std::invalid_argument("the weights' dtype differs from Options::dtype");
  const Kernels& k = opt.kernels;
  dtype = opt.dtype;
  es = dtype == wb::DType::F32 ? 4 : 2;
  C = cfg.n_embd, H = cfg.n_head, D = cfg.head_dim(), V = cfg.vocab, L = cfg.n_layer;
  cap = opt.max_seq > 0 ? std::min(opt.max_seq, cfg.n_ctx) : cfg.n_ctx;
  if (D > 128) throw std::invalid_argument("head size " + std::to_string(D) + " is above 128, which attention holds");

  // Weights: one allocation, every tensor 256-byte aligned.
  std::vector<const Tensor*> all = {&w.wte, &w.wpe, &w.ln_f_w, &w.ln_f_b};
  for (const Layer& l : w.layers) {
    for (const Tensor* t : {&l.ln_1_w, &l.ln_1_b, &l.attn_w, &l.attn_b, &l.attn_proj_w, &l.attn_proj_b, &l.ln_2_w,
                            &l.ln_2_b, &l.fc_w, &l.fc_b, &l.fc_proj_w, &l.fc_proj_b}) {
      all.push_back(t);
    }
  }
  size_t total = 0;
  for (const Tensor* t : all) total += round_up(t->bytes());
  wbuf = wb::DeviceBuffer<char>(total);
  weight_bytes = 0;
  std::map<const Tensor*, const void*> where;
  std::vector<UploadPiece> pieces;
  size_t off = 0;
  for (const Tensor* t : all) {
    pieces.push_back({wbuf.data() + off, t->data(), t->bytes()});
    where[t] = wbuf.data() + off;
    off += round_up(t->bytes());
    weight_bytes += double(t->bytes());
  }
  uploaded = upload(pieces, opt.upload, opt.upload_progress);
  wte = where[&w.wte], wpe = where[&w.wpe], ln_f_w = where[&w.ln_f_w], ln_f_b = where[&w.ln_f_b];
  for (const Layer& l : w.layers) {
    blocks.push_back({where[&l.ln_1_w], where[&l.ln_1_b], where[&l.attn_w], where[&l.attn_b], where[&l.attn_proj_w],
                      where[&l.attn_proj_b], where[&l.ln_2_w], where[&l.ln_2_b], where[&l.fc_w], where[&l.fc_b],
                      where[&l.fc_proj_w], where[&l.fc_proj_b]});
  }
  if (opt.weight_format == WeightFormat::Int8) quantize_weights(w);
  if (opt.weight_format == WeightFormat::Int4) quantize_weights_int4(w);

  // Activations for up to `cap` tokens at once (a prompt), and the step's small buffers.
  const size_t rows = size_t(cap);
  const size_t sizes[] = {rows * C * es,     rows * C * es, rows * C * es,    rows * C * es,
                          rows * 3 * C * es, rows * C * es, rows * 4 * C * es};
  // argmax: chapter 7's top-k with k = 1 on FP32 logits.
  const wb::Shape topk_shape{{"B", 1}, {"V", V}, {"k", 1}};
  if (k.argmax == Who::Library) {
    const wb::Variant& v = library_topk();
    argmax_fn = reinterpret_cast<ch07::TopKFn*>(const_cast<void*>(v.fn));
    topk_ws_bytes = v.workspace ? v.workspace(topk_shape) : 0;
  } else {
    argmax_fn = k.argmax == Who::Solution ? &ch07::solution::topk_split : &ch07::student::topk;
    topk_ws_bytes = ch07::workspace_bytes(1);
  }
  size_t act = 0;
  for (size_t s : sizes) act += round_up(s);
  // mean and rstd: one per row of a prompt, or of a batched step (Options::batch rows).
  const size_t stat_rows = std::max(rows, size_t(std::max(opt.batch, 1)));
  act += round_up(size_t(V) * es) + round_up(size_t(V) * 4) + 2 * round_up(stat_rows * 4) + round_up(topk_ws_bytes) +
         round_up(rows * 4) + 4 * round_up(16) + round_up((rows + 1) * 4) + round_up(8);
  abuf = wb::DeviceBuffer<char>(act);
  CUDA_CHECK(cudaMemset(abuf.data(), 0, act));  // the top-k workspace must start zeroed (ch07.cuh)
  char* p = abuf.data();
  auto take = [&](size_t bytes) {
    void* r = p;
    p += round_up(bytes);
    return r;
  };
  buf.resid = take(sizes[0]), buf.branch = take(sizes[1]), buf.tmp = take(sizes[2]), buf.ln = take(sizes[3]);
  buf.qkv = take(sizes[4]), buf.att = take(sizes[5]), buf.fc = take(sizes[6]);
  logits = take(size_t(V) * es);
  logits_f32 = static_cast<float*>(take(size_t(V) * 4));
  mean = static_cast<float*>(take(stat_rows * 4));
  rstd = static_cast<float*>(take(stat_rows * 4));
  topk_ws = take(topk_ws_bytes);
  d_tokens = static_cast<int32_t*>(take(rows * 4));
  d_pos = static_cast<int*>(take(16));
  d_token = static_cast<int32_t*>(take(16));
  d_next = static_cast<int32_t*>(take(16));
  top_i = static_cast<int32_t*>(take(16));
  d_history = static_cast<int32_t*>(take((rows + 1) * 4));
  top_v = static_cast<float*>(take(8));

  // The KV cache: per layer K then V, each [H][cap][D].
  const size_t per = size_t(H) * cap * D * es;
  kvbuf = wb::DeviceBuffer<char>(2 * L * round_up(per));
  CUDA_CHECK(cudaMemset(kvbuf.data(), 0, kvbuf.bytes()));
  for (int l = 0; l < L; ++l) {
    kc.push_back(kvbuf.data() + (2 * l) * round_up(per));
    vc.push_back(kvbuf.data() + (2 * l + 1) * round_up(per));
  }
  if (chapter8_attention()) {  // a prompt's attention on chapter 8's flash kernel
    const size_t rows = round_up(size_t(cap) * C * es), lse = round_up(size_t(H) * cap * 4);
    prefill_buf = wb::DeviceBuffer<char>(3 * rows + lse + 256);
    char* p = prefill_buf.data();
    pq = p, pk = p + rows, pv = p + 2 * rows;
    plse = reinterpret_cast<float*>(p + 3 * rows);
    d_cu = reinterpret_cast<int*>(p + 3 * rows + lse);
  }
  alloc_fused();                   // the fused decode step's buffers (fused_decode.cu)
  step = make_decode_step(*this);  // and the decode step's own: the persistent step's table
  alloc_batch();                   // the batched decode's caches and buffers (batch.cu)
  CUDA_CHECK(cudaMallocHost(&pinned, 4 * sizeof(int32_t)));
  CUDA_CHECK(cudaMemset(d_pos, 0, sizeof(int)));
  // The zeroing above (cudaMemset: the legacy default stream, asynchronous to the host) must be
  // done before the first op: the model's own stream is non-blocking and does not wait for
  // the legacy stream, so a prefill could otherwise race it (the KV cache, the top-k
  // workspace and the position zeroed under the kernels that fill them).
  CUDA_CHECK(cudaDeviceSynchronize());
}

Model::Impl::~Impl() {
  if (exec) cudaGraphExecDestroy(exec);
  for (auto& [B, e] : bexec) cudaGraphExecDestroy(e);
  if (bpinned) cudaFreeHost(bpinned);
  for (auto& m : marks) {
    cudaEventDestroy(m.a);
    cudaEventDestroy(m.b);
  }
  if (pinned) cudaFreeHost(pinned);
}

// --- INT8 weights (WeightFormat::Int8) ----------------------------------------------------

// The four matrices of every block that the decode GEMVs read (attn_qkv, attn_proj, mlp_fc,
// mlp_proj): each with its BF16 copy's device pointer (the key the block passes to linear) and
// its file name (for QuantizeError's message).
namespace {
struct BlockMatrix {
  const Tensor* t;
  const void* dev;
  std::string name;
};
std::vector<BlockMatrix> block_matrices(const Weights& w, const std::vector<BlockWeights>& blocks) {
  std::vector<BlockMatrix> out;
  for (size_t l = 0; l < blocks.size(); ++l) {
    const Layer& layer = w.layers[l];
    const BlockWeights& dev = blocks[l];
    const std::string h = "h." + std::to_string(l) + ".";
    out.push_back({&layer.attn_w, dev.attn_w, h + "attn.c_attn.weight"});
    out.push_back({&layer.attn_proj_w, dev.attn_proj_w, h + "attn.c_proj.weight"});
    out.push_back({&layer.fc_w, dev.fc_w, h + "mlp.c_fc.weight"});
    out.push_back({&layer.fc_proj_w, dev.fc_proj_w, h + "mlp.c_proj.weight"});
  }
  return out;
}

// Every block matrix quantized by `quantize` (which refuses one by name, throwing, before
// anything is uploaded), each beside the device pointer of the BF16 matrix it stands in for;
// `replaced` adds up the BF16 matrices' bytes.
template <class Quantized, class Quantize>
std::vector<std::pair<const void*, Quantized>> quantize_blocks(const Weights& w,
                                                               const std::vector<BlockWeights>& blocks,
                                                               Quantize quantize, double& replaced) {
  std::vector<std::pair<const void*, Quantized>> out;
  for (const BlockMatrix& b : block_matrices(w, blocks)) {
    out.emplace_back(b.dev, quantize(*b.t, b.name));
    replaced += double(b.t->bytes());
  }
  return out;
}
}  // namespace

// The host pieces (src, bytes) laid out one after another in one new qbuf, each from a 256-byte
// boundary, and uploaded: where each one landed, in their order.
std::vector<char*> Model::Impl::upload_quantized(std::vector<UploadPiece> pieces) {
  size_t total = 0;
  for (const UploadPiece& piece : pieces) total += round_up(piece.bytes);
  qbuf = wb::DeviceBuffer<char>(total);
  std::vector<char*> at;
  char* p = qbuf.data();
  for (UploadPiece& piece : pieces) {
    piece.dst = p;
    at.push_back(p);
    p += round_up(piece.bytes);
  }
  const UploadStats up = upload(pieces, opt.upload);
  uploaded.bytes += up.bytes;
  uploaded.ms += up.ms;
  return at;
}

// The four matrices of every block, quantized per output row on the host (quantize.h) and
// uploaded into one buffer beside the BF16 weights, which prefill and the LM head still use.
void Model::Impl::quantize_weights(const Weights& w) {
  // keyed by the BF16 matrix each one stands in for (its device pointer); quantize_rows throws
  // QuantizeError naming the tensor and row
  const auto mats = quantize_blocks<QuantizedMatrix>(
      w, blocks, [](const Tensor& t, const std::string& name) { return quantize_rows(t, name); }, replaced_bytes);
  std::vector<UploadPiece> pieces;
  for (const auto& [key, m] : mats) {
    pieces.push_back({nullptr, m.q.data(), m.q.size()});                          // q (N, K)
    pieces.push_back({nullptr, m.scale.data(), m.scale.size() * sizeof(float)});  // scale (N)
  }
  const std::vector<char*> at = upload_quantized(std::move(pieces));
  for (size_t i = 0; i < mats.size(); ++i) {
    int8_of[mats[i].first] = {reinterpret_cast<int8_t*>(at[2 * i]), reinterpret_cast<float*>(at[2 * i + 1])};
    int8_bytes += double(mats[i].second.bytes());
  }
}

void Model::Impl::gemv_int8(OpTag tag, const void* x, const Int8Matrix& m, const void* b, void* y, int N, int K,
                            ch09::Epilogue epi) {
  // int8 weights, FP32 scales, x in, y out, the bias: the op's bytes (spec.cu, gemv_w8a16).
  const double bytes = double(N) * K + 4.0 * N + 2.0 * K + 2.0 * N + (b ? 2.0 * N : 0.0);
  timed(tag, "solution w8a16", bytes, [&] {
    ch09::solution::gemv_w8a16(static_cast<const bf16*>(x), m.q, m.scale, static_cast<const bf16*>(b),
                               static_cast<bf16*>(y), N, K, epi, cur);
  });
  if (checking) check_linear_int8(tag, x, m, b, y, N, K, epi);
}

// --- INT4 weights (WeightFormat::Int4) ----------------------------------------------------

// The same four matrices of every block as INT4 in groups of 128 (quantize.h), uploaded into
// one buffer beside the BF16 weights. A shape the packing cannot take (K % 32 != 0) or a NaN is
// refused by name (QuantizeError) before anything is uploaded.
void Model::Impl::quantize_weights_int4(const Weights& w) {
  const auto mats = quantize_blocks<gpt2::Int4Matrix>(
      w, blocks, [](const Tensor& t, const std::string& name) { return quantize_int4(t, name); }, replaced_bytes);
  std::vector<UploadPiece> pieces;
  for (const auto& [key, m] : mats) {
    pieces.push_back({nullptr, m.packed.data(), m.packed.size()});  // (N, K / 2): every row 16-byte aligned
    pieces.push_back({nullptr, m.scale.data(), m.scale.size() * sizeof(float)});  // (N, G)
    pieces.push_back({nullptr, m.zero.data(), m.zero.size()});                    // (N, G)
  }
  const std::vector<char*> at = upload_quantized(std::move(pieces));
  for (size_t i = 0; i < mats.size(); ++i) {
    int4_of[mats[i].first] = {reinterpret_cast<uint8_t*>(at[3 * i]), reinterpret_cast<float*>(at[3 * i + 1]),
                              reinterpret_cast<uint8_t*>(at[3 * i + 2])};
    int4_bytes += double(mats[i].second.bytes());
  }
}

void Model::Impl::gemv_int4(OpTag tag, const void* x, const Int4Matrix& m, const void* b, void* y, int N, int K,
                            ch09::Epilogue epi) {
  // codes, FP32 scales and uint8 zero points per group, x in, y out, the bias (spec_int4.cu's bytes).
  const double G = std::ceil(double(K) / 128.0);
  const double bytes = double(N) * K / 2 + 5.0 * N * G + 2.0 * K + 2.0 * N + (b ? 2.0 * N : 0.0);
  timed(tag, "solution w4a16", bytes, [&] {
    ch09::solution::gemv_w4a16(static_cast<const bf16*>(x), m.q, m.scale, m.zero, static_cast<const bf16*>(b),
                               static_cast<bf16*>(y), N, K, epi, cur);
  });
  if (checking) check_linear_int4(tag, x, m, b, y, N, K, epi);
}

// --- timing and counting ---------------------------------------------------------------

void Model::Impl::timed(OpTag tag, const std::string& who, double bytes, const std::function<void()>& run) {
  if (!profiling || capturing) {
    run();
    return;
  }
  if (marks_used == marks.size()) {
    Mark m;
    CUDA_CHECK(cudaEventCreate(&m.a));
    CUDA_CHECK(cudaEventCreate(&m.b));
    marks.push_back(m);
  }
  Mark& m = marks[marks_used++];
  m.op = tag.name;
  m.who = who;
  m.bytes = bytes;
  CUDA_CHECK(cudaEventRecord(m.a, cur));
  run();
  CUDA_CHECK(cudaEventRecord(m.b, cur));
}

void Model::Impl::flush_profile() {
  if (marks_used == 0) return;
  CUDA_CHECK(cudaStreamSynchronize(stream));
  for (size_t i = 0; i < marks_used; ++i) {
    const Mark& m = marks[i];
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, m.a, m.b));
    auto it = totals.find(m.op);
    if (it == totals.end()) {
      order.push_back(m.op);
      it = totals.emplace(m.op, OpTime{m.op, m.who, 0, 0, 0}).first;
    }
    it->second.ms += ms;
    it->second.bytes += m.bytes;
    it->second.calls += 1;
  }
  marks_used = 0;
}

// --- the ops ---------------------------------------------------------------------------

void Model::Impl::residual_layernorm(OpTag tag, const void* x, const void* r, const void* gamma, const void* beta,
                                     void* h, void* y, int T) {
  const Who who = opt.kernels.layernorm;
  const float eps = static_cast<float>(kLayerNormEps);
  timed(tag, who_name(who), double(es) * (4.0 * T * C + 2.0 * C), [&] {
    if (dtype == wb::DType::BF16) {
      ch06::ResidualLayerNormFn* fn = who == Who::Library    ? &ch06::reference::cudnn_residual_layernorm
                                      : who == Who::Solution ? &ch06::solution::v4_residual_layernorm
                                                             : &ch06::student::residual_layernorm;
      fn(static_cast<const bf16*>(x), static_cast<const bf16*>(r), static_cast<const bf16*>(gamma),
         static_cast<const bf16*>(beta), static_cast<bf16*>(h), static_cast<bf16*>(y), mean, rstd, T, C, C, eps, cur);
    } else {
      kernels::residual_add(static_cast<const float*>(x), static_cast<const float*>(r), static_cast<float*>(h),
                            int64_t(T) * C, cur);
      ch06::LayerNormF32Fn* fn = who == Who::Library    ? &ch06::reference::cudnn_layernorm_f32
                                 : who == Who::Solution ? &ch06::solution::v4_layernorm_f32
                                                        : &ch06::student::layernorm_f32;
      fn(static_cast<const float*>(h), static_cast<const float*>(gamma), static_cast<const float*>(beta),
         static_cast<float*>(y), mean, rstd, T, C, C, eps, cur);
    }
  });
  if (checking) check_layernorm(tag, x, r, gamma, beta, h, y, T);
}

// Up to this many rows, the solution's linear layers take the skinny GEMM (v7_skinny_gemm).
constexpr int kSkinnyRows = 16;

void Model::Impl::linear(OpTag tag, const void* x, const void* w, const void* b, void* y, int T, int N, int K,
                         ch09::Epilogue epi) {
  if (T == 1 && !int8_of.empty()) {  // a decode GEMV whose matrix has an INT8 copy (not the LM head's wte)
    if (const auto it = int8_of.find(w); it != int8_of.end()) {
      gemv_int8(tag, x, it->second, b, y, N, K, epi);
      return;
    }
  }
  if (T == 1 && !int4_of.empty()) {  // the same for an INT4 copy
    if (const auto it = int4_of.find(w); it != int4_of.end()) {
      gemv_int4(tag, x, it->second, b, y, N, K, epi);
      return;
    }
  }
  const bool head = std::strcmp(tag.name, "lm_head") == 0;
  const bool gemv = T == 1;
  const Who who = head ? opt.kernels.lm_head : gemv ? opt.kernels.gemv : opt.kernels.gemm;
  const double bytes = double(es) * (double(N) * K + double(T) * K + double(T) * N + (b ? N : 0));
  timed(tag, who_name(who), bytes, [&] {
    if (dtype == wb::DType::BF16) {
      const auto* xx = static_cast<const bf16*>(x);
      const auto* ww = static_cast<const bf16*>(w);
      const auto* bb = static_cast<const bf16*>(b);
      auto* yy = static_cast<bf16*>(y);
      if (gemv) {
        ch09::GemvFn<bf16>* fn = who == Who::Library    ? &ch09::reference::cublaslt_gemv<bf16>
                                 : who == Who::Solution ? &ch09::solution::gemv_warp<bf16>
                                                        : &ch09::student::gemv;
        fn(xx, ww, bb, yy, N, K, epi, cur);
      } else {
        // A few rows (batched decode): the skinny GEMM, W read once per 8 rows; more (a prompt):
        // tensor cores with the epilogue fused, through wgmma and TMA on Hopper (v13_wgmma_bias_ahead),
        // through mma.sync elsewhere (v8_mma_epilogue).
        static const bool hopper = ch09::solution::linear_on_hopper_available();
        ch09::LinearFn<bf16>* solution = T <= kSkinnyRows ? &ch09::solution::linear_skinny<bf16>
                                         : hopper         ? &ch09::solution::linear_wgmma_bias_ahead
                                                          : &ch09::solution::linear_mma;
        ch09::LinearFn<bf16>* fn = who == Who::Library    ? &ch09::reference::cublaslt_linear<bf16>
                                   : who == Who::Solution ? solution
                                                          : &ch09::student::linear;
        fn(xx, ww, bb, yy, T, N, K, epi, cur);
      }
    } else {
      const auto* xx = static_cast<const float*>(x);
      const auto* ww = static_cast<const float*>(w);
      const auto* bb = static_cast<const float*>(b);
      auto* yy = static_cast<float*>(y);
      if (gemv) {
        auto* fn = who == Who::Library ? &ch09::reference::cublaslt_gemv<float> : &ch09::solution::gemv_warp<float>;
        fn(xx, ww, bb, yy, N, K, epi, cur);
      } else {
        auto* fn = who == Who::Library ? &ch09::reference::cublaslt_linear<float>
                   : T <= kSkinnyRows  ? &ch09::solution::linear_skinny<float>
                                       : &ch09::solution::linear_tiled<float>;
        fn(xx, ww, bb, yy, T, N, K, epi, cur);
      }
    }
  });
  if (checking) check_linear(tag, x, w, b, y, T, N, K, epi);
}

void Model::Impl::kv_append(OpTag tag, const void* qkv, int T) {
  if (batched) return batch_kv_append(tag, qkv, T);  // row t is sequence t (batch.cu)
  timed(tag, "model", double(es) * 4.0 * T * C, [&] {
    if (dtype == wb::DType::BF16) {
      kernels::kv_append(static_cast<const bf16*>(qkv), static_cast<bf16*>(kc[tag.layer]),
                         static_cast<bf16*>(vc[tag.layer]), d_pos, T, H, D, cap, cur);
    } else {
      kernels::kv_append(static_cast<const float*>(qkv), static_cast<float*>(kc[tag.layer]),
                         static_cast<float*>(vc[tag.layer]), d_pos, T, H, D, cap, cur);
    }
  });
  if (checking) check_kv_append(tag, qkv, T);
}

void Model::Impl::attention(OpTag tag, const void* qkv, void* att, int T) {
  if (batched) return batch_attention(tag, qkv, att, T);  // row t is sequence t (batch.cu)
  // K and V of every position seen, the queries, the output.
  const double bytes = double(es) * (2.0 * (pos + T) * C + 2.0 * T * C);
  // On the solution's kernels (BF16), chapter 8's: a decode step (one query) takes the
  // split-KV decode attention, as the fused step does (this chapter's kernel gives each head
  // one thread block: 12 to 25 blocks for a whole GPU); a prompt from an empty cache (T
  // queries over those same T keys) takes flash attention on tensor cores, as one sequence of
  // the ragged form. A prompt that continues a cache, FP32 and the other compositions: this
  // chapter's kernel.
  const bool ch8 = chapter8_attention() && opt.kernels.attention == Who::Solution;
  const bool split_kv = ch8 && T == 1, flash = ch8 && T > 1 && pos == 0;
  const float scale = 1.0f / std::sqrt(float(D));
  timed(tag,
        split_kv ? "ch08 v6 split-KV"
        : flash  ? "ch08 v4 flash"
                 : "model",
        bytes, [&] {
          if (split_kv) {
            ch08::solution::v6_decode_at_pos_bf16(
                static_cast<const bf16*>(qkv), static_cast<const bf16*>(kc[tag.layer]),
                static_cast<const bf16*>(vc[tag.layer]), d_pos, static_cast<bf16*>(att), attn_lse, 1, H, H, cap, D,
                scale, attn_scratch, cur);
          } else if (flash) {
            auto* q = static_cast<bf16*>(pq);
            auto* k = static_cast<bf16*>(pk);
            auto* v = static_cast<bf16*>(pv);
            kernels::split_qkv(static_cast<const bf16*>(qkv), q, k, v, d_cu, T, C, cur);
            ch08::solution::v4_attention_ragged_bf16(q, k, v, static_cast<bf16*>(att), plse, d_cu, 1, T, H, H, T, D,
                                                     scale, true, nullptr, cur);
          } else if (dtype == wb::DType::BF16) {
            kernels::attention(static_cast<const bf16*>(qkv), static_cast<const bf16*>(kc[tag.layer]),
                               static_cast<const bf16*>(vc[tag.layer]), d_pos, static_cast<bf16*>(att), T, H, D, cap,
                               cur);
          } else {
            kernels::attention(static_cast<const float*>(qkv), static_cast<const float*>(kc[tag.layer]),
                               static_cast<const float*>(vc[tag.layer]), d_pos, static_cast<float*>(att), T, H, D, cap,
                               cur);
          }
        });
  if (checking) check_attention(tag, qkv, att, T);
}

// --- a step: T tokens from `tokens` (device) at position *d_pos -------------------------

void Model::Impl::run_step(int T, const int32_t* tokens, cudaStream_t s) {
  cur = s;
  const auto row = [&](void* base, int t) { return static_cast<char*>(base) + size_t(t) * C * es; };
  timed({"embedding", -1}, "model", double(es) * 4.0 * T * C, [&] {
    with_element_type(dtype, [&](auto t) {
      using E = typename decltype(t)::type;
      kernels::embedding(tokens, d_pos, static_cast<const E*>(wte), static_cast<const E*>(wpe),
                         static_cast<E*>(buf.resid), static_cast<E*>(buf.branch), T, C, cur);
    });
  });
  if (checking) check_embedding(T);

  BlockFn* block = opt.kernels.block == Who::Student ? &ch09::student::block_forward : &solution::block_forward;
  for (int l = 0; l < L; ++l) block(*this, l, blocks[l], buf, T, C);

  // Only the last position's logits are needed: ln_f and the LM head on that row alone.
  residual_layernorm({"ln_f", -1}, row(buf.resid, T - 1), row(buf.branch, T - 1), ln_f_w, ln_f_b, buf.tmp, buf.ln, 1);
  linear({"lm_head", -1}, buf.ln, wte, nullptr, logits, 1, V, C, ch09::Epilogue::None);

  const Who who = opt.kernels.argmax;
  timed({"argmax", -1}, who_name(who), double(V) * (es + (dtype == wb::DType::BF16 ? 8 : 0)), [&] {
    const float* lf = static_cast<const float*>(logits);
    if (dtype == wb::DType::BF16) {
      kernels::to_float(static_cast<const bf16*>(logits), logits_f32, V, cur);
      lf = logits_f32;
    }
    argmax_fn(lf, top_v, top_i, 1, V, 1, topk_ws, cur);
    kernels::advance(top_i, d_next, d_token, d_pos, d_history, T, cur);
  });
  if (checking) check_argmax();
}

// --- decode: eager or one graph -------------------------------------------------------

void Model::Impl::decode_once(cudaStream_t s) {
  // --check runs the op-by-op step, whose ops it checks one by one.
  if (checking) {
    run_step(1, d_token, s);
  } else {
    step->run(s);
  }
}

bool Model::Impl::graph_wanted() const { return opt.graph && !profiling && !checking; }

CaptureFn* capture_fn(const Options& opt) {
  if (opt.capture != nullptr) return opt.capture;
  return opt.kernels.graph == Who::Student ? &ch09::student::capture_graph : &solution::capture_graph;
}

void Model::Impl::try_capture() {
  CaptureFn* capture = capture_fn(opt);
  capturing = true;
  try {
    exec = capture(stream, [this](cudaStream_t s) { decode_once(s); });
    capturing = false;
    if (exec == nullptr) throw std::runtime_error("the capture function returned no graph (a null cudaGraphExec_t)");
  } catch (const std::exception& e) {
    capturing = false;
    cur = stream;
    cudaGetLastError();
    if (opt.kernels.graph == Who::Student || opt.capture != nullptr)
      throw;  // the learner's (or a test's) capture: theirs to see
    graph_failed = true;
    graph_problem = e.what();
  }
}

void Model::Impl::decode_step() {
  if (graph_wanted()) {
    if (exec == nullptr && !graph_failed && eager_steps > 0) try_capture();
    if (exec != nullptr) {
      CUDA_CHECK(cudaGraphLaunch(exec, stream));
      return;
    }
  }
  decode_once(stream);
  ++eager_steps;
}

int Model::Impl::kernel_count() {
  if (eager_steps == 0) {  // the libraries' plans and workspaces are made on a first eager call
    throw std::logic_error("kernels_per_step: run a decode step first");
  }
  cudaGraph_t graph = nullptr;
  capturing = true;
  try {
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      decode_once(stream);
    } catch (...) {
      cudaStreamEndCapture(stream, &graph);
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  } catch (const std::exception& e) {
    capturing = false;
    cur = stream;
    cudaGetLastError();
    if (graph_problem.empty()) graph_problem = e.what();
    return -1;
  }
  capturing = false;
  size_t count = 0;
  CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  int kernels = 0;
  for (cudaGraphNode_t n : nodes) {
    cudaGraphNodeType type;
    CUDA_CHECK(cudaGraphNodeGetType(n, &type));
    if (type == cudaGraphNodeTypeKernel) ++kernels;
  }
  cudaGraphDestroy(graph);
  return kernels;
}

// --- the public API ----------------------------------------------------------------------

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Model Model::from_weights(const Weights& w, const Options& options) {
  return Model(std::make_unique<Impl>(w, options));
}

Model Model::load(const std::string& path, const Options& options) {
  LoadOptions lo;
  lo.dtype = options.dtype;
  lo.progress = options.progress;
  const Weights w = load_weights(path, lo);
  return from_weights(w, options);
}

const Config& Model::config() const { return impl_->cfg; }
const Options& Model::options() const { return impl_->opt; }
int Model::position() const { return impl_->pos; }
int Model::capacity() const { return impl_->cap; }
double Model::weight_bytes() const { return impl_->weight_bytes; }
double Model::int8_weight_bytes() const { return impl_->int8_bytes; }
double Model::int4_weight_bytes() const { return impl_->int4_bytes; }
double Model::decode_weight_bytes() const {
  return impl_->weight_bytes - impl_->replaced_bytes + impl_->int8_bytes + impl_->int4_bytes;
}
UploadStats Model::upload_stats() const { return impl_->uploaded; }
double Model::kv_bytes_per_token_at(int position) const {
  return 2.0 * impl_->L * double(position) * impl_->C * double(impl_->es);
}

void Model::Impl::require_tokens(std::span<const int32_t> tokens, int room) const {
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= V) {
      throw std::invalid_argument("token " + std::to_string(i) + " is " + std::to_string(tokens[i]) +
                                  ": token ids are 0 .. " + std::to_string(V - 1) + " for this model");
    }
  }
  if (room > cap) {
    throw std::invalid_argument("the sequence needs " + std::to_string(room) + " positions; the cache holds " +
                                std::to_string(cap) + " (n_ctx " + std::to_string(cfg.n_ctx) + ")");
  }
}

int Model::prefill(std::span<const int32_t> prompt) {
  Impl& m = *impl_;
  if (prompt.empty()) throw std::invalid_argument("the prompt is empty: give at least one token");
  m.require_tokens(prompt, static_cast<int>(prompt.size()));
  const int T = static_cast<int>(prompt.size());
  m.prompt.assign(prompt.begin(), prompt.end());
  m.pos = 0;
  CUDA_CHECK(cudaMemsetAsync(m.d_pos, 0, sizeof(int), m.stream));
  CUDA_CHECK(cudaMemcpyAsync(m.d_tokens, prompt.data(), prompt.size_bytes(), cudaMemcpyHostToDevice, m.stream));
  m.ev_a.record(m.stream);
  m.run_step(T, m.d_tokens, m.stream);
  m.ev_b.record(m.stream);
  CUDA_CHECK(cudaMemcpyAsync(m.pinned, m.d_next, sizeof(int32_t), cudaMemcpyDeviceToHost, m.stream));
  wb::sync_with_deadline(m.stream, "gpt2 prefill");
  m.prefill_ms = m.ev_b.ms_since(m.ev_a);
  m.pos = T;
  m.flush_profile();
  return m.pinned[0];
}

std::vector<float> Model::forward(std::span<const int32_t> tokens) {
  prefill(tokens);
  return logits();
}

int Model::decode(int32_t token) {
  Impl& m = *impl_;
  m.require_tokens(std::span<const int32_t>(&token, 1), m.pos + 1);
  if (m.pos == 0) throw std::logic_error("decode before prefill: run prefill(prompt) first");
  m.pinned[1] = token;
  CUDA_CHECK(cudaMemcpyAsync(m.d_token, &m.pinned[1], sizeof(int32_t), cudaMemcpyHostToDevice, m.stream));
  m.decode_step();
  CUDA_CHECK(cudaMemcpyAsync(&m.pinned[2], m.d_next, sizeof(int32_t), cudaMemcpyDeviceToHost, m.stream));
  wb::sync_with_deadline(m.stream, "gpt2 decode step");
  m.pos += 1;
  m.flush_profile();
  return m.pinned[2];
}

std::vector<int32_t> Model::generate(int n) {
  Impl& m = *impl_;
  if (n < 1) return {};
  if (m.pos == 0) throw std::logic_error("generate before prefill: run prefill(prompt) first");
  if (m.pos + n > m.cap) {
    throw std::invalid_argument(std::to_string(n) + " new tokens after " + std::to_string(m.pos) +
                                " do not fit the cache of " + std::to_string(m.cap) + " positions");
  }
  m.ev_a.record(m.stream);
  for (int i = 0; i < n; ++i) m.decode_step();
  m.ev_b.record(m.stream);
  std::vector<int32_t> out(n);
  CUDA_CHECK(
      cudaMemcpyAsync(out.data(), m.d_history + m.pos + 1, sizeof(int32_t) * n, cudaMemcpyDeviceToHost, m.stream));
  wb::sync_with_deadline(m.stream, "gpt2 decode loop");
  m.gen_ms = m.ev_b.ms_since(m.ev_a);
  m.pos += n;
  m.flush_profile();
  return out;
}

double Model::last_generate_ms() const { return impl_->gen_ms; }
double Model::last_prefill_ms() const { return impl_->prefill_ms; }

std::vector<float> Model::logits() const {
  const Impl& m = *impl_;
  std::vector<float> out(m.V);
  if (m.dtype == wb::DType::F32) {
    CUDA_CHECK(cudaMemcpy(out.data(), m.logits, sizeof(float) * m.V, cudaMemcpyDeviceToHost));
  } else {
    std::vector<wb::BFloat16> raw(m.V);
    CUDA_CHECK(cudaMemcpy(raw.data(), m.logits, 2 * size_t(m.V), cudaMemcpyDeviceToHost));
    for (int i = 0; i < m.V; ++i) out[i] = wb::bf16_to_float(raw[i]);
  }
  return out;
}

void Model::set_profiling(bool on) { impl_->profiling = on; }
void Model::reset_profile() {
  impl_->totals.clear();
  impl_->order.clear();
}
std::vector<OpTime> Model::op_times(int tokens) const {
  std::vector<OpTime> out;
  const double n = std::max(tokens, 1);
  for (const auto& name : impl_->order) {
    OpTime t = impl_->totals.at(name);
    t.ms /= n;
    t.bytes /= n;
    t.calls = static_cast<int>(std::lround(t.calls / n));
    out.push_back(t);
  }
  return out;
}

int Model::kernels_per_step() { return impl_->kernel_count(); }
bool Model::graph_active() const { return impl_->exec != nullptr && impl_->graph_wanted(); }
std::string Model::graph_problem() const { return impl_->graph_problem; }

CheckReport Model::check_ops(std::span<const int32_t> prompt) {
  Impl& m = *impl_;
  m.report = CheckReport{};
  m.checking = true;
  try {
    const int next = prefill(prompt);
    // The INT8 (INT4) GEMVs run in decode steps only (prefill keeps the BF16 GEMMs): check one.
    if (!m.int8_of.empty() || !m.int4_of.empty()) {
      if (m.pos < m.cap) {
        m.prompt = {next};  // the step's token, for the embedding check
        decode(next);
      } else {
        m.report.lines.push_back(std::string("decode step: not checked, the prompt fills the cache (") +
                                 (m.int8_of.empty() ? "INT4" : "INT8") + " GEMVs not checked)");
      }
    }
  } catch (...) {
    m.checking = false;
    throw;
  }
  m.checking = false;
  return m.report;
}

}  // namespace gpt2
