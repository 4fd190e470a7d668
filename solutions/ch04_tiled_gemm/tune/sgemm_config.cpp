#include "sgemm_config.h"

#include <algorithm>
#include <array>
#include <set>

namespace ch04 {

std::string SgemmConfig::name() const {
  return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "_w" + std::to_string(wm) + "x" +
         std::to_string(wn) + "_t" + std::to_string(tm) + "x" + std::to_string(tn) + "_n" + std::to_string(threads) +
         (pf ? "_pf" : "");
}

namespace {

// The parameters, in the order of a config's JSON, and what each one is.
struct Knob {
  const char* name;
  int SgemmConfig::*field;
  const char* meaning;
};
constexpr Knob kKnobs[] = {
    {"bm", &SgemmConfig::bm, "rows of C per block"},
    {"bn", &SgemmConfig::bn, "columns of C per block"},
    {"bk", &SgemmConfig::bk, "K per step (the depth of the shared-memory tiles)"},
    {"wm", &SgemmConfig::wm, "rows of C per warp"},
    {"wn", &SgemmConfig::wn, "columns of C per warp"},
    {"tm", &SgemmConfig::tm, "rows of C per thread"},
    {"tn", &SgemmConfig::tn, "columns of C per thread"},
    {"threads", &SgemmConfig::threads, "threads per block"},
    {"pf", &SgemmConfig::pf, "1: fragments read from shared memory one k ahead"},
};

wb::Shape sgemm_shape(int64_t m, int64_t n, int64_t k, int64_t pad, double alpha, double beta) {
  wb::Shape s{{"M", m}, {"N", n}, {"K", k}, {"pad", pad}};
  s.set_param("alpha", alpha).set_param("beta", beta);
  return s;
}

}  // namespace

wb::tune::Config to_tune(const SgemmConfig& c) {
  std::vector<std::pair<std::string, int64_t>> values;
  for (const Knob& k : kKnobs) values.emplace_back(k.name, c.*k.field);
  return wb::tune::Config(std::move(values));
}

SgemmConfig from_tune(const wb::tune::Config& c) {
  SgemmConfig out;
  for (const Knob& k : kKnobs) out.*k.field = static_cast<int>(c[k.name]);
  return out;
}

wb::tune::Space sgemm_space(const std::vector<SgemmConfig>& compiled) {
  wb::tune::Space s;
  s.name = kSgemmSpace;
  for (const Knob& k : kKnobs) {
    std::set<int64_t> values;
    for (const SgemmConfig& c : compiled) values.insert(c.*k.field);
    s.params.push_back({k.name, std::vector<int64_t>(values.begin(), values.end()), k.meaning});
  }
  for (const SgemmConfig& c : compiled) s.points.push_back(to_tune(c));
  s.dims = {"M", "N", "K"};
  s.problem = [](const wb::tune::Config& c, const wb::Shape&) -> std::optional<std::string> {
    if (const char* why = sgemm_config_problem(from_tune(c))) return std::string(why);
    return std::nullopt;
  };
  s.heuristic = [](const wb::Shape&, const wb::tune::Facts&) { return to_tune(kSgemmDefault); };
  s.prefer_overall = true;
  s.label = [](const wb::tune::Config& c) { return from_tune(c).name(); };
  // The benchmark's operation, C = A * B + 0.5 * C with packed rows, on square and long-K problems.
  for (const auto& [m, n, k] : {std::array<int64_t, 3>{1024, 1024, 1024}, std::array<int64_t, 3>{2048, 2048, 2048},
                                std::array<int64_t, 3>{4096, 4096, 4096}, std::array<int64_t, 3>{4096, 1024, 8192}}) {
    s.shapes.push_back(sgemm_shape(m, n, k, 0, 1.0, 0.5));
  }
  // Primes and misaligned rows (pad 3) with beta != 0; odd sizes with beta == 0 (C not read).
  s.check_shapes = {sgemm_shape(257, 255, 263, 3, 0.75, -1.25), sgemm_shape(129, 131, 67, 4, 1.0, 0.0)};
  return s;
}

}  // namespace ch04
