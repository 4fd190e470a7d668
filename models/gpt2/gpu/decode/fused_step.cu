// The fused decode step (DecodePath::Fused): one token through the solution's v6 kernels
// (solutions/ch09_gpt2/decode/v6_fused_decode.cu) and chapter 8's split-KV decode attention —
// fewer, larger kernels than the op-by-op step (ops_step.cu). fused_decode.cu compares the two.
//
// The residual stream x (C) lives in buf.tmp. Per layer l:
//   ln_1+attn_qkv+kv_append  qkv (3C) = LN_1(x) · attn_wᵀ + attn_b, and the token's k and v
//                            (qkv's second and third C) into the cache at *d_pos; at layer 0
//                            the embedding's pair is added first, x = resid + branch (-> tmp)
//   attention                att (C) = the q heads over the cache's keys 0 .. *d_pos
//                            (BF16, head size 64: v16_decode_attention_ahead, a CTA per head
//                            with its keys and values in shared memory; other BF16 heads:
//                            chapter 8's v6 split-KV kernel, whose last CTA per head merges the
//                            chunks; FP32, or a head size chapter 8 does not take: the model's
//                            kernel)
//   attn_proj+residual       x = x + att · attn_proj_wᵀ + attn_proj_b       (in place)
//   ln_2+mlp_fc              fc (4C) = gelu_tanh(LN_2(x) · fc_wᵀ + fc_b)
//   mlp_proj+residual        x = x + fc · fc_proj_wᵀ + fc_proj_b            (in place)
// then ln_f+lm_head+argmax: logits = LN_f(x) · wteᵀ and their argmax in one kernel, and the
// step's bookkeeping (kernels::advance, as in the op-by-op step).
//
// INT8 weights (WeightFormat::Int8, BF16): attn_w, attn_proj_w, fc_w and fc_proj_w have int8
// copies (int8_of, model.cu), and their three ops run v6's INT8 forms (ln_gemv_qkv_w8a16,
// gemv_residual_w8a16, ln_gemv_w8a16): the same kernels reading 1 byte per weight and one FP32
// scale per row. The LM head stays BF16 (wte is not quantized). The per-op table counts the
// int8 weights and their scales as the op's weight bytes.
//
// INT4 weights (WeightFormat::Int4, BF16): the same four matrices have INT4 copies (int4_of:
// codes in groups of 128, a scale and a zero point per group), and the same three ops run
// v15_w4a16_slab_mma's kernels (ln_gemv_qkv_w4a16_slab, gemv_residual_w4a16_slab,
// ln_gemv_w4a16_slab: each CTA's rows copied into shared memory before the kernel waits for
// the previous one, the dot products on tensor cores). The LM head stays BF16 here too; the
// table counts codes, scales and zero points.
//
// BF16 layers run v15's BF16 forms of the same three ops where a CTA's rows fit in one slab with
// a CTA per SM (GPT-2 124M: every layer GEMV; 1.5B: the attention's projection), v6's kernels
// elsewhere.
//
// Kernels per token: 1 (embedding) + 5 per layer + 2, in BF16 as in FP32, against
// the op-by-op step's 1 + 8 per layer + 5 (BF16; FP32 adds a residual add per LayerNorm).
#include <cuda_bf16.h>

#include <cmath>
#include <type_traits>

#include "ch08.cuh"
#include "decode/fused_step.h"
#include "device/pdl.cuh"
#include "kernels.cuh"
#include "model_impl.cuh"
#include "solutions/ch08_flash_attention/ladder.cuh"
#include "solutions/ch09_gpt2/ladder.cuh"

namespace gpt2 {

using bf16 = __nv_bfloat16;

void FusedStep::run(cudaStream_t s) {
  // The step's kernels are launched as programmatic dependents of one another (Hopper and
  // later; harness/device/pdl.cuh): each starts while the one before it finishes.
  const wb::PdlChain chain;
  if (m_.dtype == wb::DType::BF16) {
    run_as<bf16>(s);
  } else {
    run_as<float>(s);
  }
}

template <class T>
void FusedStep::run_as(cudaStream_t s) {
  Model::Impl& m = m_;
  m.cur = s;
  const float eps = static_cast<float>(kLayerNormEps);
  const double e = double(m.es), c = m.C;  // for the table's bytes: element size, channels

  m.timed({"embedding", -1}, "model", e * 4.0 * c, [&] {
    kernels::embedding(m.d_token, m.d_pos, in<T>(m.wte), in<T>(m.wpe), out<T>(m.buf.resid), out<T>(m.buf.branch), 1,
                       m.C, m.cur);
  });

  T* x = out<T>(m.buf.tmp);  // (C) the residual stream, from layer 0's LayerNorm on
  if constexpr (std::is_same_v<T, bf16>) {
    layers_bf16(x, eps);  // the persistent step's one kernel, or the layers below
  } else {
    layers<T>(x, eps);
  }
  lm_head(x, eps);
}

void FusedStep::layers_bf16(bf16* x, float eps) { layers<bf16>(x, eps); }

template <class T>
void FusedStep::layers(T* x, float eps) {
  namespace v6 = ch09::solution;
  using ch09::Epilogue;
  using Int8Matrix = Model::Impl::Int8Matrix;
  Model::Impl& m = m_;
  const int C = m.C, H = m.H, D = m.D, cap = m.cap;
  const double e = double(m.es), c = C;  // for the table's bytes: element size, channels
  const char* who6 = "solution v6";
  const char* who8 = "solution v6 w8a16";
  const char* who4 = "solution v15 w4a16";
  // BF16: v15's launchers, which run v15's kernels where a CTA's rows fit in one slab
  // (v15_w4a16_slab_mma.cu) and v6's elsewhere
  const auto who_bf16 = [&](int N, int K) {
    return std::is_same_v<T, bf16> && v6::slab_bf16_fits(N, K) ? "solution v15" : who6;
  };
  using Int4Matrix = Model::Impl::Int4Matrix;
  // The int8 copy of a block matrix (WeightFormat::Int8), or null: the BF16 matrix is read.
  const auto int8 = [&](const void* w) -> const Int8Matrix* {
    const auto it = m.int8_of.find(w);
    return it == m.int8_of.end() ? nullptr : &it->second;
  };
  // The int4 copy of a block matrix (WeightFormat::Int4), or null.
  const auto int4 = [&](const void* w) -> const Int4Matrix* {
    const auto it = m.int4_of.find(w);
    return it == m.int4_of.end() ? nullptr : &it->second;
  };
  // The table's bytes of an (N, K) matrix: int8 weights and FP32 row scales, int4 codes with an
  // FP32 scale and a uint8 zero point per group of 128, or the matrix's.
  const auto w_bytes = [&](const Int8Matrix* q, const Int4Matrix* q4, double N, double K) {
    return q ? N * K + 4.0 * N : q4 ? N * K / 2 + 5.0 * N * std::ceil(K / 128.0) : e * N * K;
  };
  const auto who_of = [&](const Int8Matrix* q, const Int4Matrix* q4, int N, int K) {
    return q ? who8 : q4 ? who4 : who_bf16(N, K);
  };

  for (int l = 0; l < m.L; ++l) {
    const BlockWeights& w = m.blocks[l];
    const bool first = l == 0;
    const v6::KvCacheTarget<T> kv{out<T>(m.kc[l]), out<T>(m.vc[l]), m.d_pos, H, D, cap};
    const Int8Matrix *qkv8 = int8(w.attn_w), *proj8 = int8(w.attn_proj_w), *fc8 = int8(w.fc_w),
                     *fc_proj8 = int8(w.fc_proj_w);
    const Int4Matrix *qkv4 = int4(w.attn_w), *proj4 = int4(w.attn_proj_w), *fc4 = int4(w.fc_w),
                     *fc_proj4 = int4(w.fc_proj_w);
    // W and b; x (and r, h at layer 0), gamma, beta; qkv; the key and value
    const double qkv_bytes = w_bytes(qkv8, qkv4, 3 * c, c) + e * (3 * c + (first ? 3 : 1) * c + 2 * c + 3 * c + 2 * c);
    m.timed({"ln_1+attn_qkv+kv_append", l}, who_of(qkv8, qkv4, 3 * C, C), qkv_bytes, [&] {
      const T* xin = first ? in<T>(m.buf.resid) : x;
      const T* rin = first ? in<T>(m.buf.branch) : nullptr;
      T* h = first ? x : nullptr;
      if constexpr (std::is_same_v<T, bf16>) {
        if (qkv8) {
          v6::ln_gemv_qkv_w8a16(xin, rin, in<bf16>(w.ln_1_w), in<bf16>(w.ln_1_b), qkv8->q, qkv8->scale,
                                in<bf16>(w.attn_b), h, out<bf16>(m.buf.qkv), C, eps, kv, m.cur);
          return;
        }
        if (qkv4) {
          v6::ln_gemv_qkv_w4a16_slab(xin, rin, in<bf16>(w.ln_1_w), in<bf16>(w.ln_1_b), qkv4->q, qkv4->scale, qkv4->zero,
                                     in<bf16>(w.attn_b), h, out<bf16>(m.buf.qkv), C, eps, kv, m.cur);
          return;
        }
        v6::ln_gemv_qkv_slab(xin, rin, in<bf16>(w.ln_1_w), in<bf16>(w.ln_1_b), in<bf16>(w.attn_w), in<bf16>(w.attn_b),
                             h, out<bf16>(m.buf.qkv), C, eps, kv, m.cur);
        return;
      }
      v6::ln_gemv_qkv<T>(xin, rin, in<T>(w.ln_1_w), in<T>(w.ln_1_b), in<T>(w.attn_w), in<T>(w.attn_b), h,
                         out<T>(m.buf.qkv), C, eps, kv, m.cur);
    });
    // the keys and values of every position seen, q in, att out
    const bool v16 = std::is_same_v<T, bf16> && v6::decode_attention_ahead_fits(H, D, cap);
    m.timed(
        {"attention", l},
        v16                      ? "solution v16"
        : m.chapter8_attention() ? "ch08 v6 split-KV"
                                 : "model",
        e * (2.0 * (m.pos + 1) * c + 2 * c), [&] {
          if constexpr (std::is_same_v<T, bf16>) {
            if (v16 && v6::decode_attention_ahead(in<bf16>(m.buf.qkv), in<bf16>(m.kc[l]), in<bf16>(m.vc[l]), m.d_pos,
                                                  out<bf16>(m.buf.att), H, D, cap, 1.0f / std::sqrt(float(D)), m.cur)) {
              return;
            }
            if (m.chapter8_attention()) {
              ch08::solution::v6_decode_at_pos_bf16(in<bf16>(m.buf.qkv), in<bf16>(m.kc[l]), in<bf16>(m.vc[l]), m.d_pos,
                                                    out<bf16>(m.buf.att), m.attn_lse, 1, H, H, cap, D,
                                                    1.0f / std::sqrt(float(D)), m.attn_scratch, m.cur);
              return;
            }
          }
          kernels::attention(in<T>(m.buf.qkv), in<T>(m.kc[l]), in<T>(m.vc[l]), m.d_pos, out<T>(m.buf.att), 1, H, D, cap,
                             m.cur);
        });
    m.timed({"attn_proj+residual", l}, who_of(proj8, proj4, C, C), w_bytes(proj8, proj4, c, c) + e * (c + c + 2 * c),
            [&] {
              if constexpr (std::is_same_v<T, bf16>) {
                if (proj8) {
                  v6::gemv_residual_w8a16(in<bf16>(m.buf.att), proj8->q, proj8->scale, in<bf16>(w.attn_proj_b), x, x, C,
                                          C, m.cur);
                  return;
                }
                if (proj4) {
                  v6::gemv_residual_w4a16_slab(in<bf16>(m.buf.att), proj4->q, proj4->scale, proj4->zero,
                                               in<bf16>(w.attn_proj_b), x, x, C, C, m.cur);
                  return;
                }
                v6::gemv_residual_slab(in<bf16>(m.buf.att), in<bf16>(w.attn_proj_w), in<bf16>(w.attn_proj_b), x, x, C,
                                       C, m.cur);
                return;
              }
              v6::gemv_residual<T>(in<T>(m.buf.att), in<T>(w.attn_proj_w), in<T>(w.attn_proj_b), x, x, C, C, m.cur);
            });
    m.timed({"ln_2+mlp_fc", l}, who_of(fc8, fc4, 4 * C, C), w_bytes(fc8, fc4, 4 * c, c) + e * (4 * c + 3 * c + 4 * c),
            [&] {
              if constexpr (std::is_same_v<T, bf16>) {
                if (fc8) {
                  v6::ln_gemv_w8a16(x, nullptr, in<bf16>(w.ln_2_w), in<bf16>(w.ln_2_b), fc8->q, fc8->scale,
                                    in<bf16>(w.fc_b), nullptr, out<bf16>(m.buf.fc), 4 * C, C, Epilogue::BiasGelu, eps,
                                    m.cur);
                  return;
                }
                if (fc4) {
                  v6::ln_gemv_w4a16_slab(x, nullptr, in<bf16>(w.ln_2_w), in<bf16>(w.ln_2_b), fc4->q, fc4->scale,
                                         fc4->zero, in<bf16>(w.fc_b), nullptr, out<bf16>(m.buf.fc), 4 * C, C,
                                         Epilogue::BiasGelu, eps, m.cur);
                  return;
                }
                v6::ln_gemv_slab(x, nullptr, in<bf16>(w.ln_2_w), in<bf16>(w.ln_2_b), in<bf16>(w.fc_w), in<bf16>(w.fc_b),
                                 nullptr, out<bf16>(m.buf.fc), 4 * C, C, Epilogue::BiasGelu, eps, m.cur);
                return;
              }
              v6::ln_gemv<T>(x, nullptr, in<T>(w.ln_2_w), in<T>(w.ln_2_b), in<T>(w.fc_w), in<T>(w.fc_b), nullptr,
                             out<T>(m.buf.fc), 4 * C, C, Epilogue::BiasGelu, eps, m.cur);
            });
    m.timed({"mlp_proj+residual", l}, who_of(fc_proj8, fc_proj4, C, 4 * C),
            w_bytes(fc_proj8, fc_proj4, c, 4 * c) + e * (c + 4 * c + 2 * c), [&] {
              if constexpr (std::is_same_v<T, bf16>) {
                if (fc_proj8) {
                  v6::gemv_residual_w8a16(in<bf16>(m.buf.fc), fc_proj8->q, fc_proj8->scale, in<bf16>(w.fc_proj_b), x, x,
                                          C, 4 * C, m.cur);
                  return;
                }
                if (fc_proj4) {
                  v6::gemv_residual_w4a16_slab(in<bf16>(m.buf.fc), fc_proj4->q, fc_proj4->scale, fc_proj4->zero,
                                               in<bf16>(w.fc_proj_b), x, x, C, 4 * C, m.cur);
                  return;
                }
                v6::gemv_residual_slab(in<bf16>(m.buf.fc), in<bf16>(w.fc_proj_w), in<bf16>(w.fc_proj_b), x, x, C, 4 * C,
                                       m.cur);
                return;
              }
              v6::gemv_residual<T>(in<T>(m.buf.fc), in<T>(w.fc_proj_w), in<T>(w.fc_proj_b), x, x, C, 4 * C, m.cur);
            });
  }
}

// ln_f + the LM head + argmax in one kernel, then the step's bookkeeping.
template <class T>
void FusedStep::lm_head(const T* x, float eps) {
  Model::Impl& m = m_;
  const double e = double(m.es), c = m.C;
  // wte; x, gamma, beta; the logits
  m.timed({"ln_f+lm_head+argmax", -1}, "solution v6", e * (double(m.V) * c + 3 * c + m.V), [&] {
    ch09::solution::ln_gemv_argmax<T>(x, in<T>(m.ln_f_w), in<T>(m.ln_f_b), in<T>(m.wte), out<T>(m.logits), m.top_i,
                                      m.top_v, m.V, m.C, eps, m.argmax_ws, m.cur);
    kernels::advance(m.top_i, m.d_next, m.d_token, m.d_pos, m.d_history, 1, m.cur);
  });
}

}  // namespace gpt2
