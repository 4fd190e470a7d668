// build/ch09/bin/gpt2 — GPT-2 on the GPU from the book's kernels.
//
//   gpt2 --weights=FILE (--tokens=ID,ID,... | --prompt-len=N) [--new=128] [--dtype=bf16|f32]
//        [--kernels=library|solution|student[,...]] [--use=op:who,...] [--no-graph] [--check]
//        [--json=FILE] [--device=0] [--seed=1] [--upload=staged|plain] [--int8 | --int4]
//        [--decode=ops|fused|persistent]
//        [--batch=1,4,16,64]
//
// For each composition in --kernels: the generated ids as they come, then TTFT (the
// prompt's prefill through the first token, CUDA events), decode tokens/s (a loop of
// --new steps on the device, graph replayed unless --no-graph), kernels per token, and
// the per-op table of one eager decode pass (time per token, share, GB/s, % of the DRAM
// roofline). --check first checks each op inside a run, the logits against the float64
// CPU forward (small models), decode against full recompute, and graph replay against eager.
// --int8 runs the decode GEMVs from INT8 copies of the block matrices (W8A16, bf16 only);
// with --decode=fused, the fused step's kernels read the INT8 copies. --int4 does the same with
// INT4 copies in groups of 128 (W4A16: v10_gemv_w4a16 op by op, v14_w4a16_loads_ahead fused).
// --decode=fused runs every decode step as the fused step (fewer, larger kernels: see
// docs/ch09-transformer.md, "The fused decode step"); --check then also compares it with the
// op-by-op step from the same state.
// --batch=1,4,16,64 then runs the batched decode benchmark at each size (B sequences of the
// prompt's length, seeded prompts, one token each per step: the linears become GEMMs with
// M = B) and prints tokens/s, bytes and FLOPs per step and the bound that applies; --check
// also compares a batched step with single-sequence steps. Not with --decode=fused or --int8.
//
// Everything the command line names is checked before the GPU is looked for, so a mistake
// is reported on any machine (exit status 2): the options and their combinations, the
// weights file (its header and every tensor's shape and byte range: a truncated or foreign
// file is named), the prompt against the model's vocabulary and context, and the --json
// folder. --json's file appears only when the run is done (never empty or half written).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "cpu_forward.h"
#include "measure/ceilings.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"
#include "runtime/options.h"
#include "runtime/output_file.h"
#include "report/results.h"
#include "report/table.h"
#include "model.h"
#include "quantize.h"
#include "tool_args.h"
#include "weights.h"

namespace {

// Progress lines are rewritten in place on a terminal; in a log file only the last (100%) is written.
bool stderr_is_terminal() {
  static const bool tty = isatty(fileno(stderr)) != 0;
  return tty;
}

using gpt2::Model;

// Relative L2 bounds of the whole model's logits (docs/ch09-transformer.md, "Checks").
double logits_bound(wb::DType t) { return t == wb::DType::F32 ? 1e-5 : 5e-2; }
// --int8: decode (INT8 GEMVs) against recompute (prefill's BF16 GEMMs) also holds the
// weights' quantization error (docs/ch09-transformer.md, "INT8 weights (W8A16)").
constexpr double kInt8DecodeBound = 1e-1;
// --int4: the same with INT4's error. A group's step is (max - min) / 15 over 128 weights, about
// 0.35 sigma for GPT-2's Gaussian weights, against INT8's max|row| / 127, about 0.028 sigma: 12.5
// times larger, and so is each GEMV's output error. Scaled from INT8's bound that is 1.25, more
// than unrelated logits give (about sqrt 2): no check at all. The bound is instead half of that
// ceiling; a kernel or layout mistake is caught by the per-op check (float64 on the dequantized
// weights) and the fused-vs-op comparison, both at the BF16 bounds, not here
// (docs/ch09-transformer.md, "INT4 weights (W4A16)").
constexpr double kInt4DecodeBound = 5e-1;

// One row of the --batch table.
struct BatchRow {
  int batch = 0;
  double tok_s = 0, tok_s_per_seq = 0, ms_per_step = 0;
  gpt2::BatchStepCost cost;
  double gbps = 0, tflops = 0;
  std::string bound, linear_bound;
};

// --overlap: request A decoding while request B's prompt is prefilled on a second model.
struct Overlap {
  double alone_ms = 0;                                 // A's decode, then B's prefill, one after the other (wall time)
  double together_ms = 0;                              // both at once, from two host threads (wall time)
  double decode_alone_ms = 0, decode_together_ms = 0;  // A's decode on its stream (events)
  double prefill_alone_ms = 0, prefill_together_ms = 0;  // B's prefill on its stream (events)
  bool same_tokens = false;                              // A's tokens and B's next token as when each ran alone
};

struct Run {
  std::string kernels;
  double ttft_ms = 0, decode_tok_s = 0;
  int kernels_per_token = -1;
  bool graph = false;
  std::vector<BatchRow> batch;
  std::optional<Overlap> overlap;
};

double wall_ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Prefill and decode want different things of the GPU: a prompt's prefill is GEMMs (compute),
// a decode step streams the weights (bandwidth) in kernels too small to fill the GPU. So a
// server may prefill the next request while the current one decodes. `other` holds its own
// copy of the weights, cache and stream; A's decode replays its graph (no host work that
// could race B's), B's prefill runs from a second host thread. Best of three each way.
Overlap measure_overlap(Model& model, Model& other, const std::vector<int32_t>& prompt,
                        const std::vector<int32_t>& prompt_b, int steps) {
  Overlap o;
  model.prefill(prompt);
  const std::vector<int32_t> tokens_alone = model.generate(steps);  // also captures A's graph
  const int next_alone = other.prefill(prompt_b);
  o.alone_ms = o.together_ms = 1e300;
  bool same = true;
  for (int rep = 0; rep < 3; ++rep) {
    model.prefill(prompt);
    auto t0 = std::chrono::steady_clock::now();
    same &= model.generate(steps) == tokens_alone;
    const double decode_ms = model.last_generate_ms();
    same &= other.prefill(prompt_b) == next_alone;
    const double alone = wall_ms_since(t0);
    if (alone < o.alone_ms) {
      o.alone_ms = alone;
      o.decode_alone_ms = decode_ms;
      o.prefill_alone_ms = other.last_prefill_ms();
    }

    model.prefill(prompt);
    int next_b = -1;
    t0 = std::chrono::steady_clock::now();
    std::thread b([&] { next_b = other.prefill(prompt_b); });
    same &= model.generate(steps) == tokens_alone;
    b.join();
    const double together = wall_ms_since(t0);
    same &= next_b == next_alone;
    if (together < o.together_ms) {
      o.together_ms = together;
      o.decode_together_ms = model.last_generate_ms();
      o.prefill_together_ms = other.last_prefill_ms();
    }
  }
  o.same_tokens = same;
  return o;
}

// Sequence b's prompt in the batched runs: the run's prompt for b = 0, seeded ones of the
// same length for the others.
std::vector<int32_t> batch_prompt(const std::vector<int32_t>& prompt, int b, int vocab, int64_t seed) {
  if (b == 0) return prompt;
  return gpt2::seeded_prompt(static_cast<int>(prompt.size()), vocab, static_cast<uint64_t>(seed) + uint64_t(b));
}

bool run_checks(Model& model, const gpt2::Weights& w, const std::vector<int32_t>& prompt, int steps) {
  bool ok = true;
  const double bound = logits_bound(model.options().dtype);
  const gpt2::WeightFormat format = model.options().weight_format;
  const bool int8 = format == gpt2::WeightFormat::Int8, int4 = format == gpt2::WeightFormat::Int4;
  const double decode_bound = int8 ? kInt8DecodeBound : int4 ? kInt4DecodeBound : bound;
  const char* gemvs = int8 ? " and a decode step (INT8 GEMVs)" : int4 ? " and a decode step (INT4 GEMVs)" : "";
  // 1. every op of a prefill against float64 on its own inputs
  const std::vector<int32_t> head(prompt.begin(), prompt.begin() + std::min<size_t>(prompt.size(), 64));
  const gpt2::CheckReport r = model.check_ops(head);
  std::printf("check: %d ops of a %zu-token prefill%s against float64 on their own inputs: %s\n", r.ops_checked,
              head.size(), gemvs, r.ok ? "all within tolerance" : "FAILED");
  if (!r.ok) {
    std::printf("check: first divergence: %s\n", r.first_failure.c_str());
    ok = false;
  }
  // 2. the logits against the float64 CPU forward (small models: it is plain loops)
  const double work = double(w.config.n_params()) * double(head.size());
  if (work <= 4e9) {
    const auto ref = gpt2::cpu::forward(w, head);
    const std::vector<double> last(ref.end() - w.config.vocab, ref.end());
    const double e = gpt2::logits_diff(model.forward(head), last).rel_l2;
    std::printf("check: forward vs the float64 CPU forward: relative L2 %.3g (bound %.0e) %s\n", e, bound,
                e <= bound ? "ok" : "FAILED");
    ok = ok && e <= bound;
  } else {
    std::printf(
        "check: forward vs the float64 CPU forward: not run (%.0fM parameters x %zu tokens is too slow "
        "for the CPU reference; use a small config)\n",
        w.config.n_params() / 1e6, head.size());
  }
  // 3. KV-cache decode vs full recompute
  steps = std::min(steps, model.capacity() - static_cast<int>(prompt.size()) - 1);
  if (steps > 0) {
    std::vector<int32_t> seq = prompt;
    int next = model.prefill(seq);
    double worst = 0;
    std::vector<std::vector<float>> decoded;
    std::vector<int32_t> fed;
    for (int i = 0; i < steps; ++i) {
      fed.push_back(next);
      next = model.decode(next);
      decoded.push_back(model.logits());
    }
    for (int i = 0; i < steps; ++i) {
      seq.push_back(fed[i]);
      worst = std::max(worst, gpt2::logits_diff(decoded[i], model.forward(seq)).rel_l2);
    }
    std::printf("check: %d decode steps vs full recompute: worst relative L2 %.3g (bound %.0e%s) %s\n", steps, worst,
                decode_bound,
                int8   ? ": INT8 decode vs BF16 prefill"
                : int4 ? ": INT4 decode vs BF16 prefill"
                       : "",
                worst <= decode_bound ? "ok" : "FAILED");
    ok = ok && worst <= decode_bound;
  }
  // 4. graph replay vs eager
  if (model.options().graph) {
    model.prefill(prompt);
    const std::string g = model.check_graph_replay(prompt.back());
    std::printf("check: graph replay vs eager step: %s\n", g.empty() ? "bit for bit equal" : g.c_str());
    ok = ok && g.empty();
  }
  // 5. the fused decode step vs the op-by-op step from the same state (whichever one --decode
  // picks; with --int8 or --int4 both read the quantized weights)
  {
    model.prefill(prompt);
    const gpt2::FusedDecodeCheck f = model.check_fused_decode(prompt.back());
    const bool good = f.rel_l2 <= bound && f.tokens_consistent();
    std::printf("check: fused decode step vs op-by-op step: relative L2 %.3g (bound %.0e), next token %d vs %d%s %s\n",
                f.rel_l2, bound, f.fused_token, f.ops_token, f.fused_token == f.ops_token ? "" : " (a near tie)",
                good ? "ok" : "FAILED");
    ok = ok && good;
  }
  // 6. a batched step vs single-sequence steps from the same state (--batch): up to 4
  // sequences whose prompts differ in length
  if (model.options().batch > 0) {
    const int B = std::min(model.options().batch, 4);
    std::vector<std::vector<int32_t>> prompts;
    std::string lens;
    for (int b = 0; b < B; ++b) {
      const int n = std::max<int>(1, static_cast<int>(head.size()) - 3 * b);
      prompts.push_back(gpt2::seeded_prompt(n, w.config.vocab, 100 + b));
      lens += (lens.empty() ? "" : ", ") + std::to_string(n);
    }
    const std::vector<int32_t> next = model.prefill_batch(prompts);
    const gpt2::BatchDecodeCheck c = model.check_batch_decode(next);
    const bool good = c.rel_l2 <= bound && c.tokens_consistent();
    int differ = 0;
    for (size_t b = 0; b < c.batch_tokens.size(); ++b) differ += c.batch_tokens[b] != c.single_tokens[b];
    std::printf(
        "check: batched step (%d sequences, prompts of %s tokens) vs single-sequence steps: worst relative "
        "L2 %.3g (bound %.0e), %d next tokens differ%s %s\n",
        B, lens.c_str(), c.rel_l2, bound, differ, differ ? " (near ties)" : "", good ? "ok" : "FAILED");
    ok = ok && good;
  }
  return ok;
}

// --batch: for each size B, B sequences prefilled (one after the other), one eager batched
// step and one captured, then the prompts again and --new - 1 steps timed on the device.
std::vector<BatchRow> run_batches(Model& model, const gpt2::ToolArgs& a, const std::vector<int32_t>& prompt,
                                  const wb::Ceilings& roof) {
  std::vector<BatchRow> rows;
  const gpt2::Config& cfg = model.config();
  const double elem = model.options().dtype == wb::DType::F32 ? 4 : 2;
  const double peak = model.options().dtype == wb::DType::F32 ? roof.fp32_tflops : roof.bf16_tflops;
  const int steps = std::max(1, a.new_tokens - 1);
  for (const int B : a.batch) {
    std::vector<std::vector<int32_t>> prompts;
    for (int b = 0; b < B; ++b) prompts.push_back(batch_prompt(prompt, b, cfg.vocab, a.seed));
    const std::vector<int32_t> next = model.prefill_batch(prompts);
    model.decode_batch(next);  // eager: the libraries' plans for M = B, the top-k's workspace
    model.generate_batch(1);   // captures this B's graph (unless --no-graph)
    model.prefill_batch(prompts);
    model.generate_batch(steps);
    BatchRow r;
    r.batch = B;
    r.ms_per_step = model.last_generate_ms() / steps;
    r.tok_s_per_seq = 1e3 / r.ms_per_step;
    r.tok_s = B * r.tok_s_per_seq;
    r.cost =
        gpt2::batch_step_cost(cfg, elem, model.decode_weight_bytes(), B, static_cast<int>(prompt.size()) + steps / 2);
    r.gbps = r.cost.bytes / (r.ms_per_step * 1e6);
    r.tflops = r.cost.flops / (r.ms_per_step * 1e9);
    r.bound = gpt2::batch_bound(r.cost.intensity(), peak, roof.dram_gbps);
    r.linear_bound = gpt2::batch_bound(r.cost.linear_intensity(), peak, roof.dram_gbps);
    rows.push_back(r);
  }
  return rows;
}

void print_batch_table(const std::vector<BatchRow>& rows, const wb::Ceilings& roof, double peak, bool measured) {
  wb::Table t({"batch", "tokens/s", "tokens/s per seq", "ms/step", "MB/step", "GB/s", "GFLOP/step", "TFLOPS",
               "FLOP/byte", "bound", "linears FLOP/byte", "linears bound"});
  for (const auto& r : rows) {
    t.add_row({std::to_string(r.batch), wb::fixed(r.tok_s, 0), wb::fixed(r.tok_s_per_seq, 1),
               wb::fixed(r.ms_per_step, 3), wb::fixed(r.cost.bytes / 1e6, 1), wb::fixed(r.gbps, 0),
               wb::fixed(r.cost.flops / 1e9, 2), wb::fixed(r.tflops, 1), wb::fixed(r.cost.intensity(), 1), r.bound,
               wb::fixed(r.cost.linear_intensity(), 1), r.linear_bound});
  }
  std::printf("%s", t.str().c_str());
  std::printf("MB/step: the weights once + every sequence's K and V; FLOP/byte against the machine balance");
  if (peak > 0 && roof.dram_gbps > 0) {
    std::printf(" %.0f FLOP/byte (%.0f TFLOPS / %.0f GB/s, %s)", peak * 1e12 / (roof.dram_gbps * 1e9), peak,
                roof.dram_gbps, measured ? "measured ceilings" : "spec ceilings");
  } else {
    std::printf(" (unknown for this GPU: no bound given)");
  }
  std::printf("; linears: their FLOPs over the weights' bytes, the part batching reuses\n");
}

void print_table(const std::vector<gpt2::OpTime>& ops, double dram_gbps) {
  double total = 0;
  for (const auto& o : ops) total += o.ms;
  wb::Table t({"op", "kernels", "calls/token", "us/token", "share", "GB/s", "% of DRAM roof"});
  for (const auto& o : ops) {
    const double gbs = o.ms > 0 ? o.bytes / (o.ms * 1e6) : 0;
    t.add_row({o.op, o.who, std::to_string(o.calls), wb::fixed(o.ms * 1e3, 1), wb::fixed(100 * o.ms / total, 1) + "%",
               wb::fixed(gbs, 0), dram_gbps > 0 ? wb::fixed(100 * gbs / dram_gbps, 0) + "%" : "-"});
  }
  t.add_rule();
  t.add_row({"total", "", "", wb::fixed(total * 1e3, 1), "100%", "", ""});
  std::printf("%s", t.str().c_str());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Run run_one(const gpt2::Weights& w, const gpt2::ToolArgs& a, const std::string& kernels,
            const std::vector<int32_t>& prompt, const wb::DeviceInfo& dev, bool& checks_ok) {
  gpt2::Options o = gpt2::tool_options(a, kernels);  // the options parse_tool_args validated
  int last_percent = -1;
  o.upload_progress = [&](size_t done, size_t total) {
    const int percent = total > 0 ? static_cast<int>(100.0 * double(done) / double(total)) : 100;
    if (percent != last_percent && (stderr_is_terminal() || percent == 100)) {
      std::fprintf(stderr, "\ruploading the weights: %3d%%", percent);
    }
    last_percent = percent;
  };
  o.max_seq = std::min<int>(w.config.n_ctx, static_cast<int>(prompt.size()) + a.new_tokens + 1);
  if (a.check)
    o.max_seq = std::min<int>(w.config.n_ctx, std::max<int>(o.max_seq, static_cast<int>(prompt.size()) + 66));
  Model model = Model::from_weights(w, o);
  std::fprintf(stderr, "\n");
  const gpt2::UploadStats up = model.upload_stats();
  std::printf("\n== kernels: %s (%s)\n", kernels.c_str(), o.kernels.describe().c_str());
  std::printf("weights uploaded: %.2f GB in %.1f ms, %.1f GB/s (%s)\n", up.bytes / 1e9, up.ms, up.gbps(),
              a.upload == gpt2::UploadMode::Staged ? "--upload=staged: pinned buffers, a copy stream"
                                                   : "--upload=plain: cudaMemcpy from pageable memory");
  if (a.int8()) {
    std::printf(
        "int8 weights: %.1f MB (int8 + FP32 row scales) for the decode GEMVs, kept beside the %.1f MB of BF16 "
        "weights that prefill and the LM head use: %.1f MB of weights on the GPU\n",
        model.int8_weight_bytes() / 1e6, model.weight_bytes() / 1e6,
        (model.int8_weight_bytes() + model.weight_bytes()) / 1e6);
  }
  if (a.int4()) {
    std::printf(
        "int4 weights: %.1f MB (4-bit codes + an FP32 scale and a zero point per group of 128) for the decode "
        "GEMVs, kept beside the %.1f MB of BF16 weights that prefill and the LM head use: %.1f MB of weights on the "
        "GPU\n",
        model.int4_weight_bytes() / 1e6, model.weight_bytes() / 1e6,
        (model.int4_weight_bytes() + model.weight_bytes()) / 1e6);
  }

  if (a.decode == gpt2::DecodePath::Persistent) {
    std::printf(
        "decode step: persistent (--decode=persistent): the layers in one persistent kernel (the solution's "
        "v9), the fused step's embedding and LM head around it\n");
  } else if (a.decode == gpt2::DecodePath::Fused) {
    std::printf(
        "decode step: fused (--decode=fused): the solution's %s and chapter 8's split-KV "
        "attention; prefill as --kernels picks\n",
        a.int8()   ? "v6 kernels on the INT8 weights (the LM head BF16)"
        : a.int4() ? "v14 kernels on the INT4 weights (the LM head: v6's, BF16)"
                   : "v6 kernels");
  }
  if (a.check && !run_checks(model, w, prompt, 64)) checks_ok = false;

  // The generated ids as they come (this run also warms up the libraries' plans and captures the graph).
  int next = model.prefill(prompt);
  std::printf("tokens: %d", next);
  std::fflush(stdout);
  for (int i = 1; i < a.new_tokens; ++i) {
    next = model.decode(next);
    std::printf(" %d", next);
    std::fflush(stdout);
  }
  std::printf("\n");

  Run run;
  run.kernels = kernels;
  std::vector<double> ttft;
  for (int i = 0; i < 5; ++i) {
    model.prefill(prompt);
    ttft.push_back(model.last_prefill_ms());
  }
  run.ttft_ms = median(ttft);
  const int steps = a.new_tokens - 1;
  if (steps > 0) {
    std::vector<double> rate;
    for (int i = 0; i < 3; ++i) {
      model.prefill(prompt);
      model.generate(steps);
      rate.push_back(steps / (model.last_generate_ms() / 1e3));
    }
    run.decode_tok_s = median(rate);
  }
  run.graph = model.graph_active();
  std::printf("TTFT: %.3f ms (prefill of %zu tokens through the first new token)\n", run.ttft_ms, prompt.size());
  std::printf("decode: %.1f tokens/s (%.1f us per token, %s)\n", run.decode_tok_s,
              run.decode_tok_s > 0 ? 1e6 / run.decode_tok_s : 0.0,
              run.graph ? "each step one CUDA Graph launch" : "eager launches");
  if (!a.graph) {
    std::printf("graph: off (--no-graph)\n");
  } else if (!model.graph_problem().empty()) {
    std::printf("graph: not used, the capture failed: %s\n", model.graph_problem().c_str());
  }
  // Counted from a capture of the step, after at least one eager step (the profile below
  // makes some when --new is 1).
  if (steps == 0) {
    model.prefill(prompt);
    model.generate(1);
  }
  run.kernels_per_token = model.kernels_per_step();
  if (run.kernels_per_token >= 0) {
    std::printf("kernels per token: %d; host launches per token: %d eager, 1 with the graph\n", run.kernels_per_token,
                run.kernels_per_token);
  } else {
    std::printf("kernels per token: not counted (the step could not be captured: %s)\n", model.graph_problem().c_str());
  }
  const double weight_mb = model.decode_weight_bytes() / 1e6;  // --int8/--int4: the copies where decode reads them
  const double kv_mb = model.kv_bytes_per_token_at(static_cast<int>(prompt.size()) + steps / 2) / 1e6;
  if (run.decode_tok_s > 0 && dev.spec.dram_gbps > 0) {
    const double gbs = (weight_mb + kv_mb) * 1e6 * run.decode_tok_s / 1e9;
    std::printf("bytes per token: %.1f MB weights + %.1f MB KV cache: %.0f GB/s, %.0f%% of the spec DRAM bandwidth\n",
                weight_mb, kv_mb, gbs, 100 * gbs / dev.spec.dram_gbps);
  }

  // Per-op table: one eager decode pass with events around every op.
  const int profile_steps = std::max(1, std::min(steps, 32));
  model.prefill(prompt);
  model.set_profiling(true);
  model.reset_profile();
  model.generate(profile_steps);
  model.set_profiling(false);
  std::printf("per-op time of an eager decode step (events around each op, %d steps averaged):\n", profile_steps);
  print_table(model.op_times(profile_steps), dev.spec.dram_gbps);

  if (a.overlap) {
    std::fprintf(stderr, "--overlap: a second copy of the model for the second request\n");
    gpt2::Options ob = o;
    ob.batch = 0;  // no batched caches in the second model
    ob.upload_progress = {};
    Model other = Model::from_weights(w, ob);
    const std::vector<int32_t> prompt_b = batch_prompt(prompt, 1, w.config.vocab, a.seed);
    const Overlap ov = measure_overlap(model, other, prompt, prompt_b, steps);
    run.overlap = ov;
    std::printf(
        "overlap (--overlap): request A decodes %d tokens while request B's %zu-token prompt is prefilled on "
        "a second model:\n",
        steps, prompt_b.size());
    std::printf("  one after the other: %.2f ms (A's decode %.2f ms, B's prefill %.2f ms)\n", ov.alone_ms,
                ov.decode_alone_ms, ov.prefill_alone_ms);
    std::printf(
        "  at the same time:    %.2f ms (A's decode %.2f ms, B's prefill %.2f ms): %.0f%% of the time one "
        "after the other; %s\n",
        ov.together_ms, ov.decode_together_ms, ov.prefill_together_ms, 100.0 * ov.together_ms / ov.alone_ms,
        ov.together_ms < 0.95 * ov.alone_ms ? "it pays" : "it does not pay here");
    if (!ov.same_tokens) {
      std::printf("  FAILED: the tokens differ from the runs alone (A's decode or B's next token)\n");
      checks_ok = false;
    }
  }

  if (!a.batch.empty()) {
    // Measured ceilings (cached per GPU) where the harness has them, else the spec's.
    const wb::MeasuredCeilings measured = wb::measured_ceilings(dev);
    wb::Ceilings roof = dev.spec;
    const bool use_measured = measured.values.dram_gbps > 0;
    if (use_measured) {
      roof.dram_gbps = measured.values.dram_gbps;
      if (measured.values.bf16_tflops > 0) roof.bf16_tflops = measured.values.bf16_tflops;
      if (measured.values.fp32_tflops > 0) roof.fp32_tflops = measured.values.fp32_tflops;
    }
    run.batch = run_batches(model, a, prompt, roof);
    std::printf("batched decode (--batch): %zu-token prompts, %d steps timed on the device, %s:\n", prompt.size(),
                std::max(1, a.new_tokens - 1), run.graph ? "each step one CUDA Graph launch" : "eager launches");
    print_batch_table(run.batch, roof, a.dtype == wb::DType::F32 ? roof.fp32_tflops : roof.bf16_tflops, use_measured);
  }
  return run;
}

// What the command line names, checked before the GPU is looked for: the --json folder; the
// weights file, opened (mapped) and checked without reading its values (the header, every
// tensor's dtype, shape and byte range, and the config they imply); the prompt against that
// config. Throws wb::UsageError naming the option and the problem.
struct Checked {
  std::optional<safetensors::File> file;
  gpt2::Config config;
  std::vector<int32_t> prompt;
};

Checked check_inputs(const gpt2::ToolArgs& a) {
  Checked c;
  if (!a.json.empty()) {
    if (auto why = wb::output_path_problem(a.json)) throw wb::UsageError("--json=" + a.json + ": " + *why);
  }
  std::error_code ec;
  if (!std::filesystem::exists(a.weights, ec)) {
    throw wb::UsageError("--weights=" + a.weights +
                         ": cannot open the file (does it exist? gpt2_random_weights writes one)");
  }
  try {
    c.file.emplace(safetensors::File::open(a.weights));
    c.config = gpt2::read_config(*c.file);
  } catch (const std::exception& e) {  // FormatError, WeightsError: "FILE: tensor 'NAME': problem"
    throw wb::UsageError("--weights: " + std::string(e.what()) +
                         " (not a complete GPT-2 safetensors file: copy or convert it again, or write one with "
                         "gpt2_random_weights)");
  }
  const gpt2::Config& cfg = c.config;
  if (a.int4()) {  // the packing's shape rule, before the GPU and before the weights are read
    for (const int K : {cfg.n_embd, 4 * cfg.n_embd}) {
      const std::string why = gpt2::int4_shape_problem(cfg.n_embd, K, "--int4 on " + a.weights);
      if (!why.empty()) throw wb::UsageError(why);
    }
  }
  c.prompt = a.tokens.empty() ? gpt2::seeded_prompt(a.prompt_len, cfg.vocab, a.seed) : a.tokens;
  for (size_t i = 0; i < c.prompt.size(); ++i) {
    if (c.prompt[i] >= cfg.vocab) {
      throw wb::UsageError("--tokens: id " + std::to_string(i) + " is " + std::to_string(c.prompt[i]) +
                           ", but the vocabulary is 0.." + std::to_string(cfg.vocab - 1));
    }
  }
  if (static_cast<int>(c.prompt.size()) + a.new_tokens > cfg.n_ctx) {
    throw wb::UsageError("the prompt (" + std::to_string(c.prompt.size()) +
                         ") plus --new=" + std::to_string(a.new_tokens) + " is " +
                         std::to_string(c.prompt.size() + a.new_tokens) + " positions; this model holds " +
                         std::to_string(cfg.n_ctx) + " (n_ctx): give a shorter prompt or a smaller --new");
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  gpt2::ToolArgs a;
  Checked in;
  try {
    a = gpt2::parse_tool_args(argc, argv);
    if (a.help) return 0;
    in = check_inputs(a);
  } catch (const wb::UsageError& e) {
    std::fprintf(stderr, "gpt2: %s\n(gpt2 --help lists the options)\n", e.what());
    return 2;
  }
  if (const int rc = wb::select_tool_device("gpt2", a.device)) return rc;

  try {
    gpt2::LoadOptions lo;
    lo.dtype = a.dtype;
    int last_percent = -1;
    lo.progress = [&](const gpt2::LoadProgress& p) {
      const int percent = p.bytes_total > 0 ? static_cast<int>(100 * p.bytes_done / p.bytes_total) : 100;
      if (percent != last_percent && (stderr_is_terminal() || percent == 100)) {
        std::fprintf(stderr, "\rloading %s: %3d%% (%d/%d tensors)", a.weights.c_str(), percent, p.tensors_done,
                     p.tensors_total);
        last_percent = percent;
      }
    };
    const gpt2::Weights w = gpt2::load_weights(*in.file, lo);
    std::fprintf(stderr, "\n");
    const std::vector<int32_t>& prompt = in.prompt;
    const wb::DeviceInfo dev = wb::query_device();
    if (!a.batch.empty()) {
      // The batched caches must fit beside the model: refuse before loading it.
      const int B = *std::max_element(a.batch.begin(), a.batch.end());
      const double elem = a.dtype == wb::DType::F32 ? 4 : 2;
      int positions = std::min<int>(w.config.n_ctx, static_cast<int>(prompt.size()) + a.new_tokens + 1);
      if (a.check)
        positions = std::min<int>(w.config.n_ctx, std::max<int>(positions, static_cast<int>(prompt.size()) + 66));
      const double model_bytes = double(w.config.n_params()) * elem +
                                 2.0 * w.config.n_layer * double(positions) * w.config.n_embd * elem +
                                 double(positions) * 14.0 * w.config.n_embd * elem;
      size_t free_bytes = 0, total_bytes = 0;
      CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
      const std::string refusal = gpt2::batch_memory_refusal(B, gpt2::batch_memory_bytes(w.config, elem, B, positions),
                                                             double(free_bytes) - model_bytes);
      if (!refusal.empty()) {
        std::fprintf(stderr, "gpt2: %s\n", refusal.c_str());
        return 2;
      }
    }
    std::printf("GPU: %s (sm_%d%d); model: %s, %s; prompt %zu tokens, %d new\n", dev.name.c_str(), dev.major, dev.minor,
                w.config.describe().c_str(),
                a.dtype == wb::DType::F32 ? "f32"
                : a.int8()                ? "bf16, int8 decode weights (--int8)"
                : a.int4()                ? "bf16, int4 decode weights (--int4)"
                                          : "bf16",
                prompt.size(), a.new_tokens);
    bool checks_ok = true;
    std::vector<Run> runs;
    for (const auto& k : a.kernels) runs.push_back(run_one(w, a, k, prompt, dev, checks_ok));

    if (!a.json.empty()) {
      using Json = wb::results::Json;
      Json doc = wb::results::model_document("gpt2", dev);  // harness/report/results.schema.json, kind model
      doc["runs"] = Json::array();
      for (const auto& r : runs) {
        Json j = {{"kernels", r.kernels}, {"ttft_ms", r.ttft_ms}, {"decode_tok_s", r.decode_tok_s}};
        if (a.int8()) j["int8"] = true;
        if (a.int4()) j["int4"] = true;
        j["decode"] = gpt2::decode_path_name(a.decode);
        if (r.overlap) {
          j["overlap"] = {{"alone_ms", r.overlap->alone_ms},
                          {"together_ms", r.overlap->together_ms},
                          {"decode_alone_ms", r.overlap->decode_alone_ms},
                          {"decode_together_ms", r.overlap->decode_together_ms},
                          {"prefill_alone_ms", r.overlap->prefill_alone_ms},
                          {"prefill_together_ms", r.overlap->prefill_together_ms},
                          {"same_tokens", r.overlap->same_tokens}};
        }
        if (!r.batch.empty()) {
          j["batch"] = Json::array();
          for (const BatchRow& b : r.batch) {
            j["batch"].push_back({{"batch", b.batch},
                                  {"tok_s", b.tok_s},
                                  {"tok_s_per_seq", b.tok_s_per_seq},
                                  {"ms_per_step", b.ms_per_step},
                                  {"bytes_per_step", b.cost.bytes},
                                  {"gbps", b.gbps},
                                  {"flops_per_step", b.cost.flops},
                                  {"tflops", b.tflops},
                                  {"bound", b.bound},
                                  {"linear_bound", b.linear_bound}});
          }
        }
        doc["runs"].push_back(std::move(j));
      }
      // Written whole at the end: a temporary beside --json, renamed when complete.
      const std::string problem =
          wb::write_whole(a.json, [&](const std::string& path) { return wb::results::write(path, doc); });
      if (!problem.empty()) {
        std::fprintf(stderr, "gpt2: %s\n", problem.c_str());
        return 1;
      }
      std::printf("wrote %s\n", a.json.c_str());
    }
    if (!checks_ok) {
      std::fprintf(stderr, "gpt2: --check found a problem (see the check lines above)\n");
      return 1;
    }
    return 0;
  } catch (const wb::NotImplemented& e) {
    std::fprintf(stderr, "gpt2: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpt2: %s\n", e.what());
    return 1;
  }
}
