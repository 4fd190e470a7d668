// The rules between Options' fields (model.h): one place, so that the model's constructor and
// gpt2's argument parser refuse the same combinations with the same words, the parser before
// any GPU work. The rules that need the weights (their dtype, a head size a kernel takes) stay
// with the model, which has them.
#include <stdexcept>
#include <string>
#include <utility>

#include "model.h"

namespace gpt2 {

namespace {
// The name `names` gives `v`; "?" for a value the table does not hold.
template <class E, size_t N>
const char* name_in(const std::pair<E, const char*> (&names)[N], E v) {
  for (const auto& [e, name] : names) {
    if (e == v) return name;
  }
  return "?";
}
}  // namespace

const char* decode_path_name(DecodePath p) {
  static constexpr std::pair<DecodePath, const char*> kNames[] = {
      {DecodePath::Ops, "ops"}, {DecodePath::Fused, "fused"}, {DecodePath::Persistent, "persistent"}};
  return name_in(kNames, p);
}

const char* weight_format_flag(WeightFormat f) {
  static constexpr std::pair<WeightFormat, const char*> kFlags[] = {
      {WeightFormat::Native, ""}, {WeightFormat::Int8, "--int8"}, {WeightFormat::Int4, "--int4"}};
  return name_in(kFlags, f);
}

void validate(const Options& o, std::string_view composition) {
  if (o.dtype != wb::DType::F32 && o.dtype != wb::DType::BF16) {
    throw std::invalid_argument("dtype: the model runs in f32 or bf16");
  }
  const Kernels& k = o.kernels;
  if (o.dtype == wb::DType::F32) {
    for (auto [who, name] : {std::pair{k.gemm, "gemm"}, {k.gemv, "gemv"}, {k.lm_head, "lm_head"}}) {
      if (who == Who::Student) {
        throw std::invalid_argument(std::string("--use=") + name +
                                    ":student: the learner's matmuls (exercises 1 and 2) are BF16; run --dtype=bf16, "
                                    "or pick --use=" +
                                    name + ":solution for the FP32 model");
      }
    }
  }
  // Quantized weights (--int8, --int4): BF16 activations, the solution's GEMV, no persistent step.
  const bool quantized = o.weight_format != WeightFormat::Native;
  const std::string flag = weight_format_flag(o.weight_format);
  const bool int4 = o.weight_format == WeightFormat::Int4;
  const std::string bits = int4 ? "INT4" : "INT8", form = int4 ? "W4A16" : "W8A16";
  if (quantized && o.dtype != wb::DType::BF16) {
    throw std::invalid_argument(flag + " with --dtype=f32 (WeightFormat::" + (int4 ? "Int4" : "Int8") +
                                " on an FP32 model): " + bits + " weights run with BF16 activations (" + form +
                                "); use --dtype=bf16 (the default) with " + flag + ", or leave " + flag +
                                " out for the FP32 model");
  }
  if (quantized && k.gemv != Who::Solution) {
    const std::string who = who_name(k.gemv);
    const std::string named = composition.empty() ? "gemv:" + who : std::string(composition);
    throw std::invalid_argument(flag + " with " + named + ": the GEMV on " + bits + " weights is the solution's " +
                                "(solutions/ch09_gpt2/gemv/" + (int4 ? "v10_gemv_w4a16.cu" : "v5_gemv_w8a16.cu") +
                                "), but " + (composition.empty() ? "gemv" : "that composition's gemv") + " is the " +
                                who + "'s; add --use=gemv:solution (or run that composition without " + flag + ")");
  }
  if (o.decode == DecodePath::Persistent && (o.dtype != wb::DType::BF16 || quantized)) {
    throw std::invalid_argument(std::string("--decode=persistent runs on BF16 weights without --int8 or --int4 (use "
                                            "--decode=fused for those): the persistent step is a form of the fused "
                                            "one on BF16 weights, and this model has ") +
                                (quantized ? bits + " weights (" + flag + ")" : "FP32 weights (--dtype=f32)"));
  }
  if (o.batch < 0) {
    throw std::invalid_argument("batch = " + std::to_string(o.batch) +
                                ": give the most sequences to decode together (Options::batch >= 1), or 0 for none");
  }
}

}  // namespace gpt2
