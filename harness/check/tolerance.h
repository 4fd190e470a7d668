// How close is close enough: |got - ref| <= atol + rtol * |ref|, and NaN/Inf never pass.
#pragma once
#include <cstdint>
#include <string>

#include "declare/dtype.h"

namespace wb {

struct Tolerance {
  double atol = 0.0;
  double rtol = 0.0;
  // False for NaN/Inf in `got`, whatever the reference says.
  bool allows(double ref, double got) const;
  std::string describe() const;  // "|got-ref| <= 1.2e-07 + 3.4e-07*|ref|"
};

// The tolerance for an output of type `out` where each element is a sum of `terms`
// products or values, accumulated in FP32 (the book's rule for every float type), with
// inputs of magnitude about `input_scale`:
//   rtol = 2*u(out) + 4*u(fp32)*sqrt(terms)
//   atol = rtol * input_scale * sqrt(terms)       (covers cancellation near zero)
// Integer outputs must match exactly.
Tolerance tolerance_for(DType out, int64_t terms, double input_scale = 1.0);

}  // namespace wb
