# Chapter 5 extras, included by workbook_add_chapter (which defines id, _chapter,
# _reference and _solutions).
#
#   ch05_hopper   the Hopper bonus kernels (solutions/ch05_wmma/hopper/*.cu), built for sm_90a
#                 alone and linked into ch05_solution, whose variant list then holds
#                 v6_wgmma_tma, v9_wgmma_fp8, v10_wgmma_fp8_block, v11_wgmma_int8,
#                 v12_wgmma_fp8_overlap, v13_wgmma_fp8_block_overlap, v16_wgmma_fp8_wide,
#                 v17_wgmma_fp8_block_wide, and the mma.sync steps
#                 fed by TMA, v14_mma_sync_tma and v15_mma_sync_tma_int8 (when and why:
#                 workbook_add_hopper_library, cmake/Workbook.cmake).
workbook_add_hopper_library(${id} "v6_wgmma_tma, v9-v13, v16-v17 (FP8, INT8 wgmma), v14-v15 (mma.sync on TMA)")

# The FP8 ops are declared in their own file beside spec.cu (spec_fp8.cu).
target_sources(${id}_spec PRIVATE ${_chapter}/spec_fp8.cu)

# The library references on cuBLASLt: INT8 (reference/ch05_wmma/cublaslt_int8.cu) and FP8
# (reference/ch05_wmma/cublaslt_fp8.cu).
target_link_libraries(${id}_reference PUBLIC CUDA::cublasLt)
