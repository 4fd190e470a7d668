// The scratch the harness hands an attention launcher, from the test shape: for the
// exercises' variants (variants.cu) and the solution steps' alike. Not part of the exercises.
#pragma once
#include <cstddef>

#include "ch08.cuh"
#include "declare/spec.h"

namespace ch08 {

// scratch_bytes_f32(B, H, Sq, Sk): the FP32 scores of every head (attention/f32,
// attention_probs/f32 steps that keep them).
inline size_t scores_scratch(const wb::Shape& s) {
  return scratch_bytes_f32(static_cast<int>(s["B"]), static_cast<int>(s["H"]), static_cast<int>(s["Sq"]),
                           static_cast<int>(s["Sk"]));
}

// decode_scratch_bytes(B, Hq, Hkv, L_max, D): the partial results of the decode chunks.
inline size_t decode_scratch(const wb::Shape& s) {
  return decode_scratch_bytes(static_cast<int>(s["B"]), static_cast<int>(s["Hq"]), static_cast<int>(s["Hkv"]),
                              static_cast<int>(s["Lmax"]), static_cast<int>(s["D"]));
}

}  // namespace ch08
