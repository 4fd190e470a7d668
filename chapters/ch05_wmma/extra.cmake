# Chapter 5 extras, included by workbook_add_chapter (which defines id, _chapter,
# _reference and _solutions).
#
#   ch05_hopper   the Hopper bonus kernel (solutions/ch05_wmma/hopper/*.cu), built for sm_90a
#                 alone and linked into ch05_solution, whose variant list then holds
#                 v6_wgmma_tma (when and why: workbook_add_hopper_library, cmake/Workbook.cmake).
workbook_add_hopper_library(${id} "v6_wgmma_tma")

# The INT8 library reference (reference/ch05_wmma/cublaslt_int8.cu) calls cuBLASLt.
target_link_libraries(${id}_reference PUBLIC CUDA::cublasLt)
