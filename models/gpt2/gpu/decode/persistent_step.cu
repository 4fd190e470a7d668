// The persistent decode step (persistent_step.h): the fused step's L layers as ONE persistent
// kernel (solutions/ch09_gpt2/decode/v9_persistent_decode.cu), between the same embedding and
// LM head: 4 kernels per token. The layer table it reads (every block's pointers) is filled
// once on load.
#include <cuda_bf16.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "decode/persistent_step.h"
#include "model_impl.cuh"
#include "runtime/errors.cuh"
#include "solutions/ch09_gpt2/ladder.cuh"

namespace gpt2 {

using bf16 = __nv_bfloat16;

PersistentStep::PersistentStep(Model::Impl& m) : FusedStep(m) {
  namespace sol = ch09::solution;
  const std::string why = sol::persistent_decode_unsupported(m.C, m.H, m.D);
  if (!why.empty()) {
    throw std::invalid_argument("--decode=persistent: " + why + "; run --decode=fused instead");
  }
  const int L = m.L;
  std::vector<sol::PersistentLayer> table(L);
  for (int l = 0; l < L; ++l) {
    const BlockWeights& w = m.blocks[l];
    table[l] = {in<bf16>(w.ln_1_w),      in<bf16>(w.ln_1_b),      in<bf16>(w.attn_w),    in<bf16>(w.attn_b),
                in<bf16>(w.attn_proj_w), in<bf16>(w.attn_proj_b), in<bf16>(w.ln_2_w),    in<bf16>(w.ln_2_b),
                in<bf16>(w.fc_w),        in<bf16>(w.fc_b),        in<bf16>(w.fc_proj_w), in<bf16>(w.fc_proj_b),
                out<bf16>(m.kc[l]),      out<bf16>(m.vc[l])};
  }
  const size_t table_bytes = round_up(sizeof(sol::PersistentLayer) * L);
  buf_ = wb::DeviceBuffer<char>(table_bytes + round_up(sol::persistent_decode_scratch_bytes(m.H)));
  CUDA_CHECK(cudaMemset(buf_.data(), 0, buf_.bytes()));
  CUDA_CHECK(cudaMemcpy(buf_.data(), table.data(), sizeof(sol::PersistentLayer) * L, cudaMemcpyHostToDevice));
  d_layers_ = buf_.data();
  scratch_ = buf_.data() + table_bytes;
}

void PersistentStep::layers_bf16(bf16* x, float eps) {
  Model::Impl& m = m_;
  const double e = double(m.es), c = m.C;  // for the table's bytes: element size, channels
  // every weight of the blocks, the KV cache read, the rows written
  const double layer_bytes = m.L * e * (12.0 * c * c + 13.0 * c + 2.0 * (m.pos + 1) * c);
  m.timed({"layers (persistent kernel)", -1}, "solution v9", layer_bytes, [&] {
    ch09::solution::persistent_decode_layers(static_cast<const ch09::solution::PersistentLayer*>(d_layers_), m.L,
                                             in<bf16>(m.buf.resid), in<bf16>(m.buf.branch), x, out<bf16>(m.buf.qkv),
                                             out<bf16>(m.buf.fc), m.d_pos, m.C, m.H, m.cap, eps, scratch_, m.cur);
  });
}

}  // namespace gpt2
