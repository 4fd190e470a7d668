// Summary statistics of timing samples.
#pragma once
#include <vector>

namespace wb {

struct Stats {
  int n = 0;
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0;
  // (p90 - p10) / median, in percent: how much the samples wander.
  double spread_pct() const { return median > 0 ? 100.0 * (p90 - p10) / median : 0.0; }
};

// Quantiles by linear interpolation between order statistics. Empty input gives n == 0.
Stats summarize(std::vector<double> samples);

}  // namespace wb
