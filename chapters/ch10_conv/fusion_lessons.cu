// ch10_lessons — the other half of chapter 10's fusion lesson: two cases where fusing more
// does not pay (docs/ch10-conv.md, "When not to fuse").
//
//   over-fusion   ResNet-50's first bottleneck at batch 32, 56 x 56: conv 3x3 64->64 + BN +
//                 ReLU, then conv 1x1 64->256 + BN + residual + ReLU. Run as two kernels,
//                 the 3x3's output goes to DRAM and comes back. Fused into one kernel, each
//                 warp keeps its 32 pixels x 64 channels of the 3x3's output in registers as
//                 the A fragments of the 1x1's GEMM; holding the 1x1's whole output tile
//                 (32 x 256 FP32 accumulators, 256 per thread) as well does not fit in 255
//                 registers, and ptxas spills to local memory. The same fusion with the 1x1's
//                 output taken 64 channels at a time fits. All three are timed and their
//                 registers, local memory and occupancy printed; their outputs are checked
//                 against the book's v4 on the same two layers.
//   two streams   two independent small convolutions whose grids each fill a fraction of the
//                 GPU, one after the other on one stream, then forked onto two non-blocking
//                 streams and joined with events, with the book's v4. Fusing them into one
//                 kernel is not the only way to fill the GPU; the outputs of both forms must
//                 be equal bit for bit.
//
// The lesson's kernels live here, not in the solution ladder: they are exhibits, not steps.
//
// usage: build/ch10/bin/ch10_lessons [--samples=30] [--only=all|fusion|streams]
// Exit 1 when an output differs from its reference beyond the stated tolerance, 2 for a bad
// command line, 77 (skipped) without a GPU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "device/async_copy.cuh"
#include "device/math.cuh"
#include "device/mma.cuh"
#include "measure/timing.cuh"
#include "runtime/buffers.cuh"
#include "runtime/errors.cuh"
#include "runtime/lesson_main.h"
#include "runtime/options.h"
#include "ch10.cuh"
#include "conv_common.cuh"
#include "ladder.cuh"
#include "runtime/launch_helpers.cuh"

namespace {

using ch10::bf16;
using ch10::BnParams;
using ch10::ConvShape;
using ch10::solution::apply_epilogue;
using ch10::solution::fold_bn;
using ch10::solution::Folded;

// --- the lesson's kernels -------------------------------------------------------------------
//
// v4's main loop (cp.async double buffer, ldmatrix + mma.sync m16n8k16, 80-byte rows) on a
// (128, 64) block tile: 4 warps stacked along the pixels, each (32, 64), so that one warp
// holds ALL 64 output channels of its pixels, which the fused kernel needs (the 1x1 after it
// sums over every channel of a pixel). C % 8 == 0 only: 16-byte copies.

constexpr int BM = 128, BN = 64, BK = 32, kStages = 2;
constexpr int kWarps = 4, kThreads = 32 * kWarps;
constexpr int WM = BM / kWarps;                   // 32 pixels per warp, all BN channels
constexpr int MI = WM / 16, NI = BN / 8;          // 2 x 8 mma tiles of 16 x 8: 64 accumulators
constexpr int kLd = BK + 8;                       // 80-byte rows: ldmatrix without bank conflicts
constexpr int kPieces = BK / 8;                   // 16-byte pieces per tile row
constexpr int kRowsPerPass = kThreads / kPieces;  // 32 tile rows per pass of the block
constexpr int kRowsA = BM / kRowsPerPass;         // 4 rows of A per thread
constexpr int kRowsB = BN / kRowsPerPass;         // 2 rows of B per thread
constexpr int kMid = BN;                          // the bottleneck's middle width: one tile of GEMM 1
constexpr int kOut = 256;                         // the bottleneck's output width (the 1x1's K)
static_assert(BM % kRowsPerPass == 0 && BN % kRowsPerPass == 0, "whole passes over the tiles");
static_assert(NI % 2 == 0, "B fragments come in pairs of n8 tiles (one ldmatrix.x4)");

struct Dims {
  ConvShape s;
  int P, Q, M, Kg;
};

Dims dims_of(const ConvShape& s) {
  ch10::require_valid(s);
  Dims d{s, s.P(), s.Q(), 0, s.R * s.S * s.C};
  d.M = s.N * d.P * d.Q;
  return d;
}

// acc = the block's (BM, BN) tile of A x B^T over all of Kg: pixels m0.., filters k0...
// Lane (g, q4) of warp wm ends with rows wm * WM + i * 16 + g (+ 8), columns j * 8 + 2 q4 (+ 1)
// in acc[i][j][0..3], the mma accumulator layout.
__device__ __forceinline__ void main_loop(const bf16* __restrict__ x, const bf16* __restrict__ w, const Dims& d, int m0,
                                          int k0, bf16 (*sA)[BM][kLd], bf16 (*sB)[BN][kLd], float (&acc)[MI][NI][4]) {
  const int tid = threadIdx.x, lane = tid % 32, wm = tid / 32;
  const ch10::solution::Im2colCopies<kRowsA, kRowsB, kRowsPerPass, kPieces> copies(d.s, d.P, d.Q, d.M, m0, tid);
  auto load_stage = [&](int stage, int kk0) { copies.copy16(sA[stage], sB[stage], x, w, d.s, d.Kg, k0, kk0); };

  const int steps = wb::ceil_div(d.Kg, BK);
  load_stage(0, 0);
  wb::ptx::cp_async_commit();
  for (int t = 0; t < steps; ++t) {
    if (t + 1 < steps) {
      load_stage((t + 1) % kStages, (t + 1) * BK);
      wb::ptx::cp_async_commit();
      wb::ptx::cp_async_wait<1>();
    } else {
      wb::ptx::cp_async_wait<0>();
    }
    __syncthreads();
    const int st = t % kStages;
#pragma unroll
    for (int ks = 0; ks < BK; ks += 16) {
      uint32_t a[MI][4];
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        wb::ptx::ldmatrix_x4(a[i], wb::ptx::smem_u32(&sA[st][wm * WM + i * 16 + lane % 16][ks + lane / 16 * 8]));
      }
#pragma unroll
      for (int jj = 0; jj < NI / 2; ++jj) {
        uint32_t b[4];
        const bf16* p = &sB[st][jj * 16 + (lane & 7) + (lane >> 4) * 8][ks + ((lane >> 3) & 1) * 8];
        wb::ptx::ldmatrix_x4(b, wb::ptx::smem_u32(p));
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          wb::ptx::mma_16816<bf16>(acc[i][2 * jj], a[i], b[0], b[1]);
          wb::ptx::mma_16816<bf16>(acc[i][2 * jj + 1], a[i], b[2], b[3]);
        }
      }
    }
    __syncthreads();  // the next step's copies overwrite the stage read in this one
  }
}

// row(i, half, m) for each accumulator row (i, half) of lane (g, q4) in warp wm whose pixel m
// (the mma accumulator layout main_loop leaves) lies below M: both kernels' epilogues.
template <class Row>
__device__ __forceinline__ void for_each_row(int m0, int wm, int g, int M, Row row) {
#pragma unroll
  for (int i = 0; i < MI; ++i) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int m = m0 + wm * WM + i * 16 + g + half * 8;
      if (m >= M) continue;
      row(i, half, m);
    }
  }
}

// One conv + bias + BN + ReLU (+ residual): the unfused step, one layer per launch.
// grid (ceil(M / BM), ceil(K / BN)), block (kThreads). C % 8 == 0, K even.
__global__ void __launch_bounds__(kThreads)
    conv_bn_relu_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, BnParams bn,
                        const bf16* __restrict__ residual, bf16* __restrict__ y, Dims d) {
  __shared__ __align__(128) bf16 sA[kStages][BM][kLd];
  __shared__ __align__(128) bf16 sB[kStages][BN][kLd];
  __shared__ Folded sF[BN];
  const int m0 = blockIdx.x * BM, k0 = blockIdx.y * BN, tid = threadIdx.x;
  if (tid < BN && k0 + tid < d.s.K) sF[tid] = fold_bn(bn, k0 + tid);  // visible after the loop's first barrier

  float acc[MI][NI][4] = {};
  main_loop(x, w, d, m0, k0, sA, sB, acc);

  const int lane = tid % 32, wm = tid / 32, g = lane / 4, q4 = lane % 4;
  for_each_row(
      m0, wm, g, d.M, [&](int i, int half, int m) __attribute__((always_inline)) {
#pragma unroll
        for (int j = 0; j < NI; ++j) {
          const int col = j * 8 + 2 * q4, k = k0 + col;
          if (k >= d.s.K) continue;  // K even: k + 1 < K too
          const int64_t at = int64_t(m) * d.s.K + k;
          float2 res = make_float2(0.0f, 0.0f);
          if (residual) res = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(residual + at));
          *reinterpret_cast<__nv_bfloat162*>(y + at) =
              __floats2bfloat162_rn(apply_epilogue(acc[i][j][2 * half], sF[col], res.x),
                                    apply_epilogue(acc[i][j][2 * half + 1], sF[col + 1], res.y));
        }
      });
}

// Two FP32 values as the bf16x2 register of an mma fragment (the lower column in the low half).
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  return u;
}

// The bottleneck's 3x3 and 1x1 in one kernel:
//   t = relu(bn1(conv3x3(x, w1)))                 (M, 64): never leaves the registers
//   y = relu(bn2(t w2^T) + residual)              (M, 256): w2 is the 1x1's (256, 64) KRSC;
//                                                 the residual is required here
// After GEMM 1, lane (g, q4) holds t's rows g and g + 8, columns 2 q4, 2 q4 + 1 of every n8
// tile: exactly the registers of the A fragment of GEMM 2 (a 16 x 16 A fragment is two
// neighbouring 16 x 8 accumulator tiles), so t goes from accumulators to A fragments with
// one BF16 rounding each, the same rounding the two-kernel form does when it stores t.
//
// kChunk: how many of the 256 output channels a warp holds at once. kChunk = 256 is the
// over-fused form: 2 x 32 x 4 = 256 FP32 accumulators per thread, on top of t's 32 fragment
// registers, past the 255 a thread may have: ptxas spills. kChunk = 64 loops 4 times over
// 64 accumulators and fits.
// grid (ceil(M / BM)), block (kThreads). conv 1: C % 8 == 0, K == kMid.
template <int kChunk>
__global__ void __launch_bounds__(kThreads)
    bottleneck_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w1, BnParams bn1,
                      const bf16* __restrict__ w2, BnParams bn2, const bf16* __restrict__ residual,
                      bf16* __restrict__ y, Dims d) {
  static_assert(kOut % kChunk == 0 && kChunk % 8 == 0, "whole n8 tiles, whole chunks");
  constexpr int NJ = kChunk / 8;
  __shared__ __align__(128) bf16 sA[kStages][BM][kLd];
  __shared__ __align__(128) bf16 sB[kStages][BN][kLd];
  __shared__ Folded sF1[kMid], sF2[kOut];
  const int m0 = blockIdx.x * BM, tid = threadIdx.x;
  if (tid < kMid) sF1[tid] = fold_bn(bn1, tid);
  for (int k = tid; k < kOut; k += kThreads) sF2[k] = fold_bn(bn2, k);

  float acc[MI][NI][4] = {};
  main_loop(x, w1, d, m0, 0, sA, sB, acc);

  const int lane = tid % 32, wm = tid / 32, g = lane / 4, q4 = lane % 4;
  // t as GEMM 2's A fragments: k16 chunk kc of t is n8 tiles 2 kc and 2 kc + 1 of GEMM 1.
  uint32_t ta[MI][kMid / 16][4];
#pragma unroll
  for (int i = 0; i < MI; ++i) {
#pragma unroll
    for (int kc = 0; kc < kMid / 16; ++kc) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // h: columns 16 kc + 8 h + 2 q4 (+ 1)
        const float* a = acc[i][2 * kc + h];
        const int col = 16 * kc + 8 * h + 2 * q4;
        ta[i][kc][2 * h] = pack_bf16x2(apply_epilogue(a[0], sF1[col], 0.0f), apply_epilogue(a[1], sF1[col + 1], 0.0f));
        ta[i][kc][2 * h + 1] =
            pack_bf16x2(apply_epilogue(a[2], sF1[col], 0.0f), apply_epilogue(a[3], sF1[col + 1], 0.0f));
      }
    }
  }

#pragma unroll 1
  for (int n0 = 0; n0 < kOut; n0 += kChunk) {
    float acc2[MI][NJ][4] = {};
    // k outer, n inner, as a GEMM's loop is written: every accumulator of the chunk is live
    // from the first k16 step to the last.
#pragma unroll
    for (int kc = 0; kc < kMid / 16; ++kc) {
#pragma unroll
      for (int j = 0; j < NJ; ++j) {
        // B fragment straight from w2 (32 KB, read by every block: L1 and L2 hits): b0 holds
        // w2[n][k], w2[n][k + 1] at n = n0 + 8 j + g, k = 16 kc + 2 q4; b1 the same at k + 8.
        const bf16* b = w2 + (n0 + j * 8 + g) * kMid + kc * 16 + 2 * q4;
        const uint32_t b0 = __ldg(reinterpret_cast<const unsigned int*>(b));
        const uint32_t b1 = __ldg(reinterpret_cast<const unsigned int*>(b + 8));
#pragma unroll
        for (int i = 0; i < MI; ++i) wb::ptx::mma_16816<bf16>(acc2[i][j], ta[i][kc], b0, b1);
      }
    }
    for_each_row(
        m0, wm, g, d.M, [&](int i, int half, int m) __attribute__((always_inline)) {
#pragma unroll
          for (int j = 0; j < NJ; ++j) {
            const int k = n0 + j * 8 + 2 * q4;
            const int64_t at = int64_t(m) * kOut + k;
            const float2 res = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(residual + at));
            *reinterpret_cast<__nv_bfloat162*>(y + at) =
                __floats2bfloat162_rn(apply_epilogue(acc2[i][j][2 * half], sF2[k], res.x),
                                      apply_epilogue(acc2[i][j][2 * half + 1], sF2[k + 1], res.y));
          }
        });
  }
}

void conv_bn_relu(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const ConvShape& s,
                  cudaStream_t stream) {
  const Dims d = dims_of(s);
  if (s.C % 8 != 0 || s.K % 2 != 0) throw std::invalid_argument("the lesson's conv kernel needs C % 8 == 0, K even");
  const dim3 grid(unsigned(wb::ceil_div(d.M, BM)), unsigned(wb::ceil_div(s.K, BN)));
  conv_bn_relu_kernel<<<grid, kThreads, 0, stream>>>(x, w, bn, residual, y, d);
  WB_CHECK_LAUNCH();
}

// s1: the 3x3 (K == kMid); the 1x1 is (s1.N, P, Q, kMid) -> kOut, stride 1, no padding.
template <int kChunk>
void bottleneck(const bf16* x, const bf16* w1, BnParams bn1, const bf16* w2, BnParams bn2, const bf16* residual,
                bf16* y, const ConvShape& s1, cudaStream_t stream) {
  const Dims d = dims_of(s1);
  if (s1.C % 8 != 0 || s1.K != kMid) throw std::invalid_argument("the fused bottleneck needs C % 8 == 0, K == 64");
  bottleneck_kernel<kChunk>
      <<<unsigned(wb::ceil_div(d.M, BM)), kThreads, 0, stream>>>(x, w1, bn1, w2, bn2, residual, y, d);
  WB_CHECK_LAUNCH();
}

// --- the program ----------------------------------------------------------------------------

struct Options {
  int samples = 30;
  std::string only = "all";
};

// The options, checked before the GPU is looked for (CLI11: runtime/options.h); a mistake
// exits with status 2 and a message naming it.
Options parse(int argc, char** argv) {
  Options o;
  int64_t samples = o.samples;
  CLI::App app(
      "Chapter 10's other half of the fusion lesson: an over-fused bottleneck whose registers spill against the "
      "same two layers unfused, and two small independent convolutions on one stream against two.",
      "ch10_lessons");
  wb::cli::conventions(app);
  app.add_option("--samples", samples, "timed samples per measurement, L2 flushed before each (default 30)")
      ->transform(wb::cli::whole_number(1, 10000));
  app.add_option("--only", o.only, "run one part: fusion, streams, or all (default)")
      ->transform(wb::cli::one_of({"all", "fusion", "streams"}));
  try {
    if (!wb::cli::parse(app, argc, argv)) std::exit(0);
  } catch (const wb::UsageError& e) {
    std::exit(wb::cli::refuse(app, e.what()));
  }
  o.samples = static_cast<int>(samples);
  return o;
}

// Median over `samples` of one call of `fn` on `s`, in microseconds; before each sample the
// L2 is flushed on `s`, outside the events. Two warm-up calls first.
double median_us(cudaStream_t s, wb::L2Flusher& flusher, int samples, const std::function<void()>& fn) {
  fn();
  fn();
  CUDA_CHECK(cudaStreamSynchronize(s));
  wb::Event start, stop;
  std::vector<double> t;
  for (int i = 0; i < samples; ++i) {
    flusher.flush(s);
    start.record(s);
    fn();
    stop.record(s);
    CUDA_CHECK(cudaEventSynchronize(stop.get()));
    t.push_back(1e3 * stop.ms_since(start));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Deterministic uniform values in [lo, hi), host side (splitmix64).
std::vector<float> uniform(size_t n, uint64_t seed, float lo, float hi) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t z = (seed + i) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    v[i] = lo + (hi - lo) * static_cast<float>(z >> 40) / 16777216.0f;
  }
  return v;
}

wb::DeviceBuffer<bf16> bf16_buffer(size_t n, uint64_t seed, float lo, float hi) {
  const std::vector<float> f = uniform(n, seed, lo, hi);
  std::vector<bf16> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = __float2bfloat16(f[i]);
  wb::DeviceBuffer<bf16> d(n);
  d.upload(h);
  return d;
}

// The filters of a layer: uniform with variance 1 / (R S C), so every layer's outputs stay O(1).
wb::DeviceBuffer<bf16> filters(const ConvShape& s, uint64_t seed) {
  const float a = std::sqrt(3.0f / float(s.R * s.S * s.C));
  return bf16_buffer(size_t(s.K) * s.R * s.S * s.C, seed, -a, a);
}

// bias, gamma, beta, mean, var of K channels, near an identity BatchNorm.
struct Bn {
  wb::DeviceBuffer<float> p;
  BnParams params;
  explicit Bn(int K, uint64_t seed) : p(size_t(5) * K) {
    std::vector<float> h = uniform(size_t(5) * K, seed, -0.1f, 0.1f);
    for (int k = 0; k < K; ++k) h[size_t(K) + k] += 1.0f;      // gamma in [0.9, 1.1)
    for (int k = 0; k < K; ++k) h[size_t(4) * K + k] += 1.0f;  // var in [0.9, 1.1)
    p.upload(h);
    const float* b = p.data();
    params = {b, b + K, b + 2 * K, b + 3 * K, b + 4 * K, 1e-5f};
  }
};

size_t out_elems(const ConvShape& s) { return size_t(s.N) * s.P() * s.Q() * s.K; }

std::vector<float> to_host(const wb::DeviceBuffer<bf16>& d) {
  const std::vector<bf16> h = d.download();
  std::vector<float> f(h.size());
  for (size_t i = 0; i < h.size(); ++i) f[i] = __bfloat162float(h[i]);
  return f;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) {
    const float e = std::fabs(a[i] - b[i]);
    if (!(e <= m)) m = e;  // a NaN wins
  }
  return m;
}

struct KernelInfo {
  int regs = 0, local_bytes = 0, blocks_per_sm = 0;
};

template <class Kernel>
KernelInfo info_of(Kernel* kernel) {
  cudaFuncAttributes a{};
  CUDA_CHECK(cudaFuncGetAttributes(&a, kernel));
  KernelInfo k;
  k.regs = a.numRegs;
  k.local_bytes = static_cast<int>(a.localSizeBytes);
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&k.blocks_per_sm, kernel, kThreads, 0));
  return k;
}

// --- part 1: over-fusion --------------------------------------------------------------------

bool fusion_section(const Options& o, cudaStream_t s, wb::L2Flusher& flusher) {
  const ConvShape s1{32, 56, 56, 64, kMid, 3, 3, 1, 1};    // 3x3 64 -> 64, ResNet-50's conv2_x
  const ConvShape s2{32, 56, 56, kMid, kOut, 1, 1, 1, 0};  // the 1x1 64 -> 256 after it
  const size_t M = size_t(s1.N) * s1.P() * s1.Q();
  auto x = bf16_buffer(size_t(s1.N) * s1.H * s1.W * s1.C, 1, -1.0f, 1.0f);
  auto w1 = filters(s1, 2), w2 = filters(s2, 3);
  auto residual = bf16_buffer(M * kOut, 4, -1.0f, 1.0f);
  Bn bn1(kMid, 5), bn2(kOut, 6);
  wb::DeviceBuffer<bf16> t(M * kMid), y_v4(M * kOut), y_sep(M * kOut), y_chunk(M * kOut), y_over(M * kOut);

  auto book = [&] {
    ch10::solution::v4_implicit_gemm_mma(x.data(), w1.data(), bn1.params, nullptr, t.data(), s1, s);
    ch10::solution::v4_implicit_gemm_mma(t.data(), w2.data(), bn2.params, residual.data(), y_v4.data(), s2, s);
  };
  auto separate = [&] {
    conv_bn_relu(x.data(), w1.data(), bn1.params, nullptr, t.data(), s1, s);
    conv_bn_relu(t.data(), w2.data(), bn2.params, residual.data(), y_sep.data(), s2, s);
  };
  auto chunked = [&] {
    bottleneck<64>(x.data(), w1.data(), bn1.params, w2.data(), bn2.params, residual.data(), y_chunk.data(), s1, s);
  };
  auto over = [&] {
    bottleneck<kOut>(x.data(), w1.data(), bn1.params, w2.data(), bn2.params, residual.data(), y_over.data(), s1, s);
  };

  std::printf(
      "over-fusion: ResNet-50's first bottleneck, batch 32, 56 x 56, BF16 NHWC:\n"
      "  conv 3x3 64 -> 64 + BN + ReLU, then conv 1x1 64 -> 256 + BN + residual + ReLU\n");
  book();
  separate();
  chunked();
  over();
  CUDA_CHECK(cudaStreamSynchronize(s));
  const std::vector<float> ref = to_host(y_v4);
  float top = 0.0f;
  for (float v : ref) top = std::max(top, std::fabs(v));
  // Each form rounds t and y to BF16 once; they may differ in the FP32 order of the sums only.
  // 2^-6 of the largest output is 4 BF16 units in the last place there.
  const float tol = std::ldexp(std::max(top, 1.0f), -6);
  struct Check {
    const char* what;
    float diff;
  };
  const Check checks[] = {{"separate (lesson) vs the book's v4", max_abs_diff(to_host(y_sep), ref)},
                          {"fused, 64-channel chunks vs the book's v4", max_abs_diff(to_host(y_chunk), ref)},
                          {"over-fused vs the book's v4", max_abs_diff(to_host(y_over), ref)}};
  bool ok = true;
  std::printf("  checks (max |difference| over %zu outputs, largest |output| %.3f, tolerance %.4f):\n", ref.size(), top,
              tol);
  for (const Check& c : checks) {
    const bool pass = c.diff <= tol;
    ok = ok && pass;
    std::printf("    %-44s %.5f   %s\n", c.what, c.diff, pass ? "ok" : "WRONG");
  }
  if (!ok) {
    std::printf("  not timed: an output is wrong\n");
    return false;
  }

  const double t_book = median_us(s, flusher, o.samples, book);
  const double t_sep = median_us(s, flusher, o.samples, separate);
  const double t_chunk = median_us(s, flusher, o.samples, chunked);
  const double t_over = median_us(s, flusher, o.samples, over);
  const KernelInfo k_sep = info_of(conv_bn_relu_kernel), k_chunk = info_of(bottleneck_kernel<64>),
                   k_over = info_of(bottleneck_kernel<kOut>);
  std::printf("  median of %d, L2 flushed before each sample; %d threads per block\n", o.samples, kThreads);
  std::printf("  %-40s %9s %11s %11s %15s %10s\n", "form", "us", "vs separate", "regs/thread", "local B/thread",
              "blocks/SM");
  auto row = [&](const char* what, double us, const KernelInfo* k) {
    std::printf("  %-40s %9.1f %10.2fx", what, us, us / t_sep);
    if (k) std::printf(" %11d %15d %10d", k->regs, k->local_bytes, k->blocks_per_sm);
    std::printf("\n");
  };
  row("book's v4, two kernels", t_book, nullptr);
  row("separate: lesson's conv kernel, two", t_sep, &k_sep);
  row("fused, 1x1 in 64-channel chunks", t_chunk, &k_chunk);
  row("over-fused, all 256 channels at once", t_over, &k_over);
  std::printf("  the over-fused kernel takes %.2fx the separate pair's time (%.2fx the chunked fusion's)\n",
              t_over / t_sep, t_over / t_chunk);
  std::printf("  bytes the fusion keeps out of DRAM: t written and read back, %.1f MB\n",
              2.0 * double(M) * kMid * sizeof(bf16) / 1e6);
  return true;
}

// --- part 2: two streams --------------------------------------------------------------------

bool streams_section(const Options& o, cudaStream_t s, wb::L2Flusher& flusher) {
  // Two independent layers at batch 8, each too small to fill the GPU with v4's (128, 128) tiles.
  const ConvShape sa{8, 28, 28, 512, 128, 1, 1, 1, 0};  // 1x1 512 -> 128 at 28 x 28
  const ConvShape sb{8, 14, 14, 256, 256, 3, 3, 1, 1};  // 3x3 256 -> 256 at 14 x 14
  auto blocks = [](const ConvShape& c) {
    return wb::ceil_div(c.N * c.P() * c.Q(), 128) * wb::ceil_div(c.K, 128);  // v4's grid
  };
  const int sms = wb::sm_count();
  auto xa = bf16_buffer(size_t(sa.N) * sa.H * sa.W * sa.C, 11, -1.0f, 1.0f);
  auto xb = bf16_buffer(size_t(sb.N) * sb.H * sb.W * sb.C, 12, -1.0f, 1.0f);
  auto w_a = filters(sa, 13), w_b = filters(sb, 14);
  Bn bna(sa.K, 15), bnb(sb.K, 16);
  wb::DeviceBuffer<bf16> ya(out_elems(sa)), yb(out_elems(sb)), ya2(out_elems(sa)), yb2(out_elems(sb));

  std::printf("\ntwo streams: two independent convolutions, batch 8, BF16 NHWC, the book's v4 (%d SMs)\n", sms);
  std::printf("  A: conv 1x1 512 -> 128 at 28 x 28: %d blocks of 256 threads\n", blocks(sa));
  std::printf("  B: conv 3x3 256 -> 256 at 14 x 14: %d blocks of 256 threads\n", blocks(sb));
  std::printf("  each is less than one block per SM; together %d blocks, still under one wave\n",
              blocks(sa) + blocks(sb));

  wb::Stream other;
  wb::Event forked, joined;
  auto conv_a = [&](bf16* y, cudaStream_t st) {
    ch10::solution::v4_implicit_gemm_mma(xa.data(), w_a.data(), bna.params, nullptr, y, sa, st);
  };
  auto conv_b = [&](bf16* y, cudaStream_t st) {
    ch10::solution::v4_implicit_gemm_mma(xb.data(), w_b.data(), bnb.params, nullptr, y, sb, st);
  };
  auto serial = [&] {
    conv_a(ya.data(), s);
    conv_b(yb.data(), s);
  };
  // Fork: `other` waits for everything before this point on s; join: s waits for `other`.
  auto concurrent = [&] {
    forked.record(s);
    CUDA_CHECK(cudaStreamWaitEvent(other.get(), forked.get()));
    conv_a(ya2.data(), s);
    conv_b(yb2.data(), other.get());
    joined.record(other.get());
    CUDA_CHECK(cudaStreamWaitEvent(s, joined.get()));
  };

  serial();
  // A NaN no arithmetic makes, so an output the two-stream form left unwritten cannot pass.
  wb::fill_pattern(ya2.data(), ya2.bytes(), 0x7FA5u, 2, s);
  wb::fill_pattern(yb2.data(), yb2.bytes(), 0x7FA5u, 2, s);
  concurrent();
  CUDA_CHECK(cudaStreamSynchronize(s));
  auto same_bits = [](const wb::DeviceBuffer<bf16>& p, const wb::DeviceBuffer<bf16>& q) {
    const std::vector<bf16> hp = p.download(), hq = q.download();
    return std::memcmp(hp.data(), hq.data(), hp.size() * sizeof(bf16)) == 0;
  };
  const bool same_a = same_bits(ya, ya2), same_b = same_bits(yb, yb2);
  std::printf("  outputs of the two-stream form equal the serial ones bit for bit: A %s, B %s\n", same_a ? "yes" : "NO",
              same_b ? "yes" : "NO");
  if (!(same_a && same_b)) {
    std::printf("  not timed: an output differs\n");
    return false;
  }

  const double t_a = median_us(s, flusher, o.samples, [&] { conv_a(ya.data(), s); });
  const double t_b = median_us(s, flusher, o.samples, [&] { conv_b(yb.data(), s); });
  const double t_serial = median_us(s, flusher, o.samples, serial);
  const double t_two = median_us(s, flusher, o.samples, concurrent);
  std::printf("  median of %d, L2 flushed before each sample\n", o.samples);
  std::printf("  %-40s %9.1f us\n", "A alone", t_a);
  std::printf("  %-40s %9.1f us\n", "B alone", t_b);
  std::printf("  %-40s %9.1f us\n", "A then B, one stream", t_serial);
  std::printf("  %-40s %9.1f us   %.2fx faster than one stream (ideal %.2fx: the longer alone)\n",
              "A and B on two streams, fork/join", t_two, t_serial / t_two, t_serial / std::max(t_a, t_b));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  return wb::run_lesson("ch10_lessons", [&] {
    wb::Stream s;
    wb::L2Flusher flusher;
    bool ok = true;
    if (o.only != "streams") ok = fusion_section(o, s, flusher) && ok;
    if (o.only != "fusion") ok = streams_section(o, s, flusher) && ok;
    return ok ? 0 : 1;
  });
}
