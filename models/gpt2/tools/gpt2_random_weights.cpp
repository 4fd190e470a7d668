// gpt2_random_weights: writes a GPT-2 with random weights as a safetensors file, with
// Hugging Face's tensor names, for tests and for machines that cannot download one.
//
//   build/<preset>/bin/gpt2_random_weights --config=tiny --seed=1 --out=tiny.safetensors
//   build/<preset>/bin/gpt2_random_weights --config=L=4,C=128,H=8,V=1000,P=256 --dtype=bf16 --out=m.safetensors
//
// The init (GPT-2's, with random LayerNorm affine and biases unless --gpt2-affine) is
// described in models/gpt2/random_weights.h.
#include <cstdio>
#include <filesystem>

#include "random_weights.h"
#include "runtime/options.h"
#include "runtime/output_file.h"
#include "tool_main.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::string config_text, dtype_text = "f32", out;
  int64_t seed = 1;
  bool no_prefix = false, untied = false, gpt2_affine = false, force = false;
  CLI::App app("Write a GPT-2 with random weights as a safetensors file.", "gpt2_random_weights");
  wb::cli::conventions(app);
  app.add_option("--config", config_text, "tiny | 124M | 355M | 774M | 1.5B | L=..,C=..,H=..,V=..,P=.. (required)");
  app.add_option("--seed", seed, "seed of the random values (default 1)")->transform(wb::cli::whole_number(0));
  app.add_option("--dtype", dtype_text, "f32 | bf16 | f16 (default f32)")
      ->transform(wb::cli::one_of({"f32", "bf16", "f16"}));
  app.add_option("--out", out, "the file to write (required; never replaced without --force)");
  app.add_flag("--no-prefix", no_prefix, "names without 'transformer.' (wte.weight, h.0...)");
  app.add_flag("--untied", untied, "also write lm_head.weight, a copy of wte.weight");
  app.add_flag("--gpt2-affine", gpt2_affine, "LayerNorm gains 1, shifts and biases 0 (GPT-2's init) instead of random");
  app.add_flag("--force", force, "replace --out if it exists");
  return gpt2::run_tool(app, "gpt2_random_weights", [&] {
    if (!wb::cli::parse(app, argc, argv)) return 0;
    if (config_text.empty())
      throw wb::UsageError("--config is required: tiny, 124M, 355M, 774M, 1.5B or L=..,C=..,H=..,V=..,P=..");
    if (out.empty()) throw wb::UsageError("--out is required: the file to write");

    gpt2::Config config;
    try {
      config = gpt2::parse_config(config_text);
    } catch (const std::invalid_argument& e) {
      throw wb::UsageError(std::string("--config: ") + e.what());
    }
    gpt2::RandomOptions o;
    o.seed = static_cast<uint64_t>(seed);
    o.prefix = !no_prefix;
    o.untied = untied;
    o.gpt2_affine = gpt2_affine;
    if (dtype_text == "f32")
      o.dtype = safetensors::Dtype::F32;
    else if (dtype_text == "bf16")
      o.dtype = safetensors::Dtype::BF16;
    else
      o.dtype = safetensors::Dtype::F16;

    std::error_code ec;
    if (fs::exists(out, ec) && !force && !fs::is_directory(out, ec)) {
      throw wb::UsageError("--out: " + out + " already exists; add --force to replace it");
    }
    if (auto why = wb::output_path_problem(out)) throw wb::UsageError("--out: " + *why);

    const bool large = config.n_params() > 50'000'000;
    if (large) {  // a line per tenth of the tensors
      o.progress = [](size_t done, size_t total) {
        if (done * 10 / total != (done - 1) * 10 / total || done == total) {
          std::fprintf(stderr, "  %zu/%zu tensors written\n", done, total);
        }
      };
    }
    std::printf("writing %s: GPT-2 %s, %s, seed %lld%s\n", out.c_str(), config.describe().c_str(), dtype_text.c_str(),
                static_cast<long long>(seed), large ? " (a while: a progress line per tenth)" : "");
    std::fflush(stdout);
    gpt2::write_random_weights(out, config, o, force);
    std::printf("wrote %s (%lld bytes)\n", out.c_str(), static_cast<long long>(fs::file_size(out)));
    return 0;
  });
}
