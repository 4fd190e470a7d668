# Chapter 4 extras, included by workbook_add_chapter (which defines id, _chapter,
# _reference and _solutions).
#
#   ch04_sgemm_config  host C++: v8's tile configurations and its tunable space
#                      (solutions/ch04_tiled_gemm/tune/sgemm_config.{h,cpp}), host-tested
#                      (solutions/ch04_tiled_gemm/tune/host_tests.cpp, with the repository's
#                      configs/ch04_sgemm.json)
#   v8_space           what the GPU adds to that space (tune/v8_space.cu, in the solution)
#   ch04_tune          the book's autotuner (harness/tune): sweeps v8's configurations on this
#                      GPU and writes the winners into configs/ch04_sgemm.json, which the
#                      solution reads at run time (from $WORKBOOK_CONFIG_DIR when set)
set(_ch04_config_dir "${PROJECT_SOURCE_DIR}/configs")

add_library(${id}_sgemm_config STATIC ${_solutions}/tune/sgemm_config.cpp)
target_include_directories(${id}_sgemm_config PUBLIC ${_solutions}/tune)
target_link_libraries(${id}_sgemm_config PUBLIC workbook_host_tools)
target_compile_options(${id}_sgemm_config PRIVATE -Wall -Wextra)

target_sources(${id}_solution PRIVATE ${_solutions}/tune/v8_space.cu)
target_link_libraries(${id}_solution PUBLIC ${id}_sgemm_config)
add_executable(${id}_host_tests ${_solutions}/tune/host_tests.cpp)
target_link_libraries(${id}_host_tests PRIVATE ${id}_sgemm_config)
target_compile_definitions(${id}_host_tests PRIVATE WB_CH04_CONFIG_DIR="${_ch04_config_dir}")
workbook_add_gtest(${id}_host_tests host)

workbook_add_tuner(${id})
