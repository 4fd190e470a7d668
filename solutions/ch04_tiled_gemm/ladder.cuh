// The chapter 4 solution ladder: one file per step, each declaring its launcher here.
// Every launcher computes C = alpha * A * B + beta * C for any M, N, K >= 0 and any
// leading dimensions (see chapters/ch04_tiled_gemm/ch04.cuh for the rules).
#pragma once
#include <string>
#include <vector>

#include "ch04.cuh"
#include "sgemm_config.h"
#include "tune/tune.h"

namespace ch04::solution {

SgemmFn v1_naive;                 // one thread per element of C; x follows the row (uncoalesced)
SgemmFn v2_coalesced;             // x follows the column: B and C accesses coalesce
SgemmFn v3_smem_tiling;           // 32 x 32 tiles of A and B in shared memory
SgemmFn v4_1d_register_blocking;  // each thread computes 8 elements of a column of C
SgemmFn v5_2d_register_blocking;  // each thread computes an 8 x 8 block of C
SgemmFn v6_vectorized_smem;       // float4 loads; A's tile stored transposed
SgemmFn v7_warp_tiling;           // warp tiles, conflict-free float4 fragment reads
SgemmFn v8_double_buffering;      // two smem buffers, register prefetch; autotuned tiles

// The configurations of v8 compiled into this build (v8_configs.cu), each with its launcher.
struct V8Entry {
  SgemmConfig config;
  SgemmFn* launch;
  const void* kernel;  // the __global__ function, for cudaFuncGetAttributes (registers, spills)
};
const std::vector<V8Entry>& v8_registry();

// v8's tunable space (tune/v8_space.cu): the compiled configurations, what this GPU allows
// of them; the autotuner sweeps it, v8_double_buffering chooses from it (harness/tune).
const wb::tune::Space& v8_space();

// Which configurations v8_double_buffering runs on the current GPU, and where they came from
// (configs/ch04_sgemm.json's entry for this GPU, or the built-in default and why).
std::string v8_config_note();

}  // namespace ch04::solution
