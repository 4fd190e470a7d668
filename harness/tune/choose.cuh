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
// file is reported once on stderr and ignored), else the entry's overall winner when the
// space prefers it, else space.heuristic.
Config choose(const Space& space, const Shape& shape);
// Where choose() takes its configs from on this GPU, for a launcher to say once:
// "configs/ch04_sgemm.json, entry 'NVIDIA H100 80GB HBM3 sm_90' (4 tuned shapes, overall
// 128x128x8_w32x64_t8x8_n256)", or why it falls back ("... has no entry for 'NVIDIA A100
// ...'; run ch04_tune on this GPU"), then one line per tuned shape: "  near M=1024 N=1024
// K=1024: 64x128x16_w32x64_t8x8_n128".
std::string describe(const Space& space);
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
