// The command line of build/ch09/bin/gpt2, parsed and checked before any GPU work, so that
// a wrong argument is named even on a machine without a GPU.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "declare/dtype.h"
#include "model.h"

namespace gpt2 {

struct ToolArgs {
  std::string weights;
  std::vector<int32_t> tokens;  // --tokens=ID,ID,...
  int prompt_len = 0;           // --prompt-len=N: N seeded pseudo-random ids instead
  int new_tokens = 128;         // --new
  wb::DType dtype = wb::DType::BF16;
  std::vector<std::string> kernels;  // --kernels=library,solution: one run each
  std::string use;                   // --use=op:who,...
  bool graph = true, check = false;
  // --int8 / --int4: decode GEMVs from INT8 / INT4 weights (bf16 only; not both)
  WeightFormat weight_format = WeightFormat::Native;
  DecodePath decode = DecodePath::Ops;     // --decode=ops|fused|persistent
  std::vector<int> batch;                  // --batch=1,4,16,64: the batched decode benchmark at each size
  bool overlap = false;                    // --overlap: the next request's prefill during this one's decode
  UploadMode upload = UploadMode::Staged;  // --upload=staged|plain
  std::string json;
  int64_t device = 0;
  int64_t seed = 1;
  bool help = false;
  bool int8() const { return weight_format == WeightFormat::Int8; }
  bool int4() const { return weight_format == WeightFormat::Int4; }
};

// Throws wb::UsageError naming the argument and what it accepts. Every composition of
// --kernels is checked with validate (model.h) on the Options tool_options makes of it.
ToolArgs parse_tool_args(int argc, char** argv);
// The model's options for one composition of --kernels (one of a.kernels): the run's, less
// what needs the weights (max_seq) and the progress callbacks, which the run adds.
Options tool_options(const ToolArgs& a, const std::string& kernels);
// "1,2,3" -> {1, 2, 3}; throws wb::UsageError naming --tokens and the bad piece.
std::vector<int32_t> parse_tokens(const std::string& text);
// The prompt of --prompt-len: n ids drawn from [0, vocab) with the seed.
std::vector<int32_t> seeded_prompt(int n, int vocab, uint64_t seed);

// --batch: the most sequences one batched step takes (a sanity limit on the command line;
// memory usually refuses sooner: batch_memory_refusal).
inline constexpr int kMaxBatch = 1024;
// "1,4,16" -> {1, 4, 16}; throws wb::UsageError naming --batch and the bad piece.
std::vector<int> parse_batch_list(const std::string& text);

// What one batched decode step moves and computes (docs/ch09-transformer.md, "Batched
// decode: latency or throughput"), B sequences each with `position` tokens cached:
//   bytes = the weights once + every sequence's K and V (2 L position C elements each);
//           activations (a few B C rows per layer) are left out
//   flops = 2 B (12 L C^2 + V C)    the linears and the LM head, a multiply-add per weight per row
//         + 4 B L C position        attention: q·k and p·v over the cached keys
// The linears alone (their FLOPs over the weights' bytes, about B) cross the machine balance
// at a batch of a few hundred; attention reads each sequence's own cache, about one FLOP per
// byte whatever B, so the whole step's intensity levels off (docs: the crossover).
struct BatchStepCost {
  double weight_bytes = 0, kv_bytes = 0, bytes = 0, flops = 0;
  double linear_flops = 0;  // the linears and the LM head: 2 B (12 L C^2 + V C)
  double intensity() const { return bytes > 0 ? flops / bytes : 0; }  // FLOPs per byte
  double linear_intensity() const { return weight_bytes > 0 ? linear_flops / weight_bytes : 0; }
};
BatchStepCost batch_step_cost(const Config& c, double elem_bytes, double weight_bytes, int batch, int position);
// "memory" when `intensity` (FLOPs per byte) is below the machine balance (peak FLOP/s over
// bytes/s), else "compute"; "-" when a ceiling is unknown.
const char* batch_bound(double intensity, double peak_tflops, double gbps);
// Device bytes Options::batch = B adds at `positions` cache positions: B caches (2 L positions
// C elements each) and B rows of activations and logits.
double batch_memory_bytes(const Config& c, double elem_bytes, int batch, int positions);
// "" when `need` bytes fit in `free_bytes` (with 10% left for the libraries' workspaces),
// else the tool's refusal: what does not fit and what to do.
std::string batch_memory_refusal(int batch, double need, double free_bytes);

}  // namespace gpt2
