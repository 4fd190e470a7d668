# Chapter 4 extras, included by workbook_add_chapter (which defines id, _chapter,
# _reference and _solutions).
#
#   ch04_sgemm_config  host C++: v8's tile configurations and the per-GPU config file
#                      (solutions/ch04_tiled_gemm/tune/sgemm_config.{h,cpp}), host-tested
#                      (solutions/ch04_tiled_gemm/tune/host_tests.cpp)
#   ch04_autotune      sweeps v8's configurations on this GPU and writes the winner into
#                      configs/ch04_sgemm.json (solutions/ch04_tiled_gemm/tune/autotune.cu);
#                      checks each one with the chapter's spec (spec.cu) before timing it
#
# The solution reads the config file at run time from $WORKBOOK_CONFIG_DIR, or else from
# the repository's configs/ folder, whose path is compiled in here.
set(_ch04_config_dir "${PROJECT_SOURCE_DIR}/configs")

add_library(${id}_sgemm_config STATIC ${_solutions}/tune/sgemm_config.cpp)
target_include_directories(${id}_sgemm_config PUBLIC ${_solutions}/tune)
target_link_libraries(${id}_sgemm_config PUBLIC workbook_host)
target_compile_options(${id}_sgemm_config PRIVATE -Wall -Wextra)

target_link_libraries(${id}_solution PUBLIC ${id}_sgemm_config)
target_compile_definitions(${id}_solution PRIVATE WB_CH04_CONFIG_DIR="${_ch04_config_dir}")
add_executable(${id}_host_tests ${_solutions}/tune/host_tests.cpp)
target_link_libraries(${id}_host_tests PRIVATE ${id}_sgemm_config)
workbook_add_gtest(${id}_host_tests host)

add_executable(${id}_autotune ${_solutions}/tune/autotune.cu)
target_include_directories(${id}_autotune PRIVATE ${_solutions})
# The spec (its check) and the libraries whole, so that their ops and variants register.
target_link_libraries(${id}_autotune PRIVATE
  "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_spec>" "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_solution>"
  "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_reference>")
target_compile_definitions(${id}_autotune PRIVATE WB_CH04_CONFIG_DIR="${_ch04_config_dir}")
workbook_cuda_options(${id}_autotune)
