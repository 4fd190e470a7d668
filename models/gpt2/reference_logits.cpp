#include "reference_logits.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "runtime/output_file.h"

namespace gpt2 {

namespace {
[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}
}  // namespace

std::vector<int32_t> default_prompt(int n, int vocab) {
  // i·7919 + 13 (mod V): distinct-looking ids, the same rule as scripts/gpt2_torch_reference.py
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) t[i] = static_cast<int32_t>((int64_t{i} * 7919 + 13) % vocab);
  return t;
}

ReferenceLogits read_reference(const std::string& json_path) {
  namespace fs = std::filesystem;
  std::ifstream in(json_path);
  if (!in) fail(json_path, "cannot open");
  std::stringstream text;
  text << in.rdbuf();
  using Json = nlohmann::json;
  Json j;
  try {
    j = Json::parse(text.str());
  } catch (const Json::parse_error& e) {
    fail(json_path, std::string("not valid JSON (") + e.what() + ")");
  }
  if (!j.is_object()) fail(json_path, "not a JSON object");
  auto field = [&](const char* key) -> const Json& {
    const auto v = j.find(key);
    if (v == j.end()) fail(json_path, std::string("no \"") + key + "\" field");
    return *v;
  };
  if (!field("format").is_string() || field("format").get<std::string>() != "gpt2-logits") {
    fail(json_path, "\"format\" is not \"gpt2-logits\"");
  }
  if (!field("logits_dtype").is_string() || field("logits_dtype").get<std::string>() != "float32-le") {
    fail(json_path, "\"logits_dtype\" is not \"float32-le\" (the only one this reader knows)");
  }
  ReferenceLogits ref;
  if (!field("tokens").is_array() || field("tokens").empty()) fail(json_path, "\"tokens\" is not a list of ids");
  for (const auto& t : field("tokens")) {
    const double id = t.is_number() ? t.get<double>() : -1;
    if (id < 0 || id != std::floor(id) || id > 2e9)
      fail(json_path, "\"tokens\" holds something that is not a token id");
    ref.tokens.push_back(static_cast<int32_t>(id));
  }
  if (!field("vocab").is_number() || field("vocab").get<double>() < 1) {
    fail(json_path, "\"vocab\" is not a positive number");
  }
  ref.vocab = static_cast<int64_t>(field("vocab").get<double>());
  if (!field("positions").is_number() || field("positions").get<double>() != static_cast<double>(ref.tokens.size())) {
    fail(json_path, "\"positions\" is not the number of tokens (" + std::to_string(ref.tokens.size()) + ")");
  }
  if (const auto s = j.find("source"); s != j.end() && s->is_string()) ref.source = s->get<std::string>();
  if (!field("logits_file").is_string()) fail(json_path, "\"logits_file\" is not a file name");

  const fs::path data = fs::path(json_path).parent_path() / field("logits_file").get<std::string>();
  const size_t n = ref.tokens.size() * static_cast<size_t>(ref.vocab);
  std::error_code ec;
  const auto size = fs::file_size(data, ec);
  if (ec) fail(data.string(), "cannot read (named by " + json_path + "): " + ec.message());
  if (size != n * 4) {
    fail(data.string(), std::to_string(size) + " bytes, but " + std::to_string(ref.tokens.size()) + " positions x " +
                            std::to_string(ref.vocab) + " logits x 4 bytes = " + std::to_string(n * 4) + " expected");
  }
  ref.logits.resize(n);
  std::ifstream bin(data, std::ios::binary);
  bin.read(reinterpret_cast<char*>(ref.logits.data()), static_cast<std::streamsize>(n * 4));
  if (!bin) fail(data.string(), "read failed");
  return ref;
}

void write_reference(const std::string& dir, const ReferenceLogits& ref, bool overwrite) {
  namespace fs = std::filesystem;
  const fs::path json_path = fs::path(dir) / "reference.json", data = fs::path(dir) / "logits.f32";
  if (ref.logits.size() != ref.tokens.size() * static_cast<size_t>(ref.vocab)) {
    fail(json_path.string(), "logits are not positions x vocab");
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail(dir, "is not a folder");
  for (const auto& p : {json_path, data}) {
    if (!overwrite && fs::exists(p, ec)) fail(p.string(), "already exists (not overwritten)");
  }
  const nlohmann::ordered_json j = {
      {"format", "gpt2-logits"}, {"tokens", ref.tokens},        {"positions", static_cast<int64_t>(ref.tokens.size())},
      {"vocab", ref.vocab},      {"logits_file", "logits.f32"}, {"logits_dtype", "float32-le"},
      {"source", ref.source}};
  // Each file appears whole or not at all; the logits first, since reference.json names them.
  try {
    wb::write_file_atomically(
        data.string(), std::string_view(reinterpret_cast<const char*>(ref.logits.data()), ref.logits.size() * 4), true);
    wb::write_file_atomically(json_path.string(), j.dump() + "\n");
  } catch (const std::exception& e) {
    fail(dir, std::string("writing failed: ") + e.what());
  }
}

LogitsComparison compare_logits(std::span<const float> expected, std::span<const double> got, int64_t vocab) {
  if (expected.size() != got.size() || vocab < 1 || expected.size() % vocab != 0) {
    throw std::invalid_argument("compare_logits: " + std::to_string(expected.size()) + " expected logits, " +
                                std::to_string(got.size()) + " computed, vocabulary " + std::to_string(vocab));
  }
  LogitsComparison r;
  r.positions = static_cast<int>(expected.size() / vocab);
  double diff2 = 0.0, ref2 = 0.0;
  for (int p = 0; p < r.positions; ++p) {
    int64_t arg_e = 0, arg_g = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      const int64_t i = p * vocab + v;
      const double e = expected[i], g = got[i], d = std::fabs(g - e);
      if (!std::isfinite(e) || !std::isfinite(g)) r.finite = false;
      diff2 += d * d;
      ref2 += e * e;
      if (d > r.max_abs) r.max_abs = d, r.max_position = p, r.max_token = v;
      if (e > expected[p * vocab + arg_e]) arg_e = v;
      if (g > got[p * vocab + arg_g]) arg_g = v;
    }
    r.top1_equal += arg_e == arg_g;
  }
  r.rel_l2 = r.finite ? std::sqrt(diff2 / ref2) : NAN;
  return r;
}

}  // namespace gpt2
