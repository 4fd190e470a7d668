// Host tests of the GPU model's host parts: the kernel composition (--kernels, --use) and the
// tool's arguments. No GPU needed.
#include <gtest/gtest.h>

#include "host/cli.h"
#include "model.h"
#include "tool_args.h"
#include "spec/op.cuh"

namespace gpt2 {
namespace {

TEST(Kernels, AllAndPerOpChoice) {
  const Kernels k = Kernels::parse("solution", "layernorm:student,attention:library");
  EXPECT_EQ(k.layernorm, Who::Student);
  EXPECT_EQ(k.attention, Who::Library);
  EXPECT_EQ(k.gemm, Who::Solution);
  EXPECT_EQ(k.gemv, Who::Solution);
  const Kernels lib = Kernels::parse("library");
  EXPECT_EQ(lib.gemm, Who::Library);
  EXPECT_EQ(lib.block, Who::Solution) << "host code has no library form";
  EXPECT_EQ(lib.graph, Who::Solution);
  EXPECT_NE(k.describe().find("layernorm:student"), std::string::npos);
}

TEST(Kernels, RefusesWithTheBadPieceNamed) {
  auto message = [](std::string_view kernels, std::string_view use) {
    try {
      Kernels::parse(kernels, use);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("solutions", "").find("'solutions'"), std::string::npos);
  EXPECT_NE(message("solution", "layernorm").find("op:who"), std::string::npos);
  EXPECT_NE(message("solution", "softmax:student").find("'softmax' is not an op"), std::string::npos);
  EXPECT_NE(message("solution", "gemm:mine").find("--use=gemm"), std::string::npos);
  EXPECT_NE(message("solution", "graph:library").find("no library form"), std::string::npos);
}

// The model finds kernels through the harness's registry, which checks every linked variant
// against its op's spec: a program that links a chapter's launchers without its specs fails
// here, on any machine, instead of at the model's first GPU run.
TEST(Registry, EveryVariantTheModelLinksHasItsSpec) {
  const auto& variants = wb::all_variants();  // throws, naming the variant, if a spec is missing
  bool topk_reference = false;
  for (const wb::Variant& v : variants) topk_reference |= v.op == "topk/f32" && v.role == wb::Role::Reference;
  EXPECT_TRUE(topk_reference) << "chapter 7's library top-k, which the model's argmax/top-k uses, is not linked";
  EXPECT_NE(wb::find_op("linear_bias/bf16"), nullptr);
  EXPECT_NE(wb::find_op("residual_layernorm/bf16"), nullptr);
}

TEST(ToolArgs, Tokens) {
  EXPECT_EQ(parse_tokens("1,2,50256"), (std::vector<int32_t>{1, 2, 50256}));
  EXPECT_THROW(parse_tokens("1,,2"), wb::UsageError);
  EXPECT_THROW(parse_tokens("1,x"), wb::UsageError);
  EXPECT_THROW(parse_tokens("-3"), wb::UsageError);
}

TEST(ToolArgs, SeededPromptIsInRangeAndRepeatable) {
  const auto a = seeded_prompt(500, 251, 4), b = seeded_prompt(500, 251, 4), c = seeded_prompt(500, 251, 5);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (int32_t t : a) {
    EXPECT_GE(t, 0);
    EXPECT_LT(t, 251);
  }
}

ToolArgs parse(std::vector<std::string> args) {
  args.insert(args.begin(), "gpt2");
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  return parse_tool_args(static_cast<int>(argv.size()), argv.data());
}

std::string refusal(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const wb::UsageError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(ToolArgs, GoodLine) {
  const ToolArgs a = parse({"--weights=m.safetensors", "--prompt-len=512", "--new=64", "--dtype=f32",
                            "--kernels=library,solution", "--use=layernorm:student", "--no-graph", "--json=o.json",
                            "--upload=plain"});
  EXPECT_EQ(a.prompt_len, 512);
  EXPECT_EQ(a.new_tokens, 64);
  EXPECT_EQ(a.dtype, wb::DType::F32);
  EXPECT_EQ(a.kernels, (std::vector<std::string>{"library", "solution"}));
  EXPECT_FALSE(a.graph);
  EXPECT_EQ(a.json, "o.json");
  EXPECT_EQ(a.upload, UploadMode::Plain);
  EXPECT_EQ(parse({"--weights=m", "--tokens=1"}).upload, UploadMode::Staged) << "staged is the default";
}

TEST(ToolArgs, BadLinesNameTheArgument) {
  EXPECT_NE(refusal({"--prompt-len=4"}).find("--weights"), std::string::npos);
  EXPECT_NE(refusal({"--weights=m", "--tokens=1", "--prompt-len=4"}).find("one way"), std::string::npos);
  EXPECT_NE(refusal({"--weights=m"}).find("one way"), std::string::npos);
  EXPECT_NE(refusal({"--weights=m", "--tokens=1", "--dtype=fp8"}).find("--dtype=fp8"), std::string::npos);
  EXPECT_NE(refusal({"--weights=m", "--tokens=1", "--kernels=mine"}).find("'mine'"), std::string::npos);
  EXPECT_NE(refusal({"--weights=m", "--tokens=1", "--new=0"}).find("--new"), std::string::npos);
  EXPECT_NE(refusal({"--weights=m", "--tokens=1", "--use=gemm"}).find("op:who"), std::string::npos);
  EXPECT_NE(refusal({"--weights=m", "--tokens=1", "--frobnicate"}).find("frobnicate"), std::string::npos);
  EXPECT_NE(refusal({"--weights=m", "--tokens=1", "--upload=fast"}).find("--upload=fast"), std::string::npos);
}

}  // namespace
}  // namespace gpt2
