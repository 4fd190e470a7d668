#include "measure/left_work.h"

#include <algorithm>
#include <cstdio>

namespace wb::bench {

double left_work_threshold_ms(double timed_ms) { return std::max(0.010, 0.2 * timed_ms); }

bool over_threshold(const LeftOver& m) { return m.left_ms > left_work_threshold_ms(m.timed_ms); }

LeftWork judge_left_work(const std::vector<LeftOver>& measured, int rechecks) {
  if (measured.empty()) return LeftWork::MeasureAgain;
  if (!std::all_of(measured.begin(), measured.end(), over_threshold)) return LeftWork::Clean;
  return static_cast<int>(measured.size()) > std::max(rechecks, 0) ? LeftWork::Running : LeftWork::MeasureAgain;
}

std::string describe_left_work(const std::vector<LeftOver>& measured) {
  std::string s;
  for (size_t i = 0; i < measured.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f us", measured[i].left_ms * 1e3);
    if (i == 1) s += ", then ";
    if (i > 1) s += i + 1 == measured.size() ? " and " : ", ";
    s += buf;
  }
  return s;
}

}  // namespace wb::bench
