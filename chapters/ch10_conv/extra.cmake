# Chapter 10 extras, included by workbook_add_chapter (which defines id, _chapter,
# _reference and _solutions).
#
#   cuDNN   the reference (reference/ch10_conv/cudnn_conv.cu) builds cuDNN's convolution
#           graphs through the backend API (cuDNN 9, found by cmake/Cudnn.cmake; CUDNN_ROOT
#           points at another installation).
workbook_use_cudnn(${id}_reference ${id})

# The host tests (host_tests.cpp) run the spec's float64 references: the spec's ops must register.
target_link_libraries(${id}_host_tests PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_spec>" workbook_spec)
