// Step 13 (Hopper sm_90a only) — v12's kernel, with the bias loaded ahead of the K loop and
// the tile per shape taken from a measured table.
//
// What changes over v12_wgmma_epilogue, and why (Nsight Compute on v12 at 512 x 2304 x 768,
// an H200: 12.5 µs, the SMs busy 75 % of it and issuing on 27 % of their cycles; the top stall,
// 30 % of a warp's cycles, is waiting on an L1TEX load):
//   * the bias, ahead. v12's epilogue loads bias[c], bias[c + 1] for each 8-column chunk and
//     then stores the chunk. y and bias are both plain pointers, so the compiler may not move a
//     chunk's bias load above the previous chunk's stores: each chunk pays a load's latency
//     after the last wgmma. Here each consumer thread loads its column pairs (WN / 8 of them)
//     into registers before the tile's K loop (kmajor_gemm_kernel's kColumnsAhead path,
//     harness/device/wgmma_gemm.cuh), where the latency hides behind the wgmmas; the epilogue
//     is arithmetic and stores only. Values and rounding are v12's.
//   * the tile, measured. v12 picks its tile with a cost model (a 64-deep step costs the larger
//     of its math and its L2 bytes; waves; a fixed fill). On GPT-2's prefill shapes the model
//     and the GPU disagree: every tile of the list below was timed on an H200 for each shape
//     (docs/ch09-transformer.md, "The prefill GEMM, measured tiles"), and the table holds the
//     winner. Shapes outside the table (another M, N or K) use v12's model over the same list.
//
// Everything else is v12's: TMA boxes of x and W in the 128-byte swizzle, a producer and two
// consumer warpgroups, full / empty mbarriers, up to 8 stages of 64, wgmma m64nWNk16 with both
// operands K-major, bias + GELU in FP32 on the registers, one rounding, 4-byte pair stores.
//
// Run: build/ch09/bin/ch09_bench --full --op=linear_bias/bf16 --impl=v13_wgmma_tuned,v12_wgmma_epilogue,cublaslt
#include <cmath>
#include <cstdint>

#include "epilogue.cuh"
#include "wgmma_linear.cuh"

namespace ch09::solution::hopper {

// v12's BiasStore with the bias of a column pair passed in (kColumnsAhead): the kernel loads
// columns(c) for each of the thread's pairs before the K loop. (Outside the unnamed namespace:
// only device code calls it.)
struct BiasAheadStore {
  static constexpr bool kColumnsAhead = true;
  const bf16* b;
  bf16* y;
  int M, N;
  Epilogue epi;
  bool pairs;

  // The bias of columns c and c + 1 (0 past N, or when the op has none).
  __device__ __forceinline__ float2 columns(int c) const {
    if (epi == Epilogue::None || c >= N) return make_float2(0.0f, 0.0f);
    return make_float2(to_float(b[c]), c + 1 < N ? to_float(b[c + 1]) : 0.0f);
  }
  __device__ __forceinline__ void row(int r, int c, float2 v, float2 bias, bool two) const {
    if (r >= M) return;
    const bf16 y0 = epilogue_value<bf16>(v.x, bias.x, epi);
    bf16* dst = y + size_t(r) * N + c;
    if (two) {
      const bf16 y1 = epilogue_value<bf16>(v.y, bias.y, epi);
      if (pairs) {
        *reinterpret_cast<__nv_bfloat162*>(dst) = __halves2bfloat162(y0, y1);
      } else {
        dst[0] = y0;
        dst[1] = y1;
      }
    } else {
      dst[0] = y0;
    }
  }
  __device__ __forceinline__ void operator()(int r, int c, float2 lo, float2 hi, float2 bias) const {
    if (c >= N) return;
    const bool two = c + 1 < N;
    row(r, c, lo, bias, two);
    row(r + 8, c, hi, bias, two);
  }
};

namespace {

using linear::Tile;

template <class T>
void launch(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi, int sms,
            cudaStream_t stream) {
  const bool pairs = N % 2 == 0 && reinterpret_cast<uintptr_t>(y) % 4 == 0;
  linear::launch<T>(x, w, M, N, K, BiasAheadStore{b, y, M, N, epi, pairs}, sms, stream, "v13_wgmma_tuned");
}

struct Choice {
  int bm, bn;
  void (*run)(const bf16*, const bf16*, const bf16*, bf16*, int, int, int, Epilogue, int, cudaStream_t);
};
// v12's tiles and the narrower ones the measurements asked for (each consumer's wgmma is
// m64n(BN / 2) when BM = 64).
constexpr Choice kChoices[] = {
    {128, 256, &launch<Tile<128, 256>>}, {128, 208, &launch<Tile<128, 208>>}, {128, 160, &launch<Tile<128, 160>>},
    {128, 128, &launch<Tile<128, 128>>}, {128, 96, &launch<Tile<128, 96>>},   {128, 72, &launch<Tile<128, 72>>},
    {128, 64, &launch<Tile<128, 64>>},   {64, 144, &launch<Tile<64, 144>>},   {64, 128, &launch<Tile<64, 128>>},
    {64, 112, &launch<Tile<64, 112>>},   {64, 96, &launch<Tile<64, 96>>},     {64, 64, &launch<Tile<64, 64>>},
    {64, 48, &launch<Tile<64, 48>>},
};

// The measured winners on GPT-2's linears at up to 1,024 tokens (an H200, 132 SMs; the docs'
// table): N, K -> the tile.
struct Measured {
  int N, K, bm, bn;
};
constexpr Measured kMeasured[] = {
    {2304, 768, 128, 72}, {3072, 768, 128, 96}, {768, 768, 64, 48},     {768, 3072, 64, 48},
    {4800, 1600, 128, 160}, {6400, 1600, 128, 208}, {1600, 1600, 64, 112}, {1600, 6400, 64, 112},
};

const Choice* find(int bm, int bn) {
  for (const Choice& c : kChoices) {
    if (c.bm == bm && c.bn == bn) return &c;
  }
  return nullptr;
}

// v12's cost model (linear/hopper/v12_wgmma_epilogue.cu says why), for shapes outside the table.
double score(const Choice& c, int M, int N, int K, int sms) {
  const double tiles = double(ceil_div(M, c.bm)) * ceil_div(N, c.bn);
  const double waves = std::ceil(tiles / sms);
  const double math = c.bm * c.bn / 32.0, bytes = (c.bm + c.bn) * 2.0;  // cycles per 64-deep step
  return waves * (ceil_div(K, 64) * std::max(math, bytes) + 1500.0);
}

}  // namespace

void linear_wgmma_tuned(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                        cudaStream_t stream) {
  const int sms = linear::sm_count();
  const Choice* best = nullptr;
  if (M <= 1024 && sms == 132) {
    for (const Measured& m : kMeasured) {
      if (m.N == N && m.K == K) best = find(m.bm, m.bn);
    }
  }
  if (best == nullptr) {
    best = &kChoices[0];
    for (const Choice& c : kChoices) {
      if (score(c, M, N, K, sms) < score(*best, M, N, K, sms)) best = &c;
    }
  }
  best->run(x, w, b, y, M, N, K, epi, sms, stream);
}

}  // namespace ch09::solution::hopper
