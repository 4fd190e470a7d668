// The fused decode step (DecodePath::Fused): one token through the solution's v6 kernels
// (solutions/ch09_gpt2/decode/v6_fused_decode.cu) and chapter 8's split-KV decode attention — fewer,
// larger kernels than model.cu's op-by-op step — and the check that compares the two.
//
// The residual stream x (C) lives in buf.tmp. Per layer l:
//   ln_1+attn_qkv+kv_append  qkv (3C) = LN_1(x) · attn_wᵀ + attn_b, and the token's k and v
//                            (qkv's second and third C) into the cache at *d_pos; at layer 0
//                            the embedding's pair is added first, x = resid + branch (-> tmp)
//   attention                att (C) = the q heads over the cache's keys 0 .. *d_pos
//                            (BF16: chapter 8's v6 split-KV kernel, whose last CTA per head
//                            merges the chunks; FP32, or a head size chapter 8 does not take:
//                            the model's kernel)
//   attn_proj+residual       x = x + att · attn_proj_wᵀ + attn_proj_b       (in place)
//   ln_2+mlp_fc              fc (4C) = gelu_tanh(LN_2(x) · fc_wᵀ + fc_b)
//   mlp_proj+residual        x = x + fc · fc_proj_wᵀ + fc_proj_b            (in place)
// then ln_f+lm_head+argmax: logits = LN_f(x) · wteᵀ and their argmax in one kernel, and the
// step's bookkeeping (kernels::advance, as in the op-by-op step).
//
// INT8 weights (WeightFormat::Int8, BF16): attn_w, attn_proj_w, fc_w and fc_proj_w have
// int8 copies (int8_of, model.cu), and their three ops run v6's INT8 forms (ln_gemv_qkv_w8a16,
// gemv_residual_w8a16, ln_gemv_w8a16): the same kernels reading 1 byte per weight and one FP32
// scale per row. The LM head stays BF16 (wte is not quantized). The per-op table counts the
// int8 weights and their scales as the op's weight bytes.
//
// Kernels per token: 1 (embedding) + 5 per layer + 2, in BF16 as in FP32, against
// the op-by-op step's 1 + 8 per layer + 5 (BF16; FP32 adds a residual add per LayerNorm).
//
// DecodePath::Persistent (BF16): the L layers above run as ONE persistent kernel
// (solutions/ch09_gpt2/decode/v9_persistent_decode.cu), between the same embedding and LM head: 4
// kernels per token. The layer table it reads (every block's pointers) is filled once on load.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "ch08.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"
#include "device/pdl.cuh"
#include "kernels.cuh"
#include "model.h"
#include "model_impl.cuh"
#include "solutions/ch08_flash_attention/ladder.cuh"
#include "solutions/ch09_gpt2/ladder.cuh"

namespace gpt2 {

using bf16 = __nv_bfloat16;

namespace {

template <class T>
const T* in(const void* p) {
  return static_cast<const T*>(p);
}
template <class T>
T* out(void* p) {
  return static_cast<T*>(p);
}

}  // namespace

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
  if (opt.decode == DecodePath::Persistent) alloc_persistent();
}

// The persistent step's layer table (device memory, filled once: the weights and caches do
// not move) and its scratch, zeroed once.
void Model::Impl::alloc_persistent() {
  namespace sol = ch09::solution;
  const std::string why = sol::persistent_decode_unsupported(C, H, D);
  if (!why.empty()) {
    throw std::invalid_argument("persistent_decode: " + why + "; run --decode=fused instead");
  }
  std::vector<sol::PersistentLayer> table(L);
  for (int l = 0; l < L; ++l) {
    const BlockWeights& w = blocks[l];
    table[l] = {in<bf16>(w.ln_1_w),      in<bf16>(w.ln_1_b),      in<bf16>(w.attn_w),    in<bf16>(w.attn_b),
                in<bf16>(w.attn_proj_w), in<bf16>(w.attn_proj_b), in<bf16>(w.ln_2_w),    in<bf16>(w.ln_2_b),
                in<bf16>(w.fc_w),        in<bf16>(w.fc_b),        in<bf16>(w.fc_proj_w), in<bf16>(w.fc_proj_b),
                out<bf16>(kc[l]),        out<bf16>(vc[l])};
  }
  const size_t table_bytes = round_up(sizeof(sol::PersistentLayer) * L);
  persistent_buf = wb::DeviceBuffer<char>(table_bytes + round_up(sol::persistent_decode_scratch_bytes(H)));
  CUDA_CHECK(cudaMemset(persistent_buf.data(), 0, persistent_buf.bytes()));
  CUDA_CHECK(cudaMemcpy(persistent_buf.data(), table.data(), sizeof(sol::PersistentLayer) * L, cudaMemcpyHostToDevice));
  d_layers = persistent_buf.data();
  persistent_scratch = persistent_buf.data() + table_bytes;
}

void Model::Impl::decode_once(cudaStream_t s) {
  // --check runs the op-by-op step, whose ops it checks one by one.
  if (opt.decode != DecodePath::Ops && !checking) {
    fused_step(s);
  } else {
    run_step(1, d_token, s);
  }
}

void Model::Impl::fused_step(cudaStream_t s) {
  // The step's kernels are launched as programmatic dependents of one another (Hopper and
  // later; harness/device/pdl.cuh): each starts while the one before it finishes.
  const wb::PdlChain chain;
  if (dtype == wb::DType::BF16) {
    fused_step_as<bf16>(s);
  } else {
    fused_step_as<float>(s);
  }
}

template <class T>
void Model::Impl::fused_step_as(cudaStream_t s) {
  namespace v6 = ch09::solution;
  using ch09::Epilogue;
  cur = s;
  const float eps = static_cast<float>(kLayerNormEps);
  const double e = double(es), c = C;  // for the table's bytes: element size, channels
  const char* who = "solution v6";
  const char* who8 = "solution v6 w8a16";
  // The int8 copy of a block matrix (WeightFormat::Int8), or null: the BF16 matrix is read.
  const auto int8 = [&](const void* w) -> const Int8Matrix* {
    const auto it = int8_of.find(w);
    return it == int8_of.end() ? nullptr : &it->second;
  };
  // The table's bytes of an (N, K) matrix: int8 weights and FP32 row scales, or the matrix's.
  const auto w_bytes = [&](const Int8Matrix* q, double N, double K) { return q ? N * K + 4.0 * N : e * N * K; };

  timed({"embedding", -1}, "model", e * 4.0 * c, [&] {
    kernels::embedding(d_token, d_pos, in<T>(wte), in<T>(wpe), out<T>(buf.resid), out<T>(buf.branch), 1, C, cur);
  });

  T* x = out<T>(buf.tmp);  // (C) the residual stream, from layer 0's LayerNorm on
  if constexpr (std::is_same_v<T, bf16>) {
    if (opt.decode == DecodePath::Persistent) {  // the L layers in one kernel (v9_persistent_decode)
      // every weight of the blocks, the KV cache read, the rows written
      const double layer_bytes = L * e * (12.0 * c * c + 13.0 * c + 2.0 * (pos + 1) * c);
      timed({"layers (persistent kernel)", -1}, "solution v9", layer_bytes, [&] {
        ch09::solution::persistent_decode_layers(static_cast<const ch09::solution::PersistentLayer*>(d_layers), L,
                                                 in<bf16>(buf.resid), in<bf16>(buf.branch), x, out<bf16>(buf.qkv),
                                                 out<bf16>(buf.fc), d_pos, C, H, cap, eps, persistent_scratch, cur);
      });
      fused_lm_head(x, eps, who);
      return;
    }
  }
  for (int l = 0; l < L; ++l) {
    const BlockWeights& w = blocks[l];
    const bool first = l == 0;
    const v6::KvCacheTarget<T> kv{out<T>(kc[l]), out<T>(vc[l]), d_pos, H, D, cap};
    const Int8Matrix *qkv8 = int8(w.attn_w), *proj8 = int8(w.attn_proj_w), *fc8 = int8(w.fc_w),
                     *fc_proj8 = int8(w.fc_proj_w);
    // W and b; x (and r, h at layer 0), gamma, beta; qkv; the key and value
    const double qkv_bytes = w_bytes(qkv8, 3 * c, c) + e * (3 * c + (first ? 3 : 1) * c + 2 * c + 3 * c + 2 * c);
    timed({"ln_1+attn_qkv+kv_append", l}, qkv8 ? who8 : who, qkv_bytes, [&] {
      const T* xin = first ? in<T>(buf.resid) : x;
      const T* rin = first ? in<T>(buf.branch) : nullptr;
      T* h = first ? x : nullptr;
      if constexpr (std::is_same_v<T, bf16>) {
        if (qkv8) {
          v6::ln_gemv_qkv_w8a16(xin, rin, in<bf16>(w.ln_1_w), in<bf16>(w.ln_1_b), qkv8->q, qkv8->scale,
                                in<bf16>(w.attn_b), h, out<bf16>(buf.qkv), C, eps, kv, cur);
          return;
        }
      }
      v6::ln_gemv_qkv<T>(xin, rin, in<T>(w.ln_1_w), in<T>(w.ln_1_b), in<T>(w.attn_w), in<T>(w.attn_b), h,
                         out<T>(buf.qkv), C, eps, kv, cur);
    });
    // the keys and values of every position seen, q in, att out
    timed({"attention", l}, chapter8_attention() ? "ch08 v6 split-KV" : "model", e * (2.0 * (pos + 1) * c + 2 * c),
          [&] {
            if constexpr (std::is_same_v<T, bf16>) {
              if (chapter8_attention()) {
                ch08::solution::v6_decode_at_pos_bf16(in<bf16>(buf.qkv), in<bf16>(kc[l]), in<bf16>(vc[l]), d_pos,
                                                      out<bf16>(buf.att), attn_lse, 1, H, H, cap, D,
                                                      1.0f / std::sqrt(float(D)), attn_scratch, cur);
                return;
              }
            }
            kernels::attention(in<T>(buf.qkv), in<T>(kc[l]), in<T>(vc[l]), d_pos, out<T>(buf.att), 1, H, D, cap, cur);
          });
    timed({"attn_proj+residual", l}, proj8 ? who8 : who, w_bytes(proj8, c, c) + e * (c + c + 2 * c), [&] {
      if constexpr (std::is_same_v<T, bf16>) {
        if (proj8) {
          v6::gemv_residual_w8a16(in<bf16>(buf.att), proj8->q, proj8->scale, in<bf16>(w.attn_proj_b), x, x, C, C, cur);
          return;
        }
      }
      v6::gemv_residual<T>(in<T>(buf.att), in<T>(w.attn_proj_w), in<T>(w.attn_proj_b), x, x, C, C, cur);
    });
    timed({"ln_2+mlp_fc", l}, fc8 ? who8 : who, w_bytes(fc8, 4 * c, c) + e * (4 * c + 3 * c + 4 * c), [&] {
      if constexpr (std::is_same_v<T, bf16>) {
        if (fc8) {
          v6::ln_gemv_w8a16(x, nullptr, in<bf16>(w.ln_2_w), in<bf16>(w.ln_2_b), fc8->q, fc8->scale, in<bf16>(w.fc_b),
                            nullptr, out<bf16>(buf.fc), 4 * C, C, Epilogue::BiasGelu, eps, cur);
          return;
        }
      }
      v6::ln_gemv<T>(x, nullptr, in<T>(w.ln_2_w), in<T>(w.ln_2_b), in<T>(w.fc_w), in<T>(w.fc_b), nullptr,
                     out<T>(buf.fc), 4 * C, C, Epilogue::BiasGelu, eps, cur);
    });
    timed({"mlp_proj+residual", l}, fc_proj8 ? who8 : who, w_bytes(fc_proj8, c, 4 * c) + e * (c + 4 * c + 2 * c), [&] {
      if constexpr (std::is_same_v<T, bf16>) {
        if (fc_proj8) {
          v6::gemv_residual_w8a16(in<bf16>(buf.fc), fc_proj8->q, fc_proj8->scale, in<bf16>(w.fc_proj_b), x, x, C, 4 * C,
                                  cur);
          return;
        }
      }
      v6::gemv_residual<T>(in<T>(buf.fc), in<T>(w.fc_proj_w), in<T>(w.fc_proj_b), x, x, C, 4 * C, cur);
    });
  }

  fused_lm_head(x, eps, who);
}

// ln_f + the LM head + argmax in one kernel, then the step's bookkeeping.
template <class T>
void Model::Impl::fused_lm_head(const T* x, float eps, const char* who) {
  const double e = double(es), c = C;
  // wte; x, gamma, beta; the logits
  timed({"ln_f+lm_head+argmax", -1}, who, e * (double(V) * c + 3 * c + V), [&] {
    ch09::solution::ln_gemv_argmax<T>(x, in<T>(ln_f_w), in<T>(ln_f_b), in<T>(wte), out<T>(logits), top_i, top_v, V, C,
                                      eps, argmax_ws, cur);
    kernels::advance(top_i, d_next, d_token, d_pos, d_history, 1, cur);
  });
}

FusedDecodeCheck Model::check_fused_decode(int32_t token) {
  Impl& m = *impl_;
  m.require_tokens(std::span<const int32_t>(&token, 1), m.pos + 1);
  if (m.pos == 0) throw std::logic_error("check_fused_decode before prefill: run prefill(prompt) first");
  const int pos0 = m.pos;
  // One eager step from the same state (token, position): its logits and greedy token.
  const auto step = [&](bool fused) {
    m.pinned[1] = token;
    m.pinned[3] = pos0;
    CUDA_CHECK(cudaMemcpyAsync(m.d_token, &m.pinned[1], 4, cudaMemcpyHostToDevice, m.stream));
    CUDA_CHECK(cudaMemcpyAsync(m.d_pos, &m.pinned[3], 4, cudaMemcpyHostToDevice, m.stream));
    if (fused) {
      m.fused_step(m.stream);
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
  double num = 0, den = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const double d = double(fused[i]) - ops[i];
    num += d * d;
    den += double(ops[i]) * ops[i];
    r.max_abs_diff = std::isfinite(d) ? std::max(r.max_abs_diff, std::fabs(d)) : INFINITY;
  }
  r.rel_l2 = std::sqrt(num / std::max(den, 1e-300));
  r.tie_gap = double(ops[size_t(ops_token)]) - ops[size_t(fused_token)];
  return r;
}

}  // namespace gpt2
