# Chapter 10 extras, included by workbook_add_chapter (which defines id, _chapter,
# _reference and _solutions).
#
#   cuDNN   the reference (reference/ch10_conv/cudnn_conv.cu) builds cuDNN's convolution
#           graphs through the backend API (cuDNN 9, found by cmake/Cudnn.cmake; CUDNN_ROOT
#           points at another installation).
#   ch10_lessons  the other half of the fusion lesson (chapters/ch10_conv/fusion_lessons.cu)
#   ch10_hopper   the Hopper bonus kernel (solutions/ch10_conv/hopper/*.cu), built for sm_90a
#                 alone and linked into ch10_solution, whose variant list then holds v8.
workbook_use_cudnn(${id}_reference ${id})

# The Hopper bonus (solutions/ch10_conv/hopper/*.cu, v8_implicit_gemm_wgmma): built for sm_90a
# alone (workbook_add_hopper_library, cmake/Workbook.cmake), with the sm_90a PTX wrappers that
# chapter 5 teaches (harness/device/sm90.cuh). Without it the variant list has no v8.
workbook_add_hopper_library(${id} "v8_implicit_gemm_wgmma")

# The host tests (host_tests.cpp) run the spec's float64 references: the spec's ops must register.
target_link_libraries(${id}_host_tests PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_spec>" workbook_spec)

# ch10_lessons: the other half of the fusion lesson (chapters/ch10_conv/fusion_lessons.cu):
# an over-fused bottleneck whose registers spill against the same layers unfused, and two
# small independent convolutions on one stream against two. Built on demand (`--target
# ch10_lessons`), like every program but the learner's tests under the chapter preset.
add_executable(${id}_lessons ${_chapter}/fusion_lessons.cu)
target_link_libraries(${id}_lessons PRIVATE ${id}_solution)
workbook_cuda_options(${id}_lessons)

# Its command line: bad input refused by name before the GPU is looked for
# (tests/tools/lessons_tool_check.sh; no GPU needed).
add_test(NAME ${id}.lessons_bad_input
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/tools/lessons_tool_check.sh $<TARGET_FILE:${id}_lessons>)
set_tests_properties(${id}.lessons_bad_input PROPERTIES LABELS host TIMEOUT 60)
