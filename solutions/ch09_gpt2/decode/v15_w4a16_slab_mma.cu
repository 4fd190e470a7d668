// Step 15 — the INT4 GEMVs with each CTA's whole slab of weights copied into shared memory
// before the wait, few registers so that the next kernel's CTA fits beside it, and the dot
// products on tensor cores (gpt2 --int4 --decode=fused).
//
// What changes against v14_w4a16_loads_ahead, and why:
//   * Where the early loads land. v14 holds a lane's batch in registers: 2 CTAs of 8 warps at
//     128 registers a lane fill an SM's register file, so no CTA of the NEXT kernel can be
//     resident until one of this kernel's CTAs has ended. The next kernel's loads "before the
//     wait" therefore start only in this kernel's tail. Here a CTA copies its rows' codes into
//     shared memory with cp.async (no registers held while they travel), together with their
//     scales, zero points, bias, and the LayerNorm's gamma and beta, and runs at 64 registers a
//     lane (16K registers a CTA). One CTA per SM and its neighbour in the chain fit side by
//     side (beside three CTAs of chapter 8's decode attention too, 3 x 16K registers), so the
//     next kernel's copies travel during the whole of this one.
//   * When the next kernel may start. The CTA triggers it right after its own wait, before it
//     stages x: by then this CTA's copies were issued long ago, and the next kernel's CTAs can
//     take their place on the SM and issue theirs.
//   * A CTA's rows are contiguous (rows = ceil(N / SMs), at most 48 KB of codes): its slab is
//     one contiguous range of q, copied 16 bytes a thread at a time. Each staged row is padded
//     to 64 mod 128 bytes, so the rows g and g + 1 that the lanes of one quarter-warp read
//     meet the two halves of the banks.
//   * The dot products on tensor cores (mma.sync m16n8k16, BF16 in, FP32 sums). At 32 weights
//     per 16-byte piece, v14's dot32_w4 costs about 3.4 instructions per weight plus a 16-byte
//     shared load of x per 4 weights; alone on an SM the MLP's fc needs ~2 µs of that after
//     the wait. A code becomes a BF16 (q - zero) with one LOP3 (mask a pair of nibbles into
//     the mantissas of 128.0, 0x4300) and one HSUB2 (minus 128 + zero), two codes at a time,
//     exactly; 256 products then take one mma. About 1.4 instructions per weight, and x is
//     read once per 16 rows' worth of products.
//       A (16 x 16): rows m < 8 are row g of the CTA's tile of 8 rows, group 2j (piece qd of
//                    it: lane (g, qd) loads it), rows m >= 8 the same rows, group 2j + 1.
//       B (16 x 8):  column 0 is x of group 2j, column 1 x of group 2j + 1 (columns 2..7 are
//                    copies): D[g][0] is row g's sum over group 2j, D[g + 8][1] over 2j + 1,
//                    lane (g, 0) holds both (c0 and c3) and scales each by its group's scale.
//       The k order inside an mma is free, as long as A and B agree: step 2 w + h of a piece
//       takes codes k0 + 8 w + h + {0, 2} (the low nibbles of bytes h, h + 2 of word w: one
//       mask) and k0 + 8 w + h + {4, 6} (the high nibbles), so x is staged as BF16 with each
//       block of 8 permuted to (x0, x2, x4, x6, x1, x3, x5, x7): B is one 32-bit word each.
//     Every (q - zero) and every x is exact in BF16, each product exact in FP32, as in v14.
//   * The units (a tile of 8 rows x a pair of groups) are spread over the CTA's 8 warps; each
//     writes its 8 rows' partial sums to shared memory, and thread r adds row r's in the
//     order of the pairs: the order is fixed, and the split over warps does not change it.
//   * gamma and beta are in shared memory before the wait (v14 read them from L2 after the
//     LayerNorm's statistics: one more trip on the critical path).
// What stays: the residual pair and h, the LayerNorm's arithmetic (BF16-rounded like v6's),
// the epilogues, the KV store, the refusals (K % 32 != 0, K > 8192).
//
// BF16 rows take the same kernel (A straight from the staged rows, x in natural order) where a
// CTA's rows fit in one slab with one CTA per SM (ln_gemv_slab, ln_gemv_qkv_slab,
// gemv_residual_slab; slab_bf16_fits): every layer GEMV of GPT-2 124M; elsewhere v6's kernels.
//
// Measured (NVIDIA H200, random weights, prompt 512, 128 new, --decode=fused, one session):
// GPT-2 124M BF16 3,669.9 -> 3,980.6 tok/s (2.68x the PyTorch peer's 1,486); 1.5B --int4 647.0
// -> 657.9 (1.30x BF16's 505.0: the target, 1.6x, is missed; docs/ch09-transformer.md, "v15").
//
// Run: build/ch09/bin/ch09_bench --impl=v15_w4a16_slab_mma,v14_w4a16_loads_ahead
//      build/ch09/bin/gpt2 --weights=1.5B.safetensors --prompt-len=512 --new=128 --decode=fused --int4
#include <algorithm>
#include <cstdint>

#include "device/async_copy.cuh"
#include "device/mma.cuh"
#include "device/pdl.cuh"
#include "device/reduce.cuh"
#include "device/vec.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch_helpers.cuh"
#include "slab.cuh"
#include "w4_row.cuh"

namespace ch09::solution {
namespace {

using w4::kThreads;  // 256 (w4_row.cuh)
using w4::kWarps;    // 8
using w4::W4Args;
using namespace slab;  // the plan, stage_x, unit_w4 and unit_bf16 (slab.cuh)

// grid (ceil(N / plan.rows)), block (kThreads), dynamic shared memory (launch_slab): CTA c takes
// rows n0 = c * rows ... n0 + rows - 1.
//   kInt4      a.q holds INT4 codes with scales and zero points; else BF16 rows (a.q's bytes)
//   kNorm      the LayerNorm in the prologue (ln_gemv, ln_gemv_qkv)
//   kResidual  y = res + (sum + b), one rounding (gemv_residual); else epilogue(sum, b)
// At most 64 registers (4 CTAs per SM by the registers): a neighbour kernel's CTA fits beside it.
template <bool kInt4, bool kNorm, bool kResidual>
__global__ void __launch_bounds__(kThreads, 4) slab_kernel(const W4Args a, const Plan p) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float red[2 * kWarps];                            // block_sum: two exchange arrays
  unsigned char* s_codes = smem;                               // (rows, pitch)
  auto* s_x = reinterpret_cast<uint4*>(smem + p.off_x);        // (K / 8) blocks (INT4: permuted)
  auto* s_gb = reinterpret_cast<bf16*>(smem + p.off_gb);       // gamma (K), beta (K): kNorm and vec
  auto* s_sc = reinterpret_cast<float*>(smem + p.off_sc);      // (rows, G): INT4
  auto* s_z = reinterpret_cast<uint8_t*>(smem + p.off_z);      // (rows, G): INT4
  auto* s_part = reinterpret_cast<float*>(smem + p.off_part);  // (pairs, tiles * 8)
  const int t = threadIdx.x, G = p.groups;
  const int row_bytes = kInt4 ? a.K / 2 : 2 * a.K, per_row = row_bytes / 16;
  const long long n0 = static_cast<long long>(blockIdx.x) * p.rows;
  const int nr = static_cast<int>(min(static_cast<long long>(p.rows), a.N - n0));

  // 1. Before the wait: nothing here is written by an earlier kernel. Group 0 of the copies:
  //    gamma, beta and the scales; group 1: the rows. The zero points (bytes) and the bias go
  //    through registers.
  if constexpr (kNorm) {
    if (a.vec) {
      for (int i = t; i < a.K / 8; i += kThreads) {
        wb::ptx::cp_async_16(s_gb + 8 * i, a.gamma + 8 * i, true);
        wb::ptx::cp_async_16(s_gb + a.K + 8 * i, a.beta + 8 * i, true);
      }
    }
  }
  if constexpr (kInt4) {
    for (int i = t; i < nr * G; i += kThreads) wb::ptx::cp_async_4(s_sc + i, a.scale + n0 * G + i);
  }
  wb::ptx::cp_async_commit();
  copy_rows(s_codes, a.q, n0, nr, row_bytes, per_row, p.pitch);
  wb::ptx::cp_async_commit();
  const float bias = t < nr && a.epi != Epilogue::None ? __bfloat162float(a.b[n0 + t]) : 0.0f;
  if constexpr (kInt4) copy_zeros(s_z, a.zero, n0, nr, G);

  // 2. Wait for the previous kernel (x, r and res are its outputs); the next kernel may start
  //    now: its CTAs fit beside this one and put their own copies in flight.
  wb::pdl_wait();
  wb::pdl_trigger();
  const float resid = kResidual && t < nr ? __bfloat162float(a.res[n0 + t]) : 0.0f;  // in flight meanwhile
  stage_x<kNorm, kInt4>(a, s_x, s_gb, red);

  // 3. The units: tile (8 rows) x pair of groups, spread over the warps.
  units<kInt4>(p, s_codes, s_z, s_sc, s_x, s_part, nr, a.K);
  __syncthreads();

  // 4. Row t's sum, the pairs in order, and the epilogue.
  if (t >= nr) return;
  const float acc = row_total(p, s_part, t);
  const long long n = n0 + t;
  if constexpr (kResidual) {
    a.y[n] = __float2bfloat16(resid + (acc + bias));  // one rounding
  } else {
    const bf16 out = epilogue_value<bf16>(acc, bias, a.epi);  // + bias, GELU, one rounding
    a.y[n] = out;
    if (a.kv.k_cache != nullptr) store_kv(a.kv, static_cast<int>(n), out);
  }
}

// --- launchers -----------------------------------------------------------------------------

template <bool kInt4, bool kNorm, bool kResidual>
void launch_slab(W4Args a, const Plan& p, cudaStream_t stream) {
  a.vec = w4::vec_ok(a, kNorm);
  const int smem = p.off_part + 4 * p.pairs * p.tiles * kTileRows;
  auto* kernel = &slab_kernel<kInt4, kNorm, kResidual>;
  // Above 48 KB by opt-in; and the SM's whole carveout as shared memory, the configuration
  // chapter 8's decode attention runs in: CTAs of kernels with different carveouts cannot share
  // an SM, and this kernel's CTAs are to be resident beside their neighbours'.
  static const bool raised = [&] {
    wb::allow_dynamic_smem(kernel, kSmemCap);
    CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
    return true;
  }();
  (void)raised;
  if (smem > kSmemCap) throw std::logic_error("v15_w4a16_slab_mma: the plan exceeds shared memory");
  const long long grid = (static_cast<long long>(a.N) + p.rows - 1) / p.rows;
  wb::launch_chained(kernel, static_cast<unsigned>(grid), kThreads, static_cast<size_t>(smem), stream, a, p);
}

template <bool kNorm, bool kResidual>
void launch_w4(const W4Args& a, cudaStream_t stream) {
  launch_slab<true, kNorm, kResidual>(a, make_plan<true, kNorm>(a.N, a.K, wb::sm_count(), kSlabBytes), stream);
}

// BF16 rows: only where every CTA's rows fit in one slab with one CTA per SM (GPT-2 124M's
// layers: 28 to 38 KB), and rows are whole 16-byte pieces; elsewhere (false) the caller runs v6.
// The shape is looked at before the GPU (the plan reads its SM count), so that a shape v6 refuses
// reaches v6's refusal on a machine without one.
bool bf16_fits(int N, int K) {
  if (K % 8 != 0 || K > kInt4MaxK) return false;
  const Plan p = make_plan<false, true>(N, K, wb::sm_count(), kSlabBytes);
  return (static_cast<long long>(N) + p.rows - 1) / p.rows <= wb::sm_count();
}

template <bool kNorm, bool kResidual>
bool launch_bf16(W4Args a, const bf16* w, cudaStream_t stream) {
  if (!bf16_fits(a.N, a.K) || !wb::aligned16(w)) return false;
  const Plan p = make_plan<false, kNorm>(a.N, a.K, wb::sm_count(), kSlabBytes);
  a.q = reinterpret_cast<const uint8_t*>(w);  // the rows' bytes
  launch_slab<false, kNorm, kResidual>(a, p, stream);
  return true;
}

}  // namespace

void gemv_w4a16_slab(const bf16* x, const uint8_t* q, const float* scale, const uint8_t* zero, const bf16* b, bf16* y,
                     int N, int K, Epilogue epi, cudaStream_t stream) {
  require_valid(1, N, K, epi, b);
  w4::require_w4("K", K, scale, zero, q);
  launch_w4<false, false>(w4::w4_args(x, nullptr, nullptr, nullptr, nullptr, q, scale, zero, b, y, N, K, epi, 0.0f),
                          stream);
}

void ln_gemv_w4a16_slab(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const uint8_t* q,
                        const float* scale, const uint8_t* zero, const bf16* b, bf16* h, bf16* y, int N, int C,
                        Epilogue epi, float eps, cudaStream_t stream) {
  launch_w4<true, false>(w4::ln_gemv_w4_args(x, r, gamma, beta, q, scale, zero, b, h, y, N, C, epi, eps), stream);
}

void ln_gemv_qkv_w4a16_slab(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const uint8_t* q,
                            const float* scale, const uint8_t* zero, const bf16* b, bf16* h, bf16* qkv, int C,
                            float eps, const KvCacheTarget<bf16>& kv, cudaStream_t stream) {
  launch_w4<true, false>(
      w4::ln_gemv_qkv_w4_args("ln_gemv_qkv_w4a16_slab", x, r, gamma, beta, q, scale, zero, b, h, qkv, C, eps, kv),
      stream);
}

void gemv_residual_w4a16_slab(const bf16* x, const uint8_t* q, const float* scale, const uint8_t* zero, const bf16* b,
                              const bf16* res, bf16* y, int N, int K, cudaStream_t stream) {
  launch_w4<false, true>(w4::gemv_residual_w4_args("gemv_residual_w4a16_slab", x, q, scale, zero, b, res, y, N, K),
                         stream);
}

bool slab_bf16_fits(int N, int K) { return bf16_fits(N, K); }

void ln_gemv_slab(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const bf16* w, const bf16* b,
                  bf16* h, bf16* y, int N, int C, Epilogue epi, float eps, cudaStream_t stream) {
  require_valid(1, N, C, epi, b);
  if (!launch_bf16<true, false>(w4::w4_args(x, r, gamma, beta, h, nullptr, nullptr, nullptr, b, y, N, C, epi, eps), w,
                                stream)) {
    ln_gemv<bf16>(x, r, gamma, beta, w, b, h, y, N, C, epi, eps, stream);
  }
}

void ln_gemv_qkv_slab(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const bf16* w, const bf16* b,
                      bf16* h, bf16* qkv, int C, float eps, const KvCacheTarget<bf16>& kv, cudaStream_t stream) {
  require_valid(1, 3 * C, C, Epilogue::Bias, b);
  if (kv.k_cache == nullptr || kv.v_cache == nullptr || kv.pos == nullptr || kv.H * kv.D != C || kv.P < 1) {
    ln_gemv_qkv<bf16>(x, r, gamma, beta, w, b, h, qkv, C, eps, kv, stream);  // v6's refusal, by name
    return;
  }
  W4Args a = w4::w4_args(x, r, gamma, beta, h, nullptr, nullptr, nullptr, b, qkv, 3 * C, C, Epilogue::Bias, eps);
  a.kv = kv;
  if (!launch_bf16<true, false>(a, w, stream)) ln_gemv_qkv<bf16>(x, r, gamma, beta, w, b, h, qkv, C, eps, kv, stream);
}

void gemv_residual_slab(const bf16* x, const bf16* w, const bf16* b, const bf16* res, bf16* y, int N, int K,
                        cudaStream_t stream) {
  require_valid(1, N, K, Epilogue::Bias, b);
  W4Args a =
      w4::w4_args(x, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, b, y, N, K, Epilogue::Bias, 0.0f);
  a.res = res;
  if (res == nullptr || !launch_bf16<false, true>(a, w, stream)) gemv_residual<bf16>(x, w, b, res, y, N, K, stream);
}

}  // namespace ch09::solution
