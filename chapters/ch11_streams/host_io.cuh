// How the harness hands host memory to chapter 11's launchers. Not part of the exercises.
//
// The harness keeps every op's inputs and outputs in device memory. Exercise 2 copies from
// and to PINNED host memory, so its variants get a step before each call, untimed, that puts
// the input into pinned memory, and its launch adapter copies the pinned result back into
// the output the checks read (spec.cu). Every variant of the pipeline op is made with
// pipeline_variant(), which adds that step.
#pragma once
#include <string>

#include "ch11.cuh"
#include "declare/op.cuh"

namespace ch11 {

// Before a call of a pipeline launcher (Variant::prepare): the pinned x, the pinned y and
// the device scratch of this problem, allocated on first use; x copied into the pinned x
// except its first kHeldBack elements, which hold the poison until the launch adapter
// copies them on the given stream right before the launcher runs (so a pipeline that does
// not wait for the given stream reads poison); the pinned y and the scratch poisoned.
void stage_pipeline_inputs(const wb::Args& a, cudaStream_t stream);
inline constexpr int64_t kHeldBack = 1024;

template <class Fn>
wb::Variant pipeline_variant(std::string name, Fn* fn) {
  return wb::variant("pipeline/f32", std::move(name), fn).with_prepare(&stage_pipeline_inputs);
}

// The variant of op staged_axpb/f32 (exercise 1) whose create, run and destroy steps `program`
// names (a StagedProgram that outlives the harness's run).
inline wb::Variant staged_variant(std::string name, const StagedProgram* program) {
  return wb::variant("staged_axpb/f32", std::move(name), program);
}

// The floats of pinned staging exercise 1's program gets for n elements.
inline size_t staging_count(int64_t n) { return static_cast<size_t>(n < (int64_t{1} << 18) ? n : (int64_t{1} << 18)); }

}  // namespace ch11
