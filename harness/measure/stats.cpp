#include "measure/stats.h"

#include <algorithm>

namespace wb {

namespace {
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}
}  // namespace

Stats summarize(std::vector<double> samples) {
  Stats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.n = static_cast<int>(samples.size());
  s.median = quantile(samples, 0.5);
  s.p10 = quantile(samples, 0.1);
  s.p90 = quantile(samples, 0.9);
  s.min = samples.front();
  s.max = samples.back();
  return s;
}

}  // namespace wb
