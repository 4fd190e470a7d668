// TMA tensor maps of 3-D BF16 tensors in the 128-byte swizzle, the form the Hopper kernels of
// chapters 8 (v7: the heads of q, k and v) and 10 (v8: the filters) read their tiles in.
//
// A tensor map tells the TMA unit a tensor's sizes and strides and the box one copy moves;
// elements outside the tensor arrive as zeros. The 128-byte swizzle is the layout wgmma reads
// shared memory in (harness/device/sm90.cuh). Host code: encoding a map is a driver call.
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>

#include <stdexcept>
#include <string>

#include "device/sm90.cuh"

namespace wb::sm90 {

// The map of a BF16 tensor of dims[0] x dims[1] x dims[2] elements (dims[0] innermost; the
// strides of dims 1 and 2 in bytes, multiples of 16), read in boxes of box[0] x box[1] x
// box[2] with the 128-byte swizzle, L2 promotion of 256 bytes, zeros outside. A refusal throws
// std::runtime_error "<who>: cuTensorMapEncodeTiled failed (CUresult N) for <what>".
inline CUtensorMap bf16_swizzled_map_3d(const __nv_bfloat16* base, const cuuint64_t (&dims)[3],
                                        const cuuint64_t (&strides)[2], const cuuint32_t (&box)[3], const char* who,
                                        const std::string& what) {
  CUtensorMap map;
  const cuuint32_t element_strides[3] = {1, 1, 1};
  const CUresult r =
      tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<__nv_bfloat16*>(base), dims, strides,
                           box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    throw std::runtime_error(std::string(who) + ": cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) +
                             ") for " + what);
  }
  return map;
}

}  // namespace wb::sm90
