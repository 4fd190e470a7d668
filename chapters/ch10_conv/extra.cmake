# Chapter 10 extras, included by workbook_add_chapter (which defines id, _chapter,
# _reference and _solutions).
#
#   cuDNN   the reference (reference/ch10_conv/cudnn_conv.cu) builds cuDNN's convolution
#           graphs through the backend API (cuDNN 9, found by cmake/Cudnn.cmake; CUDNN_ROOT
#           points at another installation).
workbook_use_cudnn(${id}_reference ${id})
