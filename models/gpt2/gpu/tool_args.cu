// build/ch09/bin/gpt2's arguments (tool_args.h).
#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "declare/rng.h"
#include "runtime/options.h"
#include "tool_args.h"

namespace gpt2 {

namespace {
// Each comma-separated piece of `text` in turn, with its index: on_piece(index, piece). An
// empty piece (",," or a comma at either end, or an empty text) is refused with `if_empty`.
template <class OnPiece>
void each_piece(const std::string& text, const std::string& if_empty, OnPiece on_piece) {
  size_t start = 0, index = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string piece = text.substr(start, end - start);
    if (piece.empty()) throw wb::UsageError(if_empty);
    on_piece(index++, piece);
    start = end + 1;
  }
}
}  // namespace

std::vector<int32_t> parse_tokens(const std::string& text) {
  std::vector<int32_t> out;
  each_piece(text, "--tokens='" + text + "': an empty id between commas; give ID,ID,...",
             [&](size_t i, const std::string& piece) {
               out.push_back(
                   static_cast<int32_t>(wb::parse_int("--tokens (id " + std::to_string(i) + ")", piece, 0, INT32_MAX)));
             });
  return out;
}

std::vector<int> parse_batch_list(const std::string& text) {
  std::vector<int> out;
  each_piece(text, "--batch='" + text + "': an empty size between commas; give sizes as --batch=1,4,16,64",
             [&](size_t i, const std::string& piece) {
               const int64_t b = wb::parse_int("--batch (size " + std::to_string(i) + ")", piece, 1, kMaxBatch);
               out.push_back(static_cast<int>(b));
             });
  return out;
}

BatchStepCost batch_step_cost(const Config& c, double elem_bytes, double weight_bytes, int batch, int position) {
  const double L = c.n_layer, C = c.n_embd, V = c.vocab, B = batch, P = position;
  BatchStepCost r;
  r.weight_bytes = weight_bytes;
  r.kv_bytes = B * 2.0 * L * P * C * elem_bytes;
  r.bytes = r.weight_bytes + r.kv_bytes;
  r.linear_flops = 2.0 * B * (12.0 * L * C * C + V * C);
  r.flops = r.linear_flops + 4.0 * B * L * C * P;
  return r;
}

const char* batch_bound(double intensity, double peak_tflops, double gbps) {
  if (peak_tflops <= 0 || gbps <= 0 || intensity <= 0) return "-";
  const double balance = peak_tflops * 1e12 / (gbps * 1e9);  // FLOPs per byte at which both roofs meet
  return intensity < balance ? "memory" : "compute";
}

double batch_memory_bytes(const Config& c, double elem_bytes, int batch, int positions) {
  const double L = c.n_layer, C = c.n_embd, V = c.vocab, B = batch;
  const double caches = B * 2.0 * L * double(positions) * C * elem_bytes;
  const double rows = B * (14.0 * C * elem_bytes + V * (elem_bytes + 4.0) + 4.0 * (positions + 8.0));
  return caches + rows;
}

std::string batch_memory_refusal(int batch, double need, double free_bytes) {
  if (need <= 0.9 * free_bytes) return "";
  char b[320];
  std::snprintf(b, sizeof b,
                "--batch=%d: the batched caches and buffers need %.2f GB, and %.2f GB of the GPU's memory is free "
                "beside the model (90%% usable); give a smaller --batch, or a shorter --prompt-len/--new",
                batch, need / 1e9, free_bytes / 1e9);
  return b;
}

std::vector<int32_t> seeded_prompt(int n, int vocab, uint64_t seed) {
  wb::Rng rng(seed);
  std::vector<int32_t> out(n);
  for (auto& t : out) t = static_cast<int32_t>(rng.range(0, vocab - 1));
  return out;
}

Options tool_options(const ToolArgs& a, const std::string& kernels) {
  Options o;
  o.dtype = a.dtype;
  o.kernels = Kernels::parse(kernels, a.use);
  o.graph = a.graph;
  o.upload = a.upload;
  o.weight_format = a.weight_format;
  o.decode = a.decode;
  if (!a.batch.empty()) o.batch = *std::max_element(a.batch.begin(), a.batch.end());
  return o;
}

ToolArgs parse_tool_args(int argc, char** argv) {
  ToolArgs a;
  std::string tokens, dtype = "bf16", kernels = "solution", upload = "staged", decode = "ops", batch;
  int64_t prompt_len = 0, new_tokens = 128;
  bool no_graph = false, int8 = false, int4 = false;
  CLI::App p(
      "GPT-2 on the GPU from the book's kernels: prints the generated ids, TTFT, decode tokens/s, kernels per "
      "token and the per-op table.",
      "gpt2");
  wb::cli::conventions(p);
  p.add_option("--weights", a.weights, "a GPT-2 safetensors file (gpt2_random_weights writes one)");
  p.add_option("--tokens", tokens, "the prompt: token ids, ID,ID,...");
  p.add_option("--prompt-len", prompt_len, "or a prompt of N seeded pseudo-random ids")
      ->transform(wb::cli::whole_number(1, 1 << 20));
  p.add_option("--new", new_tokens, "tokens to generate after the prompt (default 128)")
      ->transform(wb::cli::whole_number(1, 1 << 20));
  p.add_option("--dtype", dtype, "bf16 (default) or f32");
  p.add_option("--kernels", kernels, "whose kernels: library, solution (default) or student; a list runs each");
  p.add_option(
      "--use", a.use, "per-op choice over --kernels: op:who,... (ops: " + [] {
        std::string s;
        for (const auto& n : Kernels::op_names()) s += (s.empty() ? "" : ", ") + n;
        return s;
      }() + ")");
  p.add_flag("--no-graph", no_graph, "decode step by step, without the CUDA Graph");
  p.add_option("--upload", upload,
               "how the weights reach the GPU: staged (default; pinned buffers, a copy stream) or "
               "plain (cudaMemcpy from pageable memory)");
  p.add_flag("--check", a.check,
             "check every op, the forward against the float64 CPU forward, decode against recompute, "
             "the graph against eager");
  p.add_flag("--int8", int8,
             "decode GEMVs (attn_qkv, attn_proj, mlp_fc, mlp_proj) from INT8 weights quantized per row "
             "on load (bf16 only; prefill and the LM head stay BF16, so both copies are kept); with --decode=fused "
             "the fused step's kernels read them");
  p.add_flag("--int4", int4,
             "the same from INT4 weights quantized on load in groups of 128 along K, each with an FP32 scale and a "
             "zero point (bf16 only; not with --int8); with --decode=fused the fused step's INT4 kernels read them");
  p.add_option(
      "--decode", decode,
      "the decode step: ops (default; one kernel per op, as --kernels picks) or fused (the "
      "solution's fused kernels: LayerNorm in the GEMV's prologue, the residual add in its epilogue, the "
      "LM head with its argmax; chapter 8's split-KV attention) or persistent (the fused step with its layers in one "
      "persistent kernel, bf16 without --int8)");
  p.add_option("--batch", batch,
               "also run the batched decode benchmark at each size, e.g. 1,4,16,64: that many sequences "
               "(seeded prompts of the same length) decoding together; a table of tokens/s, bytes, FLOPs and the "
               "bound per size");
  p.add_flag("--overlap", a.overlap,
             "also measure a second request's prefill (a second model: its own weights, cache and "
             "stream) running while this request decodes, against the two one after the other");
  p.add_option("--json", a.json,
               "write the runs' TTFT and tokens/s to this file (it appears only when the run is done)")
      ->transform(wb::cli::not_empty());
  p.add_option("--device", a.device, "GPU index (default 0)")->transform(wb::cli::whole_number(0, 1024));
  p.add_option("--seed", a.seed, "seed of --prompt-len's ids and of the other sequences' prompts (default 1)")
      ->transform(wb::cli::whole_number(0));
  if (!wb::cli::parse(p, argc, argv)) {
    a.help = true;
    return a;
  }
  if (a.weights.empty()) throw wb::UsageError("--weights is missing: give a GPT-2 safetensors file (--weights=FILE)");
  if (tokens.empty() == (prompt_len == 0)) {
    throw wb::UsageError("give the prompt one way: --tokens=ID,ID,... or --prompt-len=N (not both, not neither)");
  }
  if (!tokens.empty()) a.tokens = parse_tokens(tokens);
  a.prompt_len = static_cast<int>(prompt_len);
  a.new_tokens = static_cast<int>(new_tokens);
  if (dtype == "bf16") {
    a.dtype = wb::DType::BF16;
  } else if (dtype == "f32") {
    a.dtype = wb::DType::F32;
  } else {
    throw wb::UsageError("--dtype=" + dtype + ": the model runs in bf16 or f32");
  }
  size_t start = 0;
  while (start <= kernels.size()) {
    size_t end = kernels.find(',', start);
    if (end == std::string::npos) end = kernels.size();
    const std::string k = kernels.substr(start, end - start);
    try {
      Kernels::parse(k, a.use);  // names the bad piece
    } catch (const std::invalid_argument& e) {
      throw wb::UsageError(e.what());
    }
    a.kernels.push_back(k);
    start = end + 1;
  }
  a.graph = !no_graph;
  if (upload == "staged") {
    a.upload = UploadMode::Staged;
  } else if (upload == "plain") {
    a.upload = UploadMode::Plain;
  } else {
    throw wb::UsageError("--upload=" + upload +
                         ": use staged (pinned buffers and a copy stream) or plain (cudaMemcpy)");
  }
  if (decode == "ops") {
    a.decode = DecodePath::Ops;
  } else if (decode == "fused") {
    a.decode = DecodePath::Fused;
  } else if (decode == "persistent") {
    a.decode = DecodePath::Persistent;
  } else {
    throw wb::UsageError("--decode=" + decode +
                         ": use ops (one kernel per op), fused (the fused decode step) or "
                         "persistent (its layers in one kernel)");
  }
  if (int8 && int4) {
    throw wb::UsageError(
        "--int8 with --int4: the decode GEMVs read one quantized copy of the weights; give one of the two (--int4 "
        "for 4-bit codes in groups of 128, --int8 for one byte per weight)");
  }
  if (int8) a.weight_format = WeightFormat::Int8;
  if (int4) a.weight_format = WeightFormat::Int4;
  if (!batch.empty()) a.batch = parse_batch_list(batch);
  // The rules between the options (INT8 weights need bf16 and the solution's GEMV, the
  // persistent step bf16 without --int8, ...): the model's own check, on each composition.
  for (const auto& k : a.kernels) {
    try {
      validate(tool_options(a, k), "--kernels=" + k);
    } catch (const std::invalid_argument& e) {
      throw wb::UsageError(e.what());
    }
  }
  // The tool's own rules: what its benchmarks measure.
  if (!a.batch.empty()) {
    if (a.decode != DecodePath::Ops) {
      throw wb::UsageError("--batch with --decode=" + std::string(decode_path_name(a.decode)) +
                           ": the batched step is op by op for now (the fused kernels are GEMVs, one row); leave "
                           "--decode out of the batched run");
    }
    if (int8 || int4) {
      const std::string flag = int8 ? "--int8" : "--int4";
      throw wb::UsageError("--batch with " + flag + ": the batched step runs the BF16 GEMMs for now (the " +
                           (int8 ? "INT8" : "INT4") + " kernel is a GEMV, one row); leave " + flag +
                           " out of the batched run");
    }
  }
  if (a.overlap && a.decode == DecodePath::Persistent) {
    throw wb::UsageError(
        "--overlap with --decode=persistent: the persistent kernel holds every SM for the whole step, "
        "so the second request's prefill could not run beside it; measure the overlap with "
        "--decode=fused");
  }
  if (a.overlap && a.new_tokens < 2) {
    throw wb::UsageError("--overlap with --new=" + std::to_string(a.new_tokens) +
                         ": the overlap is measured over "
                         "the decode steps after the first token; give --new=2 or more");
  }
  return a;
}

}  // namespace gpt2
