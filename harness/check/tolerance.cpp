#include "check/tolerance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace wb {

bool Tolerance::allows(double ref, double got) const {
  if (!std::isfinite(got)) return false;
  if (!std::isfinite(ref)) return false;  // a reference that overflowed is a test bug
  return std::fabs(got - ref) <= atol + rtol * std::fabs(ref);
}

std::string Tolerance::describe() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "|got-ref| <= %.2g + %.2g*|ref|", atol, rtol);
  return buf;
}

Tolerance tolerance_for(DType out, int64_t terms, double input_scale) {
  if (!dtype_is_float(out)) return {0.0, 0.0};
  const double k = static_cast<double>(std::max<int64_t>(terms, 1));
  const double rtol = 2.0 * unit_roundoff(out) + 4.0 * unit_roundoff(DType::F32) * std::sqrt(k);
  return {rtol * input_scale * std::sqrt(k), rtol};
}

}  // namespace wb
