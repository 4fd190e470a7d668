// The run-time side of a tunable launcher (see harness/tune/tune.h):
//
//   const wb::tune::Config c = wb::tune::choose(kSpace, wb::Shape{{"B", B}, {"V", V}, {"k", k}});
//   switch (c["threads"]) { ... }
#pragma once
#include <cuda_runtime.h>

#include "tune/tune.h"

namespace wb::tune {

// The config to run `shape` with: the one forced by the autotuner's sweep, else the tuned
// winner nearest `shape` for this GPU (read once from configs/<space>.json; a malformed
// file is reported once on stderr and ignored), else space.heuristic.
Config choose(const Space& space, const Shape& shape);
// The GPU the heuristic plans for.
Facts current_facts();

// While alive, choose(space, ...) returns `c` (the autotuner trying one point).
class Forced {
 public:
  Forced(const Space& space, Config c);
  ~Forced();
  Forced(const Forced&) = delete;
  Forced& operator=(const Forced&) = delete;

 private:
  std::string name_;
};

}  // namespace wb::tune
