// Expected logits for a fixed prompt, as files a script or a tool writes and a check reads:
//
//   DIR/reference.json   {"format": "gpt2-logits", "tokens": [464, 2068, ...],
//                         "positions": T, "vocab": V, "logits_file": "logits.f32",
//                         "logits_dtype": "float32-le", "source": "transformers 4.46 ..."}
//   DIR/logits.f32       T·V float32 little-endian, row-major (T, V): every position's logits
//
// scripts/gpt2_torch_reference.py writes them from Hugging Face transformers;
// gpt2_cpu_check --write-expect writes them from the float64 CPU forward.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace gpt2 {

struct ReferenceLogits {
  std::vector<int32_t> tokens;  // the prompt, T ids
  int64_t vocab = 0;            // V
  std::vector<float> logits;    // (T, V)
  std::string source;           // who computed them
};

// Throws std::runtime_error naming the file and what is wrong.
ReferenceLogits read_reference(const std::string& json_path);
// Writes DIR/reference.json and DIR/logits.f32; refuses existing files unless `overwrite`.
void write_reference(const std::string& dir, const ReferenceLogits& ref, bool overwrite = false);

struct LogitsComparison {
  double rel_l2 = 0;                        // ||got - expected||₂ / ||expected||₂ over all T·V logits
  double max_abs = 0;                       // the largest |got - expected|
  int64_t max_position = 0, max_token = 0;  // where it is
  int top1_equal = 0;                       // positions whose argmax agrees
  int positions = 0;
  bool finite = true;  // false when any value is NaN or infinite (then rel_l2 is NaN)
};
LogitsComparison compare_logits(std::span<const float> expected, std::span<const double> got, int64_t vocab);

// The prompt used when none is given: n ids spread over [0, vocab), the same in the script.
std::vector<int32_t> default_prompt(int n, int vocab);

}  // namespace gpt2
