// GPT-2 on the GPU, built from the book's kernels, with the kernel of each op chosen at run time.
//
//   auto model = gpt2::Model::load("model.safetensors", {.dtype = wb::DType::BF16,
//                                   .kernels = gpt2::Kernels::parse("solution", "layernorm:student")});
//   std::vector<float> logits = model.forward(tokens);   // (vocab): the last token's logits
//   int next = model.prefill(prompt);                    // the KV-cache path: greedy next token
//   next = model.decode(next);                           // one more token, from the cache
//
// Per layer: LN_1 → QKV GEMM → KV cache append → causal attention → projection → (residual
// fused into) LN_2 → MLP GEMM + GELU → projection; final LayerNorm; the LM head tied to the
// token embedding (a GEMV on the last position); argmax (chapter 7's top-k with k = 1).
//
// The KV cache: per layer, keys and values of one sequence, contiguous, head-major:
//   k_cache[l][h][p][d], v_cache[l][h][p][d]   (H heads, P = n_ctx positions, D = C / H)
// in the model's dtype — the [b][h][j][d] layout of chapter 8 with B = 1.
// The decode step reads its token and position from device memory and advances them itself,
// so the same launches — or one CUDA Graph of them — serve every step.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "capture.h"
#include "declare/dtype.h"
#include "upload.cuh"
#include "weights.h"

namespace gpt2 {

enum class Who { Library, Solution, Student };
const char* who_name(Who w);

// Whose kernel runs each op. Parsed from --kernels=library|solution|student and
// --use=op:who,op:who,... (ops: embedding, layernorm, gemm, gemv, attention, lm_head,
// argmax, block, graph). parse() throws std::invalid_argument naming the bad piece.
struct Kernels {
  Who embedding = Who::Solution;  // token + position rows (a gather: the model's own kernel)
  Who layernorm = Who::Solution;  // chapter 6: residual add + LayerNorm
  Who gemm = Who::Solution;       // exercise 1: the prefill matmuls with their epilogues
  Who gemv = Who::Solution;       // exercise 2: the same at T = 1 (decode)
  Who attention = Who::Solution;  // causal attention: this chapter's kernel; decode (BF16) on the
                                  // solution: chapter 8's split-KV kernel (see docs)
  Who lm_head = Who::Solution;    // logits = x · wteᵀ, a GEMV of exercise 2
  Who argmax = Who::Solution;     // chapter 7: top-k with k = 1
  Who block = Who::Solution;      // exercise 3: the block's wiring (host code)
  Who graph = Who::Solution;      // exercise 4: the decode step's capture (host code)

  static Kernels all(Who w);
  static Kernels parse(std::string_view kernels, std::string_view use = {});
  std::string describe() const;  // "layernorm:student gemm:solution ..."
  static std::vector<std::string> op_names();
};

// How a decode step (T = 1) runs. One value, so that a combination the model has no step for
// ("persistent" without "fused") cannot be written down.
enum class DecodePath {
  // One kernel per op, as `kernels` picks (model.cu's ops; decode/ops_step.cu).
  Ops,
  // The fused decode step (decode/fused_step.cu): every decode step runs the solution's v6
  // kernels — the LayerNorms in the GEMVs' prologues, the residual adds in their epilogues,
  // kv_append in the QKV projection's, the LM head and argmax in one kernel — and chapter 8's
  // split-KV attention (BF16), whatever `kernels` says for those ops; prefill keeps `kernels`.
  // Not the default until it has been verified on a GPU (gpt2 --decode=fused --check, and the
  // FusedDecode tests of tests/model_test.cu).
  Fused,
  // The fused step with its L layers in ONE persistent kernel instead of 5 L kernels
  // (decode/persistent_step.cu, solutions/ch09_gpt2/decode/v9_persistent_decode.cu; BF16
  // weights, a GPU that launches cooperative kernels). The embedding before it and ln_f + the
  // LM head + argmax after it are the fused step's.
  Persistent,
};
const char* decode_path_name(DecodePath p);  // "ops", "fused", "persistent": gpt2's --decode= spelling

// The weights the decode GEMVs read.
enum class WeightFormat {
  Native,  // the model's own, in its dtype (BF16 or FP32)
  // INT8 copies (W8A16; BF16 only): the decode GEMVs (T = 1) of attn_qkv, attn_proj, mlp_fc
  // and mlp_proj read int8 copies of their matrices, quantized per output row on load
  // (models/gpt2/quantize.h), through the solution's v5_gemv_w8a16 (so gemv must be the
  // solution's). Prefill (T > 1) keeps the BF16 GEMMs and the LM head stays BF16 (wte), so
  // both copies are on the GPU: int8_weight_bytes() more memory. With DecodePath::Fused the
  // fused step's kernels read the int8 copies (v6_fused_decode's W8A16 forms).
  Int8,
  // INT4 copies (W4A16; BF16 only) of the same four matrices, in groups of 128 along K with an
  // FP32 scale and a zero point each (models/gpt2/quantize.h), read by the solution's
  // v10_gemv_w4a16 op by op (gemv must be the solution's) and by v14_w4a16_loads_ahead with
  // DecodePath::Fused. Prefill and the LM head stay BF16, as with Int8. No persistent form.
  Int4,
};
const char* weight_format_flag(WeightFormat f);  // "" (Native), "--int8", "--int4": gpt2's spelling

struct Options {
  wb::DType dtype = wb::DType::BF16;  // BF16 or F32: weights, activations, KV cache
  Kernels kernels{};
  bool graph = true;   // replay the decode step as a CUDA Graph (from the second step on)
  bool check = false;  // compare every op with a float64 host computation (slow)
  int max_seq = 0;     // KV cache positions; 0: n_ctx
  std::function<void(const LoadProgress&)> progress = nullptr;  // while loading
  UploadMode upload = UploadMode::Staged;  // weights to the GPU through pinned staging (upload.cuh)
  std::function<void(size_t done, size_t total)> upload_progress = nullptr;  // bytes handed to the GPU
  WeightFormat weight_format = WeightFormat::Native;
  DecodePath decode = DecodePath::Ops;
  // Batched decode (prefill_batch, decode_batch, generate_batch): room for up to `batch`
  // sequences, each with its own KV cache, [layer][b][H][cap][D], beside the single
  // sequence's, and the activations of `batch` rows. 0 (the default): no batched decode,
  // and nothing allocated for it. The batched step is op by op (the GEMMs of exercise 1 at
  // M = B rows) whatever `decode` says; with WeightFormat::Int8 a batch of one uses the INT8
  // GEMVs, larger ones the BF16 GEMMs.
  int batch = 0;
  // The decode step's capture function in place of the one kernels.graph names (a test of
  // the graph's checks passes a wrong one). Null: kernels.graph's.
  CaptureFn* capture = nullptr;
};

// The rules between Options' fields that need neither the weights nor a GPU (options.cu):
// the dtype is BF16 or F32; FP32 takes no learner's matmul; INT8 and INT4 weights need BF16
// and the solution's GEMV; the persistent step needs BF16 and no INT8 or INT4 weights
// (it has no quantized form); batch >= 0. Throws
// std::invalid_argument naming the rule and what to do, in gpt2's flags. Model's constructor
// calls it, and so does gpt2's argument parser, which so refuses a bad line before any GPU
// work. `composition`: how the caller names options.kernels in its messages (the tool:
// "--kernels=library"); empty: by the op ("gemv:library").
void validate(const Options& options, std::string_view composition = {});

// Two sets of logits compared (the checks below, gpt2's --check): the relative L2 of got - ref
// against ref, and the largest |got - ref| (infinite where a difference is not finite).
struct LogitsDiff {
  double rel_l2 = 0, max_abs = 0;
};
template <class Ref>  // float or double
LogitsDiff logits_diff(const std::vector<float>& got, const std::vector<Ref>& ref) {
  LogitsDiff r;
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = double(got[i]) - ref[i];
    num += d * d;
    den += double(ref[i]) * ref[i];
    r.max_abs = std::isfinite(d) ? std::max(r.max_abs, std::fabs(d)) : INFINITY;
  }
  r.rel_l2 = std::sqrt(num / std::max(den, 1e-300));
  return r;
}

// The fused decode step against the op-by-op step from the same state (check_fused_decode).
struct FusedDecodeCheck {
  double rel_l2 = 0;       // relative L2 of the fused step's logits against the op-by-op step's
  int32_t ops_token = -1;  // the greedy next token of each step
  int32_t fused_token = -1;
  double max_abs_diff = 0;  // the largest |fused logit - op-by-op logit|
  double tie_gap = 0;       // op-by-op logit of ops_token minus that of fused_token: 0 when they agree
  // The tokens agree, or differ on a near tie that the logits' differences can explain.
  bool tokens_consistent() const { return fused_token == ops_token || tie_gap <= 2 * max_abs_diff; }
};

// The batched step against single-sequence steps from the same state (check_batch_decode):
// per sequence b, its row of the batched logits against the single step's logits.
struct BatchDecodeCheck {
  double rel_l2 = 0;                                 // the worst relative L2 over the sequences
  double max_abs_diff = 0;                           // the largest |batched logit - single logit|
  std::vector<int32_t> single_tokens, batch_tokens;  // each sequence's greedy next token
  std::vector<double> tie_gaps;                      // single logit of single_tokens[b] minus that of batch_tokens[b]
  // Every sequence's tokens agree, or differ on a near tie the logits' differences explain.
  bool tokens_consistent() const {
    for (size_t b = 0; b < batch_tokens.size(); ++b) {
      if (batch_tokens[b] != single_tokens[b] && tie_gaps[b] > 2 * max_abs_diff) return false;
    }
    return true;
  }
};

// One row of the per-op table.
struct OpTime {
  std::string op;    // "attn_qkv", "attention", ...
  std::string who;   // whose kernel ran
  double ms = 0;     // summed over the layers, per token
  double bytes = 0;  // minimum DRAM traffic per token (weights, activations, cache)
  int calls = 0;     // per token
};

// Where a --check run first diverged.
struct CheckReport {
  bool ok = true;
  std::string first_failure;  // "layer 1 attn_proj: y[0][17] = ..., expected ... (tolerance ...)"
  int ops_checked = 0;
  std::vector<std::string> lines;  // one per op checked (for the tool)
};

// A capture function's error path: given a step that puts work on a stream and then throws,
// `capture` must end the capture and let an exception through, leaving the stream out of
// capture mode and usable. Returns "" or what went wrong (graph_check.cu).
std::string check_capture_error_path(CaptureFn* capture);

class Model {
 public:
  static Model load(const std::string& path, const Options& options);
  static Model from_weights(const Weights& w, const Options& options);  // w's dtype must be options.dtype
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  const Config& config() const;
  const Options& options() const;

  // The last position's logits (V) after the whole sequence, computed from an empty cache.
  std::vector<float> forward(std::span<const int32_t> tokens);
  // Empties the cache, runs the prompt (one pass over T tokens), returns the greedy next token.
  int prefill(std::span<const int32_t> prompt);
  // Appends `token` at the next position, returns the greedy next token.
  int decode(int32_t token);
  // The logits (V) of the last prefill / decode step, as FP32.
  std::vector<float> logits() const;
  int position() const;  // tokens in the cache
  int capacity() const;  // positions the cache holds

  // `n` greedy steps from the current state on the device, feeding each argmax back
  // without the host; returns the tokens. Timed: decode_ms() is the whole loop's time.
  std::vector<int32_t> generate(int n);
  double last_generate_ms() const;
  double last_prefill_ms() const;  // events around the last prefill (TTFT on the GPU)

  // Batched decode (Options::batch). B sequences, each with its own cache and position:
  //   auto next = model.prefill_batch({p0, p1, p2});   // B = 3: each prompt into its own cache
  //   next = model.decode_batch(next);                  // one token each, one step for all
  // prefill_batch runs the prompts one after the other through prefill() (so the single
  // sequence's state is the last prompt's afterwards) and copies each cache into its slot.
  // The batched step reads its B tokens and B positions from device memory and is replayed
  // as one CUDA Graph per batch size. It does not touch the single sequence's cache.
  std::vector<int32_t> prefill_batch(const std::vector<std::vector<int32_t>>& prompts);
  std::vector<int32_t> decode_batch(std::span<const int32_t> tokens);  // one token per sequence
  // `n` batched steps on the device, each sequence fed its own argmax; returns each
  // sequence's n tokens. Timed like generate(): last_generate_ms() is the whole loop's time.
  std::vector<std::vector<int32_t>> generate_batch(int n);
  std::vector<float> batch_logits(int b) const;  // sequence b's logits (V) of the last batched step
  int batch_size() const;                        // sequences of the last prefill_batch (0: none)
  std::vector<int> batch_positions() const;      // each sequence's tokens in its cache
  // From the current batched state, each sequence's single-sequence step (its cache copied
  // into the single sequence's) and then one batched step, all fed `tokens`; compares the
  // logits row by row. The batch is left as after one batched step.
  BatchDecodeCheck check_batch_decode(std::span<const int32_t> tokens);

  // Instrumentation.
  void set_profiling(bool on);                     // CUDA events around every op (eager steps only)
  std::vector<OpTime> op_times(int tokens) const;  // accumulated since reset_profile(), per token
  void reset_profile();
  // Kernels one decode step launches (counted from a captured graph of it) and whether
  // decode steps replay a graph (false: --no-graph, or capture failed: graph_problem()).
  int kernels_per_step();
  bool graph_active() const;
  std::string graph_problem() const;
  // The decode step's graph against the op-by-op step: first the capture's error path (a
  // step that throws while captured must leave the stream usable: check_capture_error_path),
  // then `steps` op-by-op steps from `token` at the current position, and from the same state
  // the graph (captured there if there is none yet, as decode() does) replayed `steps` times;
  // each replay's logits must equal its op-by-op step's, bit for bit. Returns "" or what
  // differed. The cache and the position are left as after `steps` steps.
  std::string check_graph_replay(int32_t token, int steps = 4);
  // Runs one op-by-op decode step and one fused step from the same state (`token` at the
  // current position) and compares their logits and tokens: the model's own step when
  // Options::decode is Fused or Persistent, else DecodePath::Fused's. The cache and the
  // position are left as after one step.
  FusedDecodeCheck check_fused_decode(int32_t token);
  // Runs one prefill with every op checked (Options::check behaviour) and reports. With INT8
  // or INT4 weights, one decode step after it is checked too: their GEMVs run only there.
  CheckReport check_ops(std::span<const int32_t> prompt);
  double weight_bytes() const;
  double int8_weight_bytes() const;    // the INT8 copies and their scales (0 without WeightFormat::Int8)
  double int4_weight_bytes() const;    // the INT4 codes, scales and zero points (0 without WeightFormat::Int4)
  double decode_weight_bytes() const;  // weight bytes a decode step reads: the INT8/INT4 copies where they replace BF16
  UploadStats upload_stats() const;    // how the weights' upload went (bytes, ms, GB/s)
  double kv_bytes_per_token_at(int position) const;

  struct Impl;

 private:
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpt2
