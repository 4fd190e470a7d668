// Tile configurations of the chapter's best SGEMM (solutions/ch04_tiled_gemm/
// v8_double_buffering.cuh), the autotuner's candidates, and v8's tunable space: the book's
// one autotuner (harness/tune, built as ch04_tune) sweeps it and writes the winners per GPU
// into configs/ch04_sgemm.json (unless WORKBOOK_CONFIG_DIR names another folder), in the
// one config format of harness/tune/tune.h; v8_double_buffering reads them through
// wb::tune::choose. Plain C++, tested on any machine (solutions/ch04_tiled_gemm/tune/host_tests.cpp).
#pragma once
#include <string>
#include <vector>

#include "tune/tune.h"

namespace ch04 {

struct SgemmConfig {
  int bm = 0, bn = 0, bk = 0;  // block tile: (BM x BN) of C, BK of K per step
  int wm = 0, wn = 0;          // warp tile: (WM x WN) of C per warp
  int tm = 0, tn = 0;          // thread tile: (TM x TN) of C per thread, in 4 x 4 sub-blocks
  int threads = 0;             // threads per block
  int pf = 0;                  // 1: each k's fragments are read from shared memory one k ahead
                               // (register double buffering), name suffix "_pf"

  std::string name() const;  // "128x128x8_w64x32_t8x8_n256"
  friend constexpr bool operator==(const SgemmConfig&, const SgemmConfig&) = default;
};

// Padding (floats) at the end of each row of the transposed A tile in shared memory: it
// spreads the transposing stores over the banks and keeps rows 16-byte aligned.
inline constexpr int kSgemmAPad = 4;
// Shared memory per block. The kernel takes it as dynamic shared memory and opts in above
// the 48 KB default; 64 KB is what every GPU from sm_75 on allows one block.
inline constexpr int kSgemmSmemLimit = 64 * 1024;

// Bytes of shared memory: two buffers of A's (BK, BM + pad) and B's (BK, BN) tiles.
constexpr int sgemm_smem_bytes(const SgemmConfig& c) { return 2 * c.bk * ((c.bm + kSgemmAPad) + c.bn) * 4; }

// Why the kernel cannot be built with `c`, or nullptr when it can. The kernel's
// static_asserts check the same conditions; the autotuner prints the reason and skips.
constexpr const char* sgemm_config_problem(const SgemmConfig& c) {
  if (c.bm <= 0 || c.bn <= 0 || c.bk <= 0 || c.wm <= 0 || c.wn <= 0 || c.tm <= 0 || c.tn <= 0 || c.threads <= 0) {
    return "every size must be positive";
  }
  if (c.threads % 32 != 0 || c.threads > 1024) return "threads must be a multiple of 32, at most 1024";
  if (c.bm % c.wm != 0 || c.bn % c.wn != 0) return "the warp tile (WM x WN) must divide the block tile (BM x BN)";
  if ((c.bm / c.wm) * (c.bn / c.wn) != c.threads / 32) {
    return "the warp tiles must cover the block tile once: (BM/WM)*(BN/WN) must equal threads/32";
  }
  if (c.tm % 4 != 0 || c.tn % 4 != 0) return "TM and TN must be multiples of 4 (thread tiles are 4x4 float4 blocks)";
  if (c.wm % c.tm != 0 || c.wn % c.tn != 0) return "the thread tile (TM x TN) must divide the warp tile";
  if ((c.wm / c.tm) * (c.wn / c.tn) != 32) {
    return "the 32 lanes must cover the warp tile once: (WM/TM)*(WN/TN) must be 32";
  }
  if (c.bk % 4 != 0) return "BK must be a multiple of 4 (A is loaded as float4 along K)";
  if ((c.bm * c.bk / 4) % c.threads != 0) return "A's tile (BM*BK/4 float4) must split evenly over the threads";
  if ((c.bk * c.bn / 4) % c.threads != 0) return "B's tile (BK*BN/4 float4) must split evenly over the threads";
  if (c.tm * c.tn > 128) return "more than 128 accumulators per thread: they would spill out of the registers";
  if (c.pf != 0 && c.pf != 1) return "pf (fragment prefetch) is 0 or 1";
  if (sgemm_smem_bytes(c) > kSgemmSmemLimit) return "the two buffers need more than 64 KB of shared memory";
  return nullptr;
}

// The configuration used when the config file has no entry for this GPU.
inline constexpr SgemmConfig kSgemmDefault = {128, 128, 8, 64, 32, 8, 8, 256};

// What the autotuner sweeps. The valid ones are compiled into the solution
// (solutions/ch04_tiled_gemm/v8_configs.cu); the invalid ones stay in the list so the
// sweep shows why they cannot be built.
inline constexpr SgemmConfig kSgemmCandidates[] = {
    {128, 128, 8, 64, 32, 8, 8, 256},   // the default: 8 warps of 64x32, 8x8 per thread
    {128, 128, 8, 32, 64, 8, 8, 256},   // the warps laid out the other way
    {128, 128, 16, 64, 32, 8, 8, 256},  // BK = 16: half the barriers per FMA
    {128, 128, 16, 32, 64, 8, 8, 256},
    {128, 64, 8, 64, 32, 8, 8, 128},  // half the block: more blocks for small grids
    {128, 64, 16, 64, 32, 8, 8, 128},
    {64, 128, 8, 32, 64, 8, 8, 128},
    {64, 128, 16, 32, 64, 8, 8, 128},
    {128, 128, 8, 64, 64, 8, 16, 128},  // 4 warps, 128 accumulators per thread
    {128, 128, 16, 64, 64, 16, 8, 128},
    {64, 64, 16, 32, 32, 4, 8, 128},  // small tiles: many blocks, less reuse
    {64, 64, 8, 32, 32, 8, 4, 128},
    {256, 128, 8, 64, 64, 8, 16, 256},  // large tiles: most reuse, fewest blocks
    {128, 256, 8, 64, 64, 16, 8, 256},
    {256, 128, 16, 64, 64, 8, 16, 256},  // 49.7 KB of shared memory: opts in above 48 KB
    {128, 256, 16, 64, 64, 16, 8, 256},
    // Fragment prefetch: the FMAs of step k run on registers loaded during step k - 1.
    {128, 128, 8, 64, 32, 8, 8, 256, 1},
    {128, 128, 8, 32, 64, 8, 8, 256, 1},
    {128, 256, 8, 64, 64, 16, 8, 256, 1},
    // Large tiles with BK = 16: 512 threads at 64 accumulators each, or other warp shapes.
    {256, 128, 16, 64, 32, 8, 8, 512},
    {128, 256, 16, 32, 64, 8, 8, 512},
    {128, 256, 16, 32, 128, 16, 8, 256},
    {128, 256, 16, 64, 64, 8, 16, 256},
    {128, 128, 32, 64, 32, 8, 8, 256},    // invalid: 66.5 KB of shared memory
    {128, 128, 8, 32, 32, 4, 8, 512},     // invalid: A's 256 float4 over 512 threads
    {128, 128, 8, 64, 32, 8, 8, 512},     // invalid: 8 warp tiles for 16 warps
    {128, 128, 8, 32, 32, 4, 4, 512},     // invalid: 64 thread tiles per warp tile
    {256, 256, 8, 128, 64, 16, 16, 256},  // invalid: 256 accumulators per thread
};

// v8's space: configs/ch04_sgemm.json.
inline constexpr const char* kSgemmSpace = "ch04_sgemm";

// A configuration as a point of the space (parameters bm, bn, bk, wm, wn, tm, tn, threads,
// pf), and back (throws std::out_of_range naming a missing parameter).
wb::tune::Config to_tune(const SgemmConfig& c);
SgemmConfig from_tune(const wb::tune::Config& c);

// v8's tunable space, host side: the points are `compiled` (the configurations this build
// instantiates, v8_configs.cu), each named as SgemmConfig::name() says; winners are matched
// on M, N and K; a GPU never tuned runs kSgemmDefault, and a shape far from every tuned one
// the overall winner (the best geometric mean over the tuned shapes). The autotuner sweeps
// 1024^3, 2048^3, 4096^3 and 4096x1024x8192 (C = A*B + 0.5*C, packed rows, as the
// benchmark's) after checking every point on two awkward shapes (primes, misaligned rows,
// beta != 0 and beta == 0). The solution adds what needs the GPU (tune/v8_space.cu): the
// shared memory and threads this GPU allows, and each kernel's registers and spills.
wb::tune::Space sgemm_space(const std::vector<SgemmConfig>& compiled);

}  // namespace ch04
