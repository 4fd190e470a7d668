// The buffers of the fused decode step that the op-by-op step shares (chapter 8's split-KV
// scratch, the fused argmax's workspace), and the check that compares the fused step
// (decode/fused_step.cu, or the persistent one: decode/persistent_step.cu) with the op-by-op
// step from the same state.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "ch08.cuh"
#include "decode/fused_step.h"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"
#include "model.h"
#include "model_impl.cuh"
#include "solutions/ch09_gpt2/ladder.cuh"

namespace gpt2 {

// Chapter 8's decode kernels are BF16 and take head sizes that are multiples of 8 up to 128.
bool Model::Impl::chapter8_attention() const { return dtype == wb::DType::BF16 && D % 8 == 0 && D <= 128; }

void Model::Impl::alloc_fused() {
  const size_t scratch = chapter8_attention() ? ch08::decode_scratch_bytes(1, H, H, cap, D) : 0;
  const size_t lse = size_t(H) * sizeof(float);
  const size_t ws = ch09::solution::gemv_argmax_workspace_bytes();
  fused_buf = wb::DeviceBuffer<char>(round_up(scratch) + round_up(lse) + round_up(ws));
  CUDA_CHECK(cudaMemset(fused_buf.data(), 0, fused_buf.bytes()));  // the argmax's ticket counter starts at 0
  char* p = fused_buf.data();
  attn_scratch = scratch > 0 ? p : nullptr;
  p += round_up(scratch);
  attn_lse = reinterpret_cast<float*>(p);  // (H): chapter 8's lse output, not used here
  p += round_up(lse);
  argmax_ws = p;
}

FusedDecodeCheck Model::check_fused_decode(int32_t token) {
  Impl& m = *impl_;
  m.require_tokens(std::span<const int32_t>(&token, 1), m.pos + 1);
  if (m.pos == 0) throw std::logic_error("check_fused_decode before prefill: run prefill(prompt) first");
  const int pos0 = m.pos;
  // The fused step: the model's own when it decodes fused or persistent, else one made for
  // the check (it has no buffers of its own).
  FusedStep made(m);
  DecodeStep& fused_step = m.opt.decode == DecodePath::Ops ? made : *m.step;
  // One eager step from the same state (token, position): its logits and greedy token.
  const auto step = [&](bool fused) {
    m.pinned[1] = token;
    m.pinned[3] = pos0;
    CUDA_CHECK(cudaMemcpyAsync(m.d_token, &m.pinned[1], 4, cudaMemcpyHostToDevice, m.stream));
    CUDA_CHECK(cudaMemcpyAsync(m.d_pos, &m.pinned[3], 4, cudaMemcpyHostToDevice, m.stream));
    if (fused) {
      fused_step.run(m.stream);
    } else {
      m.run_step(1, m.d_token, m.stream);
    }
    ++m.eager_steps;
    CUDA_CHECK(cudaMemcpyAsync(&m.pinned[2], m.d_next, 4, cudaMemcpyDeviceToHost, m.stream));
    wb::sync_with_deadline(m.stream, fused ? "gpt2 fused decode step" : "gpt2 decode step");
    return std::pair{logits(), m.pinned[2]};
  };
  // The op-by-op step first: the fused one then writes this position's key and value again,
  // and the cache is left as the fused step makes it.
  const auto [ops, ops_token] = step(false);
  const auto [fused, fused_token] = step(true);
  m.pos = pos0 + 1;

  FusedDecodeCheck r;
  r.ops_token = ops_token;
  r.fused_token = fused_token;
  const LogitsDiff diff = logits_diff(fused, ops);
  r.max_abs_diff = diff.max_abs;
  r.rel_l2 = diff.rel_l2;
  r.tie_gap = double(ops[size_t(ops_token)]) - ops[size_t(fused_token)];
  return r;
}

}  // namespace gpt2
