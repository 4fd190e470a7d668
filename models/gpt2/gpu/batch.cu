// Batched decode (Options::batch; model.h): B sequences, each with its own prompt, KV cache
// and position, decoding one token each per step. Row b of every activation is sequence b.
//
// The batched step is the op-by-op step with T = B rows, where the rows are B sequences
// instead of B positions of one sequence:
//   embedding          tok (B, C) = wte[token[b]], pos (B, C) = wpe[pos[b]]
//   per layer          the block of ops.h, unchanged: LayerNorms over B rows, the four
//                      linears as GEMMs with M = B (exercise 1; at B = 1 the GEMV of
//                      exercise 2), and, while `batched` is set,
//     kv_append        sequence b's key and value into its cache at pos[b]; the queries packed
//     attention        sequence b's query over its keys 0 .. pos[b]: chapter 8's split-KV
//                      decode kernels over the B sequences at once (BF16), or the model's own
//                      kernel once per sequence (FP32, or a head size chapter 8 does not take)
//   ln_f, lm_head      B rows; logits (B, V)
//   argmax             chapter 7's top-k with B rows and k = 1, then per sequence
//                      token[b] = next[b] = index[b], pos[b] += 1
// Tokens and positions live in device memory, so one CUDA Graph per B serves every step.
//
// The caches: per layer K then V, each [batch][H][cap][D] (chapter 8's [b][hkv][j][d]), apart
// from the single sequence's cache, which the batched step never touches. prefill_batch runs
// each prompt through the single sequence's prefill and copies its cache into the slot.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "ch07.cuh"
#include "ch08.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"
#include "kernels.cuh"
#include "model.h"
#include "model_impl.cuh"
#include "solutions/ch07_softmax_topk/ladder.cuh"
#include "solutions/ch08_flash_attention/ladder.cuh"
#include "declare/op.cuh"

namespace gpt2 {

using bf16 = __nv_bfloat16;

namespace {

char* at(void* base, size_t bytes) { return static_cast<char*>(base) + bytes; }

// Sets a flag for the life of a scope, and clears it also when an op throws.
struct FlagScope {
  bool& flag;
  explicit FlagScope(bool& f) : flag(f) { flag = true; }
  ~FlagScope() { flag = false; }
  FlagScope(const FlagScope&) = delete;
  FlagScope& operator=(const FlagScope&) = delete;
};

// The top-k's workspace for B rows: the library variant says how much it needs (model.cu
// finds it the same way), the others take ch07::workspace_bytes(B).
size_t topk_workspace_bytes(Who who, int B, int V) {
  if (who != Who::Library) return ch07::workspace_bytes(B);
  for (const wb::Variant& v : wb::all_variants()) {
    if (v.op == "topk/f32" && v.role == wb::Role::Reference) {
      return v.workspace ? v.workspace(wb::Shape{{"B", B}, {"V", V}, {"k", 1}}) : 0;
    }
  }
  throw std::runtime_error("chapter 7's library top-k (topk/f32, reference) is not linked into this program");
}

}  // namespace

// --- on load ------------------------------------------------------------------------------

void Model::Impl::alloc_batch() {
  if (opt.batch == 0) return;  // (a negative batch is refused by validate, options.cu)
  const int Bm = opt.batch;
  seq_bytes = size_t(H) * cap * D * es;

  // The caches: per layer K then V, each [Bm][H][cap][D].
  const size_t per = round_up(size_t(Bm) * seq_bytes);
  bkvbuf = wb::DeviceBuffer<char>(2 * size_t(L) * per);
  CUDA_CHECK(cudaMemset(bkvbuf.data(), 0, bkvbuf.bytes()));
  for (int l = 0; l < L; ++l) {
    kb.push_back(bkvbuf.data() + (2 * size_t(l)) * per);
    vb.push_back(bkvbuf.data() + (2 * size_t(l) + 1) * per);
  }

  // Chapter 8's scratch depends on B through decode_splits: room for the largest B needs.
  size_t scratch = 0;
  if (chapter8_attention()) {
    for (int b = 1; b <= Bm; ++b) scratch = std::max(scratch, ch08::decode_scratch_bytes(b, H, H, cap, D));
  }
  const size_t rows = size_t(Bm);
  const size_t sizes[] = {rows * C * es,
                          rows * C * es,
                          rows * C * es,
                          rows * C * es,  // resid, branch, tmp, ln
                          rows * 3 * C * es,
                          rows * C * es,
                          rows * 4 * C * es,  // qkv, att, fc
                          rows * C * es,      // bq
                          rows * V * es,
                          rows * V * 4,  // blogits, blogits_f32
                          rows * 4,
                          rows * 4,  // btop_v, btop_i
                          scratch,
                          rows * H * 4,  // battn_scratch, battn_lse
                          rows * 4,
                          rows * 4,
                          rows * 4,                       // d_btoken, d_bnext, d_bpos
                          rows * (size_t(cap) + 1) * 4};  // d_bhistory
  size_t total = 0;
  for (size_t s : sizes) total += round_up(s);
  bbuf = wb::DeviceBuffer<char>(total);
  CUDA_CHECK(cudaMemset(bbuf.data(), 0, total));
  char* p = bbuf.data();
  size_t i = 0;
  auto take = [&]() {
    void* r = p;
    p += round_up(sizes[i++]);
    return r;
  };
  bb.resid = take(), bb.branch = take(), bb.tmp = take(), bb.ln = take();
  bb.qkv = take(), bb.att = take(), bb.fc = take();
  bq = take();
  blogits = take();
  blogits_f32 = static_cast<float*>(take());
  btop_v = static_cast<float*>(take());
  btop_i = static_cast<int32_t*>(take());
  void* scratch_at = take();
  battn_scratch = scratch > 0 ? scratch_at : nullptr;
  battn_lse = static_cast<float*>(take());
  d_btoken = static_cast<int32_t*>(take());
  d_bnext = static_cast<int32_t*>(take());
  d_bpos = static_cast<int*>(take());
  d_bhistory = static_cast<int32_t*>(take());
  CUDA_CHECK(cudaMallocHost(&bpinned, 2 * rows * sizeof(int32_t)));
  bpos.assign(rows, 0);
}

// --- the ops while `batched` is set (model.cu's kv_append and attention forward here) --------

void Model::Impl::batch_kv_append(OpTag tag, const void* qkv, int B) {
  void* q = chapter8_attention() ? bq : nullptr;  // chapter 8 reads the queries packed (B, C)
  timed(tag, "model", double(es) * (q ? 6.0 : 4.0) * B * C, [&] {
    if (dtype == wb::DType::BF16) {
      kernels::kv_append_rows(static_cast<const bf16*>(qkv), static_cast<bf16*>(kb[tag.layer]),
                              static_cast<bf16*>(vb[tag.layer]), static_cast<bf16*>(q), d_bpos, B, H, D, cap, cur);
    } else {
      kernels::kv_append_rows(static_cast<const float*>(qkv), static_cast<float*>(kb[tag.layer]),
                              static_cast<float*>(vb[tag.layer]), static_cast<float*>(q), d_bpos, B, H, D, cap, cur);
    }
  });
}

void Model::Impl::batch_attention(OpTag tag, const void* qkv, void* att, int B) {
  double keys = 0;  // every sequence's keys 0 .. pos[b] (the host's mirror: for the table's bytes only)
  for (int b = 0; b < B; ++b) keys += bpos[size_t(b)] + 1;
  const bool ch8 = chapter8_attention();
  timed(tag, ch8 ? "ch08 v6 split-KV" : "model", double(es) * (2.0 * keys * C + 2.0 * B * C), [&] {
    if (ch8) {
      // q (B, H, D) packed by kv_append_rows; the caches [B][H][cap][D]; L_b = pos[b] + 1.
      ch08::solution::v6_decode_at_pos_bf16(static_cast<const bf16*>(bq), static_cast<const bf16*>(kb[tag.layer]),
                                            static_cast<const bf16*>(vb[tag.layer]), d_bpos, static_cast<bf16*>(att),
                                            battn_lse, B, H, H, cap, D, 1.0f / std::sqrt(float(D)), battn_scratch, cur);
      return;
    }
    // The model's kernel once per sequence: one query (qkv row b) at position pos[b].
    for (int b = 0; b < B; ++b) {
      const void* q = at(const_cast<void*>(qkv), size_t(b) * 3 * C * es);
      const void* k = at(kb[tag.layer], size_t(b) * seq_bytes);
      const void* v = at(vb[tag.layer], size_t(b) * seq_bytes);
      void* o = at(att, size_t(b) * C * es);
      if (dtype == wb::DType::BF16) {
        kernels::attention(static_cast<const bf16*>(q), static_cast<const bf16*>(k), static_cast<const bf16*>(v),
                           d_bpos + b, static_cast<bf16*>(o), 1, H, D, cap, cur);
      } else {
        kernels::attention(static_cast<const float*>(q), static_cast<const float*>(k), static_cast<const float*>(v),
                           d_bpos + b, static_cast<float*>(o), 1, H, D, cap, cur);
      }
    }
  });
}

// --- the batched step ---------------------------------------------------------------------

void Model::Impl::batch_step(int B, cudaStream_t s) {
  cur = s;
  const FlagScope scope(batched);
  timed({"embedding", -1}, "model", double(es) * 4.0 * B * C, [&] {
    with_element_type(dtype, [&](auto t) {
      using E = typename decltype(t)::type;
      kernels::embedding_rows(d_btoken, d_bpos, static_cast<const E*>(wte), static_cast<const E*>(wpe),
                              static_cast<E*>(bb.resid), static_cast<E*>(bb.branch), B, C, cur);
    });
  });

  BlockFn* block = opt.kernels.block == Who::Student ? &ch09::student::block_forward : &solution::block_forward;
  for (int l = 0; l < L; ++l) block(*this, l, blocks[l], bb, B, C);

  // Every row is a sequence's last position: ln_f and the LM head on all B rows.
  residual_layernorm({"ln_f", -1}, bb.resid, bb.branch, ln_f_w, ln_f_b, bb.tmp, bb.ln, B);
  linear({"lm_head", -1}, bb.ln, wte, nullptr, blogits, B, V, C, ch09::Epilogue::None);

  const Who who = opt.kernels.argmax;
  void* ws = btopk_ws.at(B).data();  // made by batch_decode_step / check_batch_decode before any step of this B
  timed({"argmax", -1}, who_name(who), double(B) * V * (es + (dtype == wb::DType::BF16 ? 8 : 0)), [&] {
    const float* lf = static_cast<const float*>(blogits);
    if (dtype == wb::DType::BF16) {
      kernels::to_float(static_cast<const bf16*>(blogits), blogits_f32, B * V, cur);
      lf = blogits_f32;
    }
    argmax_fn(lf, btop_v, btop_i, B, V, 1, ws, cur);
    kernels::advance_rows(btop_i, d_bnext, d_btoken, d_bpos, d_bhistory, B, cap + 1, cur);
  });
}

void Model::Impl::batch_decode_step(int B) {
  if (btopk_ws.find(B) == btopk_ws.end()) {  // zeroed once; the top-k leaves it zeroed (ch07.cuh)
    wb::DeviceBuffer<char> ws(std::max<size_t>(topk_workspace_bytes(opt.kernels.argmax, B, V), 1));
    CUDA_CHECK(cudaMemsetAsync(ws.data(), 0, ws.bytes(), stream));
    btopk_ws.emplace(B, std::move(ws));
  }
  if (graph_wanted()) {
    auto it = bexec.find(B);
    if (it == bexec.end() && beager[B] > 0) {  // the first step of this B ran eagerly: capture it
      CaptureFn* capture = capture_fn(opt);
      capturing = true;
      try {
        cudaGraphExec_t e = capture(stream, [this, B](cudaStream_t s) { batch_step(B, s); });
        capturing = false;
        if (e == nullptr) throw std::runtime_error("the capture function returned no graph (a null cudaGraphExec_t)");
        it = bexec.emplace(B, e).first;
      } catch (const std::exception& e) {
        capturing = false;
        cur = stream;
        cudaGetLastError();
        if (opt.kernels.graph == Who::Student) throw;
        graph_problem = std::string("batch ") + std::to_string(B) + ": " + e.what();
        it = bexec.emplace(B, nullptr).first;  // not tried again: eager steps for this B
      }
    }
    if (it != bexec.end() && it->second != nullptr) {
      CUDA_CHECK(cudaGraphLaunch(it->second, stream));
      return;
    }
  }
  batch_step(B, stream);
  ++beager[B];
}

// --- the public API ---------------------------------------------------------------------

std::vector<int32_t> Model::prefill_batch(const std::vector<std::vector<int32_t>>& prompts) {
  Impl& m = *impl_;
  const int n = static_cast<int>(prompts.size());
  if (m.opt.batch == 0) {
    throw std::invalid_argument(
        "prefill_batch: this model was loaded without batched decode; load it with "
        "Options::batch set to the most sequences you will decode together");
  }
  if (n < 1) throw std::invalid_argument("prefill_batch: no prompts; give one per sequence");
  if (n > m.opt.batch) {
    throw std::invalid_argument("prefill_batch: " + std::to_string(n) + " prompts, but the model holds " +
                                std::to_string(m.opt.batch) +
                                " sequences (Options::batch); load it with "
                                "Options::batch >= " +
                                std::to_string(n) + ", or decode fewer at once");
  }
  for (int b = 0; b < n; ++b) {
    if (prompts[size_t(b)].empty()) {
      throw std::invalid_argument("prefill_batch: prompt " + std::to_string(b) + " is empty: give at least one token");
    }
    m.require_tokens(prompts[size_t(b)], static_cast<int>(prompts[size_t(b)].size()));
  }
  m.nbatch = 0;  // until every sequence is in place
  std::vector<int32_t> next(static_cast<size_t>(n));
  for (int b = 0; b < n; ++b) {
    // One prompt at a time through the single sequence's prefill, then its cache into slot b.
    next[size_t(b)] = prefill(prompts[size_t(b)]);
    for (int l = 0; l < m.L; ++l) {
      CUDA_CHECK(cudaMemcpyAsync(at(m.kb[l], size_t(b) * m.seq_bytes), m.kc[l], m.seq_bytes, cudaMemcpyDeviceToDevice,
                                 m.stream));
      CUDA_CHECK(cudaMemcpyAsync(at(m.vb[l], size_t(b) * m.seq_bytes), m.vc[l], m.seq_bytes, cudaMemcpyDeviceToDevice,
                                 m.stream));
    }
    m.bpos[size_t(b)] = static_cast<int>(prompts[size_t(b)].size());
  }
  // Positions and the first tokens to feed (each prompt's greedy next token, as generate() does).
  for (int b = 0; b < n; ++b) {
    m.bpinned[b] = m.bpos[size_t(b)];
    m.bpinned[m.opt.batch + b] = next[size_t(b)];
  }
  CUDA_CHECK(cudaMemcpyAsync(m.d_bpos, m.bpinned, sizeof(int) * n, cudaMemcpyHostToDevice, m.stream));
  CUDA_CHECK(
      cudaMemcpyAsync(m.d_btoken, m.bpinned + m.opt.batch, sizeof(int32_t) * n, cudaMemcpyHostToDevice, m.stream));
  wb::sync_with_deadline(m.stream, "gpt2 batched prefill");
  m.nbatch = n;
  return next;
}

namespace {

void require_batch(const Model::Impl& m, size_t tokens, int steps, const char* who) {
  if (m.nbatch == 0) {
    throw std::logic_error(std::string(who) + " before prefill_batch: run prefill_batch(prompts) first");
  }
  if (tokens != size_t(m.nbatch)) {
    throw std::invalid_argument(std::string(who) + ": " + std::to_string(tokens) + " tokens for " +
                                std::to_string(m.nbatch) + " sequences; give one token per sequence");
  }
  for (int b = 0; b < m.nbatch; ++b) {
    if (m.bpos[size_t(b)] + steps > m.cap) {
      throw std::invalid_argument(std::string(who) + ": sequence " + std::to_string(b) + " holds " +
                                  std::to_string(m.bpos[size_t(b)]) + " tokens; " + std::to_string(steps) +
                                  " more do not fit the cache of " + std::to_string(m.cap) + " positions");
    }
  }
}

}  // namespace

std::vector<int32_t> Model::decode_batch(std::span<const int32_t> tokens) {
  Impl& m = *impl_;
  require_batch(m, tokens.size(), 1, "decode_batch");
  m.require_tokens(tokens, 0);
  const int n = m.nbatch;
  std::copy(tokens.begin(), tokens.end(), m.bpinned);
  CUDA_CHECK(cudaMemcpyAsync(m.d_btoken, m.bpinned, sizeof(int32_t) * n, cudaMemcpyHostToDevice, m.stream));
  m.batch_decode_step(n);
  CUDA_CHECK(
      cudaMemcpyAsync(m.bpinned + m.opt.batch, m.d_bnext, sizeof(int32_t) * n, cudaMemcpyDeviceToHost, m.stream));
  wb::sync_with_deadline(m.stream, "gpt2 batched decode step");
  for (int b = 0; b < n; ++b) m.bpos[size_t(b)] += 1;
  m.flush_profile();
  return std::vector<int32_t>(m.bpinned + m.opt.batch, m.bpinned + m.opt.batch + n);
}

std::vector<std::vector<int32_t>> Model::generate_batch(int steps) {
  Impl& m = *impl_;
  if (steps < 1) return {};
  require_batch(m, size_t(m.nbatch), steps, "generate_batch");
  const int n = m.nbatch;
  m.ev_a.record(m.stream);
  for (int i = 0; i < steps; ++i) m.batch_decode_step(n);
  m.ev_b.record(m.stream);
  // history[b][p] is the token predicted for position p of sequence b.
  std::vector<int32_t> raw(size_t(n) * (m.cap + 1));
  CUDA_CHECK(cudaMemcpyAsync(raw.data(), m.d_bhistory, raw.size() * sizeof(int32_t), cudaMemcpyDeviceToHost, m.stream));
  wb::sync_with_deadline(m.stream, "gpt2 batched decode loop");
  m.gen_ms = m.ev_b.ms_since(m.ev_a);
  m.batch_gen_ms = m.gen_ms;
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(n));
  for (int b = 0; b < n; ++b) {
    const int32_t* row = raw.data() + size_t(b) * (m.cap + 1);
    out[size_t(b)].assign(row + m.bpos[size_t(b)] + 1, row + m.bpos[size_t(b)] + 1 + steps);
    m.bpos[size_t(b)] += steps;
  }
  m.flush_profile();
  return out;
}

std::vector<float> Model::batch_logits(int b) const {
  const Impl& m = *impl_;
  if (b < 0 || b >= m.nbatch) {
    throw std::out_of_range("batch_logits(" + std::to_string(b) + "): the batch has " + std::to_string(m.nbatch) +
                            " sequences");
  }
  std::vector<float> out(static_cast<size_t>(m.V));
  const void* row = at(m.blogits, size_t(b) * m.V * m.es);
  if (m.dtype == wb::DType::F32) {
    CUDA_CHECK(cudaMemcpy(out.data(), row, sizeof(float) * m.V, cudaMemcpyDeviceToHost));
  } else {
    std::vector<wb::BFloat16> raw(static_cast<size_t>(m.V));
    CUDA_CHECK(cudaMemcpy(raw.data(), row, 2 * size_t(m.V), cudaMemcpyDeviceToHost));
    for (int i = 0; i < m.V; ++i) out[size_t(i)] = wb::bf16_to_float(raw[size_t(i)]);
  }
  return out;
}

int Model::batch_size() const { return impl_->nbatch; }

std::vector<int> Model::batch_positions() const {
  return std::vector<int>(impl_->bpos.begin(), impl_->bpos.begin() + impl_->nbatch);
}

BatchDecodeCheck Model::check_batch_decode(std::span<const int32_t> tokens) {
  Impl& m = *impl_;
  require_batch(m, tokens.size(), 1, "check_batch_decode");
  m.require_tokens(tokens, 0);
  const int n = m.nbatch;
  BatchDecodeCheck r;
  std::vector<std::vector<float>> single(static_cast<size_t>(n));
  // 1. Each sequence alone: its cache into the single sequence's, one eager op-by-op step.
  for (int b = 0; b < n; ++b) {
    for (int l = 0; l < m.L; ++l) {
      CUDA_CHECK(cudaMemcpyAsync(m.kc[l], at(m.kb[l], size_t(b) * m.seq_bytes), m.seq_bytes, cudaMemcpyDeviceToDevice,
                                 m.stream));
      CUDA_CHECK(cudaMemcpyAsync(m.vc[l], at(m.vb[l], size_t(b) * m.seq_bytes), m.seq_bytes, cudaMemcpyDeviceToDevice,
                                 m.stream));
    }
    m.pinned[1] = tokens[size_t(b)];
    m.pinned[3] = m.bpos[size_t(b)];
    CUDA_CHECK(cudaMemcpyAsync(m.d_token, &m.pinned[1], 4, cudaMemcpyHostToDevice, m.stream));
    CUDA_CHECK(cudaMemcpyAsync(m.d_pos, &m.pinned[3], 4, cudaMemcpyHostToDevice, m.stream));
    m.run_step(1, m.d_token, m.stream);
    ++m.eager_steps;
    CUDA_CHECK(cudaMemcpyAsync(&m.pinned[2], m.d_next, 4, cudaMemcpyDeviceToHost, m.stream));
    wb::sync_with_deadline(m.stream, "gpt2 decode step");
    single[size_t(b)] = logits();
    r.single_tokens.push_back(m.pinned[2]);
    m.pos = m.bpos[size_t(b)] + 1;  // the single sequence is now sequence b after this step
  }
  // 2. All of them in one eager batched step, from the same state.
  if (m.btopk_ws.find(n) == m.btopk_ws.end()) {
    wb::DeviceBuffer<char> ws(std::max<size_t>(topk_workspace_bytes(m.opt.kernels.argmax, n, m.V), 1));
    CUDA_CHECK(cudaMemsetAsync(ws.data(), 0, ws.bytes(), m.stream));
    m.btopk_ws.emplace(n, std::move(ws));
  }
  std::copy(tokens.begin(), tokens.end(), m.bpinned);
  CUDA_CHECK(cudaMemcpyAsync(m.d_btoken, m.bpinned, sizeof(int32_t) * n, cudaMemcpyHostToDevice, m.stream));
  m.batch_step(n, m.stream);
  ++m.beager[n];
  CUDA_CHECK(
      cudaMemcpyAsync(m.bpinned + m.opt.batch, m.d_bnext, sizeof(int32_t) * n, cudaMemcpyDeviceToHost, m.stream));
  wb::sync_with_deadline(m.stream, "gpt2 batched decode step");
  for (int b = 0; b < n; ++b) m.bpos[size_t(b)] += 1;
  m.flush_profile();

  for (int b = 0; b < n; ++b) {
    const std::vector<float> got = batch_logits(b);
    const std::vector<float>& ref = single[size_t(b)];
    const LogitsDiff diff = logits_diff(got, ref);
    r.max_abs_diff = std::max(r.max_abs_diff, diff.max_abs);
    r.rel_l2 = std::isfinite(diff.rel_l2) ? std::max(r.rel_l2, diff.rel_l2) : INFINITY;
    const int32_t t = m.bpinned[m.opt.batch + b];
    r.batch_tokens.push_back(t);
    r.tie_gaps.push_back(double(ref[size_t(r.single_tokens[size_t(b)])]) - ref[size_t(t)]);
  }
  return r;
}

}  // namespace gpt2
