// Step 9 — the decode step's layers in ONE persistent kernel (BF16, batch 1).
//
// Step 6 fused the step into 5 kernels per layer, and each of them is short: 2 to 18 µs. A
// short kernel streams its weights at full speed only in its middle; its first microseconds
// go to starting its CTAs and waiting for its first loads, its last ones to a tail of CTAs
// finishing. Nsight Compute puts step 6's GEMVs at 21 to 45 % of DRAM bandwidth for that
// reason, and a chain of plain GEMVs in separate kernels measured 52 to 66 % at best. What a
// kernel boundary costs is the time DRAM idles at it.
//
// Here the boundaries go away. One CTA per SM stays resident for all L layers and runs the
// layer's five ops as phases, with a grid-wide barrier where an op needs the whole previous
// result (every CTA reads all of x, or all of the attention's output):
//
//   phase 1  qkv = LN_1(x) · attn_wᵀ + attn_b; the key and value into the cache at *pos
//   phase 2  attention: CTA b takes (head, chunk of keys) units and writes a partial
//            (max, sum, o[D]) per unit
//   phase 3  att = the merge of the partials (every CTA, redundantly: 8000 floats from L2);
//            x = x + att · attn_proj_wᵀ + attn_proj_b   (rows of x split over the CTAs)
//   phase 4  fc = gelu(LN_2(x) · fc_wᵀ + fc_b)
//   phase 5  x = x + fc · fc_proj_wᵀ + fc_proj_b
//
// The weights do not depend on anything the step computes, so a CTA can load the NEXT
// phase's rows of W before the barrier that separates it from this one. Each CTA owns a
// contiguous slab of each matrix's rows (rows N·b/G .. N·(b+1)/G: contiguous bytes), and the
// moment it has finished a phase it issues cp.async copies of its next slab into shared
// memory (up to ~200 KB: a whole slab of every GPT-2 1.5B matrix), then goes to the barrier.
// While the slowest CTA finishes, while the barrier settles, while the LayerNorm of the next
// phase runs, DRAM is already streaming the next phase's weights. The GEMV itself then
// multiplies rows that are in shared memory: one warp per row, lane l taking the 16-byte
// pieces l, l + 32, ... (step 4's order, so a row's sum is step 6's).
//
// What it costs: the grid must be resident all at once (grid = SMs, one CTA each, launched
// cooperatively so the launch fails rather than deadlocks if it cannot be), data one CTA writes
// and another reads inside the kernel is read with ld.global.cg (L2, never a stale L1 line),
// and a barrier is a global counter every CTA spins on. ln_f, the LM head and the argmax
// stay step 6's kernel after this one.
//
// Measured (H100, GPT-2 1.5B, prompt 512): 331 tok/s, against 439 for step 6's 5 L + 3
// kernels: correct, and not yet paying. Its five barriers per layer cost 2 to 5 µs each and
// the attention phase is latency-bound; the weights stream in their shadow. The chapter's
// "The last step" section has the timestamps, phase by phase.
//
// Run: build/ch09/bin/gpt2 --weights=1.5B.safetensors --prompt-len=512 --new=128 --decode=persistent
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "runtime/errors.cuh"
#include "device/async_copy.cuh"
#include "device/reduce.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"
#include "runtime/launch_helpers.cuh"

namespace ch09::solution {
namespace {

using namespace wb::ptx;  // chapter 5's cp.async (harness/device/async_copy.cuh)
using wb::block_sum;      // sums over a warp and a CTA, one barrier each (harness/device/reduce.cuh)
using wb::warp_sum;

constexpr int kWarps = 16, kThreads = 32 * kWarps;  // one CTA per SM
constexpr int kMaxD = 128;                          // head size at most (4 elements per lane)
constexpr int kPerLane = kMaxD / 32;

// The kernel's view of the step: the layers' pointers (device memory), the buffers, the sizes.
struct Step {
  const PersistentLayer* layers;  // (L)
  const bf16* resid;              // (C) layer 0's input pair: x = resid + branch
  const bf16* branch;
  bf16* x;            // (C) the residual stream
  bf16* qkv;          // (3C)
  bf16* fc;           // (4C)
  float* part;        // attention partials: (units, D + 2)
  unsigned* barrier;  // {count, generation}, zero at allocation
  const int* pos;     // the position of this token (its key and value go there)
  int L, C, H, D, P, units_per_head;
  float eps, scale;
  unsigned wbuf_bytes;  // shared memory for weight rows
};

__device__ __forceinline__ uint4 load_cg(const bf16* p) { return __ldcg(reinterpret_cast<const uint4*>(p)); }

// Every CTA arrives; the last one to arrive resets the count and moves the generation on,
// the others spin on the generation. Writes before the barrier are visible after it.
__device__ void grid_barrier(unsigned* bar) {
  __syncthreads();
  if (threadIdx.x == 0) {
    volatile unsigned* gen = bar + 1;
    const unsigned g = *gen;
    __threadfence();
    if (atomicAdd(bar, 1u) == gridDim.x - 1) {
      bar[0] = 0;
      __threadfence();
      atomicAdd(bar + 1, 1u);
    } else {
      while (*gen == g) __nanosleep(40);
    }
    __threadfence();
  }
  __syncthreads();
}

// This CTA's rows of an (N, K) matrix: [r0, r1).
struct Slab {
  int r0, r1;
};
__device__ __forceinline__ Slab slab_of(int N) {
  return {static_cast<int>(static_cast<long long>(N) * blockIdx.x / gridDim.x),
          static_cast<int>(static_cast<long long>(N) * (blockIdx.x + 1) / gridDim.x)};
}
// How many rows of K BF16 fit in the weight buffer at once.
__device__ __forceinline__ int rows_per_round(const Step& s, int K) {
  return static_cast<int>(s.wbuf_bytes / (static_cast<unsigned>(K) * sizeof(bf16)));
}

// Rows [r0, r1) of w (N, K) into the weight buffer: cp.async, one commit group.
__device__ __forceinline__ void load_rows(const bf16* w, int r0, int r1, int K, unsigned char* wbuf) {
  const char* src = reinterpret_cast<const char*>(w + static_cast<size_t>(r0) * K);
  const int pieces = (r1 - r0) * K / 8;
  for (int i = threadIdx.x; i < pieces; i += kThreads)
    cp_async_16(wbuf + 16 * i, src + 16 * static_cast<size_t>(i), true);
  cp_async_commit();
}
// The first round of this CTA's slab of w (N, K): what is issued before a barrier.
__device__ __forceinline__ void load_first_round(const Step& s, const bf16* w, int N, int K, unsigned char* wbuf) {
  const Slab sl = slab_of(N);
  load_rows(w, sl.r0, min(sl.r1, sl.r0 + rows_per_round(s, K)), K, wbuf);
}

// y rows of this CTA's slab: epi(n, W[n] · xs), one warp per row, the rows in shared memory
// (the first round already requested by load_first_round; later rounds loaded here).
template <class Epi>
__device__ void gemv_slab(const Step& s, const bf16* w, int N, int K, const bf16* xs, unsigned char* wbuf, Epi epi) {
  const Slab sl = slab_of(N);
  const int per = rows_per_round(s, K), lane = threadIdx.x % 32, warp = threadIdx.x / 32, pieces = K / 8;
  const uint4* x4 = reinterpret_cast<const uint4*>(xs);
  for (int r0 = sl.r0; r0 < sl.r1; r0 += per) {
    const int r1 = min(sl.r1, r0 + per);
    if (r0 != sl.r0) load_rows(w, r0, r1, K, wbuf);
    cp_async_wait<0>();
    __syncthreads();  // every thread's copies have landed
    for (int n = r0 + warp; n < r1; n += kWarps) {
      const uint4* w4 = reinterpret_cast<const uint4*>(wbuf) + static_cast<size_t>(n - r0) * pieces;
      float acc = 0.0f;
#pragma unroll 4
      for (int p = lane; p < pieces; p += 32) acc += dot16(w4[p], x4[p], bf16{});
      acc = warp_sum(acc);
      if (lane == 0) epi(n, acc);
    }
    __syncthreads();  // the buffer is free for the next round (or the next phase's rows)
  }
}

// xs = LayerNorm(v) of the C-element row v (v = x, or at layer 0 x = resid + branch, stored by
// CTA 0 into s.x), 8 elements per thread and piece, FP32 statistics in two passes.
__device__ void layernorm_to_smem(const Step& s, bool first, const bf16* gamma, const bf16* beta, bf16* xs,
                                  float* red) {
  const int pieces = s.C / 8;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < pieces; i += kThreads) {
    uint4 v;
    if (first) {  // layer 0: the embedding's pair, added and rounded once (step 6's ln_1 prologue)
      const uint4 a = load_cg(s.resid + 8 * i), b = load_cg(s.branch + 8 * i);
      const bf16* ae = reinterpret_cast<const bf16*>(&a);
      const bf16* be = reinterpret_cast<const bf16*>(&b);
      bf16* ve = reinterpret_cast<bf16*>(&v);
#pragma unroll
      for (int e = 0; e < 8; ++e) ve[e] = __float2bfloat16(__bfloat162float(ae[e]) + __bfloat162float(be[e]));
      if (blockIdx.x == 0) reinterpret_cast<uint4*>(s.x)[i] = v;
    } else {
      v = load_cg(s.x + 8 * i);
    }
    reinterpret_cast<uint4*>(xs)[i] = v;
    const bf16* ve = reinterpret_cast<const bf16*>(&v);
#pragma unroll
    for (int e = 0; e < 8; ++e) sum += __bfloat162float(ve[e]);
  }
  const float mean = block_sum<kThreads>(sum, red) / static_cast<float>(s.C);
  float sq = 0.0f;
  for (int k = threadIdx.x; k < s.C; k += kThreads) {
    const float d = __bfloat162float(xs[k]) - mean;
    sq += d * d;
  }
  const float rstd = rsqrtf(block_sum<kThreads>(sq, red + kWarps) / static_cast<float>(s.C) + s.eps);
  for (int k = threadIdx.x; k < s.C; k += kThreads) {
    xs[k] = __float2bfloat16((__bfloat162float(xs[k]) - mean) * rstd * __bfloat162float(gamma[k]) +
                             __bfloat162float(beta[k]));
  }
  __syncthreads();
}

// Phase 2: unit u = (head h, chunk c of keys 0 .. pos). A warp takes every 16th key of the
// chunk: lane l holds q and o at d = l, l + 32, ...; online softmax in FP32; the CTA then merges
// its warps' (m, l, o) and writes the unit's partial (m, l, o[D]).
__device__ void attention_units(const Step& s, const PersistentLayer& w, float* smem_f) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int L = *s.pos + 1, nc = s.units_per_head, units = s.H * nc, D = s.D;
  float* wm = smem_f;       // (kWarps) each warp's max
  float* wl = wm + kWarps;  // (kWarps) each warp's sum
  float* wo = wl + kWarps;  // (kWarps, kMaxD) each warp's o
  for (int u = blockIdx.x; u < units; u += gridDim.x) {
    const int h = u / nc, c = u % nc;
    const int k0 = static_cast<int>(static_cast<long long>(L) * c / nc);
    const int k1 = static_cast<int>(static_cast<long long>(L) * (c + 1) / nc);
    float q[kPerLane], o[kPerLane];
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int d = lane + 32 * i;
      q[i] = d < D ? __bfloat162float(__ldcg(s.qkv + h * D + d)) : 0.0f;
      o[i] = 0.0f;
    }
    const bf16* kh = w.k_cache + static_cast<size_t>(h) * s.P * D;
    const bf16* vh = w.v_cache + static_cast<size_t>(h) * s.P * D;
    float m = -INFINITY, l = 0.0f;
#pragma unroll 2
    for (int j = k0 + warp; j < k1; j += kWarps) {
      float kv[kPerLane], vv[kPerLane];
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) {
        const int d = lane + 32 * i;
        kv[i] = d < D ? __bfloat162float(__ldcg(kh + static_cast<size_t>(j) * D + d)) : 0.0f;
        vv[i] = d < D ? __bfloat162float(__ldcg(vh + static_cast<size_t>(j) * D + d)) : 0.0f;
      }
      float dot = 0.0f;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) dot += q[i] * kv[i];
      const float sc = warp_sum(dot) * s.scale;
      const float mn = fmaxf(m, sc), corr = __expf(m - mn), p = __expf(sc - mn);
      l = l * corr + p;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) o[i] = o[i] * corr + p * vv[i];
      m = mn;
    }
    if (lane == 0) {
      wm[warp] = m;
      wl[warp] = l;
    }
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) wo[warp * kMaxD + lane + 32 * i] = o[i];
    __syncthreads();
    float* out = s.part + static_cast<size_t>(u) * (D + 2);
    float mall = -INFINITY;
    for (int i = 0; i < kWarps; ++i) mall = fmaxf(mall, wm[i]);
    for (int d = threadIdx.x; d < D; d += kThreads) {
      float acc = 0.0f;
      for (int i = 0; i < kWarps; ++i) acc += wm[i] == -INFINITY ? 0.0f : wo[i * kMaxD + d] * __expf(wm[i] - mall);
      out[2 + d] = acc;
    }
    if (threadIdx.x == 0) {
      float lall = 0.0f;
      for (int i = 0; i < kWarps; ++i) lall += wm[i] == -INFINITY ? 0.0f : wl[i] * __expf(wm[i] - mall);
      out[0] = mall;
      out[1] = lall;
    }
    __syncthreads();  // the warps' slots are free for the next unit
  }
}

// Phase 3's input: att (C) = the merge of every head's partials, rounded to BF16, into xs.
// Every unit's (m, l) comes into shared memory first (one trip to L2 for all of them), then
// each unit's factor exp(m_u - m_head) / l_head, then each element sums its head's units'
// o[d] times their factors: the loads of one element are independent of each other, so the
// merge waits for L2 about three times, not once per unit and element. f: 3 * units floats.
__device__ void merge_attention(const Step& s, bf16* xs, float* f) {
  const int nc = s.units_per_head, D = s.D, units = s.H * nc, stride = D + 2;
  float *m = f, *l = f + units, *fac = f + 2 * units;
  for (int u = threadIdx.x; u < units; u += kThreads) {
    m[u] = __ldcg(s.part + static_cast<size_t>(u) * stride);
    l[u] = __ldcg(s.part + static_cast<size_t>(u) * stride + 1);
  }
  __syncthreads();
  for (int u = threadIdx.x; u < units; u += kThreads) {
    const int first = u / nc * nc;
    float mall = -INFINITY;
    for (int c = 0; c < nc; ++c) mall = fmaxf(mall, m[first + c]);
    float den = 0.0f;
    for (int c = 0; c < nc; ++c) den += m[first + c] == -INFINITY ? 0.0f : l[first + c] * __expf(m[first + c] - mall);
    fac[u] = m[u] == -INFINITY ? 0.0f : __expf(m[u] - mall) / den;
  }
  __syncthreads();
  for (int e = threadIdx.x; e < s.C; e += kThreads) {
    const int h = e / D, d = e % D;
    float acc = 0.0f;
    for (int c = 0; c < nc; ++c)
      acc += __ldcg(s.part + static_cast<size_t>(h * nc + c) * stride + 2 + d) * fac[h * nc + c];
    xs[e] = __float2bfloat16(acc);
  }
  __syncthreads();
}

// grid (SMs), block (kThreads), dynamic shared memory: the weight buffer, then xs (4C BF16),
// then the attention's scratch.
__global__ void __launch_bounds__(kThreads, 1) persistent_layers_kernel(const Step s) {
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned char* wbuf = smem;
  bf16* xs = reinterpret_cast<bf16*>(smem + s.wbuf_bytes);
  float* smem_f = reinterpret_cast<float*>(xs + 4 * s.C);  // the attention's per-warp slots
  __shared__ float red[2 * kWarps];                        // block_sum: two exchange arrays
  const int C = s.C;

  load_first_round(s, s.layers[0].attn_w, 3 * C, C, wbuf);
  for (int l = 0; l < s.L; ++l) {
    const PersistentLayer& w = s.layers[l];
    // phase 1: qkv, and the key and value into the cache
    layernorm_to_smem(s, l == 0, w.ln_1_w, w.ln_1_b, xs, red);
    const KvCacheTarget<bf16> kv{w.k_cache, w.v_cache, s.pos, s.H, s.D, s.P};
    gemv_slab(s, w.attn_w, 3 * C, C, xs, wbuf, [&](int n, float acc) {
      const bf16 v = epilogue(acc, w.attn_b, n, Epilogue::Bias);
      s.qkv[n] = v;
      store_kv(kv, n, v);  // rows C .. 3C: the token's key and value
    });
    load_first_round(s, w.attn_proj_w, C, C, wbuf);
    grid_barrier(s.barrier);
    // phase 2: attention partials
    attention_units(s, w, smem_f);
    grid_barrier(s.barrier);
    // phase 3: x += att · attn_projᵀ + b
    merge_attention(s, xs, smem_f);
    gemv_slab(s, w.attn_proj_w, C, C, xs, wbuf, [&](int n, float acc) {
      s.x[n] = __float2bfloat16(__bfloat162float(__ldcg(s.x + n)) + (acc + __bfloat162float(w.attn_proj_b[n])));
    });
    load_first_round(s, w.fc_w, 4 * C, C, wbuf);
    grid_barrier(s.barrier);
    // phase 4: fc = gelu(LN_2(x) · fcᵀ + b)
    layernorm_to_smem(s, false, w.ln_2_w, w.ln_2_b, xs, red);
    gemv_slab(s, w.fc_w, 4 * C, C, xs, wbuf,
              [&](int n, float acc) { s.fc[n] = epilogue(acc, w.fc_b, n, Epilogue::BiasGelu); });
    load_first_round(s, w.fc_proj_w, C, 4 * C, wbuf);
    grid_barrier(s.barrier);
    // phase 5: x += fc · fc_projᵀ + b
    for (int i = threadIdx.x; i < C / 2; i += kThreads) {  // fc (4C) into xs, 16 bytes at a time
      reinterpret_cast<uint4*>(xs)[i] = load_cg(s.fc + 8 * i);
    }
    __syncthreads();
    gemv_slab(s, w.fc_proj_w, C, 4 * C, xs, wbuf, [&](int n, float acc) {
      s.x[n] = __float2bfloat16(__bfloat162float(__ldcg(s.x + n)) + (acc + __bfloat162float(w.fc_proj_b[n])));
    });
    if (l + 1 < s.L) load_first_round(s, s.layers[l + 1].attn_w, 3 * C, C, wbuf);
    grid_barrier(s.barrier);
  }
}

// The dynamic shared memory the kernel asks for: all that one CTA may have, less the
// kernel's own static shared memory.
int smem_optin() {
  static const int bytes = [] {
    int device = 0, n = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    cudaFuncAttributes attr{};
    CUDA_CHECK(cudaFuncGetAttributes(&attr, persistent_layers_kernel));
    return n - static_cast<int>(attr.sharedSizeBytes);
  }();
  return bytes;
}

}  // namespace

std::string persistent_decode_unsupported(int C, int H, int D) {
  if (H * D != C) return "H * D != C";
  if (D > kMaxD) return "head size " + std::to_string(D) + " > " + std::to_string(kMaxD);
  if (C % 8 != 0) return "C = " + std::to_string(C) + " is not a multiple of 8 (16-byte rows)";
  int device = 0, major = 0, coop = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, device));
  if (major < 8) return "compute capability 8.0 or later (cp.async) is needed";
  if (coop == 0) return "the GPU cannot launch cooperative kernels";
  const int units = H * std::max(1, wb::sm_count() / H);
  if (3 * units > 2 * kWarps + kWarps * kMaxD)
    return std::to_string(H) + " heads: too many for the merge's shared memory";
  const long long need = 4LL * C * 2 + (2LL * kWarps + kWarps * kMaxD) * 4 + 4LL * C * 2 /* one row of 4C */;
  if (need > smem_optin()) return "C = " + std::to_string(C) + " needs more shared memory than one CTA has";
  return "";
}

size_t persistent_decode_scratch_bytes(int H) {
  const size_t units = static_cast<size_t>(H) * std::max(1, wb::sm_count() / H);
  return 256 + units * (kMaxD + 2) * sizeof(float);
}

void persistent_decode_layers(const PersistentLayer* layers, int L, const bf16* resid, const bf16* branch, bf16* x,
                              bf16* qkv, bf16* fc, const int* pos, int C, int H, int P, float eps, void* scratch,
                              cudaStream_t stream) {
  const std::string why = persistent_decode_unsupported(C, H, C / H);
  if (!why.empty()) throw std::invalid_argument("persistent_decode_layers: " + why);
  if (layers == nullptr || scratch == nullptr || L < 1) {
    throw std::invalid_argument("persistent_decode_layers: needs L >= 1 layers and persistent_decode_scratch_bytes(H)");
  }
  Step s{};
  s.layers = layers, s.resid = resid, s.branch = branch, s.x = x, s.qkv = qkv, s.fc = fc, s.pos = pos;
  s.L = L, s.C = C, s.H = H, s.D = C / H, s.P = P, s.eps = eps, s.scale = 1.0f / std::sqrt(float(C / H));
  const int sms = wb::sm_count();
  s.units_per_head = std::max(1, sms / H);
  s.barrier = static_cast<unsigned*>(scratch);
  s.part = reinterpret_cast<float*>(static_cast<char*>(scratch) + 256);
  const size_t tail = size_t(4) * C * sizeof(bf16) + (2 * kWarps + kWarps * kMaxD) * sizeof(float);
  const size_t smem = static_cast<size_t>(smem_optin());
  s.wbuf_bytes = static_cast<unsigned>((smem - tail) / 16 * 16);
  static bool configured = false;
  if (!configured) {
    CUDA_CHECK(cudaFuncSetAttribute(persistent_layers_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem)));
    configured = true;
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(sms);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeCooperative;
  attr.val.cooperative = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  CUDA_CHECK(cudaLaunchKernelEx(&cfg, persistent_layers_kernel, s));
}

}  // namespace ch09::solution
