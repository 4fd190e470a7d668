// A spec's problem prepared for the benchmark's fair timing (see bench::Timed).
#pragma once
#include "measure/fair.cuh"
#include "declare/op.cuh"

namespace wb {

bench::Timed prepare_timed(const OpBase& op, const Variant& v, Shape shape, uint64_t seed, int banks = 2);

}  // namespace wb
