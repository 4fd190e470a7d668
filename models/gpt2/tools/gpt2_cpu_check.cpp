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
// arguments.
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "cpu_forward.h"
#include "runtime/cli.h"
#include "reference_logits.h"
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
  std::string weights_path, expect_path, write_dir, tokens_text, tol_text = "1e-5";
  int64_t n_head = 0, prompt_len = 16;
  bool force = false;
  wb::ArgParser args("gpt2_cpu_check", "Compare the float64 CPU forward of GPT-2 with expected logits.");
  args.add_string("weights", "the safetensors file (required)", &weights_path);
  args.add_string("expect", "reference.json of the expected logits (see models/gpt2/reference_logits.h)", &expect_path);
  args.add_string("write-expect", "instead: write this forward's logits into this folder", &write_dir);
  args.add_string("tokens", "with --write-expect: the prompt, ID,ID,... (default: --prompt-len ids)", &tokens_text);
  args.add_int("prompt-len", "with --write-expect and no --tokens: prompt length (default 16)", &prompt_len, 1, 1 << 20);
  args.add_int("n-head", "heads, when neither the file nor a config.json beside it says", &n_head, 1, 1 << 16);
  args.add_string("tol", "largest relative L2 error that passes (default 1e-5)", &tol_text);
  args.add_flag("force", "with --write-expect: replace existing files", &force);
  try {
    if (!args.parse(argc, argv)) return 0;
    if (weights_path.empty()) throw wb::UsageError("--weights is required");
    if (expect_path.empty() == write_dir.empty()) throw wb::UsageError("give one of --expect=FILE or --write-expect=DIR");
    if (!tokens_text.empty() && write_dir.empty()) throw wb::UsageError("--tokens goes with --write-expect (--expect files hold their tokens)");
    double tol = 0;
    try {
      size_t used = 0;
      tol = std::stod(tol_text, &used);
      if (used != tol_text.size() || !(tol > 0)) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw wb::UsageError("--tol: '" + tol_text + "' is not a positive number");
    }

    gpt2::LoadOptions lo;
    lo.n_head = static_cast<int>(n_head);
    lo.progress = [tenths = int64_t{0}](const gpt2::LoadProgress& p) mutable {  // a line per tenth, files over 256 MB
      if (p.bytes_total > (int64_t{256} << 20) && p.bytes_done * 10 / p.bytes_total > tenths) {
        tenths = p.bytes_done * 10 / p.bytes_total;
        std::fprintf(stderr, "  loaded %3lld%%  (%d of %d tensors)\n", static_cast<long long>(p.bytes_done * 100 / p.bytes_total),
                     p.tensors_done, p.tensors_total);
      }
    };
    const gpt2::Weights w = gpt2::load_weights(weights_path, lo);
    std::printf("weights  %s: GPT-2 %s\n", weights_path.c_str(), w.config.describe().c_str());
    const gpt2::cpu::Model model(w);

    if (!write_dir.empty()) {
      gpt2::ReferenceLogits ref;
      ref.tokens = tokens_text.empty() ? gpt2::default_prompt(static_cast<int>(std::min<int64_t>(prompt_len, w.config.n_ctx)), w.config.vocab)
                                       : parse_tokens(tokens_text);
      ref.vocab = w.config.vocab;
      const std::vector<double> logits = model.forward(ref.tokens);
      ref.logits.assign(logits.begin(), logits.end());
      ref.source = "gpt2_cpu_check float64 forward of " + weights_path;
      gpt2::write_reference(write_dir, ref, force);
      std::printf("wrote %s/reference.json and logits.f32: %zu positions x %d logits\n", write_dir.c_str(),
                  ref.tokens.size(), w.config.vocab);
      return 0;
    }

    const gpt2::ReferenceLogits ref = gpt2::read_reference(expect_path);
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
    std::printf("%s\n", pass ? "PASS" : c.finite ? "FAIL: the error is above --tol" : "FAIL: NaN or infinity in the logits");
    return pass ? 0 : 1;
  } catch (const wb::UsageError& e) {
    std::fprintf(stderr, "gpt2_cpu_check: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpt2_cpu_check: %s\n", e.what());
    return 1;
  }
}
