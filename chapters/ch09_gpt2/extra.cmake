# Chapter 9 extras, included by workbook_add_chapter (which defines id, _chapter,
# _reference and _solutions).
#
#   cuBLASLt    the reference (reference/ch09_gpt2/cublaslt_linear.cu)
#   ch09_hopper the prefill GEMM's Hopper step (linear/hopper/, v12_wgmma_epilogue), sm_90a alone
#   ch06, ch07  the model runs chapter 6's LayerNorms and chapter 7's top-k: their specs and
#               launcher libraries are built here when the preset did not build those
#               chapters (no tests of theirs are added)
#   ch08        the fused decode step runs chapter 8's split-KV decode attention: its solution
#               library likewise
#   gpt2_gpu    the GPU model (models/gpt2/gpu): gpt2::Model, its ops, the per-op table
#   gpt2        the tool: build/ch09/bin/gpt2 --weights=FILE ...
#   ch09_model_tests   the model end to end against the float64 CPU forward (GPU; skipped without)
target_link_libraries(${id}_reference PUBLIC CUDA::cublasLt)

# The solution's three ladders, one folder per op family (solutions/ch09_gpt2/ladder.cuh):
# the prompt's linears, the one-token GEMV, the fused decode step. A learner's file may start
# from a step by its file name (#include "v4_gemv_warp.cu"), so the folders are on the path.
set(_ch09_families ${_solutions}/linear ${_solutions}/gemv ${_solutions}/decode)
file(GLOB _ch09_ladder CONFIGURE_DEPENDS ${_solutions}/linear/*.cu ${_solutions}/gemv/*.cu ${_solutions}/decode/*.cu)
target_sources(${id}_solution PRIVATE ${_ch09_ladder})
target_include_directories(${id}_student PRIVATE ${_ch09_families})

# The prefill GEMM's Hopper step (solutions/ch09_gpt2/linear/hopper/*.cu, v12_wgmma_epilogue):
# built for sm_90a alone (workbook_add_hopper_library, cmake/Workbook.cmake), from the pipeline
# chapter 5 teaches (harness/device/wgmma_gemm.cuh). Without it the variant is not listed.
workbook_add_hopper_library(${id} "v12_wgmma_epilogue")

# Chapters 6 and 7's libraries (specs and launchers), when the preset did not build them.
foreach(_other IN ITEMS ch06 ch07)
  if(NOT TARGET ${_other}_spec)
    workbook_chapter_libraries(${_other})
    workbook_use_cudnn(${_other}_reference ${_other})
  endif()
endforeach()

# Chapter 8's split-KV decode attention runs in the model's fused decode step
# (models/gpt2/gpu/decode/fused_step.cu): its solution library, when the preset did not build
# chapter 8. Only the solution is linked; the rest is left out of `all`.
if(NOT TARGET ch08_spec)
  workbook_chapter_libraries(ch08)
  workbook_use_cudnn(ch08_reference ch08)
  foreach(_lib IN ITEMS spec student reference broken)
    if(TARGET ch08_${_lib})
      set_target_properties(ch08_${_lib} PROPERTIES EXCLUDE_FROM_ALL TRUE)
    endif()
  endforeach()
endif()

# Exercises 3 and 4 are host code against the model's op interface (models/gpt2/gpu/ops.h), and
# so is their solution (solutions/ch09_gpt2/block_and_graph.cu).
foreach(_lib IN ITEMS student solution)
  target_include_directories(${id}_${_lib} PUBLIC ${PROJECT_SOURCE_DIR}/models/gpt2/gpu)
  target_link_libraries(${id}_${_lib} PUBLIC gpt2_host)
endforeach()

# The GPU model. WHOLE_ARCHIVE: the model finds kernels through the registry of variants
# (chapter 7's reference launchers live in an unnamed namespace), and the registry checks each
# variant against its op, so every spec of the three chapters is linked whole too.
# (decode/: the decode steps, one class per file; tests/ and tool/ are programs of their own)
file(GLOB _gpt2_gpu_src CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/models/gpt2/gpu/*.cu
     ${PROJECT_SOURCE_DIR}/models/gpt2/gpu/decode/*.cu)
# (the sources include "solutions/chNN/ladder.cuh" by path: every chapter has a ladder.cuh)
add_library(gpt2_gpu STATIC ${_gpt2_gpu_src})
target_include_directories(gpt2_gpu PUBLIC ${PROJECT_SOURCE_DIR}/models/gpt2/gpu ${PROJECT_SOURCE_DIR})
workbook_cuda_options(gpt2_gpu)
target_link_libraries(gpt2_gpu PUBLIC gpt2_host workbook_spec
  "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_spec>" "$<LINK_LIBRARY:WHOLE_ARCHIVE,ch06_spec>"
  "$<LINK_LIBRARY:WHOLE_ARCHIVE,ch07_spec>" "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_student>" "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_solution>"
  "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_reference>"
  ch06_student ch06_solution ch06_reference
  ch07_student ch07_solution "$<LINK_LIBRARY:WHOLE_ARCHIVE,ch07_reference>"
  ch08_solution)

add_executable(gpt2 ${PROJECT_SOURCE_DIR}/models/gpt2/gpu/tool/gpt2_main.cu)
target_link_libraries(gpt2 PRIVATE gpt2_gpu)
workbook_cuda_options(gpt2)

# Host tests of the model's host parts (argument parsing, the composition, the table).
add_executable(ch09_model_host_tests ${PROJECT_SOURCE_DIR}/models/gpt2/gpu/tests/host_test.cu)
target_link_libraries(ch09_model_host_tests PRIVATE gpt2_gpu GTest::gtest)
workbook_cuda_options(ch09_model_host_tests)
workbook_add_gtest(ch09_model_host_tests host)

# The model end to end (GPU; each test skips with the reason without one). The library and
# solution compositions are checked with the solutions; the learner's composition with the
# learner's tests (it fails with not-implemented until exercises 1-4 are written).
add_executable(ch09_model_tests ${PROJECT_SOURCE_DIR}/models/gpt2/gpu/tests/model_test.cu
               ${PROJECT_SOURCE_DIR}/models/gpt2/gpu/tests/int4_test.cu)
target_link_libraries(ch09_model_tests PRIVATE gpt2_gpu GTest::gtest)
workbook_cuda_options(ch09_model_tests)
target_link_libraries(ch09_model_tests PRIVATE workbook_gtest_main)
gtest_discover_tests(ch09_model_tests DISCOVERY_MODE PRE_TEST TEST_PREFIX "gpt2_gpu." TEST_FILTER "-Student*" NO_PRETTY_VALUES
                     PROPERTIES LABELS ${id}-solution TIMEOUT 600)
workbook_add_program_exercise(${id} ex3_block chapters/ch09_gpt2/ex3_block.cu ch09_model_tests
                              "StudentComposition.ForwardMatchesCpu")
workbook_add_program_exercise(${id} ex4_decode_graph chapters/ch09_gpt2/ex4_decode_graph.cu ch09_model_tests
                              "StudentComposition.DecodeGraphReplayEqualsEager:StudentComposition.CaptureErrorPathLeavesStreamUsable")

# The tool's command line: bad arguments, bad combinations and bad files (missing, truncated,
# not safetensors) refused by name with status 2 before any GPU work, no GPU refused with a
# message, and no --json file left behind by a refused or failed run.
add_test(NAME ${id}.gpt2_tool COMMAND bash ${PROJECT_SOURCE_DIR}/models/gpt2/gpu/tests/tool_check.sh
         $<TARGET_FILE:gpt2> $<TARGET_FILE:gpt2_random_weights> ${CMAKE_CURRENT_BINARY_DIR}/gpt2-tool-check)
set_tests_properties(${id}.gpt2_tool PROPERTIES LABELS host TIMEOUT 300)

# The INT4 ops (W4A16) are declared in a file of their own beside spec.cu.
target_sources(${id}_spec PRIVATE ${_chapter}/spec_int4.cu)
