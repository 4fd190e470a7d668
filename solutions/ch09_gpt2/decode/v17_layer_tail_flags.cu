// Step 17 — a layer's attention, attention projection and MLP in ONE kernel: the kernel
// boundaries between them replaced by counters that the CTAs waiting on a result spin on
// (gpt2 --decode=fused, BF16 and --int4, head size 64).
//
// What changes against steps 15 and 16 in the fused step, and why:
//   * With v15 and v16 a layer is five kernels (ln_1 + QKV, attention, attn_proj + residual,
//     ln_2 + fc + GELU, mlp_proj + residual). Every kernel has its weights in shared memory
//     before its wait, so the bytes are not what a layer waits for: at GPT-2 1.5B on INT4 a
//     layer is 29 µs for 17 MB (4 µs at the copy bandwidth). What each boundary costs is the
//     previous kernel's last CTA ending, the end reaching the next kernel's griddepcontrol.wait
//     and that kernel's first trip to L2: a fixed cost per kernel, five times a layer.
//   * Here the four ops after the QKV projection are one kernel of one CTA per SM, in two roles:
//       CTAs 0 .. H - 1       the attention of head h (v16's, with 256 threads: its keys and
//                             values copied into shared memory before the wait), then one
//                             arrival on counter ATT;
//       CTAs H .. SMs - 1     the GEMV CTAs. Before the wait each copies ALL its rows of the
//                             three matrices into shared memory (attn_proj, fc, fc_proj: about
//                             100 KB at 1.5B on INT4), with their scales, zero points and biases,
//                             and ln_2's gamma and beta. Then:
//                               wait ATT = H     x += att · attn_projᵀ + b  (its rows)   arrive X
//                               wait X = CTAs    fc = gelu(LN_2(x) · fcᵀ + b)            arrive FC
//                               wait FC = CTAs   x += fc · fc_projᵀ + b
//     A counter is one word in L2: an arrival is a fence and an atomicAdd by one thread after
//     the CTA's barrier; a wait is one thread polling with ld.acquire.gpu, then the barrier. So
//     a result is read as soon as its last producer has stored it, with no kernel end between.
//     Each op needs ALL of the previous op's output (an output row of the projection reads
//     every head; the LayerNorm every element of x; the MLP's projection every fc element), so
//     one counter per op is the finest dependency there is. A layer is 2 kernels, not 5.
//   * Data written inside the kernel (att, x, fc) is read with ld.global.cg (L2): an L1 line an
//     SM loaded earlier in the kernel (its own rows of x, say) may hold stale neighbours.
//   * The grid is one CTA per SM, every CTA resident at once (the spin needs it): its shared
//     memory is the attention's (169 KB), which leaves room for the QKV kernel's CTA (v15: 34
//     to 44 KB) beside it, so each kernel's copies travel while the other runs, as before.
//   * The last GEMV CTA to finish resets the counters for the next launch (the next layer's
//     tail starts after this one has ended: the QKV kernel between them waits for it).
// The arithmetic is v15's (slab.cuh: the units on tensor cores, the same order of the sums) and
// v16's (attention_ahead.cuh), so the logits are those of the five-kernel step.
// Where the rows do not fit (GPT-2 1.5B in BF16: 60 rows of fc are 192 KB), or the head size is
// not 64, or INT8 weights, the caller runs the five kernels.
//
// Run: build/ch09/bin/gpt2 --weights=1.5B.safetensors --prompt-len=512 --new=128 --decode=fused --int4
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "attention_ahead.cuh"
#include "device/async_copy.cuh"
#include "device/pdl.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch_helpers.cuh"
#include "slab.cuh"

namespace ch09::solution {
namespace {

using slab::kThreads;  // 256
using slab::kWarps;    // 8
using slab::Plan;
using w4::W4Args;

enum Counter { kAtt, kX, kFc, kDone, kCounters };
enum PhaseId { kProj, kFcUp, kFcDown, kPhases };

// One GEMV of the tail: this CTA's rows j * p.rows ... of an (N, K) matrix, and where they live
// in shared memory: the first `staged` of them (kUnstaged: the others are asked of L2 before the
// wait and read from global memory).
struct Phase {
  Plan p;
  const uint8_t* q;     // INT4 codes, or the BF16 rows' bytes
  const float* scale;   // (N, G): INT4
  const uint8_t* zero;  // (N, G): INT4
  const bf16* b;        // (N)
  int N, K, staged;
  int off_codes, off_sc, off_z;
};

struct Tail {
  // the attention (attend_head's arguments)
  const bf16 *qkv, *k_cache, *v_cache;
  const int* pos;
  bf16* att;
  int H, P, n_pre;
  float scale_log2;
  // the GEMVs
  bf16 *x, *fc;
  const bf16 *gamma, *beta;
  float eps;
  Phase ph[kPhases];
  int phases;  // 3: attn_proj, fc and fc_proj here; 1: attn_proj alone (the MLP's two kernels follow)
  int off_x, off_gb, off_part;
  unsigned* sync;  // (kCounters) zero between launches
};

// Asks L2 for bytes [p, p + n) (16-byte aligned, n a multiple of 16), a piece of up to 32 KB per
// thread: no result, no ordering, a hint.
__device__ __forceinline__ void prefetch_l2(const unsigned char* p, long long n) {
  constexpr long long kPiece = 32 * 1024;
  for (long long o = threadIdx.x * kPiece; o < n; o += kThreads * kPiece) {
    const unsigned bytes = static_cast<unsigned>(min(kPiece, n - o));
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p + o), "r"(bytes) : "memory");
#else
    for (unsigned i = 0; i < bytes; i += 128) wb::pdl_prefetch_l2(p + o + i);
#endif
  }
}

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// This CTA's stores so far, published: every thread's stores, the barrier, one fence and one
// arrival.
__device__ __forceinline__ void arrive(unsigned* counter) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(counter, 1u);
  }
}

// Until n arrivals: one thread polls, the barrier passes the acquisition on to the CTA.
__device__ __forceinline__ void wait_for(const unsigned* counter, unsigned n) {
  if (threadIdx.x == 0) {
    while (load_acquire(counter) < n) {
    }
  }
  __syncthreads();
}

// The last GEMV CTA to get here resets the counters (every other CTA is past its waits).
__device__ __forceinline__ void done(unsigned* sync, int ctas) {
  __syncthreads();
  if (threadIdx.x == 0 && atomicAdd(sync + kDone, 1u) == static_cast<unsigned>(ctas - 1)) {
#pragma unroll
    for (int c = 0; c < kCounters; ++c) sync[c] = 0;
  }
}

// One GEMV of this CTA's rows: stage the input (written in this kernel: kCg) with kNorm its
// LayerNorm, the units, and row t's epilogue. in: the input row (K); y (N): with kResidual
// y += sum + bias (one rounding), else gelu(sum + bias). The copies: see stage_x.
template <bool kInt4, bool kUnstaged, bool kNorm, bool kResidual, int kPendGb, int kPendEnd>
__device__ __forceinline__ void gemv_phase(const Tail& a, const Phase& ph, const bf16* in, bf16* y, unsigned char* smem,
                                           float* red, int j, float bias) {
  W4Args w{};
  w.x = in, w.gamma = a.gamma, w.beta = a.beta, w.K = ph.K, w.eps = a.eps, w.vec = true;
  auto* s_x = reinterpret_cast<uint4*>(smem + a.off_x);
  slab::stage_x<kNorm, kInt4, true, kPendGb, kPendEnd>(w, s_x, reinterpret_cast<const bf16*>(smem + a.off_gb), red);
  const long long n0 = static_cast<long long>(j) * ph.p.rows;
  const int nr = static_cast<int>(max(0LL, min(static_cast<long long>(ph.p.rows), ph.N - n0)));
  auto* s_part = reinterpret_cast<float*>(smem + a.off_part);
  if (nr > 0) {
    const int row_bytes = kInt4 ? ph.K / 2 : 2 * ph.K;
    const slab::Unstaged us{ph.q + n0 * row_bytes, ph.staged, row_bytes};
    slab::units<kInt4, kUnstaged>(ph.p, smem + ph.off_codes, reinterpret_cast<const uint8_t*>(smem + ph.off_z),
                                  reinterpret_cast<const float*>(smem + ph.off_sc), s_x, s_part, nr, ph.K, us);
  }
  __syncthreads();
  const int t = threadIdx.x;
  if (t < nr) {
    const float acc = slab::row_total(ph.p, s_part, t);
    const long long n = n0 + t;
    if constexpr (kResidual) {
      y[n] = __float2bfloat16(__bfloat162float(__ldcg(y + n)) + (acc + bias));  // one rounding
    } else {
      y[n] = epilogue_value<bf16>(acc, bias, Epilogue::BiasGelu);
    }
  }
}

// grid (SMs), kThreads threads, dynamic shared memory (launch): the attention's (CTAs < H) or
// the three phases' rows, x, gamma and beta, the units' partial sums (the others).
template <bool kInt4, bool kUnstaged>
__global__ void __launch_bounds__(kThreads, 2) layer_tail_kernel(const Tail a) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float red[2 * kWarps];
  if (static_cast<int>(blockIdx.x) < a.H) {
    attn_ahead::attend_head<kThreads>(a.qkv, a.k_cache, a.v_cache, a.pos, a.att, a.H, a.P, a.n_pre, a.scale_log2, smem,
                                      red, blockIdx.x);
    arrive(a.sync + kAtt);
    return;
  }
  const int j = static_cast<int>(blockIdx.x) - a.H, ctas = static_cast<int>(gridDim.x) - a.H, t = threadIdx.x;

  // 1. Before the wait, nothing an earlier kernel writes. Group 0 of the copies: gamma, beta and
  //    the scales; groups 1, 2, 3: the rows of attn_proj, fc, fc_proj. Zero points and biases
  //    through registers.
  const int C = a.ph[kProj].K;
  for (int i = t; a.phases == kPhases && i < C / 8; i += kThreads) {
    wb::ptx::cp_async_16(smem + a.off_gb + 16 * i, a.gamma + 8 * i, true);
    wb::ptx::cp_async_16(smem + a.off_gb + 2 * C + 16 * i, a.beta + 8 * i, true);
  }
  int nr[kPhases] = {};
  long long n0[kPhases] = {};
#pragma unroll
  for (int f = 0; f < kPhases; ++f) {
    if (f >= a.phases) break;
    const Phase& ph = a.ph[f];
    n0[f] = static_cast<long long>(j) * ph.p.rows;
    nr[f] = static_cast<int>(max(0LL, min(static_cast<long long>(ph.p.rows), ph.N - n0[f])));
    if constexpr (kInt4) {
      slab::copy_scales(reinterpret_cast<float*>(smem + ph.off_sc), ph.scale, n0[f], nr[f], ph.p.groups);
    }
  }
  wb::ptx::cp_async_commit();
#pragma unroll
  for (int f = 0; f < kPhases; ++f) {
    if (f >= a.phases) break;
    const Phase& ph = a.ph[f];
    const int row_bytes = kInt4 ? ph.K / 2 : 2 * ph.K;
    slab::copy_rows(smem + ph.off_codes, ph.q, n0[f], min(nr[f], ph.staged), row_bytes, row_bytes / 16, ph.p.pitch);
    wb::ptx::cp_async_commit();
    if (kUnstaged && nr[f] > ph.staged) {
      prefetch_l2(ph.q + (n0[f] + ph.staged) * row_bytes, static_cast<long long>(nr[f] - ph.staged) * row_bytes);
    }
  }
  float bias[kPhases] = {};
#pragma unroll
  for (int f = 0; f < kPhases; ++f) {
    if (f >= a.phases) break;
    bias[f] = t < nr[f] ? __bfloat162float(a.ph[f].b[n0[f] + t]) : 0.0f;
    if constexpr (kInt4) {
      slab::copy_zeros(reinterpret_cast<uint8_t*>(smem + a.ph[f].off_z), a.ph[f].zero, n0[f], nr[f], a.ph[f].p.groups);
    }
  }

  // 2. The previous kernel (the QKV projection) has ended; the next may start.
  wb::pdl_wait();
  wb::pdl_trigger();

  // 3. x += att · attn_projᵀ + b, once every head's att is stored. (Groups 0 and 1 needed.)
  wait_for(a.sync + kAtt, static_cast<unsigned>(a.H));
  if (a.phases == 1) {  // groups 0 and 1 are all there are
    gemv_phase<kInt4, kUnstaged, false, true, 0, 0>(a, a.ph[kProj], a.att, a.x, smem, red, j, bias[kProj]);
    done(a.sync, ctas);
    return;
  }
  gemv_phase<kInt4, kUnstaged, false, true, 2, 2>(a, a.ph[kProj], a.att, a.x, smem, red, j, bias[kProj]);
  arrive(a.sync + kX);

  // 4. fc = gelu(LN_2(x) · fcᵀ + b), once every row of x is. (Group 2.)
  wait_for(a.sync + kX, static_cast<unsigned>(ctas));
  gemv_phase<kInt4, kUnstaged, true, false, 2, 1>(a, a.ph[kFcUp], a.x, a.fc, smem, red, j, bias[kFcUp]);
  arrive(a.sync + kFc);

  // 5. x += fc · fc_projᵀ + b, once every fc element is. (Group 3.) This CTA's rows of x are the
  //    ones it wrote in 3.
  wait_for(a.sync + kFc, static_cast<unsigned>(ctas));
  gemv_phase<kInt4, kUnstaged, false, true, 0, 0>(a, a.ph[kFcDown], a.fc, a.x, smem, red, j, bias[kFcDown]);

  done(a.sync, ctas);
}

// --- the launcher --------------------------------------------------------------------------

int smem_optin() {
  static const int bytes = wb::query_device().smem_per_block_optin;
  return bytes;
}

constexpr int kStatic = 2 * kWarps * sizeof(float);  // red

// The shared memory the GEMV CTAs' rows may fill when all of them do not fit: the attention's
// (so that the CTA of the QKV kernel beside it still fits), or kRowsCap where that is less.
constexpr long long kRowsCap = 160 * 1024;

// The plan of `phases` GEMVs (3 or 1): their rows (ceil(N / CTAs) each), the layout of the GEMV
// CTAs' shared memory, and the kernel's dynamic shared memory (the larger of the two roles').
// Every CTA's rows in shared memory where they fit; else the rows of each phase in order, as many
// as fit (unstaged: some are read from global memory). False where even the rest does not fit.
template <bool kInt4>
bool plan_tail(Tail& a, int C, int H, int P, int phases, size_t& smem, bool& unstaged) {
  const int ctas = wb::sm_count() - H;
  if (ctas < 1) return false;
  a.phases = phases;
  a.n_pre = std::min(P, attn_ahead::kMaxKeys);
  const long long attention = static_cast<long long>(attn_ahead::smem_bytes<kThreads>(a.n_pre, P));
  const long long limit = smem_optin() - kStatic;
  const int NK[kPhases][2] = {{C, C}, {4 * C, C}, {C, 4 * C}};
  long long off = 0, codes = 0;
  int parts = 0;
  for (int f = 0; f < phases; ++f) {  // scales, zero points: every row's
    Phase& ph = a.ph[f];
    ph.N = NK[f][0], ph.K = NK[f][1];
    ph.p = slab::make_plan<kInt4, false>(ph.N, ph.K, ctas, 1 << 30);
    if (static_cast<long long>(ph.p.rows) * ctas < ph.N) return false;  // more than kThreads rows a CTA
    parts = std::max(parts, ph.p.pairs * ph.p.tiles * slab::kTileRows);
    codes += slab::align16(ph.p.rows * ph.p.pitch);
    ph.off_sc = static_cast<int>(off);
    off += kInt4 ? slab::align16(4 * ph.p.rows * ph.p.groups) : 0;
    ph.off_z = static_cast<int>(off);
    off += kInt4 ? slab::align16(ph.p.rows * ph.p.groups) : 0;
  }
  a.off_x = static_cast<int>(off);
  off += 2 * (phases == kPhases ? 4 * C : C);  // the longest input row: fc (4C), or att (C)
  a.off_gb = static_cast<int>(off);
  off += phases == kPhases ? 4 * C : 0;  // gamma, beta
  a.off_part = static_cast<int>(off);
  off += 4 * parts;
  const long long cap = off + codes <= std::max(attention, kRowsCap) ? off + codes : std::max(attention, kRowsCap);
  if (std::min(cap, limit) < off) return false;
  unstaged = off + codes > std::min(cap, limit);
  for (int f = 0; f < phases; ++f) {  // the rows, in the order the phases run, while they fit
    Phase& ph = a.ph[f];
    ph.off_codes = static_cast<int>(off);
    ph.staged = static_cast<int>(std::min<long long>(ph.p.rows, (std::min(cap, limit) - off) / ph.p.pitch));
    off += slab::align16(ph.staged * ph.p.pitch);
  }
  smem = static_cast<size_t>(std::max(off, attention));
  return static_cast<long long>(smem) <= limit;
}

bool shapes_ok(int C, int H, int D, int P) {
  return D == attn_ahead::kD && H >= 1 && H * D == C && P >= 1 && C % 32 == 0;
}

// The ops the tail takes at this shape: 3 (the MLP too), 1 (the attention's projection), 0.
template <bool kInt4>
int tail_ops(int C, int H, int D, int P) {
  if (!shapes_ok(C, H, D, P)) return 0;
  Tail a{};
  size_t smem = 0;
  bool unstaged = false;
  return plan_tail<kInt4>(a, C, H, P, kPhases, smem, unstaged) ? kPhases
         : plan_tail<kInt4>(a, C, H, P, 1, smem, unstaged)     ? 1
                                                               : 0;
}

template <bool kInt4, bool kUnstaged>
void launch_kernel(const Tail& a, size_t smem, cudaStream_t stream) {
  auto* kernel = &layer_tail_kernel<kInt4, kUnstaged>;
  static const bool raised = [&] {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_optin() - kStatic));
    CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
    return true;
  }();
  (void)raised;
  // Every CTA spins until others have stored: all of them must be resident at once.
  static size_t checked = 0;  // the last shared memory size found to fit one CTA per SM
  if (smem != checked) {
    int per_sm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem));
    if (per_sm < 1) throw std::runtime_error("layer_tail: one CTA per SM does not fit");
    checked = smem;
  }
  wb::launch_chained(kernel, dim3(wb::sm_count()), dim3(kThreads), smem, stream, a);
}

template <bool kInt4>
bool launch_tail(Tail a, int C, int H, int P, int ops, cudaStream_t stream) {
  size_t smem = 0;
  bool unstaged = false;
  if (ops > tail_ops<kInt4>(C, H, C / H, P) || !plan_tail<kInt4>(a, C, H, P, ops, smem, unstaged)) return false;
  if (unstaged) {
    launch_kernel<kInt4, true>(a, smem, stream);
  } else {
    launch_kernel<kInt4, false>(a, smem, stream);
  }
  return true;
}

}  // namespace

size_t layer_tail_sync_bytes() { return kCounters * sizeof(unsigned); }

int layer_tail_ops(int C, int H, int D, int P, bool int4) {
  return int4 ? tail_ops<true>(C, H, D, P) : tail_ops<false>(C, H, D, P);
}

bool layer_tail(const LayerTail& t, int ops, cudaStream_t stream) {
  if (ops != 1 && ops != kPhases) throw std::invalid_argument("layer_tail: ops is 1 or 3");
  if (!shapes_ok(t.C, t.H, t.D, t.P) || t.sync == nullptr) return false;
  const bool int4 = t.attn_proj.scale != nullptr;
  if (ops == kPhases && (int4 != (t.fc.scale != nullptr) || int4 != (t.fc_proj.scale != nullptr))) {
    throw std::invalid_argument("layer_tail: the three matrices are all INT4 or all BF16");
  }
  using wb::aligned16;
  for (const void* p :
       {static_cast<const void*>(t.qkv), static_cast<const void*>(t.k_cache), static_cast<const void*>(t.v_cache),
        static_cast<const void*>(t.att), static_cast<const void*>(t.x), t.attn_proj.w}) {
    if (!aligned16(p)) return false;
  }
  for (const void* p : {static_cast<const void*>(t.fc_out), t.fc.w, t.fc_proj.w, static_cast<const void*>(t.ln_2_w),
                        static_cast<const void*>(t.ln_2_b)}) {
    if (ops == kPhases && !aligned16(p)) return false;
  }
  Tail a{};
  a.qkv = t.qkv, a.k_cache = t.k_cache, a.v_cache = t.v_cache, a.pos = t.pos, a.att = t.att, a.H = t.H, a.P = t.P;
  a.scale_log2 = t.scale * 1.4426950408889634f;
  a.x = t.x, a.fc = t.fc_out, a.gamma = t.ln_2_w, a.beta = t.ln_2_b, a.eps = t.eps;
  const TailMatrix* m[kPhases] = {&t.attn_proj, &t.fc, &t.fc_proj};
  const bf16* b[kPhases] = {t.attn_proj_b, t.fc_b, t.fc_proj_b};
  for (int f = 0; f < kPhases; ++f) {
    a.ph[f].q = static_cast<const uint8_t*>(m[f]->w);
    a.ph[f].scale = m[f]->scale;
    a.ph[f].zero = m[f]->zero;
    a.ph[f].b = b[f];
  }
  a.sync = static_cast<unsigned*>(t.sync);
  return int4 ? launch_tail<true>(a, t.C, t.H, t.P, ops, stream) : launch_tail<false>(a, t.C, t.H, t.P, ops, stream);
}

}  // namespace ch09::solution
