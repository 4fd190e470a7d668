# Chapter 7 extras, included by workbook_add_chapter (which defines id, _chapter,
# _reference and _solutions).
#
#   cuDNN      the reference's softmax (reference/ch07_softmax_topk/library.cu): cmake/Cudnn.cmake
#   ch07_tune  sweeps v4_split_row's configs (threads, CTAs per row, loads per thread) on this
#              GPU and writes the winners to configs/ch07_<op>.json (harness/tune)
workbook_use_cudnn(${id}_reference ${id})
workbook_add_tuner(${id})

# The host tests (host_tests.cpp) run the spec's float64 reference: the spec's ops must register.
target_link_libraries(${id}_host_tests PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_spec>" workbook_spec)
