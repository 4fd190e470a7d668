// gpt2_cpu_check: runs the float64 CPU forward on a weights file and compares its logits
// with expected ones (for example transformers' FP32 logits, written by
// scripts/gpt2_torch_reference.py), reporting the relative L2 error.
//
//   scripts/gpt2_torch_reference.py --config=tiny --seed=1 --out-dir=ref
//   build/<preset>/bin/gpt2_cpu_check --weights=ref/model.safetensors --expect=ref/reference.json
//
// Or records the CPU forward's own logits, for a later check of another implementation:
//   build/<preset>/bin/gpt2_cpu_check --weights=m.safetensors --write-expect=DIR [--tokens=1,2,3]
//
// Exit status: 0 when the error is within --tol, 1 when not (or on a bad file), 2 on bad
// arguments. The arguments, the files named and the output folder are checked before the
// (possibly long) forward; the written files appear whole or not at all.
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "cpu_forward.h"
#include "reference_logits.h"
#include "runtime/options.h"
#include "runtime/output_file.h"
#include "weights.h"

namespace {

std::vector<int32_t> parse_tokens(const std::string& text) {
  std::vector<int32_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    out.push_back(static_cast<int32_t>(wb::parse_int("--tokens", text.substr(start, comma - start), 0, INT32_MAX)));
    start = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::string weights_path, expect_path, write_dir, tokens_text;
  int64_t n_head = 0, prompt_len = 16;
  double tol = 1e-5;
  bool force = false;
  std::vector<int32_t> tokens;
  CLI::App app("Compare the float64 CPU forward of GPT-2 with expected logits.", "gpt2_cpu_check");
  wb::cli::conventions(app);
  app.add_option("--weights", weights_path, "the safetensors file (required)");
  app.add_option("--expect", expect_path, "reference.json of the expected logits (see models/gpt2/reference_logits.h)");
  app.add_option("--write-expect", write_dir, "instead: write this forward's logits into this folder");
  app.add_option("--tokens", tokens_text, "with --write-expect: the prompt, ID,ID,... (default: --prompt-len ids)");
  app.add_option("--prompt-len", prompt_len, "with --write-expect and no --tokens: prompt length (default 16)")
      ->transform(wb::cli::whole_number(1, 1 << 20));
  app.add_option("--n-head", n_head, "heads, when neither the file nor a config.json beside it says")
      ->transform(wb::cli::whole_number(1, 1 << 16));
  app.add_option("--tol", tol, "largest relative L2 error that passes (default 1e-5)")
      ->transform(wb::cli::positive_number());
  app.add_flag("--force", force, "with --write-expect: replace existing files");
  try {
    if (!wb::cli::parse(app, argc, argv)) return 0;
    if (weights_path.empty()) throw wb::UsageError("--weights is required: the safetensors file to run");
    if (expect_path.empty() == write_dir.empty())
      throw wb::UsageError("give one of --expect=FILE or --write-expect=DIR");
    if (!tokens_text.empty() && write_dir.empty())
      throw wb::UsageError("--tokens goes with --write-expect (--expect files hold their tokens)");
    if (app.count("--prompt-len") && write_dir.empty()) {
      throw wb::UsageError("--prompt-len goes with --write-expect (--expect files hold their tokens)");
    }
    if (force && write_dir.empty()) throw wb::UsageError("--force goes with --write-expect (--expect only reads)");
    if (!tokens_text.empty() && app.count("--prompt-len")) {
      throw wb::UsageError("give the prompt one way: --tokens=ID,ID,... or --prompt-len=N, not both");
    }
    if (!tokens_text.empty()) tokens = parse_tokens(tokens_text);
    std::error_code ec;
    if (!fs::exists(weights_path, ec)) {
      throw wb::UsageError("--weights=" + weights_path + ": no such file (gpt2_random_weights writes one)");
    }
    if (!expect_path.empty() && !fs::exists(expect_path, ec)) {
      throw wb::UsageError("--expect=" + expect_path +
                           ": no such file (--write-expect=DIR or "
                           "scripts/gpt2_torch_reference.py writes one)");
    }
    if (!write_dir.empty()) {
      if (!fs::is_directory(write_dir, ec)) {
        throw wb::UsageError("--write-expect=" + write_dir + ": no such folder; create it first");
      }
      for (const char* name : {"reference.json", "logits.f32"}) {
        const fs::path p = fs::path(write_dir) / name;
        if (auto why = wb::output_path_problem(p.string()))
          throw wb::UsageError("--write-expect=" + write_dir + ": " + *why);
        if (!force && fs::exists(p, ec)) {
          throw wb::UsageError("--write-expect=" + write_dir + ": " + p.string() +
                               " already exists; add --force to replace it");
        }
      }
    }
  } catch (const wb::UsageError& e) {
    return wb::cli::refuse(app, e.what());
  }
  try {
    // The expected logits first: a bad file is reported before the weights are read.
    gpt2::ReferenceLogits ref;
    if (!expect_path.empty()) ref = gpt2::read_reference(expect_path);

    gpt2::LoadOptions lo;
    lo.n_head = static_cast<int>(n_head);
    lo.progress = [tenths = int64_t{0}](const gpt2::LoadProgress& p) mutable {  // a line per tenth, files over 256 MB
      if (p.bytes_total > (int64_t{256} << 20) && p.bytes_done * 10 / p.bytes_total > tenths) {
        tenths = p.bytes_done * 10 / p.bytes_total;
        std::fprintf(stderr, "  loaded %3lld%%  (%d of %d tensors)\n",
                     static_cast<long long>(p.bytes_done * 100 / p.bytes_total), p.tensors_done, p.tensors_total);
      }
    };
    const gpt2::Weights w = gpt2::load_weights(weights_path, lo);
    std::printf("weights  %s: GPT-2 %s\n", weights_path.c_str(), w.config.describe().c_str());
    const gpt2::cpu::Model model(w);

    if (!write_dir.empty()) {
      gpt2::ReferenceLogits out;
      out.tokens = tokens.empty() ? gpt2::default_prompt(
                                        static_cast<int>(std::min<int64_t>(prompt_len, w.config.n_ctx)), w.config.vocab)
                                  : tokens;
      out.vocab = w.config.vocab;
      const std::vector<double> logits = model.forward(out.tokens);
      out.logits.assign(logits.begin(), logits.end());
      out.source = "gpt2_cpu_check float64 forward of " + weights_path;
      gpt2::write_reference(write_dir, out, force);
      std::printf("wrote %s/reference.json and logits.f32: %zu positions x %d logits\n", write_dir.c_str(),
                  out.tokens.size(), w.config.vocab);
      return 0;
    }

    std::printf("expect   %s: %zu positions x %lld logits from %s\n", expect_path.c_str(), ref.tokens.size(),
                static_cast<long long>(ref.vocab), ref.source.empty() ? "(source not given)" : ref.source.c_str());
    if (ref.vocab != w.config.vocab) {
      std::fprintf(stderr, "gpt2_cpu_check: %s has %lld logits per position, but the weights have a vocabulary of %d\n",
                   expect_path.c_str(), static_cast<long long>(ref.vocab), w.config.vocab);
      return 1;
    }
    const std::vector<double> logits = model.forward(ref.tokens);
    const gpt2::LogitsComparison c = gpt2::compare_logits(ref.logits, logits, ref.vocab);
    std::printf("float64 CPU forward vs the expected logits:\n");
    std::printf("  relative L2 error   %.3g   (passes at <= %.3g)\n", c.rel_l2, tol);
    std::printf("  max |difference|    %.3g at position %lld, token %lld\n", c.max_abs,
                static_cast<long long>(c.max_position), static_cast<long long>(c.max_token));
    std::printf("  greedy token equal  at %d of %d positions\n", c.top1_equal, c.positions);
    const bool pass = c.finite && c.rel_l2 <= tol;
    std::printf("%s\n", pass       ? "PASS"
                        : c.finite ? "FAIL: the error is above --tol"
                                   : "FAIL: NaN or infinity in the logits");
    return pass ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpt2_cpu_check: %s\n", e.what());
    return 1;
  }
}
