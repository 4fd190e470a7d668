// Chapter 6 references ("variant 0"): cuDNN's NORM_FORWARD through the backend API, and the
// unfused pipeline (an add kernel, then a norm kernel that reads h back).
#pragma once
#include <stdexcept>
#include <string>

#include "ch06.cuh"
#include "runtime/launch.cuh"

namespace ch06::reference {

// cuDNN has no engine for this mode, type or shape (the graph, the heuristics or every
// engine configuration refused it). The message names the mode and shape and what cuDNN
// said; the harness reports it as a skip with that reason.
struct NoEngine : wb::NoEngine {
  using wb::NoEngine::NoEngine;
};

enum class NormMode { LayerNorm, RmsNorm };
enum class NormType { F32, BF16 };

// Which graph cuDNN is asked for:
//   Separate   the norm alone; h = x + r comes from residual_add() before it (what the
//              launchers run);
//   FusedAdd   a pointwise ADD (x + r -> h, h written) feeding the norm, one graph: tried
//              by probe_fused_add(), which says whether this cuDNN accepts it.
enum class NormGraph { Separate, FusedAdd };

// Builds (once) the execution plan for one (mode, type, N, C, ld) and its workspace, so that
// a timed call only executes. The launchers build on first use; call this before timing.
// Throws NoEngine when cuDNN cannot run the shape.
void cudnn_prepare(NormMode mode, NormType type, int N, int C, int ld);

// Builds the FusedAdd graph for (mode, BF16, N, C, ld) and returns "" when cuDNN accepts
// it, or what cuDNN said. Nothing is cached and nothing runs.
std::string probe_fused_add(NormMode mode, int N, int C, int ld);

// "cuDNN 9.14.0 (runtime), built against 9.19.0".
std::string cudnn_version_text();

// h = bf16(x + r) for the first C elements of N rows, ld apart (the unfused first step, and
// the add in front of cuDNN's norm).
void residual_add(const bf16* x, const bf16* r, bf16* h, int N, int C, int ld, cudaStream_t stream);

// cudnn_norm.cu
LayerNormF32Fn cudnn_layernorm_f32;
ResidualLayerNormFn cudnn_residual_layernorm;
ResidualRmsNormFn cudnn_residual_rmsnorm;

// unfused.cu
ResidualLayerNormFn unfused_residual_layernorm;
ResidualRmsNormFn unfused_residual_rmsnorm;

}  // namespace ch06::reference
