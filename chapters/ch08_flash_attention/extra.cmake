# Chapter 8 extras, included by workbook_add_chapter (which defines id, _chapter,
# _reference and _solutions).
#
#   cuDNN       the reference (reference/ch08_flash_attention/cudnn_sdpa.cu) builds cuDNN's
#               fused attention graph through the backend API (cuDNN 9, found by
#               cmake/Cudnn.cmake; CUDNN_ROOT points at another installation).
#   ch08_memory the peak device memory of the unfused and the fused pipelines for sequence
#               lengths up to 32768 (reference/ch08_flash_attention/tools/peak_memory.cu).
workbook_use_cudnn(${id}_reference ${id})

add_executable(${id}_memory ${_reference}/tools/peak_memory.cu)
target_link_libraries(${id}_memory PRIVATE ${id}_solution ${id}_reference)
workbook_cuda_options(${id}_memory)

# The Hopper bonus (solutions/ch08_flash_attention/hopper/*.cu, v7 and v8): built for
# sm_90a alone (workbook_add_hopper_library, cmake/Workbook.cmake), with the sm_90a PTX
# wrappers that chapter 5 teaches (harness/device/sm90.cuh).
workbook_add_hopper_library(${id} "v7_flash_wgmma_tma, v8_flash_wgmma_pingpong")

# ch08_memory's command line: bad input refused by name before the GPU is looked for, and no
# --json file left behind (tests/tools/memory_tool_check.sh; no GPU needed).
add_test(NAME ${id}.memory_bad_input
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/tools/memory_tool_check.sh $<TARGET_FILE:${id}_memory>
                 ${CMAKE_CURRENT_BINARY_DIR}/memory-tool-check)
set_tests_properties(${id}.memory_bad_input PROPERTIES LABELS host TIMEOUT 60)
