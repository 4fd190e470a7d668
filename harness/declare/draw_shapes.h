// Random test shapes drawn one at a time by a chapter's own rule (OpSpec::random_shapes).
#pragma once
#include <vector>

#include "declare/rng.h"
#include "declare/spec.h"

namespace wb {

// `count` shapes, each one draw(rng), in the order drawn (reproducible from the run seed).
template <class Draw>
std::vector<Shape> draw_shapes(Rng& rng, int count, Draw draw) {
  std::vector<Shape> out;
  for (int i = 0; i < count; ++i) out.push_back(draw(rng));
  return out;
}

}  // namespace wb
