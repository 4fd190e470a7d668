// The command line of build/ch09/bin/gpt2, parsed and checked before any GPU work, so that
// a wrong argument is named even on a machine without a GPU.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "host/dtype.h"
#include "model.h"

namespace gpt2 {

struct ToolArgs {
  std::string weights;
  std::vector<int32_t> tokens;       // --tokens=ID,ID,...
  int prompt_len = 0;                // --prompt-len=N: N seeded pseudo-random ids instead
  int new_tokens = 128;              // --new
  wb::DType dtype = wb::DType::BF16;
  std::vector<std::string> kernels;  // --kernels=library,solution: one run each
  std::string use;                   // --use=op:who,...
  bool graph = true, check = false;
  bool int8 = false;                 // --int8: decode GEMVs from INT8 weights (bf16 only)
  bool fused_decode = false;         // --decode=fused: the fused decode step (ops: op by op, the default)
  UploadMode upload = UploadMode::Staged;  // --upload=staged|plain
  std::string json;
  int64_t device = 0;
  int64_t seed = 1;
  bool help = false;
};

// Throws wb::UsageError naming the argument and what it accepts.
ToolArgs parse_tool_args(int argc, char** argv);
// "1,2,3" -> {1, 2, 3}; throws wb::UsageError naming --tokens and the bad piece.
std::vector<int32_t> parse_tokens(const std::string& text);
// The prompt of --prompt-len: n ids drawn from [0, vocab) with the seed.
std::vector<int32_t> seeded_prompt(int n, int vocab, uint64_t seed);

}  // namespace gpt2
