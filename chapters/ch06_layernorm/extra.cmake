# Chapter 6 extras, included by workbook_add_chapter (which defines id, _chapter,
# _reference and _solutions).
#
#   cuDNN   the reference (reference/ch06_layernorm/cudnn_norm.cu) calls cuDNN's backend API
#           (cudnn.h, libcudnn.so.9, 9.0 or newer): cmake/Cudnn.cmake finds it.
workbook_use_cudnn(${id}_reference ${id})
target_include_directories(${id}_reference PUBLIC ${_reference})
target_include_directories(${id}_solution PUBLIC ${_solutions})
