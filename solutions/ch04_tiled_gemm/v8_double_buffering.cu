// v8 — double buffering with a register prefetch, block swizzling, and tile sizes chosen
// per GPU by the autotuner. The chapter's best version.
//
// What changes over v7 (the kernel: v8_double_buffering.cuh):
//   * Two shared-memory buffers per tile. In iteration t the block computes on buffer
//     t % 2 while the loads of tile t + 1 are already in flight into registers (issued
//     before the FMAs, consumed after them); the registers are then stored into the other
//     buffer. The DRAM/L2 latency of tile t + 1 hides behind tile t's 8 x 64 FMAs per
//     thread, and one __syncthreads() per tile is enough (v7 needed two).
//   * Block swizzling: consecutive blocks walk down a column of 8 block rows before moving
//     right, so the blocks running together share A's and B's panels in L2.
//   * __launch_bounds__(THREADS, min blocks) caps the registers (128 for 2 x 256 threads
//     per SM) so that two blocks fit on an SM and one block's barrier wait is covered by
//     the other's FMAs; -Xptxas -v must show no spill (docs/ch04-tiled-gemm.md).
//   * The tile sizes are template parameters. ch04_tune (the book's autotuner, harness/tune)
//     sweeps the configurations of v8_configs.cu over several shapes and writes each shape's
//     winner and the overall winner for this GPU into configs/ch04_sgemm.json; this
//     launcher asks wb::tune::choose for its shape: a problem near one of the swept shapes
//     runs that shape's winner (small grids want small tiles, large ones large tiles), any
//     other the overall winner, and a GPU the file has no entry for 128x128x8, warp 64x32,
//     thread 8x8, 256 threads. It says which configurations it runs, and why, once on stderr.
//   * Optionally (configurations named "_pf"), each k's fragments are read from shared
//     memory one step ahead, into a second set of registers.
// Arithmetic intensity (128 x 128 tiles): 32 FLOP per byte from L2, and each element of A
// and B is fetched from DRAM roughly once per 128-wide panel: far above the ridge point.
// What limits it: instruction issue. Per k a thread issues 64 FFMA and 4 LDS.128: at best
// 94% of issue slots do FMAs, and the register-bank conflicts of FFMA operands, the
// address arithmetic and the barriers take a few percent more.
//
// From gemm_common.cuh (in the kernel header): store_warp_tile (as v7), launch_checked.
//
// Run: build/ch04/bin/ch04_bench --impl=v8_double_buffering,reference
// Tune: build/ch04/bin/ch04_tune
#include <algorithm>
#include <cstdio>

#include "runtime/errors.cuh"
#include "ladder.cuh"
#include "tune/choose.cuh"
#include "v8_double_buffering.cuh"

namespace ch04::solution {
namespace {

const V8Entry& entry_for(const SgemmConfig& c) {
  const auto& reg = v8_registry();
  const auto it = std::find_if(reg.begin(), reg.end(), [&](const V8Entry& e) { return e.config == c; });
  if (it == reg.end()) throw std::logic_error("v8: configuration " + c.name() + " is not compiled in");
  return *it;
}

// Said once per process, on the first call (the current GPU then).
const std::string& note() {
  static const std::string n = [] {
    const std::string where = wb::tune::describe(v8_space());
    const std::string out = where.rfind("built-in", 0) == 0
                                ? "v8_double_buffering: " + kSgemmDefault.name() + ", the " + where
                                : "v8_double_buffering: tuned configs from " + where;
    std::fprintf(stderr, "%s\n", out.c_str());
    return out;
  }();
  return n;
}

}  // namespace

std::string v8_config_note() { return note(); }

void v8_double_buffering(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                         float* C, int ldc, cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  note();
  const SgemmConfig c = from_tune(wb::tune::choose(v8_space(), wb::Shape{{"M", M}, {"N", N}, {"K", K}}));
  entry_for(c).launch(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
}

}  // namespace ch04::solution

std::string ch04::best_config_note() { return solution::v8_config_note(); }
