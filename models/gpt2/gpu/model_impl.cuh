// The inside of gpt2::Model, shared by model.cu (the ops, the steps), op_check.cu (the
// --check comparisons), graph_check.cu (the graph's checks), fused_decode.cu, batch.cu and
// the decode steps (decode/). Not part of the model's interface.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "ch07.cuh"
#include "decode/decode_step.h"
#include "runtime/buffers.cuh"
#include "device/math.cuh"
#include "model.h"
#include "ops.h"
#include "upload.cuh"

namespace gpt2 {

// The bytes a buffer carved from one of the model's allocations takes: its size rounded up to
// 256, so that the next buffer starts 256-byte aligned.
inline size_t round_up(size_t n) { return wb::round_up(n, size_t{256}); }

// The decode step's capture: Options::capture when given, else the one kernels.graph names.
CaptureFn* capture_fn(const Options& opt);

// Calls f(std::type_identity<T>{}) with T the element type of a model in `dtype`: bf16 for
// BF16, float for F32 (a launch written once for both).
template <class F>
void with_element_type(wb::DType dtype, F&& f) {
  if (dtype == wb::DType::BF16) {
    f(std::type_identity<__nv_bfloat16>{});
  } else {
    f(std::type_identity<float>{});
  }
}

struct Model::Impl final : Ops {
  Impl(const Weights& w, const Options& o);
  ~Impl() override;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Ops (ops.h)
  void residual_layernorm(OpTag tag, const void* x, const void* r, const void* gamma, const void* beta, void* h,
                          void* y, int T) override;
  void linear(OpTag tag, const void* x, const void* w, const void* b, void* y, int T, int N, int K,
              ch09::Epilogue epi) override;
  void kv_append(OpTag tag, const void* qkv, int T) override;
  void attention(OpTag tag, const void* qkv, void* att, int T) override;

  void run_step(int T, const int32_t* tokens, cudaStream_t s);
  void decode_step();
  void try_capture();
  bool graph_wanted() const;
  int kernel_count();
  void require_tokens(std::span<const int32_t> tokens, int room) const;
  void timed(OpTag tag, const std::string& who, double bytes, const std::function<void()>& run);
  void flush_profile();

  // --check (op_check.cu): each compares the op's output with float64 on the same inputs.
  void check_embedding(int T);
  void check_layernorm(OpTag tag, const void* x, const void* r, const void* gamma, const void* beta, const void* h,
                       const void* y, int T);
  void check_linear(OpTag tag, const void* x, const void* w, const void* b, const void* y, int T, int N, int K,
                    ch09::Epilogue epi);
  void check_kv_append(OpTag tag, const void* qkv, int T);
  void check_attention(OpTag tag, const void* qkv, const void* att, int T);
  void check_argmax();
  void record(OpTag tag, const std::string& failure, double worst_ratio);
  std::vector<double> fetch(const void* p, size_t n) const;  // device elements of the model's dtype, as double

  // INT8 weights (WeightFormat::Int8): the int8 copy of each quantized matrix with its
  // per-row scales, found by the BF16 matrix's device pointer (what the block passes to linear).
  struct Int8Matrix {
    const int8_t* q;     // (N, K)
    const float* scale;  // (N)
  };
  void quantize_weights(const Weights& w);  // on load: quantize, upload, fill int8_of
  void gemv_int8(OpTag tag, const void* x, const Int8Matrix& m, const void* b, void* y, int N, int K,
                 ch09::Epilogue epi);
  void check_linear_int8(OpTag tag, const void* x, const Int8Matrix& m, const void* b, const void* y, int N, int K,
                         ch09::Epilogue epi);
  std::map<const void*, Int8Matrix> int8_of;
  wb::DeviceBuffer<char> qbuf;  // every int8 (or int4) matrix and its scales (and zero points)
  std::vector<char*> upload_quantized(std::vector<UploadPiece> pieces);  // into a new qbuf: where each landed
  double int8_bytes = 0, replaced_bytes = 0;  // the INT8 copies; the BF16 matrices they stand in for

  // INT4 weights (WeightFormat::Int4): the same four matrices per block as 4-bit codes in groups
  // of 128 along K, each group with an FP32 scale and a zero point (models/gpt2/quantize.h, the
  // layout of ch09.cuh), found by the BF16 matrix's device pointer as int8_of.
  struct Int4Matrix {
    const uint8_t* q;     // (N, K / 2) codes
    const float* scale;   // (N, G), G = ceil(K / 128)
    const uint8_t* zero;  // (N, G)
  };
  void quantize_weights_int4(const Weights& w);  // on load: quantize, upload, fill int4_of
  void gemv_int4(OpTag tag, const void* x, const Int4Matrix& m, const void* b, void* y, int N, int K,
                 ch09::Epilogue epi);
  void check_linear_int4(OpTag tag, const void* x, const Int4Matrix& m, const void* b, const void* y, int N, int K,
                         ch09::Epilogue epi);
  std::map<const void*, Int4Matrix> int4_of;
  double int4_bytes = 0;  // the INT4 copies: codes, scales, zero points

  // The decode step (decode/decode_step.h): the one Options::decode names, made on load.
  // decode_once runs it (or, under --check, the op-by-op step, whose ops are checked).
  std::unique_ptr<DecodeStep> step;
  void decode_once(cudaStream_t s);

  // Buffers of the fused step that the op-by-op step's decode attention shares
  // (fused_decode.cu), allocated whatever Options::decode says.
  void alloc_fused();                // on load: the buffers below
  bool chapter8_attention() const;   // BF16 and a head size chapter 8's decode kernels take
  wb::DeviceBuffer<char> fused_buf;  // chapter 8's scratch and lse, the argmax's workspace
  void* attn_scratch = nullptr;      // ch08::decode_scratch_bytes(1, H, H, cap, D)
  float* attn_lse = nullptr;         // (H)
  void* argmax_ws = nullptr;         // ch09::solution::gemv_argmax_workspace_bytes(), zeroed once

  // A prompt's attention on chapter 8's flash kernel (model.cu, attention): q, k and v
  // packed token-major, each (cap, C), the kernel's lse (H, cap) and cu_seqlens (2).
  wb::DeviceBuffer<char> prefill_buf;
  void *pq = nullptr, *pk = nullptr, *pv = nullptr;
  float* plse = nullptr;
  int* d_cu = nullptr;

  // Batched decode (Options::batch; batch.cu). While `batched` is set (inside batch_step),
  // row b of T = B rows is sequence b: kv_append and attention work on the batched cache at
  // each sequence's own position d_bpos[b].
  void alloc_batch();                      // on load: the buffers below (none when batch is 1)
  void batch_step(int B, cudaStream_t s);  // one batched step: B tokens at B positions
  void batch_decode_step(int B);           // eager the first time for this B, then its graph
  void batch_kv_append(OpTag tag, const void* qkv, int B);
  void batch_attention(OpTag tag, const void* qkv, void* att, int B);
  bool batched = false;
  int nbatch = 0;        // sequences of the last prefill_batch
  size_t seq_bytes = 0;  // one sequence's K (or V) cache of one layer: H * cap * D * es
  wb::DeviceBuffer<char> bkvbuf, bbuf;
  std::vector<void*> kb, vb;                       // per layer: [batch][H][cap][D]
  BlockBuffers bb{};                               // the block's activations, `batch` rows
  void* bq = nullptr;                              // (batch, C) the queries, packed for chapter 8's kernel
  void* blogits = nullptr;                         // (batch, V) in the model's dtype
  float* blogits_f32 = nullptr;                    // (batch, V)
  float* btop_v = nullptr;                         // (batch)
  int32_t* btop_i = nullptr;                       // (batch)
  void* battn_scratch = nullptr;                   // chapter 8's scratch for any B <= batch
  float* battn_lse = nullptr;                      // (batch, H)
  int32_t* d_btoken = nullptr;                     // (batch) the step's input tokens
  int32_t* d_bnext = nullptr;                      // (batch) their greedy next tokens
  int* d_bpos = nullptr;                           // (batch) tokens in each sequence's cache
  int32_t* d_bhistory = nullptr;                   // (batch, cap + 1) predicted token per position
  int32_t* bpinned = nullptr;                      // (2 * batch) pinned ints for the step's copies
  std::vector<int> bpos;                           // host mirror of d_bpos
  std::map<int, wb::DeviceBuffer<char>> btopk_ws;  // the top-k's workspace per B (its layout depends on B)
  std::map<int, cudaGraphExec_t> bexec;            // the batched step's graph per B
  std::map<int, int> beager;                       // eager batched steps per B
  double batch_gen_ms = 0;

  Options opt;
  Config cfg;
  wb::DType dtype = wb::DType::BF16;
  size_t es = 2;  // bytes per element
  int C = 0, H = 0, D = 0, V = 0, L = 0, cap = 0;
  double weight_bytes = 0;
  UploadStats uploaded;

  wb::Stream stream;
  cudaStream_t cur = nullptr;  // the stream the ops launch on (the capture stream while capturing)
  wb::DeviceBuffer<char> wbuf, abuf, kvbuf;
  const void *wte = nullptr, *wpe = nullptr, *ln_f_w = nullptr, *ln_f_b = nullptr;
  std::vector<BlockWeights> blocks;
  BlockBuffers buf{};
  void* logits = nullptr;       // (V) in the model's dtype
  float* logits_f32 = nullptr;  // (V) FP32 for the top-k
  float *mean = nullptr, *rstd = nullptr;
  float* top_v = nullptr;
  int32_t* top_i = nullptr;
  void* topk_ws = nullptr;
  size_t topk_ws_bytes = 0;
  ch07::TopKFn* argmax_fn = nullptr;
  int32_t* d_tokens = nullptr;   // (cap) the prompt
  int* d_pos = nullptr;          // tokens in the cache: read by the step's kernels
  int32_t* d_token = nullptr;    // the decode step's input token
  int32_t* d_next = nullptr;     // its greedy next token
  int32_t* d_history = nullptr;  // (cap + 1) predicted token per position
  std::vector<void*> kc, vc;     // per layer: [H][cap][D]
  int32_t* pinned = nullptr;     // 4 pinned ints for the step's small copies
  std::vector<int32_t> prompt;   // the last prompt, for the embedding check
  int pos = 0;                   // host mirror of *d_pos

  cudaGraphExec_t exec = nullptr;
  bool graph_failed = false, capturing = false;
  std::string graph_problem;
  int eager_steps = 0;

  struct Mark {
    std::string op, who;
    double bytes = 0;
    cudaEvent_t a = nullptr, b = nullptr;
  };
  bool profiling = false;
  std::vector<Mark> marks;
  size_t marks_used = 0;
  std::map<std::string, OpTime> totals;
  std::vector<std::string> order;

  bool checking = false;
  CheckReport report;

  wb::Event ev_a, ev_b;
  double prefill_ms = 0, gen_ms = 0;
};

}  // namespace gpt2
