# Chapter 5 extras, included by workbook_add_chapter (which defines id, _chapter,
# _reference and _solutions).
#
#   ch05_hopper   the Hopper bonus kernel (solutions/ch05_wmma/hopper/*.cu): wgmma, TMA and
#                 setmaxnreg exist only in the architecture-specific sm_90a target, so this
#                 library is built for sm_90a alone, whatever the architecture list says, and
#                 linked into ch05_solution, whose variant list then holds v6_wgmma_tma.
#
# It is built when nvcc is 12.0 or newer (wgmma needs PTX ISA 8.0) and
#   * the architecture list names 90 (or 90a, all, all-major), or
#   * it is "native" and the GPU is compute capability 9.0, or
#   * no GPU is visible (CI and other build-only machines: the code is compiled and so
#     checked; its tests skip, naming sm_90a, when they run on no GPU or another one).
# The test skips at run time on any GPU but compute capability 9.0.
set(_ch05_hopper OFF)
set(_ch05_archs "${CMAKE_CUDA_ARCHITECTURES}")
if(CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
  if(_ch05_archs MATCHES "(^|;)90" OR _ch05_archs MATCHES "^all")
    set(_ch05_hopper ON)
  elseif(_ch05_archs STREQUAL "native" AND WORKBOOK_GPU_CC STREQUAL "9.0")
    set(_ch05_hopper ON)
  elseif(NOT WORKBOOK_GPU_CC)
    set(_ch05_hopper ON)
  endif()
endif()

if(_ch05_hopper)
  file(GLOB _ch05_hopper_src CONFIGURE_DEPENDS ${_solutions}/hopper/*.cu)
  add_library(${id}_hopper STATIC ${_ch05_hopper_src})
  set_target_properties(${id}_hopper PROPERTIES CUDA_ARCHITECTURES 90a-real)
  target_include_directories(${id}_hopper PUBLIC ${_chapter} PRIVATE ${_solutions})
  workbook_cuda_options(${id}_hopper)
  target_link_libraries(${id}_solution PUBLIC ${id}_hopper)
  target_compile_definitions(${id}_solution PRIVATE WB_CH05_HOPPER=1)
  message(STATUS "ch05: the Hopper bonus (v6_wgmma_tma) is built for sm_90a")
else()
  message(STATUS "ch05: the Hopper bonus (v6_wgmma_tma) is not built: it needs nvcc >= 12.0 and sm_90 in the "
                 "architectures (now '${_ch05_archs}', GPU '${WORKBOOK_GPU_CC}')")
endif()

# The INT8 library reference (reference/ch05_wmma/cublaslt_int8.cu) calls cuBLASLt.
target_link_libraries(${id}_reference PUBLIC CUDA::cublasLt)
