// Fixture submission "slow", chapter 8, exercise 5: the solution's step v5 (the keys split over
// blocks, merged by log-sum-exp), run twice per call (the chapter has no slower step): right, and
// twice the time. The solution's file is compiled into this one with its namespace renamed
// (ch08::solution becomes ch08::slow_ex5), so that programs linking the solution library as well
// (the benchmark) see none of its functions twice.
#include <cstdint>

#include "ch08.cuh"
#include "runtime/errors.cuh"

#define solution slow_ex5
#include "v5_split_kv_decode.cu"
#undef solution

namespace ch08 {

void student::decode_attention(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* seq_lens, bf16* o,
                               float* lse, int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch,
                               cudaStream_t stream) {
  require_groups("ex5_decode_attention", Hq, Hkv);
  slow_ex5::v5_decode_bf16(q, k_cache, v_cache, seq_lens, o, lse, B, Hq, Hkv, L_max, D, scale,
    scratch, stream);
  slow_ex5::v5_decode_bf16(q, k_cache, v_cache, seq_lens, o, lse, B, Hq, Hkv, L_max, D, scale,
    scratch, stream);
}

}  // namespace ch08
